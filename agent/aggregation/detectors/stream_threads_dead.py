"""stream_threads_dead: an instance runs fewer stream threads than it should.

From the broker (each Streams member is one stream thread of one process):

* partial loss (warning): an instance's thread count drops below its maximum
  over ``thread_history`` and stays lower for ``thread_death_grace`` while the
  instance keeps at least one member. Threads are counted by index, so a
  restarted instance whose old member lingers until its session times out
  does not count twice.
* whole instance gone (info): an instance left the group more than
  ``thread_death_grace`` ago and none replaced it (the group has fewer
  instances than its maximum over the look-back). Without a sidecar this may
  be a scale-down; ``no_live_consumers`` covers a group left with nobody.

From a sidecar (authoritative, next to the instance): ``alive-stream-threads``
below the expected count (configured, else the maximum seen), the client in
ERROR / NOT_RUNNING / PENDING_ERROR, a thread in DEAD, or the instance having
no member at all while its sidecar reports: held for ``thread_death_grace``,
critical when nothing runs, else warning; and ``failed-stream-threads`` having
increased within the look-back (warning, even if a replacement thread runs).
"""

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from agent.aggregation.candidates import Context, Detection, candidates, when_stable
from agent.aggregation.tables import KEYS
from agent.aggregation.windows import (
    evaluated,
    looking_back,
    pair_with_lookback,
    reused,
    with_run_start,
)

KIND = "stream_threads_dead"
BAD_CLIENT_STATES = ("ERROR", "NOT_RUNNING", "PENDING_ERROR")


def process_threads(ctx: Context) -> DataFrame:
    """Per Stable snapshot and instance: its thread indexes, count, and the look-back maximum."""
    members = ctx.tables.members.where(
        (F.col("state") == "Stable") & F.col("decoded") & F.col("process").isNotNull()
    )
    per_process = members.groupBy(*KEYS, "process").agg(
        F.array_sort(
            F.collect_set(F.coalesce(F.col("thread").cast("string"), F.col("member_id")))
        ).alias("threads_now"),
        F.count("member_id").alias("members"),
    )
    history = looking_back(ctx.params.thread_history, "process")
    counted = per_process.withColumn("thread_count", F.size("threads_now")).withColumn(
        "threads_max", F.max("thread_count").over(history)
    )
    counted = counted.withColumn(
        "threads_seen",
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("threads_now").over(history)))),
    )
    return reused(with_run_start(counted, F.col("thread_count"), "count_since", "process"))


@dataclass(frozen=True)
class ThreadResults:
    detection: Detection
    expected: DataFrame  # KEYS, process, value, priority (0: configured, 1: most seen)


def detect_stream_threads_dead(ctx: Context) -> Detection:
    return thread_results(ctx).detection


def thread_results(ctx: Context) -> ThreadResults:
    threads = process_threads(ctx)
    found = (
        _partial_loss(ctx, threads).unionByName(_instance_gone(ctx)).unionByName(_sidecar_says(ctx))
    )
    coverage = when_stable(ctx.tables, ctx.evaluations).unionByName(
        evaluated(ctx.tables.sidecars, ctx.evaluations).select(*KEYS)
    )
    return ThreadResults(Detection(KIND, found, coverage.distinct()), _expected(ctx, threads))


def _partial_loss(ctx: Context, threads: DataFrame) -> DataFrame:
    grace = ctx.params.thread_death_grace
    holds = evaluated(threads, ctx.evaluations).where(
        (F.col("thread_count") >= 1)
        & (F.col("thread_count") < F.col("threads_max"))
        & (F.col("t") - F.col("count_since") >= grace)
    )
    missing = F.array_except("threads_seen", "threads_now")
    return candidates(
        holds,
        kind=KIND,
        severity=F.lit("warning"),
        process=F.col("process"),
        since=F.col("count_since"),
        explanation=F.format_string(
            "instance %s runs %d of its %d stream threads (thread %s gone for %.0f s); its tasks "
            "moved to the others: look for the uncaught exception in that instance's log",
            F.col("process"),
            F.col("thread_count"),
            F.col("threads_max"),
            F.array_join(missing, ", "),
            F.col("t") - F.col("count_since"),
        ),
        evidence=F.struct(
            F.lit("broker").alias("source"),
            F.col("thread_count").alias("threads_now"),
            F.col("threads_max").alias("threads_max_in_window"),
            F.col("threads_now").alias("thread_indexes_now"),
            missing.alias("thread_indexes_gone"),
            (F.col("t") - F.col("count_since")).alias("lower_for_seconds"),
        ),
    )


