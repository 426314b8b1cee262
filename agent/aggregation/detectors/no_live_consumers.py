"""no_live_consumers (critical): the group is left with no members and its lag grows.

"Left": it had members within ``thread_history``, and has had none for
``thread_death_grace`` (a single member re-joining after a poll timeout
leaves the group empty for a moment). A group nobody has consumed for
longer is abandoned, not broken, and the agent's lag metrics cover it.

A group that is Empty at every poll while its generation climbs is not
stopped: its members join and leave again between polls. Seen live (bench/
detection_latency.py): one stream thread overrunning ``max.poll.interval.ms``
re-joins after its buffered records, minutes later, and is out again within
seconds, so a 10 s poll never sees it. The explanation here says what is going
on; ``rebalance_loop`` opens beside it once the generations between Empty
polls reach its count of rebalances.

Judged at every poll except one that sees the group Empty for less than
``thread_death_grace``: there it cannot yet tell a member's brief re-join from
consumers gone. Judging it would close the finding of a looping group at its
first poll that catches a member (the evaluation window after the rule last
held comes before the grace is over again), and open it anew one grace
later: seen live, a critical alert that fired twice for one outage.
"""

from pyspark.sql import Column, Window
from pyspark.sql import functions as F

from agent.aggregation.candidates import Context, Detection, candidates
from agent.aggregation.tables import KEYS
from agent.aggregation.windows import by_series, evaluated, looking_back, with_run_start

KIND = "no_live_consumers"


def detect_no_live_consumers(ctx: Context) -> Detection:
    p = ctx.params
    groups = ctx.tables.groups
    window = looking_back(p.evaluation_window)
    history = looking_back(p.thread_history)
    empty = with_run_start(groups, F.col("member_count") == 0, "count_since")
    # Classic groups count generations, KIP-848 groups epochs: either rises per rebalance.
    generation = F.coalesce(F.col("generation"), F.col("group_epoch"))
    judged = (
        empty.withColumn("lag_start", F.first("lag_total").over(window))
        .withColumn("lag_start_t", F.first("t").over(window))
        .withColumn(
            "members_last_seen", F.max(F.when(F.col("member_count") > 0, F.col("t"))).over(history)
        )
        .withColumn("lag_growth", F.col("lag_total") - F.col("lag_start"))
        .withColumn("generation_now", generation)
        .withColumn(
            "generation_emptied",
            F.last(F.when(F.col("t") == F.col("count_since"), generation), ignorenulls=True).over(
                by_series().rowsBetween(Window.unboundedPreceding, Window.currentRow)
            ),
        )
        .withColumn(
            "rejoins", F.greatest(F.col("generation_now") - F.col("generation_emptied"), F.lit(0))
        )
        # Still rising within the look-back: a loop that stopped for good is an abandoned
        # group again once its last re-join is older than ``thread_history``.
        .withColumn("rising", F.col("generation_now") > F.min(generation).over(history))
    )
    at_evaluations = evaluated(judged, ctx.evaluations)
    empty_within_grace = (F.col("member_count") == 0) & (
        F.col("t") - F.col("count_since") < p.thread_death_grace
    )
    holds = at_evaluations.where(
        (F.col("member_count") == 0)
        & ~empty_within_grace
        & (F.col("members_last_seen").isNotNull() | _rejoining())
        & (F.col("lag_growth") > 0)
    )
    found = candidates(
        holds,
        kind=KIND,
        severity=F.lit("critical"),
        explanation=F.when(
            _rejoining(),
            F.format_string(
                "group %s shows no member at any poll for %.0f s, yet its generation went from "
                "%d to %d meanwhile, and its lag grew by %d records in %.0f s: members join and "
                "leave again between polls (processing longer than max.poll.interval.ms, or "
                "instances crash-looping); look at the application's logs for poll timeouts "
                "and restarts",
                F.col("group"),
                F.col("t") - F.col("count_since"),
                F.col("generation_emptied"),
                F.col("generation_now"),
                F.col("lag_growth"),
                F.col("t") - F.col("lag_start_t"),
            ),
        ).otherwise(
            F.format_string(
                "group %s has no member any more (the last left %.0f s ago) and its lag grew by "
                "%d records in %.0f s: nothing consumes it; start the application or find why "
                "all its instances stopped",
                F.col("group"),
                F.col("t") - F.col("members_last_seen"),
                F.col("lag_growth"),
                F.col("t") - F.col("lag_start_t"),
            )
        ),
        evidence=F.struct(
            F.col("lag_total").alias("lag_records"),
            F.col("lag_growth").alias("lag_growth_records"),
            (F.col("t") - F.col("lag_start_t")).alias("over_seconds"),
            F.col("members_last_seen").alias("members_last_seen_at"),
            F.col("lag_partitions").alias("partitions"),
            F.col("state").alias("group_state"),
            F.col("rejoins").alias("rebalances_while_empty"),
        ),
    )
    coverage = at_evaluations.where(~F.coalesce(empty_within_grace, F.lit(False))).select(*KEYS)
    return Detection(KIND, found, coverage)


def _rejoining() -> Column:
    """Members joined (and left again) since the group was last seen with none, lately."""
    return F.coalesce((F.col("rejoins") > 0) & F.col("rising"), F.lit(False))
