"""One evaluation of every detector case through the job's real path (JSON -> parse ->
tables -> detectors), shared by the detector test modules."""

from collections import defaultdict
from dataclasses import dataclass

import pytest
from pyspark.sql import SparkSession

from agent.aggregation.evaluate import EvaluationResult, evaluate, prepare, snapshot_tables
from agent.aggregation.hysteresis import Candidate, Coverage
from agent.aggregation.parse import parse_snapshots
from agent.aggregation.tables import KEYS
from agent.config.schema import DetectorsConfig
from tests.unit.aggregation.cases import Case
from tests.unit.aggregation.cases import assignment_size_risk as assignment_size
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
]


@dataclass
class DetectorResults:
    result: EvaluationResult
    by_group: dict[str, list[Candidate]]
    coverage: dict[str, list[Coverage]]


def run_cases(spark: SparkSession, cases: list[Case], params: DetectorsConfig) -> DetectorResults:
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "every case needs its own group name"
    rows = [(s.to_json().decode(), c.name) for c in cases for s in c.snapshots]
    parsed = parse_snapshots(spark.createDataFrame(rows, ["value", "origin"]))
    snapshots = prepare(parsed.parsed)
    evaluations = snapshots.select(*KEYS)
    result = evaluate(snapshot_tables(snapshots, evaluations, params), evaluations, params)
    by_group: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in result.candidates:
        by_group[candidate.group].append(candidate)
    coverage: dict[str, list[Coverage]] = defaultdict(list)
    for c in result.coverage:
        coverage[c.group].append(c)
    return DetectorResults(result, by_group, coverage)


@pytest.fixture(scope="session")
def detector_results(spark: SparkSession) -> DetectorResults:
    # The defaults, with assignment_size_risk's trend turned on (off by default) so its
    # cases judge it: one hour, as a user who enables it would.
    # state_store_footprint's changelog growth likewise, over 20 minutes.
    return run_cases(
        spark,
        ALL_CASES,
        DetectorsConfig(assignment_growth_window=3600.0, changelog_growth_window=1200.0),
    )
