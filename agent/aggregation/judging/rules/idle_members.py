"""idle_members (info): a Kafka Streams group has more members than active tasks, so
some stream threads hold no active task, and it stays so.

Holds at a Stable poll with every assignment known where members outnumber the
distinct active tasks, at every judged poll for ``idle_members_after``.

The spec is docs/rules/idle_members.md.
"""

from collections.abc import Sequence
from typing import NamedTuple

from agent.aggregation.judging.facts import Member, Poll
from agent.aggregation.judging.rules.base import Evaluation, Found, Judgement, counted, thread_name
from agent.aggregation.judging.window import SeriesWindow
from agent.model.findings import FindingSubject
from agent.model.records import JsonObject

KIND = "idle_members"


class _Tasks(NamedTuple):
    """What a poll's members say, whatever the group's state: computed once per members
    tuple (polls share theirs while nothing changes)."""

    all_decoded: bool
    active: frozenset[str]  # distinct active tasks over the members


def _tasks_of(members: Sequence[Member]) -> _Tasks:
    return _Tasks(
        all(m.decoded for m in members),
        frozenset(t.task for m in members for t in m.active),
    )


def judge(ev: Evaluation) -> Judgement:
    now = ev.now
    cache: dict[int, _Tasks] = {}
    tasks = _tasks_at(now, cache)
    if not _judged(now, tasks):
        return Judgement(KIND, judged=False)
    if not _oversized(now, tasks):
        return Judgement(KIND, judged=True)
    since = _oversized_since(ev.window, cache)
    if ev.t - since < ev.params.idle_members_after:
        return Judgement(KIND, judged=True)
    return Judgement(KIND, judged=True, found=(_found(ev, tasks.active, since),))


def _tasks_at(poll: Poll, cache: dict[int, _Tasks]) -> _Tasks:
    key = id(poll.members)
    tasks = cache.get(key)
    if tasks is None:
        tasks = cache[key] = _tasks_of(poll.members)
    return tasks


def _judged(poll: Poll, tasks: _Tasks) -> bool:
    """Every member's tasks are known, or there is nobody to be idle."""
    return poll.member_count == 0 or (poll.stable and tasks.all_decoded)


def _oversized(poll: Poll, tasks: _Tasks) -> bool:
    active = len(tasks.active)
    return poll.is_streams and poll.stable and 0 < active < poll.member_count


def _oversized_since(window: SeriesWindow, cache: dict[int, _Tasks]) -> float:
    """When the run of judged polls at which the group was oversized began (it is now);
    polls that could not be judged neither count nor break it."""
    since = window.t
    judged = oversized = True
    newer: Poll | None = None
    for poll in window.reversed():
        # A poll with the newer one's very members, state and protocol is judged alike.
        if not (
            newer is not None
            and poll.members is newer.members
            and poll.state == newer.state
            and poll.is_streams == newer.is_streams
        ):
            tasks = _tasks_at(poll, cache)
            judged, oversized = _judged(poll, tasks), _oversized(poll, tasks)
            newer = poll
        if not judged:
            continue
        if not oversized:
            break
        since = poll.t
    return since


class _Instance(NamedTuple):
    process: str | None
    threads: int
    idle: list[JsonObject]


def _instances(members: Sequence[Member]) -> list[_Instance]:
    """The members by instance (process id), ordered by it, members without one first and
    together, each instance's idle members sorted as the old job sorted them (thread,
    then the ids)."""
    by_process: dict[str | None, list[Member]] = {}
    for m in members:
        by_process.setdefault(m.process, []).append(m)
    instances = []
    for process in sorted(by_process, key=lambda p: (p is not None, p or "")):
        held = by_process[process]
        idle = sorted((m for m in held if not m.active), key=_idle_order)
        instances.append(_Instance(process, len(held), [_idle_member(m) for m in idle]))
    return instances


