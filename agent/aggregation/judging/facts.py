"""One snapshot's JSON -> ``Poll``: the compact facts the rules read.

The snapshot is decoded into ``agent.model.snapshot``'s own records, the
contract the agent writes, checked field by field as it is read: a snapshot
that does not fit raises ``MalformedSnapshotError`` naming the field, so a bad
record is set aside before it reaches any group's state. Missing optional
fields (an older agent) read as their defaults, unknown fields (a newer agent)
are ignored, as ``docs/snapshot.md`` promises.

The job keeps a window of polls per (cluster, group, agent) in Spark's state
store, so a poll holds only what some rule reads, as plain tuples
(``NamedTuple``: cheap to build, compare and pickle). Parts that do not change
between polls (members, topics, the topology) are shared with the previous poll
of the window (``Poll.sharing``), so a window of a hundred polls stores each of
them once. Parts only read at the newest poll or over a short look-back are
dropped from older polls (``Poll.aged``).
"""

import sys
from functools import lru_cache
from typing import NamedTuple, TypeVar

import msgspec

from agent.model import snapshot as model
from agent.model.records import field_error
from agent.model.snapshot import SCHEMA_VERSION

REBALANCING_STATES = frozenset(
    ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")
)

MALFORMED = "malformed"
FUTURE_VERSION = "future_version"
QUARANTINE_REASONS = (MALFORMED, FUTURE_VERSION)


class BadSnapshotError(ValueError):
    """A snapshot the job cannot use; ``reason`` is one of ``QUARANTINE_REASONS``."""

    reason = MALFORMED


class MalformedSnapshotError(BadSnapshotError):
    """Not JSON, a required field missing, or a value of the wrong kind (the message
    names the field, as ``$.partitions[3].log_end_offset: expected `int | null`, got `str```)."""


class FutureSnapshotError(BadSnapshotError):
    """A ``schema_version`` newer than this job's: a newer agent may have changed what
    fields mean, so the record is set aside, never guessed at."""

    reason = FUTURE_VERSION


# -- the facts ---------------------------------------------------------------------------


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class Task(NamedTuple):
    """An active task a Streams member holds, with the partitions it reads."""

    task: str  # "<sub-topology>_<partition>"
    partitions: tuple[TopicPartition, ...]

    @property
    def subtopology(self) -> str:
        return _subtopology_of(self.task)


@lru_cache(maxsize=65536)
def _subtopology_of(task: str) -> str:
    """``<sub-topology>_<partition>`` -> its sub-topology (task ids recur every poll)."""
    return task.split("_", 1)[0]


class Member(NamedTuple):
    member_id: str
    client_id: str
    host: str
    instance_id: str | None
    process: str | None  # the Streams process id (None: not a decoded Streams member)
    thread: int | None  # n of "<client>-StreamThread-<n>-consumer"
    decoded: bool  # its Streams assignment is known (classic groups: only while Stable)
    # KIP-848 and KIP-1071 members: the broker assigns them and describes them in every
    # group state (a classic group's members come without metadata mid-rebalance).
    broker_assigned: bool
    active: tuple[Task, ...]
    standby: tuple[str, ...]
    warmup: tuple[str, ...]  # KIP-1071 warm-up tasks (classic groups count them as standbys)
    offset_sums: tuple[tuple[str, int], ...]  # (task, sum) as reported at the last join
    assigned: tuple[TopicPartition, ...]  # the consumer assignment (plain consumers)
    next_rebalance_ms: int | None
    endpoint: str | None  # application.server
    assignment_version: int | None
    subscription_bytes: int
    assignment_bytes: int

    @property
    def identity(self) -> str:
        """Who the member is across rebalances: a Streams thread (process, thread index),
        else the client id (plain consumers, undecoded members)."""
        if self.process is not None and self.thread is not None:
            return f"{self.process}:{self.thread}"
        return self.client_id

    @property
    def active_count(self) -> int | None:
        """Active tasks; None when undecoded (an unknown assignment is not an empty one)."""
        return len(self.active) if self.decoded else None

    @property
    def replicas(self) -> tuple[str, ...]:
        """Tasks it keeps warm but does not process: standbys and warm-ups."""
        return self.standby + self.warmup


