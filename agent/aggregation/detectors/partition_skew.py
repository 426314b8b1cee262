"""partition_skew (info): one partition carries at least ``skew_min_share`` of its
topic's traffic, on a topic with at least ``skew_min_partitions`` partitions.

A hot key does this (seed 001). A groupBy on the same key copies the skew into
the repartition topic; the evidence says which topics of the group share the
skewed partition, so a person sees where it came from and where it went.
"""

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from agent.aggregation.candidates import Context, Detection, candidates, rounded
from agent.aggregation.tables import KEYS
from agent.aggregation.windows import evaluated

KIND = "partition_skew"


def detect_partition_skew(ctx: Context) -> Detection:
    p = ctx.params
    known = ctx.rates.partitions.where(F.col("rate").isNotNull())
    kinds = evaluated(ctx.tables.topics, ctx.evaluations).select(
        *KEYS, "topic", F.col("partitions").alias("topic_partitions"), "internal_kind"
    )
    topic = Window.partitionBy(*KEYS, "topic")
    shares = (
        known.join(kinds, [*KEYS, "topic"], "left")
        .withColumn("topic_rate", F.sum("rate").over(topic))
        .withColumn(
            "partitions",
            F.greatest(F.coalesce(F.col("topic_partitions"), F.lit(0)), F.count("*").over(topic)),
        )
        .withColumn("share", F.try_divide(F.col("rate"), F.col("topic_rate")))
    )
    skewed = shares.where(
        (F.col("topic_rate") > 0)
        & (F.col("partitions") >= p.skew_min_partitions)
        & (F.col("share") >= p.skew_min_share)
        & (F.col("rate") >= p.min_hot_rate)
    )
    related = _same_partition_elsewhere(skewed)
    found = candidates(
        related,
        kind=KIND,
        severity=F.lit("info"),
        topic=F.col("topic"),
        partition=F.col("partition"),
        explanation=F.format_string(
            "partition %s-%d carries %.0f%% of topic %s's %.1f records/s (a hot key)%s; "
            "its consumer cannot spread that load, whatever the assignment",
            F.col("topic"),
            F.col("partition"),
            F.col("share") * 100,
            F.col("topic"),
            F.col("topic_rate"),
            F.when(
                F.size("inherited_by") > 0,
                F.concat(F.lit("; inherited by "), F.array_join("inherited_by", ", ")),
            )
            .when(
                F.size("inherited_from") > 0,
                F.concat(F.lit("; inherited from "), F.array_join("inherited_from", ", ")),
            )
            .otherwise(F.lit("")),
        ),
        evidence=F.struct(
            "topic",
            "partition",
            rounded("share").alias("share"),
            rounded("rate").alias("partition_records_per_second"),
            rounded("topic_rate").alias("topic_records_per_second"),
            "partitions",
            F.coalesce(F.col("internal_kind"), F.lit("input")).alias("topic_kind"),
            "inherited_by",
            "inherited_from",
        ),
    )
    coverage = known.select(*KEYS).distinct()
    return Detection(KIND, found, coverage)


def _same_partition_elsewhere(skewed: DataFrame) -> DataFrame:
    """Add ``inherited_by`` (skewed repartition topics at the same partition number, for
    an input topic) and ``inherited_from`` (skewed input topics, for a repartition topic)."""
    others = skewed.select(
        *KEYS,
        "partition",
        F.col("topic").alias("other_topic"),
        (F.col("internal_kind") == "repartition").alias("other_is_repartition"),
    )
    is_repartition = F.coalesce(F.col("internal_kind") == "repartition", F.lit(False))
    joined = skewed.join(others, [*KEYS, "partition"], "left").where(
        F.col("other_topic").isNull() | (F.col("other_topic") != F.col("topic"))
    )
    other_repartition = F.coalesce(F.col("other_is_repartition"), F.lit(False))
    # A skewed topic alone at its partition number (no other row) is kept by the left join.
    return joined.groupBy(*skewed.columns).agg(
        F.sort_array(
            F.collect_set(F.when(~is_repartition & other_repartition, F.col("other_topic")))
        ).alias("inherited_by"),
        F.sort_array(
            F.collect_set(
                F.when(
                    is_repartition & ~other_repartition & F.col("other_topic").isNotNull(),
                    F.col("other_topic"),
                )
            )
        ).alias("inherited_from"),
    )
