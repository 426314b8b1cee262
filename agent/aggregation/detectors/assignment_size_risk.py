"""assignment_size_risk (warning): a classic group's metadata record is near the offsets
topic's ``max.message.bytes``, or grows fast enough to reach it soon.

The coordinator of a classic group stores the whole group in one
``__consumer_offsets`` record, written when the leader's SyncGroup arrives: every
member's subscription and assignment. A Kafka Streams assignment carries
group-wide maps (with ``application.server``, every instance's partitions), so
the record grows roughly as members x partitions. Once it exceeds the offsets
topic's ``max.message.bytes`` the write fails, the coordinator answers the
SyncGroup with an error, resets the assignment and rebalances again, forever
(KAFKA-7149). ``rebalance_loop`` names that cause once the loop runs; this rule
warns while there is still time.

Size: the sum of the members' subscription and assignment bytes as the
coordinator stores them (``tables.groups.metadata_bytes``), a slight under-estimate
of the record (member and client ids, hosts and framing come on top) unless the
offsets topic compresses. Limit: the offsets topic's effective
``max.message.bytes`` as the agent resolved it.

The rule judges a poll of a classic group (any classic group: the mechanism is the
coordinator's, Kafka Streams only makes it likely) that is Stable, has metadata
and a known limit: brokers describe members without metadata mid-rebalance, so
those polls neither count nor break a run. KIP-848 consumer groups and KIP-1071
streams groups are not judged: their coordinator keeps each member's metadata and
assignment as records of their own, so no single record grows with the group.

It holds at a judged poll when either

- *threshold*: the size is at least ``assignment_size_ratio`` of the limit; or
- *trend*: the size is at least ``assignment_growth_min_ratio`` of the limit and a
  least-squares line through the judged polls of the last
  ``assignment_growth_window`` (covering at least half of it) rises fast enough to
  reach the limit within ``assignment_growth_horizon``. (The floor keeps one
  scale-out step of a small group, extrapolated for days, from firing.) Off by
  default (a window of 0): the job would keep that much more history, and every
  micro-batch reads all of it.

and it must have held at every judged poll for ``evaluation_window``: one large
poll is not a risk.
"""

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from agent.aggregation.candidates import Context, Detection, candidates, rounded
from agent.aggregation.tables import KEYS
from agent.aggregation.windows import evaluated, looking_back, with_run_start

KIND = "assignment_size_risk"

_LARGEST_MEMBERS = 3
# Kafka Streams 2.4 (assignment version 5) names each topic once per assignment.
_TOPIC_DICTIONARY_VERSION = 5


def detect_assignment_size_risk(ctx: Context) -> Detection:
    p = ctx.params
    # KIP-848, KIP-1071 (and share) groups keep no group-wide record; a type the broker
    # did not report (ListGroups before v5) is a classic group.
    classic = ~F.coalesce(F.col("group_type").isin("consumer", "streams", "share"), F.lit(False))
    judged = ctx.tables.groups.where(
        classic
        & F.col("stable")
        & (F.col("metadata_bytes") > 0)
        & F.coalesce(F.col("max_message_bytes") > 0, F.lit(False))
    ).withColumn("ratio", F.col("metadata_bytes") / F.col("max_message_bytes"))

    if p.assignment_growth_window <= 0:
        return _detection(ctx, _trend_off(judged), F.lit(False))
    growth = looking_back(p.assignment_growth_window)
    fitted = (
        judged.withColumn(
            # Bytes per second: covariance over variance is the least-squares slope.
            "slope",
            F.try_divide(
                F.covar_pop("t", "metadata_bytes").over(growth), F.var_pop("t").over(growth)
            ),
        )
        .withColumn("fitted_over", F.col("t") - F.min("t").over(growth))
        .withColumn(
            "seconds_to_limit",
            F.when(
                (F.col("slope") > 0) & (F.col("metadata_bytes") < F.col("max_message_bytes")),
                (F.col("max_message_bytes") - F.col("metadata_bytes")) / F.col("slope"),
            ),
        )
    )
    trending = (
        (F.col("ratio") >= p.assignment_growth_min_ratio)
        & (F.col("fitted_over") >= p.assignment_growth_window / 2)
        & F.coalesce(F.col("seconds_to_limit") <= p.assignment_growth_horizon, F.lit(False))
    )
    return _detection(ctx, fitted, trending)


def _trend_off(judged: DataFrame) -> DataFrame:
    """The columns the trend would add, unknown."""
    unknown = F.lit(None).cast("double")
    return (
        judged.withColumn("slope", unknown)
        .withColumn("fitted_over", unknown)
        .withColumn("seconds_to_limit", unknown)
    )


