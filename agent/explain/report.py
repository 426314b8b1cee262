"""What ``ksmon explain`` tells a person on call about one group, built from two snapshots.

Pure: two polls of the same group a few seconds apart (rates need two points)
and, when the aggregation job runs, its findings. The report is a tree of
plain dataclasses, so ``--json`` is ``to_plain(report)`` and the text view is
a rendering of the same tree.

Rates are log-end-offset growth between the two polls; load is the sum of the
rates of the input partitions of the active tasks an instance or thread holds
(the definitions of ``docs/detectors.md``).

Generations and rebalances come from the group's records in ``__consumer_offsets``
(``agent.explain.history``): a poll of an Empty group shows neither its members nor
its generation, and a looping Kafka Streams app is Empty between its rebalances.
Whatever cannot be known is said, with the reason, rather than left empty.
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.explain.balance import balance
from agent.explain.history import OFFSETS_TOPIC, GroupHistory
from agent.model import MemberInfo, PartitionInfo, Snapshot, StreamsMemberInfo
from agent.streams.internal_topics import changelog_store_name
from agent.streams.topology import TopologyDescription


@dataclass(frozen=True, slots=True)
class PartitionLine:
    topic: str
    partition: int
    records_per_second: float | None
    lag: int | None
    lag_seconds: float | None
    committed_offset: int | None
    log_end_offset: int | None
    # lag_seconds is only a lower bound (the record is older than anything datable).
    lag_seconds_lower_bound: bool = False
    # No records arrived during the sample (its rate is 0).
    idle: bool = False
    # Why lag is None; None when the lag is known.
    lag_unknown: str | None = None


@dataclass(frozen=True, slots=True)
class TaskLine:
    task: str
    kind: str  # active | standby | warmup (KIP-1071 groups list warm-up replicas apart)
    partitions: tuple[PartitionLine, ...] = ()
    records_per_second: float | None = None  # active tasks: sum over their partitions
    # The member's reported changelog offset sum: -2 running active, >= 0 local state.
    offset_sum: int | None = None


@dataclass(frozen=True, slots=True)
class ThreadLine:
    thread: int | None
    member_id: str
    client_id: str
    tasks: tuple[TaskLine, ...] = ()
    load_records_per_second: float = 0.0


@dataclass(frozen=True, slots=True)
class InstanceLine:
    process_id: str
    host: str
    endpoint: str | None
    threads: tuple[ThreadLine, ...] = ()
    load_records_per_second: float = 0.0
    load_share: float | None = None  # of the group's load, 0..1


@dataclass(frozen=True, slots=True)
class InternalTopicLine:
    name: str
    kind: str
    partitions: int
    cleanup_policy: str | None
    size_bytes: int | None


@dataclass(frozen=True, slots=True)
class RebalanceLine:
    """A generation as the coordinator stored it: when a rebalance ended."""

    generation: int
    at: float
    member_count: int
    protocol: str | None = None  # the assignor chosen: "stream" for Kafka Streams; None if Empty
    instances: int | None = None  # Kafka Streams process ids among the members, when known
    during_sample: bool = False  # stored between the sample's two polls


@dataclass(frozen=True, slots=True)
class MembersSeenLine:
    """The group's most recent members, shown when it has none at this instant."""

    generation: int | None
    at: float
    members: int
    instances: int  # Kafka Streams process ids among them (0: none decoded)
    source: str  # where they were seen


@dataclass(frozen=True, slots=True)
class SubtopologyLine:
    """One sub-topology: what it reads and writes, its stores, and its tasks now."""

    subtopology: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]  # topics it writes (from a broker: repartition topics only)
    stores: tuple[str, ...]
    processors: tuple[str, ...] = ()  # known from a describe() text only
    active_tasks: int = 0  # held by the group's members at the second poll
    is_global: bool = False  # a global store's: no tasks


@dataclass(frozen=True, slots=True)
class MoveLine:
    task: str
    records_per_second: float
    from_instance: str
    from_thread: int | None
    to_instance: str
    to_thread: int | None
    promotes_standby: bool  # the target instance holds a standby: no restore


@dataclass(frozen=True, slots=True)
class AdviceLine:
    """The assignment that balances load (records/s) rather than task count."""

    before_instance_max: float
    after_instance_max: float
    before_thread_max: float
    after_thread_max: float
    moves: tuple[MoveLine, ...]
    exact: bool  # False: the best found, not proven optimal (a large group)


