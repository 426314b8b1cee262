"""Keyed test load for a local cluster: a steady rate with a chosen key skew.

Keys map to partitions with Kafka's own murmur2 partitioner (the one the Java
client and Kafka Streams use), so a hot key lands on a predictable partition
of the input topic and of any repartition topic keyed the same way.
"""

import logging
import random
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import count

log = logging.getLogger(__name__)

# How often a KeyedLoad sends what is due, and how long its producer lingers for it.
TICK_MS = 100


def partition_of(key: str, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for ``key`` (UTF-8 bytes)."""
    from kafka.partitioner.default import murmur2  # noqa: PLC0415 - slow import

    return int((murmur2(key.encode()) & 0x7FFFFFFF) % partitions)


def key_for_partition(partition: int, partitions: int, prefix: str = "key") -> str:
    """The first key ``<prefix>-<n>`` that Kafka's partitioner sends to ``partition``."""
    if not 0 <= partition < partitions:
        raise ValueError(f"partition {partition} is not in 0..{partitions - 1}")
    for n in count():
        key = f"{prefix}-{n}"
        if partition_of(key, partitions) == partition:
            return key
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class KeySkew:
    """Which keys the load uses: each hot key gets its share of records; the
    rest spread uniformly over ``cold_keys`` keys ``cold-0 .. cold-<n-1>``.

    ``KeySkew({"hot": 0.8})`` puts 80% of the records on key ``hot``.
    """

    hot_keys: Mapping[str, float] = field(default_factory=dict)
    cold_keys: int = 64

    def __post_init__(self) -> None:
        total = sum(self.hot_keys.values())
        if any(not 0 < share <= 1 for share in self.hot_keys.values()) or total > 1 + 1e-9:
            raise ValueError(
                f"hot key shares must be in (0, 1] and sum to at most 1: {self.hot_keys}"
            )
        if total < 1 - 1e-9 and self.cold_keys < 1:
            raise ValueError("cold_keys must be >= 1 when hot keys take less than all records")

    def pick(self, rng: random.Random) -> str:
        roll = rng.random()
        for key, share in self.hot_keys.items():
            if roll < share:
                return key
            roll -= share
        return f"cold-{rng.randrange(self.cold_keys)}"


class KeyedLoad:
    """Produces keyed records at ``rate`` records/s on a background thread until stopped."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        rate: float,
        skew: KeySkew | None = None,
        *,
        value_bytes: int = 64,
        seed: int = 0,
    ) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be positive, got {rate}")
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.rate = rate
        self.skew = skew or KeySkew()
        self.value = b"v" * value_bytes
        self._rng = random.Random(seed)  # noqa: S311 - test load, not cryptography
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.sent = 0
        self.errors = 0

    def start(self) -> "KeyedLoad":
        self._thread = threading.Thread(target=self._run, name=f"load-{self.topic}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> int:
        """Stop producing, flush, and return how many records were sent."""
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=30)
        return self.sent

    def __enter__(self) -> "KeyedLoad":
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _run(self) -> None:
        from kafka import KafkaProducer  # noqa: PLC0415 - slow import

        # Records go out in 0.1 s bursts, a produce request or so each: waking for every
        # few records with a short linger kept this process and the broker busy for
        # nothing, and `ksmon demo` needs every core it has.
        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap_servers, linger_ms=TICK_MS, client_id="ksmon-load"
        )
        started = time.monotonic()
        try:
            while not self._stop.is_set():
                due = int((time.monotonic() - started) * self.rate) - self.sent
                for _ in range(due):
                    future = producer.send(
                        self.topic, key=self.skew.pick(self._rng).encode(), value=self.value
                    )
                    future.add_errback(self._count_error)
                    self.sent += 1
                self._stop.wait(TICK_MS / 1000)
            producer.flush(timeout=30)
        finally:
            producer.close(timeout=10)

    def _count_error(self, error: Exception) -> None:
        self.errors += 1
        log.warning("load producer error on %s: %s", self.topic, error)


def produce(bootstrap_servers: str, topic: str, records: Iterable[tuple[str | None, str]]) -> int:
    """Send ``(key, value)`` records and wait until all are acknowledged; return the count."""
    from kafka import KafkaProducer  # noqa: PLC0415 - slow import

    producer = KafkaProducer(bootstrap_servers=bootstrap_servers, client_id="ksmon-produce")
    try:
        futures = [
            producer.send(
                topic, key=key.encode() if key is not None else None, value=value.encode()
            )
            for key, value in records
        ]
        producer.flush(timeout=30)
        for future in futures:
            future.get(timeout=30)
        return len(futures)
    finally:
        producer.close(timeout=10)