class Partition(NamedTuple):
    """A partition the group consumes (or has committed offsets for)."""

    topic: str
    partition: int
    log_end: int | None
    committed: int | None
    lag: int | None
    owner: str | None  # member id


class StoredPartitions(tuple[Partition, ...]):
    """A poll's partitions read back from the state store, with the columns they were
    stored as (topics, numbers, log-end offsets, committed offsets, lags and owners,
    each a tuple): ``rules.columns`` builds its arrays from those rather than from the
    rows, and keeps them here (``built``). Equal to the plain tuple of the same
    partitions."""

    columns: tuple[tuple[object, ...], ...]
    built: object


class Topic(NamedTuple):
    name: str
    partitions: int
    internal_kind: str | None
    consumed: bool
    cleanup_policy: str | None
    size_bytes: int | None
    replication_factor: int | None


class Subtopology(NamedTuple):
    id: str
    origin: str  # "broker" (KIP-1071) | "configured" (Topology#describe() in the config)
    source_topics: tuple[str, ...]
    repartition_source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...]
    changelog_topics: tuple[str, ...]
    stores: tuple[str, ...]
    processors: tuple[str, ...]

    @property
    def reads(self) -> tuple[str, ...]:
        return self.source_topics + self.repartition_source_topics


class BrokerLoad(NamedTuple):
    broker_id: int
    replicas: int
    leaders: int
    streams_internal_replicas: int


class ClusterTotals(NamedTuple):
    """A central agent's all-topics view of the cluster."""

    topics: int
    partitions: int | None
    replicas: int | None


class SidecarThread(NamedTuple):
    thread_id: str
    thread_index: int | None
    state: str | None
    rebalance_total: float | None


class SidecarTask(NamedTuple):
    task: str | None
    thread_id: str | None
    remaining: int | None
    restored_total: float | None


class StateUpdater(NamedTuple):
    thread_id: str
    active_restoring: int | None
    restore_rate: float | None


class Store(NamedTuple):
    """A persistent store in one task directory, as its sidecar read it."""

    task: str
    name: str
    kind: str
    segments: int
    size_bytes: int | None


class Sidecar(NamedTuple):
    """What the agent next to one instance saw inside its pod."""

    agent: str  # that agent's id (evidence names it)
    process: str | None
    app_up: bool
    client_state: str | None
    client_closed: bool
    alive: int | None
    failed: float | None
    expected: int | None
    members: int  # group members of this process
    # Tasks this instance holds (active, standby, warm-up) over its decoded members;
    # None when none decoded (mid-rebalance: not known, not none).
    held_tasks: tuple[str, ...] | None
    memory_limit_bytes: int | None
    memory_limit_source: str | None
    state_dir_readable: bool
    threads: tuple[SidecarThread, ...]
    tasks: tuple[SidecarTask, ...]
    updaters: tuple[StateUpdater, ...]
    stores: tuple[Store, ...]


