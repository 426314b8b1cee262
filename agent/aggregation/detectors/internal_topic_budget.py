"""internal_topic_budget and broker_partition_budget: internal topics and partition replicas
against configured budgets, before they become an operations problem (seed 001).

Kafka Streams creates a repartition topic for every key change and a changelog for
every logged store, each with the partition count of its input, times the cluster's
replication factor. Nobody declares them: an application can quietly own dozens of
topics and thousands of partition replicas, and a broker's cost grows with every
replica it hosts (open files, replica fetching, index memory, leader elections on a
restart).

``internal_topic_budget`` (per application, a group-level finding): at each poll of
a Kafka Streams group by an agent that lists every topic (a central agent; a sidecar
sees only some of them), its internal topics (``Snapshot.topics`` with an
``internal_kind``) are counted, and their replicas (partitions x replication factor;
a factor not known counts as 1, a lower bound). It holds from
``budget_approach_ratio`` of a budget (info) and is a warning above one
(``internal_topics_per_application``, ``internal_replicas_per_application``; 0 turns
a budget off). The group's state does not matter: an application that is down
still owns its topics.

``broker_partition_budget`` (per cluster, ``group`` empty): the partition replicas
each broker hosts over every topic of the cluster (``cluster_facts.brokers``, from
the all-topics Metadata), against ``partition_replicas_per_broker``. One finding per
cluster names every broker at or over the approach share: the finding labels have
no broker dimension, and brokers of one cluster usually cross together. Every group
of one poll carries the same facts; they are read once per agent and poll.

Both must hold at every judged poll for ``budget_hold`` before they open, and close
once under the approach share for the evaluation window (hysteresis).
"""

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from agent.aggregation.candidates import Context, Detection, candidates, rounded
from agent.aggregation.tables import KEYS
from agent.aggregation.windows import evaluated, with_run_start

KIND = "internal_topic_budget"
BROKER_KIND = "broker_partition_budget"
_BIGGEST = 5


def detect_internal_topic_budget(ctx: Context) -> Detection:
    p = ctx.params
    judged = ctx.tables.groups.where(F.col("is_streams") & F.col("all_topics_known")).select(*KEYS)
    usage = judged.join(_internal_usage(ctx.tables.topics, judged), list(KEYS), "left").fillna(
        0, ["internal_topics", "internal_partitions", "internal_replicas"]
    )
    topics_ratio = _ratio(F.col("internal_topics"), p.internal_topics_per_application)
    replicas_ratio = _ratio(F.col("internal_replicas"), p.internal_replicas_per_application)
    ratio = F.greatest(topics_ratio, replicas_ratio)
    with_ratio = usage.withColumn("ratio", ratio).withColumn(
        "near", F.coalesce(F.col("ratio") >= p.budget_approach_ratio, F.lit(False))
    )
    runs = with_run_start(with_ratio, F.col("near"), "run_since")
    at_evaluations = evaluated(runs, ctx.evaluations)
    holds = at_evaluations.where(F.col("near") & (F.col("t") - F.col("run_since") >= p.budget_hold))
    over = F.filter(
        F.array(
            F.when(topics_ratio > 1, F.lit("topics")),
            F.when(replicas_ratio > 1, F.lit("replicas")),
        ),
        lambda x: x.isNotNull(),
    )
    rows = holds.withColumn("over", over).withColumn(
        "severity", F.when(F.size("over") > 0, F.lit("warning")).otherwise(F.lit("info"))
    )
    found = candidates(
        rows,
        kind=KIND,
        severity=F.col("severity"),
        since=F.col("run_since"),
        explanation=_app_explanation(
            p.internal_topics_per_application, p.internal_replicas_per_application
        ),
        evidence=F.struct(
            F.col("internal_topics"),
            F.col("internal_partitions"),
            F.col("internal_replicas"),
            F.col("repartition_topics"),
            F.col("changelog_topics"),
            _budget(p.internal_topics_per_application).alias("budget_topics"),
            _budget(p.internal_replicas_per_application).alias("budget_replicas"),
            rounded("ratio").alias("budget_ratio"),
            F.col("over"),
            F.col("by_kind"),
            F.col("biggest"),
            F.col("replication_factor_unknown"),
            (F.col("t") - F.col("run_since")).alias("held_for_seconds"),
        ),
    )
    return Detection(KIND, found, at_evaluations.select(*KEYS))