def _detection(ctx: Context, fitted: DataFrame, trending: Column) -> Detection:
    p = ctx.params
    over_threshold = F.col("ratio") >= p.assignment_size_ratio
    at_risk = over_threshold | trending
    runs = (
        with_run_start(fitted, at_risk, "run_since")
        .withColumn("at_risk", at_risk)
        .withColumn("variant", F.when(over_threshold, F.lit("threshold")).otherwise("trend"))
    )
    at_evaluations = evaluated(runs, ctx.evaluations)
    holds = at_evaluations.where(
        F.col("at_risk") & (F.col("t") - F.col("run_since") >= p.evaluation_window)
    )
    rows = holds.join(_members_at(ctx.tables.members, holds), list(KEYS))
    found = candidates(
        rows,
        kind=KIND,
        severity=F.lit("warning"),
        since=F.col("run_since"),
        explanation=_explanation(p.assignment_size_ratio),
        evidence=F.struct(
            F.col("variant"),
            F.col("metadata_bytes"),
            F.col("max_message_bytes"),
            rounded("ratio").alias("ratio"),
            F.lit(p.assignment_size_ratio).alias("warning_ratio"),
            F.col("member_count").alias("members"),
            F.floor(F.col("metadata_bytes") / F.col("member_count")).alias("bytes_per_member"),
            F.col("largest_members"),
            F.col("instances"),
            F.col("assigned_partition_count").alias("partitions"),
            rounded(F.col("slope") * 3600, 1).alias("growth_bytes_per_hour"),
            rounded("seconds_to_limit", 0).alias("projected_seconds_to_limit"),
            F.col("fitted_over").alias("growth_fitted_over_seconds"),
            F.col("application_server"),
            F.col("oldest_assignment_version"),
            F.col("is_streams"),
            F.col("group_type"),
            (F.col("t") - F.col("run_since")).alias("at_risk_for_seconds"),
        ),
    )
    return Detection(KIND, found, at_evaluations.select(*KEYS))


def _members_at(members: DataFrame, holds: DataFrame) -> DataFrame:
    """Per evaluation where the rule holds: the largest members, the instance count,
    whether any member advertises application.server, the oldest assignment version."""
    present = members.join(holds.select(*KEYS), list(KEYS), "left_semi")
    bytes_of = F.col("subscription_bytes") + F.col("assignment_bytes")
    largest = F.slice(
        F.sort_array(
            F.collect_list(
                F.struct(
                    bytes_of.alias("bytes"),
                    F.col("member_id"),
                    F.col("client_id"),
                    F.col("process"),
                    F.col("thread"),
                    F.col("subscription_bytes"),
                    F.col("assignment_bytes"),
                )
            ),
            asc=False,
        ),
        1,
        _LARGEST_MEMBERS,
    )
    return present.groupBy(*KEYS).agg(
        largest.alias("largest_members"),
        # Members without a process id (plain consumers, undecoded) count as their own.
        F.count_distinct(F.coalesce(F.col("process"), F.col("member_id"))).alias("instances"),
        F.max(F.col("endpoint").isNotNull()).alias("application_server"),
        F.min("assignment_version").alias("oldest_assignment_version"),
    )


def _explanation(warning_ratio: float) -> Column:
    size = F.format_string(
        "group %s's metadata record (subscriptions and assignments of %d members, "
        "one __consumer_offsets record) is %d bytes, %.0f%% of the offsets topic's "
        "max.message.bytes %d",
        F.col("group"),
        F.col("member_count"),
        F.col("metadata_bytes"),
        F.col("ratio") * 100,
        F.col("max_message_bytes"),
    )
    growth = F.when(
        F.col("seconds_to_limit").isNotNull(),
        F.format_string(
            ", growing %.0f bytes/h: at that pace it reaches the limit in %s",
            F.col("slope") * 3600,
            _duration(F.col("seconds_to_limit")),
        ),
    ).otherwise(F.lit(""))
    which = F.when(
        F.col("variant") == "threshold",
        F.lit(f" (warning at {warning_ratio * 100:.0f}%)"),
    ).otherwise(F.lit(""))
    streams_fixes = F.concat(
        F.lit("run fewer instances or stream threads, read fewer or shorter-named topics "),
        F.lit("and partitions, or split the application"),
        F.when(
            F.col("application_server"),
            F.lit(", or leave application.server unset (it puts every instance's partitions "),
        ).otherwise(F.lit("")),
        F.when(F.col("application_server"), F.lit("into each assignment)")).otherwise(F.lit("")),
        F.when(
            F.col("oldest_assignment_version") < _TOPIC_DICTIONARY_VERSION,
            F.lit(", or upgrade Kafka Streams to 2.4+ (its assignments name each topic once)"),
        ).otherwise(F.lit("")),
    )
    plain_fixes = F.lit("run fewer members or subscribe to fewer or shorter-named topics")
    return F.concat(
        size,
        which,
        growth,
        F.lit("; past the limit every rebalance fails (KAFKA-7149) and the group rebalances "),
        F.lit("in a loop: raise max.message.bytes on __consumer_offsets, or "),
        F.when(F.col("is_streams"), streams_fixes).otherwise(plain_fixes),
    )


def _duration(seconds: Column) -> Column:
    """``9.5 h`` under two days, else ``3.2 days``."""
    return F.when(seconds < 2 * 86400, F.format_string("%.1f h", seconds / 3600)).otherwise(
        F.format_string("%.1f days", seconds / 86400)
    )
