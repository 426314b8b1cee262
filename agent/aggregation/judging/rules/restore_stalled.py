"""restore_stalled: a task's state restore makes no progress.

A sidecar sees the restore itself: its instance restoring and no record restored
for ``restore_stall_after`` (critical). The broker can only suspect one: an active
stateful task with records to restore whose input gets no commit for
``progress_stall_after`` while the group is Stable and the lag grows (warning).

The spec (which changelog is whose, what counts as records to restore, evidence,
what closes it) is docs/rules/restore_stalled.md.
"""

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from agent.aggregation.judging.facts import (
    Member,
    Partition,
    Poll,
    Sidecar,
    Subtopology,
    Task,
    Topic,
    TopicPartition,
)
from agent.aggregation.judging.results import RESTORE_ETA, RESTORE_RATE, RESTORE_REMAINING
from agent.aggregation.judging.rules.base import Evaluation, Found, Gauge, Judgement, rounded
from agent.model.findings import FindingSubject

KIND = "restore_stalled"
RUNNING_ACTIVE = -2  # a task offset sum meaning "running active here, caught up"
BY_NAME = "repartition topic of the same store"
LEFTOVER = "the only other stateful sub-topology"
ONLY_SUBTOPOLOGY = "the group's only sub-topology"
# The group's topology, by where it came from (``Subtopology.origin``).
BY_TOPOLOGY = {"broker": "topology described by the broker", "configured": "configured topology"}
PARTITIONS_ASSIGNED = "PARTITIONS_ASSIGNED"

_Key = tuple[str, int]  # (topic, partition)


def judge(ev: Evaluation) -> Judgement:
    broker_found, broker_gauges = _broker(ev)
    sidecar_found, sidecar_gauges, sidecar_judged = _sidecar(ev)
    found = (*broker_found, *sidecar_found)
    return Judgement(
        KIND,
        judged=ev.now.stable or sidecar_judged or bool(found),
        found=found,
        gauges=(*broker_gauges, *sidecar_gauges),
    )


def _progress_gauges(
    process: str | None, task: str | None, source: str, remaining: float, rate: float | None
) -> list[Gauge]:
    """Remaining records, the rate, and the seconds left at that rate (when it moves)."""

    def gauge(metric: str, value: float) -> Gauge:
        return Gauge(metric, value, process=process, task=task, source=source)

    gauges = [gauge(RESTORE_REMAINING, remaining)]
    if rate is not None:
        gauges.append(gauge(RESTORE_RATE, rate))
        if rate > 0:
            gauges.append(gauge(RESTORE_ETA, remaining / rate))
    return gauges


# -- broker only ------------------------------------------------------------------------


class Owned(NamedTuple):
    """The changelogs one sub-topology owns, and how we know."""

    how: str
    topics: list[str]


# Owners by what they are read from: the changelogs listed, and the topology and members
# (shared with the poll before while unchanged), so most polls find the poll before's.
_OwnersOf = tuple[str, tuple[str, ...], int, int]
_owners: dict[
    _OwnersOf, tuple[tuple[Subtopology, ...], tuple[Member, ...], dict[str, "Owned"]]
] = {}
_OWNERS_KEPT = 1024


def changelog_owners(group: str, poll: Poll) -> dict[str, Owned]:
    """Sub-topology -> the changelog topics it owns, at ``poll`` (the newest). Shared by
    the polls that read alike: not to be changed."""
    # A changelog without end offsets has no partition to restore: as if not listed.
    changelogs = tuple(dict.fromkeys(topic for topic, ends in poll.changelog_ends or () if ends))
    key = (group, changelogs, id(poll.subtopologies), id(poll.members))
    hit = _owners.get(key)
    if hit is not None and hit[0] is poll.subtopologies and hit[1] is poll.members:
        return hit[2]
    owners = _changelog_owners(group, poll, changelogs)
    if len(_owners) >= _OWNERS_KEPT:
        _owners.clear()
    # Held with the parts they were worked out from: their ids stay theirs.
    _owners[key] = (poll.subtopologies, poll.members, owners)
    return owners


