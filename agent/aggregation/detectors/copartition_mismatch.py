"""copartition_mismatch: one sub-topology reads topics of different partition counts.

Kafka Streams makes one task per partition number of a sub-topology, from 0 to
the largest partition count of the topics it reads; task ``<s>_<p>`` reads
partition ``p`` of every one of those topics that has it. With equal counts (and
the same partitioner) a key lands in the same task whichever topic it comes
from, which is what joins need (co-partitioning). With different counts the
tasks past the smaller count read only some of the topics: a key's records from
two topics meet in different tasks, so a join there misses matches and a
stateful merge splits a key's state in two.

What Kafka does about it (read from Apache Kafka 4.3.1's sources and jars):
- a KIP-1071 (``streams``) group: the broker checks every co-partition group
  (joins) of the topology against the topics' counts and refuses a mismatch
  (heartbeat status INCORRECTLY_PARTITIONED_TOPICS): the group stays NotReady
  and no member gets a task; each member's stream thread then fails with a
  TopologyException (the uncaught-exception handler decides: a replaced thread
  rejoins and fails again, a shut-down client leaves the group empty);
- a classic group: the leader's StreamsPartitionAssignor checks co-partition
  groups only when the application has repartition topics; there it throws a
  TopologyException out of the leader's poll (no assignment error code: the
  leader's stream thread dies, and the next leader's after it). Without
  repartition topics it checks nothing and assigns the tasks: the join runs
  and silently mis-joins;
- topics merged in one sub-topology without a join are no co-partition group:
  no version checks them.

Sources of a sub-topology: the topology the snapshot carries
(``Snapshot.subtopologies``: a KIP-1071 broker's, or a configured
``Topology#describe()``), else the topics its active tasks read (a Stable
Streams group with every member decoded and at least one task). Partition
counts: the snapshot's topics; a topic of unknown count is not judged.

The rule holds at a judged poll where a sub-topology reads topics of at least
two different known counts, and fires once it held at every judged poll for
``copartition_mismatch_after`` (a count change is a discrete event: the hold
only rides out a topic being grown one side at a time). A poll is judged when
its sources are known and either some sub-topology mismatches or every
sub-topology's counts are known. Critical when the group processes nothing
(all assignments known, no active task: refused, or its instances stopped on
the refusal); a warning while
its tasks run (a join is not visible from outside: the mismatch may be a
silent mis-join or an uneven merge).
"""

from pyspark.sql import Column
from pyspark.sql import functions as F

from agent.aggregation.candidates import Context, Detection, candidates
from agent.aggregation.tables import KEYS
from agent.aggregation.windows import evaluated, with_run_start

KIND = "copartition_mismatch"


def detect_copartition_mismatch(ctx: Context) -> Detection:
    groups = ctx.tables.groups.withColumn(
        "from_topology", F.size("topology_sources") > 0
    ).withColumn(
        "tasks_known",
        F.col("is_streams")
        & F.col("stable")
        & (F.col("member_count") > 0)
        & (F.col("decoded_members") == F.col("member_count"))
        & (F.col("active_task_count") > 0),
    )
    sourced = groups.where(F.col("from_topology") | F.col("tasks_known")).select(
        *KEYS,
        F.explode(
            F.when(F.col("from_topology"), F.col("topology_sources")).otherwise(
                F.col("task_sources")
            )
        ).alias("x"),
    )
    counts = ctx.tables.topics.select(*KEYS, "topic", "partitions")
    # A count of 0 is the agent's "no metadata for it": unknown.
    read = (
        sourced.select(*KEYS, F.col("x.subtopology").alias("subtopology"), F.col("x.topic"))
        .distinct()
        .join(counts, [*KEYS, "topic"], "left")
        .withColumn("partitions", F.when(F.col("partitions") > 0, F.col("partitions")))
    )
    per_subtopology = (
        read.groupBy(*KEYS, "subtopology")
        .agg(
            F.count("topic").alias("topic_count"),
            F.sort_array(
                F.collect_list(
                    F.when(
                        F.col("partitions").isNotNull(),
                        F.struct(F.col("topic"), F.col("partitions")),
                    )
                )
            ).alias("known"),
            F.sort_array(
                F.collect_list(F.when(F.col("partitions").isNull(), F.col("topic")))
            ).alias("unknown"),
        )
        .withColumn("distinct_counts", F.array_sort(F.array_distinct(F.col("known.partitions"))))
        .withColumn("mismatched", F.size("distinct_counts") > 1)
        # Judgeable: a mismatch among the known, or every count known (one topic: nothing
        # to compare, fine whatever its count).
        .withColumn(
            "undecided",
            ~F.col("mismatched") & (F.col("topic_count") > 1) & (F.size("unknown") > 0),
        )
    )
    per_poll = per_subtopology.groupBy(*KEYS).agg(
        F.max(F.col("mismatched").cast("int")).cast("boolean").alias("mismatched"),
        F.max(F.col("undecided").cast("int")).cast("boolean").alias("undecided"),
        F.sort_array(
            F.collect_list(
                F.when(
                    F.col("mismatched"),
                    F.struct(
                        _subtopology_order().alias("order"),
                        F.col("subtopology"),
                        F.col("known").alias("topics"),
                        F.col("unknown").alias("unknown_topics"),
                        _partial_tasks().alias("tasks_reading_some"),
                    ),
                )
            )
        ).alias("mismatches"),
    )
    judged = (
        groups.join(per_poll, list(KEYS))
        .where(F.col("mismatched") | ~F.col("undecided"))
        .select(
            *KEYS,
            "mismatched",
            "mismatches",
            "from_topology",
            "state",
            "group_type",
            "member_count",
            "decoded_members",
            "active_task_count",
        )
    )
    runs = with_run_start(judged, F.col("mismatched"), "run_since")
    at_evaluations = evaluated(runs, ctx.evaluations)
    holds = at_evaluations.where(
        F.col("mismatched")
        & (F.col("t") - F.col("run_since") >= ctx.params.copartition_mismatch_after)
    ).withColumn(
        # Nothing is processed: every assignment known, none with a task (a refused
        # KIP-1071 group whose instances stopped on the refusal has no member at all).
        "stuck",
        (F.col("decoded_members") == F.col("member_count")) & (F.col("active_task_count") == 0),
    )
    found = candidates(
        holds,
        kind=KIND,
        severity=F.when(F.col("stuck"), F.lit("critical")).otherwise(F.lit("warning")),
        since=F.col("run_since"),
        explanation=_explanation(),
        evidence=F.struct(
            F.when(
                F.col("from_topology") & (F.col("group_type") == "streams"),
                F.lit("broker topology"),
            )
            .when(F.col("from_topology"), F.lit("configured topology"))
            .otherwise(F.lit("active tasks"))
            .alias("sources_from"),
            F.transform(
                "mismatches",
                lambda m: F.struct(
                    m["subtopology"].alias("subtopology"),
                    m["topics"].alias("topics"),
                    m["unknown_topics"].alias("unknown_topics"),
                    m["tasks_reading_some"].alias("tasks_reading_some"),
                ),
            ).alias("subtopologies"),
            F.col("state").alias("group_state"),
            F.col("group_type"),
            F.col("member_count").alias("members"),
            F.col("active_task_count").alias("active_tasks"),
            (F.col("t") - F.col("run_since")).alias("mismatched_for_seconds"),
        ),
    )
    return Detection(KIND, found, at_evaluations.select(*KEYS))


