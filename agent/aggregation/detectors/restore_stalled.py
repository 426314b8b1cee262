"""restore_stalled: a task's state restoration makes no progress.

From a sidecar (authoritative, critical): the instance is restoring (a state
updater has active restoring tasks, or a stream thread sits in
PARTITIONS_ASSIGNED) and no record was restored for ``restore_stall_after``
(the state updater's restore rate stayed 0, or the task's restored-records
total did not move). Remaining records alone prove nothing: that metric
overshoots and may never reach 0 (KAFKA-20711).

From the broker only (a suspicion, warning): a member holds an active
stateful task whose reported offset sum is more than
``acceptable_recovery_lag`` below its changelogs' end offsets, and the task's
input partitions show no commit for ``progress_stall_after`` while the group
stays Stable and their lag grows, or, when the member (stream thread)
commits nothing at all, the lag of its other input partitions grows: a
restore that blocks the thread's state updater holds the tasks queued
behind it too, so nothing reaches the restoring task's own input.

Which changelog belongs to which task is not in the group's data. A changelog
``<app>-<store>-changelog`` belongs to the sub-topology whose tasks read
``<app>-<store>-repartition`` (a groupBy names its repartition topic after its
store); the changelogs left over belong to the one stateful sub-topology left
over (tasks with offset sums), if there is exactly one. Otherwise the mapping
is unknown and the broker rule stays silent for that task. The changelog
partition of task ``s_p`` is ``p``.

Restore progress is published for every restoring task either way: remaining
records, rate and estimated seconds (``restore_progress``).
"""

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from agent.aggregation.candidates import Context, Detection, candidates, rounded
from agent.aggregation.tables import KEYS, SERIES, regrouped
from agent.aggregation.windows import (
    by_series,
    evaluated,
    looking_back,
    reused,
    since_first_evaluation,
    with_run_start,
)

KIND = "restore_stalled"
RUNNING_ACTIVE = -2  # a task offset sum meaning "running active here, caught up"


@dataclass(frozen=True)
class RestoreResults:
    detection: Detection
    progress: DataFrame  # KEYS, process, task, source, remaining, rate, eta


def detect_restore_stalled(ctx: Context) -> Detection:
    return restore_results(ctx).detection


def restore_results(ctx: Context) -> RestoreResults:
    broker_found, broker_progress, broker_coverage = _broker(ctx)
    sidecar_found, sidecar_progress, sidecar_coverage = _sidecar(ctx)
    return RestoreResults(
        Detection(
            KIND,
            broker_found.unionByName(sidecar_found),
            broker_coverage.unionByName(sidecar_coverage).distinct(),
        ),
        broker_progress.unionByName(sidecar_progress),
    )


# -- broker only ------------------------------------------------------------------------


def changelog_owners(ctx: Context) -> DataFrame:
    """Per evaluation: changelog topic -> the sub-topology it belongs to, and how we know."""
    tasks = evaluated(ctx.tables.units, ctx.evaluations).where(F.col("unit_kind") == "task")
    tasks = tasks.withColumn("subtopology", F.substring_index("unit", "_", 1))
    changelog_topics = (
        evaluated(ctx.tables.changelogs, ctx.evaluations).select(*KEYS, "topic").distinct()
    )
    prefix = F.concat(F.col("group"), F.lit("-"))
    store = F.expr("substring(topic, length(group) + 2, length(topic) - length(group) - 11)")
    changelog_topics = changelog_topics.withColumn(
        "repartition_topic",
        F.when(
            F.col("topic").startswith(prefix) & F.col("topic").endswith("-changelog"),
            F.concat(prefix, store, F.lit("-repartition")),
        ),
    )
    readers = tasks.select(
        *KEYS, "subtopology", F.col("topic").alias("repartition_topic")
    ).distinct()
    by_name = changelog_topics.join(readers, [*KEYS, "repartition_topic"]).select(
        *KEYS, "topic", "subtopology", F.lit("repartition topic of the same store").alias("how")
    )
    stateful = (
        evaluated(ctx.tables.offset_sums, ctx.evaluations)
        .select(*KEYS, F.substring_index("task", "_", 1).alias("subtopology"))
        .distinct()
    )
    leftover_subtopologies = (
        stateful.join(by_name.select(*KEYS, "subtopology"), [*KEYS, "subtopology"], "left_anti")
        .groupBy(*KEYS)
        .agg(F.collect_set("subtopology").alias("candidates"))
        .where(F.size("candidates") == 1)
        .select(*KEYS, F.element_at("candidates", 1).alias("subtopology"))
    )
    leftover = (
        changelog_topics.join(by_name.select(*KEYS, "topic"), [*KEYS, "topic"], "left_anti")
        .join(leftover_subtopologies, list(KEYS))
        .select(
            *KEYS,
            "topic",
            "subtopology",
            F.lit("the only other stateful sub-topology").alias("how"),
        )
    )
    return regrouped(by_name.unionByName(leftover))