def _internal_usage(topics: DataFrame, judged: DataFrame) -> DataFrame:
    """Per poll: the application's internal topics counted, by kind, and the biggest."""
    internal = (
        topics.where(F.col("internal_kind").isNotNull())
        .join(judged, list(KEYS), "left_semi")
        .withColumn("rf", F.coalesce(F.col("replication_factor"), F.lit(1)).cast("long"))
        .withColumn("replicas", F.col("partitions").cast("long") * F.col("rf"))
    )
    by_kind = internal.groupBy(*KEYS, "internal_kind").agg(
        F.count("topic").alias("topics"),
        F.sum("partitions").alias("partitions"),
        F.sum("replicas").alias("replicas"),
    )
    kinds = by_kind.groupBy(*KEYS).agg(
        F.sort_array(
            F.collect_list(
                F.struct(
                    F.col("internal_kind").alias("kind"),
                    F.col("topics"),
                    F.col("partitions").cast("long").alias("partitions"),
                    F.col("replicas"),
                )
            )
        ).alias("by_kind")
    )
    biggest = F.slice(
        F.sort_array(
            F.collect_list(
                F.struct(
                    F.col("replicas"),
                    F.col("topic"),
                    F.col("internal_kind").alias("kind"),
                    F.col("partitions").cast("long").alias("partitions"),
                    F.col("replication_factor"),
                )
            ),
            asc=False,
        ),
        1,
        _BIGGEST,
    )
    totals = internal.groupBy(*KEYS).agg(
        F.count("topic").alias("internal_topics"),
        F.sum("partitions").cast("long").alias("internal_partitions"),
        F.sum("replicas").alias("internal_replicas"),
        F.count(F.when(F.col("internal_kind") == "repartition", 1)).alias("repartition_topics"),
        F.count(F.when(F.col("internal_kind") == "changelog", 1)).alias("changelog_topics"),
        F.count(F.when(F.col("replication_factor").isNull(), 1)).alias(
            "replication_factor_unknown"
        ),
        biggest.alias("biggest"),
    )
    return totals.join(kinds, list(KEYS))


def detect_broker_partition_budget(ctx: Context) -> Detection:
    p = ctx.params
    # One row per agent and poll: every group of a poll carries the same cluster facts.
    facts = (
        ctx.tables.groups.where(F.size("broker_loads") > 0)
        .dropDuplicates(["cluster", "agent", "t"])
        .select(
            "cluster",
            F.lit("").alias("group"),
            "agent",
            "t",
            "broker_loads",
            "cluster_topics",
            "cluster_partitions",
            "cluster_replicas",
        )
    )
    brokers = F.transform(
        "broker_loads",
        lambda b: F.struct(
            b["replicas"].alias("replicas"),
            b["broker_id"].alias("broker"),
            b["leaders"].alias("leaders"),
            b["streams_internal_replicas"].alias("streams_internal_replicas"),
            rounded(b["streams_internal_replicas"] / F.greatest(b["replicas"], F.lit(1))).alias(
                "streams_internal_share"
            ),
            rounded(_ratio(b["replicas"], p.partition_replicas_per_broker)).alias("budget_ratio"),
        ),
    )
    budget = p.partition_replicas_per_broker
    near = F.filter(
        "brokers",
        lambda b: F.lit(budget > 0) & (b["replicas"] >= F.lit(p.budget_approach_ratio * budget)),
    )
    with_near = (
        facts.withColumn("brokers", brokers)
        .withColumn("brokers_near", F.sort_array(near, asc=False))
        .withColumn("near", F.size("brokers_near") > 0)
    )
    runs = with_run_start(with_near, F.col("near"), "run_since")
    evaluations = ctx.evaluations.select("cluster", "agent", "t").distinct()
    at_evaluations = runs.join(evaluations, ["cluster", "agent", "t"], "left_semi")
    holds = at_evaluations.where(F.col("near") & (F.col("t") - F.col("run_since") >= p.budget_hold))
    rows = holds.withColumn(
        "brokers_over", F.filter("brokers_near", lambda b: b["replicas"] > F.lit(budget))
    ).withColumn(
        "severity",
        F.when(F.size("brokers_over") > 0, F.lit("warning")).otherwise(F.lit("info")),
    )
    found = candidates(
        rows,
        kind=BROKER_KIND,
        severity=F.col("severity"),
        since=F.col("run_since"),
        explanation=_broker_explanation(p.partition_replicas_per_broker),
        evidence=F.struct(
            _budget(p.partition_replicas_per_broker).alias("budget_replicas_per_broker"),
            F.transform("brokers_near", _broker_evidence).alias("brokers"),
            F.size("brokers_over").alias("brokers_over_budget"),
            F.size("brokers").alias("broker_count"),
            F.col("cluster_topics").alias("total_topics"),
            F.col("cluster_partitions").alias("total_partitions"),
            F.col("cluster_replicas").alias("total_replicas"),
            (F.col("t") - F.col("run_since")).alias("held_for_seconds"),
        ),
    )
    return Detection(BROKER_KIND, found, at_evaluations.select(*KEYS), cluster_level=True)