def _changelog_owners(group: str, poll: Poll, changelogs: tuple[str, ...]) -> dict[str, Owned]:
    owners: dict[str, Owned] = {}

    def own(subtopology: str, how: str, topic: str) -> None:
        owners.setdefault(subtopology, Owned(how, [])).topics.append(topic)

    declared = _declared_owners(poll)
    unnamed = []
    for topic in changelogs:
        if topic in declared:
            own(*declared[topic], topic)
        else:
            unnamed.append(topic)
    if not unnamed:
        return owners
    readers = _repartition_readers(group, poll, unnamed)
    unclaimed = []
    for topic in unnamed:
        for subtopology in readers.get(topic, ()):
            own(subtopology, BY_NAME, topic)
        if topic not in readers:
            unclaimed.append(topic)
    if unclaimed:
        leftover = _leftover_owner(poll, owners.keys())
        if leftover is not None:
            for topic in unclaimed:
                own(*leftover, topic)
    return owners


def _repartition_readers(group: str, poll: Poll, changelogs: Sequence[str]) -> dict[str, list[str]]:
    """Changelog -> the sub-topologies (sorted) whose tasks read the repartition topic
    named after the same store; changelogs no task's repartition topic names are absent."""
    repartition_of = {
        topic: repartition
        for topic in changelogs
        if (repartition := _repartition_topic(group, topic)) is not None
    }
    if not repartition_of:
        return {}
    repartitions = set(repartition_of.values())
    readers: dict[str, set[str]] = {}  # repartition topic -> the sub-topologies reading it
    for m in poll.members:
        for task in m.active:
            for tp in task.partitions:
                if tp.topic in repartitions:
                    readers.setdefault(tp.topic, set()).add(task.subtopology)
    return {
        topic: sorted(readers[repartition])
        for topic, repartition in repartition_of.items()
        if repartition in readers
    }


def _declared_owners(poll: Poll) -> dict[str, tuple[str, str]]:
    """Changelog topic -> (sub-topology, how we know), from the group's topology when the
    snapshot has one (each sub-topology lists its changelogs)."""
    return {
        topic: (s.id, BY_TOPOLOGY.get(s.origin, s.origin))
        for s in poll.subtopologies
        for topic in s.changelog_topics
    }


def _leftover_owner(poll: Poll, claimed: Iterable[str]) -> tuple[str, str] | None:
    """The one sub-topology the changelogs no name claims can belong to: the only stateful
    one left over (tasks with offset sums), else the group's only sub-topology (an
    instance restarted on an empty state directory, alone in its group, reports no offset
    sum at all); None: not known."""
    # The threads of one instance report the same offset sums: each list once.
    reported = {m.offset_sums for m in poll.members}
    stateful = {task.split("_", 1)[0] for sums in reported for task, _ in sums}
    leftover = stateful - set(claimed)
    if len(leftover) == 1:
        return leftover.pop(), LEFTOVER
    held = {task.subtopology for m in poll.members for task in m.active}
    if len(held) == 1:
        return held.pop(), ONLY_SUBTOPOLOGY
    return None


def _repartition_topic(group: str, changelog: str) -> str | None:
    """``<group>-<store>-changelog`` -> ``<group>-<store>-repartition``."""
    prefix, suffix = f"{group}-", "-changelog"
    if not (changelog.startswith(prefix) and changelog.endswith(suffix)):
        return None
    store = changelog[len(prefix) : len(changelog) - len(suffix)]
    return f"{prefix}{store}-repartition"


class _Changelog(NamedTuple):
    topic: str
    ends: tuple[int | None, ...]  # per partition
    partition_bytes: float | None  # its size on disk over its partitions


