"""threads_fewer_than_tasks (warning): a Kafka Streams group's stream threads each carry
many active tasks while its lag keeps growing: it has too few threads to keep up.

Holds at a judged poll when the busiest thread holds ``tasks_per_thread_threshold``
active tasks or more and the group's lag floors rise across the four quarters of
``tasks_per_thread_lag_window``, counting only lag that is the threads' doing (not a
stuck restore's, a dead instance's, a loop's, or partitions that made no progress).

The spec is docs/rules/threads_fewer_than_tasks.md.
"""

from bisect import bisect_left
from collections import deque
from collections.abc import Collection, Iterable, Iterator, Sequence
from itertools import pairwise
from math import ceil
from typing import NamedTuple, cast

from agent.aggregation.judging.facts import Member, Poll, TopicPartition
from agent.aggregation.judging.rules.base import (
    Evaluation,
    Found,
    Judgement,
    counted,
    is_repartition,
    rounded,
    thread_name,
)
from agent.model.findings import FindingSubject
from agent.model.records import JsonObject

KIND = "threads_fewer_than_tasks"

_QUARTERS = 4
# Findings that explain the lag of their subject's partitions (an instance's, or one of
# its tasks'), and those that explain the whole group's.
_EXPLAIN_SUBJECT_LAG: tuple[str, ...] = ("restore_stalled", "stream_threads_dead")
_EXPLAIN_GROUP_LAG: tuple[str, ...] = ("rebalance_loop",)
NO_PROGRESS = "no progress"  # why a partition is left out when no finding explains it

Floors = tuple[int | None, ...]  # the least known lag of each quarter, oldest first


def judge(ev: Evaluation) -> Judgement:
    p, now = ev.params, ev.now
    members = _members(now.members)
    if not _judged(now, members):
        return Judgement(KIND, judged=False)
    if not _crowded(now, members, p.tasks_per_thread_threshold):
        return Judgement(KIND, judged=True)
    floors = _newest_floors(ev.window.polls, p.tasks_per_thread_lag_window)
    if not _growing(floors, p.tasks_per_thread_min_lag_growth):
        return Judgement(KIND, judged=True)
    lags = _LagHistory(ev.window.polls, p.tasks_per_thread_lag_window)
    # The group's lag grows: is it the threads' doing?
    left_out = _left_out(ev)
    if left_out is None:
        return Judgement(KIND, judged=True)  # the whole group's lag is another finding's
    if left_out:
        lags = _LagHistory(ev.window.polls, p.tasks_per_thread_lag_window, left_out)
        floors = next(lags.floors_newest_first())
        if not _growing(floors, p.tasks_per_thread_min_lag_growth):
            return Judgement(KIND, judged=True)
    return Judgement(KIND, judged=True, found=(_found(ev, members, floors, lags, left_out),))


# -- when it holds -------------------------------------------------------------------------


class _Members(NamedTuple):
    """What the rule reads of a poll's members."""

    size: int  # members in all
    decoded: int
    busiest: int  # the most active tasks one decoded member (one stream thread) holds


def _members(members: tuple[Member, ...]) -> _Members:
    decoded = [len(m.active) for m in members if m.decoded]
    return _Members(len(members), len(decoded), max(decoded, default=0))


def _judged(poll: Poll, members: _Members) -> bool:
    """Every member's tasks are known (or there is nobody to hold any)."""
    return members.size == 0 or (poll.stable and members.decoded == members.size)


def _crowded(poll: Poll, members: _Members, threshold: int) -> bool:
    """A Streams group's busiest thread holds ``threshold`` tasks or more."""
    return poll.is_streams and poll.stable and members.size > 0 and members.busiest >= threshold


def _growing(floors: Floors, min_growth: int) -> bool:
    """Each quarter's floor above the one before, the last by ``min_growth`` over the
    first; a quarter without a known lag is no growth."""
    if None in floors:
        return False
    known = cast("tuple[int, ...]", floors)
    return all(a < b for a, b in pairwise(known)) and known[-1] - known[0] >= min_growth


