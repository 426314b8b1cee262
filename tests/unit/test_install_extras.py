"""The lean install: the agent's commands never import the job's dependencies, and the job
without them says in one line what to install."""

import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JOB_ONLY = ("pyspark", "pandas", "numpy", "pyarrow", "py4j")

# Runs in a fresh interpreter: a meta path finder in front of every other one records each
# attempt to import one of JOB_ONLY (and refuses it, so a guarded `try: import` shows too).
WATCHED = textwrap.dedent(
    """\
    import importlib, json, pkgutil, sys

    JOB_ONLY = {job_only!r}
    attempts = []

    class Refuse:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in JOB_ONLY:
                attempts.append(name)
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    sys.meta_path.insert(0, Refuse())
    """
)

AGENT_PATH = WATCHED + textwrap.dedent(
    """\
    from agent.cli import main

    for package in ("agent.collect", "agent.exposition", "agent.explain", "agent.transport",
                    "agent.streams", "agent.model", "agent.config"):
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, package + "."):
            importlib.import_module(info.name)
    # What `ksmon agent`, `sidecar`, `snapshot`, `explain`, `findings` and the Kafka tools
    # load (cli.py imports them inside each command).
    for name in ("agent.commands", "agent.runner", "agent.logs", "agent.explain.render",
                 "agent.aggregation.commands", "agent.aggregation.outputs.render",
                 "agent.embedded.kafka_tools", "agent.embedded.daemon", "agent.embedded.kafka"):
        importlib.import_module(name)
    code = main(["check-config", sys.argv[1]])
    loaded = sorted(n for n in sys.modules if n.split(".")[0] in JOB_ONLY)
    print(json.dumps({{"code": code, "attempts": attempts, "loaded": loaded}}))
    """
)

JOB_WITHOUT_EXTRA = WATCHED + textwrap.dedent(
    """\
    from agent.cli import main

    sys.exit(main(sys.argv[1:]))
    """
)


def small_config(tmp_path: Path) -> Path:
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            agent: {{id: lean}}
            clusters:
              - name: local
                bootstrap_servers: ["127.0.0.1:9092"]
            sink:
              type: spool
              spool: {{directory: {tmp_path / "spool"}}}
            """
        )
    )
    return config


def run_python(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script.format(job_only=JOB_ONLY), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )


def test_the_agent_path_never_imports_the_jobs_dependencies(tmp_path: Path) -> None:
    result = run_python(AGENT_PATH, str(small_config(tmp_path)))

    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome == {"code": 0, "attempts": [], "loaded": []}
    assert "cluster local: 127.0.0.1:9092" in result.stdout, "check-config described the file"


def test_the_watch_sees_an_import_of_the_jobs_dependencies(tmp_path: Path) -> None:
    """The check above can fail: importing the rules (numpy) is caught."""
    script = AGENT_PATH.replace(
        "code = main(",
        "importlib.import_module('agent.aggregation.judging.rules.columns')\ncode = main(",
    )
    result = run_python(script, str(small_config(tmp_path)))

    assert result.returncode != 0
    assert "No module named 'numpy'" in result.stderr


@pytest.mark.parametrize(
    "command",
    [["aggregate"], ["aggregate", "--replay", "recordings"]],
    ids=["aggregate", "replay"],
)
def test_the_job_without_its_extra_says_what_to_install_in_one_line(
    tmp_path: Path, command: list[str]
) -> None:
    args = [*command[:1], "--config", str(small_config(tmp_path)), *command[1:]]
    result = run_python(JOB_WITHOUT_EXTRA, *args)

    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        "ksmon: error: ksmon aggregate needs the job's dependencies (pyspark, numpy, pandas, "
        "pyarrow not installed): pip install 'ksmon[aggregate]'\n"
    )


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_base_install_is_the_agent_and_the_extras_add_the_job_and_the_tools() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]

    job = {"pyspark", "numpy", "pandas", "protobuf", "pyarrow"}
    assert requirement_names(project["dependencies"]) & job == set()
    assert requirement_names(extras["aggregate"]) == job - {"pyarrow"}  # pyspark[sql] brings it
    assert "pyspark[sql]==4.2.0" in extras["aggregate"]
    # The logins' libraries are extras of their own; the tests use them all.
    assert requirement_names(extras["kerberos"]) == {"gssapi"}
    assert requirement_names(extras["msk"]) == {"botocore"}
    assert requirement_names(project["dependencies"]) & {"gssapi", "botocore"} == set()
    assert "ksmon[aggregate,kerberos,msk]" in extras["dev"]
    assert "pip install --progress-bar off -e '.[dev]'" in (ROOT / "Makefile").read_text()
