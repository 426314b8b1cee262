"""hot_partitions_colocated: two or more hot units piled on one member (or instance)
while another member (instance) of the group holds none.

A unit (a Kafka Streams task, else a partition) is hot when its rate is at
least ``hot_factor`` x the median rate of the group's input partitions that
have traffic, and at least ``min_hot_rate``. The check runs at member level
(one stream thread) and at instance level (one Streams process), where CPU
and memory pressure land. The evidence names the single move of one unit to
another holder that lowers the group's maximum load the most.
"""

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from agent.aggregation.candidates import Context, Detection, candidates, rounded, when_stable
from agent.aggregation.tables import KEYS
from agent.aggregation.windows import reused

KIND = "hot_partitions_colocated"


def detect_hot_partitions_colocated(ctx: Context) -> Detection:
    p = ctx.params
    medians = (
        ctx.rates.partitions.where(F.col("rate") > 0)
        .groupBy(*KEYS)
        .agg(F.median("rate").alias("median_rate"))
    )
    units = ctx.rates.units.join(medians, list(KEYS))
    threshold = F.greatest(F.col("median_rate") * F.lit(p.hot_factor), F.lit(p.min_hot_rate))
    units = reused(
        units.withColumn("threshold", threshold).withColumn(
            "hot", F.col("rate") >= F.col("threshold")
        )
    )

    member_units = units.withColumnRenamed("member_id", "holder")
    members = ctx.rates.members.withColumnRenamed("member_id", "holder")
    member_level = _colocated(members, member_units)
    instance_units = units.withColumn("holder", F.col("process"))
    instances = ctx.rates.instances.withColumn("holder", F.col("process")).where(
        F.col("process").isNotNull()
    )
    # Outside Kafka Streams a consumer is its own instance: the member level says it all.
    instance_level = _colocated(instances, instance_units).where(F.col("unit_kind") == "task")

    unit_word = F.when(F.col("unit_kind") == "task", F.lit("tasks")).otherwise(F.lit("partitions"))
    member_found = candidates(
        member_level.withColumn("unit_word", unit_word),
        kind=KIND,
        severity=F.lit("warning"),
        process=F.col("process"),
        thread=F.col("thread"),
        explanation=F.format_string(
            "%s holds %d hot %s (%s) while another member holds none; move %s to %s to cut "
            "the busiest member's load from %.1f to %.1f records/s",
            _member_name(F.col("process"), F.col("thread"), F.col("client_id")),
            F.col("hot_count"),
            F.col("unit_word"),
            F.array_join(F.transform(F.col("hot_units"), lambda u: u["unit"]), ", "),
            F.col("move.unit"),
            _member_name(F.col("move.process"), F.col("move.thread"), F.col("move.client_id")),
            F.col("move.max_load_before"),
            F.col("move.max_load_after"),
        ),
        evidence=F.struct(
            F.lit("member").alias("level"),
            F.col("holder").alias("member_id"),
            "client_id",
            "host",
            "process",
            "thread",
            "hot_units",
            rounded("load").alias("load_records_per_second"),
            rounded("mean_load").alias("mean_member_load_records_per_second"),
            F.col("holders").alias("members"),
            rounded("median_rate").alias("median_partition_rate"),
            rounded("threshold").alias("hot_threshold_records_per_second"),
            F.struct(
                F.col("move.unit").alias("unit"),
                rounded("move.unit_rate").alias("unit_records_per_second"),
                F.col("move.holder").alias("to_member_id"),
                F.col("move.process").alias("to_process"),
                F.col("move.thread").alias("to_thread"),
                rounded("move.max_load_before").alias("max_load_before"),
                rounded("move.max_load_after").alias("max_load_after"),
            ).alias("suggested_move"),
        ),
    )
    instance_found = candidates(
        instance_level.withColumn("unit_word", unit_word),
        kind=KIND,
        severity=F.lit("warning"),
        process=F.col("process"),
        explanation=F.format_string(
            "instance %s holds %d hot %s (%s) while another instance holds none; move %s to "
            "instance %s to cut the busiest instance's load from %.1f to %.1f records/s",
            F.col("process"),
            F.col("hot_count"),
            F.col("unit_word"),
            F.array_join(F.transform(F.col("hot_units"), lambda u: u["unit"]), ", "),
            F.col("move.unit"),
            F.col("move.process"),
            F.col("move.max_load_before"),
            F.col("move.max_load_after"),
        ),
        evidence=F.struct(
            F.lit("instance").alias("level"),
            "process",
            "hot_units",
            rounded("load").alias("load_records_per_second"),
            rounded("mean_load").alias("mean_instance_load_records_per_second"),
            F.col("holders").alias("instances"),
            rounded("median_rate").alias("median_partition_rate"),
            rounded("threshold").alias("hot_threshold_records_per_second"),
            F.struct(
                F.col("move.unit").alias("unit"),
                rounded("move.unit_rate").alias("unit_records_per_second"),
                F.col("move.process").alias("to_process"),
                rounded("move.max_load_before").alias("max_load_before"),
                rounded("move.max_load_after").alias("max_load_after"),
            ).alias("suggested_move"),
        ),
    )
    return Detection(
        KIND, member_found.unionByName(instance_found), when_stable(ctx.tables, ctx.evaluations)
    )


