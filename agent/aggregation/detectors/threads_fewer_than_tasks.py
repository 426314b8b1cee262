"""threads_fewer_than_tasks (warning): a Kafka Streams group's stream threads each carry many
active tasks while its lag keeps growing: it has too few threads to keep up.

A stream thread processes its tasks one after the other, so a thread's throughput is
shared by every task it holds. People size ``num.stream.threads`` by the input's
partitions, but every repartition (``groupBy``, ``selectKey`` before an aggregation or
a join) adds a sub-topology that reads the repartition topic, with as many tasks again:
8 input partitions on 8 threads become 16 tasks, 2 per thread (seed 001). As long as
the busiest thread holds 2 or more tasks, more threads (or instances) can take work off
it; with one task per thread they cannot, and a growing lag is a throughput or
hot-partition problem (``hot_partitions_colocated``), not this one.

The rule judges a poll when the group is Stable and every member's assignment is
known (classic groups describe members only while Stable; KIP-1071 groups are judged
Stable only, not while Assigning or Reconciling), or when the group has no member.
It holds at a judged poll of a Streams group when

- the busiest member (one member per stream thread) holds at least
  ``tasks_per_thread_threshold`` active tasks, and
- the group's lag (summed over the partitions it consumes, repartition topics
  included) grows across the last ``tasks_per_thread_lag_window``: split into four
  quarters, the least lag of each quarter is above the least lag of the quarter
  before, and the last quarter's is at least ``tasks_per_thread_min_lag_growth``
  records above the first's.

Least values, because lag measured from committed offsets is a saw-tooth: it rises
between two commits and drops at each (every 30 s by default), so single polls say
little; a thread that keeps up returns to the same floor after each commit, one that
does not leaves a higher floor every time. A spike, a step, or a backlog that drains
raises no floor in every quarter; a history shorter than the window leaves a quarter
empty and does not hold. The lag polls themselves need not be judged: a committed
offset is known in any group state.

The finding is the group's; its evidence says which sub-topologies read repartition
topics (the task partitions name their topics; the snapshot marks a topic's internal
kind), and what would bring the busiest thread below the threshold.
"""

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from agent.aggregation.candidates import (
    Context,
    Detection,
    candidates,
    counted,
    rounded,
    thread_name,
)
from agent.aggregation.tables import KEYS, SERIES
from agent.aggregation.windows import evaluated, looking_back, with_run_start

KIND = "threads_fewer_than_tasks"

_QUARTERS = 4