def _subtopology_order() -> Column:
    """Numeric ids in number order (``2`` before ``10``); named ones first, by name."""
    return F.col("subtopology").cast("long")


def _partial_tasks() -> Column:
    """Between two successive counts c < c', tasks ``<s>_c`` to ``<s>_(c'-1)`` read only the
    topics with at least c' partitions (as Kafka Streams' partition grouper deals them)."""
    counts = F.col("distinct_counts")

    def task(number: Column) -> Column:
        return F.concat(F.col("subtopology"), F.lit("_"), number.cast("string"))

    # Only for a mismatch: two counts at least, so the sequence runs upwards.
    return F.transform(
        F.sequence(F.lit(1), F.greatest(F.size(counts) - 1, F.lit(1))),
        lambda i: F.struct(
            task(F.element_at(counts, i)).alias("first_task"),
            task(F.element_at(counts, i + 1) - 1).alias("last_task"),
            (F.element_at(counts, i + 1) - F.element_at(counts, i)).alias("tasks"),
            F.transform(
                F.filter(F.col("known"), lambda k: k["partitions"] >= F.element_at(counts, i + 1)),
                lambda k: k["topic"],
            ).alias("reads_only"),
        ),
    )


def _explanation() -> Column:
    def one(m: Column) -> Column:
        topics = F.array_join(
            F.transform(
                m["topics"],
                lambda k: F.format_string("%s (%d)", k["topic"], k["partitions"]),
            ),
            ", ",
        )
        partial = F.array_join(
            F.transform(
                m["tasks_reading_some"],
                lambda r: F.concat(
                    F.when(r["tasks"] == 1, F.concat(F.lit("task "), r["first_task"])).otherwise(
                        F.concat(F.lit("tasks "), r["first_task"], F.lit(" to "), r["last_task"])
                    ),
                    F.lit(" read only "),
                    F.array_join(r["reads_only"], ", "),
                ),
            ),
            "; ",
        )
        return F.concat(
            F.lit("sub-topology "), m["subtopology"], F.lit(" reads "), topics, F.lit(": "), partial
        )

    stuck = F.when(
        F.col("stuck") & (F.col("group_type") == "streams"),
        F.lit(
            "; the group has no active task: the broker refuses a join of topics with different "
            "partition counts (INCORRECTLY_PARTITIONED_TOPICS), the members' stream threads "
            "fail with a TopologyException and nothing is processed"
        ),
    ).when(
        F.col("stuck"),
        F.lit("; the group has no active task: nothing is processed"),
    )
    running = F.when(
        ~F.col("stuck"),
        F.lit(
            "; a key's records from these topics meet in different tasks, so a join there "
            "misses matches and stateful processing splits a key's state"
        ),
    )
    return F.concat(
        F.format_string("group %s: ", F.col("group")),
        F.array_join(F.transform("mismatches", one), "; "),
        F.coalesce(stuck, running),
        F.lit(
            "; give the topics one partition count: repartition() one side to the other's "
            "count, or add partitions to the smaller topic (adding partitions moves keys)"
        ),
    )