# Advice is shown when it cuts the busiest instance's load by at least this share: below
# it, moving tasks (and restoring their state) costs more than it brings.
ADVICE_MIN_GAIN = 0.10


@dataclass(frozen=True, slots=True)
class FindingLine:
    kind: str
    severity: str
    subject: str  # "instance 6f1c2a8e thread 2", "task 0_3", "group"
    since: float | None
    explanation: str
    evidence: str = ""  # the detector's numbers, as compact JSON text
    # A Kafka Streams stream thread's client id the evidence names: the group is a Kafka
    # Streams app even when no poll shows a member (explain's headline says so).
    stream_thread_client: str | None = None


@dataclass(frozen=True, slots=True)
class GroupReport:
    cluster: str
    group: str
    state: str
    group_type: str
    is_streams: bool
    generation: int | None
    sampled_seconds: float
    members: int
    instances: tuple[InstanceLine, ...] = ()
    # Members without decodable Streams data, and every member of non-Streams groups.
    other_members: tuple[str, ...] = ()
    partitions: tuple[PartitionLine, ...] = ()
    internal_topics: tuple[InternalTopicLine, ...] = ()
    rebalances: tuple[RebalanceLine, ...] = ()
    # None: the job could not be asked (not running); () : it runs and found nothing.
    findings: tuple[FindingLine, ...] | None = None
    findings_source: str | None = None  # where the findings came from, or why none
    problems: tuple[str, ...] = field(default_factory=tuple)  # poll errors, decode errors
    topology: tuple[SubtopologyLine, ...] = ()
    # "broker" (a KIP-1071 group's own) or "config" (a configured describe() text).
    topology_source: str | None = None
    advice: AdviceLine | None = None
    # How the group is known to be a Kafka Streams application when this poll cannot
    # tell (no members, no Streams commits): its recent members, or the job's findings.
    streams_evidence: str | None = None
    # One line on the group's condition when it is not simply running (a loop, a
    # rebalance, no members at this instant); None when it is.
    condition: str | None = None
    last_members: MembersSeenLine | None = None  # when it has no members at this instant
    # Where the generation and the rebalances come from and what they cover, or why
    # they are unknown or incomplete.
    rebalances_note: str = ""
    sample_changes: tuple[str, ...] = ()  # what changed between the sample's two polls


def partition_rates(first: Snapshot, second: Snapshot) -> dict[tuple[str, int], float]:
    """Records/s per partition between two polls; partitions seen in only one are left out."""
    elapsed = second.poll.started_at - first.poll.started_at
    if elapsed <= 0:
        return {}
    before = {(p.topic, p.partition): p.log_end_offset for p in first.partitions}
    rates = {}
    for p in second.partitions:
        start = before.get((p.topic, p.partition))
        if start is not None and p.log_end_offset is not None and p.log_end_offset >= start:
            rates[(p.topic, p.partition)] = (p.log_end_offset - start) / elapsed
    return rates


def build_report(
    first: Snapshot,
    second: Snapshot,
    findings: Sequence[FindingLine] | None = None,
    findings_source: str | None = None,
    topology: TopologyDescription | None = None,
    *,
    history: GroupHistory | None = None,
) -> GroupReport:
    """The report on ``second``'s group; ``first`` is the earlier poll used for rates;
    ``topology``: the application's configured describe() text, parsed; ``history``:
    the group's recent generations from __consumer_offsets (None: not read)."""
    rates = partition_rates(first, second)
    partitions = {
        (p.topic, p.partition): _partition_line(p, rates.get((p.topic, p.partition)))
        for p in second.partitions
    }
    instances = _instances(second.members, partitions)
    group_load = sum(i.load_records_per_second for i in instances)
    if group_load > 0:
        instances = [
            _with_share(instance, instance.load_records_per_second / group_load)
            for instance in instances
        ]
    others = tuple(
        f"{m.member_id} ({m.client_id}, {m.client_host})"
        for m in second.members
        if m.streams is None or not m.streams.process_id
    )
    problems = [f"{e.stage}: {e.error}: {e.message}" for e in second.errors]
    problems += [
        f"member {m.member_id}: {d.what} did not decode: {d.reason}"
        for m in second.members
        for d in m.decode_errors
    ]
    rebalances = _rebalances(first, second, history)
    last_members = _last_members(first, second, history)
    streams_evidence = _streams_evidence(first, second, history, findings)
    is_streams = second.group.is_streams or streams_evidence is not None
    return GroupReport(
        cluster=second.cluster,
        group=second.group.group_id,
        state=second.group.state,
        group_type=second.group.group_type,
        is_streams=is_streams,
        generation=_generation(second, history),
        sampled_seconds=second.poll.started_at - first.poll.started_at,
        members=len(second.members),
        instances=tuple(sorted(instances, key=lambda i: -i.load_records_per_second)),
        other_members=others,
        partitions=tuple(partitions[k] for k in sorted(partitions)),
        internal_topics=tuple(
            InternalTopicLine(t.name, t.internal_kind, t.partitions, t.cleanup_policy, t.size_bytes)
            for t in second.topics
            if t.internal_kind is not None
        ),
        rebalances=rebalances,
        findings=None if findings is None else tuple(findings),
        findings_source=findings_source,
        problems=tuple(problems),
        topology=_topology(second, topology),
        advice=_advice(instances),
        topology_source=(
            "config" if topology is not None else "broker" if second.subtopologies else None
        ),
        streams_evidence=streams_evidence,
        condition=_condition(second, is_streams, rebalances, findings),
        last_members=last_members,
        rebalances_note=_rebalances_note(second, history, rebalances),
        sample_changes=_sample_changes(first, second),
    )


