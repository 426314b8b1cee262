"""Parsed snapshots -> the typed tables the detectors read.

Every table carries the series key (``cluster``, ``group``, ``agent``) and
``t``, the poll time of the snapshot the row came from (Unix seconds, event
time). A *series* is one agent's view of one group: two agents watching the
same group (a central agent and sidecars) are evaluated side by side, never
interleaved, so one agent's poll never looks like a change of another's.

Missing fields from older agents arrive as null and are read with defaults
here (empty lists, zero sizes).
"""

from dataclasses import dataclass, fields

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from agent.aggregation.parse import parsed_schema

SERIES = ("cluster", "group", "agent")
KEYS = (*SERIES, "t")
REBALANCING_STATES = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


@dataclass(frozen=True)
class Tables:
    groups: DataFrame  # one row per snapshot
    members: DataFrame  # one row per member per snapshot
    units: DataFrame  # one row per (member, unit of work, source partition) per snapshot
    offset_sums: DataFrame  # Streams task offset sums a member reported
    partitions: DataFrame  # the partitions the group consumes
    topics: DataFrame  # the group's topics (input and internal)
    changelogs: DataFrame  # per changelog partition: its log-end offset
    sidecars: DataFrame  # one row per snapshot with a sidecar section
    sidecar_threads: DataFrame
    sidecar_tasks: DataFrame
    sidecar_updaters: DataFrame
    # One row per persistent store per task directory a sidecar read, per snapshot.
    sidecar_stores: DataFrame
    # One row per sub-topology the snapshot knows (a KIP-1071 broker's or a configured
    # topology description): what names the sub-topology of a task in findings.
    subtopologies: DataFrame

    def named(self) -> dict[str, DataFrame]:
        """Every table by its name, in field order (the order the history and the plan
        template keep them in)."""
        return {name: getattr(self, name) for name in TABLE_NAMES}


TABLE_NAMES = tuple(f.name for f in fields(Tables))

# The rules read these only at evaluation times, and the partitions only over
# ``evaluate.partition_look_back``: the evaluation scopes them so (a micro-batch reads a
# long history of the small tables, and the big ones only near the polls it judges).
AT_EVALUATIONS = ("units", "offset_sums", "changelogs", "subtopologies")
RECENT = ("partitions",)


def _keys() -> list[Column]:
    return [F.col(k) for k in KEYS]


def _array(column: str) -> Column:
    return F.coalesce(F.col(column), F.array())


def build_tables(snapshots: DataFrame) -> Tables:
    """``snapshots``: rows of ``parse.parse_snapshots`` (cluster, group, agent, t, s).

    Every table is a function of one snapshot at a time (selects and explodes,
    no look-back), so the streaming job builds them once, when a snapshot
    arrives, and keeps them in its history (``history``) instead of the
    snapshots: a micro-batch then reads flat rows, not twenty minutes of nested
    snapshots to take apart again (docs/benchmarks.md has what it saves).
    """
    return Tables(
        groups=_groups(snapshots),
        members=_members(snapshots),
        units=_units(snapshots),
        offset_sums=_offset_sums(snapshots),
        partitions=_partitions(snapshots),
        topics=_topics(snapshots),
        changelogs=_changelogs(snapshots),
        sidecars=_sidecars(snapshots),
        sidecar_threads=_sidecar_rows(snapshots, "threads").select(
            *_keys(),
            F.col("sidecar_process").alias("process"),
            F.col("x.thread_id").alias("thread_id"),
            F.col("x.thread_index").alias("thread"),
            F.col("x.state").alias("thread_state"),
            F.col("x.rebalance_total").alias("rebalance_total"),
        ),
        sidecar_tasks=_sidecar_rows(snapshots, "tasks").select(
            *_keys(),
            F.col("sidecar_process").alias("process"),
            F.col("x.task").alias("task"),
            F.col("x.thread_id").alias("thread_id"),
            F.col("x.restore_remaining_records").alias("remaining"),
            F.col("x.restored_records_total").alias("restored_total"),
        ),
        sidecar_updaters=_sidecar_rows(snapshots, "state_updaters").select(
            *_keys(),
            F.col("sidecar_process").alias("process"),
            F.col("x.thread_id").alias("thread_id"),
            F.col("x.active_restoring_tasks").alias("active_restoring"),
            F.col("x.restore_records_rate").alias("restore_rate"),
        ),
        sidecar_stores=_sidecar_stores(snapshots),
        subtopologies=_subtopologies(snapshots),
    )