class _Behind(NamedTuple):
    """An active task a member holds that has records to restore, as far as the broker can
    tell: its local state is behind its changelogs, or unknown and just assigned."""

    member: Member
    task: Task
    changelogs: list[str]  # sorted
    mapping: str
    changelog_end: int  # summed over its changelogs' partitions
    changelog_bytes: float | None  # their share of the changelogs' size on disk
    offset_sum: int | None
    backlog: int
    # When its instance was first seen holding it, if that was within the window (before,
    # the instance held it neither active nor as a replica); None: held all along.
    assigned_at: float | None

    def restoring(self, acceptable_recovery_lag: int) -> bool:
        """Just assigned with anything to restore, or far behind."""
        return self.assigned_at is not None or self.backlog > acceptable_recovery_lag


def _behind_tasks(ev: Evaluation) -> list[_Behind]:
    now = ev.now
    owners = changelog_owners(ev.group, now)
    if not owners:
        return []
    ends = dict(now.changelog_ends or ())
    sizes = {t.name: t for t in now.topics}
    changelogs = {
        subtopology: [_Changelog(t, ends[t], _partition_bytes(sizes.get(t))) for t in owned.topics]
        for subtopology, owned in owners.items()
    }
    candidates: list[_Behind] = []
    for m in now.members:
        sums: dict[str, int] | None = None
        for task in m.active:
            owned = changelogs.get(task.subtopology)
            if owned is None or not task.partitions:
                continue
            if sums is None:
                sums = dict(m.offset_sums)
            offset_sum = sums.get(task.task)
            if offset_sum is not None and offset_sum < 0:
                continue  # a sentinel (RUNNING_ACTIVE: caught up here)
            share = _changelog_share(task.task, owned)
            if share is None:
                continue
            names, changelog_end, changelog_bytes = share
            if changelog_end is None:
                continue  # unknown ends
            # No offset sum for a task: no local state at all, so everything is to restore
            # (a KIP-1071 member reports none: then only if just assigned, below).
            backlog = changelog_end - (offset_sum or 0)
            if backlog > 0:
                candidates.append(
                    _Behind(
                        member=m,
                        task=task,
                        changelogs=names,
                        mapping=owners[task.subtopology].how,
                        changelog_end=changelog_end,
                        changelog_bytes=changelog_bytes,
                        offset_sum=offset_sum,
                        backlog=backlog,
                        assigned_at=None,
                    )
                )
    if not candidates:
        return []
    assigned = _assigned_at(
        ev.window.polls,
        {(c.member.process, c.task.task) for c in candidates if c.member.process is not None},
    )
    behind = []
    for c in candidates:
        at = assigned.get((c.member.process, c.task.task)) if c.member.process else None
        if at is None and c.member.broker_assigned:
            continue  # a KIP-1071 task held all along: its local state is not reported
        behind.append(c._replace(assigned_at=at))
    return behind


_Held = tuple[str, str]  # (process, task)


def _assigned_at(polls: Sequence[Poll], wanted: set[_Held]) -> dict[_Held, float]:
    """For each ``wanted`` (process, active task) of the newest poll: the first poll of the
    current run in which that instance holds the task active, when the run began within
    ``polls`` and the instance did not hold the task as a standby or warm-up before it (it
    has no state from there). Polls that do not tell who holds what (a classic group
    mid-rebalance) neither extend nor end a run. Absent: held all along, or came from a
    replica."""
    assigned: dict[_Held, float] = {}
    running = set(wanted)  # held at every telling poll walked so far
    held_since = polls[-1].t  # the oldest of those
    members = polls[-1].members
    tells = True
    for poll in reversed(polls[:-1]):
        if not running:
            break
        # Polls share their members while unchanged: then so is who holds what.
        if poll.members is not members:
            members = poll.members
            holding = _holding(members)
            tells = holding is not None
            if holding is not None:
                active, replicas = holding
                for held in [held for held in running if held not in active]:
                    running.discard(held)
                    if held not in replicas:
                        assigned[held] = held_since
        if tells:
            held_since = poll.t
    return assigned


def _holding(members: tuple[Member, ...]) -> tuple[set[_Held], set[_Held]] | None:
    """Which instance holds which task at one poll, active and as a replica; None when not
    every member's assignment is known (a poll without members: nobody holds any)."""
    if any(not m.decoded for m in members):
        return None
    active = {(m.process, t.task) for m in members if m.process is not None for t in m.active}
    replicas = {(m.process, task) for m in members if m.process is not None for task in m.replicas}
    return active, replicas