# Generations within the look-back that make a group not Stable now "rebalancing
# repeatedly" (the rebalance_loop rule's default loop_events). explain states the
# count; telling a loop from restarts and scaling is the job's (its finding).
CHURN_GENERATIONS = 4
REBALANCING_STATES = frozenset(
    {"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"}
)
# Finding kinds only Kafka Streams applications get: one open says what the group is.
STREAMS_ONLY_KINDS = frozenset(
    {
        "stream_threads_dead",
        "restore_stalled",
        "threads_fewer_than_tasks",
        "idle_members",
        "internal_topic_budget",
        "copartition_mismatch",
        "state_store_footprint",
    }
)


def _generation(second: Snapshot, history: GroupHistory | None) -> int | None:
    """The poll's (an agent tailing __consumer_offsets), else the newest stored one read
    to the partition's end, else a KIP-848/KIP-1071 group's epoch."""
    if second.group.generation is not None:
        return second.group.generation
    if history is not None and history.generations and history.complete:
        return history.generations[-1].generation
    return second.group.group_epoch


def _rebalances(
    first: Snapshot, second: Snapshot, history: GroupHistory | None
) -> tuple[RebalanceLine, ...]:
    """One line per generation, oldest first: the history read and the events the
    snapshots carry (an agent's tail), the history's where both know one."""
    started, ended = first.poll.started_at, second.poll.started_at
    lines: dict[int, RebalanceLine] = {}
    for event in (*first.rebalances, *second.rebalances):
        lines[event.generation] = RebalanceLine(
            event.generation,
            event.at,
            event.member_count,
            protocol=event.protocol,
            during_sample=started <= event.at <= ended,
        )
    for seen in history.generations if history is not None else ():
        lines[seen.generation] = RebalanceLine(
            seen.generation,
            seen.at,
            seen.members,
            protocol=seen.protocol,
            instances=len(seen.streams_processes) if seen.streams_processes else None,
            during_sample=started <= seen.at <= ended,
        )
    return tuple(sorted(lines.values(), key=lambda r: (r.at, r.generation)))


def _last_members(
    first: Snapshot, second: Snapshot, history: GroupHistory | None
) -> MembersSeenLine | None:
    """Who was in the group last, when nobody is at this instant."""
    if second.members:
        return None
    seen: list[MembersSeenLine] = [
        MembersSeenLine(
            g.generation,
            g.at,
            g.members,
            len(g.streams_processes),
            f"{OFFSETS_TOPIC}, the generation's record",
        )
        for g in (history.generations if history is not None else ())
        if g.members
    ]
    if first.members:
        processes = {m.streams.process_id for m in first.members if m.streams is not None}
        seen.append(
            MembersSeenLine(
                first.group.generation,
                first.poll.started_at,
                len(first.members),
                len(processes - {""}),
                "the sample's first poll",
            )
        )
    return max(seen, key=lambda m: m.at, default=None)