def empty_tables(spark: SparkSession) -> Tables:
    """Tables without rows, with the columns and types of real ones."""
    return build_tables(spark.createDataFrame([], parsed_schema()))


def _subtopologies(snapshots: DataFrame) -> DataFrame:
    return snapshots.select(*_keys(), F.explode(_array("s.subtopologies")).alias("x")).select(
        *_keys(),
        F.col("x.subtopology_id").alias("subtopology_id"),
        F.coalesce(F.col("x.origin"), F.lit("broker")).alias("origin"),
        F.concat(
            F.coalesce(F.col("x.source_topics"), F.array()),
            F.coalesce(F.col("x.repartition_source_topics"), F.array()),
        ).alias("reads"),
        F.coalesce(F.col("x.state_stores"), F.array()).alias("stores"),
        F.coalesce(F.col("x.processors"), F.array()).alias("processors"),
    )


def _groups(snapshots: DataFrame) -> DataFrame:
    members = _array("s.members")
    partitions = _array("s.partitions")
    process_ids = F.transform(members, lambda m: F.nullif(m["streams"]["process_id"], F.lit("")))
    # What changes when a rebalance happened between two polls: who is in, who holds what.
    assignment = F.array_sort(
        F.transform(
            members,
            lambda m: F.struct(
                m["member_id"].alias("member_id"),
                F.transform(
                    F.coalesce(m["assigned_partitions"], F.array()),
                    lambda p: F.concat_ws("-", p["topic"], p["partition"].cast("string")),
                ).alias("partitions"),
                F.transform(
                    F.coalesce(m["streams"]["active_tasks"], F.array()), lambda a: a["task"]
                ).alias("active"),
                F.transform(
                    F.coalesce(m["streams"]["standby_tasks"], F.array()), lambda a: a["task"]
                ).alias("standby"),
            ),
        )
    )
    active_tasks = F.array_distinct(F.flatten(F.transform(assignment, lambda a: a["active"])))
    return snapshots.select(
        *_keys(),
        F.col("s.poll.sequence").alias("sequence"),
        F.col("s.agent.mode").alias("agent_mode"),
        F.col("s.group.state").alias("state"),
        (F.col("s.group.state") == "Stable").alias("stable"),
        F.col("s.group.state").isin(*REBALANCING_STATES).alias("rebalancing"),
        F.col("s.group.group_type").alias("group_type"),
        F.coalesce(F.col("s.group.is_streams"), F.lit(False)).alias("is_streams"),
        F.col("s.group.generation").alias("generation"),
        F.col("s.group.group_epoch").alias("group_epoch"),
        F.transform(_array("s.rebalances"), lambda r: r["generation"]).alias("rebalance_gens"),
        F.transform(_array("s.rebalances"), lambda r: r["at"]).alias("rebalance_ats"),
        F.size(members).alias("member_count"),
        # Members whose Streams assignment is known (classic groups: only while Stable).
        F.size(F.filter(members, lambda m: m["streams"].isNotNull())).alias("decoded_members"),
        # Distinct active tasks over the decoded members, and the sub-topologies they
        # belong to (a task id is "<sub-topology>_<partition>").
        F.size(active_tasks).alias("active_task_count"),
        # Distinct partitions assigned over the members (what a Streams assignment's
        # host maps grow with).
        F.size(
            F.array_distinct(F.flatten(F.transform(assignment, lambda a: a["partitions"])))
        ).alias("assigned_partition_count"),
        F.size(
            F.array_distinct(F.transform(active_tasks, lambda t: F.substring_index(t, "_", 1)))
        ).alias("subtopology_count"),
        F.array_sort(F.transform(members, lambda m: m["member_id"])).alias("member_ids"),
        F.array_sort(F.array_distinct(F.filter(process_ids, lambda p: p.isNotNull()))).alias(
            "processes"
        ),
        F.sha2(F.to_json(assignment), 256).alias("assignment_fp"),
        F.exists(members, lambda m: m["streams"]["next_rebalance_ms"].isNotNull()).alias(
            "next_rebalance_scheduled"
        ),
        F.aggregate(
            members,
            F.lit(0).cast("long"),
            lambda acc, m: (
                acc
                + F.coalesce(m["subscription_bytes"], F.lit(0))
                + F.coalesce(m["assignment_bytes"], F.lit(0))
            ),
        ).alias("metadata_bytes"),
        F.col("s.cluster_facts.offsets_topic_max_message_bytes").alias("max_message_bytes"),
        F.aggregate(
            partitions, F.lit(0).cast("long"), lambda acc, p: acc + F.coalesce(p["lag"], F.lit(0))
        ).alias("lag_total"),
        F.size(F.filter(partitions, lambda p: p["lag"].isNotNull())).alias("lag_partitions"),
        F.col("s.sidecar").isNotNull().alias("has_sidecar"),
        # A central agent's all-topics view: every internal topic listed, brokers counted.
        F.col("s.cluster_facts.total_topics").isNotNull().alias("all_topics_known"),
        F.col("s.cluster_facts.total_topics").alias("cluster_topics"),
        F.col("s.cluster_facts.total_partitions").alias("cluster_partitions"),
        F.col("s.cluster_facts.total_replicas").alias("cluster_replicas"),
        _array("s.cluster_facts.brokers").alias("broker_loads"),
        # Which topics each sub-topology reads, (subtopology, topic) pairs: as the topology
        # says (KIP-1071 describe, or a configured Topology#describe()), and as the decoded
        # active tasks show (a task "<subtopology>_<n>" lists the partitions it reads).
        F.flatten(
            F.transform(
                _array("s.subtopologies"),
                lambda s: F.transform(
                    F.concat(
                        F.coalesce(s["source_topics"], F.array()),
                        F.coalesce(s["repartition_source_topics"], F.array()),
                    ),
                    lambda topic: F.struct(
                        s["subtopology_id"].alias("subtopology"), topic.alias("topic")
                    ),
                ),
            )
        ).alias("topology_sources"),
        F.array_distinct(
            F.flatten(
                F.transform(
                    members,
                    lambda m: F.flatten(
                        F.transform(
                            F.coalesce(m["streams"]["active_tasks"], F.array()),
                            lambda a: F.transform(
                                F.coalesce(a["partitions"], F.array()),
                                lambda p: F.struct(
                                    F.substring_index(a["task"], "_", 1).alias("subtopology"),
                                    p["topic"].alias("topic"),
                                ),
                            ),
                        )
                    ),
                )
            )
        ).alias("task_sources"),
        # The most active tasks one decoded member (one stream thread) holds.
        F.coalesce(
            F.array_max(
                F.transform(
                    F.filter(members, lambda m: m["streams"].isNotNull()),
                    lambda m: F.size(F.coalesce(m["streams"]["active_tasks"], F.array())),
                )
            ),
            F.lit(0),
        ).alias("busiest_member_active_count"),
    )