def _idle_order(m: Member) -> tuple[bool, int, str, str, str, str, tuple[str, ...]]:
    # Unknown thread indexes first, as an ascending sort puts nulls.
    return (
        m.thread is not None,
        m.thread or 0,
        m.process or "",
        m.client_id,
        m.host,
        m.member_id,
        tuple(sorted(m.replicas)),
    )


def _idle_member(m: Member) -> JsonObject:
    return {
        "thread": m.thread,
        "process": m.process,
        "client_id": m.client_id,
        "host": m.host,
        "member_id": m.member_id,
        "standby_tasks": sorted(m.replicas),
    }


def _at_least_one(count: int) -> int | None:
    """A suggested maximum, or None when even one would leave members idle."""
    return count if count >= 1 else None


def _found(ev: Evaluation, active: frozenset[str], since: float) -> Found:
    now = ev.now
    members, tasks = now.member_count, len(active)
    subtopologies = len({task.split("_", 1)[0] for task in active})
    by_instance = _instances(now.members)
    # A member without a process id (its Streams data carries none) counts as an instance
    # of its own; the most threads of one instance counts them together, as before.
    instances = sum(i.threads if i.process is None else 1 for i in by_instance)
    threads_per_instance = max(i.threads for i in by_instance)
    idle = [m for i in by_instance for m in i.idle]
    idle_standbys = sum(len(m["standby_tasks"]) for m in idle)
    # What would make members and tasks fit: each on its own.
    fit_threads = _at_least_one(tasks // instances)
    fit_instances = _at_least_one(tasks // threads_per_instance)
    fit_partitions = -(-members // subtopologies)
    return Found(
        KIND,
        "info",
        FindingSubject(),
        _explanation(
            ev.group,
            members=members,
            instances=instances,
            threads_per_instance=threads_per_instance,
            tasks=tasks,
            idle=idle,
            idle_standbys=idle_standbys,
            fixes=_fixes(fit_threads, fit_instances, subtopologies, fit_partitions),
        ),
        {
            "members": members,
            "active_tasks": tasks,
            "idle_member_count": len(idle),
            "idle_members": idle,
            "instances": instances,
            "threads_per_instance": threads_per_instance,
            "subtopologies": subtopologies,
            "idle_standby_tasks": idle_standbys,
            "idle_for_seconds": ev.t - since,
            "group_type": now.group_type,
            "fix": {
                "max_threads_per_instance": fit_threads,
                "max_instances": fit_instances,
                "min_partitions_per_subtopology": fit_partitions,
            },
        },
        since=since,
    )


def _fixes(
    fit_threads: int | None, fit_instances: int | None, subtopologies: int, fit_partitions: int
) -> list[str]:
    fixes = []
    if fit_threads is not None:
        fixes.append(f"run at most {counted(fit_threads, 'stream thread')} per instance")
    if fit_instances is not None:
        fixes.append(f"at most {counted(fit_instances, 'instance')}")
    fixes.append(
        f"give each of its {counted(subtopologies, 'sub-topology', 'sub-topologies')} "
        f"at least {counted(fit_partitions, 'partition')}"
    )
    return fixes


def _explanation(
    group: str,
    *,
    members: int,
    instances: int,
    threads_per_instance: int,
    tasks: int,
    idle: list[JsonObject],
    idle_standbys: int,
    fixes: list[str],
) -> str:
    names = ", ".join(thread_name(m["process"], m["thread"], m["client_id"]) for m in idle)
    standbys = (
        f" (they keep {counted(idle_standbys, 'standby task')} warm, spares for a failover, "
        "but process nothing)"
        if idle_standbys > 0
        else ""
    )
    return (
        f"group {group} runs {counted(members, 'stream thread')} "
        f"({counted(instances, 'instance')}, up to {counted(threads_per_instance, 'thread')} "
        f"each) for {counted(tasks, 'active task')}, so {counted(len(idle), 'thread')} can "
        f"never get one: {names}{standbys}; {', or '.join(fixes)}"
    )
