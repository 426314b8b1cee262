"""``ksmon kafka start|stop|status``: a local broker that outlives the command that started it.

The running broker is described by ``run.json`` in its data directory; ``stop``
and ``status`` trust a pid there only if that process really is the broker of
that data directory (pids get reused).

So that ``status`` and ``stop`` without ``--data-dir`` find a broker started with
one, ``start`` also registers the data directory in ``brokers/`` under ksmon's
state directory: one small file per data directory, written at start and removed
at stop. ``run.json`` stays the one description of the broker; a registry entry
only points at its data directory, and one whose broker is gone (killed, the
machine rebooted) is removed by the next lookup.
"""

import contextlib
import dataclasses
import hashlib
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


def registry_dir() -> Path:
    """Where ``start`` registers the data directory of each broker it started."""
    return state_dir() / "brokers"


@dataclass(frozen=True)
class BrokerStatus:
    running: bool
    answering: bool
    pid: int | None = None
    bootstrap_servers: str | None = None
    kafka_version: str | None = None
    log_path: str | None = None
    data_dir: str | None = None

    def describe(self) -> str:
        if not self.running:
            return f"Kafka is not running (looked in {self.data_dir})"
        health = "answering" if self.answering else "NOT answering the Admin API"
        return (
            f"Kafka {self.kafka_version} is running at {self.bootstrap_servers} "
            f"(pid {self.pid}, {health}); data dir: {self.data_dir}; log: {self.log_path}"
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


@dataclass(frozen=True)
class LocalBroker:
    """A broker ``ksmon kafka start`` started that still runs, and its data directory."""

    data_dir: Path
    record: RunRecord


def start(data_dir: Path, port: int | None = None, *, fresh: bool = False) -> BrokerStatus:
    current = status(data_dir)
    if current.running:
        if port is not None and current.bootstrap_servers != f"127.0.0.1:{port}":
            raise SetupError(
                f"a broker from {data_dir} already runs at {current.bootstrap_servers}; "
                "run `ksmon kafka stop` first to move it"
            )
        # A broker started by a ksmon from before the registry: make it findable too.
        register(data_dir)
        return current
    if fresh:
        shutil.rmtree(data_dir, ignore_errors=True)
    kafka = EmbeddedKafka(fetch_kafka(), data_dir, port=port, die_with_parent=False)
    kafka.start()
    remember(kafka)
    return status(data_dir)


def remember(kafka: EmbeddedKafka) -> None:
    """Write ``run.json`` for a started broker and register its data directory, so
    ``stop`` and ``status`` find it (with or without ``--data-dir``)."""
    record = RunRecord(
        pid=kafka.process.pid or 0,
        bootstrap_servers=kafka.bootstrap_servers,
        kafka_version=kafka.distribution.version,
        log_path=str(kafka.log_path),
        properties=str(kafka.properties_path),
    )
    (kafka.data_dir / RUN_FILE).write_text(json.dumps(dataclasses.asdict(record)))
    register(kafka.data_dir)


def forget(data_dir: Path) -> None:
    """Remove ``run.json`` and the registry entry of a broker that no longer runs."""
    (data_dir / RUN_FILE).unlink(missing_ok=True)
    unregister(data_dir)


def stop(data_dir: Path, timeout: float = 30.0) -> RunRecord | None:
    """Stop the broker of ``data_dir``; what it was, or None if none was running."""
    record = RunRecord.load(data_dir)
    if not record or not record.is_live_broker():
        forget(data_dir)
        return None
    pid = record.pid
    _kill_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        _kill_group(pid, signal.SIGKILL)
        while _alive(pid):
            time.sleep(0.1)
    forget(data_dir)
    return record


def status(data_dir: Path) -> BrokerStatus:
    record = RunRecord.load(data_dir)
    if not record or not record.is_live_broker():
        return BrokerStatus(running=False, answering=False, data_dir=str(data_dir))
    return status_of(LocalBroker(data_dir, record))


def status_of(broker: LocalBroker) -> BrokerStatus:
    """``broker``'s status, asking its Admin API whether it answers."""
    record = broker.record
    return BrokerStatus(
        running=True,
        answering=admin_answers(record.bootstrap_servers),
        pid=record.pid,
        bootstrap_servers=record.bootstrap_servers,
        kafka_version=record.kafka_version,
        log_path=record.log_path,
        data_dir=str(broker.data_dir),
    )


def running_brokers() -> list[LocalBroker]:
    """Every broker ``ksmon kafka start`` started that still runs: the default data
    directory's, then those the registry names, oldest registration first.

    A registry entry whose broker is gone (its pid dead or now another process) is
    removed: it is what a killed broker or a reboot leaves behind.
    """
    found: list[LocalBroker] = []
    seen: set[Path] = set()
    for data_dir in [default_data_dir().resolve(), *registered_data_dirs()]:
        if data_dir in seen:
            continue
        seen.add(data_dir)
        record = RunRecord.load(data_dir)
        if record is not None and record.is_live_broker():
            found.append(LocalBroker(data_dir, record))
        else:
            unregister(data_dir)
    return found


def where_looked() -> str:
    """Where ``running_brokers`` looks, for a person told that it found nothing."""
    return (
        f"looked in the default data dir {default_data_dir()} and the data dirs "
        f"`ksmon kafka start` registered in {registry_dir()}"
    )


def register(data_dir: Path) -> None:
    data_dir = data_dir.resolve()
    entry = _registry_entry(data_dir)
    entry.parent.mkdir(parents=True, exist_ok=True)
    # Written whole and renamed into place: a concurrent lookup never reads half of it.
    scratch = entry.with_name(f".{entry.name}.{os.getpid()}")
    scratch.write_text(json.dumps({"data_dir": str(data_dir)}))
    scratch.replace(entry)


def unregister(data_dir: Path) -> None:
    _registry_entry(data_dir.resolve()).unlink(missing_ok=True)


def registered_data_dirs() -> list[Path]:
    """The data directories in the registry, oldest registration first; unreadable
    entries are removed."""
    try:
        entries = sorted(registry_dir().glob("*.json"), key=_mtime)
    except OSError:
        return []
    data_dirs = []
    for entry in entries:
        try:
            data_dirs.append(Path(json.loads(entry.read_text())["data_dir"]))
        except FileNotFoundError:
            continue  # another ksmon removed it just now
        except (OSError, ValueError, KeyError, TypeError):
            entry.unlink(missing_ok=True)
    return data_dirs


def _registry_entry(data_dir: Path) -> Path:
    # One entry per data directory, named by its path: a restart overwrites it.
    key = hashlib.sha256(str(data_dir).encode()).hexdigest()[:16]
    return registry_dir() / f"{key}.json"


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


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