# -- lag that is not the threads' doing ------------------------------------------------------

LeftOut = dict[TopicPartition, str]  # partition -> why its lag does not count


def _left_out(ev: Evaluation) -> LeftOut | None:
    """The partitions whose lag another finding explains, or that made no progress at all
    (sorted); None when another finding explains the whole group's lag."""
    explaining = _explaining_subjects(ev)
    if any(kind in _EXPLAIN_GROUP_LAG for kind, _ in explaining):
        return None
    left: LeftOut = {}
    for kind, subject in explaining:
        for m in ev.now.members:
            if m.process != subject.process or subject.thread not in (None, m.thread):
                continue
            for task in m.active:
                if subject.task in (None, task.task):
                    for tp in task.partitions:
                        left.setdefault(tp, kind)
    for tp in _without_progress(ev):
        left.setdefault(tp, NO_PROGRESS)
    return dict(sorted(left.items()))


def _explaining_subjects(ev: Evaluation) -> list[tuple[str, FindingSubject]]:
    """(kind, subject) of the findings that explain lag: open on the group before this
    poll, or found at it by a rule judged before this one; those of an instance name it."""
    kinds = (*_EXPLAIN_SUBJECT_LAG, *_EXPLAIN_GROUP_LAG)
    subjects = {(f.kind, f.subject) for f in ev.open_findings if f.kind in kinds}
    for kind in kinds:
        judgement = ev.said(kind)
        if judgement is not None:
            subjects.update((f.kind, f.subject) for f in judgement.found)
    return sorted(
        ((kind, s) for kind, s in subjects if kind in _EXPLAIN_GROUP_LAG or s.process),
        key=lambda ks: (ks[0], ks[1].key),
    )


def _without_progress(ev: Evaluation) -> list[TopicPartition]:
    """The partitions with a lag now whose committed offset stayed the same at every poll
    of the window's last quarter; none when those polls do not all list their
    partitions."""
    span = ev.params.tasks_per_thread_lag_window / _QUARTERS
    window = ev.window
    if window.first.t > window.t - span:
        return []  # a history shorter than that: no quarter to tell from (nor growth)
    polls = window.looking_back(span)
    now = polls[-1].partitions
    if now is None:
        return []
    still = {(p.topic, p.partition): p.committed for p in now if p.lag}
    for poll in polls[:-1]:
        if not still:
            break
        if poll.partitions is None:
            return []  # aged out: their commits are not known that far back
        same = {
            key
            for p in poll.partitions
            if (key := (p.topic, p.partition)) in still and still[key] == p.committed
        }
        still = {key: committed for key, committed in still.items() if key in same}
    return sorted(TopicPartition(*key) for key in still)


def _quarters(total: int) -> list[tuple[int, int]]:
    """Each quarter of a look-back of ``total`` ms as (first, last) ms relative to the poll
    judged: disjoint, the oldest starting ``total`` back (included), the newest ending with
    the poll."""
    return [
        (
            -total + round(total * q / _QUARTERS),
            0 if q == _QUARTERS - 1 else -total + round(total * (q + 1) / _QUARTERS) - 1,
        )
        for q in range(_QUARTERS)
    ]


def _newest_floors(polls: Sequence[Poll], seconds: float) -> Floors:
    """The newest poll's quarter floors (``_LagHistory.floors_newest_first``'s first),
    from the polls of its look-back only: what every judged poll reads, where the history
    is read only once the lag grows."""
    quarters = _quarters(round(seconds * 1000))
    oldest = quarters[0][0]
    now = int(polls[-1].t * 1000)
    floors: list[int | None] = [None] * _QUARTERS
    for poll in reversed(polls):
        at = int(poll.t * 1000) - now
        if at < oldest:
            break  # the window is in time order: the rest is older still
        if poll.lag_partitions <= 0:
            continue  # knows no lag
        lag = poll.lag_total
        for q, (first, last) in enumerate(quarters):
            if first <= at <= last:
                floor = floors[q]
                if floor is None or lag < floor:
                    floors[q] = lag
                break
    return tuple(floors)


