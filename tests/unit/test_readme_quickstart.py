"""The README's quick start: its config loads as written, and runs what the text says
(an agent shipping to the topic the job reads)."""

import re
from pathlib import Path

from agent.commands import check_config

README = Path(__file__).resolve().parents[2] / "README.md"


def _quick_start_config() -> str:
    section = README.read_text().split("## Quick start on an existing cluster", 1)[1]
    section = section.split("\n## ", 1)[0]
    blocks: list[str] = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 1, "the quick start shows one config file"
    return blocks[0]


def test_the_quick_start_config_checks_and_runs_the_agent_and_the_job(tmp_path: Path) -> None:
    config = tmp_path / "ksmon.yaml"
    config.write_text(_quick_start_config())
    lines = check_config(config).splitlines()
    assert any(line.startswith("agent ") for line in lines), lines
    assert any(line.startswith("snapshots: Kafka topic ksmon.snapshots") for line in lines), lines
    (job,) = [line for line in lines if line.startswith("aggregation job:")]
    assert "reads Kafka topic ksmon.snapshots" in job
