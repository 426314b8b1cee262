"""One evaluation: tables and evaluation times in, candidates, coverage and gauges out.

This is the code path shared by the streaming job (one micro-batch, its
history included) and replay (a whole recording at once): take the tables
(of recorded snapshots, or from the job's history) scoped to the evaluation
times, compute rates, run every detector, and bring back (in a single Spark
job) the candidate findings, where each rule could judge, and the gauges of
the newest evaluation of every series.

Spark settings matter more than data size here: the tables are small and
the plans many-branched, so each is hash-partitioned by (cluster,
group) once and every later join, window and aggregate (all keyed by
cluster and group) reuses that partitioning instead of shuffling; see
``session.SMALL_DATA_CONF``.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from agent.aggregation.candidates import CANDIDATE_COLUMNS, Context
from agent.aggregation.detectors.assignment_size_risk import detect_assignment_size_risk
from agent.aggregation.detectors.copartition_mismatch import detect_copartition_mismatch
from agent.aggregation.detectors.hot_partitions_colocated import detect_hot_partitions_colocated
from agent.aggregation.detectors.idle_members import detect_idle_members
from agent.aggregation.detectors.internal_topic_budget import (
    detect_broker_partition_budget,
    detect_internal_topic_budget,
)
from agent.aggregation.detectors.no_live_consumers import detect_no_live_consumers
from agent.aggregation.detectors.partition_skew import detect_partition_skew
from agent.aggregation.detectors.rebalance_loop import rebalance_results
from agent.aggregation.detectors.restore_stalled import restore_results
from agent.aggregation.detectors.state_store_footprint import state_store_footprint_results
from agent.aggregation.detectors.stream_threads_dead import thread_results
from agent.aggregation.detectors.threads_fewer_than_tasks import detect_threads_fewer_than_tasks
from agent.aggregation.hysteresis import Candidate, Coverage
from agent.aggregation.rates import Rates, compute_rates
from agent.aggregation.results import (
    GAUGE_LABELS,
    INSTANCE_LOAD,
    PARTITION_RATE,
    REBALANCES,
    RESTORE_ETA,
    RESTORE_RATE,
    RESTORE_REMAINING,
    STORE_MEMORY_ESTIMATE,
    TASK_RATE,
    THREAD_LOAD,
    THREADS_EXPECTED,
    UNSTABLE_RATIO,
    GaugeRow,
)
from agent.aggregation.tables import (
    AT_EVALUATIONS,
    KEYS,
    RECENT,
    SERIES,
    Tables,
    build_tables,
    regrouped,
)
from agent.aggregation.topology_names import subtopology_names, with_subtopology_names
from agent.aggregation.windows import evaluated, reused, since_first_evaluation
from agent.config.schema import DetectorsConfig
from agent.model.findings import FindingSubject


@dataclass(frozen=True)
class EvaluationResult:
    candidates: list[Candidate] = field(default_factory=list)
    coverage: list[Coverage] = field(default_factory=list)
    gauges: list[GaugeRow] = field(default_factory=list)


def prepare(snapshots: DataFrame) -> DataFrame:
    """Partitioned by group, deduplicated (a snapshot delivered twice counts once), reused."""
    return reused(regrouped(snapshots).dropDuplicates(list(KEYS)))


def snapshot_tables(
    snapshots: DataFrame, evaluations: DataFrame, params: DetectorsConfig
) -> Tables:
    """The tables of ``prepare``d snapshots (replay, tests) for judging ``evaluations``."""
    return _scoped(build_tables(snapshots), evaluations, params, regroup=False)


def stored_tables(tables: Tables, evaluations: DataFrame, params: DetectorsConfig) -> Tables:
    """Tables read back from the job's history, partitioned by group again, for judging
    ``evaluations``."""
    return _scoped(tables, evaluations, params, regroup=True)


def input_leaves(tables: Tables) -> Tables:
    """Each table as a leaf partitioned by group: the plan template's inputs."""
    return Tables(**{name: reused(regrouped(df)) for name, df in tables.named().items()})


def _scoped(
    tables: Tables, evaluations: DataFrame, params: DetectorsConfig, *, regroup: bool
) -> Tables:
    """Each table reused, the big ones with only the rows the rules read: those at the
    evaluation times, and the partitions over the look-back (``test_evaluate_scope``
    checks that it is enough). Done here, in the step that makes each table a leaf, it
    costs no copy of its own."""
    evaluations = _regrouped_keys(evaluations)
    scoped = {}
    for name, df in tables.named().items():
        table = regrouped(df) if regroup else df
        if name in AT_EVALUATIONS:
            table = evaluated(table, evaluations)
        elif name in RECENT:
            table = since_first_evaluation(table, evaluations, partition_look_back(params))
        scoped[name] = reused(table)
    return Tables(**scoped)