def far_behind_members(ev: Evaluation) -> frozenset[str]:
    """The members (ids) holding an active task with records to restore (just assigned to
    their instance, or more than ``acceptable_recovery_lag`` behind its changelogs when
    they last joined): restoring, as far as the broker can tell, and this rule's to judge
    once their commits stop (consumer_status leaves their stalls to it)."""
    limit = ev.params.acceptable_recovery_lag
    return frozenset(b.member.member_id for b in _behind_tasks(ev) if b.restoring(limit))


def unowned_stateful_subtopologies(group: str, poll: Poll) -> frozenset[str]:
    """The stateful sub-topologies (their tasks report offset sums) that own no changelog
    the broker can tie to them while a changelog with records has no known owner: a
    stuck restore there is one this rule cannot see (consumer_status says so)."""
    owners = changelog_owners(group, poll)
    claimed = {topic for owned in owners.values() for topic in owned.topics}
    if not any(topic not in claimed and any(ends) for topic, ends in poll.changelog_ends or ()):
        return frozenset()
    reported = {m.offset_sums for m in poll.members}
    stateful = {task.split("_", 1)[0] for sums in reported for task, _ in sums}
    return frozenset(stateful - owners.keys())


def _partition_bytes(topic: Topic | None) -> float | None:
    """A topic's size on disk over its partitions: one partition's share."""
    if topic is None or topic.size_bytes is None or not topic.partitions:
        return None
    return topic.size_bytes / topic.partitions


def _changelog_share(
    task: str, owned: list[_Changelog]
) -> tuple[list[str], int | None, float | None] | None:
    """The task's partition of each changelog it owns: the topics, their end offsets
    summed and their share of the size on disk (None where unknown); None: the
    changelogs have no such partition."""
    partition = _task_partition(task)
    if partition is None:
        return None
    names: list[str] = []
    end_sum: int | None = None
    bytes_sum: float | None = None
    for changelog in owned:
        if not 0 <= partition < len(changelog.ends):
            continue
        names.append(changelog.topic)
        end = changelog.ends[partition]
        if end is not None:
            end_sum = end + (end_sum or 0)
        if changelog.partition_bytes is not None:
            bytes_sum = changelog.partition_bytes + (bytes_sum or 0.0)
    if not names:
        return None
    return sorted(names), end_sum, bytes_sum


def _task_partition(task: str) -> int | None:
    """``1_3`` -> 3."""
    try:
        return int(task.rsplit("_", 1)[-1])
    except ValueError:
        return None


class _Progress(NamedTuple):
    """An input partition's commits at the judged poll."""

    lag: int | None
    commit_since: float  # since when its committed offset is unchanged
    lag_growth: int | None  # how much its lag grew since then


class _Walk:
    """One partition's rows, walked from the newest back: to the start of the current
    run of one committed offset (``since``), and on to the newest run start whose lag
    is known (the lag the growth counts from; the oldest row of the look-back starts a
    run too)."""

    __slots__ = ("committed", "index", "lag", "over", "row_lag", "row_t", "since", "tp")

    def __init__(self, index: int, t: float, partition: Partition) -> None:
        self.tp = (partition.topic, partition.partition)
        self.index = index  # its place in the newest poll's partitions
        self.lag = partition.lag
        self.committed = partition.committed  # of the run the last row visited is in
        self.row_t = t  # the last row visited
        self.row_lag = partition.lag
        self.since: float | None = None
        self.over = False

    def back(self, t: float, partition: Partition) -> None:
        """One older row."""
        if partition.committed != self.committed:
            # The row visited last began a run.
            if self.since is None:
                self.since = self.row_t
            if self.row_lag is not None:
                self.over = True
                return
            self.committed = partition.committed
        self.row_t, self.row_lag = t, partition.lag

    def progress(self) -> _Progress:
        since = self.row_t if self.since is None else self.since
        growth = None
        if self.lag is not None and self.row_lag is not None:
            growth = self.lag - self.row_lag
        return _Progress(self.lag, since, growth)