def _broker(ctx: Context) -> tuple[DataFrame, DataFrame, DataFrame]:
    p = ctx.params
    tasks = (
        evaluated(ctx.tables.units, ctx.evaluations)
        .where(F.col("unit_kind") == "task")
        .withColumn("subtopology", F.substring_index("unit", "_", 1))
        .withColumn("task_partition", F.substring_index("unit", "_", -1).cast("long"))
    )
    owners = changelog_owners(ctx)
    changelogs = evaluated(ctx.tables.changelogs, ctx.evaluations)
    task_keys = [*KEYS, "member_id", "process", "thread", "unit"]
    ends = (
        tasks.select(*task_keys, "subtopology", "task_partition")
        .distinct()
        .join(owners, [*KEYS, "subtopology"])
        .join(
            changelogs.withColumnRenamed("partition", "task_partition"),
            [*KEYS, "topic", "task_partition"],
        )
        .groupBy(*task_keys)
        .agg(
            F.sum("log_end_offset").alias("changelog_end"),
            F.sort_array(F.collect_set("topic")).alias("changelogs"),
            F.first("how").alias("mapping"),
            F.sum(F.try_divide(F.col("size_bytes"), F.col("partitions"))).alias("changelog_bytes"),
        )
    )
    sums = evaluated(ctx.tables.offset_sums, ctx.evaluations).select(
        *KEYS, "member_id", F.col("task").alias("unit"), "offset_sum"
    )
    behind = (
        ends.join(sums, [*KEYS, "member_id", "unit"], "left")
        # No offset sum for a task: no local state at all, so everything is to restore.
        .where(F.col("offset_sum").isNull() | (F.col("offset_sum") >= 0))
        .withColumn("backlog", F.col("changelog_end") - F.coalesce(F.col("offset_sum"), F.lit(0)))
        .where(F.col("backlog") > 0)
    )
    behind = reused(behind)
    # Every input partition of a member holding a task that is behind: when the whole
    # stream thread is stuck (its state updater blocks the tasks queued behind the
    # restoring one), nothing reaches the restoring task's own input, and the lag piles
    # up upstream, on the thread's other partitions.
    member_sources = reused(
        tasks.select(*KEYS, "member_id", "unit", "topic", "partition").join(
            behind.select(*KEYS, "member_id").distinct(), [*KEYS, "member_id"], "left_semi"
        )
    )
    sources = member_sources.join(
        behind.select(*KEYS, "member_id", "unit"), [*KEYS, "member_id", "unit"], "left_semi"
    )
    progress = reused(_commit_progress(ctx, member_sources))
    stable = _stable_since(ctx)
    per_member = (
        member_sources.select(*KEYS, "member_id", "topic", "partition")
        .distinct()
        .join(progress, [*KEYS, "topic", "partition"])
        .groupBy(*KEYS, "member_id")
        .agg(
            F.max("commit_since").alias("member_last_commit_change"),
            F.sum("lag_growth").alias("member_lag_growth"),
        )
    )
    per_task = (
        sources.join(progress, [*KEYS, "topic", "partition"])
        .groupBy(*KEYS, "member_id", "unit")
        .agg(
            F.max("commit_since").alias("last_commit_change"),
            F.sum("lag").alias("input_lag"),
            F.sum("lag_growth").alias("input_lag_growth"),
            F.collect_list(
                F.struct(
                    F.concat_ws("-", "topic", F.col("partition").cast("string")).alias("partition"),
                    "lag",
                    F.col("lag_growth"),
                    (F.col("t") - F.col("commit_since")).alias("seconds_without_commit"),
                )
            ).alias("input_partitions"),
        )
    )
    judged = reused(
        behind.join(per_task, [*KEYS, "member_id", "unit"])
        .join(per_member, [*KEYS, "member_id"])
        .join(stable, list(KEYS))
    )
    quiet_for = F.col("t") - F.greatest(F.col("last_commit_change"), F.col("stable_since"))
    thread_quiet_for = F.col("t") - F.greatest(
        F.col("member_last_commit_change"), F.col("stable_since")
    )
    thread_stuck = (thread_quiet_for >= p.progress_stall_after) & (F.col("member_lag_growth") > 0)
    holds = judged.where(
        (F.col("backlog") > p.acceptable_recovery_lag)
        & F.col("stable")
        & (quiet_for >= p.progress_stall_after)
        & ((F.col("input_lag_growth") > 0) | thread_stuck)
    )
    found = candidates(
        holds,
        kind=KIND,
        severity=F.lit("warning"),
        process=F.col("process"),
        task=F.col("unit"),
        since=F.col("t") - quiet_for,
        explanation=F.format_string(
            "task %s on instance %s looks stuck restoring: %d changelog records behind (%s), no "
            "commit on its input for %.0f s while %s grew by %d and the group stayed "
            "Stable; check that instance's restore (disk, throttles, broker quotas)",
            F.col("unit"),
            F.col("process"),
            F.col("backlog"),
            _bytes(_backlog_bytes()),
            quiet_for,
            F.when(F.col("input_lag_growth") > 0, F.lit("its lag")).otherwise(
                F.lit("the lag of its stream thread, which commits nothing,")
            ),
            F.when(F.col("input_lag_growth") > 0, F.col("input_lag_growth")).otherwise(
                F.col("member_lag_growth")
            ),
        ),
        evidence=F.struct(
            F.lit("broker").alias("source"),
            "member_id",
            "thread",
            "changelogs",
            "mapping",
            F.col("changelog_end").alias("changelog_end_offsets"),
            F.col("offset_sum").alias("task_offset_sum"),
            F.col("backlog").alias("backlog_records"),
            F.round(_backlog_bytes()).alias("backlog_bytes_estimate"),
            rounded(quiet_for).alias("seconds_without_commit"),
            "input_lag_growth",
            "input_partitions",
            F.col("member_lag_growth").alias("thread_input_lag_growth"),
            rounded(thread_quiet_for).alias("thread_seconds_without_commit"),
        ),
    )
    # Restoring, as far as the broker can tell: behind at the last rebalance and no
    # commit since. The broker sees no restore rate.
    restoring = judged.where(F.col("last_commit_change") <= F.col("stable_since"))
    progress_rows = restoring.select(
        *KEYS,
        "process",
        F.col("unit").alias("task"),
        F.lit("broker").alias("source"),
        F.col("backlog").cast("double").alias("remaining"),
        F.lit(None).cast("double").alias("rate"),
    )
    coverage = stable.where(F.col("stable")).select(*KEYS)
    return found, progress_rows, coverage


