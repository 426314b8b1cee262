"""What ``ksmon explain`` tells a person on call about one group, built from two snapshots.

Pure: two polls of the same group a few seconds apart (rates need two points)
and, when the aggregation job runs, its findings. The report is a tree of
plain dataclasses, so ``--json`` is ``to_plain(report)`` and the text view is
a rendering of the same tree.

Rates are log-end-offset growth between the two polls; load is the sum of the
rates of the input partitions of the active tasks an instance or thread holds
(the definitions of ``docs/detectors.md``).
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.explain.balance import balance
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
    generation: int
    at: float
    member_count: int


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
) -> GroupReport:
    """The report on ``second``'s group; ``first`` is the earlier poll used for rates;
    ``topology``: the application's configured describe() text, parsed."""
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
    return GroupReport(
        cluster=second.cluster,
        group=second.group.group_id,
        state=second.group.state,
        group_type=second.group.group_type,
        is_streams=second.group.is_streams,
        generation=second.group.generation,
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
        rebalances=tuple(
            RebalanceLine(r.generation, r.at, r.member_count)
            for r in sorted((*first.rebalances, *second.rebalances), key=lambda r: r.at)
        ),
        findings=None if findings is None else tuple(findings),
        findings_source=findings_source,
        problems=tuple(problems),
        topology=_topology(second, topology),
        advice=_advice(instances),
        topology_source=(
            "config" if topology is not None else "broker" if second.subtopologies else None
        ),
    )


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
    return PartitionLine(
        topic=p.topic,
        partition=p.partition,
        records_per_second=rate,
        lag=p.lag,
        lag_seconds=p.lag_seconds,
        committed_offset=p.committed_offset,
        log_end_offset=p.log_end_offset,
        lag_seconds_lower_bound=p.lag_seconds_lower_bound,
    )


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
                or PartitionLine(tp.topic, tp.partition, None, None, None, None, None)
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
