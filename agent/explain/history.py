"""A group's recent generations, read from ``__consumer_offsets`` for ``ksmon explain``.

The agent's daemon tails the whole of ``__consumer_offsets`` in the background
(``agent.collect.offsets_tail``); ``explain`` lives for a few seconds, so it reads
only what it needs: the one partition holding the group's records, from a
look-back window ago to its end, within a time budget. The coordinator writes
one GroupMetadata record per generation (an Empty group gets a new generation
too), with the members and their subscriptions; the record's timestamp is when
the generation was stored. That gives the generation and the recent rebalances
even when a poll sees the group Empty between two of them, and who its members
were: Kafka Streams stream threads or not.

``GroupMetadataFold`` is pure; ``read_group_history`` is the thin I/O around it,
and ``group_history`` decides whether there is anything to read. Every way of
not knowing ends as ``GroupHistory.problem``, shown in the report, never raised.
"""

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from agent import kafka_python_fixes
from agent.config import ClusterConfig, kafka_client_settings
from agent.model import Snapshot
from agent.streams.client_id import parse_stream_thread_client_id
from agent.streams.member import decode_streams_member
from agent.streams.offsets_topic import (
    GroupMember,
    GroupMetadataKey,
    GroupMetadataValue,
    decode_group_metadata_value,
    decode_offsets_key,
    offsets_topic_partition,
)

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
STREAMS_PROTOCOL = "stream"  # StreamsPartitionAssignor's name: classic Streams groups' protocol
# The look-back: the job's rebalance_loop window (10 min by default) and a margin.
HISTORY_LOOKBACK_SECONDS = 15 * 60.0
# A busy partition of __consumer_offsets can hold minutes of other groups' commits;
# a person waiting on explain gets what was read by then, and is told so.
HISTORY_BUDGET_SECONDS = 10.0
_POLL_TIMEOUT_MS = 500
_MAX_RECORDS_PER_POLL = 5000


@dataclass(frozen=True, slots=True)
class GenerationSeen:
    """One generation of the group as the coordinator stored it."""

    generation: int
    at: float  # the record's timestamp: when the generation was stored (the rebalance ended)
    protocol: str | None  # the assignor chosen; "stream" for Kafka Streams, None when Empty
    members: int
    # Kafka Streams process ids (instances) among the members' subscriptions, sorted.
    streams_processes: tuple[str, ...] = ()
    # Members that are Kafka Streams stream threads (by subscription or client id).
    stream_threads: int = 0

    @property
    def is_streams(self) -> bool:
        return self.protocol == STREAMS_PROTOCOL or self.stream_threads > 0


@dataclass(frozen=True, slots=True)
class GroupHistory:
    """What the group's records in the window said, or why they could not be read."""

    generations: tuple[GenerationSeen, ...] = ()  # oldest first, one per generation
    since: float | None = None  # the window read: from ...
    until: float | None = None  # ... to (when the read began)
    partition: int | None = None  # of __consumer_offsets
    # False: the budget ran out before the partition's end; later generations are missing.
    complete: bool = True
    deleted_at: float | None = None  # a tombstone: the group was deleted at that time
    problem: str | None = None  # why nothing was read (then generations is empty)

    @classmethod
    def unknown(cls, why: str) -> "GroupHistory":
        return cls(problem=why)


class GroupMetadataFold:
    """Pure: the GroupMetadata records of one group, folded into its generations."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._generations: dict[int, GenerationSeen] = {}
        self.deleted_at: float | None = None
        self.decode_errors = 0

    def apply(self, key: bytes | None, value: bytes | None, timestamp_ms: int) -> None:
        if key is None:
            return
        decoded_key = decode_offsets_key(key)
        # Offset commits and other groups' records share the partition: skip them.
        if not isinstance(decoded_key, GroupMetadataKey) or decoded_key.group != self.group:
            return
        at = timestamp_ms / 1000
        if value is None:
            self.deleted_at = at
            return
        decoded = decode_group_metadata_value(value)
        if not isinstance(decoded, GroupMetadataValue):
            self.decode_errors += 1
            return
        seen = generation_seen(decoded, at)
        earlier = self._generations.get(seen.generation)
        # A generation's first record says when it was stored; a later one of the same
        # generation (a static member replaced without a rebalance) has its members now.
        if earlier is not None:
            seen = replace(seen, at=earlier.at)
        self._generations[seen.generation] = seen

    @property
    def generations(self) -> tuple[GenerationSeen, ...]:
        return tuple(sorted(self._generations.values(), key=lambda g: (g.at, g.generation)))


def generation_seen(value: GroupMetadataValue, at: float) -> GenerationSeen:
    processes: set[str] = set()
    threads = 0
    for member in value.members:
        process = _streams_process(member)
        if process is not None:
            processes.add(process)
        if process is not None or parse_stream_thread_client_id(member.client_id) is not None:
            threads += 1
    return GenerationSeen(
        generation=value.generation,
        at=at,
        protocol=value.protocol or None,
        members=len(value.members),
        streams_processes=tuple(sorted(p for p in processes if p)),
        stream_threads=threads,
    )


def _streams_process(member: GroupMember) -> str | None:
    """The member's Kafka Streams process id, when its subscription carries SubscriptionInfo."""
    decoded = decode_streams_member(member.subscription or None, member.assignment or None)
    info = decoded.subscription_info
    return info.process_id if info is not None else None


