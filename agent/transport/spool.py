"""Ship snapshots to a spool directory as JSON lines, with atomic file rotation.

Records are appended to ``snapshots-<UTC start>-<seq>.jsonl.part``; when the
file reaches ``rotate_bytes`` or ``rotate_interval`` it is fsynced and
renamed to ``.jsonl``, so readers (the aggregation job, ``read_spool``) only
ever see complete files. Completed files beyond ``max_bytes`` are deleted
oldest first and their records counted as dropped. A ``.part`` left by a
crash is completed on start, minus a torn last line. Disk trouble is counted
and reported, never raised to the poller.
"""

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from agent.transport.sink import SinkStats

log = logging.getLogger(__name__)

PART = ".jsonl.part"
DONE = ".jsonl"


class SpoolDirectorySink:
    def __init__(
        self,
        directory: Path,
        *,
        rotate_bytes: int = 64 * 1024**2,
        rotate_interval: float = 300.0,
        max_bytes: int = 1024**3,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.directory = directory
        self.rotate_bytes = rotate_bytes
        self.rotate_interval = rotate_interval
        self.max_bytes = max_bytes
        self._clock = clock
        self._lock = threading.Lock()
        self._file: Path | None = None
        self._fd: int | None = None
        self._file_bytes = 0
        self._file_started = 0.0
        self._seq = 0
        self._sent = 0
        self._dropped = 0
        self._errors = 0
        self._last_error: str | None = None
        self._last_success: float | None = None
        self._failures_in_row = 0  # warned about each; the next good write says it works
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._recover()
        except OSError as e:
            self._error(e)

    def send(self, key: bytes, payload: bytes) -> None:
        if b"\n" in payload:
            with self._lock:
                self._errors += 1
                self._last_error = "a payload contains a newline; not written (one record per line)"
            return
        with self._lock:
            try:
                now = self._clock()
                if self._fd is not None and (
                    self._file_bytes >= self.rotate_bytes
                    or now - self._file_started >= self.rotate_interval
                ):
                    self._complete_current()
                if self._fd is None:
                    self._open_new(now)
                assert self._fd is not None  # noqa: S101 - opened just above
                line = payload + b"\n"
                os.write(self._fd, line)
                self._file_bytes += len(line)
                self._sent += 1
                self._last_success = now
                if self._failures_in_row:
                    log.info(
                        "spool directory %s: writing snapshots again, after %s",
                        self.directory,
                        f"{self._failures_in_row} failure{'s' * (self._failures_in_row != 1)}",
                    )
                    self._failures_in_row = 0
            except OSError as e:
                self._error(e)
                self._close_fd()

    def send_all(self, records: Sequence[tuple[bytes, bytes]]) -> None:
        for key, payload in records:
            self.send(key, payload)

    def flush(self, timeout: float) -> bool:
        with self._lock:
            if self._fd is None:
                return True
            try:
                os.fsync(self._fd)
            except OSError as e:
                self._error(e)
                return False
        return True

    def rotate(self) -> None:
        """Complete the current file now (the next record starts a new one)."""
        with self._lock:
            try:
                self._complete_current()
            except OSError as e:
                self._error(e)

    def close(self, timeout: float = 10.0) -> None:
        self.rotate()

    def stats(self) -> SinkStats:
        with self._lock:
            return SinkStats(
                kind="spool",
                sent=self._sent,
                dropped=self._dropped,
                errors=self._errors,
                buffered=0,
                last_error=self._last_error,
                last_success_timestamp=self._last_success,
            )

    # -- files -------------------------------------------------------------------

    def _open_new(self, now: float) -> None:
        self._seq += 1
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
        self._file = self.directory / f"snapshots-{stamp}-{self._seq:06d}{PART}"
        self._fd = os.open(self._file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._file_bytes = 0
        self._file_started = now

    def _complete_current(self) -> None:
        if self._fd is None or self._file is None:
            return
        os.fsync(self._fd)
        self._close_fd()
        done = self._file.with_name(self._file.name.removesuffix(PART) + DONE)
        self._file.replace(done)
        self._fsync_directory()
        self._file = None
        self._enforce_retention()

    def _close_fd(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def _fsync_directory(self) -> None:
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _enforce_retention(self) -> None:
        files = completed_files(self.directory)
        total = sum(f.stat().st_size for f in files)
        for oldest in files:
            if total <= self.max_bytes:
                break
            size = oldest.stat().st_size
            with oldest.open("rb") as f:
                lines = sum(1 for _ in f)
            oldest.unlink()
            total -= size
            self._dropped += lines
            log.warning(
                "spool over %d bytes: deleted %s (%d snapshots)", self.max_bytes, oldest, lines
            )

    def _recover(self) -> None:
        """Complete .part files a crash left behind, without their torn last line."""
        for part in sorted(self.directory.glob(f"*{PART}")):
            data = part.read_bytes()
            complete = data[: data.rfind(b"\n") + 1]
            if len(complete) < len(data):
                log.warning(
                    "%s: dropped a torn last line (%d bytes)", part, len(data) - len(complete)
                )
                part.write_bytes(complete)
            if complete:
                part.replace(part.with_name(part.name.removesuffix(PART) + DONE))
            else:
                part.unlink()
        self._seq = max(
            (_sequence_of(p.name) for p in self.directory.glob("snapshots-*")), default=0
        )

    def _error(self, error: OSError) -> None:
        self._errors += 1
        self._failures_in_row += 1
        self._last_error = f"{type(error).__name__}: {error}"
        log.warning("spool directory %s: %s", self.directory, self._last_error)


def _sequence_of(name: str) -> int:
    """The ``<seq>`` of ``snapshots-<stamp>-<seq>.jsonl[.part]``; 0 for other names."""
    parts = name.split(".", 1)[0].split("-")
    return int(parts[2]) if len(parts) == 3 and parts[2].isdigit() else 0  # noqa: PLR2004


def completed_files(directory: Path) -> list[Path]:
    """Complete spool files, oldest first (names sort by time, then sequence)."""
    return sorted(p for p in directory.glob(f"snapshots-*{DONE}") if p.is_file())


def read_spool(directory: Path) -> Iterator[bytes]:
    """Every record of the complete spool files, oldest first."""
    for path in completed_files(directory):
        with path.open("rb") as f:
            for line in f:
                if line.strip():
                    yield line.rstrip(b"\n")
