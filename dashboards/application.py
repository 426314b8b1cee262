"""Application drill-down: one Kafka Streams application, instance by thread by task."""

from dashboards.links import APPLICATION_UID, LINKS
from dashboards.model import Dashboard, Panel, Query, Row, ValueText, Variable, selector

CLUSTER = 'kafka_cluster="$cluster"'
APP = 'group="$application"'
ACTIVE = 'kind="active"'
HOT = 'kind="hot_partitions_colocated"'


def _app(metric: str, *matchers: str) -> str:
    return selector(metric, CLUSTER, APP, *matchers)


def _by(labels: str, metric: str, *matchers: str) -> str:
    # max, not sum: two agents (HA) or a sidecar and the job may report the same subject.
    return f"max by ({labels}) ({_app(metric, *matchers)})"


def dashboard() -> Dashboard:
    return Dashboard(
        uid=APPLICATION_UID,
        title="ksmon / Kafka Streams application",
        description=(
            "One Kafka Streams application: which instance and stream thread holds which task, "
            "load per member and instance, hot partitions, restores, rebalances, thread states "
            "and lag. Instance = Kafka Streams process id; thread = stream thread index."
        ),
        variables=[
            Variable(
                "cluster",
                "Kafka cluster",
                "label_values(ksmon_kafka_up, kafka_cluster)",
                description="The Kafka cluster (the kafka_cluster name in ksmon's configuration).",
            ),
            Variable(
                "application",
                "Application",
                'label_values(ksmon_group_info{kafka_cluster="$cluster", streams="true"}, group)',
                description="Kafka Streams applications (application.id = the group id) with "
                "members right now.",
            ),
        ],
        links=[link for link in LINKS if link.uid != APPLICATION_UID],
        rows=[
            _overview(),
            _assignment(),
            _load(),
            _restores(),
            _rebalances(),
            _threads(),
            _lag(),
            _sizing(),
            _internal_topics(),
            _state_stores(),
        ],
    )


def _overview() -> Row:
    def stat(title: str, description: str, expr: str, unit: str = "none") -> Panel:
        return Panel(
            "stat", title, description, [Query(expr, instant=True)], unit=unit, width=3, height=4
        )

    return Row(
        "Overview",
        [
            Panel(
                "stat",
                "Group state",
                "The group's state: Stable, PreparingRebalance or CompletingRebalance (a "
                "rebalance: processing pauses), Empty (no member), Dead.",
                [Query(_by("state", "ksmon_group_state"), "{{state}}", instant=True)],
                unit="none",
                width=3,
                height=4,
            ),
            stat(
                "Instances",
                "Kafka Streams instances (distinct process ids) in the group.",
                f"max({_app('ksmon_streams_instances')})",
            ),
            stat(
                "Stream threads",
                "Stream threads in the group (one member each), summed over instances.",
                f"sum({_by('process', 'ksmon_streams_instance_threads')})",
            ),
            stat(
                "Active tasks",
                "Active tasks assigned over all instances (standbys not counted).",
                f"sum({_by('process', 'ksmon_streams_instance_tasks', ACTIVE)})",
            ),
            stat(
                "Lag",
                "Records not yet consumed, over all the application's input partitions "
                "(source and repartition topics).",
                f"max({_app('ksmon_group_lag')})",
                unit="short",
            ),
            stat(
                "Time lag",
                "How old the oldest unconsumed record is (0 when caught up).",
                f"max({_app('ksmon_group_lag_seconds')})",
                unit="s",
            ),
            Panel(
                "stat",
                "Open findings",
                "Problems the ksmon aggregation job found in this application and has not "
                "closed; details in the Findings table below.",
                [Query(f"count({_app('ksmon_finding_active')} == 1)", instant=True)],
                unit="none",
                width=3,
                height=4,
                no_value="0",
            ),
            Panel(
                "stat",
                "Shutdown requested",
                "Whether a member asked the whole application to shut down (the uncaught "
                "exception handler answered SHUTDOWN_APPLICATION).",
                [Query(f"max({_app('ksmon_streams_shutdown_requested')})", instant=True)],
                unit="none",
                width=3,
                height=4,
                value_texts=[ValueText(0, "no", "green"), ValueText(1, "YES", "red")],
            ),
        ],
    )


