"""Exact rebalance evidence: tail ``__consumer_offsets`` for classic groups' metadata records.

The coordinator writes one GroupMetadata record per generation (and on state
changes); its key names the group, its value carries the generation, the
protocol, the leader, the members and (v2+) when the state last changed. The
record's own timestamp says when that generation was stored, i.e. when the
rebalance completed. Reading them gives exact generations and rebalance
times instead of guesses from polls.

The tail uses ``assign()`` with no group id: it never joins, commits for, or
changes any group. Without READ permission on ``__consumer_offsets`` it stops
and says so; the job then infers rebalances from snapshots.
"""

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent import kafka_python_fixes
from agent.collect.build import GroupRebalanceFacts
from agent.collect.poller import RebalanceSource
from agent.errors import described
from agent.model import RebalanceEvent
from agent.streams.offsets_topic import (
    GroupMetadataKey,
    GroupMetadataValue,
    decode_group_metadata_value,
    decode_offsets_key,
)

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
_EVENTS_KEPT = 64  # per group; the job's rebalance window needs far fewer


@dataclass(slots=True)
class _GroupTrack:
    generation: int | None = None
    state_changed_at: float | None = None
    events: deque[RebalanceEvent] = field(default_factory=lambda: deque(maxlen=_EVENTS_KEPT))
    unreported: int = 0  # events not yet handed to a snapshot


class GroupMetadataLog:
    """Pure state: what the GroupMetadata records of each group said, in order."""

    def __init__(self) -> None:
        self._groups: dict[str, _GroupTrack] = {}
        self._lock = threading.Lock()
        self.records = 0
        self.decode_errors = 0

    def apply(self, key: bytes | None, value: bytes | None, timestamp_ms: int) -> None:
        if key is None:
            return
        decoded_key = decode_offsets_key(key)
        if not isinstance(decoded_key, GroupMetadataKey):
            return  # offset commits and newer record types are not rebalance evidence
        with self._lock:
            self.records += 1
            track = self._groups.setdefault(decoded_key.group, _GroupTrack())
            if value is None:  # tombstone: the group was deleted
                track.generation = None
                return
            decoded = decode_group_metadata_value(value)
            if not isinstance(decoded, GroupMetadataValue):
                self.decode_errors += 1
                return
            if decoded.current_state_timestamp is not None and decoded.current_state_timestamp >= 0:
                track.state_changed_at = decoded.current_state_timestamp / 1000
            if decoded.generation != track.generation:
                track.generation = decoded.generation
                track.events.append(
                    RebalanceEvent(
                        generation=decoded.generation,
                        at=timestamp_ms / 1000,
                        protocol=decoded.protocol,
                        leader=decoded.leader,
                        member_count=len(decoded.members),
                    )
                )
                track.unreported = min(track.unreported + 1, _EVENTS_KEPT)

    def take(self, group_ids: Iterable[str]) -> dict[str, GroupRebalanceFacts]:
        """The facts per group, with the events not handed out before."""
        facts = {}
        with self._lock:
            for group_id in group_ids:
                track = self._groups.get(group_id)
                if track is None:
                    continue
                new = (
                    tuple(track.events)[len(track.events) - track.unreported :]
                    if track.unreported
                    else ()
                )
                track.unreported = 0
                facts[group_id] = GroupRebalanceFacts(track.generation, track.state_changed_at, new)
        return facts


_TOPIC_RECHECK_SECONDS = 10.0
# How long the broker may hold a fetch that finds no new record. Groups that do not
# change leave __consumer_offsets without GroupMetadata records for hours: fetched
# every 500 ms (kafka-python's default), its 50 partitions keep the reader busy for
# nothing; a longer wait cuts that. A new record still comes at once: the broker
# answers a fetch as soon as it has one. At most half the request timeout: a fetch held
# that long would time out (and kafka-python refuses the setting).
_IDLE_FETCH_WAIT_MS = 5000
_DEFAULT_REQUEST_TIMEOUT_MS = 30_000


def wait_for_partitions(
    lookup: Callable[[], set[int]], stop: threading.Event, interval: float
) -> set[int]:
    """``lookup()`` until it finds partitions or ``stop`` is set (then: the empty set).

    A fresh cluster creates ``__consumer_offsets`` with its first consumer
    group; until then there is nothing to tail, and assigning nothing would
    leave the reader idle for good.
    """
    partitions = lookup()
    while not partitions and not stop.wait(interval):
        partitions = lookup()
    return partitions