def _broker_evidence(b: Column) -> Column:
    return F.struct(
        b["broker"].alias("broker"),
        b["replicas"].alias("replicas"),
        b["leaders"].alias("leaders"),
        b["streams_internal_replicas"].alias("streams_internal_replicas"),
        b["streams_internal_share"].alias("streams_internal_share"),
        b["budget_ratio"].alias("budget_ratio"),
    )


def _ratio(count: Column, budget: int) -> Column:
    """``count`` over ``budget``; null when the budget is off (0)."""
    return count / F.lit(budget) if budget > 0 else F.lit(None).cast("double")


def _budget(budget: int) -> Column:
    return F.lit(budget if budget > 0 else None).cast("long")


def _app_explanation(topics_budget: int, replicas_budget: int) -> Column:
    budgets = ", ".join(
        text
        for text in (
            f"{topics_budget} internal topics" if topics_budget > 0 else "",
            f"{replicas_budget} partition replicas" if replicas_budget > 0 else "",
        )
        if text
    )
    state = F.when(F.size("over") > 0, F.lit("over")).otherwise(
        F.concat(F.round(F.col("ratio") * 100).cast("long").cast("string"), F.lit(" % of"))
    )
    biggest = F.array_join(
        F.transform(
            "biggest",
            lambda b: F.format_string(
                "%s (%s, %d partitions x %s)",
                b["topic"],
                b["kind"],
                b["partitions"],
                F.coalesce(b["replication_factor"].cast("string"), F.lit("?")),
            ),
        ),
        ", ",
    )
    return F.concat(
        F.format_string(
            "application %s has %d internal topics (%d repartition, %d changelog) with "
            "%d partitions, %d partition replicas: ",
            F.col("group"),
            F.col("internal_topics"),
            F.col("repartition_topics"),
            F.col("changelog_topics"),
            F.col("internal_partitions"),
            F.col("internal_replicas"),
        ),
        state,
        F.lit(f" its budget ({budgets}); the biggest: "),
        biggest,
        F.lit(
            "; fewer key changes (each one adds a repartition topic), "
            "topology.optimization=all (source topics reused as table changelogs, "
            "repartitions merged), fewer input partitions, or a larger budget"
        ),
    )


def _broker_explanation(budget: int) -> Column:
    first = F.col("brokers_near")[0]
    state = F.when(F.size("brokers_over") > 0, F.lit("over")).otherwise(F.lit("near"))
    return F.concat(
        F.format_string(
            "%d of %d brokers host partition replicas %s the budget of %d per broker; "
            "the most: broker %d with %d replicas (%d leaders), %d %% of them internal "
            "topics of Kafka Streams applications; ",
            F.size("brokers_near"),
            F.size("brokers"),
            state,
            F.lit(budget),
            first["broker"],
            first["replicas"],
            first["leaders"],
            F.round(first["streams_internal_share"] * 100).cast("long"),
        ),
        F.format_string(
            "the cluster has %d topics, %d partitions, %d replicas: add brokers, "
            "delete unused topics, shrink Streams internal topics (internal_topic_budget "
            "findings), or raise the budget",
            F.col("cluster_topics"),
            F.col("cluster_partitions"),
            F.col("cluster_replicas"),
        ),
    )
