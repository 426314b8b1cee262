"""no_live_consumers (critical): the group is left with no members and its lag grows.

"Left": it had members within ``thread_history``, and has had none for
``thread_death_grace`` (a single member re-joining after a poll timeout
leaves the group empty for a moment). A group nobody has consumed for
longer is abandoned, not broken, and the agent's lag metrics cover it.
"""

from pyspark.sql import functions as F

from agent.aggregation.candidates import Context, Detection, candidates, everywhere
from agent.aggregation.windows import evaluated, looking_back, with_run_start

KIND = "no_live_consumers"


def detect_no_live_consumers(ctx: Context) -> Detection:
    p = ctx.params
    groups = ctx.tables.groups
    window = looking_back(p.evaluation_window)
    history = looking_back(p.thread_history)
    empty = with_run_start(groups, F.col("member_count") == 0, "count_since")
    judged = (
        empty.withColumn("lag_start", F.first("lag_total").over(window))
        .withColumn("lag_start_t", F.first("t").over(window))
        .withColumn(
            "members_last_seen", F.max(F.when(F.col("member_count") > 0, F.col("t"))).over(history)
        )
        .withColumn("lag_growth", F.col("lag_total") - F.col("lag_start"))
    )
    holds = evaluated(judged, ctx.evaluations).where(
        (F.col("member_count") == 0)
        & (F.col("t") - F.col("count_since") >= p.thread_death_grace)
        & F.col("members_last_seen").isNotNull()
        & (F.col("lag_growth") > 0)
    )
    found = candidates(
        holds,
        kind=KIND,
        severity=F.lit("critical"),
        explanation=F.format_string(
            "group %s has no member any more (the last left %.0f s ago) and its lag grew by %d "
            "records in %.0f s: nothing consumes it; start the application or find why all its "
            "instances stopped",
            F.col("group"),
            F.col("t") - F.col("members_last_seen"),
            F.col("lag_growth"),
            F.col("t") - F.col("lag_start_t"),
        ),
        evidence=F.struct(
            F.col("lag_total").alias("lag_records"),
            F.col("lag_growth").alias("lag_growth_records"),
            (F.col("t") - F.col("lag_start_t")).alias("over_seconds"),
            F.col("members_last_seen").alias("members_last_seen_at"),
            F.col("lag_partitions").alias("partitions"),
            F.col("state").alias("group_state"),
        ),
    )
    return Detection(KIND, found, everywhere(ctx.evaluations))