def _assignment() -> Row:
    subject = "kind, severity, process, thread, task, topic, partition"
    return Row(
        "Findings and assignment: instances x threads x tasks",
        [
            Panel(
                "table",
                "Findings",
                "The aggregation job's open findings for this application with their subject "
                "and how long they have been open.",
                [
                    Query(
                        f"time() - {_by(subject, 'ksmon_finding_since_timestamp_seconds')}",
                        "open for",
                    )
                ],
                unit="s",
                width=24,
                height=6,
            ),
            Panel(
                "table",
                "Task assignment",
                "Which stream thread of which instance holds each task (sub-topology_partition), "
                "active or standby, decoded from the group's assignment data by the agent.",
                [
                    Query(
                        _by(
                            "process, thread, task, kind, host",
                            "ksmon_streams_task_assignment_info",
                        ),
                        "assigned",
                    )
                ],
                unit="none",
                width=12,
                height=10,
            ),
            Panel(
                "timeseries",
                "Tasks per instance",
                "Active and standby tasks per instance. The assignor balances task counts, not "
                "load: compare with load per instance below.",
                [
                    Query(
                        _by("process, kind", "ksmon_streams_instance_tasks"),
                        "{{process}} {{kind}}",
                    )
                ],
                unit="none",
                width=12,
                height=10,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Stream threads per instance",
                "Members (stream threads) each instance has in the group, and the number it "
                "should have (configured, else the most seen recently, from the aggregation "
                "job). Fewer than expected: threads died.",
                [
                    Query(_by("process", "ksmon_streams_instance_threads"), "{{process}}"),
                    Query(
                        _by("process", "ksmon_streams_instance_threads_expected"),
                        "{{process}} expected",
                    ),
                ],
                unit="none",
                minimum=0,
            ),
            Panel(
                "table",
                "Where instances run",
                "Where each instance runs: host and application.server endpoint.",
                [Query(_by("process, host, endpoint", "ksmon_streams_instance_info"), "up")],
                unit="none",
            ),
        ],
    )


def _load() -> Row:
    return Row(
        "Load and hot partitions",
        [
            Panel(
                "timeseries",
                "Load per stream thread",
                "Records/s arriving on the input partitions of the tasks each stream thread "
                "holds (aggregation job). One line far above the others: hot tasks co-located.",
                [
                    Query(
                        _by("process, thread", "ksmon_streams_thread_load_records_per_second"),
                        "{{process}} thread {{thread}}",
                    )
                ],
                unit="suffix:rec/s",
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Load per instance",
                "Records/s arriving for the tasks each instance holds (aggregation job): where "
                "CPU and memory pressure lands.",
                [
                    Query(
                        _by("process", "ksmon_streams_instance_load_records_per_second"),
                        "{{process}}",
                    )
                ],
                unit="suffix:rec/s",
                minimum=0,
            ),
            Panel(
                "table",
                "Hot partitions co-located",
                "Members or instances holding two or more hot partitions while another holds "
                "none (aggregation job finding hot_partitions_colocated).",
                [
                    Query(
                        _by("process, thread, task, topic, partition", "ksmon_finding_active", HOT)
                    )
                ],
                unit="none",
            ),
            Panel(
                "timeseries",
                "Busiest input partitions",
                "The 10 partitions this application reads with the most records/s arriving "
                "(log-end offset growth, from the agent). A hot key shows as one partition far "
                "above the rest.",
                [
                    Query(
                        "topk(10, max by (topic, partition) (rate("
                        f"{selector('ksmon_partition_log_end_offset', CLUSTER)}"
                        "[$__rate_interval])) and on (topic, partition) "
                        f"{_by('topic, partition', 'ksmon_partition_committed_offset')})",
                        "{{topic}}-{{partition}}",
                    )
                ],
                unit="suffix:rec/s",
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Input rate per task",
                "Records/s arriving for each task, summed over its source partitions "
                "(aggregation job).",
                [
                    Query(
                        _by("task", "ksmon_streams_task_records_per_second"),
                        "{{task}}",
                    )
                ],
                unit="suffix:rec/s",
                width=24,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Active tasks per stream thread",
                "Active tasks each stream thread holds (agent). A thread runs its tasks one "
                "after the other; a repartition adds as many tasks again as its partitions. "
                "Many per thread while the lag grows: too few threads to keep up "
                "(aggregation job finding threads_fewer_than_tasks, alert "
                "KafkaStreamsThreadsFewerThanTasks).",
                [
                    Query(
                        "count by (process, thread) (max by (process, thread, task) ("
                        f"{_app('ksmon_streams_task_assignment_info', ACTIVE)}))",
                        "{{process}} thread {{thread}}",
                    ),
                ],
                unit="none",
                width=24,
                minimum=0,
            ),
        ],
    )