def detect_threads_fewer_than_tasks(ctx: Context) -> Detection:
    p = ctx.params
    window = p.tasks_per_thread_lag_window
    groups = ctx.tables.groups
    # The lag's least value in each quarter of the window, oldest first, over every poll
    # that knows some lag (in any group state: committed offsets do not rebalance).
    known_lag = F.when(F.col("lag_partitions") > 0, F.col("lag_total"))
    floors = F.array(*[F.min(known_lag).over(_quarter(window, q)) for q in range(_QUARTERS)])
    growth = looking_back(window)
    trended = groups.withColumn("lag_floors", floors).withColumn(
        # Records per second: covariance over variance is the least-squares slope.
        "lag_slope",
        F.try_divide(F.covar_pop("t", known_lag).over(growth), F.var_pop("t").over(growth)),
    )
    judged = trended.where(
        (F.col("member_count") == 0)
        | (F.col("stable") & (F.col("decoded_members") == F.col("member_count")))
    )
    first, last = F.col("lag_floors")[0], F.col("lag_floors")[_QUARTERS - 1]
    rising = F.forall(
        F.sequence(F.lit(1), F.lit(_QUARTERS - 1)),
        lambda i: F.col("lag_floors")[i] > F.col("lag_floors")[i - 1],
    )
    falling_behind = (
        F.col("is_streams")
        & F.col("stable")
        & (F.col("member_count") > 0)
        & (F.col("busiest_member_active_count") >= p.tasks_per_thread_threshold)
        # A null floor (a quarter without polls) is no growth.
        & F.coalesce(rising & (last - first >= p.tasks_per_thread_min_lag_growth), F.lit(False))
    )
    runs = with_run_start(judged, falling_behind, "run_since").withColumn(
        "falling_behind", falling_behind
    )
    at_evaluations = evaluated(runs, ctx.evaluations)
    holds = at_evaluations.where(F.col("falling_behind"))
    rows = (
        holds.join(_threads_at(ctx, holds), list(KEYS), "left")
        .join(_subtopologies_at(ctx, holds), list(KEYS), "left")
        .withColumn(
            "threads_needed",
            F.ceil(F.col("active_task_count") / F.lit(p.tasks_per_thread_threshold - 1)),
        )
        .withColumn(
            "fix_threads_per_instance", F.ceil(F.col("threads_needed") / F.col("instances"))
        )
        .withColumn(
            "fix_instances", F.ceil(F.col("threads_needed") / F.col("threads_per_instance"))
        )
    )
    found = candidates(
        rows,
        kind=KIND,
        severity=F.lit("warning"),
        since=F.col("run_since"),
        explanation=_explanation(window),
        evidence=F.struct(
            F.col("busiest_member_active_count").alias("max_tasks_per_thread"),
            rounded(F.col("active_task_count") / F.col("member_count"), 2).alias(
                "mean_tasks_per_thread"
            ),
            F.lit(p.tasks_per_thread_threshold).alias("tasks_per_thread_threshold"),
            F.col("busiest"),
            F.col("member_count").alias("threads"),
            F.col("instances"),
            F.col("threads_per_instance"),
            F.col("active_task_count").alias("active_tasks"),
            F.col("repartition_tasks"),
            F.col("subtopologies"),
            F.col("lag_total").alias("lag_records"),
            F.col("lag_floors").alias("lag_floor_per_quarter"),
            (last - first).alias("lag_growth_records"),
            rounded("lag_slope", 1).alias("lag_growth_per_second"),
            F.lit(window).alias("window_seconds"),
            F.col("group_type"),
            F.struct(
                F.col("threads_needed").alias("threads"),
                F.col("fix_threads_per_instance").alias("num_stream_threads"),
                F.col("fix_instances").alias("instances"),
                F.col("active_task_count").alias("max_useful_threads"),
            ).alias("fix"),
        ),
    )
    return Detection(KIND, found, at_evaluations.select(*KEYS))


def _quarter(window: float, q: int) -> WindowSpec:
    """Quarter ``q`` (0: the oldest) of the ``window`` seconds up to each row; disjoint
    (millisecond bounds), the newest one ending with the row itself."""
    total = round(window * 1000)
    start = -total + round(total * q / _QUARTERS)
    end = 0 if q == _QUARTERS - 1 else -total + round(total * (q + 1) / _QUARTERS) - 1
    in_ms = (F.col("t") * F.lit(1000)).cast("long")
    return Window.partitionBy(*SERIES).orderBy(in_ms).rangeBetween(start, end)


def _threads_at(ctx: Context, holds: DataFrame) -> DataFrame:
    """Per evaluation where the rule holds: the busiest thread, the instances and the most
    stream threads one instance runs."""
    present = ctx.tables.members.join(holds.select(*KEYS), list(KEYS), "left_semi")
    tasks_of = (
        ctx.tables.units.where(F.col("unit_kind") == "task")
        .join(holds.select(*KEYS), list(KEYS), "left_semi")
        .groupBy(*KEYS, "member_id")
        .agg(F.array_sort(F.collect_set("unit")).alias("tasks"))
    )
    members = present.join(tasks_of, [*KEYS, "member_id"], "left")
    per_instance = members.groupBy(
        *KEYS,
        # Members without a process id count as instances of their own.
        F.coalesce(F.col("process"), F.col("member_id")).alias("instance"),
    ).agg(
        F.count("member_id").alias("threads"),
        F.max(
            F.struct(
                F.col("active_count").alias("active_tasks"),
                F.col("process"),
                F.col("thread"),
                F.col("client_id"),
                F.col("member_id"),
                F.coalesce(F.col("tasks"), F.array()).alias("tasks"),
            )
        ).alias("busiest"),
    )
    return per_instance.groupBy(*KEYS).agg(
        F.count("instance").alias("instances"),
        F.max("threads").alias("threads_per_instance"),
        F.max("busiest").alias("busiest"),
    )