def _members(snapshots: DataFrame) -> DataFrame:
    exploded = snapshots.select(
        *_keys(),
        F.col("s.group.state").alias("state"),
        F.coalesce(F.col("s.group.is_streams"), F.lit(False)).alias("is_streams"),
        F.explode(_array("s.members")).alias("m"),
    )
    process = F.nullif(F.col("m.streams.process_id"), F.lit(""))
    thread = F.col("m.streams.thread_index")
    return exploded.select(
        *_keys(),
        "state",
        "is_streams",
        F.col("m.member_id").alias("member_id"),
        F.col("m.client_id").alias("client_id"),
        F.col("m.client_host").alias("host"),
        F.col("m.group_instance_id").alias("instance_id"),
        process.alias("process"),
        thread.alias("thread"),
        F.col("m.streams").isNotNull().alias("decoded"),
        # KIP-848 and KIP-1071 members: the broker assigns them and describes them in every
        # group state (a classic group's members come without metadata mid-rebalance).
        F.col("m.member_epoch").isNotNull().alias("broker_assigned"),
        # Null when undecoded: an unknown assignment is not an empty one.
        F.when(
            F.col("m.streams").isNotNull(),
            F.size(F.coalesce(F.col("m.streams.active_tasks"), F.array())),
        ).alias("active_count"),
        # Replicas that keep state warm but process nothing: standbys and (KIP-1071) warm-ups.
        F.concat(
            F.transform(F.coalesce(F.col("m.streams.standby_tasks"), F.array()), _task_id),
            F.transform(F.coalesce(F.col("m.streams.warmup_tasks"), F.array()), _task_id),
        ).alias("standby_tasks"),
        # Who a member is across rebalances: a Kafka Streams thread (process,
        # thread index), else the client id (plain consumers, undecoded members).
        F.coalesce(
            F.when(
                process.isNotNull() & thread.isNotNull(),
                F.concat_ws(":", process, thread.cast("string")),
            ),
            F.col("m.client_id"),
        ).alias("identity"),
        F.col("m.streams.next_rebalance_ms").alias("next_rebalance_ms"),
        # application.server, which puts every instance's partition map into each assignment.
        F.nullif(F.col("m.streams.endpoint"), F.lit("")).alias("endpoint"),
        F.col("m.streams.assignment_version").alias("assignment_version"),
        F.coalesce(F.col("m.subscription_bytes"), F.lit(0)).alias("subscription_bytes"),
        F.coalesce(F.col("m.assignment_bytes"), F.lit(0)).alias("assignment_bytes"),
    )


