"""The command line on broken input: one ``ksmon: error:`` line, no traceback, exit non-zero.

These run ``python -m agent`` as a user would; none needs a broker, because
every one of them stops before the first connection.
"""

import logging
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent import cli
from tests.support.agent_process import run_cli

ROOT = Path(__file__).resolve().parents[2]
BROKEN = (
    "clusters:\n  - name: a\n    bootstrap_servers: [k:9092]\n    poll: {offsets_interval: soon}\n"
)
SECRET = "cli-test-secret-3f9a"  # noqa: S105 - a throwaway value


def assert_one_error_line(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 1, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ksmon: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.stderr + result.stdout


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN)
    return path


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["check-config", "{file}"], id="check-config"),
        pytest.param(["agent", "--config", "{file}"], id="agent"),
        pytest.param(["snapshot", "--config", "{file}", "--group", "g"], id="snapshot"),
    ],
)
def test_a_broken_config_is_one_line_naming_file_line_and_key(
    broken: Path, command: list[str]
) -> None:
    result = run_cli(*(part.replace("{file}", str(broken)) for part in command))

    assert_one_error_line(
        result, f"{broken}:4: clusters[0].poll.offsets_interval: expected a duration"
    )


def test_a_missing_ca_file_is_one_line_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "tls.yaml"
    config.write_text(
        "clusters:\n  - name: a\n    bootstrap_servers: [k:9093]\n    security:\n"
        "      protocol: SASL_SSL\n      tls: {ca_file: /no/such/ca.pem}\n"
        "      sasl: {mechanism: SCRAM-SHA-512, username: u, password: {env: PW}}\n"
    )

    for command in (["check-config", str(config)], ["agent", "--config", str(config)]):
        result = run_cli(*command, env={"PW": SECRET})
        assert_one_error_line(
            result,
            "clusters[0].security.tls.ca_file: cannot read /no/such/ca.pem: "
            "No such file or directory",
        )
        assert SECRET not in result.stderr


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_a_taken_metrics_port_is_one_line_naming_http_listen(
    tmp_path: Path, taken_port: int
) -> None:
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        f'http: {{listen: "127.0.0.1:{taken_port}"}}\n'
        "clusters:\n  - name: a\n    bootstrap_servers: [127.0.0.1:1]\n"
        "    offsets_topic: {read: false}\nsink: {type: none}\n"
    )

    result = run_cli("agent", "--config", str(config))

    assert_one_error_line(
        result,
        f"http.listen: cannot serve /metrics on 127.0.0.1:{taken_port}: Address already in use",
    )


@pytest.fixture
def in_process_cli() -> Iterator[None]:
    """``cli.main`` run in this process sets a SIGTERM handler and logging: undo both."""
    sigterm = signal.getsignal(signal.SIGTERM)
    root = logging.getLogger()
    handlers = list(root.handlers)
    levels = {name: logging.getLogger(name).level for name in ("", "kafka", "agent.collect")}
    yield
    signal.signal(signal.SIGTERM, sigterm)
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


@pytest.mark.usefixtures("in_process_cli")
def test_an_unexpected_error_is_one_line_and_never_shows_a_secret(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from agent import commands  # noqa: PLC0415
    from agent.config import Secret  # noqa: PLC0415

    Secret(SECRET)

    def bug(_path: Path) -> str:
        raise RuntimeError(f"a bug that quotes {SECRET}")

    monkeypatch.setattr(commands, "check_config", bug)

    status = cli.main(["check-config", str(tmp_path / "any.yaml")])

    err = capsys.readouterr().err
    assert status == 2
    assert err.strip().splitlines() == [
        "ksmon: error: unexpected RuntimeError: a bug that quotes *** "
        "(run with -v for the traceback)"
    ]


@pytest.mark.usefixtures("in_process_cli")
def test_verbose_shows_the_traceback_of_an_unexpected_error_blanked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from agent import commands  # noqa: PLC0415
    from agent.config import Secret  # noqa: PLC0415

    Secret(SECRET)

    def bug(_path: Path) -> str:
        raise RuntimeError(f"a bug that quotes {SECRET}")

    monkeypatch.setattr(commands, "check_config", bug)

    status = cli.main(["-v", "check-config", str(tmp_path / "any.yaml")])

    err = capsys.readouterr().err
    assert status == 2
    assert "Traceback" in err
    assert SECRET not in err
    assert (
        err.strip().splitlines()[-1]
        == "ksmon: error: unexpected RuntimeError: a bug that quotes ***"
    )
