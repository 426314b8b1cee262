"""One snapshot: what the agent saw of one consumer group in one poll of one cluster.

A snapshot is self-describing (who produced it, when, how long the poll took,
what went wrong while polling) and versioned. ``docs/snapshot.md`` documents
every field; change both together, and bump ``SCHEMA_VERSION`` only for a
change an older reader cannot ignore (new fields with defaults do not need it).

Times are Unix seconds (float) unless a name ends in ``_ms``; offsets are
Kafka offsets (int). ``None`` means unknown, never zero.
"""

from dataclasses import dataclass

from agent.model.records import decode_versioned, from_plain, to_json_bytes

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
    # KIP-1071 streams groups: the epoch of the topology the broker holds (None before
    # the first member sent one).
    topology_epoch: int | None = None


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
    # Classic groups: warm-up replicas are among the standbys, indistinguishable;
    # KIP-1071 streams groups list them apart, in warmup_tasks.
    standby_tasks: tuple[StreamsTask, ...] = ()
    task_offset_sums: tuple[TaskOffsetSum, ...] = ()
    subscription_error_code: int | None = None
    assignment_error_code: int | None = None
    next_rebalance_ms: int | None = None  # None when none is scheduled (Long.MAX)
    client_tags: tuple[ClientTag, ...] = ()
    warmup_tasks: tuple[StreamsTask, ...] = ()


@dataclass(frozen=True, slots=True)
class SubtopologyInfo:
    """One sub-topology of a Kafka Streams application: as a KIP-1071 broker holds it
    (``origin`` "broker"), or from the application's ``Topology#describe()`` text in the
    agent's config (``origin`` "configured", classic groups)."""

    subtopology_id: str  # the task ids' first part: task "<subtopology_id>_<partition>"
    source_topics: tuple[str, ...] = ()  # user topics it reads
    repartition_source_topics: tuple[str, ...] = ()  # internal repartition topics it reads
    repartition_sink_topics: tuple[str, ...] = ()  # repartition topics it writes
    changelog_topics: tuple[str, ...] = ()
    # Added with configured topologies (defaults keep older snapshots valid):
    origin: str = "broker"  # "broker" | "configured"
    state_stores: tuple[str, ...] = ()  # store names (a broker's: from its changelog topics)
    processors: tuple[str, ...] = ()  # processor node names (configured only)


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
    # the log-end offsets the agent has seen, or dated by the broker's time index
    # where the backlog is older than that; 0 when caught up.
    lag_seconds: float | None = None
    owner_member_id: str | None = None
    # Kafka Streams commits each input partition's stream time with its offset.
    stream_time_ms: int | None = None
    leader_id: int | None = None
    # Added with broker dating (optional: older readers ignore it, older snapshots lack
    # it): True when lag_seconds is only a lower bound (the record is older than
    # anything the agent or the broker could date), not a measurement.
    lag_seconds_lower_bound: bool = False


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
    # Replicas per partition (the most any partition has); None when unknown.
    replication_factor: int | None = None


@dataclass(frozen=True, slots=True)
class BrokerLoad:
    """The partition replicas one broker hosts, over every topic of the cluster."""

    broker_id: int
    replicas: int = 0  # partition replicas assigned to it (leader or follower)
    leaders: int = 0  # partitions it leads
    # Of ``replicas``: those of internal topics of the Kafka Streams applications watched.
    streams_internal_replicas: int = 0


@dataclass(frozen=True, slots=True)
class ClusterFacts:
    broker_count: int | None = None
    # The limit a group's metadata record must fit in (KAFKA-7149).
    offsets_topic_max_message_bytes: int | None = None
    offsets_topic_partitions: int | None = None
    # From the all-topics Metadata of a central agent (refreshed every
    # metadata_interval, once per cluster); None / empty from a sidecar, which
    # never lists every topic.
    total_topics: int | None = None
    total_partitions: int | None = None
    total_replicas: int | None = None
    brokers: tuple[BrokerLoad, ...] = ()


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
class SidecarThread:
    """One stream thread, as the app's own metrics describe it."""

    thread_id: str  # "<client id>-StreamThread-<n>", the metrics' thread-id tag
    thread_index: int | None = None  # n
    # CREATED, STARTING, PARTITIONS_REVOKED, PARTITIONS_ASSIGNED, RUNNING,
    # PENDING_SHUTDOWN, DEAD; None when the app does not expose it (before 4.0).
    state: str | None = None
    # The thread's main consumer's coordinator metrics (cumulative since start).
    rebalance_total: float | None = None
    failed_rebalance_total: float | None = None
    last_rebalance_seconds_ago: float | None = None  # None: never rebalanced or unknown


@dataclass(frozen=True, slots=True)
class SidecarTask:
    """A task the app reports restore metrics for."""

    task: str  # "<subtopology>_<partition>"
    thread_id: str | None = None
    # restore-remaining-records-total: seen to overshoot and never reach 0 on real
    # apps, so it is evidence of a restore, not of its progress.
    restore_remaining_records: int | None = None
    # Cumulative records restored (restore-total, DEBUG recording level), when exposed.
    restored_records_total: float | None = None