def _task_id(task: Column) -> Column:
    return task["task"]


def _units(snapshots: DataFrame) -> DataFrame:
    """Units of work with their source partitions: Streams tasks, else assigned partitions."""
    members = snapshots.select(
        *_keys(),
        F.coalesce(F.col("s.group.is_streams"), F.lit(False)).alias("is_streams"),
        F.explode(_array("s.members")).alias("m"),
    )
    process = F.nullif(F.col("m.streams.process_id"), F.lit(""))
    common = [
        *_keys(),
        F.col("m.member_id").alias("member_id"),
        F.col("m.client_id").alias("client_id"),
        F.col("m.client_host").alias("host"),
    ]
    tasks = (
        members.where(F.col("m.streams").isNotNull())
        .select(
            *common,
            process.alias("process"),
            F.col("m.streams.thread_index").alias("thread"),
            F.explode(F.coalesce(F.col("m.streams.active_tasks"), F.array())).alias("a"),
        )
        .select(
            *[F.col(c) for c in (*KEYS, "member_id", "client_id", "host", "process", "thread")],
            F.col("a.task").alias("unit"),
            F.lit("task").alias("unit_kind"),
            F.explode(F.coalesce(F.col("a.partitions"), F.array())).alias("p"),
        )
    )
    # Outside Kafka Streams the unit of work is the partition. (A Streams member
    # whose userData did not decode has no units: tasks and partitions do not mix.)
    plain = members.where(~F.col("is_streams") & F.col("m.streams").isNull()).select(
        *common,
        # A plain consumer is its own instance: its client id stands for the process.
        F.col("m.client_id").alias("process"),
        F.lit(None).cast("long").alias("thread"),
        F.explode(F.coalesce(F.col("m.assigned_partitions"), F.array())).alias("p"),
    )
    plain = plain.select(
        *[F.col(c) for c in (*KEYS, "member_id", "client_id", "host", "process", "thread")],
        F.concat_ws("-", F.col("p.topic"), F.col("p.partition").cast("string")).alias("unit"),
        F.lit("partition").alias("unit_kind"),
        "p",
    )
    # A union forgets its inputs' partitioning; restore it once, here.
    return regrouped(tasks.unionByName(plain)).select(
        *[F.col(c) for c in (*KEYS, "member_id", "client_id", "host", "process", "thread", "unit")],
        "unit_kind",
        F.col("p.topic").alias("topic"),
        F.col("p.partition").alias("partition"),
    )


def _offset_sums(snapshots: DataFrame) -> DataFrame:
    members = snapshots.select(*_keys(), F.explode(_array("s.members")).alias("m")).where(
        F.col("m.streams").isNotNull()
    )
    return members.select(
        *_keys(),
        F.col("m.member_id").alias("member_id"),
        F.nullif(F.col("m.streams.process_id"), F.lit("")).alias("process"),
        F.explode(F.coalesce(F.col("m.streams.task_offset_sums"), F.array())).alias("o"),
    ).select(
        *_keys(),
        "member_id",
        "process",
        F.col("o.task").alias("task"),
        F.col("o.offset_sum").alias("offset_sum"),
    )


def _partitions(snapshots: DataFrame) -> DataFrame:
    return snapshots.select(*_keys(), F.explode(_array("s.partitions")).alias("p")).select(
        *_keys(),
        F.col("p.topic").alias("topic"),
        F.col("p.partition").alias("partition"),
        F.col("p.log_end_offset").alias("log_end_offset"),
        F.col("p.committed_offset").alias("committed_offset"),
        F.col("p.lag").alias("lag"),
        F.col("p.owner_member_id").alias("owner_member_id"),
    )


