"""Every rule, and one poll judged by all of them.

Each rule is a module with ``KIND`` and ``judge(ev: Evaluation) -> Judgement``
(see ``base``); ``GROUP_RULES`` judge one group's series, in this order (a rule
reads the judgements of those before it it leaves something to: ``precedence``), and
``CLUSTER_RULES`` judge
the facts every group of a cluster shares (each broker's replicas), once per
agent and poll. Nothing here imports pyspark: the rules are plain Python,
tested without a JVM; the job carries them inside Spark's stateful operator.
"""

from dataclasses import dataclass, replace

from agent.aggregation.judging.results import INSTANCE_LOAD, PARTITION_RATE, TASK_RATE, THREAD_LOAD
from agent.aggregation.judging.rules import (
    assignment_size_risk,
    broker_partition_budget,
    consumer_status,
    copartition_mismatch,
    hot_partitions_colocated,
    idle_members,
    internal_topic_budget,
    no_live_consumers,
    partition_skew,
    rebalance_loop,
    restore_stalled,
    state_store_footprint,
    stream_threads_dead,
    threads_fewer_than_tasks,
)
from agent.aggregation.judging.rules.base import Evaluation, Gauge, Judgement, Rule
from agent.aggregation.judging.rules.rates import Rates
from agent.aggregation.judging.rules.topology_names import with_subtopology_names
from agent.aggregation.judging.window import SeriesWindow
from agent.config.schema import DetectorsConfig
from agent.model.findings import Finding

# Each after the rules it leaves something to (``precedence.LEAVES_TO``).
GROUP_RULES: tuple[Rule, ...] = (
    hot_partitions_colocated,
    partition_skew,
    restore_stalled,
    rebalance_loop,
    stream_threads_dead,
    no_live_consumers,
    idle_members,
    assignment_size_risk,
    internal_topic_budget,
    copartition_mismatch,
    threads_fewer_than_tasks,
    state_store_footprint,
    consumer_status,
)
CLUSTER_RULES: tuple[Rule, ...] = (broker_partition_budget,)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Every rule's judgement of one poll, and the gauges it leaves for /metrics."""

    t: float
    judgements: tuple[Judgement, ...]
    # The loads behind the load gauges (None: no load gauges, rules other than GROUP_RULES).
    rates: Rates | None = None

    @property
    def gauges(self) -> tuple[Gauge, ...]:
        """The load gauges, then each rule's. Built when read: only a series' newest
        verdict's reach /metrics, and a replay judges every poll."""
        gauges = load_gauges_of(self.rates) if self.rates is not None else []
        for judgement in self.judgements:
            gauges += judgement.gauges
        return tuple(gauges)


def judge_poll(
    window: SeriesWindow,
    params: DetectorsConfig,
    group: str,
    rules: tuple[Rule, ...] = GROUP_RULES,
    open_findings: tuple[Finding, ...] = (),
) -> Verdict:
    ev = Evaluation(window, params, group, open_findings=open_findings)
    subtopologies = window.now.subtopologies
    for rule in rules:
        ev.judging = rule.KIND
        judgement = rule.judge(ev)
        if subtopologies and judgement.found:
            judgement = replace(
                judgement,
                found=tuple(with_subtopology_names(f, subtopologies) for f in judgement.found),
            )
        ev.judged[judgement.kind] = judgement
    rates = ev.rates if rules is GROUP_RULES else None
    return Verdict(window.t, tuple(ev.judged.values()), rates)


def load_gauges(ev: Evaluation) -> list[Gauge]:
    """Partition rates, task rates, thread and instance loads at the judged poll."""
    return load_gauges_of(ev.rates)


def load_gauges_of(rates: Rates) -> list[Gauge]:
    """Partition rates, task rates, thread and instance loads of a poll's ``rates``."""
    gauges = [
        Gauge(PARTITION_RATE, p.rate, topic=p.topic, partition=p.partition)
        for p in rates.partitions
        if p.rate is not None
    ]
    task_rates: dict[str, float] = {}
    streams_processes = set()
    for u in rates.units:
        if u.kind == "task":
            task_rates[u.unit] = task_rates.get(u.unit, 0.0) + u.rate
            streams_processes.add(u.process)
    gauges += [Gauge(TASK_RATE, rate, task=task) for task, rate in sorted(task_rates.items())]
    gauges += [
        Gauge(THREAD_LOAD, m.load, process=m.process, thread=m.member.thread)
        for m in rates.members
        if m.member.thread is not None
    ]
    # Instances of Kafka Streams apps only: a plain consumer's "instance" is a client id.
    gauges += [
        Gauge(INSTANCE_LOAD, i.load, process=i.process)
        for i in rates.instances
        if i.process in streams_processes
    ]
    return gauges
