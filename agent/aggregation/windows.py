"""Event-time helpers shared by the detectors: per-series windows, runs, look-back joins.

All of them work on any number of evaluation times at once, so a streaming
micro-batch (usually one evaluation per series) and a replay (every poll of a
recording) run the same expressions.
"""

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from agent.aggregation.tables import KEYS, SERIES


def by_series(*extra: str) -> WindowSpec:
    """Rows of one series (and ``extra`` keys) in event-time order."""
    return Window.partitionBy(*SERIES, *extra).orderBy("t")


def looking_back(seconds: float, *extra: str) -> WindowSpec:
    """The rows of the last ``seconds`` of event time, up to and including this one.

    Range frames need an integral order key: event time in milliseconds.
    """
    in_ms = (F.col("t") * F.lit(1000)).cast("long")
    return (
        Window.partitionBy(*SERIES, *extra).orderBy(in_ms).rangeBetween(-round(seconds * 1000), 0)
    )


def with_run_start(df: DataFrame, value: Column, name: str, *extra: str) -> DataFrame:
    """Add ``name``: when the current run of equal ``value`` began (per series and ``extra``).

    ``value`` may be a condition (how long has it held?) or any value (since
    when unchanged?); null counts as a value of its own.
    """
    window = by_series(*extra)
    changed = ~value.eqNullSafe(F.lag(value).over(window))
    marked = df.withColumn("_changed", F.coalesce(changed, F.lit(True)))
    return marked.withColumn(
        name,
        F.max(F.when(F.col("_changed"), F.col("t"))).over(
            window.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        ),
    ).drop("_changed")


def since_first_evaluation(df: DataFrame, evaluations: DataFrame, seconds: float) -> DataFrame:
    """Only the rows a look-back of ``seconds`` from some evaluation can reach."""
    first = evaluations.groupBy(*SERIES).agg(F.min("t").alias("_first"))
    return (
        df.join(first, list(SERIES))
        .where(F.col("t") >= F.col("_first") - F.lit(seconds))
        .drop("_first")
    )


def evaluated(df: DataFrame, evaluations: DataFrame) -> DataFrame:
    """Only the rows at evaluation times (``evaluations``: series keys and ``t``)."""
    return df.join(evaluations.select(*KEYS), list(KEYS), "left_semi")


def pair_with_lookback(
    evaluations: DataFrame, rows: DataFrame, seconds: float, keys: Sequence[str] = SERIES
) -> DataFrame:
    """Each evaluation (keys, ``t``) with every row of the same keys in (t - seconds, t].

    The rows' own time comes out as ``row_t``. Both sides are bucketed by
    ``seconds`` so the join stays linear in the rows of a window instead of
    quadratic in a long replay.
    """
    bucket_of = F.floor(F.col("t") / F.lit(seconds)).cast("long")
    left = evaluations.withColumn("_bucket", F.explode(F.array(bucket_of, bucket_of - F.lit(1))))
    right = rows.withColumnRenamed("t", "row_t").withColumn(
        "_bucket", F.floor(F.col("row_t") / F.lit(seconds)).cast("long")
    )
    joined = left.join(right, [*keys, "_bucket"])
    return joined.where(
        (F.col("row_t") > F.col("t") - F.lit(seconds)) & (F.col("row_t") <= F.col("t"))
    ).drop("_bucket")


def reused(df: DataFrame) -> DataFrame:
    """``df`` as a leaf: computed once, and later plans built on it stay small.

    Detectors read the same intermediate tables several times. A lazy local
    checkpoint stores the rows the first time a job computes them and cuts the
    logical plan there, so building the next DataFrame does not re-analyse
    (and de-duplicate, for self-joins) the whole lineage again; it keeps the
    (cluster, group) partitioning. Measured: the difference between seconds
    and minutes per evaluation (docs/benchmarks.md).
    """
    recording = _recording.get()
    if recording is None:
        return _checkpointed(df)
    leaf = recording.stand_in(df)
    recording.stages.append((df, leaf))
    return leaf


def _checkpointed(df: DataFrame) -> DataFrame:
    return df.localCheckpoint(eager=False)


StandIn = Callable[[DataFrame], DataFrame]


@dataclass
class _Recording:
    stand_in: StandIn
    stages: list[tuple[DataFrame, DataFrame]] = field(default_factory=list)


# While a plan template is built: every ``reused`` cut, in order, as (plan, its leaf).
_recording: ContextVar[_Recording | None] = ContextVar("recording_stages", default=None)


@contextmanager
def recording_stages(
    stand_in: StandIn = _checkpointed,
) -> Iterator[list[tuple[DataFrame, DataFrame]]]:
    """Collect the ``reused`` cuts made inside the block (see ``template``), each leaf
    made by ``stand_in``. The template's is a leaf with the plan's columns and no data:
    a local checkpoint plans (optimises) the whole stage to make its leaf, half of the
    template's build, for leaves every binding replaces anyway."""
    recording = _Recording(stand_in)
    token = _recording.set(recording)
    try:
        yield recording.stages
    finally:
        _recording.reset(token)