def _topics(snapshots: DataFrame) -> DataFrame:
    return snapshots.select(*_keys(), F.explode(_array("s.topics")).alias("x")).select(
        *_keys(),
        F.col("x.name").alias("topic"),
        F.col("x.partitions").alias("partitions"),
        F.col("x.internal_kind").alias("internal_kind"),
        F.coalesce(F.col("x.consumed"), F.lit(False)).alias("consumed"),
        F.col("x.size_bytes").alias("size_bytes"),
        F.coalesce(F.col("x.log_end_offsets"), F.array()).alias("log_end_offsets"),
        F.col("x.replication_factor").alias("replication_factor"),
        F.col("x.cleanup_policy").alias("cleanup_policy"),
    )


def _changelogs(snapshots: DataFrame) -> DataFrame:
    topics = _topics(snapshots).where(F.col("internal_kind") == "changelog")
    return topics.select(
        *_keys(),
        "topic",
        "partitions",
        "size_bytes",
        F.posexplode("log_end_offsets").alias("partition", "log_end_offset"),
    ).select(
        *_keys(),
        "topic",
        F.col("partition").cast("long").alias("partition"),
        "log_end_offset",
        "partitions",
        "size_bytes",
    )


def _sidecars(snapshots: DataFrame) -> DataFrame:
    return snapshots.where(F.col("s.sidecar").isNotNull()).select(
        *_keys(),
        F.col("s.group.state").alias("state"),
        F.col("s.sidecar.process_id").alias("process"),
        F.coalesce(F.col("s.sidecar.app_metrics_up"), F.lit(False)).alias("app_up"),
        F.col("s.sidecar.client_state").alias("client_state"),
        F.col("s.sidecar.alive_stream_threads").alias("alive"),
        F.col("s.sidecar.failed_stream_threads").alias("failed"),
        F.col("s.sidecar.expected_stream_threads").alias("expected"),
        F.size(
            F.filter(
                _array("s.members"),
                lambda m: m["streams"]["process_id"] == F.col("s.sidecar.process_id"),
            )
        ).alias("members"),
        F.col("s.sidecar.memory_limit_bytes").alias("memory_limit_bytes"),
        F.col("s.sidecar.memory_limit_source").alias("memory_limit_source"),
        F.coalesce(F.col("s.sidecar.state_dir_readable"), F.lit(False)).alias("state_dir_readable"),
        # The tasks this instance holds (active, standby, warm-up), over its members whose
        # assignment decoded; null when none did (mid-rebalance: not known, not none).
        F.when(F.size(_own_decoded_members()) > 0, _held_tasks()).alias("held_tasks"),
    )


def _own_decoded_members() -> Column:
    return F.filter(
        _array("s.members"),
        lambda m: (
            (m["streams"]["process_id"] == F.col("s.sidecar.process_id")) & m["streams"].isNotNull()
        ),
    )


def _held_tasks() -> Column:
    return F.array_distinct(
        F.flatten(
            F.transform(
                _own_decoded_members(),
                lambda m: F.concat(
                    F.transform(F.coalesce(m["streams"]["active_tasks"], F.array()), _task_id),
                    F.transform(F.coalesce(m["streams"]["standby_tasks"], F.array()), _task_id),
                    F.transform(F.coalesce(m["streams"]["warmup_tasks"], F.array()), _task_id),
                ),
            )
        )
    )


def _sidecar_stores(snapshots: DataFrame) -> DataFrame:
    """A row per store of each task directory the sidecar read (no row without stores)."""
    tasks = _sidecar_rows(snapshots, "state_dir_tasks")
    return tasks.select(
        *_keys(),
        F.col("sidecar_process").alias("process"),
        F.col("x.task").alias("task"),
        F.explode(F.coalesce(F.col("x.stores"), F.array())).alias("st"),
    ).select(
        *_keys(),
        "process",
        "task",
        F.col("st.name").alias("store"),
        F.col("st.kind").alias("store_kind"),
        F.coalesce(F.col("st.segments"), F.lit(0)).alias("segments"),
        F.col("st.size_bytes").alias("store_bytes"),
    )


def _sidecar_rows(snapshots: DataFrame, field: str) -> DataFrame:
    return snapshots.where(F.col("s.sidecar").isNotNull()).select(
        *_keys(),
        F.col("s.sidecar.process_id").alias("sidecar_process"),
        F.explode(_array(f"s.sidecar.{field}")).alias("x"),
    )


def regrouped(df: DataFrame) -> DataFrame:
    """``df`` hash-partitioned by (cluster, group), as every operator downstream expects.

    Needed once at the input and after a union (which forgets its inputs'
    partitioning); everything else keeps it.
    """
    partitions = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or "1")
    return df.repartition(partitions, "cluster", "group")