def _commit_progress(polls: Sequence[Poll], wanted: Iterable[_Key]) -> dict[_Key, _Progress | None]:
    """Each ``wanted`` partition's commit progress at the newest of ``polls`` (the
    look-back, oldest first); None if that poll does not list it.

    Each partition is walked back only as far as it must: one committing at every
    poll is done after one step."""
    now = polls[-1]
    result: dict[_Key, _Progress | None] = dict.fromkeys(wanted)
    walks = [
        _Walk(i, now.t, p)
        for i, p in enumerate(now.partitions or ())
        if (p.topic, p.partition) in result
    ]
    walking = walks
    for poll in reversed(polls[:-1]):
        if not walking:
            break
        partitions = poll.partitions
        if partitions is None:
            continue  # a late poll, or aged out
        t, count = poll.t, len(partitions)
        by_key: dict[_Key, Partition] | None = None
        ended = False
        for walk in walking:
            # Polls list the partitions in the same order, mostly: look there first.
            row = partitions[walk.index] if walk.index < count else None
            if row is None or (row.topic, row.partition) != walk.tp:
                if by_key is None:
                    by_key = {(q.topic, q.partition): q for q in partitions}
                row = by_key.get(walk.tp)
                if row is None:
                    continue
            if row.committed == walk.committed:  # the run goes on (most steps)
                walk.row_t, walk.row_lag = t, row.lag
            else:
                walk.back(t, row)
                ended = ended or walk.over
        if ended:
            walking = [walk for walk in walking if not walk.over]
    for walk in walks:
        result[walk.tp] = walk.progress()
    return result


class _Commits:
    """Commit progress of input partitions over the look-back, each walked once."""

    def __init__(self, polls: Sequence[Poll]) -> None:
        self.polls = polls
        self.known: dict[_Key, _Progress | None] = {}

    def of(self, partitions: Iterable[TopicPartition]) -> list[tuple[TopicPartition, _Progress]]:
        """The progress of those of ``partitions`` the judged poll lists, sorted."""
        partitions = sorted(set(partitions))
        missing = {tp for tp in partitions if tp not in self.known}
        if missing:
            self.known.update(_commit_progress(self.polls, missing))
        return [(tp, pr) for tp in partitions if (pr := self.known[tp]) is not None]


def _sum(values: Iterable[int | None]) -> int | None:
    """SQL's sum: nulls ignored, null when all are."""
    total = None
    for v in values:
        if v is not None:
            total = v + (total or 0)
    return total


def _broker(ev: Evaluation) -> tuple[list[Found], list[Gauge]]:
    """The broker's suspicions, and the backlog of the tasks that look restoring."""
    behind = _behind_tasks(ev)
    if not behind:
        return [], []
    p, w, now = ev.params, ev.window, ev.now
    commits = _Commits(w.looking_back(p.progress_stall_after + p.evaluation_window))
    commits.of(tp for b in behind for tp in b.task.partitions)  # all in one walk
    stable_since = w.run_start(lambda poll: poll.stable)
    gauges: list[Gauge] = []
    # Restoring, and no commit on its input for long enough while Stable.
    suspects: list[tuple[_Behind, list[tuple[TopicPartition, _Progress]], float]] = []
    for b in behind:
        inputs = commits.of(b.task.partitions)
        if not inputs:
            continue  # none of its partitions listed now: nothing to tell from
        last_commit_change = max(pr.commit_since for _, pr in inputs)
        # Restoring, as far as the broker can tell: behind at the last rebalance and no
        # commit since. The broker sees no restore rate.
        if last_commit_change <= stable_since:
            gauges += _progress_gauges(
                b.member.process, b.task.task, "broker", float(b.backlog), None
            )
        # Quiet since the input's last commit: after a restart without a rebalance (static
        # membership) that was the old instance's, before it stopped.
        quiet_for = now.t - max(last_commit_change, stable_since)
        if (
            b.restoring(p.acceptable_recovery_lag)
            and now.stable
            and quiet_for >= p.progress_stall_after
        ):
            suspects.append((b, inputs, quiet_for))
    if not suspects:
        return [], gauges
    # Their threads' other input partitions, all in one walk too.
    commits.of(tp for b, _, _ in suspects for task in b.member.active for tp in task.partitions)
    found = []
    for b, inputs, quiet_for in suspects:
        thread_last_commit_change, thread_lag_growth = _thread_progress(commits, b.member)
        thread_quiet_for = now.t - max(thread_last_commit_change, stable_since)
        input_lag_growth = _sum(pr.lag_growth for _, pr in inputs)
        own_lag_grows = input_lag_growth is not None and input_lag_growth > 0
        thread_stuck = (
            thread_quiet_for >= p.progress_stall_after
            and thread_lag_growth is not None
            and thread_lag_growth > 0
        )
        if own_lag_grows or thread_stuck:
            found.append(
                _broker_found(
                    b,
                    now.t,
                    inputs,
                    quiet_for,
                    input_lag_growth if own_lag_grows else None,
                    thread_lag_growth,
                    thread_quiet_for,
                )
            )
    return found, gauges


