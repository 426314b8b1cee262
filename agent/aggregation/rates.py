"""Partition rates and the load of tasks, stream threads (members) and instances.

Rate of a partition: growth of its log-end offset over the evaluation window
divided by the time it took (records/s). Load of a unit of work (a Kafka
Streams task, else a partition): the sum of its source partitions' rates.
Load of a member: the sum over the units it holds; of an instance (a Streams
process), the sum over its members.
"""

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from agent.aggregation.tables import KEYS, Tables
from agent.aggregation.windows import evaluated, looking_back, reused, since_first_evaluation


@dataclass(frozen=True)
class Rates:
    """Rates and loads at the evaluation times."""

    partitions: DataFrame  # KEYS, topic, partition, rate (null: unknown yet), log_end_offset, lag
    units: DataFrame  # KEYS, member_id, client_id, host, process, thread, unit, unit_kind, rate
    members: DataFrame  # KEYS, member_id, client_id, host, process, thread, load, units
    instances: DataFrame  # KEYS, process, load, members


def partition_rates(partitions: DataFrame, window: float) -> DataFrame:
    """Every partition row with its rate over the ``window`` seconds before it."""
    rows = partitions.where(F.col("log_end_offset").isNotNull())
    back = looking_back(window, "topic", "partition")
    start_t = F.first("t").over(back)
    start_offset = F.first("log_end_offset").over(back)
    elapsed = F.col("t") - start_t
    growth = F.greatest(F.col("log_end_offset") - start_offset, F.lit(0))
    return rows.withColumn("rate_elapsed", elapsed).withColumn(
        "rate", F.when(F.col("rate_elapsed") > 0, growth / F.col("rate_elapsed"))
    )


def compute_rates(tables: Tables, evaluations: DataFrame, window: float) -> Rates:
    recent = since_first_evaluation(tables.partitions, evaluations, window)
    # Each table reused before the next is derived from it, so none is computed twice.
    partitions = reused(evaluated(partition_rates(recent, window), evaluations))
    units = (
        evaluated(tables.units, evaluations)
        .join(
            partitions.select(*KEYS, "topic", "partition", "rate"),
            [*KEYS, "topic", "partition"],
            "left",
        )
        .groupBy(*KEYS, "member_id", "client_id", "host", "process", "thread", "unit", "unit_kind")
        .agg(
            F.sum(F.coalesce(F.col("rate"), F.lit(0.0))).alias("rate"),
            F.sort_array(
                F.collect_list(F.concat_ws("-", F.col("topic"), F.col("partition").cast("string")))
            ).alias("source_partitions"),
        )
    )
    units = reused(units)
    per_member = units.groupBy(*KEYS, "member_id").agg(
        F.sum("rate").alias("load"), F.count("unit").alias("units")
    )
    members = (
        # During a rebalance Streams members come undecoded: their load is unknown, not zero.
        evaluated(tables.members.where(F.col("decoded") | ~F.col("is_streams")), evaluations)
        .select(
            *KEYS,
            "member_id",
            "client_id",
            "host",
            F.coalesce(F.col("process"), F.col("client_id")).alias("process"),
            "thread",
        )
        .join(per_member, [*KEYS, "member_id"], "left")
        .select(
            *KEYS,
            "member_id",
            "client_id",
            "host",
            "process",
            "thread",
            F.coalesce(F.col("load"), F.lit(0.0)).alias("load"),
            F.coalesce(F.col("units"), F.lit(0)).alias("units"),
        )
    )
    members = reused(members)
    instances = members.groupBy(*KEYS, "process").agg(
        F.sum("load").alias("load"), F.count("member_id").alias("members")
    )
    return Rates(partitions=partitions, units=units, members=members, instances=reused(instances))
