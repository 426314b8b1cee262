"""The evaluation times a micro-batch judges, made in the JVM from a Python list."""

import pytest
from pyspark.sql import SparkSession

from agent.aggregation.template import evaluation_times

CASES = [
    pytest.param([], id="nothing-to-evaluate"),
    pytest.param([("prod", "orders", "agent-1", 1_779_000_000.123)], id="one-poll"),
    pytest.param(
        [
            # Poll times are float seconds: every bit of them must survive the trip.
            ("prod", "orders", "agent-1", 1_779_000_000.1234567),
            ("prod", "orders", "agent-1", 1_779_000_010.0000001),
            # Names are whatever a cluster and a group are called: quotes, unicode, dots.
            ('c"1', "grüße.app-v2", "a\\b", 0.1 + 0.2),
        ],
        id="exact-floats-and-odd-names",
    ),
]


@pytest.mark.parametrize("keys", CASES)
def test_the_rows_are_the_keys_given(
    spark: SparkSession, keys: list[tuple[str, str, str, float]]
) -> None:
    frame = evaluation_times(spark, keys)
    assert frame.columns == ["cluster", "group", "agent", "t"]
    assert sorted(tuple(row) for row in frame.collect()) == sorted(keys)


def test_no_python_worker_reads_them(spark: SparkSession) -> None:
    """A Python list through createDataFrame is a Python RDD: Python workers in the job."""
    frame = evaluation_times(spark, [("prod", "orders", "agent-1", 1.0)])
    plan = str(frame._jdf.queryExecution().executedPlan())
    assert "ExistingRDD" not in plan, plan
    assert "Range" in plan, plan