def _backlog_bytes() -> Column:
    """The backlog's share of the changelog's size on disk: a rough estimate."""
    return F.try_divide(F.col("backlog") * F.col("changelog_bytes"), F.col("changelog_end"))


def _bytes(value: Column) -> Column:
    return F.when(value.isNull(), F.lit("size unknown")).otherwise(
        F.format_string("about %.1f MB", value / 1e6)
    )


def _commit_progress(ctx: Context, sources: DataFrame) -> DataFrame:
    """For the given input partitions: since when their committed offset is unchanged,
    and how much their lag grew since then."""
    wanted = sources.select(*SERIES, "topic", "partition").distinct()
    rows = since_first_evaluation(
        ctx.tables.partitions.join(wanted, [*SERIES, "topic", "partition"], "left_semi"),
        ctx.evaluations,
        ctx.params.progress_stall_after + ctx.params.evaluation_window,
    )
    runs = with_run_start(rows, F.col("committed_offset"), "commit_since", "topic", "partition")
    marked = runs.withColumn(
        "lag_at_commit",
        F.last(F.when(F.col("t") == F.col("commit_since"), F.col("lag")), ignorenulls=True).over(
            by_series("topic", "partition").rowsBetween(Window.unboundedPreceding, 0)
        ),
    )
    return evaluated(marked, ctx.evaluations).select(
        *KEYS,
        "topic",
        "partition",
        "lag",
        "commit_since",
        (F.col("lag") - F.col("lag_at_commit")).alias("lag_growth"),
    )


def _stable_since(ctx: Context) -> DataFrame:
    runs = with_run_start(ctx.tables.groups, F.col("stable"), "stable_since")
    return evaluated(runs, ctx.evaluations).select(*KEYS, "stable", "stable_since")


# -- sidecar ----------------------------------------------------------------------------


