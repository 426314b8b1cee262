"""internal_topic_budget (info, warning): a Kafka Streams application's internal topics
and their partition replicas against configured budgets.

Judged at each poll of a central agent (it lists every topic): info from
``budget_approach_ratio`` of a budget, a warning above one, after ``budget_hold``.

The spec is docs/rules/internal_topic_budget.md.
"""

from collections.abc import Sequence
from typing import NamedTuple

from agent.aggregation.judging.facts import Poll, Topic
from agent.aggregation.judging.rules.base import Evaluation, Found, Judgement, rounded
from agent.config.schema import DetectorsConfig
from agent.model.findings import FindingSubject
from agent.model.records import JsonObject

KIND = "internal_topic_budget"
_BIGGEST = 5


class _Usage(NamedTuple):
    """One poll's internal topics against the budgets."""

    internal: tuple[Topic, ...]
    topics_ratio: float | None  # None: that budget is off
    replicas_ratio: float | None

    @property
    def ratio(self) -> float | None:
        """The budget closest to being used up (None: both off)."""
        known = [r for r in (self.topics_ratio, self.replicas_ratio) if r is not None]
        return max(known, default=None)

    def near(self, p: DetectorsConfig) -> bool:
        ratio = self.ratio
        return ratio is not None and ratio >= p.budget_approach_ratio

    @property
    def over(self) -> list[str]:
        """The budgets exceeded, ``topics`` before ``replicas``."""
        return [
            name
            for name, ratio in (("topics", self.topics_ratio), ("replicas", self.replicas_ratio))
            if ratio is not None and ratio > 1
        ]


def judge(ev: Evaluation) -> Judgement:
    p, now = ev.params, ev.now
    if not _judged(now):
        return Judgement(KIND, judged=False)
    usage = _usage(now, p)
    if not usage.near(p):
        return Judgement(KIND, judged=True)
    run_since = _run_since(ev.window.polls, p)
    if now.t - run_since < p.budget_hold:
        return Judgement(KIND, judged=True)
    return Judgement(KIND, judged=True, found=(_found(ev, usage, run_since),))


def _judged(poll: Poll) -> bool:
    """A Kafka Streams group seen by an agent that lists every topic of the cluster."""
    return poll.is_streams and poll.all_topics_known


def _run_since(polls: Sequence[Poll], p: DetectorsConfig) -> float:
    """When the run of judged polls near a budget that the newest one ends began (polls
    not judged neither count nor break it)."""
    now = polls[-1]
    since = now.t
    for i in range(len(polls) - 2, -1, -1):
        poll = polls[i]
        if not _judged(poll):
            continue
        # Topics change rarely, and a poll shares its topics with the one before when
        # they are equal: those are near as the newest poll is, without counting them.
        if poll.topics is not now.topics and not _usage(poll, p).near(p):
            break
        since = poll.t
    return since


def _usage(poll: Poll, p: DetectorsConfig) -> _Usage:
    internal = tuple(t for t in poll.topics if t.internal_kind is not None)
    replicas = sum(_replicas(t) for t in internal)
    return _Usage(
        internal,
        _ratio(len(internal), p.internal_topics_per_application),
        _ratio(replicas, p.internal_replicas_per_application),
    )


def _replicas(topic: Topic) -> int:
    # A replication factor not known counts as 1: a lower bound.
    rf = topic.replication_factor
    return topic.partitions * (rf if rf is not None else 1)


def _ratio(count: int, budget: int) -> float | None:
    """``count`` over ``budget``; None when the budget is off (0)."""
    return count / budget if budget > 0 else None


def _budget(budget: int) -> int | None:
    return budget if budget > 0 else None