class _LagHistory:
    """The window's polls as (ms, known lag): what the quarters and the trend read;
    without the lag of the ``left_out`` partitions when there are some."""

    def __init__(
        self, polls: Sequence[Poll], seconds: float, left_out: Collection[TopicPartition] = ()
    ) -> None:
        self.polls = polls
        self.ms = [int(poll.t * 1000) for poll in polls]  # as the window's look-backs count
        # A poll without a partition that reports a lag knows none (not zero).
        self.lags = (
            _lags_without(polls, left_out)
            if left_out
            else [poll.lag_total if poll.lag_partitions > 0 else None for poll in polls]
        )
        self.known = [
            (ms, lag) for ms, lag in zip(self.ms, self.lags, strict=True) if lag is not None
        ]
        self.total = round(seconds * 1000)
        self.quarters = _quarters(self.total)

    def floors_newest_first(self) -> Iterator[Floors]:
        """Each poll's quarter floors, from the newest poll back: a walk that stops at the
        start of a run reads no further."""
        return zip(*(self._floors_of(first, last) for first, last in self.quarters), strict=True)

    def _floors_of(self, first: int, last: int) -> Iterator[int | None]:
        """One quarter's least known lag at each poll, newest first: a sliding minimum
        (linear in the polls, where a minimum per poll would read the quarter again)."""
        known = self.known
        # (ms, lag) in the quarter, newest first, lags falling: the first is the least.
        held: deque[tuple[int, int]] = deque()
        entering = len(known) - 1  # polls enter from the old side as the quarter moves back
        for ms in reversed(self.ms):
            while entering >= 0 and known[entering][0] >= ms + first:
                while held and held[-1][1] >= known[entering][1]:
                    held.pop()  # never the least again: an older one is as low, and stays longer
                held.append(known[entering])
                entering -= 1
            while held and held[0][0] > ms + last:
                held.popleft()  # past the quarter's end
            yield held[0][1] if held else None

    def slope(self) -> float | None:
        """The lag's least-squares slope (records/s) over the window up to the newest
        poll: over the polls that know a lag, against the spread of every poll's time."""
        start = bisect_left(self.ms, self.ms[-1] - self.total)
        polls = self.polls[start:]
        origin = polls[-1].t  # times near zero keep the sums precise
        times = [poll.t - origin for poll in polls]
        mean_t = sum(times) / len(times)
        spread = sum((t - mean_t) ** 2 for t in times) / len(times)
        pairs = [
            (t, lag) for t, lag in zip(times, self.lags[start:], strict=True) if lag is not None
        ]
        if not pairs or spread == 0:
            return None
        pair_t = sum(t for t, _ in pairs) / len(pairs)
        pair_lag = sum(lag for _, lag in pairs) / len(pairs)
        covariance = sum((t - pair_t) * (lag - pair_lag) for t, lag in pairs) / len(pairs)
        return covariance / spread

    def since(self, threshold: int, min_growth: int) -> float:
        """When the run of judged polls where the rule holds now began (polls not judged
        neither hold nor break it)."""
        start = self.polls[-1].t
        shared: tuple[Member, ...] | None = None
        members = _members(())
        for poll, floors in zip(reversed(self.polls), self.floors_newest_first(), strict=True):
            if poll.members is not shared:  # polls share their members while unchanged
                shared = poll.members
                members = _members(shared)
            if not _judged(poll, members):
                continue
            if not (_crowded(poll, members, threshold) and _growing(floors, min_growth)):
                break
            start = poll.t
        return start


