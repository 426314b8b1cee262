"""`pip install ksmon` into a clean virtualenv: the agent without the job's dependencies.

This checkout's sources go into a fresh virtualenv with a plain (non-editable)
``pip install`` from PyPI; none of pyspark, pandas, numpy or pyarrow comes
with it, the agent from it polls the session broker and serves /metrics, and
``ksmon aggregate`` from it says in one line what to install.
"""

import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from tests.support.agent_process import metric_values
from tests.support.environment import unavailable

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
JOB_ONLY = ("pyspark", "pandas", "numpy", "pyarrow", "py4j")


@dataclass(frozen=True)
class LeanVenv:
    directory: Path

    @property
    def python(self) -> Path:
        return self.directory / "bin" / "python"

    @property
    def ksmon(self) -> Path:
        return self.directory / "bin" / "ksmon"

    def size_bytes(self) -> int:
        files = (p for p in self.directory.rglob("*") if p.is_file() and not p.is_symlink())
        return sum(p.stat().st_size for p in files)


def source_tree(into: Path) -> Path:
    """What the sdist holds: the package and its metadata, copied so that building the
    wheel leaves nothing (build/, *.egg-info) in the checkout."""
    into.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, into / name)
    shutil.copytree(
        ROOT / "agent", into / "agent", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    return into


@pytest.fixture(scope="module")
def lean_venv(tmp_path_factory: pytest.TempPathFactory) -> LeanVenv:
    work = tmp_path_factory.mktemp("lean-install")
    venv = LeanVenv(work / "venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv.directory)], check=True, timeout=120)
    install = subprocess.run(
        [str(venv.python), "-m", "pip", "install", "--quiet", str(source_tree(work / "src"))],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if install.returncode != 0:
        unavailable("pip install from PyPI", install.stderr.strip()[-1500:])
    print(f"lean virtualenv: {venv.size_bytes() / 2**20:.0f} MiB")  # noqa: T201 - for docs
    return venv


def test_the_lean_install_has_none_of_the_jobs_dependencies(lean_venv: LeanVenv) -> None:
    probe = subprocess.run(
        [
            str(lean_venv.python),
            "-c",
            "import importlib.util, sys; print(' '.join(n for n in sys.argv[1:] "
            "if importlib.util.find_spec(n) is not None))",
            *JOB_ONLY,
            "kafka",
            "prometheus_client",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert probe.stdout.split() == ["kafka", "prometheus_client"]
    assert lean_venv.size_bytes() < 100 * 2**20


def test_the_agent_from_the_lean_install_polls_and_serves_metrics(
    lean_venv: LeanVenv, kafka: EmbeddedKafka, tmp_path: Path
) -> None:
    port = free_port()
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            agent: {{id: lean-agent}}
            http: {{listen: "127.0.0.1:{port}"}}
            clusters:
              - name: local
                bootstrap_servers: ["{kafka.bootstrap_servers}"]
                poll: {{offsets_interval: 1s, metadata_interval: 5s, request_timeout: 5s}}
            sink:
              type: spool
              spool: {{directory: {tmp_path / "spool"}, rotate_interval: 1s}}
            """
        )
    )
    log = tmp_path / "agent.log"
    with log.open("w") as out:
        # From a directory outside the checkout, so only the installed package is importable.
        process = subprocess.Popen(
            [str(lean_venv.ksmon), "agent", "--config", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
        )
    try:

        def kafka_up() -> bool:
            try:
                return metric_values(port)["ksmon_kafka_up"][(("kafka_cluster", "local"),)] == 1
            except (OSError, KeyError):
                return False

        wait_until(
            kafka_up,
            timeout=90,
            what="the lean agent's first successful poll",
            abort=lambda: (
                None
                if process.poll() is None
                else f"the agent exited ({process.returncode}): {log.read_text()[-2000:]}"
            ),
        )
        served = metric_values(port)
        assert {"ksmon_build_info", "ksmon_agent_info", "ksmon_polls_total"} <= set(served)
        assert served["ksmon_agent_info"], "the agent describes itself"
    finally:
        process.terminate()
        process.wait(timeout=60)
    assert process.returncode == 0, log.read_text()[-2000:]


def test_the_job_from_the_lean_install_says_what_to_install(
    lean_venv: LeanVenv, tmp_path: Path
) -> None:
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        "clusters:\n  - name: local\n    bootstrap_servers: ['127.0.0.1:9092']\n"
        f"sink:\n  type: spool\n  spool: {{directory: {tmp_path / 'spool'}}}\n"
    )
    for replay in ([], ["--replay", str(tmp_path / "spool")]):
        result = subprocess.run(
            [str(lean_venv.ksmon), "aggregate", "--config", str(config), *replay],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            check=False,
        )
        assert result.returncode == 1
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("ksmon: error: ksmon aggregate needs the job's dependencies")
        assert lines[0].endswith("pip install 'ksmon[aggregate]'")