def _sidecar(ctx: Context) -> tuple[DataFrame, DataFrame, DataFrame]:
    p = ctx.params
    updaters = ctx.tables.sidecar_updaters.groupBy(*KEYS, "process").agg(
        F.sum("active_restoring").alias("active_restoring"),
        F.sum("restore_rate").alias("restore_rate"),
    )
    assigned = (
        ctx.tables.sidecar_threads.where(F.col("thread_state") == "PARTITIONS_ASSIGNED")
        .groupBy(*KEYS, "process")
        .agg(F.count("*").alias("threads_assigned"))
    )
    instances = (
        ctx.tables.sidecars.where(F.col("process").isNotNull())
        .select(*KEYS, "process")
        .join(updaters, [*KEYS, "process"], "left")
        .join(assigned, [*KEYS, "process"], "left")
    )
    restoring = (F.coalesce(F.col("active_restoring"), F.lit(0)) > 0) | (
        F.coalesce(F.col("threads_assigned"), F.lit(0)) > 0
    )
    stall = looking_back(p.restore_stall_after, "process")
    instances = with_run_start(
        instances.withColumn("restoring", restoring),
        F.col("restoring"),
        "restoring_since",
        "process",
    ).withColumn("max_rate_in_stall", F.max("restore_rate").over(stall))
    instances = reused(instances)

    task_stall = looking_back(p.restore_stall_after, "process", "task")
    task_window = looking_back(p.evaluation_window, "process", "task")
    tasks = (
        ctx.tables.sidecar_tasks.where(F.col("task").isNotNull())
        .withColumn(
            "restored_in_stall",
            F.max("restored_total").over(task_stall) - F.min("restored_total").over(task_stall),
        )
        .withColumn(
            "task_rate",
            F.try_divide(
                F.last("restored_total").over(task_window)
                - F.first("restored_total").over(task_window),
                F.last("t").over(task_window) - F.first("t").over(task_window),
            ),
        )
    )
    at_eval = evaluated(instances, ctx.evaluations)
    restoring_tasks = (
        evaluated(tasks, ctx.evaluations)
        .where(F.coalesce(F.col("remaining"), F.lit(0)) > 0)
        .join(at_eval, [*KEYS, "process"])
        .where(F.col("restoring"))
    )
    restoring_tasks = reused(
        restoring_tasks.withColumn("tasks_restoring", F.count("*").over(_per_instance()))
    )
    held = F.col("t") - F.col("restoring_since") >= p.restore_stall_after
    # No progress: the task's own restored total did not move; if unknown, the state
    # updater's rate stayed 0.
    no_progress = F.coalesce(
        F.col("restored_in_stall") == 0, F.col("max_rate_in_stall") == 0, F.lit(False)
    )
    stalled_tasks = restoring_tasks.where(held & no_progress)
    explanation = F.format_string(
        "%s on instance %s has restored nothing for %.0f s (%s records remaining by the app's "
        "own count); the restore is stuck: check the instance's log, its disk and the brokers",
        F.coalesce(F.concat(F.lit("task "), F.col("task")), F.lit("state restoration")),
        F.col("process"),
        F.col("t") - F.col("restoring_since"),
        F.coalesce(F.col("remaining").cast("string"), F.lit("unknown")),
    )
    evidence = F.struct(
        F.lit("sidecar").alias("source"),
        F.col("agent").alias("sidecar_agent"),
        F.col("remaining").alias("remaining_records"),
        F.col("restored_in_stall").alias("restored_in_window"),
        F.col("max_rate_in_stall").alias("max_restore_rate_in_window"),
        F.col("active_restoring").alias("state_updater_restoring_tasks"),
        F.col("threads_assigned").alias("threads_in_partitions_assigned"),
        (F.col("t") - F.col("restoring_since")).alias("restoring_for_seconds"),
    )
    task_found = candidates(
        stalled_tasks,
        kind=KIND,
        severity=F.lit("critical"),
        process=F.col("process"),
        task=F.col("task"),
        since=F.col("restoring_since"),
        explanation=explanation,
        evidence=evidence,
    )
    # Restoring with no task metrics at all: the instance itself is the subject.
    silent = at_eval.join(
        evaluated(tasks, ctx.evaluations).where(F.coalesce(F.col("remaining"), F.lit(0)) > 0),
        [*KEYS, "process"],
        "left_anti",
    )
    instance_found = candidates(
        silent.where(F.col("restoring") & held & (F.col("max_rate_in_stall") == 0))
        .withColumn("task", F.lit(None).cast("string"))
        .withColumn("remaining", F.lit(None).cast("long"))
        .withColumn("restored_in_stall", F.lit(None).cast("double")),
        kind=KIND,
        severity=F.lit("critical"),
        process=F.col("process"),
        since=F.col("restoring_since"),
        explanation=explanation,
        evidence=evidence,
    )
    rate = F.coalesce(
        F.col("task_rate"), F.try_divide(F.col("restore_rate"), F.col("tasks_restoring"))
    )
    progress_rows = restoring_tasks.select(
        *KEYS,
        "process",
        "task",
        F.lit("sidecar").alias("source"),
        F.col("remaining").cast("double").alias("remaining"),
        rate.cast("double").alias("rate"),
    )
    coverage = at_eval.select(*KEYS)
    return task_found.unionByName(instance_found), progress_rows, coverage


def _per_instance() -> WindowSpec:
    return Window.partitionBy(*KEYS, "process")