def _found(ev: Evaluation, usage: _Usage, run_since: float) -> Found:
    p, now = ev.params, ev.now
    internal = usage.internal
    over = usage.over
    counts = _counts(internal)
    biggest = _biggest(internal)
    evidence: JsonObject = {
        **counts,
        "budget_topics": _budget(p.internal_topics_per_application),
        "budget_replicas": _budget(p.internal_replicas_per_application),
        "budget_ratio": rounded(usage.ratio),
        "over": over,
        "by_kind": _by_kind(internal) if internal else None,
        "biggest": [_topic_evidence(t) for t in biggest] if internal else None,
        "replication_factor_unknown": (
            sum(1 for t in internal if t.replication_factor is None) if internal else None
        ),
        "held_for_seconds": now.t - run_since,
    }
    return Found(
        KIND,
        "warning" if over else "info",
        FindingSubject(),
        _explanation(ev, usage, counts, biggest),
        evidence,
        since=run_since,
    )


def _counts(internal: Sequence[Topic]) -> JsonObject:
    """The application's internal topics counted (the kinds' counts None without any)."""
    return {
        "internal_topics": len(internal),
        "internal_partitions": sum(t.partitions for t in internal),
        "internal_replicas": sum(_replicas(t) for t in internal),
        "repartition_topics": (
            sum(1 for t in internal if t.internal_kind == "repartition") if internal else None
        ),
        "changelog_topics": (
            sum(1 for t in internal if t.internal_kind == "changelog") if internal else None
        ),
    }


def _by_kind(internal: Sequence[Topic]) -> list[JsonObject]:
    """Topics, partitions and replicas per internal kind, by kind name."""
    kinds: dict[str, list[int]] = {}
    for t in internal:
        assert t.internal_kind is not None  # noqa: S101 - internal topics only
        counts = kinds.setdefault(t.internal_kind, [0, 0, 0])
        counts[0] += 1
        counts[1] += t.partitions
        counts[2] += _replicas(t)
    return [
        {"kind": kind, "topics": topics, "partitions": partitions, "replicas": replicas}
        for kind, (topics, partitions, replicas) in sorted(kinds.items())
    ]


def _biggest(internal: Sequence[Topic]) -> list[Topic]:
    """The internal topics with the most replicas, most first (ties: by name, descending)."""
    return sorted(internal, key=lambda t: (_replicas(t), t.name), reverse=True)[:_BIGGEST]


def _topic_evidence(t: Topic) -> JsonObject:
    return {
        "replicas": _replicas(t),
        "topic": t.name,
        "kind": t.internal_kind,
        "partitions": t.partitions,
        "replication_factor": t.replication_factor,
    }


def _explanation(
    ev: Evaluation, usage: _Usage, counts: JsonObject, biggest: Sequence[Topic]
) -> str:
    p = ev.params
    budgets = ", ".join(
        text
        for text in (
            f"{p.internal_topics_per_application} internal topics"
            if p.internal_topics_per_application > 0
            else "",
            f"{p.internal_replicas_per_application} partition replicas"
            if p.internal_replicas_per_application > 0
            else "",
        )
        if text
    )
    ratio = usage.ratio
    assert ratio is not None  # noqa: S101 - near a budget, so one is on
    state = "over" if usage.over else f"{_percent(ratio)} % of"
    topics = ", ".join(
        f"{t.name} ({t.internal_kind}, {t.partitions} partitions x "
        f"{t.replication_factor if t.replication_factor is not None else '?'})"
        for t in biggest
    )
    return (
        f"application {ev.group} has {counts['internal_topics']} internal topics "
        f"({counts['repartition_topics'] or 0} repartition, "
        f"{counts['changelog_topics'] or 0} changelog) with {counts['internal_partitions']} "
        f"partitions, {counts['internal_replicas']} partition replicas: {state} its budget "
        f"({budgets}); the biggest: {topics}; fewer key changes (each one adds a repartition "
        "topic), topology.optimization=all (source topics reused as table changelogs, "
        "repartitions merged), fewer input partitions, or a larger budget"
    )


def _percent(ratio: float) -> int:
    """``ratio`` in whole percent, halves up (as findings round)."""
    return int(rounded(ratio * 100, 0) or 0)
