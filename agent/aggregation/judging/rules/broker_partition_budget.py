"""broker_partition_budget (info, warning): brokers hosting partition replicas near or
over ``partition_replicas_per_broker``, a finding of the cluster (its group empty).

Judged once per central agent and poll from its all-topics Metadata: info from
``budget_approach_ratio`` of the budget, a warning over it, after ``budget_hold``.

The spec is docs/rules/broker_partition_budget.md.
"""

from collections.abc import Sequence
from typing import NamedTuple

from agent.aggregation.judging.facts import BrokerLoad, Poll
from agent.aggregation.judging.rules.base import Evaluation, Found, Judgement, rounded
from agent.config.schema import DetectorsConfig
from agent.model.findings import FindingSubject
from agent.model.records import JsonObject

KIND = "broker_partition_budget"


class _Broker(NamedTuple):
    """One broker's load as evidence shows it."""

    load: BrokerLoad
    streams_internal_share: float
    budget_ratio: float | None  # None: the budget is off

    def evidence(self) -> JsonObject:
        return {
            "broker": self.load.broker_id,
            "replicas": self.load.replicas,
            "leaders": self.load.leaders,
            "streams_internal_replicas": self.load.streams_internal_replicas,
            "streams_internal_share": self.streams_internal_share,
            "budget_ratio": self.budget_ratio,
        }


def judge(ev: Evaluation) -> Judgement:
    p, now = ev.params, ev.now
    if not now.brokers:
        return Judgement(KIND, judged=False)
    if not _near(now, p):
        return Judgement(KIND, judged=True)
    run_since = _run_since(ev.window.polls, p)
    if now.t - run_since < p.budget_hold:
        return Judgement(KIND, judged=True)
    return Judgement(KIND, judged=True, found=(_found(ev, run_since),))


def _near(poll: Poll, p: DetectorsConfig) -> bool:
    return bool(_brokers_near(poll.brokers, p))


def _brokers_near(brokers: Sequence[BrokerLoad], p: DetectorsConfig) -> list[BrokerLoad]:
    """The brokers at or over the approach share of the budget, most replicas first (ties:
    the higher broker id first); none when the budget is off."""
    budget = p.partition_replicas_per_broker
    if budget <= 0:
        return []
    near = [b for b in brokers if b.replicas >= p.budget_approach_ratio * budget]
    return sorted(near, key=lambda b: (b.replicas, b.broker_id), reverse=True)


def _run_since(polls: Sequence[Poll], p: DetectorsConfig) -> float:
    """When the run of polls with a broker near the budget that the newest one ends began
    (polls without broker loads, if any, neither count nor break it)."""
    now = polls[-1]
    since = now.t
    for i in range(len(polls) - 2, -1, -1):
        poll = polls[i]
        if not poll.brokers:
            continue
        # The loads change slowly, and a poll shares them with the one before when equal.
        if poll.brokers is not now.brokers and not _near(poll, p):
            break
        since = poll.t
    return since


def _found(ev: Evaluation, run_since: float) -> Found:
    p, now = ev.params, ev.now
    budget = p.partition_replicas_per_broker
    near = [_broker(b, budget) for b in _brokers_near(now.brokers, p)]
    over = [b for b in near if b.load.replicas > budget]
    totals = now.cluster_totals
    topics = totals.topics if totals is not None else None
    partitions = totals.partitions if totals is not None else None
    replicas = totals.replicas if totals is not None else None
    evidence: JsonObject = {
        "budget_replicas_per_broker": budget,
        "brokers": [b.evidence() for b in near],
        "brokers_over_budget": len(over),
        "broker_count": len(now.brokers),
        "total_topics": topics,
        "total_partitions": partitions,
        "total_replicas": replicas,
        "held_for_seconds": now.t - run_since,
    }
    most = near[0]
    explanation = (
        f"{len(near)} of {len(now.brokers)} brokers host partition replicas "
        f"{'over' if over else 'near'} the budget of {budget} per broker; the most: broker "
        f"{most.load.broker_id} with {most.load.replicas} replicas ({most.load.leaders} "
        f"leaders), {_percent(most.streams_internal_share)} % of them "
        "internal topics of Kafka Streams applications; "
        f"the cluster has {_number(topics)} topics, {_number(partitions)} partitions, "
        f"{_number(replicas)} replicas: add brokers, delete unused topics, "
        "shrink Streams internal topics (internal_topic_budget findings), or raise the budget"
    )
    return Found(
        KIND,
        "warning" if over else "info",
        FindingSubject(),
        explanation,
        evidence,
        since=run_since,
    )


def _broker(load: BrokerLoad, budget: int) -> _Broker:
    share = load.streams_internal_replicas / max(load.replicas, 1)
    return _Broker(
        load,
        rounded(share) or 0.0,
        rounded(load.replicas / budget) if budget > 0 else None,
    )


def _number(value: int | None) -> str:
    """An unknown count as the finding always showed it."""
    return "null" if value is None else str(value)


def _percent(share: float) -> int:
    """``share`` in whole percent, halves up (as findings round)."""
    return int(rounded(share * 100, 0) or 0)
