"""The sink interface the agent writes snapshots to, and the stats it reports.

A sink never blocks its caller for long and never raises for transport
trouble: the poller hands over a record and moves on; delivery problems show
up in ``stats()`` (and so in ``ksmon_snapshot_*`` metrics).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class SinkStats:
    kind: str  # "kafka" | "spool" | "none"
    sent: int = 0  # delivered (acknowledged by the broker, or written to a file)
    # Given up on: buffer overflow (oldest first), spool retention. A record the
    # Kafka producer already held when its buffer entry was dropped may still arrive.
    dropped: int = 0
    errors: int = 0  # failed delivery attempts and I/O errors
    buffered: int = 0  # accepted, not yet delivered
    last_error: str | None = None  # the latest error, one line, no secrets
    last_success_timestamp: float | None = None


class SnapshotSink(Protocol):
    def send(self, key: bytes, payload: bytes) -> None: ...

    def send_all(self, records: Sequence[tuple[bytes, bytes]]) -> None:
        """(key, payload) records, in order: a poll's snapshots, handed over at once."""

    def flush(self, timeout: float) -> bool: ...

    def close(self, timeout: float = 10.0) -> None: ...

    def stats(self) -> SinkStats: ...


class NullSink:
    """``sink.type: none``: snapshots are counted and discarded (metrics still work)."""

    def __init__(self) -> None:
        self._sent = 0

    def send(self, key: bytes, payload: bytes) -> None:
        self._sent += 1

    def send_all(self, records: Sequence[tuple[bytes, bytes]]) -> None:
        self._sent += len(records)

    def flush(self, timeout: float) -> bool:
        return True

    def close(self, timeout: float = 10.0) -> None:
        return None

    def stats(self) -> SinkStats:
        return SinkStats("none", sent=self._sent)
