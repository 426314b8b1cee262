"""Pure assembly of snapshots from what one poll observed.

Input: the ``raw`` observations of one poll of one cluster, the log-end offset
history, and the time. Output: one ``Snapshot`` per group. No I/O, no clock:
everything time-dependent comes in as an argument, so tests pin it.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.collect.lag_time import OffsetHistory
from agent.collect.raw import (
    ClusterLoad,
    ClusterMetadataCache,
    ConsumerGroupDescription,
    DescribedGroup,
    FailedRequest,
    GroupOffsets,
    ListedGroup,
    PartitionOffset,
    StreamsGroupDescription,
    TopicMetadata,
)
from agent.collect.streams_view import (
    consumer_group_member_view,
    member_view,
    streams_group_member_view,
)
from agent.model import (
    SCHEMA_VERSION,
    AgentInfo,
    BrokerLoad,
    ClusterFacts,
    GroupInfo,
    PartitionInfo,
    PollError,
    PollInfo,
    RebalanceEvent,
    Snapshot,
    SubtopologyInfo,
    TopicInfo,
)
from agent.streams.internal_topics import (
    InternalTopicKind,
    changelog_store_name,
    classify_internal_topic,
)
from agent.streams.offsets_topic import StreamsCommitMetadata, decode_streams_commit_metadata
from agent.streams.topology import TopologyDescription

STREAMS_PROTOCOL = "stream"  # StreamsPartitionAssignor's protocol name in classic groups
OFFSETS_TOPIC = "__consumer_offsets"

TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class GroupRebalanceFacts:
    """What __consumer_offsets told about a classic group (when the agent reads it)."""

    generation: int | None = None
    state_changed_at: float | None = None
    new_events: tuple[RebalanceEvent, ...] = ()


@dataclass(slots=True)
class PollObservation:
    """Everything one poll of one cluster read, ready for ``build_snapshots``."""

    cluster: str
    agent: AgentInfo
    sequence: int
    started_at: float
    duration_seconds: float
    groups: Sequence[ListedGroup]
    described: Mapping[str, DescribedGroup] = field(default_factory=dict)
    consumer_groups: Mapping[str, ConsumerGroupDescription] = field(default_factory=dict)
    streams_groups: Mapping[str, StreamsGroupDescription] = field(default_factory=dict)
    offsets: Mapping[str, GroupOffsets] = field(default_factory=dict)
    topics: Mapping[str, TopicMetadata] = field(default_factory=dict)
    log_end: Mapping[TopicPartitionKey, PartitionOffset] = field(default_factory=dict)
    log_start: Mapping[TopicPartitionKey, PartitionOffset] = field(default_factory=dict)
    metadata: ClusterMetadataCache = field(default_factory=ClusterMetadataCache)
    failures: Sequence[FailedRequest] = ()
    rebalances: Mapping[str, GroupRebalanceFacts] = field(default_factory=dict)
    # Groups known to be Kafka Streams applications whatever they look like now
    # (a sidecar's own app, even while its group is empty).
    known_streams: frozenset[str] = frozenset()
    # Configured Topology#describe() texts, parsed, by group id (as printed: internal
    # topics without the application id; ``build_snapshot`` names them).
    topologies: Mapping[str, TopologyDescription] = field(default_factory=dict)
    # A topic's row is the same in every group that reads it: built once per poll.
    topic_rows: dict[tuple[str, str | None, bool], TopicInfo] = field(
        default_factory=dict, repr=False
    )


def is_streams_group(
    listed: ListedGroup, described: DescribedGroup | None, offsets: GroupOffsets | None = None
) -> bool:
    """A Kafka Streams application's group: by its group type or protocol, or, when it has
    no members to say so (every instance is down), by how it commits its offsets."""
    if listed.group_type == "streams" or listed.protocol_type == "streams":
        return True
    if described is not None and described.protocol == STREAMS_PROTOCOL:
        return True
    return offsets is not None and commits_like_streams(offsets)


def commits_like_streams(offsets: GroupOffsets) -> bool:
    """True when the committed offsets carry Kafka Streams' stream-time metadata.

    Streams (2.4+) commits every input partition with Base64 metadata holding a
    magic byte and the partition's stream time; plain consumers commit "" or
    text of their own, which does not decode as that.
    """
    decoded = [
        decode_streams_commit_metadata(c.metadata)
        for c in offsets.offsets
        if c.error_code == 0 and c.offset >= 0 and c.metadata
    ]
    return bool(decoded) and all(isinstance(d, StreamsCommitMetadata) for d in decoded)


def streams_internal_topics(
    application_id: str, all_topics: Sequence[str]
) -> dict[str, InternalTopicKind]:
    kinds = {}
    for topic in all_topics:
        kind = classify_internal_topic(topic, application_id)
        if kind is not None:
            kinds[topic] = kind
    return kinds


def build_snapshots(
    observation: PollObservation, history: OffsetHistory, now: float
) -> list[Snapshot]:
    return [build_snapshot(observation, listed, history, now) for listed in observation.groups]


def build_snapshot(
    observation: PollObservation, listed: ListedGroup, history: OffsetHistory, now: float
) -> Snapshot:
    group_id = listed.group_id
    described = observation.described.get(group_id)
    streams = (
        is_streams_group(listed, described, observation.offsets.get(group_id))
        or group_id in observation.known_streams
    )
    modern = observation.consumer_groups.get(group_id)
    streams_group = observation.streams_groups.get(group_id)
    if streams_group is not None:
        streams = True
        members = tuple(
            streams_group_member_view(m, streams_group.subtopologies) for m in streams_group.members
        )
    elif modern is not None:
        members = tuple(consumer_group_member_view(m) for m in modern.members)
    else:
        members = tuple(
            member_view(raw, decode_streams=streams)
            for raw in (described.members if described else ())
        )
    owners = {
        (tp.topic, tp.partition): m.member_id for m in members for tp in m.assigned_partitions
    }
    partitions = _partitions(observation, group_id, owners, history, now, streams=streams)
    # What the group reads: its partitions, and every source topic of the topology it holds
    # (also while it has no assignment: a KIP-1071 group the broker refuses to assign).
    consumed = {p.topic for p in partitions} | {
        t
        for s in (streams_group.subtopologies or () if streams_group is not None else ())
        for t in (*s.source_topics, *s.repartition_source_topics)
    }
    # The topics it reads count too: the list of all topics is refreshed once a minute,
    # and a repartition topic an application has just created is read before it is listed.
    internal = (
        streams_internal_topics(group_id, [*observation.metadata.all_topics, *consumed])
        if streams
        else {}
    )
    rebalance = observation.rebalances.get(group_id, GroupRebalanceFacts())
    state, protocol_type, protocol, coordinator = listed.state, listed.protocol_type, None, None
    if described is not None:
        state = described.state or state
        protocol_type = described.protocol_type or protocol_type
        protocol, coordinator = described.protocol or None, described.coordinator_id
    if modern is not None:
        state, protocol, coordinator = (
            modern.state or state,
            modern.assignor or None,
            modern.coordinator_id,
        )
    epochs = modern or streams_group
    if streams_group is not None:
        state, protocol_type, coordinator = (
            streams_group.state or state,
            "streams",
            streams_group.coordinator_id,
        )
    return Snapshot(
        schema_version=SCHEMA_VERSION,
        cluster=observation.cluster,
        agent=observation.agent,
        poll=PollInfo(observation.sequence, observation.started_at, observation.duration_seconds),
        group=GroupInfo(
            group_id=group_id,
            group_type="streams" if streams_group is not None else listed.group_type or "classic",
            state=state or "Unknown",
            protocol_type=protocol_type,
            protocol=protocol,
            coordinator_id=coordinator,
            is_streams=streams,
            generation=rebalance.generation,
            state_changed_at=rebalance.state_changed_at,
            group_epoch=epochs.group_epoch if epochs is not None else None,
            assignment_epoch=epochs.assignment_epoch if epochs is not None else None,
            topology_epoch=streams_group.topology_epoch if streams_group is not None else None,
        ),
        members=members,
        partitions=partitions,
        topics=_topics(observation, consumed, internal),
        cluster_facts=ClusterFacts(
            broker_count=observation.metadata.broker_count,
            offsets_topic_max_message_bytes=(
                observation.metadata.offsets_topic_max_message_bytes
                or observation.metadata.broker_message_max_bytes
            ),
            offsets_topic_partitions=observation.metadata.offsets_topic_partitions,
            **_load_facts(observation.metadata.load),
        ),
        rebalances=rebalance.new_events,
        errors=_errors(observation, group_id, described, modern, streams_group),
        subtopologies=_broker_subtopologies(streams_group)
        or _configured_subtopologies(observation, group_id),
    )


def _load_facts(load: ClusterLoad | None) -> dict[str, Any]:
    if load is None:
        return {}
    return {
        "total_topics": load.topics,
        "total_partitions": load.partitions,
        "total_replicas": load.replicas,
        "brokers": tuple(
            BrokerLoad(b.broker_id, b.replicas, b.leaders, b.streams_internal_replicas)
            for b in load.brokers
        ),
    }


def _broker_subtopologies(
    described: StreamsGroupDescription | None,
) -> tuple[SubtopologyInfo, ...]:
    if described is None:
        return ()
    return tuple(
        SubtopologyInfo(
            subtopology_id=s.subtopology_id,
            source_topics=s.source_topics,
            repartition_source_topics=s.repartition_source_topics,
            repartition_sink_topics=s.repartition_sink_topics,
            changelog_topics=s.changelog_topics,
            origin="broker",
            state_stores=tuple(
                store
                for topic in s.changelog_topics
                if (store := changelog_store_name(topic, described.group_id)) is not None
            ),
        )
        for s in described.subtopologies or ()
    )


def _configured_subtopologies(
    observation: PollObservation, application_id: str
) -> tuple[SubtopologyInfo, ...]:
    """The configured describe() text as the broker would hold it: internal topics by
    their broker names, a store's changelog only where that topic exists (a store can
    run without logging, or, optimized, log to its source topic)."""
    topology = observation.topologies.get(application_id)
    if topology is None:
        return ()  # the commonest: asked of each of a thousand groups every poll
    known_topics = {*observation.metadata.all_topics, *observation.topics}

    def repartition(topic: str) -> bool:
        # Foreign-key join topics are repartition topics to Kafka Streams too.
        kind = classify_internal_topic(topic, application_id)
        return kind is not None and kind is not InternalTopicKind.CHANGELOG

    named = topology.for_application(application_id)
    return tuple(
        SubtopologyInfo(
            subtopology_id=str(s.subtopology_id),
            source_topics=tuple(t for t in s.source_topics if not repartition(t)),
            repartition_source_topics=tuple(t for t in s.source_topics if repartition(t)),
            repartition_sink_topics=tuple(t for t in s.sink_topics if repartition(t)),
            changelog_topics=tuple(
                topic
                for store in s.stores
                if (topic := f"{application_id}-{store}-changelog") in known_topics
            ),
            origin="configured",
            state_stores=s.stores,
            processors=s.processors,
        )
        for s in named.task_subtopologies
    )


def _partitions(
    observation: PollObservation,
    group_id: str,
    owners: Mapping[TopicPartitionKey, str],
    history: OffsetHistory,
    now: float,
    *,
    streams: bool,
) -> tuple[PartitionInfo, ...]:
    committed: dict[TopicPartitionKey, tuple[int, str | None]] = {}
    group_offsets = observation.offsets.get(group_id)
    if group_offsets is not None:
        # Unpacked, not read by field name: a NamedTuple's fields are properties.
        for topic, partition, at, text, error_code in group_offsets.offsets:
            if error_code == 0 and at >= 0:
                committed[(topic, partition)] = (at, text)
    keys = sorted(set(committed) | set(owners))
    # Looked up once: the loop below runs 20,000 times a poll at 1,000 groups.
    log_end, log_start, topics = observation.log_end, observation.log_start, observation.topics
    estimate_of = history.estimate
    rows = []
    for key in keys:
        topic, partition = key
        end = log_end.get(key)
        start = log_start.get(key)
        leo = end.offset if end else None
        offset, metadata = committed.get(key, _NOT_COMMITTED)
        lag = max(0, leo - offset) if leo is not None and offset is not None else None
        estimate = estimate_of(key, offset, now) if offset is not None else None
        metadata_topic = topics.get(topic)
        leaders = metadata_topic.leaders if metadata_topic else ()
        rows.append(
            PartitionInfo(
                topic=topic,
                partition=partition,
                log_end_offset=leo,
                log_start_offset=start.offset if start else None,
                committed_offset=offset,
                lag=lag,
                lag_seconds=estimate.seconds if estimate is not None else None,
                owner_member_id=owners.get(key),
                stream_time_ms=_stream_time(metadata) if streams else None,
                leader_id=leaders[partition] if partition < len(leaders) else None,
                lag_seconds_lower_bound=estimate is not None and estimate.lower_bound,
            )
        )
    return tuple(rows)


_NOT_COMMITTED = (None, None)


def _stream_time(metadata: str | None) -> int | None:
    if not metadata:
        return None
    decoded = decode_streams_commit_metadata(metadata)
    if isinstance(decoded, StreamsCommitMetadata) and decoded.partition_time >= 0:
        return decoded.partition_time
    return None


def _topics(
    observation: PollObservation,
    consumed: set[str],
    internal: Mapping[str, InternalTopicKind],
) -> tuple[TopicInfo, ...]:
    cache = observation.metadata
    rows = []
    for name in sorted(consumed | set(internal)):
        kind = internal.get(name)
        memo = (name, kind, name in consumed)
        known = observation.topic_rows.get(memo)
        if known is not None:
            rows.append(known)
            continue
        meta = observation.topics.get(name)
        config = cache.topic_configs.get(name)
        end_offsets: tuple[int | None, ...] = ()
        if kind is InternalTopicKind.CHANGELOG and meta is not None:
            end_offsets = tuple(
                (observation.log_end.get((name, p)) or _UNKNOWN).offset
                for p in range(len(meta.leaders))
            )
        rows.append(
            TopicInfo(
                name=name,
                partitions=len(meta.leaders) if meta else 0,
                internal_kind=str(kind) if kind is not None else None,
                consumed=name in consumed,
                cleanup_policy=config.cleanup_policy if config else None,
                retention_ms=config.retention_ms if config else None,
                max_message_bytes=config.max_message_bytes if config else None,
                size_bytes=cache.topic_sizes.get(name),
                log_end_offsets=end_offsets,
                replication_factor=meta.replication_factor if meta else None,
            )
        )
        observation.topic_rows[memo] = rows[-1]
    return tuple(rows)


_UNKNOWN = PartitionOffset("", 0, None)


def _errors(
    observation: PollObservation,
    group_id: str,
    described: DescribedGroup | None,
    modern: ConsumerGroupDescription | None,
    streams_group: StreamsGroupDescription | None,
) -> tuple[PollError, ...]:
    from agent.collect.kafka_edge import error_name  # noqa: PLC0415 - kafka-python import is slow

    errors = [
        PollError(f.stage, f.error, f.message, f.retriable)
        for f in observation.failures
        if not f.groups or group_id in f.groups
    ]
    if described is not None and described.error_code:
        name, retriable = error_name(described.error_code)
        errors.append(
            PollError("describe_groups", name, described.error_message or name, retriable)
        )
    if modern is not None and modern.error_code:
        name, retriable = error_name(modern.error_code)
        errors.append(
            PollError("consumer_group_describe", name, modern.error_message or name, retriable)
        )
    if streams_group is not None and streams_group.error_code:
        name, retriable = error_name(streams_group.error_code)
        errors.append(
            PollError(
                "streams_group_describe", name, streams_group.error_message or name, retriable
            )
        )
    offsets = observation.offsets.get(group_id)
    if offsets is not None and offsets.error_code:
        name, retriable = error_name(offsets.error_code)
        errors.append(PollError("offset_fetch", name, name, retriable))
    return tuple(errors)
