"""A bounded FIFO of records waiting for delivery: full means the oldest go.

Bounded in records and in bytes, so a sink whose broker is gone for hours
holds a known amount of memory and says how much it dropped.
"""

import threading
from collections import deque
from collections.abc import Sequence


class BoundedBuffer:
    def __init__(self, max_records: int, max_bytes: int) -> None:
        if max_records < 1 or max_bytes < 1:
            raise ValueError("a buffer needs room for at least one record")
        self.max_records = max_records
        self.max_bytes = max_bytes
        self._items: deque[tuple[bytes, bytes]] = deque()
        self._bytes = 0
        self._lock = threading.Lock()
        self.ready = threading.Condition(self._lock)
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def offer(self, key: bytes, payload: bytes) -> int:
        """Append; drop the oldest records until the bounds hold. Returns how many were dropped."""
        return self.offer_all([(key, payload)])

    def offer_all(self, records: Sequence[tuple[bytes, bytes]]) -> int:
        """``offer`` each, in order, and wake the reader once: a poll hands over a
        thousand snapshots, and a reader woken by the first took them a few at a time,
        in as many deliveries, while the rest were still being written."""
        dropped = 0
        with self._lock:
            for record in records:
                self._items.append(record)
                self._bytes += len(record[0]) + len(record[1])
            # The newest record always stays, even if it alone is over the byte bound.
            while len(self._items) > 1 and (
                len(self._items) > self.max_records or self._bytes > self.max_bytes
            ):
                old_key, old_payload = self._items.popleft()
                self._bytes -= len(old_key) + len(old_payload)
                dropped += 1
            self.dropped += dropped
            if records:
                self.ready.notify()
        return dropped

    def head(self, limit: int) -> list[tuple[bytes, bytes]]:
        """The oldest ``limit`` records, left in place until ``remove_head``."""
        with self._lock:
            return [self._items[i] for i in range(min(limit, len(self._items)))]

    def remove_head(self, records: list[tuple[bytes, bytes]]) -> None:
        """Remove delivered records from the front; records dropped meanwhile are skipped."""
        with self._lock:
            for record in records:
                if self._items and self._items[0] is record:
                    self._items.popleft()
                    self._bytes -= len(record[0]) + len(record[1])

    def wait(self, timeout: float) -> bool:
        with self._lock:
            if not self._items:
                self.ready.wait(timeout)
            return bool(self._items)

    def wake(self) -> None:
        with self._lock:
            self.ready.notify_all()