def _thread_progress(commits: _Commits, member: Member) -> tuple[float, int | None]:
    """Over every input partition of a stream thread (member): its last commit (a change
    of any one's committed offset) and its lag growth since. When the whole thread is
    stuck (its state updater blocks the tasks queued behind the restoring one), nothing
    reaches the restoring task's own input, and the lag piles up upstream, on the
    thread's other partitions."""
    inputs = commits.of(tp for task in member.active for tp in task.partitions)
    return max(pr.commit_since for _, pr in inputs), _sum(pr.lag_growth for _, pr in inputs)


def _broker_found(  # noqa: PLR0917 - one finding's every part
    b: _Behind,
    t: float,
    inputs: list[tuple[TopicPartition, _Progress]],
    quiet_for: float,
    own_lag_growth: int | None,
    thread_lag_growth: int | None,
    thread_quiet_for: float,
) -> Found:
    """``own_lag_growth``: the task's input lag growth when it grew (None: the thread's
    lag did)."""
    backlog_bytes = None
    if b.changelog_bytes is not None:
        backlog_bytes = b.backlog * b.changelog_bytes / b.changelog_end
    whose, growth = "its lag", own_lag_growth
    if own_lag_growth is None:
        whose, growth = "the lag of its stream thread, which commits nothing,", thread_lag_growth
    process = b.member.process
    return Found(
        KIND,
        "warning",
        FindingSubject(process=process, task=b.task.task),
        f"task {b.task.task} on instance {_text(process)} looks stuck restoring: "
        f"{_what_to_restore(b, t, backlog_bytes)}, no commit on its input for "
        f"{quiet_for:.0f} s while {whose} grew by {growth} and the group stayed "
        "Stable; check that instance's restore (disk, throttles, broker quotas)",
        {
            "source": "broker",
            "member_id": b.member.member_id,
            "thread": b.member.thread,
            "changelogs": b.changelogs,
            "mapping": b.mapping,
            "changelog_end_offsets": b.changelog_end,
            "task_offset_sum": b.offset_sum,
            "backlog_records": b.backlog,
            "backlog_bytes_estimate": rounded(backlog_bytes, 0),
            "seconds_without_commit": rounded(quiet_for),
            "input_lag_growth": _sum(pr.lag_growth for _, pr in inputs),
            "input_partitions": [
                {
                    "partition": f"{tp.topic}-{tp.partition}",
                    "lag": pr.lag,
                    "lag_growth": pr.lag_growth,
                    "seconds_without_commit": t - pr.commit_since,
                }
                for tp, pr in inputs
            ],
            "thread_input_lag_growth": thread_lag_growth,
            "thread_seconds_without_commit": rounded(thread_quiet_for),
            "changelog_bytes_estimate": rounded(b.changelog_bytes, 0),
            "seconds_since_assigned": None if b.assigned_at is None else rounded(t - b.assigned_at),
        },
        since=t - quiet_for,
    )