def _streams_evidence(
    first: Snapshot,
    second: Snapshot,
    history: GroupHistory | None,
    findings: Sequence[FindingLine] | None,
) -> str | None:
    """Why the group is a Kafka Streams application although this poll does not show
    it (an Empty group that never committed shows neither members nor Streams commits)."""
    if second.group.is_streams:
        return None  # the poll itself shows it: no need to argue
    if first.group.is_streams:
        return "the sample's first poll saw it as one (Kafka Streams members or commits)"
    streams_generations = [
        g for g in (history.generations if history is not None else ()) if g.is_streams
    ]
    if streams_generations:
        newest = streams_generations[-1]
        return (
            f"its members at generation {newest.generation} were Kafka Streams stream threads "
            f"({newest.stream_threads} of {newest.members}, assignor {newest.protocol or '-'}; "
            f"from {OFFSETS_TOPIC})"
        )
    for finding in findings or ():
        if finding.kind in STREAMS_ONLY_KINDS:
            return f"the aggregation job's open {finding.kind} finding (Kafka Streams apps only)"
        if finding.stream_thread_client is not None:
            return (
                f"the aggregation job's open {finding.kind} finding names its stream thread "
                f"{finding.stream_thread_client}"
            )
    return None


def _condition(
    second: Snapshot,
    is_streams: bool,
    rebalances: Sequence[RebalanceLine],
    findings: Sequence[FindingLine] | None,
) -> str | None:
    """One line for a group that is not simply running; None for one that is."""
    kinds = {f.kind for f in findings or ()}
    what = "Kafka Streams app" if is_streams else "consumer group"
    state = second.group.state
    churn = _churn(rebalances)
    if not second.members:
        now = "no members at this instant"
    elif state in REBALANCING_STATES:
        now = f"{state} at this instant"
    else:
        count = len(second.members)
        now = f"{state} at this instant, {count} member{'s' if count != 1 else ''}"
    many = len(rebalances) >= CHURN_GENERATIONS
    if "rebalance_loop" in kinds:
        doing = "in a rebalance loop (the aggregation job's rebalance_loop finding)"
    elif many and (state in REBALANCING_STATES or not second.members):
        doing = "rebalancing repeatedly"
    elif state in REBALANCING_STATES:
        doing = "rebalancing"
    elif not second.members:
        doing = "not running"
    elif many:
        # Stable now, but a loop is Stable between its rebalances too: the facts, no verdict.
        doing = "rebalanced often"
    else:
        return None
    return f"{what}, {doing}" + (f": {churn}" if churn else "") + f"; {now}"


def _churn(rebalances: Sequence[RebalanceLine]) -> str | None:
    """ "13 generations in 7 min": the generations stored and the time they spanned."""
    if len(rebalances) < 2:  # noqa: PLR2004 - one generation spans no time
        return None
    span = rebalances[-1].at - rebalances[0].at
    return f"{len(rebalances)} generations in {duration(span)}"


def duration(seconds: float) -> str:
    """A span for people: "45 s", "7 min", "1.5 h"."""
    if seconds < _SECONDS_SHOWN_UP_TO:
        return f"{seconds:.0f} s"
    if seconds < _MINUTES_SHOWN_UP_TO * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


_SECONDS_SHOWN_UP_TO = 90  # "75 s" reads better than "1 min"; "2 min" better than "120 s"
_MINUTES_SHOWN_UP_TO = 90


def _rebalances_note(
    second: Snapshot, history: GroupHistory | None, rebalances: Sequence[RebalanceLine]
) -> str:
    """Where the generation and rebalances come from, or why they are unknown."""
    if history is None:
        if rebalances:
            return f"from the agent's {OFFSETS_TOPIC} reader"
        return f"unknown: {OFFSETS_TOPIC}, where the coordinator stores them, was not read"
    if history.problem is not None:
        epochs = second.group
        if epochs.group_epoch is not None:
            return (
                f"{history.problem} (group epoch {epochs.group_epoch}, assignment epoch "
                f"{epochs.assignment_epoch if epochs.assignment_epoch is not None else '-'})"
            )
        return history.problem
    window = duration((history.until or 0.0) - (history.since or 0.0))
    where = f"{OFFSETS_TOPIC} partition {history.partition}"
    if history.generations:
        note = f"the generations stored in the last {window}, from {where}"
    else:
        note = f"none stored in the last {window}: {where} holds no record of the group since"
        if second.group.generation is None:
            note += "; the generation is stored only when it changes, so it is unknown"
    if not history.complete:
        note += (
            "; the read stopped at its time budget before the partition's end: "
            "later generations are missing and the generation is unknown"
        )
    if history.deleted_at is not None:
        note += "; the group was deleted within the window (a tombstone)"
    return note


