"""``ksmon`` as a real process in tests: the daemon with its /metrics, and one-shot commands."""

import contextlib
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]

Labels = tuple[tuple[str, str], ...]


def scrape(port: int, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as response:
        return str(response.read().decode())


def metric_values(port: int) -> dict[str, dict[Labels, float]]:
    """Every sample of the agent's /metrics: ``{name: {sorted labels: value}}``."""
    values: dict[str, dict[Labels, float]] = {}
    for family in text_string_to_metric_families(scrape(port)):
        for sample in family.samples:
            values.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return values


def metric(port: int, name: str, **labels: str) -> float | None:
    """One sample, or None when the agent does not answer or has no such series."""
    try:
        return metric_values(port).get(name, {}).get(tuple(sorted(labels.items())))
    except OSError:
        return None


@dataclass
class RunningAgent:
    process: subprocess.Popen[str]
    port: int
    log: Path

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def exited(self) -> str | None:
        """For ``wait_until(abort=...)``: why waiting on this agent is pointless."""
        if self.alive:
            return None
        return f"the agent exited ({self.process.returncode}): {self.log.read_text()[-2000:]}"

    def stop(self, timeout: float = 60.0) -> int:
        if self.alive:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def rss_bytes(self) -> int:
        """The daemon's resident memory now, from /proc."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS in /proc status")


@contextlib.contextmanager
def running_agent(
    config: Path,
    port: int,
    log: Path,
    env: dict[str, str] | None = None,
    *,
    command: str = "agent",
) -> Iterator[RunningAgent]:
    """``ksmon <command> --config CONFIG`` (the agent, or the aggregation job) until the
    block ends (then SIGTERM, and wait)."""
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "agent", command, "--config", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
        )
    agent = RunningAgent(process, port, log)
    try:
        yield agent
    finally:
        if agent.alive:
            agent.stop()


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A one-shot ``ksmon`` command, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "agent", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        check=False,
    )