def _what_to_restore(b: _Behind, t: float, backlog_bytes: float | None) -> str:
    """How much the task has to restore; for one just assigned, also since when and what
    its changelogs hold for it."""
    behind = f"{b.backlog} changelog records behind ({_size_text(backlog_bytes)})"
    if b.assigned_at is None:
        return behind
    if b.offset_sum is not None:
        state = f"{b.backlog} records behind"
    elif b.member.broker_assigned:
        state = "not reported to the broker"
    else:
        state = "none"
    partition = b.task.task.rsplit("_", 1)[-1]
    return (
        f"assigned to that instance {t - b.assigned_at:.0f} s ago (local state: {state}), "
        f"its changelog partition {partition} of {', '.join(b.changelogs)} holds up to "
        f"{b.changelog_end} records ({_size_text(b.changelog_bytes)}) to restore"
    )


_SIZE_UNITS = ((1e9, "GB", 1), (1e6, "MB", 1), (1e3, "kB", 0))


def _size_text(size: float | None) -> str:
    """``about 5.0 MB``, ``about 24 kB``; ``size unknown``."""
    if size is None:
        return "size unknown"
    for scale, unit, digits in _SIZE_UNITS:
        if size >= scale:
            return f"about {size / scale:.{digits}f} {unit}"
    return f"about {size:.0f} bytes"


def _text(value: str | None) -> str:
    """As the old explanations printed a missing value."""
    return "null" if value is None else value


# -- sidecar ----------------------------------------------------------------------------


class _Instance(NamedTuple):
    """What a sidecar says of its instance's restoration at one poll."""

    active_restoring: int | None  # over the state updaters (None: none says)
    restore_rate: float | None  # records/s, over the state updaters
    threads_assigned: int | None  # stream threads in PARTITIONS_ASSIGNED (None: none)


def _instance(sidecar: Sidecar) -> _Instance:
    assigned = sum(1 for th in sidecar.threads if th.state == PARTITIONS_ASSIGNED)
    return _Instance(
        _sum(u.active_restoring for u in sidecar.updaters), _restore_rate(sidecar), assigned or None
    )


def _restoring(sidecar: Sidecar) -> bool:
    """A state updater has active restoring tasks, or a stream thread sits in
    PARTITIONS_ASSIGNED."""
    active = 0
    for u in sidecar.updaters:
        if u.active_restoring is not None:
            active += u.active_restoring
    return active > 0 or any(th.state == PARTITIONS_ASSIGNED for th in sidecar.threads)


def _restore_rate(sidecar: Sidecar) -> float | None:
    """Over the state updaters, records/s; None: none says."""
    rate = None
    for u in sidecar.updaters:
        if u.restore_rate is not None:
            rate = u.restore_rate + (rate or 0.0)
    return rate


def _instance_polls(polls: Iterable[Poll], process: str) -> Iterable[tuple[Poll, Sidecar]]:
    for poll in polls:
        if poll.sidecar is not None and poll.sidecar.process == process:
            yield poll, poll.sidecar


def _restoring_since(polls: Sequence[Poll], process: str) -> float:
    """When the instance's current run of restoring began, among the polls with its
    sidecar (the newest restores). A sidecar equal to the newer one's is the same
    object: no need to look inside."""
    since = polls[-1].t
    newer = polls[-1].sidecar
    for i in range(len(polls) - 2, -1, -1):
        poll = polls[i]
        sidecar = poll.sidecar
        if sidecar is None or sidecar.process != process:
            continue
        if sidecar is not newer and not _restoring(sidecar):
            break
        since, newer = poll.t, sidecar
    return since