def _restores() -> Row:
    by_task = "process, task, source"
    return Row(
        "State restores",
        [
            Panel(
                "timeseries",
                "Restore: records remaining",
                "Changelog records each restoring task still has to replay (aggregation job; "
                "source: broker = from offsets, sidecar = from the app's own metrics).",
                [
                    Query(
                        _by(by_task, "ksmon_restore_remaining_records"),
                        "{{process}} {{task}} ({{source}})",
                    )
                ],
                unit="short",
                width=8,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Restore rate",
                "Changelog records restored per second, per task. 0 while records remain: a "
                "stalled restore.",
                [
                    Query(
                        _by(by_task, "ksmon_restore_rate_records_per_second"),
                        "{{process}} {{task}} ({{source}})",
                    )
                ],
                unit="suffix:rec/s",
                width=8,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Restore: estimated time to finish",
                "Remaining records divided by the restore rate, per task (absent while the rate "
                "is 0).",
                [
                    Query(
                        _by(by_task, "ksmon_restore_estimated_remaining_seconds"),
                        "{{process}} {{task}} ({{source}})",
                    )
                ],
                unit="s",
                width=8,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Restoring tasks (sidecar)",
                "Active tasks restoring right now on each instance, and the records each one "
                "still has to restore (restore-remaining-records-total), read from the app by "
                "its ksmon sidecar.",
                [
                    Query(_by("process", "ksmon_sidecar_restoring_tasks"), "{{process}} tasks"),
                    Query(
                        _by("process, task", "ksmon_sidecar_task_restore_remaining_records"),
                        "{{process}} {{task}} records",
                    ),
                ],
                unit="short",
                width=24,
                minimum=0,
            ),
        ],
    )


def _rebalances() -> Row:
    return Row(
        "Rebalances",
        [
            Panel(
                "state-timeline",
                "Group state timeline",
                "The group's state over time: every band that is not Stable is a rebalance "
                "(processing pauses) or a time with no member (Empty).",
                [Query(_by("state", "ksmon_group_state"), "{{state}}")],
                unit="none",
                width=24,
                height=5,
                value_texts=[ValueText(1, "", "blue")],
            ),
            Panel(
                "timeseries",
                "Members and generation",
                "Group members, and the generation (classic groups, from __consumer_offsets) or "
                "group epoch (KIP-848 groups): each step of the generation is a rebalance.",
                [
                    Query(f"max({_app('ksmon_group_members')})", "members"),
                    Query(
                        f"max({_app('ksmon_group_generation')}) "
                        f"or max({_app('ksmon_group_epoch')})",
                        "generation",
                    ),
                ],
                unit="none",
                width=8,
            ),
            Panel(
                "timeseries",
                "Rebalances in the loop window",
                "Rebalance events the aggregation job counted in its loop window (default 10 "
                "minutes). Rolling restarts and probing rebalances count too; only a loop "
                "raises a finding.",
                [Query(f"max({_app('ksmon_group_rebalances_in_window')})", "rebalances")],
                unit="none",
                width=8,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Time rebalancing",
                "Fraction of the loop window the group spent rebalancing (aggregation job).",
                [Query(f"max({_app('ksmon_group_unstable_ratio')})", "rebalancing")],
                unit="percentunit",
                width=8,
                minimum=0,
                maximum=1,
            ),
        ],
    )


