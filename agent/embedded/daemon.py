"""``ksmon kafka start|stop|status``: a local broker that outlives the command that started it.

The running broker is described by ``run.json`` in its data directory; ``stop``
and ``status`` trust a pid there only if that process really is the broker of
that data directory (pids get reused).
"""

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from agent.embedded.cache import state_dir
from agent.embedded.kafka import EmbeddedKafka, admin_answers, fetch_kafka
from agent.errors import SetupError

RUN_FILE = "run.json"


def default_data_dir() -> Path:
    return state_dir() / "kafka"


@dataclass(frozen=True)
class BrokerStatus:
    running: bool
    answering: bool
    pid: int | None = None
    bootstrap_servers: str | None = None
    kafka_version: str | None = None
    log_path: str | None = None

    def describe(self) -> str:
        if not self.running:
            return "Kafka is not running"
        health = "answering" if self.answering else "NOT answering the Admin API"
        return (
            f"Kafka {self.kafka_version} is running at {self.bootstrap_servers} "
            f"(pid {self.pid}, {health}); log: {self.log_path}"
        )


@dataclass(frozen=True)
class RunRecord:
    """``run.json``: the detached broker a data directory belongs to."""

    pid: int
    bootstrap_servers: str
    kafka_version: str
    log_path: str
    properties: str

    @classmethod
    def load(cls, data_dir: Path) -> "RunRecord | None":
        try:
            record = cls(**json.loads((data_dir / RUN_FILE).read_text()))
        except (OSError, ValueError, TypeError):
            return None
        return record if isinstance(record.pid, int) else None

    def is_live_broker(self) -> bool:
        """True if ``pid`` still is this record's broker (pids get reused)."""
        try:
            cmdline = Path(f"/proc/{self.pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        return b"kafka.Kafka" in cmdline and self.properties.encode() in cmdline


def start(data_dir: Path, port: int | None = None, *, fresh: bool = False) -> BrokerStatus:
    current = status(data_dir)
    if current.running:
        if port is not None and current.bootstrap_servers != f"127.0.0.1:{port}":
            raise SetupError(
                f"a broker from {data_dir} already runs at {current.bootstrap_servers}; "
                "run `ksmon kafka stop` first to move it"
            )
        return current
    if fresh:
        shutil.rmtree(data_dir, ignore_errors=True)
    kafka = EmbeddedKafka(fetch_kafka(), data_dir, port=port, die_with_parent=False)
    kafka.start()
    record = RunRecord(
        pid=kafka.process.pid or 0,
        bootstrap_servers=kafka.bootstrap_servers,
        kafka_version=kafka.distribution.version,
        log_path=str(kafka.log_path),
        properties=str(kafka.properties_path),
    )
    (data_dir / RUN_FILE).write_text(json.dumps(dataclasses.asdict(record)))
    return status(data_dir)


def stop(data_dir: Path, timeout: float = 30.0) -> bool:
    """Stop the broker of ``data_dir``; False if none was running."""
    record = RunRecord.load(data_dir)
    if not record or not record.is_live_broker():
        (data_dir / RUN_FILE).unlink(missing_ok=True)
        return False
    pid = record.pid
    _kill_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        _kill_group(pid, signal.SIGKILL)
        while _alive(pid):
            time.sleep(0.1)
    (data_dir / RUN_FILE).unlink(missing_ok=True)
    return True


def status(data_dir: Path) -> BrokerStatus:
    record = RunRecord.load(data_dir)
    if not record or not record.is_live_broker():
        return BrokerStatus(running=False, answering=False)
    return BrokerStatus(
        running=True,
        answering=admin_answers(record.bootstrap_servers),
        pid=record.pid,
        bootstrap_servers=record.bootstrap_servers,
        kafka_version=record.kafka_version,
        log_path=record.log_path,
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie counts as gone: it only waits to be reaped by its parent.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _kill_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)