def history_unreadable(cluster: ClusterConfig, snapshot: Snapshot) -> str | None:
    """Why explain cannot read the group's generations from __consumer_offsets, or None."""
    group = snapshot.group
    if group.group_epoch is not None:
        kind = "KIP-1071 streams" if group.group_type == "streams" else "KIP-848 consumer"
        return (
            f"a {kind} group: its group epoch stands for the generation, and its rebalances "
            "are stored in record types ksmon does not decode"
        )
    if not cluster.offsets_topic.read:
        return f"not read: offsets_topic.read is false for cluster {cluster.name}"
    if snapshot.cluster_facts.offsets_topic_partitions is None:
        return NO_PARTITION_COUNT
    return None


NO_PARTITION_COUNT = (
    f"unknown: the number of {OFFSETS_TOPIC} partitions is unknown (the poll could not read "
    "its metadata), so the partition holding the group's records is too"
)


def group_history(
    cluster: ClusterConfig, snapshot: Snapshot, *, clock: Callable[[], float] = time.time
) -> GroupHistory:
    """The group's recent generations, or why there are none to read."""
    why = history_unreadable(cluster, snapshot)
    partitions = snapshot.cluster_facts.offsets_topic_partitions
    if why is not None or partitions is None:
        return GroupHistory.unknown(why or NO_PARTITION_COUNT)
    return read_group_history(
        kafka_client_settings(cluster),
        snapshot.group.group_id,
        offsets_topic_partition(snapshot.group.group_id, partitions),
        clock=clock,
    )


def read_group_history(
    client_settings: Mapping[str, object],
    group: str,
    partition: int,
    *,
    lookback_seconds: float = HISTORY_LOOKBACK_SECONDS,
    budget_seconds: float = HISTORY_BUDGET_SECONDS,
    clock: Callable[[], float] = time.time,
) -> GroupHistory:
    """Read ``partition`` of __consumer_offsets from ``lookback_seconds`` ago to its end.

    With ``assign()`` and no group id: it never joins, commits for or changes a group.
    """
    from kafka import KafkaConsumer, TopicPartition  # noqa: PLC0415 - slow import

    from agent.collect.kafka_edge import describe_exception  # noqa: PLC0415 - ditto

    kafka_python_fixes.install()
    until = clock()
    since = until - lookback_seconds
    fold = GroupMetadataFold(group)
    settings = {k: v for k, v in client_settings.items() if k in KafkaConsumer.DEFAULT_CONFIG}
    settings["client_id"] = f"{client_settings.get('client_id', 'ksmon')}-explain"
    consumer: Any = None
    try:
        consumer = KafkaConsumer(
            **settings,
            group_id=None,
            enable_auto_commit=False,
            exclude_internal_topics=False,
            # Small fetches: only one group's records matter among everyone's commits.
            max_partition_fetch_bytes=1024 * 1024,
            fetch_max_bytes=4 * 1024 * 1024,
        )
        tp = TopicPartition(OFFSETS_TOPIC, partition)
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        found = consumer.offsets_for_times({tp: int(since * 1000)})[tp]
        consumer.seek(tp, found.offset if found is not None else end)
        deadline = until + budget_seconds
        while consumer.position(tp) < end and clock() < deadline:
            batches = consumer.poll(timeout_ms=_POLL_TIMEOUT_MS, max_records=_MAX_RECORDS_PER_POLL)
            for records in batches.values():
                for record in records:
                    if record.offset < end:
                        fold.apply(record.key, record.value, record.timestamp)
        complete = consumer.position(tp) >= end
    except Exception as e:  # explain's own view stands without the history: say why, go on
        name, text, _ = describe_exception(e)
        log.debug("reading %s partition %d failed", OFFSETS_TOPIC, partition, exc_info=True)
        error = f"{name}: {text}" if text else name
        return GroupHistory.unknown(
            f"unknown: cannot read {OFFSETS_TOPIC} partition {partition} ({error}), "
            "where the coordinator keeps the group's generations"
        )
    finally:
        if consumer is not None:
            consumer.close()
    return GroupHistory(
        generations=fold.generations,
        since=since,
        until=until,
        partition=partition,
        complete=complete,
        deleted_at=fold.deleted_at,
    )
