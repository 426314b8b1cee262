"""One snapshot's JSON -> ``Poll``: the compact facts the rules read, checked as they are read.

The job keeps a window of these per (cluster, group, agent) in Spark's state
store, so they hold only what some rule reads, as plain tuples (``NamedTuple``:
cheap to build, compare and pickle). Parts that do not change between polls
(members, topics, the topology) are shared with the previous poll of the
window (``Poll.sharing``), so a window of a hundred polls stores each of them
once. Parts only read at the newest poll or over a short look-back are dropped
from older polls (``Poll.aged``).

Facts come straight from the decoded JSON, not through ``agent.model``'s
dataclasses (much slower to build, and replay reads millions of
partitions): every value a rule computes with is checked here, and a snapshot
that does not fit raises ``MalformedSnapshotError`` naming the field, so a bad
record is set aside before it reaches any group's state. Missing optional
fields (an older agent) read as unknown (None, empty), unknown fields (a
newer agent) are ignored, as ``docs/snapshot.md`` promises.
"""

import json
import sys
from collections.abc import Iterable
from functools import lru_cache
from operator import itemgetter
from typing import Any, NamedTuple, TypeVar

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
    names the field, as ``$.partitions[3].log_end_offset: expected an integer``)."""


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
        return _new(Poll, values)

    def aged(self, *, keep_partitions: bool) -> "Poll":
        """This poll once a newer one arrived: without the changelog ends (read at the
        newest poll only), and without partitions once past their look-back."""
        if self.changelog_ends is None and (keep_partitions or self.partitions is None):
            return self
        values = list(self)
        values[_CHANGELOG_ENDS] = None
        if not keep_partitions:
            values[_PARTITIONS] = None
        return _new(Poll, values)


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

# Records built from values already checked: ``tuple.__new__`` skips the Python frame of a
# NamedTuple's own ``__new__`` (replay builds millions).
_new = tuple.__new__
_intern = sys.intern


def decode(value: str | bytes) -> tuple[SnapshotKey, Poll]:
    """A snapshot's JSON text -> its key and facts; ``BadSnapshotError`` when it cannot be used."""
    try:
        plain = json.loads(value)
    except ValueError as e:
        raise MalformedSnapshotError(f"not JSON: {e}") from None
    except RecursionError:
        raise MalformedSnapshotError("not JSON a snapshot can be: nested too deeply") from None
    return read(plain)


def read(plain: object) -> tuple[SnapshotKey, Poll]:
    """Decoded JSON -> key and facts; ``BadSnapshotError`` when it cannot be used."""
    try:
        return _read(plain)
    except BadSnapshotError:
        raise
    except _WrongKindError as e:
        raise MalformedSnapshotError(str(e)) from None
    except (TypeError, AttributeError, KeyError, ValueError) as e:  # a kind not checked below
        raise MalformedSnapshotError(f"$: {type(e).__name__}: {e}") from None


class _WrongKindError(Exception):
    pass


