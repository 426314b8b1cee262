"""The streaming job judges only its micro-batch's newest polls, against a history it
reads partly (the big tables only at those polls or a short look-back before them,
``evaluate.partition_look_back``). That must never change a verdict: at any poll,
evaluating that poll alone gives the candidates, coverage and gauges that evaluating
every poll of the recording (replay) gives there. Checked on the recordings of the
real live scenarios, at the polls where some rule held and at each series' last poll.
"""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from typing import TypeVar

import pytest
from pyspark.sql import DataFrame, SparkSession

from agent.aggregation.evaluate import EvaluationResult, evaluate, snapshot_tables
from agent.aggregation.hysteresis import Candidate, Coverage
from agent.aggregation.results import GaugeRow
from agent.aggregation.tables import KEYS, Tables
from agent.config.schema import DetectorsConfig

pytestmark = pytest.mark.integration

Key = tuple[str, str, str, float]
Judged = TypeVar("Judged", Candidate, Coverage)


@pytest.fixture(scope="module")
def every_poll(
    recorded_snapshots: DataFrame, recorded_tables: Tables, recorded_params: DetectorsConfig
) -> EvaluationResult:
    return evaluate(recorded_tables, recorded_snapshots.select(*KEYS), recorded_params)


def _chosen_polls(result: EvaluationResult, recorded_snapshots: DataFrame) -> set[Key]:
    """Per series and detector, the first and the last poll its rule held at; and
    each series' last poll (the one a micro-batch judges)."""
    held: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for c in result.candidates:
        held[(c.cluster, c.group, c.agent, c.kind)].append(c.t)
    chosen = {(*series[:3], t) for series, times in held.items() for t in (min(times), max(times))}
    last = recorded_snapshots.groupBy("cluster", "group", "agent").max("t").collect()
    chosen |= {(r[0], r[1], r[2], float(r[3])) for r in last}
    return chosen


def test_a_poll_judged_alone_gets_the_verdict_a_replay_gives_it(
    spark: SparkSession,
    recorded_snapshots: DataFrame,
    every_poll: EvaluationResult,
    recorded_params: DetectorsConfig,
) -> None:
    chosen = _chosen_polls(every_poll, recorded_snapshots)
    kinds = {c.kind for c in every_poll.candidates}
    assert len(kinds) >= 4, f"the recordings should make most rules hold somewhere: {kinds}"

    evaluations = spark.createDataFrame(sorted(chosen), list(KEYS))
    alone = evaluate(
        snapshot_tables(recorded_snapshots, evaluations, recorded_params),
        evaluations,
        recorded_params,
    )

    assert _in_order(alone.candidates) == _in_order(_at(every_poll.candidates, chosen))
    assert _in_order(alone.coverage) == _in_order(_at(every_poll.coverage, chosen))
    # Gauges describe each series' newest evaluation: its last poll in both runs.
    assert _gauges_in_order(alone.gauges) == _gauges_in_order(every_poll.gauges)


def _at(items: Iterable[Judged], chosen: set[Key]) -> list[Judged]:
    return [x for x in items if (x.cluster, x.group, x.agent, x.t) in chosen]


def _in_order(items: Iterable[object]) -> list[object]:
    return sorted(items, key=repr)


def _gauges_in_order(gauges: Iterable[GaugeRow]) -> list[object]:
    """Loads are sums of rates, and the two evaluations partition their rows differently:
    a sum of doubles taken in another order may differ in its last bits, nothing more."""
    return _in_order(replace(g, value=float(f"{g.value:.12g}")) for g in gauges)