def idle_fetch_wait_ms(request_timeout_ms: object) -> int:
    timeout = request_timeout_ms if isinstance(request_timeout_ms, int) else None
    return min(_IDLE_FETCH_WAIT_MS, (timeout or _DEFAULT_REQUEST_TIMEOUT_MS) // 2)


def _offsets_topic_partitions(consumer: Any) -> set[int]:  # noqa: ANN401 - kafka-python's consumer
    """Metadata for ``__consumer_offsets`` alone: ``consumer.topics()`` fetched (and the
    consumer kept until its next refresh) every topic's, tens of MB on a large cluster."""
    from kafka.errors import LeaderNotAvailableError, UnknownTopicOrPartitionError  # noqa: PLC0415

    cluster = consumer._cluster
    future = cluster.add_topic(OFFSETS_TOPIC)
    if future.is_done:  # tracked already: ask again, it may have been created since
        future = cluster.request_update()
    try:
        consumer._net.run(consumer._manager.wait_for, future, None)
    except (UnknownTopicOrPartitionError, LeaderNotAvailableError):
        return set()  # not created yet, or being created: asked again
    return set(cluster.partitions_for_topic(OFFSETS_TOPIC) or ())


class OffsetsTopicTail(RebalanceSource):
    """A background reader of ``__consumer_offsets`` feeding a ``GroupMetadataLog``."""

    def __init__(self, client_settings: Mapping[str, object], cluster: str) -> None:
        from kafka import KafkaConsumer  # noqa: PLC0415 - slow import

        # The consumer refuses options it does not know (admin-only ones, say).
        self._settings = {
            k: v for k, v in client_settings.items() if k in KafkaConsumer.DEFAULT_CONFIG
        }
        self._settings["client_id"] = f"{client_settings.get('client_id', 'ksmon')}-offsets-reader"
        self.cluster = cluster
        self.log = GroupMetadataLog()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.running = False
        self.last_error: str | None = None
        # Said at start, to be followed by a line once the tail reads: failed attempts,
        # and whether it said the topic does not exist yet.
        self._failures = 0
        self._said_missing = False

    def facts(self, group_ids: Iterable[str]) -> dict[str, GroupRebalanceFacts]:
        return self.log.take(group_ids)

    def start(self) -> "OffsetsTopicTail":
        self._thread = threading.Thread(
            target=self._run, name=f"ksmon-offsets-tail-{self.cluster}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._consume()
            except Exception as e:  # noqa: BLE001 - report, back off, retry; never kill the agent
                self.running = False
                self.last_error = described(e)
                self._failures += 1
                if "Authorization" in type(e).__name__:
                    log.warning(
                        "cluster %s: no READ permission on %s; rebalances will be inferred "
                        "from polls instead (%s)",
                        self.cluster,
                        OFFSETS_TOPIC,
                        self.last_error,
                    )
                    return
                log.warning(
                    "cluster %s: %s tail failed: %s", self.cluster, OFFSETS_TOPIC, self.last_error
                )
                self._stop.wait(10)

    def _consume(self) -> None:
        from kafka import KafkaConsumer, TopicPartition  # noqa: PLC0415 - slow import

        kafka_python_fixes.install()
        consumer: Any = KafkaConsumer(
            **self._settings,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            exclude_internal_topics=False,
            # Small fetches: at start the whole topic is read, and the default (50 MB a
            # fetch) raised the agent's peak memory by that much. A record larger than
            # this still comes (the broker returns at least one batch).
            max_partition_fetch_bytes=1024 * 1024,
            fetch_max_bytes=4 * 1024 * 1024,
            fetch_max_wait_ms=idle_fetch_wait_ms(self._settings.get("request_timeout_ms")),
        )
        try:
            partitions = wait_for_partitions(
                lambda: self._partitions(consumer), self._stop, _TOPIC_RECHECK_SECONDS
            )
            if not partitions:
                return  # stopped while waiting
            consumer.assign([TopicPartition(OFFSETS_TOPIC, p) for p in sorted(partitions)])
            self.running = True
            self.last_error = None
            self._reading(len(partitions))
            while not self._stop.is_set():
                batches = consumer.poll(timeout_ms=1000, max_records=5000)
                for records in batches.values():
                    for record in records:
                        self.log.apply(record.key, record.value, record.timestamp)
        finally:
            self.running = False
            consumer.close()

    def _partitions(self, consumer: Any) -> set[int]:  # noqa: ANN401 - kafka-python's consumer
        partitions = _offsets_topic_partitions(consumer)
        if not partitions and not self._said_missing:
            self._said_missing = True
            log.info(
                "cluster %s: %s does not exist yet (the broker creates it with the first "
                "consumer group); reading it once it does",
                self.cluster,
                OFFSETS_TOPIC,
            )
        return partitions

    def _reading(self, partitions: int) -> None:
        """After a warning that it failed, or that the topic is not there: it reads now."""
        if self._failures or self._said_missing:
            failures = self._failures
            after = f" after {failures} failed attempt{'s' * (failures != 1)}" if failures else ""
            log.info(
                "cluster %s: reading %s now (%d partitions)%s",
                self.cluster,
                OFFSETS_TOPIC,
                partitions,
                after,
            )
        self._failures = 0
        self._said_missing = False