def _obj(value: object, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _WrongKindError(f"{path}: expected an object, got {_kind(value)}")
    return value


def _list(value: object, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _WrongKindError(f"{path}: expected a list, got {_kind(value)}")
    return value


def _str(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise _WrongKindError(f"{path}: expected a string, got {_kind(value)}")
    return value


def _opt_str(value: object, path: str) -> str | None:
    return None if value is None else _str(value, path)


def _name(value: object, path: str) -> str:
    """A name that recurs in every poll (a topic, a member, a task): one string object for
    all of them, so a window pickles it once, not once a poll."""
    return sys.intern(_str(value, path))


def _opt_name(value: object, path: str) -> str | None:
    return None if value is None else _name(value, path)


def _int(value: object, path: str) -> int:
    if type(value) is not int:
        raise _WrongKindError(f"{path}: expected an integer, got {_kind(value)}")
    return value


def _opt_int(value: object, path: str) -> int | None:
    if value is None or type(value) is int:
        return value
    raise _WrongKindError(f"{path}: expected an integer, got {_kind(value)}")


def _num(value: object, path: str) -> float:
    if type(value) is float or type(value) is int:
        return float(value)
    raise _WrongKindError(f"{path}: expected a number, got {_kind(value)}")


def _opt_num(value: object, path: str) -> float | None:
    return None if value is None else _num(value, path)


def _bool(value: object, path: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _WrongKindError(f"{path}: expected true or false, got {_kind(value)}")
    return value


def _strs(value: object, path: str) -> tuple[str, ...]:
    return tuple(_str(v, f"{path}[{i}]") for i, v in enumerate(_list(value, path)))


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true or false"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def _read(plain: object) -> tuple[SnapshotKey, Poll]:
    s = _obj(plain, "$")
    version = s.get("schema_version")
    if type(version) is not int or version < 1:
        raise _WrongKindError(
            f"$.schema_version: expected a positive integer, got {_kind(version)}"
        )
    if version > SCHEMA_VERSION:
        raise FutureSnapshotError(
            f"$.schema_version: {version} is newer than this job's {SCHEMA_VERSION}"
        )
    cluster = _str(s.get("cluster"), "$.cluster")
    agent = _obj(s.get("agent"), "$.agent")
    poll = _obj(s.get("poll"), "$.poll")
    group = _obj(s.get("group"), "$.group")
    group_id = _str(group.get("group_id"), "$.group.group_id")
    t = _num(poll.get("started_at"), "$.poll.started_at")
    members = tuple(_member(m, i) for i, m in enumerate(_list(s.get("members"), "$.members")))
    facts = _obj(s.get("cluster_facts") or {}, "$.cluster_facts")
    sidecar = s.get("sidecar")
    topics_plain = _list(s.get("topics"), "$.topics")
    partitions = _partitions(_list(s.get("partitions"), "$.partitions"))
    lags = [p.lag for p in partitions if p.lag is not None]
    key = SnapshotKey(cluster, group_id, _str(agent.get("id"), "$.agent.id"), t)
    total_topics = _opt_int(facts.get("total_topics"), "$.cluster_facts.total_topics")
    return key, Poll(
        t=t,
        sequence=_opt_int(poll.get("sequence"), "$.poll.sequence") or 0,
        agent_mode=_opt_str(agent.get("mode"), "$.agent.mode") or "central",
        state=_str(group.get("state"), "$.group.state"),
        group_type=_opt_str(group.get("group_type"), "$.group.group_type") or "unknown",
        is_streams=_bool(group.get("is_streams"), "$.group.is_streams"),
        generation=_opt_int(group.get("generation"), "$.group.generation"),
        group_epoch=_opt_int(group.get("group_epoch"), "$.group.group_epoch"),
        rebalances=tuple(
            (
                _int(
                    _obj(r, f"$.rebalances[{i}]").get("generation"), f"$.rebalances[{i}].generation"
                ),
                _num(r.get("at"), f"$.rebalances[{i}].at"),
            )
            for i, r in enumerate(_list(s.get("rebalances"), "$.rebalances"))
        ),
        members=members,
        partitions=partitions,
        topics=tuple(_topic(x, i) for i, x in enumerate(topics_plain)),
        changelog_ends=_changelog_ends(topics_plain),
        subtopologies=tuple(
            _subtopology(x, i)
            for i, x in enumerate(_list(s.get("subtopologies"), "$.subtopologies"))
        ),
        max_message_bytes=_opt_int(
            facts.get("offsets_topic_max_message_bytes"),
            "$.cluster_facts.offsets_topic_max_message_bytes",
        ),
        cluster_totals=None
        if total_topics is None
        else ClusterTotals(
            total_topics,
            _opt_int(facts.get("total_partitions"), "$.cluster_facts.total_partitions"),
            _opt_int(facts.get("total_replicas"), "$.cluster_facts.total_replicas"),
        ),
        brokers=tuple(
            _broker(b, i)
            for i, b in enumerate(_list(facts.get("brokers"), "$.cluster_facts.brokers"))
        ),
        sidecar=None
        if sidecar is None
        else _sidecar(_obj(sidecar, "$.sidecar"), members, key.agent),
        errors=tuple(
            _str(_obj(e, f"$.errors[{i}]").get("stage"), f"$.errors[{i}].stage")
            for i, e in enumerate(_list(s.get("errors"), "$.errors"))
        ),
        lag_total=sum(lags),
        lag_partitions=len(lags),
    )


def _tp(value: object, path: str) -> TopicPartition:
    if type(value) is dict:
        topic, partition = value.get("topic"), value.get("partition")
        if type(topic) is str and type(partition) is int:
            return TopicPartition(sys.intern(topic), partition)
    p = _obj(value, path)  # what is wrong, and where
    return TopicPartition(
        _name(p.get("topic"), f"{path}.topic"), _int(p.get("partition"), f"{path}.partition")
    )


def _tasks(value: object, path: str) -> tuple[Task, ...]:
    if type(value) is list:
        fast = _tasks_fast(value)
        if fast is not None:
            return fast
    tasks = []
    for i, x in enumerate(_list(value, path)):
        t = _obj(x, f"{path}[{i}]")
        tasks.append(
            Task(
                _name(t.get("task"), f"{path}[{i}].task"),
                tuple(
                    _tp(p, f"{path}[{i}].partitions[{j}]")
                    for j, p in enumerate(_list(t.get("partitions"), f"{path}[{i}].partitions"))
                ),
            )
        )
    return tuple(tasks)


def _tasks_fast(value: list[Any]) -> tuple[Task, ...] | None:
    """The tasks of a well-formed list without building a field path per value (None:
    something does not fit; ``_tasks`` then says what, and where)."""
    tasks = []
    for x in value:
        if type(x) is not dict:
            return None
        task, partitions = x.get("task"), x.get("partitions")
        if type(task) is not str:
            return None
        refs = []
        if partitions is not None:
            if type(partitions) is not list:
                return None
            for p in partitions:  # _tps_fast, inline: one a task, mostly
                if type(p) is not dict:
                    return None
                topic, number = p.get("topic"), p.get("partition")
                if type(topic) is not str or type(number) is not int:
                    return None
                refs.append(_new(TopicPartition, (_intern(topic), number)))
        tasks.append(_new(Task, (_intern(task), tuple(refs))))
    return tuple(tasks)


def _tps_fast(value: list[Any]) -> tuple[TopicPartition, ...] | None:
    """Topic partitions of a well-formed list (None: something does not fit)."""
    refs = []
    for p in value:
        if type(p) is not dict:
            return None
        topic, number = p.get("topic"), p.get("partition")
        if type(topic) is not str or type(number) is not int:
            return None
        refs.append(_new(TopicPartition, (_intern(topic), number)))
    return tuple(refs)


def _task_ids(value: object, path: str) -> tuple[str, ...]:
    return tuple(t.task for t in _tasks(value, path))


def _member(value: object, i: int) -> Member:
    if type(value) is dict:
        fast = _member_fast(value)
        if fast is not None:
            return fast
    path = f"$.members[{i}]"
    m = _obj(value, path)
    streams = m.get("streams")
    assigned = tuple(
        _tp(p, f"{path}.assigned_partitions[{j}]")
        for j, p in enumerate(_list(m.get("assigned_partitions"), f"{path}.assigned_partitions"))
    )
    member_id = _name(m.get("member_id"), f"{path}.member_id")
    client_id = _name(m.get("client_id"), f"{path}.client_id")
    host = _opt_name(m.get("client_host"), f"{path}.client_host") or ""
    instance_id = _opt_str(m.get("group_instance_id"), f"{path}.group_instance_id")
    broker_assigned = m.get("member_epoch") is not None
    subscription_bytes = _opt_int(m.get("subscription_bytes"), f"{path}.subscription_bytes") or 0
    assignment_bytes = _opt_int(m.get("assignment_bytes"), f"{path}.assignment_bytes") or 0
    if streams is None:
        return Member(
            member_id,
            client_id,
            host,
            instance_id,
            process=None,
            thread=None,
            decoded=False,
            broker_assigned=broker_assigned,
            active=(),
            standby=(),
            warmup=(),
            offset_sums=(),
            assigned=assigned,
            next_rebalance_ms=None,
            endpoint=None,
            assignment_version=None,
            subscription_bytes=subscription_bytes,
            assignment_bytes=assignment_bytes,
        )
    sp = f"{path}.streams"
    st = _obj(streams, sp)
    return Member(
        member_id,
        client_id,
        host,
        instance_id,
        process=_opt_name(st.get("process_id"), f"{sp}.process_id") or None,
        thread=_opt_int(st.get("thread_index"), f"{sp}.thread_index"),
        decoded=True,
        broker_assigned=broker_assigned,
        active=_tasks(st.get("active_tasks"), f"{sp}.active_tasks"),
        standby=_task_ids(st.get("standby_tasks"), f"{sp}.standby_tasks"),
        warmup=_task_ids(st.get("warmup_tasks"), f"{sp}.warmup_tasks"),
        offset_sums=tuple(
            (
                _str(
                    _obj(o, f"{sp}.task_offset_sums[{j}]").get("task"),
                    f"{sp}.task_offset_sums[{j}].task",
                ),
                _int(o.get("offset_sum"), f"{sp}.task_offset_sums[{j}].offset_sum"),
            )
            for j, o in enumerate(_list(st.get("task_offset_sums"), f"{sp}.task_offset_sums"))
        ),
        assigned=assigned,
        next_rebalance_ms=_opt_int(st.get("next_rebalance_ms"), f"{sp}.next_rebalance_ms"),
        endpoint=_opt_str(st.get("endpoint"), f"{sp}.endpoint") or None,
        assignment_version=_opt_int(st.get("assignment_version"), f"{sp}.assignment_version"),
        subscription_bytes=subscription_bytes,
        assignment_bytes=assignment_bytes,
    )


def _member_fast(m: dict[str, Any]) -> Member | None:  # noqa: PLR0911, PLR0912 - every field
    """A well-formed member, as ``_member`` reads it, without building a field path per
    value (None: something does not fit; ``_member`` then says what, and where)."""
    g = m.get
    member_id, client_id, host = g("member_id"), g("client_id"), g("client_host")
    instance_id, sub, asg = g("group_instance_id"), g("subscription_bytes"), g("assignment_bytes")
    if (
        type(member_id) is not str
        or type(client_id) is not str
        or (host is not None and type(host) is not str)
        or (instance_id is not None and type(instance_id) is not str)
        or (sub is not None and type(sub) is not int)
        or (asg is not None and type(asg) is not int)
    ):
        return None
    plain = g("assigned_partitions")
    assigned: tuple[TopicPartition, ...] | None = ()
    if plain is not None:
        if type(plain) is not list:
            return None
        assigned = _tps_fast(plain)
        if assigned is None:
            return None
    head = (
        _intern(member_id),
        _intern(client_id),
        (_intern(host) if host is not None else None) or "",
        instance_id,
    )
    broker_assigned = g("member_epoch") is not None
    streams = g("streams")
    if streams is None:
        return _new(
            Member,
            (
                *head,
                None,
                None,
                False,
                broker_assigned,
                (),
                (),
                (),
                (),
                assigned,
                None,
                None,
                None,
                sub or 0,
                asg or 0,
            ),
        )
    if type(streams) is not dict:
        return None
    s = streams.get
    process, thread, endpoint = s("process_id"), s("thread_index"), s("endpoint")
    next_ms, version = s("next_rebalance_ms"), s("assignment_version")
    if (
        (process is not None and type(process) is not str)
        or (thread is not None and type(thread) is not int)
        or (endpoint is not None and type(endpoint) is not str)
        or (next_ms is not None and type(next_ms) is not int)
        or (version is not None and type(version) is not int)
    ):
        return None
    task_lists: list[tuple[Task, ...]] = []
    for name in ("active_tasks", "standby_tasks", "warmup_tasks"):
        plain = s(name)
        if plain is None or plain == []:
            task_lists.append(())
            continue
        if type(plain) is not list:
            return None
        tasks = _tasks_fast(plain)
        if tasks is None:
            return None
        task_lists.append(tasks)
    active, standby, warmup = task_lists
    sums = []
    plain = s("task_offset_sums")
    if plain is not None:
        if type(plain) is not list:
            return None
        for o in plain:
            if type(o) is not dict:
                return None
            task, offset_sum = o.get("task"), o.get("offset_sum")
            if type(task) is not str or type(offset_sum) is not int:
                return None
            sums.append((task, offset_sum))
    return _new(
        Member,
        (
            *head,
            (_intern(process) if process is not None else None) or None,
            thread,
            True,
            broker_assigned,
            active,
            tuple(t.task for t in standby),
            tuple(t.task for t in warmup),
            tuple(sums),
            assigned,
            next_ms,
            endpoint or None,
            version,
            sub or 0,
            asg or 0,
        ),
    )


_PARTITION_FIELDS = itemgetter(
    "topic", "partition", "log_end_offset", "committed_offset", "lag", "owner_member_id"
)


def _partitions(plain: list[Any]) -> tuple[Partition, ...]:
    """The rows of a well-formed list at once, every field present (a snapshot lists
    hundreds); else row by row, as ``_partition`` reads each (and says what is wrong)."""
    rows = []
    for p in plain:
        try:
            topic, number, end, committed, lag, owner = _PARTITION_FIELDS(p)
        except (KeyError, TypeError):
            break  # a field absent (an older agent: unknown), or not an object
        if (
            type(topic) is not str
            or type(number) is not int
            or (end is not None and type(end) is not int)
            or (committed is not None and type(committed) is not int)
            or (lag is not None and type(lag) is not int)
            or (owner is not None and type(owner) is not str)
        ):
            break
        owner = None if owner is None else _intern(owner)
        rows.append(_new(Partition, (_intern(topic), number, end, committed, lag, owner)))
    else:
        return tuple(rows)
    return tuple(_partition(p, i) for i, p in enumerate(plain))


def _partition(value: object, i: int) -> Partition:
    if type(value) is dict:
        g = value.get
        topic, number, end = g("topic"), g("partition"), g("log_end_offset")
        committed, lag, owner = g("committed_offset"), g("lag"), g("owner_member_id")
        if (
            type(topic) is str
            and type(number) is int
            and (end is None or type(end) is int)
            and (committed is None or type(committed) is int)
            and (lag is None or type(lag) is int)
            and (owner is None or type(owner) is str)
        ):
            return _new(
                Partition,
                (
                    _intern(topic),
                    number,
                    end,
                    committed,
                    lag,
                    None if owner is None else _intern(owner),
                ),
            )
    path = f"$.partitions[{i}]"  # what is wrong, and where
    p = _obj(value, path)
    return Partition(
        _name(p.get("topic"), f"{path}.topic"),
        _int(p.get("partition"), f"{path}.partition"),
        _opt_int(p.get("log_end_offset"), f"{path}.log_end_offset"),
        _opt_int(p.get("committed_offset"), f"{path}.committed_offset"),
        _opt_int(p.get("lag"), f"{path}.lag"),
        _opt_name(p.get("owner_member_id"), f"{path}.owner_member_id"),
    )


def _topic(value: object, i: int) -> Topic:
    path = f"$.topics[{i}]"
    x = _obj(value, path)
    return Topic(
        _name(x.get("name"), f"{path}.name"),
        _int(x.get("partitions"), f"{path}.partitions"),
        _opt_str(x.get("internal_kind"), f"{path}.internal_kind"),
        _bool(x.get("consumed"), f"{path}.consumed"),
        _opt_str(x.get("cleanup_policy"), f"{path}.cleanup_policy"),
        _opt_int(x.get("size_bytes"), f"{path}.size_bytes"),
        _opt_int(x.get("replication_factor"), f"{path}.replication_factor"),
    )


def _changelog_ends(topics: list[Any]) -> tuple[tuple[str, tuple[int | None, ...]], ...]:
    ends = []
    for i, x in enumerate(topics):
        if x.get("internal_kind") == "changelog":
            plain = x.get("log_end_offsets")
            if type(plain) is list and all(v is None or type(v) is int for v in plain):
                ends.append((x["name"], tuple(plain)))  # well-formed: no path per value
                continue
            path = f"$.topics[{i}].log_end_offsets"
            ends.append(
                (
                    x["name"],
                    tuple(
                        _opt_int(v, f"{path}[{j}]")
                        for j, v in enumerate(_list(x.get("log_end_offsets"), path))
                    ),
                )
            )
    return tuple(ends)


def _subtopology(value: object, i: int) -> Subtopology:
    path = f"$.subtopologies[{i}]"
    x = _obj(value, path)
    return Subtopology(
        _str(x.get("subtopology_id"), f"{path}.subtopology_id"),
        _opt_str(x.get("origin"), f"{path}.origin") or "broker",
        _strs(x.get("source_topics"), f"{path}.source_topics"),
        _strs(x.get("repartition_source_topics"), f"{path}.repartition_source_topics"),
        _strs(x.get("repartition_sink_topics"), f"{path}.repartition_sink_topics"),
        _strs(x.get("changelog_topics"), f"{path}.changelog_topics"),
        _strs(x.get("state_stores"), f"{path}.state_stores"),
        _strs(x.get("processors"), f"{path}.processors"),
    )


def _broker(value: object, i: int) -> BrokerLoad:
    path = f"$.cluster_facts.brokers[{i}]"
    b = _obj(value, path)
    return BrokerLoad(
        _int(b.get("broker_id"), f"{path}.broker_id"),
        _opt_int(b.get("replicas"), f"{path}.replicas") or 0,
        _opt_int(b.get("leaders"), f"{path}.leaders") or 0,
        _opt_int(b.get("streams_internal_replicas"), f"{path}.streams_internal_replicas") or 0,
    )


def _sidecar(s: dict[str, Any], members: tuple[Member, ...], agent: str) -> Sidecar:
    path = "$.sidecar"
    process = _opt_str(s.get("process_id"), f"{path}.process_id")
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
        app_up=_bool(s.get("app_metrics_up"), f"{path}.app_metrics_up"),
        client_state=_opt_str(s.get("client_state"), f"{path}.client_state"),
        client_closed=_bool(s.get("client_closed"), f"{path}.client_closed"),
        alive=_opt_int(s.get("alive_stream_threads"), f"{path}.alive_stream_threads"),
        failed=_opt_num(s.get("failed_stream_threads"), f"{path}.failed_stream_threads"),
        expected=_opt_int(s.get("expected_stream_threads"), f"{path}.expected_stream_threads"),
        members=len(own),
        held_tasks=held,
        memory_limit_bytes=_opt_int(s.get("memory_limit_bytes"), f"{path}.memory_limit_bytes"),
        memory_limit_source=_opt_str(s.get("memory_limit_source"), f"{path}.memory_limit_source"),
        state_dir_readable=_bool(s.get("state_dir_readable"), f"{path}.state_dir_readable"),
        threads=tuple(
            _sidecar_thread(x, f"{path}.threads[{i}]")
            for i, x in enumerate(_list(s.get("threads"), f"{path}.threads"))
        ),
        tasks=tuple(
            _sidecar_task(x, f"{path}.tasks[{i}]")
            for i, x in enumerate(_list(s.get("tasks"), f"{path}.tasks"))
        ),
        updaters=tuple(
            _updater(x, f"{path}.state_updaters[{i}]")
            for i, x in enumerate(_list(s.get("state_updaters"), f"{path}.state_updaters"))
        ),
        stores=tuple(_stores(_list(s.get("state_dir_tasks"), f"{path}.state_dir_tasks"))),
    )


def _sidecar_thread(value: object, path: str) -> SidecarThread:
    x = _obj(value, path)
    return SidecarThread(
        _str(x.get("thread_id"), f"{path}.thread_id"),
        _opt_int(x.get("thread_index"), f"{path}.thread_index"),
        _opt_str(x.get("state"), f"{path}.state"),
        _opt_num(x.get("rebalance_total"), f"{path}.rebalance_total"),
    )


def _sidecar_task(value: object, path: str) -> SidecarTask:
    x = _obj(value, path)
    return SidecarTask(
        _opt_str(x.get("task"), f"{path}.task"),
        _opt_str(x.get("thread_id"), f"{path}.thread_id"),
        _opt_int(x.get("restore_remaining_records"), f"{path}.restore_remaining_records"),
        _opt_num(x.get("restored_records_total"), f"{path}.restored_records_total"),
    )


def _updater(value: object, path: str) -> StateUpdater:
    x = _obj(value, path)
    return StateUpdater(
        _str(x.get("thread_id"), f"{path}.thread_id"),
        _opt_int(x.get("active_restoring_tasks"), f"{path}.active_restoring_tasks"),
        _opt_num(x.get("restore_records_rate"), f"{path}.restore_records_rate"),
    )


def _stores(tasks: Iterable[Any]) -> Iterable[Store]:
    for i, x in enumerate(tasks):
        path = f"$.sidecar.state_dir_tasks[{i}]"
        task = _str(_obj(x, path).get("task"), f"{path}.task")
        for j, st in enumerate(_list(x.get("stores"), f"{path}.stores")):
            sp = f"{path}.stores[{j}]"
            store = _obj(st, sp)
            yield Store(
                task,
                _str(store.get("name"), f"{sp}.name"),
                _str(store.get("kind"), f"{sp}.kind"),
                _opt_int(store.get("segments"), f"{sp}.segments") or 0,
                _opt_int(store.get("size_bytes"), f"{sp}.size_bytes"),
            )