def _lags_without(polls: Iterable[Poll], left_out: Collection[TopicPartition]) -> list[int | None]:
    """Each poll's lag over its partitions but the ``left_out`` ones; None where it knows
    none (no partition with a lag, or its partitions aged out: the total alone cannot
    tell the rest from what is left out)."""
    lags: list[int | None] = []
    for poll in polls:
        total, known = 0, False
        for p in poll.partitions or ():
            if p.lag is not None and (p.topic, p.partition) not in left_out:
                total += p.lag
                known = True
        lags.append(total if known else None)
    return lags


# -- what it says ------------------------------------------------------------------------


class _Threads(NamedTuple):
    busiest: Member
    instances: int
    threads_per_instance: int


def _threads(poll: Poll, left_out: LeftOut) -> _Threads:
    """The busiest stream thread, the instances and the most threads one instance runs.
    With partitions left out, the busiest among the threads whose lag counted most: a
    thread whose tasks are all stuck is not the one short of capacity."""
    per_instance: dict[str, int] = {}
    for m in poll.members:
        # Members without a process id count as instances of their own.
        key = m.process if m.process is not None else m.member_id
        per_instance[key] = per_instance.get(key, 0) + 1
    if left_out:
        busiest = max(poll.members, key=lambda m: (_counted_tasks(m, left_out), _busiest_order(m)))
    else:
        busiest = max(poll.members, key=_busiest_order)
    return _Threads(busiest, len(per_instance), max(per_instance.values()))


def _counted_tasks(m: Member, left_out: LeftOut) -> int:
    """The member's active tasks that read a partition whose lag counts."""
    return sum(1 for t in m.active if any(tp not in left_out for tp in t.partitions))


def _task_ids(m: Member) -> list[str]:
    """The active tasks a member holds that read some partition."""
    return sorted({t.task for t in m.active if t.partitions})


def _busiest_order(m: Member) -> tuple[object, ...]:
    # Most active tasks; equal ones by process, thread, client id, member id (unknown lowest).
    return (
        m.active_count if m.active_count is not None else -1,
        (m.process is not None, m.process or ""),
        (m.thread is not None, m.thread or 0),
        m.client_id,
        m.member_id,
        _task_ids(m),
    )


class _Subtopologies(NamedTuple):
    listed: list[JsonObject]
    repartition_tasks: int
    repartition_topics: list[str]


def _subtopologies(poll: Poll) -> _Subtopologies | None:
    """The active tasks of each sub-topology, the topics they read, and which of those are
    repartition topics; None when no task reads a partition."""
    kinds = {t.name: t.internal_kind for t in poll.topics}
    tasks: dict[str, set[str]] = {}
    topics: dict[str, set[str]] = {}
    repartition: dict[str, set[str]] = {}
    for m in poll.members:
        for task in m.active:
            for tp in task.partitions:
                s = task.subtopology
                tasks.setdefault(s, set()).add(task.task)
                topics.setdefault(s, set()).add(tp.topic)
                if is_repartition(tp.topic, kinds.get(tp.topic)):
                    repartition.setdefault(s, set()).add(tp.topic)
    if not tasks:
        return None
    # Numeric ids in numeric order ("2" before "10"), named ones after.
    ordered = sorted(tasks, key=lambda s: (len(s), s))
    return _Subtopologies(
        [
            {
                "subtopology": s,
                "tasks": len(tasks[s]),
                "topics": sorted(topics[s]),
                "reads_repartition": s in repartition,
            }
            for s in ordered
        ],
        sum(len(tasks[s]) for s in repartition),
        sorted({topic for read in repartition.values() for topic in read}),
    )