def _instance_gone(ctx: Context) -> DataFrame:
    p = ctx.params
    stable_groups = ctx.tables.groups.where(F.col("stable")).withColumn(
        "instances_max", F.max(F.size("processes")).over(looking_back(p.thread_history))
    )
    evaluations = evaluated(stable_groups, ctx.evaluations).select(
        *KEYS, F.size("processes").alias("instances_now"), "instances_max", "processes"
    )
    presence = (
        ctx.tables.members.where(
            (F.col("state") == "Stable") & F.col("decoded") & F.col("process").isNotNull()
        )
        .select(*KEYS, "process")
        .distinct()
    )
    seen = (
        pair_with_lookback(evaluations, presence, p.thread_history)
        .groupBy(*KEYS, "process", "instances_now", "instances_max", "processes")
        .agg(F.max("row_t").alias("last_seen"))
    )
    holds = seen.where(
        ~F.array_contains("processes", F.col("process"))
        & (F.col("instances_now") < F.col("instances_max"))
        & (F.col("t") - F.col("last_seen") >= p.thread_death_grace)
    )
    return candidates(
        holds,
        kind=KIND,
        severity=F.lit("info"),
        process=F.col("process"),
        since=F.col("last_seen"),
        explanation=F.format_string(
            "instance %s left the group %.0f s ago and no instance replaced it (%d of %d remain): "
            "a scale-down, or all its stream threads died (a sidecar next to it would tell)",
            F.col("process"),
            F.col("t") - F.col("last_seen"),
            F.col("instances_now"),
            F.col("instances_max"),
        ),
        evidence=F.struct(
            F.lit("broker").alias("source"),
            F.col("last_seen").alias("last_seen_at"),
            F.col("instances_now"),
            F.col("instances_max").alias("instances_max_in_window"),
        ),
    )


def _sidecar_says(ctx: Context) -> DataFrame:
    p = ctx.params
    history = looking_back(p.thread_history, "process")
    dead_threads = (
        ctx.tables.sidecar_threads.where(F.col("thread_state") == "DEAD")
        .groupBy(*KEYS, "process")
        .agg(F.array_sort(F.collect_list("thread_id")).alias("dead_threads"))
    )
    rows = (
        ctx.tables.sidecars.where(F.col("process").isNotNull())
        .join(dead_threads, [*KEYS, "process"], "left")
        .withColumn("dead_threads", F.coalesce(F.col("dead_threads"), F.array()))
        .withColumn("expected_threads", F.coalesce(F.col("expected"), F.max("alive").over(history)))
        .withColumn("failed_before", F.first("failed").over(history))
    )
    no_members = (F.col("state") == "Stable") & (F.col("members") == 0)
    client_bad = F.coalesce(F.col("client_state").isin(*BAD_CLIENT_STATES), F.lit(False))
    shortfall = F.coalesce(F.col("alive") < F.col("expected_threads"), F.lit(False))
    reasons = F.filter(
        F.array(
            F.when(
                shortfall,
                F.format_string(
                    "%d of %d stream threads alive", F.col("alive"), F.col("expected_threads")
                ),
            ),
            F.when(client_bad, F.format_string("client state %s", F.col("client_state"))),
            F.when(
                F.size("dead_threads") > 0,
                F.concat(F.lit("DEAD: "), F.array_join("dead_threads", ", ")),
            ),
            F.when(no_members, F.lit("no member in the group")),
        ),
        lambda r: r.isNotNull(),
    )
    judged = rows.withColumn("reasons", reasons).withColumn(
        "bad", F.col("app_up") & (F.size("reasons") > 0)
    )
    judged = with_run_start(judged, F.col("bad"), "bad_since", "process")
    failed_more = F.coalesce(F.col("failed") - F.col("failed_before"), F.lit(0.0))
    holds = evaluated(judged, ctx.evaluations).where(
        (F.col("bad") & (F.col("t") - F.col("bad_since") >= p.thread_death_grace))
        | (F.col("app_up") & (failed_more > 0))
    )
    nothing_runs: Column = no_members | client_bad | (F.coalesce(F.col("alive"), F.lit(1)) == 0)
    all_reasons = F.concat(
        F.col("reasons"),
        F.when(
            failed_more > 0,
            F.array(F.format_string("%.0f stream threads failed recently", failed_more)),
        ).otherwise(F.array()),
    )
    return candidates(
        holds,
        kind=KIND,
        severity=F.when(F.col("bad") & nothing_runs, F.lit("critical")).otherwise(F.lit("warning")),
        process=F.col("process"),
        since=F.coalesce(F.when(F.col("bad"), F.col("bad_since")), F.col("t")),
        explanation=F.format_string(
            "instance %s (sidecar): %s while its pod runs; %s",
            F.col("process"),
            F.array_join(all_reasons, ", "),
            F.when(
                nothing_runs, F.lit("it processes nothing: restart it and read its log")
            ).otherwise(F.lit("its tasks moved to the remaining threads: read its log")),
        ),
        evidence=F.struct(
            F.lit("sidecar").alias("source"),
            F.col("agent").alias("sidecar_agent"),
            "client_state",
            F.col("alive").alias("threads_alive"),
            F.col("expected_threads").alias("threads_expected"),
            F.col("failed").alias("threads_failed_total"),
            failed_more.alias("threads_failed_in_window"),
            "dead_threads",
            F.col("members").alias("members_in_group"),
            all_reasons.alias("reasons"),
        ),
    )


def _expected(ctx: Context, threads: DataFrame) -> DataFrame:
    """Gauge rows: per instance, the configured thread count (a sidecar's, preferred)
    else the most threads seen over the look-back."""
    broker = evaluated(threads, ctx.evaluations).select(
        *KEYS,
        "process",
        F.col("threads_max").cast("double").alias("value"),
        F.lit(1).alias("priority"),
    )
    sidecar = (
        evaluated(ctx.tables.sidecars, ctx.evaluations)
        .where(F.col("expected").isNotNull() & F.col("process").isNotNull())
        .select(
            *KEYS,
            "process",
            F.col("expected").cast("double").alias("value"),
            F.lit(0).alias("priority"),
        )
    )
    return broker.unionByName(sidecar)