def _sample_changes(first: Snapshot, second: Snapshot) -> tuple[str, ...]:
    """What the sample's two polls saw change: a rebalance between them, or one under way."""
    changes = []
    a, b = first.group, second.group
    if a.state != b.state:
        changes.append(f"state {a.state} -> {b.state}")
    if a.generation is not None and b.generation is not None and a.generation != b.generation:
        changes.append(f"generation {a.generation} -> {b.generation}")
    if a.group_epoch is not None and b.group_epoch is not None and a.group_epoch != b.group_epoch:
        changes.append(f"group epoch {a.group_epoch} -> {b.group_epoch}")
    before = {m.member_id for m in first.members}
    after = {m.member_id for m in second.members}
    if before != after:
        changes.append(f"member ids: {len(before - after)} left, {len(after - before)} joined")
    return tuple(changes)


def _advice(instances: Sequence[InstanceLine]) -> AdviceLine | None:
    """Where the active tasks would go to balance load; None when every task's rate is
    not known yet, or when balancing would not cut the busiest instance's load enough."""
    threads = {t.member_id: (i.process_id, t) for i in instances for t in i.threads}
    active = [
        (m, task) for m, (_, t) in threads.items() for task in t.tasks if task.kind == "active"
    ]
    if not active or any(task.records_per_second is None for _, task in active):
        return None
    standbys: dict[str, list[str]] = defaultdict(list)
    for process, thread in threads.values():
        for task in thread.tasks:
            if task.kind == "standby":
                standbys[task.task].append(process)
    advice = balance(
        {task.task: task.records_per_second or 0.0 for _, task in active},
        {member: process for member, (process, _) in threads.items()},
        {task.task: member for member, task in active},
        standbys,
    )
    before = advice.before_instance_max
    if before <= 0 or (before - advice.after_instance_max) / before < ADVICE_MIN_GAIN:
        return None
    return AdviceLine(
        before_instance_max=before,
        after_instance_max=advice.after_instance_max,
        before_thread_max=advice.before_member_max,
        after_thread_max=advice.after_member_max,
        moves=tuple(
            MoveLine(
                task=move.task,
                records_per_second=move.load,
                from_instance=threads[move.from_member][0],
                from_thread=threads[move.from_member][1].thread,
                to_instance=threads[move.to_member][0],
                to_thread=threads[move.to_member][1].thread,
                promotes_standby=move.promotes_standby,
            )
            for move in advice.moves
        ),
        exact=advice.exact,
    )


def _topology(
    snapshot: Snapshot, configured: TopologyDescription | None
) -> tuple[SubtopologyLine, ...]:
    """A configured description first (it names processors, patterns and global stores);
    else the snapshot's (a KIP-1071 broker's, or the agent's configured one)."""
    tasks: dict[str, int] = defaultdict(int)
    for m in snapshot.members:
        for task in m.streams.active_tasks if m.streams is not None else ():
            tasks[task.task.rsplit("_", 1)[0]] += 1
    if configured is not None:
        named = configured.for_application(snapshot.group.group_id)
        return tuple(
            SubtopologyLine(
                subtopology=str(s.subtopology_id),
                reads=s.source_topics
                + tuple(n.topic_pattern for n in s.nodes if n.topic_pattern is not None),
                writes=s.sink_topics,
                stores=s.stores,
                processors=s.processors,
                active_tasks=tasks.get(str(s.subtopology_id), 0),
                is_global=s.is_global,
            )
            for s in named.subtopologies
        )
    return tuple(
        SubtopologyLine(
            subtopology=s.subtopology_id,
            reads=(*s.source_topics, *s.repartition_source_topics),
            writes=s.repartition_sink_topics,
            # Snapshots from before state_stores existed carry only the changelogs.
            stores=s.state_stores
            or tuple(_store_of(snapshot.group.group_id, t) for t in s.changelog_topics),
            processors=s.processors,
            active_tasks=tasks.get(s.subtopology_id, 0),
        )
        for s in snapshot.subtopologies
    )


def _store_of(application_id: str, changelog: str) -> str:
    """The store a changelog topic belongs to (``<application.id>-<store>-changelog``)."""
    return changelog_store_name(changelog, application_id) or changelog