class Poll(NamedTuple):
    """One agent's view of one group at one poll: everything a rule reads of it."""

    t: float  # the poll's start (event time, Unix seconds)
    sequence: int
    agent_mode: str
    state: str
    group_type: str
    is_streams: bool
    generation: int | None
    group_epoch: int | None
    rebalances: tuple[tuple[int, float], ...]  # exact (generation, at) since the last poll
    members: tuple[Member, ...]
    # None once aged out of the partitions' look-back (``aged``).
    partitions: tuple[Partition, ...] | None
    topics: tuple[Topic, ...]
    # Per changelog topic, its partitions' log-end offsets (index = partition); read at
    # the newest poll only, so None in older ones.
    changelog_ends: tuple[tuple[str, tuple[int | None, ...]], ...] | None
    subtopologies: tuple[Subtopology, ...]
    max_message_bytes: int | None  # __consumer_offsets' limit for the group's record
    cluster_totals: ClusterTotals | None
    brokers: tuple[BrokerLoad, ...]
    sidecar: Sidecar | None
    errors: tuple[str, ...]  # poll stages that failed
    # Over the partitions (kept after they age out): lag summed, and partitions with a lag.
    lag_total: int
    lag_partitions: int

    # -- derived, light: what rules read over the whole look-back ----------------------

    @property
    def stable(self) -> bool:
        return self.state == "Stable"

    @property
    def rebalancing(self) -> bool:
        return self.state in REBALANCING_STATES

    @property
    def member_count(self) -> int:
        return len(self.members)

    @property
    def decoded_members(self) -> int:
        return sum(1 for m in self.members if m.decoded)

    @property
    def member_ids(self) -> tuple[str, ...]:
        return tuple(sorted(m.member_id for m in self.members))

    @property
    def processes(self) -> tuple[str, ...]:
        return tuple(sorted({m.process for m in self.members if m.process is not None}))

    @property
    def active_tasks(self) -> frozenset[str]:
        return frozenset(t.task for m in self.members for t in m.active)

    @property
    def subtopology_count(self) -> int:
        """Sub-topologies with an active task (a task id is ``<sub-topology>_<n>``)."""
        return len({t.split("_", 1)[0] for t in self.active_tasks})

    @property
    def assignment(
        self,
    ) -> tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...]:
        """Who holds what: what changes when a rebalance happened between two polls."""
        return tuple(
            sorted(
                (
                    m.member_id,
                    tuple(f"{p.topic}-{p.partition}" for p in m.assigned),
                    tuple(t.task for t in m.active),
                    m.standby,
                )
                for m in self.members
            )
        )

    @property
    def next_rebalance_scheduled(self) -> bool:
        return any(m.next_rebalance_ms is not None for m in self.members)

    @property
    def metadata_bytes(self) -> int:
        """The group's metadata record as the coordinator stores it: every member's
        subscription and assignment."""
        return sum(m.subscription_bytes + m.assignment_bytes for m in self.members)

    @property
    def all_topics_known(self) -> bool:
        """A central agent's all-topics view: every internal topic listed, brokers counted."""
        return self.cluster_totals is not None

    def sharing(self, previous: "Poll | None") -> "Poll":
        """This poll with the parts equal to ``previous``'s replaced by ``previous``'s
        own objects: the state store then holds them once (pickle keeps one copy of an
        object referenced twice)."""
        if previous is None:
            return self
        values = list(self)  # _replace, without its Python frames (one a poll)
        for i in _SHARED_FIELDS:
            values[i] = _same(values[i], previous[i])
        # Parts that changed keep their records that did not, one by one: in a group
        # that rebalances again and again one member rejoins under a new id while the
        # others stay as they were; of its topics one grows (its changelog), the others
        # stay. Those are then one object each in the window: stored, converted and
        # pickled once, not at every poll (without this, a rebalance loop's window cost
        # many times a steady one's).
        if values[_MEMBERS] is not previous.members:
            values[_MEMBERS] = _same_records(self.members, previous.members)
        if values[_TOPICS] is not previous.topics:
            values[_TOPICS] = _same_records(self.topics, previous.topics)
        return Poll._make(values)

    def aged(self, *, keep_partitions: bool) -> "Poll":
        """This poll once a newer one arrived: without the changelog ends (read at the
        newest poll only), and without partitions once past their look-back."""
        if self.changelog_ends is None and (keep_partitions or self.partitions is None):
            return self
        values = list(self)
        values[_CHANGELOG_ENDS] = None
        if not keep_partitions:
            values[_PARTITIONS] = None
        return Poll._make(values)


_T = TypeVar("_T")

# Places in a Poll: those shared with the poll before (``Poll.sharing``), those aged out.
_SHARED_FIELDS = tuple(
    Poll._fields.index(f) for f in ("members", "topics", "subtopologies", "brokers", "sidecar")
)
_CHANGELOG_ENDS, _PARTITIONS, _MEMBERS, _TOPICS = (
    Poll._fields.index("changelog_ends"),
    Poll._fields.index("partitions"),
    Poll._fields.index("members"),
    Poll._fields.index("topics"),
)


def _same(new: _T, old: _T) -> _T:
    return old if new == old else new


