"""The job builds its evaluation's plan once (``template``) and re-binds it to each
micro-batch's data. Re-binding must change nothing but the data: on the recordings of
the real live scenarios, the template gives at every poll exactly what building the plan
for that evaluation gives, at the polls a micro-batch judges too, twice in a row (its
stages are checkpointed again per call, never reused from the last one). And the bound
plans keep the partitioning they were planned with: no operator shuffles again.
"""

import re
from collections.abc import Iterable

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from agent.aggregation.evaluate import (
    EvaluationResult,
    evaluate,
    evaluation_frame,
    snapshot_tables,
)
from agent.aggregation.tables import KEYS, SERIES, Tables
from agent.aggregation.template import EvaluationTemplate, evaluation_input, evaluation_template
from agent.aggregation.windows import recording_stages
from agent.config.schema import DetectorsConfig

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def template(spark: SparkSession, recorded_params: DetectorsConfig) -> EvaluationTemplate:
    built = evaluation_template(spark, recorded_params)
    assert built is not None, "the plan helper should build with the JDK the project requires"
    return built


def test_the_plan_built_once_judges_every_poll_as_the_plan_built_for_it(
    recorded_snapshots: DataFrame,
    recorded_tables: Tables,
    recorded_params: DetectorsConfig,
    template: EvaluationTemplate,
) -> None:
    built_now = evaluate(recorded_tables, recorded_snapshots.select(*KEYS), recorded_params)
    bound = template.evaluate(recorded_tables, recorded_snapshots.select(*KEYS))

    kinds = {c.kind for c in built_now.candidates}
    assert len(kinds) >= 4, f"the recordings should make most rules hold somewhere: {kinds}"
    assert _in_order(bound.candidates) == _in_order(built_now.candidates)
    assert _in_order(bound.coverage) == _in_order(built_now.coverage)
    assert _in_order(bound.gauges) == _in_order(built_now.gauges)


def test_each_binding_judges_its_own_polls(
    spark: SparkSession,
    recorded_snapshots: DataFrame,
    recorded_tables: Tables,
    recorded_params: DetectorsConfig,
    template: EvaluationTemplate,
) -> None:
    series = recorded_snapshots.groupBy(*SERIES).agg(
        F.min("t").alias("first"), F.max("t").alias("last")
    )
    rows = series.collect()
    last = spark.createDataFrame([(*r[:3], r["last"]) for r in rows], list(KEYS))
    # Early polls: most rules cannot judge yet, so what is judged differs from the last.
    early = spark.createDataFrame([(*r[:3], r["first"] + 60.0) for r in rows], list(KEYS))

    def tables(evaluations: DataFrame) -> Tables:
        return snapshot_tables(recorded_snapshots, evaluations, recorded_params)

    at_last = _judged(template.evaluate(tables(last), last))
    at_early = _judged(template.evaluate(tables(early), early))
    again = _judged(template.evaluate(tables(last), last))

    assert at_last != at_early
    assert at_last == _judged(evaluate(tables(last), last, recorded_params)) == again
    assert at_early == _judged(evaluate(tables(early), early, recorded_params))


def test_bound_plans_shuffle_nothing_past_the_evaluation_times(
    spark: SparkSession,
    recorded_snapshots: DataFrame,
    recorded_tables: Tables,
    recorded_params: DetectorsConfig,
    template: EvaluationTemplate,
) -> None:
    """The tables come partitioned by (cluster, group) and every stage keeps that,
    bound or built now: a leaf whose partitioning or size is lost makes the operators
    above it shuffle (79 exchanges, 170 Spark stages per evaluation, when it happened)."""
    evaluations = recorded_snapshots.select(*KEYS)
    plans = template._java.physicalPlans(
        [
            *(df._jdf for df in recorded_tables.named().values()),
            evaluation_input(evaluations)._jdf,
        ]
    )
    bound = [_exchanges(str(plan)) for plan in plans]

    with recording_stages() as stages:
        final = evaluation_frame(recorded_tables, evaluations, recorded_params)
    built_now = [_exchanges(str(df._jdf.queryExecution().executedPlan())) for df, _ in stages]
    built_now.append(_exchanges(str(final._jdf.queryExecution().executedPlan())))

    assert len(bound) == template.stages + 1 == len(built_now)
    # Stage 0 partitions the evaluation times like the recorded_snapshots: a bound input is a leaf
    # of its own, while these, taken from the recorded snapshots, already are.
    assert bound[1:] == built_now[1:] == [0] * template.stages


_EXCHANGE = re.compile(r"\bExchange (?:hashpartitioning|SinglePartition|rangepartitioning)")
# What follows "Exchange hashpartitioning" when it partitions by (cluster, agent[, t]).
_BY_CLUSTER_AND_AGENT = re.compile(r"\(cluster#\d+, agent#\d+[,)]")


def _exchanges(plan: str) -> int:
    """Exchanges except those of the broker rule (broker_partition_budget): it judges the
    cluster's facts once per agent and poll, one row per poll however many groups carry
    them, so it alone repartitions, by cluster and agent, never by group."""
    return len(
        [
            found
            for found in _EXCHANGE.finditer(plan)
            if not _BY_CLUSTER_AND_AGENT.match(plan, found.end())
        ]
    )


def _judged(result: EvaluationResult) -> tuple[list[object], list[object], list[object]]:
    return (
        _in_order(result.candidates),
        _in_order(result.coverage),
        _in_order(result.gauges),
    )


def _in_order(items: Iterable[object]) -> list[object]:
    return sorted(items, key=repr)