def _partition_line(p: PartitionInfo, rate: float | None) -> PartitionLine:
    lag, unknown = (p.lag, None) if p.lag is not None else _unmeasured_lag(p, rate)
    return PartitionLine(
        topic=p.topic,
        partition=p.partition,
        records_per_second=rate,
        lag=lag,
        lag_seconds=p.lag_seconds,
        committed_offset=p.committed_offset,
        log_end_offset=p.log_end_offset,
        lag_seconds_lower_bound=p.lag_seconds_lower_bound,
        idle=rate == 0.0,
        lag_unknown=unknown,
    )


# Why a partition's lag is unknown (shown as footnotes under "?" and "idle").
NO_LOG_END = "the broker gave no log-end offset for it in this poll (see the problems below)"
NO_COMMIT_IDLE = (
    "no records arrived during the sample, and the group has committed no offset for it "
    "(Kafka Streams commits only partitions it has processed records from)"
)
NO_COMMIT_WHILE_RECORDS_ARRIVE = (
    "records arrive but the group has committed no offset for it: no member has finished "
    "processing a batch from it yet (just assigned, or overrunning max.poll.interval.ms)"
)
NO_COMMIT_SEEN_ONCE = (
    "the group has committed no offset for it, and it was seen in one poll only (no rate)"
)
NOT_POLLED = "not among the poll's partitions (no committed offset, no member assigned it)"


def _unmeasured_lag(p: PartitionInfo, rate: float | None) -> tuple[int | None, str | None]:
    """A lag the poll could not compute (an offset missing): 0 where that is still a fact
    (an empty partition), else None and the reason."""
    if p.log_end_offset is None:
        return None, NO_LOG_END
    empty = p.log_end_offset == (p.log_start_offset if p.log_start_offset is not None else 0)
    if empty:
        return 0, None  # no records to be behind on, committed or not
    if rate == 0.0:
        return None, NO_COMMIT_IDLE
    if rate is None:
        return None, NO_COMMIT_SEEN_ONCE
    return None, NO_COMMIT_WHILE_RECORDS_ARRIVE


def _instances(
    members: Sequence[MemberInfo], partitions: dict[tuple[str, int], PartitionLine]
) -> list[InstanceLine]:
    by_process: dict[str, list[tuple[MemberInfo, StreamsMemberInfo]]] = defaultdict(list)
    for m in members:
        if m.streams is not None and m.streams.process_id:
            by_process[m.streams.process_id].append((m, m.streams))
    instances = []
    for process_id, threads_of in by_process.items():
        threads = [
            _thread(m, streams, partitions)
            for m, streams in sorted(threads_of, key=lambda t: t[1].thread_index or 0)
        ]
        first_member, first_streams = threads_of[0]
        instances.append(
            InstanceLine(
                process_id=process_id,
                host=first_member.client_host,
                endpoint=first_streams.endpoint,
                threads=tuple(threads),
                load_records_per_second=sum(t.load_records_per_second for t in threads),
            )
        )
    return instances


def _thread(
    member: MemberInfo,
    streams: StreamsMemberInfo,
    partitions: dict[tuple[str, int], PartitionLine],
) -> ThreadLine:
    sums = {s.task: s.offset_sum for s in streams.task_offset_sums}
    tasks = []
    kinds = (
        ("active", streams.active_tasks),
        ("standby", streams.standby_tasks),
        ("warmup", streams.warmup_tasks),
    )
    for kind, task_list in kinds:
        for task in task_list:
            lines = tuple(
                partitions.get((tp.topic, tp.partition))
                or PartitionLine(
                    tp.topic, tp.partition, None, None, None, None, None, lag_unknown=NOT_POLLED
                )
                for tp in task.partitions
            )
            known = [p.records_per_second for p in lines if p.records_per_second is not None]
            rate = sum(known) if kind == "active" and known else None
            tasks.append(TaskLine(task.task, kind, lines, rate, sums.get(task.task)))
    load = sum(t.records_per_second or 0.0 for t in tasks)
    return ThreadLine(streams.thread_index, member.member_id, member.client_id, tuple(tasks), load)


def _with_share(instance: InstanceLine, share: float) -> InstanceLine:
    return InstanceLine(
        instance.process_id,
        instance.host,
        instance.endpoint,
        instance.threads,
        instance.load_records_per_second,
        share,
    )
