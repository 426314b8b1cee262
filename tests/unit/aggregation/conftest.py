"""Every detector case judged through the job's real path, without a JVM: each case's
snapshots as JSON -> ``facts.decode`` -> ``group.step`` (windows, every rule,
hysteresis), shared by the detector test modules."""

from collections import defaultdict
from dataclasses import dataclass, field

import pytest

from agent.aggregation.judging.board import gauge_row
from agent.aggregation.judging.facts import Poll, decode
from agent.aggregation.judging.group import GroupState, step
from agent.aggregation.judging.hysteresis import Candidate, Coverage
from agent.aggregation.judging.results import GaugeRow
from agent.aggregation.judging.rules import CLUSTER_RULES
from agent.config.schema import DetectorsConfig
from tests.unit.aggregation.cases import Case
from tests.unit.aggregation.cases import assignment_size_risk as assignment_size
from tests.unit.aggregation.cases import consumer_status as status
from tests.unit.aggregation.cases import copartition_mismatch as copartition
from tests.unit.aggregation.cases import hot_partitions as hot
from tests.unit.aggregation.cases import idle_members as idle
from tests.unit.aggregation.cases import internal_topic_budget as budget
from tests.unit.aggregation.cases import no_live_consumers as no_live
from tests.unit.aggregation.cases import partition_skew as skew
from tests.unit.aggregation.cases import rebalance_loop as loop
from tests.unit.aggregation.cases import restore_stalled as restore
from tests.unit.aggregation.cases import state_store_footprint as footprint
from tests.unit.aggregation.cases import stream_threads_dead as threads
from tests.unit.aggregation.cases import threads_fewer_than_tasks as fewer_threads
from tests.unit.aggregation.cases import topology_names as names

ALL_CASES: list[Case] = [
    *hot.CASES,
    *skew.CASES,
    *restore.CASES,
    *threads.CASES,
    *no_live.CASES,
    *loop.CASES,
    *idle.CASES,
    *assignment_size.CASES,
    *budget.CASES,
    *budget.BROKER_CASES,
    *names.CASES,
    *copartition.CASES,
    *fewer_threads.CASES,
    *footprint.CASES,
    *status.CASES,
]


@dataclass
class EvaluationResult:
    candidates: list[Candidate] = field(default_factory=list)
    coverage: list[Coverage] = field(default_factory=list)
    gauges: list[GaugeRow] = field(default_factory=list)  # each series' newest poll's


@dataclass
class DetectorResults:
    result: EvaluationResult
    by_group: dict[str, list[Candidate]]
    coverage: dict[str, list[Coverage]]


def run_cases(cases: list[Case], params: DetectorsConfig) -> DetectorResults:
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "every case needs its own group name"
    groups: dict[tuple[str, str], list[tuple[str, Poll]]] = defaultdict(list)
    clusters: dict[tuple[str, str], dict[float, Poll]] = defaultdict(dict)
    for case in cases:
        for snapshot in case.snapshots:
            key, poll = decode(snapshot.to_json())
            groups[(key.cluster, key.group)].append((key.agent, poll))
            if poll.brokers:
                clusters[(key.cluster, key.agent)].setdefault(poll.t, poll)
    result = EvaluationResult()
    for (cluster, group), polls in groups.items():
        _judge(result, GroupState(), polls, params, cluster, group)
    for (cluster, agent), by_time in clusters.items():
        polls = [(agent, by_time[t]) for t in sorted(by_time)]
        _judge(result, GroupState(), polls, params, cluster, "", CLUSTER_RULES)
    by_group: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in result.candidates:
        by_group[candidate.group].append(candidate)
    coverage: dict[str, list[Coverage]] = defaultdict(list)
    for c in result.coverage:
        coverage[c.group].append(c)
    return DetectorResults(result, by_group, coverage)


def _judge(
    result: EvaluationResult,
    state: GroupState,
    polls: list[tuple[str, Poll]],
    params: DetectorsConfig,
    cluster: str,
    group: str,
    rules: tuple = (),  # type: ignore[type-arg]
) -> None:
    outcome = (
        step(state, polls, params, cluster=cluster, group=group, rules=rules)
        if rules
        else step(state, polls, params, cluster=cluster, group=group)
    )
    result.candidates += outcome.candidates
    result.coverage += outcome.coverage
    newest: dict[str, list[GaugeRow]] = {}
    for agent, verdict in outcome.verdicts:
        newest[agent] = [gauge_row(g, cluster, group) for g in verdict.gauges]
    for rows in newest.values():
        result.gauges += rows


@pytest.fixture(scope="session")
def detector_results() -> DetectorResults:
    # The defaults, with assignment_size_risk's trend turned on (off by default) so its
    # cases judge it: one hour, as a user who enables it would.
    # state_store_footprint's changelog growth likewise, over 20 minutes.
    return run_cases(
        ALL_CASES,
        DetectorsConfig(assignment_growth_window=3600.0, changelog_growth_window=1200.0),
    )