def _same_records(new: tuple[_T, ...], old: tuple[_T, ...]) -> tuple[_T, ...]:
    """``new`` with each record equal to one of ``old`` replaced by that one."""
    if not new or not old:
        return new
    known = {r: r for r in old}
    return tuple([known.get(r, r) for r in new])


class SnapshotKey(NamedTuple):
    cluster: str
    group: str
    agent: str
    t: float


# -- reading -----------------------------------------------------------------------------

# The whole snapshot, typed and checked by the model's own declaration (msgspec, in C).
_SNAPSHOT = msgspec.json.Decoder(model.Snapshot)
_PLAIN = msgspec.json.Decoder()
_intern = sys.intern


def decode(value: str | bytes) -> tuple[SnapshotKey, Poll]:
    """A snapshot's JSON text -> its key and facts; ``BadSnapshotError`` when it cannot be used."""
    try:
        snapshot = _SNAPSHOT.decode(value)
    except (msgspec.DecodeError, RecursionError) as e:
        raise _bad(value, e) from None
    if snapshot.schema_version > SCHEMA_VERSION:
        raise _newer(snapshot.schema_version)
    if snapshot.schema_version < 1:
        raise MalformedSnapshotError(
            f"$.schema_version: expected a positive integer, got {snapshot.schema_version}"
        )
    return facts_of(snapshot)


def _bad(value: str | bytes, error: Exception) -> BadSnapshotError:
    """Why a snapshot did not decode: from a newer agent (its fields may mean something
    else now), or malformed, naming the field."""
    if isinstance(error, RecursionError):
        return MalformedSnapshotError("not JSON a snapshot can be: nested too deeply")
    if not isinstance(error, msgspec.ValidationError):
        return MalformedSnapshotError(f"not JSON: {error}")
    try:
        plain = _PLAIN.decode(value)
    except (msgspec.DecodeError, RecursionError):
        plain = None
    version = plain.get("schema_version") if isinstance(plain, dict) else None
    if type(version) is int and version > SCHEMA_VERSION:
        return _newer(version)
    return MalformedSnapshotError(field_error(error))


def _newer(version: int) -> FutureSnapshotError:
    return FutureSnapshotError(
        f"$.schema_version: {version} is newer than this job's {SCHEMA_VERSION}"
    )


def facts_of(snapshot: model.Snapshot) -> tuple[SnapshotKey, Poll]:
    """A snapshot -> its key and the facts the rules read of it."""
    group, facts, sidecar = snapshot.group, snapshot.cluster_facts, snapshot.sidecar
    members = tuple(map(_member, snapshot.members))
    partitions = tuple(map(_partition, snapshot.partitions))
    lags = [p.lag for p in partitions if p.lag is not None]
    t = snapshot.poll.started_at
    key = SnapshotKey(snapshot.cluster, group.group_id, snapshot.agent.id, t)
    return key, Poll(
        t=t,
        sequence=snapshot.poll.sequence,
        agent_mode=snapshot.agent.mode,
        state=group.state,
        group_type=group.group_type,
        is_streams=group.is_streams,
        generation=group.generation,
        group_epoch=group.group_epoch,
        rebalances=tuple((r.generation, r.at) for r in snapshot.rebalances),
        members=members,
        partitions=partitions,
        topics=tuple(map(_topic, snapshot.topics)),
        changelog_ends=tuple(
            (_intern(x.name), x.log_end_offsets)
            for x in snapshot.topics
            if x.internal_kind == "changelog"
        ),
        subtopologies=tuple(map(_subtopology, snapshot.subtopologies)),
        max_message_bytes=facts.offsets_topic_max_message_bytes,
        cluster_totals=None
        if facts.total_topics is None
        else ClusterTotals(facts.total_topics, facts.total_partitions, facts.total_replicas),
        brokers=tuple(
            BrokerLoad(b.broker_id, b.replicas, b.leaders, b.streams_internal_replicas)
            for b in facts.brokers
        ),
        sidecar=None if sidecar is None else _sidecar(sidecar, members, key.agent),
        errors=tuple(e.stage for e in snapshot.errors),
        lag_total=sum(lags),
        lag_partitions=len(lags),
    )


