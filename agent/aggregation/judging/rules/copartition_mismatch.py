"""copartition_mismatch (warning, critical): one sub-topology reads topics of different
partition counts, so a key's records from two topics meet in different tasks.

Sources from the topology the snapshot carries, else from the active tasks; counts
from the snapshot's topics. Holds when a sub-topology reads two known counts that
differ, at every judged poll for ``copartition_mismatch_after``; critical when the
group processes nothing, a warning while its tasks run.

The spec, with what Kafka itself does about a mismatch, is
docs/rules/copartition_mismatch.md.
"""

from collections.abc import Sequence
from itertools import pairwise
from typing import NamedTuple

from agent.aggregation.judging.facts import Member, Poll, Subtopology
from agent.aggregation.judging.rules.base import Evaluation, Found, Judgement
from agent.model.findings import FindingSubject
from agent.model.records import JsonObject

KIND = "copartition_mismatch"


class _Reads(NamedTuple):
    """The topics one sub-topology reads, with their partition counts where known."""

    subtopology: str
    known: tuple[tuple[str, int], ...]  # (topic, partitions), by topic
    unknown: tuple[str, ...]  # sorted

    @property
    def counts(self) -> list[int]:
        """The distinct known counts, smallest first."""
        return sorted({n for _, n in self.known})

    @property
    def mismatched(self) -> bool:
        return len({n for _, n in self.known}) > 1

    @property
    def undecided(self) -> bool:
        """No mismatch among the known counts, but an unknown one could be one (a single
        topic has nothing to be compared with: fine whatever its count)."""
        return (
            not self.mismatched and len(self.known) + len(self.unknown) > 1 and bool(self.unknown)
        )


class _Assessment(NamedTuple):
    """A judged poll: its sub-topologies that mismatch (none: it is fine)."""

    mismatches: tuple[_Reads, ...]
    from_topology: bool


def judge(ev: Evaluation) -> Judgement:
    p, now = ev.params, ev.now
    assessment = _assess(now)
    if assessment is None:
        return Judgement(KIND, judged=False)
    if not assessment.mismatches:
        return Judgement(KIND, judged=True)
    run_since = _run_since(ev.window.polls)
    if now.t - run_since < p.copartition_mismatch_after:
        return Judgement(KIND, judged=True)
    return Judgement(KIND, judged=True, found=(_found(ev, assessment, run_since),))


# Assessments by what they read: polls share their members and topology with the poll
# before while unchanged, and the topics' partition counts rarely change (their sizes do),
# so most polls are assessed as one before.
_Facts = tuple[int, int, str, bool, tuple[tuple[str, int], ...]]
_Parts = tuple[tuple[Member, ...], tuple[Subtopology, ...]]
_assessed: dict[_Facts, tuple[_Parts, "_Assessment | None"]] = {}
_ASSESSED_KEPT = 1024


def _assess(poll: Poll) -> _Assessment | None:
    """None when the poll cannot be judged: its sources unknown, or no mismatch while
    some count is unknown."""
    counts = tuple((t.name, t.partitions) for t in poll.topics)
    key = (id(poll.members), id(poll.subtopologies), poll.state, poll.is_streams, counts)
    hit = _assessed.get(key)
    if hit is not None and hit[0][0] is poll.members and hit[0][1] is poll.subtopologies:
        return hit[1]
    assessment = _assess_anew(poll, dict(counts))
    if len(_assessed) >= _ASSESSED_KEPT:
        _assessed.clear()
    # Held with the parts it was worked out from: their ids stay theirs.
    _assessed[key] = ((poll.members, poll.subtopologies), assessment)
    return assessment


def _assess_anew(poll: Poll, counts: dict[str, int]) -> _Assessment | None:
    from_topology = True
    sources = _topology_sources(poll)
    if not sources:
        from_topology = False
        sources = _task_sources(poll) if _tasks_known(poll) else {}
    if not sources:
        return None
    reads = [_reads(sub, topics, counts) for sub, topics in sources.items()]
    mismatches = tuple(sorted((r for r in reads if r.mismatched), key=_subtopology_order))
    if not mismatches and any(r.undecided for r in reads):
        return None
    return _Assessment(mismatches, from_topology)


def _topology_sources(poll: Poll) -> dict[str, set[str]]:
    """The topics each sub-topology reads, as the topology the snapshot carries says."""
    sources: dict[str, set[str]] = {}
    for s in poll.subtopologies:
        if s.reads:
            sources.setdefault(s.id, set()).update(s.reads)
    return sources


def _tasks_known(poll: Poll) -> bool:
    """Every member's active tasks are known, and there are some."""
    return (
        poll.is_streams
        and poll.stable
        and poll.member_count > 0
        and all(m.decoded for m in poll.members)
        and any(m.active for m in poll.members)
    )


def _task_sources(poll: Poll) -> dict[str, set[str]]:
    """The topics each sub-topology reads, as its active tasks show (a task id is
    ``<sub-topology>_<partition>``)."""
    sources: dict[str, set[str]] = {}
    for m in poll.members:
        for task in m.active:
            if task.partitions:
                sources.setdefault(task.subtopology, set()).update(
                    tp.topic for tp in task.partitions
                )
    return sources