def _threads() -> Row:
    return Row(
        "Stream threads (sidecar)",
        [
            Panel(
                "state-timeline",
                "Stream thread states",
                "Each stream thread's state, read from the app's own metrics by its ksmon "
                "sidecar: RUNNING processes; PARTITIONS_ASSIGNED restores; DEAD died.",
                [
                    Query(
                        f"{_by('process, thread, state', 'ksmon_sidecar_thread_state')} == 1",
                        "{{process}} {{thread}}: {{state}}",
                    )
                ],
                unit="none",
                width=24,
                height=7,
                value_texts=[ValueText(1, "", "blue")],
            ),
            Panel(
                "state-timeline",
                "Client state",
                "Each instance's KafkaStreams state (RUNNING, REBALANCING, ERROR, ...), from "
                "its sidecar.",
                [
                    Query(
                        f"{_by('process, state', 'ksmon_sidecar_client_state')} == 1",
                        "{{process}}: {{state}}",
                    )
                ],
                unit="none",
                width=12,
                height=6,
                value_texts=[ValueText(1, "", "blue")],
            ),
            Panel(
                "timeseries",
                "Alive and expected stream threads",
                "alive-stream-threads against the configured num.stream.threads, per instance "
                "(sidecar). Alive below expected: threads died (KafkaStreamsThreadsDead).",
                [
                    Query(
                        _by("process", "ksmon_sidecar_stream_threads_alive"), "{{process}} alive"
                    ),
                    Query(
                        _by("process", "ksmon_sidecar_stream_threads_expected"),
                        "{{process}} expected",
                    ),
                ],
                unit="none",
                width=12,
                height=6,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Failed stream threads",
                "Stream threads that failed (failed-stream-threads, sidecar) per instance, per "
                "interval. With replace_thread, Kafka Streams starts a new one each time.",
                [
                    Query(
                        "max by (process) (increase("
                        f"{_app('ksmon_sidecar_stream_threads_failed_total')}[$__rate_interval]))",
                        "{{process}}",
                    )
                ],
                unit="none",
                minimum=0,
            ),
            Panel(
                "timeseries",
                "State directory and free space",
                "Bytes in each instance's state directory (RocksDB stores, checkpoints) and "
                "the bytes still free on the filesystem holding it (statvfs, df's Avail), "
                "from its sidecar. Free space falling while the directory stays flat: other "
                "data fills a shared volume (an emptyDir on the node's disk).",
                [
                    Query(
                        _by("process", "ksmon_sidecar_state_dir_bytes"),
                        "{{process}} state directory",
                    ),
                    Query(
                        _by("process", "ksmon_sidecar_state_volume_available_bytes"),
                        "{{process}} free",
                    ),
                ],
                unit="bytes",
                minimum=0,
            ),
            Panel(
                "timeseries",
                "State volume free",
                "The share of each instance's state volume still free. "
                "KafkaStreamsStateVolumeNearlyFull fires below its threshold (5 % by default), "
                "KafkaStreamsStateVolumeFillingUp when the trend reaches 0 within its horizon.",
                [
                    Query(
                        "min by (process) ("
                        f"{_app('ksmon_sidecar_state_volume_available_bytes')} / "
                        f"{_app('ksmon_sidecar_state_volume_size_bytes')})",
                        "{{process}}",
                    )
                ],
                unit="percentunit",
                minimum=0,
                maximum=1,
            ),
        ],
    )


def _lag() -> Row:
    return Row(
        "Lag and internal topics",
        [
            Panel(
                "timeseries",
                "Lag per partition",
                "Records not consumed per input partition (per topic where the agent runs with "
                "lag_granularity: topic).",
                [
                    Query(
                        f"{_by('topic, partition', 'ksmon_partition_lag')} "
                        f"or {_by('topic', 'ksmon_topic_lag')}",
                        "{{topic}} {{partition}}",
                    )
                ],
                unit="short",
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Time lag per partition",
                "How old the oldest unconsumed record is, per input partition (or topic).",
                [
                    Query(
                        f"{_by('topic, partition', 'ksmon_partition_lag_seconds')} "
                        f"or {_by('topic', 'ksmon_topic_lag_seconds')}",
                        "{{topic}} {{partition}}",
                    )
                ],
                unit="s",
                minimum=0,
            ),
            Panel(
                "state-timeline",
                "Consumer status",
                "The aggregation job's status of the group over its consumer_status window: "
                "ok, lagging (its lag grows while it commits), stalled (members present, "
                "nothing committed for the whole window while records wait), stopped (the "
                "same without members), rewound (a committed offset went back). A slow "
                "consumer that still commits is never stalled.",
                [
                    Query(
                        f"{_by('status', 'ksmon_group_consumer_status')} == 1",
                        "{{status}}",
                    )
                ],
                unit="none",
                height=5,
                value_texts=[ValueText(1, "", "blue")],
            ),
            Panel(
                "timeseries",
                "Partitions by consumer status",
                "How many of the application's input partitions are in each status (the "
                "aggregation job's consumer_status); the finding in Findings above names them.",
                [
                    Query(
                        _by("status", "ksmon_group_consumer_status_partitions"),
                        "{{status}}",
                    )
                ],
                unit="short",
                height=5,
                minimum=0,
            ),
            Panel(
                "table",
                "Internal topics",
                "The application's repartition, changelog and foreign-key topics: partitions "
                "and bytes on disk over all replicas. Each adds partitions the cluster carries.",
                [
                    Query(
                        _by("topic, kind", "ksmon_streams_internal_topic_partitions"),
                        "partitions",
                    ),
                    Query(
                        _by("topic, kind", "ksmon_streams_internal_topic_size_bytes"),
                        "bytes",
                    ),
                ],
                unit="short",
                width=24,
                column_units={"bytes": "bytes"},
            ),
            Panel(
                "table",
                "Co-partitioning",
                "Partitions of each topic this application commits offsets for: topics a "
                "sub-topology reads together (a join) need the same count. When they differ "
                "the aggregation job's copartition_mismatch finding (in Findings above) names "
                "the topics and the tasks that read only some of them.",
                [
                    Query(
                        "count by (topic) ("
                        f"{_by('topic, partition', 'ksmon_partition_committed_offset')})",
                        "partitions",
                    ),
                ],
                unit="short",
                width=24,
            ),
        ],
    )


