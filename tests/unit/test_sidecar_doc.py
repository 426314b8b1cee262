"""docs/sidecar.md's example must be a working sidecar configuration, its systemd unit must
run that file read-only on the state directory the configuration names, and README's
documentation table must lead to the page (and to the rule pages)."""

import re
from pathlib import Path

from agent.config.load import parse_config

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "sidecar.md"


def _block(language: str) -> str:
    blocks = re.findall(rf"^```{language}\n(.*?)^```$", PAGE.read_text(), re.M | re.S)
    assert len(blocks) == 1, f"expected one {language} block in docs/sidecar.md"
    return str(blocks[0])


def _unit_settings() -> dict[str, str]:
    settings = {}
    for line in _block("ini").splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            settings[key] = value
    return settings


def test_the_example_is_a_valid_sidecar_configuration() -> None:
    config = parse_config(_block("yaml"), "docs/sidecar.md", env={"KSMON_KAFKA_PASSWORD": "x"})

    assert config.agent.mode == "sidecar"
    sidecar = config.sidecar
    assert sidecar is not None
    assert sidecar.state_dir is not None
    assert isinstance(sidecar.app_memory_limit, Path)  # a cgroup file, read at every poll
    assert sidecar.app_memory_limit.name == "memory.max"
    assert sidecar.expected_stream_threads is not None


def test_the_unit_runs_the_example_with_the_state_directory_read_only() -> None:
    config = parse_config(_block("yaml"), "docs/sidecar.md", env={"KSMON_KAFKA_PASSWORD": "x"})
    unit = _unit_settings()
    config_path = re.search(r"--config (\S+)", unit["ExecStart"])

    assert config_path is not None
    assert f"`{config_path[1]}`" in PAGE.read_text()  # the page names the example's path
    assert unit["ExecStart"].split()[1:3] == ["agent", "--config"]
    assert config.sidecar is not None
    assert unit["ReadOnlyPaths"] == str(config.sidecar.state_dir)
    assert unit["ProtectSystem"] == "strict"


def test_readme_documentation_table_links_the_sidecar_and_rule_pages() -> None:
    table = (ROOT / "README.md").read_text().split("## Documentation", 1)[1].split("\n## ", 1)[0]

    assert "](docs/sidecar.md)" in table
    assert "](docs/rules/README.md)" in table
