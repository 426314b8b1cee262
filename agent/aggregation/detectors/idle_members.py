"""idle_members (info): a Kafka Streams group has more members than active tasks, so
some stream threads hold no active task, and it stays so.

Kafka Streams runs one task per (sub-topology, partition) and gives each task
to one stream thread (one group member). With instances x threads above the
task count, the surplus threads can never get work: the idleness is
structural, not a moment between two assignments. Such a thread still costs a
consumer, its buffers, heartbeats and a share of every rebalance, and the
application is sized for a parallelism it cannot use.

The rule judges a poll when the group is Stable and every member's assignment
is known (classic groups describe members only while Stable; a member whose
Streams data did not decode is unknown, not idle), or when the group has no
member at all. It holds at a Stable poll of a Streams group where members
outnumber the distinct active tasks (at least one task: a group with none is
missing its topics, not oversized), and it must have held at every judged poll
for ``idle_members_after``. Polls mid-rebalance neither count nor break that
run. A member that holds only standbys or warm-ups is idle: it processes
nothing; the explanation says when the idle members keep standbys.

A member momentarily without tasks while members <= tasks (a KIP-441 warm-up,
an assignment about to move) is not this: there are tasks enough for it.
"""

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from agent.aggregation.candidates import Context, Detection, candidates, counted, thread_name
from agent.aggregation.tables import KEYS
from agent.aggregation.windows import evaluated, with_run_start

KIND = "idle_members"


def detect_idle_members(ctx: Context) -> Detection:
    groups = ctx.tables.groups
    # Every member's tasks are known, or there is nobody to be idle.
    judged = groups.where(
        (F.col("member_count") == 0)
        | (F.col("stable") & (F.col("decoded_members") == F.col("member_count")))
    )
    oversized = (
        F.col("is_streams")
        & F.col("stable")
        & (F.col("active_task_count") > 0)
        & (F.col("member_count") > F.col("active_task_count"))
    )
    runs = with_run_start(judged, oversized, "run_since").withColumn("oversized", oversized)
    at_evaluations = evaluated(runs, ctx.evaluations)
    holds = at_evaluations.where(
        F.col("oversized") & (F.col("t") - F.col("run_since") >= ctx.params.idle_members_after)
    )
    rows = (
        holds.join(_members_at(ctx.tables.members, holds), list(KEYS))
        # What would make members and tasks fit: each on its own.
        .withColumn(
            "fit_threads", _at_least_one(F.floor(F.col("active_task_count") / F.col("instances")))
        )
        .withColumn(
            "fit_instances",
            _at_least_one(F.floor(F.col("active_task_count") / F.col("threads_per_instance"))),
        )
        .withColumn(
            "fit_partitions",
            F.ceil(F.col("member_count") / F.col("subtopology_count")).cast("long"),
        )
    )
    found = candidates(
        rows,
        kind=KIND,
        severity=F.lit("info"),
        since=F.col("run_since"),
        explanation=_explanation(),
        evidence=F.struct(
            F.col("member_count").alias("members"),
            F.col("active_task_count").alias("active_tasks"),
            F.size("idle").alias("idle_member_count"),
            F.col("idle").alias("idle_members"),
            F.col("instances"),
            F.col("threads_per_instance"),
            F.col("subtopology_count").alias("subtopologies"),
            F.col("idle_standby_tasks"),
            (F.col("t") - F.col("run_since")).alias("idle_for_seconds"),
            F.col("group_type"),
            F.struct(
                F.col("fit_threads").alias("max_threads_per_instance"),
                F.col("fit_instances").alias("max_instances"),
                F.col("fit_partitions").alias("min_partitions_per_subtopology"),
            ).alias("fix"),
        ),
    )
    return Detection(KIND, found, at_evaluations.select(*KEYS))


def _members_at(members: DataFrame, holds: DataFrame) -> DataFrame:
    """Per evaluation where the rule holds: the idle members (with the standbys they keep),
    the number of instances and the most stream threads one instance runs."""
    present = members.join(holds.select(*KEYS), list(KEYS), "left_semi")
    idle = F.col("active_count") == 0
    per_instance = present.groupBy(*KEYS, "process").agg(
        F.count("member_id").alias("threads"),
        F.sort_array(
            F.collect_list(
                F.when(
                    idle,
                    F.struct(
                        F.col("thread"),
                        F.col("process"),
                        F.col("client_id"),
                        F.col("host"),
                        F.col("member_id"),
                        F.array_sort("standby_tasks").alias("standby_tasks"),
                    ),
                )
            )
        ).alias("idle"),
    )
    return (
        per_instance.groupBy(*KEYS)
        .agg(
            # Members without a process id (no Streams data) count as instances of their own.
            F.sum(F.when(F.col("process").isNull(), F.col("threads")).otherwise(1)).alias(
                "instances"
            ),
            F.max("threads").alias("threads_per_instance"),
            F.flatten(F.sort_array(F.collect_list(F.struct("process", "idle")))["idle"]).alias(
                "idle"
            ),
        )
        .withColumn(
            "idle_standby_tasks",
            F.size(F.flatten(F.transform("idle", lambda m: m["standby_tasks"]))),
        )
    )


def _at_least_one(count: Column) -> Column:
    """A suggested maximum, or null when even one would leave members idle."""
    return F.when(count >= 1, count.cast("long"))


def _explanation() -> Column:
    threads, instances = F.col("fit_threads"), F.col("fit_instances")
    fixes = F.filter(
        F.array(
            F.when(
                threads.isNotNull(),
                F.concat(
                    F.lit("run at most "),
                    counted(threads, "stream thread"),
                    F.lit(" per instance"),
                ),
            ),
            F.when(
                instances.isNotNull(), F.concat(F.lit("at most "), counted(instances, "instance"))
            ),
            F.concat(
                F.lit("give each of its "),
                counted(F.col("subtopology_count"), "sub-topology", "sub-topologies"),
                F.lit(" at least "),
                counted(F.col("fit_partitions"), "partition"),
            ),
        ),
        lambda fix: fix.isNotNull(),
    )
    standbys = F.when(
        F.col("idle_standby_tasks") > 0,
        F.concat(
            F.lit(" (they keep "),
            counted(F.col("idle_standby_tasks"), "standby task"),
            F.lit(" warm, spares for a failover, but process nothing)"),
        ),
    ).otherwise(F.lit(""))
    return F.concat(
        F.format_string("group %s runs ", F.col("group")),
        counted(F.col("member_count"), "stream thread"),
        F.lit(" ("),
        counted(F.col("instances"), "instance"),
        F.lit(", up to "),
        counted(F.col("threads_per_instance"), "thread"),
        F.lit(" each) for "),
        counted(F.col("active_task_count"), "active task"),
        F.lit(", so "),
        counted(F.size("idle"), "thread"),
        F.lit(" can never get one: "),
        F.array_join(F.transform("idle", thread_name), ", "),
        standbys,
        F.lit("; "),
        F.array_join(fixes, ", or "),
    )