@dataclass(frozen=True, slots=True)
class SidecarStateUpdater:
    """One state-updater thread (Kafka Streams 3.8+ default)."""

    thread_id: str  # "<client id>-StateUpdater-<n>"
    active_restoring_tasks: int | None = None
    standby_updating_tasks: int | None = None
    active_paused_tasks: int | None = None
    restore_records_rate: float | None = None  # records/s, the metric's own window


@dataclass(frozen=True, slots=True)
class CheckpointOffset:
    topic: str  # a changelog topic
    partition: int
    offset: int  # the last applied changelog record's offset (not "next offset")


@dataclass(frozen=True, slots=True)
class StateDirStore:
    """One persistent store in a task directory, as its layout on disk shows it."""

    name: str
    # key_value: a store under rocksdb/, one RocksDB. segmented: a store directory of
    # segment directories, one RocksDB per segment (window and session stores).
    kind: str
    segments: int = 0  # segment directories (segmented stores; 0 for key_value)
    size_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class StateDirTask:
    """One task directory in the app's state directory."""

    task: str
    # Missing is normal under exactly-once while the task runs (Streams deletes it).
    has_checkpoint: bool = False
    checkpoint: tuple[CheckpointOffset, ...] = ()
    size_bytes: int | None = None  # files under the task directory (RocksDB etc.)
    error: str | None = None  # the checkpoint did not parse; what was wrong
    stores: tuple[StateDirStore, ...] = ()


@dataclass(frozen=True, slots=True)
class SidecarInfo:
    """What an agent running next to one Kafka Streams instance saw inside its pod.

    Every field is None (or empty) when unknown: a metric the app does not
    expose, a state directory that is not mounted. Unknown never means zero.
    """

    # Identity: this instance's process id and the group members that are this pod.
    process_id: str | None = None
    member_ids: tuple[str, ...] = ()
    # The app's metrics endpoint.
    app_metrics_url: str | None = None
    app_metrics_up: bool = False
    app_metrics_error: str | None = None
    # CREATED, REBALANCING, RUNNING, PENDING_SHUTDOWN, NOT_RUNNING, PENDING_ERROR, ERROR.
    client_state: str | None = None
    alive_stream_threads: int | None = None
    failed_stream_threads: float | None = None  # cumulative since the app started
    expected_stream_threads: int | None = None  # configured num.stream.threads, if given
    threads: tuple[SidecarThread, ...] = ()
    tasks: tuple[SidecarTask, ...] = ()
    state_updaters: tuple[SidecarStateUpdater, ...] = ()
    # The state directory (mounted read-only).
    state_dir: str | None = None
    state_dir_readable: bool = False
    state_dir_tasks: tuple[StateDirTask, ...] = ()
    # Added with the sidecar itself (all optional, so older readers ignore them):
    # which evidence matched member_ids: process_id | client_id | instance_id | host.
    matched_by: str | None = None
    # Kafka Streams' metrics, seen earlier in this JVM, are gone: the client was
    # closed (cleanly or to ERROR), so no stream thread runs (alive_stream_threads
    # is 0). client_state is then inferred: NOT_RUNNING after a PENDING_SHUTDOWN was
    # seen, else ERROR (the metrics are removed before the final state is set).
    client_closed: bool = False
    # metrics.recording.level (4.0+): restored_records_total is counted at DEBUG only.
    recording_level: str | None = None
    state_dir_error: str | None = None  # why the state directory could not be read
    state_dir_bytes: int | None = None  # every file under it
    # The filesystem holding the state directory (statvfs of sidecar.state_dir, as the
    # pod sees it): its size, the bytes an unprivileged writer may still use (df's
    # Avail), and why it could not be read.
    state_volume_size_bytes: int | None = None
    state_volume_available_bytes: int | None = None
    state_volume_error: str | None = None
    # The app container's memory limit (not the sidecar's own: each container has its
    # own cgroup): from the configuration (Downward API limits.memory) or a cgroup
    # file. None when unknown or unlimited; memory_limit_source says where it came
    # from (and "unlimited"), memory_limit_error why it could not be read.
    memory_limit_bytes: int | None = None
    memory_limit_source: str | None = None
    memory_limit_error: str | None = None


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
    # Only from an agent in sidecar mode, on its own application's group.
    sidecar: SidecarInfo | None = None
    # KIP-1071 streams groups: the topology the broker holds (empty otherwise, and
    # while the group has none: state NotReady).
    subtopologies: tuple[SubtopologyInfo, ...] = ()

    @property
    def key(self) -> bytes:
        """The Kafka record key: one group's snapshots stay in order on one partition."""
        return f"{self.cluster}/{self.group.group_id}".encode()

    def to_json(self) -> bytes:
        return to_json_bytes(self)

    @classmethod
    def from_json(cls, data: bytes | str) -> "Snapshot":
        """Parse a snapshot; raises ``RecordError`` naming the offending field.

        A snapshot of a newer schema version raises ``NewerSchemaError`` (a
        ``RecordError``), so a reader can tell "from the future" from "broken".
        """
        return from_plain(cls, decode_versioned(data, SCHEMA_VERSION))