# Names recur in every poll (topics, members, tasks): one string object for all of them,
# so a window pickles each once, not once a poll.


def _tp(ref: model.TopicPartitionRef) -> TopicPartition:
    return TopicPartition(_intern(ref.topic), ref.partition)


def _task(task: model.StreamsTask) -> Task:
    return Task(_intern(task.task), tuple(map(_tp, task.partitions)))


def _member(m: model.MemberInfo) -> Member:
    st = m.streams
    return Member(
        member_id=_intern(m.member_id),
        client_id=_intern(m.client_id),
        host=_intern(m.client_host),
        instance_id=m.group_instance_id,
        process=_intern(st.process_id) or None if st is not None else None,
        thread=st.thread_index if st is not None else None,
        decoded=st is not None,
        broker_assigned=m.member_epoch is not None,
        active=tuple(map(_task, st.active_tasks)) if st is not None else (),
        standby=tuple(_intern(t.task) for t in st.standby_tasks) if st is not None else (),
        warmup=tuple(_intern(t.task) for t in st.warmup_tasks) if st is not None else (),
        offset_sums=tuple((o.task, o.offset_sum) for o in st.task_offset_sums)
        if st is not None
        else (),
        assigned=tuple(map(_tp, m.assigned_partitions)),
        next_rebalance_ms=st.next_rebalance_ms if st is not None else None,
        endpoint=st.endpoint or None if st is not None else None,
        assignment_version=st.assignment_version if st is not None else None,
        subscription_bytes=m.subscription_bytes,
        assignment_bytes=m.assignment_bytes,
    )


def _partition(p: model.PartitionInfo) -> Partition:
    owner = p.owner_member_id
    return Partition(
        _intern(p.topic),
        p.partition,
        p.log_end_offset,
        p.committed_offset,
        p.lag,
        None if owner is None else _intern(owner),
    )


def _topic(x: model.TopicInfo) -> Topic:
    return Topic(
        _intern(x.name),
        x.partitions,
        x.internal_kind,
        x.consumed,
        x.cleanup_policy,
        x.size_bytes,
        x.replication_factor,
    )


def _subtopology(x: model.SubtopologyInfo) -> Subtopology:
    return Subtopology(
        x.subtopology_id,
        x.origin,
        x.source_topics,
        x.repartition_source_topics,
        x.repartition_sink_topics,
        x.changelog_topics,
        x.state_stores,
        x.processors,
    )


def _sidecar(s: model.SidecarInfo, members: tuple[Member, ...], agent: str) -> Sidecar:
    process = s.process_id
    own = [m for m in members if process is not None and m.process == process]
    decoded = [m for m in own if m.decoded]
    held: tuple[str, ...] | None = None
    if decoded:
        held = tuple(
            dict.fromkeys(
                task
                for m in decoded
                for task in (*(t.task for t in m.active), *m.standby, *m.warmup)
            )
        )
    return Sidecar(
        agent=agent,
        process=process,
        app_up=s.app_metrics_up,
        client_state=s.client_state,
        client_closed=s.client_closed,
        alive=s.alive_stream_threads,
        failed=s.failed_stream_threads,
        expected=s.expected_stream_threads,
        members=len(own),
        held_tasks=held,
        memory_limit_bytes=s.memory_limit_bytes,
        memory_limit_source=s.memory_limit_source,
        state_dir_readable=s.state_dir_readable,
        threads=tuple(
            SidecarThread(x.thread_id, x.thread_index, x.state, x.rebalance_total)
            for x in s.threads
        ),
        tasks=tuple(
            SidecarTask(x.task, x.thread_id, x.restore_remaining_records, x.restored_records_total)
            for x in s.tasks
        ),
        updaters=tuple(
            StateUpdater(x.thread_id, x.active_restoring_tasks, x.restore_records_rate)
            for x in s.state_updaters
        ),
        stores=tuple(
            Store(task.task, store.name, store.kind, store.segments, store.size_bytes)
            for task in s.state_dir_tasks
            for store in task.stores
        ),
    )