def _sizing() -> Row:
    return Row(
        "Sizing: threads against tasks, group metadata",
        [
            Panel(
                "timeseries",
                "Stream threads against active tasks",
                "Stream threads (group members) over all instances, and the active tasks they "
                "share. More threads than tasks: some threads can never work (idle_members). "
                "Many tasks per thread while lag grows: too few threads "
                "(threads_fewer_than_tasks).",
                [
                    Query(f"sum({_app('ksmon_streams_instance_threads')})", "stream threads"),
                    Query(f"sum({_app('ksmon_streams_instance_tasks', ACTIVE)})", "active tasks"),
                ],
                unit="none",
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Group metadata size",
                "Bytes of member subscriptions and assignments the group coordinator stores "
                "in one __consumer_offsets record (agent), against the topic's "
                "max.message.bytes: past it the group cannot rebalance "
                "(assignment_size_risk warns from half of it).",
                [
                    Query(_by("group", "ksmon_group_metadata_bytes"), "metadata bytes"),
                    # Per cluster, so without the application's matcher.
                    Query(
                        f"max({selector('ksmon_group_metadata_limit_bytes', CLUSTER)})",
                        "max.message.bytes",
                    ),
                ],
                unit="bytes",
                minimum=0,
            ),
        ],
    )


def _internal_topics() -> Row:
    partitions = "ksmon_streams_internal_topic_partitions"
    return Row(
        "Internal topics (internal_topic_budget)",
        [
            Panel(
                "timeseries",
                "Internal topic partitions by kind",
                "Partitions of the application's internal topics (a repartition topic per key "
                "change, a changelog per store), by kind; times the replication factor is what "
                "the brokers host. The internal_topic_budget finding compares topics and "
                "replicas with aggregation.detectors.internal_topics_per_application and "
                "internal_replicas_per_application (KafkaStreamsInternalTopicBudget); the "
                "Internal topics table above lists them.",
                [
                    Query(
                        f"sum by (kind) ({_by('topic, kind', partitions)})",
                        "{{kind}}",
                    ),
                    Query(f"count({_by('topic', partitions)})", "internal topics"),
                ],
                unit="none",
                width=24,
                minimum=0,
            ),
        ],
    )


def _state_stores() -> Row:
    return Row(
        "State stores",
        [
            Panel(
                "timeseries",
                "Estimated RocksDB memory per instance",
                "RocksDB instances of the tasks each instance holds (key-value stores, one per "
                "window/session segment; standbys too) x the configured memory of one (default "
                "50 MiB block cache + 3 x 16 MiB write buffers), from its sidecar's reading of "
                "the state directory (aggregation job). Off-heap: compare with the container's "
                "memory limit, not the JVM heap. Near the limit, the state_store_footprint "
                "finding (in Findings above) names the instance and its biggest stores.",
                [
                    Query(
                        _by(
                            "process",
                            "ksmon_streams_instance_state_store_memory_estimate_bytes",
                        ),
                        "{{process}}",
                    )
                ],
                unit="bytes",
                minimum=0,
                width=24,
            ),
        ],
    )