def _member_name(process: Column, thread: Column, client_id: Column) -> Column:
    return F.when(
        thread.isNotNull(),
        F.format_string("thread %d of instance %s", thread, process),
    ).otherwise(F.format_string("member %s", client_id))


def _colocated(holders: DataFrame, units: DataFrame) -> DataFrame:
    """Holders (``holder``, ``load``) with >= 2 hot units while another holds none.

    Adds ``hot_count``, ``hot_units``, ``mean_load``, ``holders``, the unit
    kind, the threshold and ``move``: the single move of one of its units to
    the least-loaded other holder that most lowers the maximum load.
    """
    hot = (
        units.where(F.col("hot"))
        .groupBy(*KEYS, "holder")
        .agg(
            F.count("unit").alias("hot_count"),
            F.array_sort(
                F.collect_list(F.struct(F.col("rate"), F.col("unit"))),
                # Busiest first; equal rates by unit id.
                lambda a, b: (
                    F.when(a["rate"] > b["rate"], -1)
                    .when(a["rate"] < b["rate"], 1)
                    .when(a["unit"] < b["unit"], -1)
                    .when(a["unit"] > b["unit"], 1)
                    .otherwise(0)
                ),
            ).alias("_hot"),
            F.first("unit_kind").alias("unit_kind"),
            F.first("median_rate").alias("median_rate"),
            F.first("threshold").alias("threshold"),
        )
        .withColumn(
            "hot_units",
            F.transform(
                F.col("_hot"),
                lambda u: F.struct(
                    u["unit"].alias("unit"), F.round(u["rate"], 3).alias("records_per_second")
                ),
            ),
        )
        .drop("_hot")
    )
    counted = holders.join(hot, [*KEYS, "holder"], "left").withColumn(
        "hot_count", F.coalesce(F.col("hot_count"), F.lit(0))
    )
    group = Window.partitionBy(*KEYS)
    counted = reused(
        counted.withColumn("cold_holders", F.sum((F.col("hot_count") == 0).cast("int")).over(group))
        .withColumn("mean_load", F.avg("load").over(group))
        .withColumn("holders", F.count("holder").over(group))
    )
    lowest = _ranked(counted, ascending=True, keep=2)
    highest = _ranked(counted, ascending=False, keep=3)
    piled = counted.where((F.col("hot_count") >= 2) & (F.col("cold_holders") >= 1))  # noqa: PLR2004
    piled = piled.join(lowest, list(KEYS)).join(highest, list(KEYS))
    target = F.element_at(F.filter("lowest", lambda x: x["holder"] != F.col("holder")), 1)
    piled = piled.withColumn("target", target).withColumn(
        "other_max",
        F.coalesce(
            F.array_max(
                F.transform(
                    F.filter(
                        "highest",
                        lambda x: (
                            (x["holder"] != F.col("holder"))
                            & (x["holder"] != F.col("target.holder"))
                        ),
                    ),
                    lambda x: x["load"],
                )
            ),
            F.lit(0.0),
        ),
    )
    own_units = units.select(
        *KEYS, "holder", F.col("unit").alias("move_unit"), F.col("rate").alias("move_rate")
    )
    options = piled.join(own_units, [*KEYS, "holder"]).withColumn(
        "max_after",
        F.greatest(
            F.col("load") - F.col("move_rate"),
            F.col("target.load") + F.col("move_rate"),
            F.col("other_max"),
        ),
    )
    best = Window.partitionBy(*KEYS, "holder").orderBy(
        F.col("max_after"), F.col("move_rate").desc(), F.col("move_unit")
    )
    chosen = options.withColumn("_rank", F.row_number().over(best)).where(F.col("_rank") == 1)
    return chosen.withColumn(
        "move",
        F.struct(
            F.col("move_unit").alias("unit"),
            F.col("move_rate").alias("unit_rate"),
            F.col("target.holder").alias("holder"),
            F.col("target.process").alias("process"),
            F.col("target.thread").alias("thread"),
            F.col("target.client_id").alias("client_id"),
            F.greatest(F.col("load"), F.col("other_max"), F.col("target.load")).alias(
                "max_load_before"
            ),
            F.col("max_after").alias("max_load_after"),
        ),
    )


def _ranked(holders: DataFrame, *, ascending: bool, keep: int) -> DataFrame:
    """Per evaluation, the ``keep`` least (or most) loaded holders as an array."""
    order = F.col("load") if ascending else F.col("load").desc()
    window = Window.partitionBy(*KEYS).orderBy(order, F.col("holder"))
    name = "lowest" if ascending else "highest"
    has = set(holders.columns)
    kinds = {"holder": "string", "load": "double", "process": "string", "thread": "long"}
    fields = [
        (F.col(c) if c in has else F.lit(None)).cast(kind).alias(c)
        for c, kind in {**kinds, "client_id": "string"}.items()
    ]
    return (
        holders.withColumn("_rank", F.row_number().over(window))
        .where(F.col("_rank") <= keep)
        .groupBy(*KEYS)
        .agg(F.sort_array(F.collect_list(F.struct(F.col("_rank"), *fields))).alias(name))
    )
