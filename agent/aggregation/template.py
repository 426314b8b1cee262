"""The evaluation's plan, built once per job and re-bound to each micro-batch's data.

Building ``evaluate.evaluation_frame`` from Python is the same work every
batch: about 600 DataFrame calls, 20,000 py4j round trips and an analysis
per call, 9-26 s on the CI machine for a plan that never changes; only the
data under it does (docs/benchmarks.md, "Where a micro-batch's time goes").
So the job builds it once over empty stand-in inputs, recording every
``reused`` cut as a stage, and hands the plans to the JVM helper
(``resources/PlanTemplate.java``). Per batch one call binds the batch's
snapshots and evaluation times in place of the stand-ins, checkpoints the
stages in order and returns the final plan, which is collected as before.

The rules are the same code either way: the template is the plan
``evaluation_frame`` built, and ``tests/integration/test_template.py``
checks that both give the same results.
"""

import json
import logging
import threading
import weakref

from py4j.java_gateway import JavaClass  # type: ignore[import-untyped]
from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

from agent.aggregation.evaluate import (
    EvaluationResult,
    collected,
    evaluation_frame,
    input_leaves,
)
from agent.aggregation.parse import KEY_COLUMNS
from agent.aggregation.tables import Tables, empty_tables
from agent.aggregation.windows import recording_stages, reused
from agent.config.schema import DetectorsConfig

log = logging.getLogger(__name__)

HELPER_CLASS = "ksmon.spark.PlanTemplate"

EVALUATION_SCHEMA = T.StructType(
    [
        T.StructField("cluster", T.StringType()),
        T.StructField("group", T.StringType()),
        T.StructField("agent", T.StringType()),
        T.StructField("t", T.DoubleType()),
    ]
)


class TemplateUnavailableError(Exception):
    """The plan cannot be built once here (no helper on the classpath, or it refused it)."""


class EvaluationTemplate:
    """``evaluate.evaluate`` for one session and one set of detector settings, minus the
    plan building."""

    def __init__(self, spark: SparkSession, params: DetectorsConfig) -> None:
        helper = _helper_class(spark)

        def stand_in(plan: DataFrame) -> DataFrame:
            return ClassicDataFrame(helper.standIn(plan._jdf), spark)

        try:
            with recording_stages(stand_in) as recorded:
                # The inputs first: their leaves are what each binding replaces.
                tables = input_leaves(empty_tables(spark))
                evaluations = evaluation_input(spark.createDataFrame([], EVALUATION_SCHEMA))
                inputs = len(recorded)
                final = evaluation_frame(tables, evaluations, params)
            stages = recorded[inputs:]
            self._java = helper(
                [leaf._jdf for _plan, leaf in recorded[:inputs]],
                [plan._jdf for plan, _leaf in stages],
                [leaf._jdf for _plan, leaf in stages],
                final._jdf,
            )
        except Py4JError as e:
            raise TemplateUnavailableError(f"the plan helper refused the evaluation: {e}") from e
        self.spark = spark
        self.stages = len(stages)

    def evaluate(self, tables: Tables, evaluations: DataFrame) -> EvaluationResult:
        """As ``evaluate.evaluate``: ``tables`` from ``stored_tables`` or
        ``snapshot_tables``, ``evaluations`` with the series keys and ``t``."""
        inputs = [df._jdf for df in tables.named().values()]
        try:
            bound = self._java.bind([*inputs, evaluation_input(evaluations)._jdf])
            rows = ClassicDataFrame(bound, self.spark).collect()
        finally:
            self.spark.catalog.clearCache()
        return collected(rows)


def evaluation_times(spark: SparkSession, keys: list[tuple[str, str, str, float]]) -> DataFrame:
    """The (cluster, group, agent, t) to evaluate, as a DataFrame made in the JVM.

    ``createDataFrame`` of a Python list reads it through a Python RDD, which starts
    PySpark's Python workers in the job for this alone (seconds, in a cold job on a busy
    machine). One JSON string literal, parsed by Spark, makes the same rows; JSON keeps a
    float's exact value (``repr`` round-trips).
    """
    rows = [dict(zip(KEY_COLUMNS, key, strict=True)) for key in keys]
    parsed = F.from_json(F.lit(json.dumps(rows)), T.ArrayType(EVALUATION_SCHEMA))
    return spark.range(1).select(F.inline(parsed))


def evaluation_input(evaluations: DataFrame) -> DataFrame:
    """The evaluation times as the template's leaf: the series keys and ``t``, typed."""
    return reused(evaluations.select(*[F.col(f.name).cast(f.dataType) for f in EVALUATION_SCHEMA]))


def _helper_class(spark: SparkSession) -> JavaClass:
    jvm = spark.sparkContext._jvm
    found = None
    if jvm is not None:
        try:
            found = jvm.ksmon.spark.PlanTemplate
        except Py4JError:
            found = None
    if not isinstance(found, JavaClass):
        raise TemplateUnavailableError(
            f"{HELPER_CLASS} is not on the driver's classpath (helper_jar in spark.jars)"
        )
    return found


# One template per session and detector settings: jobs started again in one process
# (tests, a restarted query) reuse it instead of building it again.
_built: "weakref.WeakKeyDictionary[SparkSession, dict[DetectorsConfig, EvaluationTemplate]]" = (
    weakref.WeakKeyDictionary()
)
_building = threading.Lock()


def evaluation_template(spark: SparkSession, params: DetectorsConfig) -> EvaluationTemplate | None:
    """The template, or None (the reason logged): the caller then builds the plan per
    evaluation with ``evaluate.evaluate``, slower but the same results."""
    with _building:
        built = _built.setdefault(spark, {})
        if params not in built:
            try:
                built[params] = EvaluationTemplate(spark, params)
            except TemplateUnavailableError as e:
                log.warning("evaluations build their plan each time, slower: %s", e)
                return None
            log.info("evaluation plan built once: %d stages", built[params].stages)
        return built[params]