def _sidecar(ev: Evaluation) -> tuple[list[Found], list[Gauge], bool]:
    """The sidecar's verdict, the restore progress of its instance's tasks, and whether
    it could judge (a sidecar that names its instance)."""
    p, w, now = ev.params, ev.window, ev.now
    sidecar = now.sidecar
    if sidecar is None or sidecar.process is None:
        return [], [], False
    process = sidecar.process
    if not _restoring(sidecar):
        return [], [], True
    stall = w.looking_back(p.restore_stall_after)
    rates = [r for _, s in _instance_polls(stall, process) if (r := _restore_rate(s)) is not None]
    max_rate = max(rates, default=None)
    restoring = [
        (x.task, x.remaining, x.restored_total)
        for x in sidecar.tasks
        if x.task is not None and x.remaining is not None and x.remaining > 0
    ]
    restored = _restored_in(stall, process, {task for task, _, _ in restoring})
    first = _first_restored(w.looking_back(p.evaluation_window), process)
    instance_rate = _restore_rate(sidecar)
    gauges: list[Gauge] = []
    # Restored nothing over the stall time: (task, remaining records, restored then).
    # Restoring with no task metrics at all: the instance itself is the subject.
    stuck: list[tuple[str | None, int | None, float | None]] = []
    if not restoring and max_rate == 0:
        stuck.append((None, None, None))
    for task, remaining, restored_total in restoring:
        restored_in = restored.get(task)
        # No progress: the task's own restored total did not move; if unknown, the state
        # updater's rate stayed 0.
        if restored_in == 0 if restored_in is not None else max_rate == 0:
            stuck.append((task, remaining, restored_in))
        rate = _task_rate(first.get(task), now.t, restored_total)
        if rate is None and instance_rate is not None:
            rate = instance_rate / len(restoring)
        gauges += _progress_gauges(process, task, "sidecar", float(remaining), rate)
    if not stuck:
        return [], gauges, True
    # Only now the restore's start (a walk over its whole run): held long enough?
    restoring_since = _restoring_since(w.polls, process)
    restoring_for = now.t - restoring_since
    if restoring_for < p.restore_stall_after:
        return [], gauges, True
    instance = _instance(sidecar)
    found = [
        Found(
            KIND,
            "critical",
            FindingSubject(process=process, task=task),
            f"{'state restoration' if task is None else 'task ' + task} on instance "
            f"{process} has restored nothing for {restoring_for:.0f} s "
            f"({'unknown' if remaining is None else remaining} records remaining by the "
            "app's own count); the restore is stuck: check the instance's log, its disk "
            "and the brokers",
            {
                "source": "sidecar",
                "sidecar_agent": sidecar.agent,
                "remaining_records": remaining,
                "restored_in_window": restored_in,
                "max_restore_rate_in_window": max_rate,
                "state_updater_restoring_tasks": instance.active_restoring,
                "threads_in_partitions_assigned": instance.threads_assigned,
                "restoring_for_seconds": restoring_for,
            },
            since=restoring_since,
        )
        for task, remaining, restored_in in stuck
    ]
    return found, gauges, True


def _restored_in(polls: Iterable[Poll], process: str, tasks: set[str]) -> dict[str, float]:
    """Per task: how much its restored-records total moved over ``polls`` (max - min);
    absent when never known."""
    spans: dict[str, list[float]] = {}  # task -> [lowest, highest]
    for _, sidecar in _instance_polls(polls, process):
        for x in sidecar.tasks:
            total = x.restored_total
            if x.task is None or total is None or x.task not in tasks:
                continue
            span = spans.get(x.task)
            if span is None:
                spans[x.task] = [total, total]
            elif total < span[0]:
                span[0] = total
            elif total > span[1]:
                span[1] = total
    return {task: high - low for task, (low, high) in spans.items()}


def _first_restored(polls: Iterable[Poll], process: str) -> dict[str, tuple[float, float | None]]:
    """Per task: the oldest poll of ``polls`` that lists it, and its restored total then."""
    first: dict[str, tuple[float, float | None]] = {}
    for poll, sidecar in _instance_polls(polls, process):
        for x in sidecar.tasks:
            if x.task is not None and x.task not in first:
                first[x.task] = (poll.t, x.restored_total)
    return first


def _task_rate(
    first: tuple[float, float | None] | None, t: float, restored_total: float | None
) -> float | None:
    """Records/s restored since the oldest poll of the window that listed the task."""
    if first is None or first[1] is None or restored_total is None or t == first[0]:
        return None
    return (restored_total - first[1]) / (t - first[0])
