"""``ksmon demo`` headless: it finds the hot partitions it planted, and Ctrl-C leaves
no process and no listening port behind."""

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agent.demo.run import active_findings
from agent.embedded.ports import is_listening
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppBuild
from tests.support.processes import alive, descendants, listening_ports

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
KSMON = (sys.executable, "-m", "agent")


class Output:
    """The demo's stdout, collected line by line on a thread (so reading never blocks)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        assert process.stdout is not None
        self._thread = threading.Thread(target=self._read, args=(process.stdout,), daemon=True)
        self._thread.start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.lines.append(line.rstrip("\n"))

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def port(self, what: str) -> int | None:
        match = re.search(rf"{what}.*?http://127\.0\.0\.1:(\d+)/metrics", self.text)
        return int(match[1]) if match else None


IGNORE_SIGINT_THEN_DEMO = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "os.execv(sys.executable, [sys.executable, '-m', 'agent', 'demo'])"
)


def test_the_demo_shows_its_hot_partitions_and_ctrl_c_leaves_nothing_behind(
    streams_app_build: StreamsAppBuild,  # built once per session, so the demo's build is cached
) -> None:
    process = subprocess.Popen(
        # As a script's `ksmon demo &` starts it: with SIGINT ignored (exec keeps that).
        # Ctrl-C must still work.
        [sys.executable, "-c", IGNORE_SIGINT_THEN_DEMO],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    output = Output(process)
    try:
        wait_until(
            lambda: output.port("aggregation job") is not None,
            timeout=240,
            what="the demo to start the aggregation job",
            abort=lambda: None if process.poll() is None else f"demo exited:\n{output.text}",
        )
        job_port = output.port("aggregation job")
        agent_port = output.port("ksmon agent")
        assert job_port is not None
        assert agent_port is not None
        try:
            wait_until(
                lambda: any(
                    f.kind == "hot_partitions_colocated" for f in active_findings(job_port)
                ),
                timeout=300,
                what="the hot_partitions_colocated finding on the job's /metrics",
                abort=lambda: None if process.poll() is None else f"demo exited:\n{output.text}",
            )
        except TimeoutError as e:
            raise AssertionError(f"{e}; the demo printed:\n{output.text}") from None
        wait_until(
            lambda: "hot_partitions_colocated" in output.text,
            timeout=30,
            what="the finding in the demo's terminal output",
        )
        # The planted trouble is what was found: the instance that holds both hot tasks.
        planted = re.search(r"both on instance (\S+)", output.text)
        assert planted is not None, output.text
        assert any(
            f.kind == "hot_partitions_colocated" and f"instance {planted[1]}" in f.subject
            for f in active_findings(job_port)
        ), output.text

        # ksmon explain, pointed at the demo's broker, shows the job's finding first.
        broker = re.search(r"broker on (127\.0\.0\.1:\d+)", output.text)
        assert broker is not None, output.text
        explained = subprocess.run(
            [*KSMON, "explain", "ksmon-demo-orders", "--bootstrap", broker[1], "--sample", "2"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
            check=False,
        )
        assert explained.returncode == 0, explained.stderr
        findings = explained.stdout.split("INSTANCES")[0]
        assert "FINDINGS (the aggregation job, findings topic ksmon.findings)" in findings
        assert "hot_partitions_colocated" in findings, explained.stdout
        assert f"instance {planted[1]}" in findings, explained.stdout

        children = descendants(process.pid)
        ports = listening_ports(children | {process.pid})
        assert {agent_port, job_port} <= ports, "the demo's own endpoints are among them"

        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=120) == 0, output.text
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    wait_until(lambda: not alive(children), timeout=30, what="every child of the demo to exit")
    assert not [p for p in ports if is_listening(p)], "a port the demo listened on is still open"
    assert "nothing left running" in output.text
