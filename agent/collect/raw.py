"""What one poll read from a cluster, in plain types, before any interpretation.

The Kafka edge (``kafka_edge``) fills these from protocol responses; the pure
builder (``build``) turns them into snapshots. Tests build them by hand.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    group_type: str  # "classic" | "consumer" | "streams" | "share" | "" (brokers before 3.8)


@dataclass(frozen=True, slots=True)
class RawMember:
    member_id: str
    client_id: str
    client_host: str
    group_instance_id: str | None
    metadata: bytes  # ConsumerProtocolSubscription (empty unless the group is Stable)
    assignment: bytes  # ConsumerProtocolAssignment


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    group_id: str
    error_code: int
    error_message: str | None
    state: str
    protocol_type: str
    protocol: str
    members: tuple[RawMember, ...]
    coordinator_id: int | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    """A KIP-848 consumer group member, as ConsumerGroupDescribe reports it."""

    member_id: str
    client_id: str
    client_host: str
    group_instance_id: str | None
    rack_id: str | None
    member_epoch: int
    subscribed_topics: tuple[str, ...]
    assigned: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    group_id: str
    error_code: int
    error_message: str | None
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ConsumerGroupMember, ...]
    coordinator_id: int | None = None


@dataclass(frozen=True, slots=True)
class StreamsTaskSet:
    """Tasks of one sub-topology: KIP-1071 names a task by sub-topology id and partition."""

    subtopology: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class StreamsGroupMember:
    """A KIP-1071 streams group member (one stream thread), as StreamsGroupDescribe reports it."""

    member_id: str
    client_id: str
    client_host: str
    group_instance_id: str | None
    rack_id: str | None
    member_epoch: int
    process_id: str
    endpoint: str | None  # "host:port" of application.server
    client_tags: tuple[tuple[str, str], ...]
    active: tuple[StreamsTaskSet, ...]
    standby: tuple[StreamsTaskSet, ...]
    warmup: tuple[StreamsTaskSet, ...]


@dataclass(frozen=True, slots=True)
class Subtopology:
    """One sub-topology of a streams group's topology, as the broker holds it."""

    subtopology_id: str
    source_topics: tuple[str, ...]
    repartition_source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...]
    changelog_topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StreamsGroupDescription:
    group_id: str
    error_code: int
    error_message: str | None
    state: str
    group_epoch: int
    assignment_epoch: int
    topology_epoch: int | None  # None: no topology initialised yet
    # None when the broker has none to give (group not initialised, source
    # topics missing or partitioned wrongly: the group is NotReady then).
    subtopologies: tuple[Subtopology, ...] | None
    members: tuple[StreamsGroupMember, ...]
    coordinator_id: int | None = None


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    topic: str
    partition: int
    offset: int  # -1: none
    metadata: str | None
    error_code: int = 0


@dataclass(frozen=True, slots=True)
class GroupOffsets:
    group_id: str
    error_code: int
    offsets: tuple[CommittedOffset, ...]


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    error_code: int
    is_internal: bool
    leaders: tuple[int, ...]  # index = partition; -1 when leaderless


@dataclass(frozen=True, slots=True)
class PartitionOffset:
    topic: str
    partition: int
    offset: int | None  # None when the broker returned an error for it
    error_code: int = 0


@dataclass(frozen=True, slots=True)
class TopicConfig:
    name: str
    cleanup_policy: str | None = None
    retention_ms: int | None = None
    max_message_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class FailedRequest:
    """A request (or a batch of them) that failed as a whole."""

    stage: str
    error: str
    message: str
    retriable: bool
    groups: tuple[str, ...] = ()  # the groups it concerned; empty = the whole cluster


@dataclass(slots=True)
class ClusterMetadataCache:
    """What the slow (metadata-interval) part of a poll learned; reused between refreshes."""

    refreshed_at: float | None = None
    all_topics: tuple[str, ...] = ()
    topic_configs: dict[str, TopicConfig] = field(default_factory=dict)
    topic_sizes: dict[str, int] = field(default_factory=dict)
    broker_count: int | None = None
    broker_message_max_bytes: int | None = None
    offsets_topic_max_message_bytes: int | None = None
    offsets_topic_partitions: int | None = None