def _subtopologies_at(ctx: Context, holds: DataFrame) -> DataFrame:
    """Per evaluation where the rule holds: the active tasks of each sub-topology, the
    topics they read, and which of those are repartition topics."""
    tasks = (
        ctx.tables.units.where(F.col("unit_kind") == "task")
        .join(holds.select(*KEYS), list(KEYS), "left_semi")
        .join(
            ctx.tables.topics.select(*KEYS, "topic", "internal_kind"),
            [*KEYS, "topic"],
            "left",
        )
        .withColumn(
            "repartition",
            # The agent's classification, else the name Kafka Streams gives them.
            F.coalesce(
                F.col("internal_kind") == "repartition", F.col("topic").endswith("-repartition")
            ),
        )
        .withColumn("subtopology", F.substring_index("unit", "_", 1))
    )
    per_subtopology = tasks.groupBy(*KEYS, "subtopology").agg(
        F.count_distinct("unit").alias("tasks"),
        F.array_sort(F.collect_set("topic")).alias("topics"),
        F.array_sort(F.collect_set(F.when(F.col("repartition"), F.col("topic")))).alias(
            "repartition_topics"
        ),
    )
    ordered = F.array_sort(
        F.collect_list(
            F.struct(
                # Numeric ids in numeric order ("2" before "10"), named ones after.
                F.length("subtopology").alias("_length"),
                F.col("subtopology"),
                F.col("tasks"),
                F.col("topics"),
                F.col("repartition_topics"),
            )
        )
    )
    return per_subtopology.groupBy(*KEYS).agg(
        F.transform(
            ordered,
            lambda s: F.struct(
                s["subtopology"].alias("subtopology"),
                s["tasks"].alias("tasks"),
                s["topics"].alias("topics"),
                (F.size(s["repartition_topics"]) > 0).alias("reads_repartition"),
            ),
        ).alias("subtopologies"),
        F.sum(F.when(F.size("repartition_topics") > 0, F.col("tasks")).otherwise(0)).alias(
            "repartition_tasks"
        ),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("repartition_topics")))).alias(
            "repartition_topics"
        ),
    )


def _explanation(window: float) -> Column:
    repartitioned = F.coalesce(F.col("repartition_tasks"), F.lit(0)) > 0
    repartitions = F.when(
        repartitioned,
        F.concat(
            F.lit("; "),
            F.col("repartition_tasks").cast("string"),
            F.lit(" of the "),
            counted(F.col("active_task_count"), "task"),
            F.lit(" read repartition topics ("),
            F.array_join(F.col("repartition_topics"), ", "),
            F.lit("), as many tasks again as their sub-topologies' input partitions"),
        ),
    ).otherwise(F.lit(""))
    fewer_repartitions = F.when(
        repartitioned,
        F.lit(", or repartition less (fewer groupBy, selectKey or join steps that re-key)"),
    ).otherwise(F.lit(""))
    return F.concat(
        F.format_string("group %s's busiest stream thread (", F.col("group")),
        thread_name(F.col("busiest")),
        F.lit(") runs "),
        counted(F.col("busiest_member_active_count"), "active task"),
        F.format_string(
            " (%.1f per thread on average: ", F.col("active_task_count") / F.col("member_count")
        ),
        counted(F.col("active_task_count"), "task"),
        F.lit(" on "),
        counted(F.col("member_count"), "stream thread"),
        F.lit(" of "),
        counted(F.col("instances"), "instance"),
        F.format_string(
            ") while the group's lag kept growing over the last %.0f s (its low point rose "
            "from %d to %d records, about %.1f records/s): the threads cannot keep up",
            F.lit(window),
            F.col("lag_floors")[0],
            F.col("lag_floors")[_QUARTERS - 1],
            F.coalesce(F.col("lag_slope"), F.lit(0.0)),
        ),
        repartitions,
        F.lit("; run "),
        counted(F.col("fix_threads_per_instance"), "stream thread"),
        F.lit(" per instance (num.stream.threads, on instances with idle CPU cores), or "),
        counted(F.col("fix_instances"), "instance"),
        F.lit(", for "),
        counted(F.col("threads_needed"), "thread"),
        F.lit(" in all (beyond "),
        counted(F.col("active_task_count"), "thread"),
        F.lit(" they sit idle)"),
        fewer_repartitions,
    )
