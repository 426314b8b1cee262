"""One snapshot: what the agent saw of one consumer group in one poll of one cluster.

A snapshot is self-describing (who produced it, when, how long the poll took,
what went wrong while polling) and versioned. ``docs/snapshot.md`` documents
every field; change both together, and bump ``SCHEMA_VERSION`` only for a
change an older reader cannot ignore (new fields with defaults do not need it).

Times are Unix seconds (float) unless a name ends in ``_ms``; offsets are
Kafka offsets (int). ``None`` means unknown, never zero.
"""

import json
from dataclasses import dataclass

from agent.model.records import RecordError, from_plain, to_json_bytes

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class AgentInfo:
    id: str
    version: str
    mode: str  # "central" | "sidecar"
    pod: str | None = None
    namespace: str | None = None
    pod_ip: str | None = None
    node: str | None = None


@dataclass(frozen=True, slots=True)
class PollInfo:
    sequence: int  # increments with every poll of this cluster by this agent
    started_at: float
    duration_seconds: float


@dataclass(frozen=True, slots=True)
class GroupInfo:
    group_id: str
    group_type: str  # "classic" | "consumer" | "streams" | "share" | "unknown"
    state: str  # the broker's word: Stable, PreparingRebalance, Empty, Dead, Assigning, ...
    protocol_type: str  # "consumer" for classic and KIP-848 groups, "streams" for KIP-1071
    protocol: str | None = None  # the chosen assignor; "stream" for classic Kafka Streams groups
    coordinator_id: int | None = None
    is_streams: bool = False
    # Classic groups: the generation, from __consumer_offsets when readable.
    generation: int | None = None
    # When the group last changed state (GroupMetadata currentStateTimestamp).
    state_changed_at: float | None = None
    # KIP-848 / KIP-1071 groups.
    group_epoch: int | None = None
    assignment_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class TopicPartitionRef:
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class StreamsTask:
    task: str  # "<subtopology>_<partition>", e.g. "0_2"
    partitions: tuple[TopicPartitionRef, ...] = ()


@dataclass(frozen=True, slots=True)
class TaskOffsetSum:
    task: str
    # -2: running active on this member's client; -3: unknown; >= 0: sum of
    # the task's changelog offsets in the member's local state.
    offset_sum: int


@dataclass(frozen=True, slots=True)
class ClientTag:
    key: str
    value: str


@dataclass(frozen=True, slots=True)
class StreamsMemberInfo:
    """What a classic-group member's Kafka Streams userData says."""

    process_id: str
    thread_index: int | None = None  # n of "<client>-StreamThread-<n>-consumer"
    base_client_id: str | None = None
    endpoint: str | None = None  # application.server
    subscription_version: int | None = None
    latest_supported_version: int | None = None
    assignment_version: int | None = None
    commonly_supported_version: int | None = None
    active_tasks: tuple[StreamsTask, ...] = ()
    standby_tasks: tuple[StreamsTask, ...] = ()  # warm-up replicas are indistinguishable
    task_offset_sums: tuple[TaskOffsetSum, ...] = ()
    subscription_error_code: int | None = None
    assignment_error_code: int | None = None
    next_rebalance_ms: int | None = None  # None when none is scheduled (Long.MAX)
    client_tags: tuple[ClientTag, ...] = ()


@dataclass(frozen=True, slots=True)
class DecodeIssue:
    what: str  # the format that did not decode, e.g. "AssignmentInfo"
    reason: str


@dataclass(frozen=True, slots=True)
class MemberInfo:
    member_id: str
    client_id: str
    client_host: str
    group_instance_id: str | None = None
    assigned_partitions: tuple[TopicPartitionRef, ...] = ()
    subscribed_topics: tuple[str, ...] = ()
    rack_id: str | None = None
    member_epoch: int | None = None  # KIP-848 / KIP-1071
    # Sizes of the member's metadata blobs as the coordinator stores them.
    subscription_bytes: int = 0
    assignment_bytes: int = 0
    streams: StreamsMemberInfo | None = None
    decode_errors: tuple[DecodeIssue, ...] = ()


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition the group consumes (or has committed offsets for)."""

    topic: str
    partition: int
    log_end_offset: int | None = None
    log_start_offset: int | None = None
    committed_offset: int | None = None
    lag: int | None = None  # log_end_offset - committed_offset, never negative
    # How long ago the first unconsumed record was appended, interpolated from
    # the log-end offsets the agent has seen; 0 when caught up.
    lag_seconds: float | None = None
    owner_member_id: str | None = None
    # Kafka Streams commits each input partition's stream time with its offset.
    stream_time_ms: int | None = None
    leader_id: int | None = None


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A topic the group reads, or an internal topic of its Kafka Streams application."""

    name: str
    partitions: int
    internal_kind: str | None = None  # repartition | changelog | fk_subscription_registration | ...
    consumed: bool = False  # the group reads it
    cleanup_policy: str | None = None
    retention_ms: int | None = None
    max_message_bytes: int | None = None
    size_bytes: int | None = None  # on disk, over all partitions and replicas
    # Per-partition log-end offsets (index = partition) of internal topics the
    # group does not consume (changelogs), for restore progress.
    log_end_offsets: tuple[int | None, ...] = ()


@dataclass(frozen=True, slots=True)
class ClusterFacts:
    broker_count: int | None = None
    # The limit a group's metadata record must fit in (KAFKA-7149).
    offsets_topic_max_message_bytes: int | None = None
    offsets_topic_partitions: int | None = None


@dataclass(frozen=True, slots=True)
class RebalanceEvent:
    """A generation change read from __consumer_offsets (exact, not inferred)."""

    generation: int
    at: float  # the record's timestamp
    protocol: str | None = None
    leader: str | None = None
    member_count: int = 0


@dataclass(frozen=True, slots=True)
class PollError:
    stage: str  # list_groups | describe_groups | offset_fetch | list_offsets | metadata | ...
    error: str  # the error's type, e.g. GroupAuthorizationFailedError
    message: str
    retriable: bool = False


@dataclass(frozen=True, slots=True)
class Snapshot:
    schema_version: int
    cluster: str
    agent: AgentInfo
    poll: PollInfo
    group: GroupInfo
    members: tuple[MemberInfo, ...] = ()
    partitions: tuple[PartitionInfo, ...] = ()
    topics: tuple[TopicInfo, ...] = ()
    cluster_facts: ClusterFacts = ClusterFacts()
    rebalances: tuple[RebalanceEvent, ...] = ()
    errors: tuple[PollError, ...] = ()

    @property
    def key(self) -> bytes:
        """The Kafka record key: one group's snapshots stay in order on one partition."""
        return f"{self.cluster}/{self.group.group_id}".encode()

    def to_json(self) -> bytes:
        return to_json_bytes(self)

    @classmethod
    def from_json(cls, data: bytes | str) -> "Snapshot":
        """Parse a snapshot; raises ``RecordError`` naming the offending field."""
        try:
            plain = json.loads(data)
        except ValueError as e:
            raise RecordError(f"not JSON: {e}") from e
        if not isinstance(plain, dict):
            raise RecordError("$: expected an object")
        version = plain.get("schema_version")
        if not isinstance(version, int) or version < 1:
            raise RecordError(f"$.schema_version: expected a positive integer, got {version!r}")
        if version > SCHEMA_VERSION:
            raise RecordError(
                f"$.schema_version: {version} is newer than this reader's {SCHEMA_VERSION}"
            )
        return from_plain(cls, plain)