def _regrouped_keys(evaluations: DataFrame) -> DataFrame:
    """The evaluation keys, once each, partitioned like the tables: no join or aggregate
    with them shuffles them again."""
    return reused(regrouped(evaluations.select(*KEYS)).distinct())


def evaluate(tables: Tables, evaluations: DataFrame, params: DetectorsConfig) -> EvaluationResult:
    """Run every detector at ``evaluations`` (series keys and ``t``) over ``tables``.

    ``tables`` come from ``snapshot_tables`` or ``stored_tables`` for the same
    ``evaluations``; everything cached on the way is released before returning.
    """
    spark = evaluations.sparkSession
    try:
        results = evaluation_frame(tables, evaluations, params)
        rows = results.collect()
    finally:
        spark.catalog.clearCache()
    return collected(rows)


def evaluation_frame(tables: Tables, evaluations: DataFrame, params: DetectorsConfig) -> DataFrame:
    """Everything an evaluation returns, as one DataFrame (one Spark job to collect)."""
    evaluations = _regrouped_keys(evaluations)
    rates = compute_rates(tables, evaluations, params.evaluation_window)
    ctx = Context(tables=tables, rates=rates, evaluations=evaluations, params=params)
    restore = restore_results(ctx)
    rebalance = rebalance_results(ctx)
    threads = thread_results(ctx)
    footprint = state_store_footprint_results(ctx)
    detections = [
        detect_hot_partitions_colocated(ctx),
        detect_partition_skew(ctx),
        restore.detection,
        threads.detection,
        detect_no_live_consumers(ctx),
        rebalance.detection,
        detect_idle_members(ctx),
        detect_assignment_size_risk(ctx),
        detect_internal_topic_budget(ctx),
        detect_broker_partition_budget(ctx),
        detect_copartition_mismatch(ctx),
        detect_threads_fewer_than_tasks(ctx),
        footprint.detection,
    ]
    # Named per rule: a rule's rows stay partitioned by group, so joining them with the
    # names shuffles nothing (a union of them would lose that partitioning).
    names = subtopology_names(tables.subtopologies)
    frames = [
        _as_result(
            d.candidates if d.cluster_level else with_subtopology_names(d.candidates, names),
            "candidate",
        )
        for d in detections
    ]
    frames += [
        _as_result(d.coverage.withColumn("kind", F.lit(d.kind)), "coverage") for d in detections
    ]
    frames.append(
        _as_result(
            _newest_only(
                _gauges(rates, threads.expected, restore.progress, rebalance.counts).unionByName(
                    _footprint_gauges(footprint.estimates)
                ),
                evaluations,
            ),
            "gauge",
        )
    )
    combined = frames[0]
    for frame in frames[1:]:
        combined = combined.unionByName(frame)
    # The union has a partition per partition of each of its 27 inputs, and every task
    # of its stage deserialises the whole stage's plan, the tails of all 13 rules: for a
    # few polls that was 156 tasks of about 120 ms of deserialising each, most of the
    # micro-batch (docs/benchmarks.md, "The final stage's tasks"). As many tasks as the
    # rules have partitions run the same work with one deserialisation each.
    return combined.coalesce(_partitions(combined))


def _partitions(frame: DataFrame) -> int:
    return int(frame.sparkSession.conf.get("spark.sql.shuffle.partitions") or "1")


def partition_look_back(params: DetectorsConfig) -> float:
    """How far before an evaluation any rule reads the partitions table: rates over the
    evaluation window; restore_stalled's commit progress over the stall time plus one
    window. (``test_evaluate_scope`` checks the newest poll alone judges as a replay does.)"""
    return max(params.evaluation_window, params.progress_stall_after + params.evaluation_window)


_RESULT_COLUMNS: dict[str, str] = {
    **dict.fromkeys(CANDIDATE_COLUMNS, "string"),
    "t": "double",
    "thread": "long",
    "partition": "long",
    "since": "double",
    "metric": "string",
    "source": "string",
    "value": "double",
    "priority": "long",
}


def _as_result(df: DataFrame, record: str) -> DataFrame:
    present = set(df.columns)
    columns: list[Column] = [F.lit(record).alias("record")]
    for name, kind in _RESULT_COLUMNS.items():
        column = F.col(name) if name in present else F.lit(None)
        columns.append(column.cast(kind).alias(name))
    return df.select(*columns)


def _footprint_gauges(estimates: DataFrame) -> DataFrame:
    return estimates.select(
        *KEYS,
        F.lit(STORE_MEMORY_ESTIMATE).alias("metric"),
        F.col("estimate_bytes").cast("double").alias("value"),
        *[
            (F.col("process") if label == "process" else F.lit(None)).alias(label)
            for label in GAUGE_LABELS
        ],
        F.lit(0).alias("priority"),
    )


