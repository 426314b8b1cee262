"""What one poll read from a cluster, in plain types, before any interpretation.

The Kafka edge (``kafka_edge``) fills these from protocol responses; the pure
builder (``build``) turns them into snapshots. Tests build them by hand.
"""

from collections import Counter
from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass, field
from typing import NamedTuple


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


# CommittedOffset and PartitionOffset are NamedTuples, not frozen dataclasses like the
# rest: a poll of 1,000 groups x 20 partitions makes 39,000 of them, and a tuple is made
# much faster (a frozen dataclass sets each field by object.__setattr__).
class CommittedOffset(NamedTuple):
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
    replicas: tuple[tuple[int, ...], ...] = ()  # index = partition: its replicas' broker ids

    @property
    def replication_factor(self) -> int | None:
        """The most replicas any partition has (a reassignment briefly adds some)."""
        return max((len(r) for r in self.replicas), default=None) or None


class PartitionOffset(NamedTuple):  # a NamedTuple: see CommittedOffset
    topic: str
    partition: int
    offset: int | None  # None when the broker returned an error for it
    error_code: int = 0


@dataclass(frozen=True, slots=True)
class TimedOffset:
    """ListOffsets by time: the first offset whose record time is at or after the time
    asked (-1: none is; None: an error), and that record's time in ms (-1: none)."""

    topic: str
    partition: int
    offset: int | None
    timestamp_ms: int
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


@dataclass(frozen=True, slots=True)
class BrokerReplicas:
    broker_id: int
    replicas: int = 0
    leaders: int = 0
    streams_internal_replicas: int = 0


@dataclass(frozen=True, slots=True)
class ClusterLoad:
    """Topics, partitions and replicas of the whole cluster, per broker too."""

    topics: int
    partitions: int
    replicas: int
    brokers: tuple[BrokerReplicas, ...]


def cluster_load(
    topics: Sequence[TopicMetadata], broker_ids: Iterable[int], streams_internal: Set[str]
) -> ClusterLoad:
    """Count every partition replica on its broker (brokers without any count 0)."""
    replicas: Counter[int] = Counter()
    leaders: Counter[int] = Counter()
    internal: Counter[int] = Counter()
    partitions = 0
    ok = [t for t in topics if t.error_code == 0]
    for topic in ok:
        partitions += len(topic.leaders)
        leaders.update(b for b in topic.leaders if b >= 0)
        for nodes in topic.replicas:
            replicas.update(nodes)
            if topic.name in streams_internal:
                internal.update(nodes)
    ids = sorted(set(broker_ids) | set(replicas))
    return ClusterLoad(
        topics=len(ok),
        partitions=partitions,
        replicas=sum(replicas.values()),
        brokers=tuple(BrokerReplicas(b, replicas[b], leaders[b], internal[b]) for b in ids),
    )


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
    # Central agents only: from the all-topics Metadata of the last refresh.
    load: ClusterLoad | None = None