def _reads(subtopology: str, topics: set[str], counts: dict[str, int]) -> _Reads:
    known = []
    unknown = []
    for topic in sorted(topics):
        # A count of 0 is the agent's "no metadata for it": unknown.
        n = counts.get(topic, 0)
        if n > 0:
            known.append((topic, n))
        else:
            unknown.append(topic)
    return _Reads(subtopology, tuple(known), tuple(unknown))


def _subtopology_order(reads: _Reads) -> tuple[int, str]:
    """Numeric ids in number order (``2`` before ``10``); named ones first, by name."""
    sub = reads.subtopology
    if sub.isascii() and sub.isdigit():
        return int(sub), sub
    return -1, sub


def _run_since(polls: Sequence[Poll]) -> float:
    """When the run of judged polls with a mismatch that the newest one ends began (polls
    not judged neither count nor break it)."""
    since = polls[-1].t
    last = polls[-1]  # the poll assessed last, mismatched
    for i in range(len(polls) - 2, -1, -1):
        poll = polls[i]
        # A poll shares its members, topics and topology with the one before when they
        # are equal: such a poll is assessed as the one after it was.
        if not _same_facts(poll, last):
            assessment = _assess(poll)
            if assessment is None:
                continue
            if not assessment.mismatches:
                break
            last = poll
        since = poll.t
    return since


def _same_facts(a: Poll, b: Poll) -> bool:
    return (
        a.members is b.members
        and a.topics is b.topics
        and a.subtopologies is b.subtopologies
        and a.state == b.state
        and a.is_streams == b.is_streams
    )


def _found(ev: Evaluation, assessment: _Assessment, run_since: float) -> Found:
    now = ev.now
    active_tasks = len(now.active_tasks)
    # Nothing is processed: every assignment known, none with a task (a refused KIP-1071
    # group whose instances stopped on the refusal has no member at all).
    stuck = all(m.decoded for m in now.members) and active_tasks == 0
    if not assessment.from_topology:
        sources_from = "active tasks"
    elif now.group_type == "streams":
        sources_from = "broker topology"
    else:
        sources_from = "configured topology"
    evidence: JsonObject = {
        "sources_from": sources_from,
        "subtopologies": [_mismatch_evidence(r) for r in assessment.mismatches],
        "group_state": now.state,
        "group_type": now.group_type,
        "members": now.member_count,
        "active_tasks": active_tasks,
        "mismatched_for_seconds": now.t - run_since,
    }
    return Found(
        KIND,
        "critical" if stuck else "warning",
        FindingSubject(),
        _explanation(ev.group, assessment.mismatches, stuck, now.group_type),
        evidence,
        since=run_since,
    )


class _Partial(NamedTuple):
    """A range of a sub-topology's tasks that read only some of its topics."""

    first_task: str
    last_task: str
    tasks: int
    reads_only: list[str]


def _partial_tasks(reads: _Reads) -> list[_Partial]:
    """Between two successive counts c < c', tasks ``<s>_c`` to ``<s>_(c'-1)`` read only the
    topics with at least c' partitions (as Kafka Streams' partition grouper deals them)."""
    counts = reads.counts
    sub = reads.subtopology
    return [
        _Partial(
            f"{sub}_{low}",
            f"{sub}_{high - 1}",
            high - low,
            [topic for topic, n in reads.known if n >= high],
        )
        for low, high in pairwise(counts)
    ]


def _mismatch_evidence(reads: _Reads) -> JsonObject:
    return {
        "subtopology": reads.subtopology,
        "topics": [{"topic": topic, "partitions": n} for topic, n in reads.known],
        "unknown_topics": list(reads.unknown),
        "tasks_reading_some": [dict(r._asdict()) for r in _partial_tasks(reads)],
    }


def _explanation(group: str, mismatches: Sequence[_Reads], stuck: bool, group_type: str) -> str:
    if stuck and group_type == "streams":
        consequence = (
            "; the group has no active task: the broker refuses a join of topics with "
            "different partition counts (INCORRECTLY_PARTITIONED_TOPICS), the members' "
            "stream threads fail with a TopologyException and nothing is processed"
        )
    elif stuck:
        consequence = "; the group has no active task: nothing is processed"
    else:
        consequence = (
            "; a key's records from these topics meet in different tasks, so a join there "
            "misses matches and stateful processing splits a key's state"
        )
    return (
        f"group {group}: "
        + "; ".join(_one_mismatch(r) for r in mismatches)
        + consequence
        + "; give the topics one partition count: repartition() one side to the other's "
        "count, or add partitions to the smaller topic (adding partitions moves keys)"
    )


def _one_mismatch(reads: _Reads) -> str:
    topics = ", ".join(f"{topic} ({n})" for topic, n in reads.known)
    partial = "; ".join(
        (f"task {r.first_task}" if r.tasks == 1 else f"tasks {r.first_task} to {r.last_task}")
        + " read only "
        + ", ".join(r.reads_only)
        for r in _partial_tasks(reads)
    )
    return f"sub-topology {reads.subtopology} reads {topics}: {partial}"