def _found(
    ev: Evaluation, members: _Members, floors: Floors, lags: _LagHistory, left_out: LeftOut
) -> Found:
    p, now = ev.params, ev.now
    window = p.tasks_per_thread_lag_window
    threads = _threads(now, left_out)
    subtopologies = _subtopologies(now)
    busiest, count, busiest_count = threads.busiest, members.size, members.busiest
    active = len(now.active_tasks)
    needed = ceil(active / (p.tasks_per_thread_threshold - 1))
    per_instance = ceil(needed / threads.instances)
    instances = ceil(needed / threads.threads_per_instance)
    slope = lags.slope()
    first, last = floors[0], floors[-1]
    # Growing: every floor is known.
    assert first is not None  # noqa: S101
    assert last is not None  # noqa: S101
    repartition_tasks = subtopologies.repartition_tasks if subtopologies is not None else None
    repartitions = fewer_repartitions = ""
    if subtopologies is not None and subtopologies.repartition_tasks > 0:
        repartitions = (
            f"; {subtopologies.repartition_tasks} of the {counted(active, 'task')} read "
            f"repartition topics ({', '.join(subtopologies.repartition_topics)}), as many tasks "
            "again as their sub-topologies' input partitions"
        )
        fewer_repartitions = (
            ", or repartition less (fewer groupBy, selectKey or join steps that re-key)"
        )
    explanation = (
        f"group {ev.group}'s busiest stream thread "
        f"({thread_name(busiest.process, busiest.thread, busiest.client_id)}) runs "
        f"{counted(busiest_count, 'active task')} ({active / count:.1f} per thread on "
        f"average: {counted(active, 'task')} on {counted(count, 'stream thread')} of "
        f"{counted(threads.instances, 'instance')}) while the group's lag kept growing over "
        f"the last {window:.0f} s (its low point rose from {first} to {last} records, about "
        f"{slope if slope is not None else 0.0:.1f} records/s{_not_counted(left_out)}): the "
        "threads cannot keep up"
        f"{repartitions}; run {counted(per_instance, 'stream thread')} per instance "
        "(num.stream.threads, on instances with idle CPU cores), or "
        f"{counted(instances, 'instance')}, for {counted(needed, 'thread')} in all (beyond "
        f"{counted(active, 'thread')} they sit idle){fewer_repartitions}"
    )
    evidence: JsonObject = {
        "max_tasks_per_thread": busiest_count,
        "mean_tasks_per_thread": rounded(active / count, 2),
        "tasks_per_thread_threshold": p.tasks_per_thread_threshold,
        "busiest": {
            "active_tasks": busiest.active_count,
            "process": busiest.process,
            "thread": busiest.thread,
            "client_id": busiest.client_id,
            "member_id": busiest.member_id,
            "tasks": _task_ids(busiest),
        },
        "threads": count,
        "instances": threads.instances,
        "threads_per_instance": threads.threads_per_instance,
        "active_tasks": active,
        "repartition_tasks": repartition_tasks,
        "subtopologies": subtopologies.listed if subtopologies is not None else None,
        "lag_records": now.lag_total,
        "lag_not_counted": [
            {"partition": f"{tp.topic}-{tp.partition}", "why": why} for tp, why in left_out.items()
        ],
        "lag_floor_per_quarter": list(floors),
        "lag_growth_records": last - first,
        "lag_growth_per_second": rounded(slope, 1),
        "window_seconds": float(window),
        "group_type": now.group_type,
        "fix": {
            "threads": needed,
            "num_stream_threads": per_instance,
            "instances": instances,
            "max_useful_threads": active,
        },
    }
    return Found(
        KIND,
        "warning",
        FindingSubject(),
        explanation,
        evidence,
        since=lags.since(p.tasks_per_thread_threshold, p.tasks_per_thread_min_lag_growth),
    )


def _not_counted(left_out: LeftOut) -> str:
    """What the lag figures leave out, for the explanation."""
    if not left_out:
        return ""
    reasons = sorted(set(left_out.values()), key=lambda why: (why == NO_PROGRESS, why))
    said = [
        "no commit in the window's last quarter" if why == NO_PROGRESS else f"{why} open"
        for why in reasons
    ]
    return f", not counting {counted(len(left_out), 'partition')} ({'; '.join(said)})"