def _gauges(
    rates: Rates, threads: DataFrame, restore: DataFrame, rebalance: DataFrame
) -> DataFrame:
    def gauge(df: DataFrame, metric: str, value: str, **labels: Column) -> DataFrame:
        return df.select(
            *KEYS,
            F.lit(metric).alias("metric"),
            F.col(value).cast("double").alias("value"),
            *[labels.get(label, F.lit(None)).alias(label) for label in GAUGE_LABELS],
            F.lit(0).alias("priority"),
        )

    tasks = (
        rates.units.where(F.col("unit_kind") == "task")
        .groupBy(*KEYS, "unit")
        .agg(F.sum("rate").alias("rate"))
    )
    # Instances of Kafka Streams apps only: a plain consumer's "instance" is a client id.
    streams_instances = rates.instances.join(
        rates.units.where(F.col("unit_kind") == "task").select(*KEYS, "process").distinct(),
        [*KEYS, "process"],
        "left_semi",
    )
    restore_eta = restore.where(F.col("rate") > 0).withColumn(
        "eta", F.try_divide(F.col("remaining"), F.col("rate"))
    )
    frames = [
        gauge(
            rates.partitions.where(F.col("rate").isNotNull()),
            PARTITION_RATE,
            "rate",
            topic=F.col("topic"),
            partition=F.col("partition"),
        ),
        gauge(tasks, TASK_RATE, "rate", task=F.col("unit")),
        gauge(
            rates.members.where(F.col("thread").isNotNull()),
            THREAD_LOAD,
            "load",
            process=F.col("process"),
            thread=F.col("thread"),
        ),
        gauge(streams_instances, INSTANCE_LOAD, "load", process=F.col("process")),
        threads.select(
            *KEYS,
            F.lit(THREADS_EXPECTED).alias("metric"),
            F.col("value"),
            *[
                (F.col("process") if label == "process" else F.lit(None)).alias(label)
                for label in GAUGE_LABELS
            ],
            "priority",
        ),
        gauge(
            restore.where(F.col("remaining").isNotNull()),
            RESTORE_REMAINING,
            "remaining",
            process=F.col("process"),
            task=F.col("task"),
            source=F.col("source"),
        ),
        gauge(
            restore.where(F.col("rate").isNotNull()),
            RESTORE_RATE,
            "rate",
            process=F.col("process"),
            task=F.col("task"),
            source=F.col("source"),
        ),
        gauge(
            restore_eta,
            RESTORE_ETA,
            "eta",
            process=F.col("process"),
            task=F.col("task"),
            source=F.col("source"),
        ),
        gauge(rebalance, REBALANCES, "events"),
        gauge(rebalance, UNSTABLE_RATIO, "unstable_ratio"),
    ]
    combined = frames[0]
    for frame in frames[1:]:
        combined = combined.unionByName(frame)
    return combined


def _newest_only(gauges: DataFrame, evaluations: DataFrame) -> DataFrame:
    """Gauges describe now: only the newest evaluation of each series. (Which series
    speaks for a group, when several agents watch it, is chosen after collecting.)"""
    newest = evaluations.groupBy(*SERIES).agg(F.max("t").alias("t"))
    return gauges.join(newest, list(KEYS), "left_semi")


def collected(rows: Sequence[object]) -> EvaluationResult:
    result = EvaluationResult()
    gauges: dict[tuple[object, ...], tuple[tuple[int, float, str], GaugeRow]] = {}
    for row in rows:
        r = row.asDict()  # type: ignore[attr-defined]
        record = r["record"]
        if record == "candidate":
            result.candidates.append(
                Candidate(
                    cluster=r["cluster"],
                    group=r["group"],
                    agent=r["agent"],
                    t=r["t"],
                    kind=r["kind"],
                    severity=r["severity"],
                    subject=FindingSubject(
                        process=r["process"],
                        thread=r["thread"],
                        task=r["task"],
                        topic=r["topic"],
                        partition=r["partition"],
                    ),
                    since=r["since"],
                    explanation=r["explanation"],
                    evidence=json.loads(r["evidence"]) if r["evidence"] else {},
                )
            )
        elif record == "coverage":
            result.coverage.append(
                Coverage(r["cluster"], r["group"], r["agent"], r["t"], r["kind"])
            )
        else:
            gauge = GaugeRow(
                metric=r["metric"],
                cluster=r["cluster"],
                group=r["group"],
                value=r["value"],
                process=r["process"],
                thread=r["thread"],
                task=r["task"],
                topic=r["topic"],
                partition=r["partition"],
                source=r["source"],
            )
            # Several agents may watch a group: a configured value (priority 0) before a
            # guess, then the newest view.
            rank = (r["priority"] or 0, -r["t"], r["agent"])
            key = (gauge.metric, gauge.cluster, gauge.group, *(r[label] for label in GAUGE_LABELS))
            if key not in gauges or rank < gauges[key][0]:
                gauges[key] = (rank, gauge)
    result.gauges.extend(gauge for _rank, gauge in gauges.values())
    return result
