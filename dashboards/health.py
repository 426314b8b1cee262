"""ksmon's own health: is every part of ksmon up, polling, shipping and fresh?"""

from dashboards.links import HEALTH_UID, LINKS
from dashboards.model import Dashboard, Panel, Query, Row, ValueText, Variable, selector

CLUSTER = 'kafka_cluster=~"$cluster"'
KSMON_TARGETS = 'job=~".*ksmon.*"'
UP = [ValueText(0, "DOWN", "red"), ValueText(1, "up", "green")]


def _rate(metric: str, by: str, *matchers: str) -> str:
    return f"sum by ({by}) (rate({selector(metric, *matchers)}[$__rate_interval]))"


def _increase(metric: str, by: str, *matchers: str) -> str:
    return f"sum by ({by}) (increase({selector(metric, *matchers)}[$__rate_interval]))"


def _age(metric: str, by: str, *matchers: str) -> str:
    return f"time() - max by ({by}) ({selector(metric, *matchers)})"


def dashboard() -> Dashboard:
    return Dashboard(
        uid=HEALTH_UID,
        title="ksmon / Health",
        description=(
            "ksmon's own health: scrape targets, polling of each Kafka cluster, snapshot "
            "delivery, the aggregation job's freshness and the sidecars' reading of their apps. "
            "When something here is red, the Kafka Streams dashboards and alerts are blind."
        ),
        variables=[
            Variable(
                "cluster",
                "Kafka cluster",
                "label_values(ksmon_kafka_up, kafka_cluster)",
                multi=True,
                description="Kafka clusters (the kafka_cluster name in ksmon's configuration).",
            ),
        ],
        links=[link for link in LINKS if link.uid != HEALTH_UID],
        rows=[_targets(), _polling(), _delivery(), _job(), _sidecars()],
    )


def _targets() -> Row:
    return Row(
        "Targets",
        [
            Panel(
                "stat",
                "ksmon targets up",
                "Whether Prometheus can scrape each ksmon target (agents, sidecars, the "
                "aggregation job): `up` of every scrape job whose name contains ksmon.",
                [
                    Query(
                        f"max by (job, instance) ({selector('up', KSMON_TARGETS)})",
                        "{{job}} {{instance}}",
                        instant=True,
                    )
                ],
                unit="none",
                width=12,
                height=5,
                value_texts=UP,
            ),
            Panel(
                "stat",
                "Kafka clusters reachable",
                "Whether the last poll of each cluster reached it (ksmon_kafka_up), per agent.",
                [
                    Query(
                        f"min by (kafka_cluster) ({selector('ksmon_kafka_up', CLUSTER)})",
                        "{{kafka_cluster}}",
                        instant=True,
                    )
                ],
                unit="none",
                width=12,
                height=5,
                value_texts=UP,
            ),
            Panel(
                "table",
                "Agents",
                "Every ksmon agent scraped: its id, mode (central or sidecar) and version.",
                [
                    Query(
                        "max by (instance, agent_id, mode) (ksmon_agent_info) "
                        "* on (instance) group_left (version) "
                        "max by (instance, version) (ksmon_build_info)",
                        "agents",
                    )
                ],
                unit="none",
                width=24,
                height=6,
            ),
        ],
    )


def _polling() -> Row:
    return Row(
        "Polling Kafka",
        [
            Panel(
                "timeseries",
                "Time since the last successful poll",
                "Seconds since each agent last finished a poll of each cluster. It should stay "
                "near the poll interval (offsets_interval, default 10 s); a rising line means "
                "polls fail or hang (KsmonKafkaDown, KsmonAgentNotPolling).",
                [
                    Query(
                        _age(
                            "ksmon_poll_last_success_timestamp_seconds",
                            "instance, kafka_cluster",
                            CLUSTER,
                        ),
                        "{{kafka_cluster}} ({{instance}})",
                    )
                ],
                unit="s",
                width=8,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Poll duration",
                "How long the last poll of each cluster took (all groups, offsets and "
                "metadata in batched requests).",
                [
                    Query(
                        "max by (instance, kafka_cluster) ("
                        f"{selector('ksmon_poll_duration_seconds', CLUSTER)})",
                        "{{kafka_cluster}} ({{instance}})",
                    )
                ],
                unit="s",
                width=8,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Polls by result",
                "Polls per second that succeeded (ok) or failed, per cluster.",
                [
                    Query(
                        _rate("ksmon_polls_total", "kafka_cluster, result", CLUSTER),
                        "{{kafka_cluster}} {{result}}",
                    )
                ],
                unit="ops",
                width=8,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Poll errors",
                "Errors met while polling, by stage and error type (one per affected group and "
                "poll); stage=cluster, error=unreachable is a poll that reached nothing.",
                [
                    Query(
                        _rate("ksmon_poll_errors_total", "kafka_cluster, stage, error", CLUSTER),
                        "{{kafka_cluster}} {{stage}}: {{error}}",
                    )
                ],
                unit="ops",
                width=8,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Kafka requests by API",
                "Requests the agents send to each cluster, by Admin API. Batching keeps this "
                "flat as the number of groups grows.",
                [
                    Query(
                        _rate("ksmon_kafka_requests_total", "kafka_cluster, api", CLUSTER),
                        "{{kafka_cluster}} {{api}}",
                    )
                ],
                unit="reqps",
                width=8,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Groups watched and undecodable members",
                "Groups each cluster's last poll watched, and member metadata blobs that did not "
                "decode (a Kafka Streams version ksmon does not know yet: the snapshot says "
                "which).",
                [
                    Query(
                        f"max by (kafka_cluster) ({selector('ksmon_groups', CLUSTER)})",
                        "{{kafka_cluster}} groups",
                    ),
                    Query(
                        "sum by (kafka_cluster) (max by (kafka_cluster, group) ("
                        f"{selector('ksmon_group_decode_errors', CLUSTER)}))",
                        "{{kafka_cluster}} undecodable members",
                    ),
                ],
                unit="none",
                width=8,
                minimum=0,
            ),
            Panel(
                "state-timeline",
                "__consumer_offsets reader",
                "Whether each agent tails __consumer_offsets for exact generations (clusters "
                "with offsets_topic.read: true). DOWN: no READ permission on the topic, or the "
                "cluster is down; rebalance facts are then inferred, less precisely.",
                [
                    Query(
                        "max by (instance, kafka_cluster) ("
                        f"{selector('ksmon_offsets_topic_reader_up', CLUSTER)})",
                        "{{kafka_cluster}} ({{instance}})",
                    )
                ],
                unit="none",
                width=24,
                height=5,
                value_texts=UP,
            ),
        ],
    )


def _delivery() -> Row:
    return Row(
        "Snapshot delivery (agent to the aggregation job)",
        [
            Panel(
                "timeseries",
                "Snapshots sent, dropped and failed",
                "Snapshots per second each agent delivered to its sink, gave up on (buffer "
                "overflow, spool retention: KsmonSnapshotsDropped) and failed to deliver "
                "(retried).",
                [
                    Query(
                        _rate("ksmon_snapshots_sent_total", "instance, sink"),
                        "{{instance}} {{sink}} sent",
                    ),
                    Query(
                        _rate("ksmon_snapshots_dropped_total", "instance, sink"),
                        "{{instance}} {{sink}} dropped",
                    ),
                    Query(
                        _rate("ksmon_snapshot_sink_errors_total", "instance, sink"),
                        "{{instance}} {{sink}} errors",
                    ),
                ],
                unit="ops",
                width=8,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Snapshots waiting",
                "Snapshots accepted but not yet delivered (in memory while the topic is "
                "unreachable; bounded by buffer_max_snapshots).",
                [
                    Query(
                        "max by (instance, sink) (ksmon_snapshot_buffer_records)",
                        "{{instance}} {{sink}}",
                    )
                ],
                unit="short",
                width=8,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Time since the sink last delivered",
                "Seconds since each agent's sink last delivered a snapshot.",
                [
                    Query(
                        _age(
                            "ksmon_snapshot_sink_last_success_timestamp_seconds", "instance, sink"
                        ),
                        "{{instance}} {{sink}}",
                    )
                ],
                unit="s",
                width=8,
                minimum=0,
            ),
        ],
    )


def _job() -> Row:
    return Row(
        "Aggregation job",
        [
            Panel(
                "timeseries",
                "Snapshot staleness per cluster",
                "Age of the newest snapshot the aggregation job has processed, per cluster. "
                "Over 5 minutes: KsmonJobStale; findings are frozen.",
                [
                    Query(
                        _age(
                            "ksmon_job_newest_snapshot_timestamp_seconds", "kafka_cluster", CLUSTER
                        ),
                        "{{kafka_cluster}}",
                    )
                ],
                unit="s",
                width=8,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Micro-batches",
                "Seconds since the job's last micro-batch finished, and how long that batch "
                "took. A batch longer than the trigger interval means the job falls behind.",
                [
                    Query(
                        "time() - max(ksmon_job_last_batch_timestamp_seconds)",
                        "since last batch",
                    ),
                    Query("max(ksmon_job_batch_duration_seconds)", "last batch duration"),
                ],
                unit="s",
                width=8,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Snapshots processed, quarantined, failed batches",
                "Snapshots the job processed per second; snapshots it set aside (malformed, or "
                "from a newer agent: future_version) and micro-batches that failed, per "
                "interval.",
                [
                    Query(
                        "sum(rate(ksmon_job_snapshots_processed_total[$__rate_interval]))",
                        "processed/s",
                    ),
                    Query(
                        _increase("ksmon_job_snapshots_quarantined_total", "reason"),
                        "quarantined {{reason}}",
                    ),
                    Query(
                        "sum(increase(ksmon_job_batch_errors_total[$__rate_interval]))",
                        "failed batches",
                    ),
                ],
                unit="short",
                width=8,
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Findings opened",
                "Findings the job opened per interval, by kind and cluster.",
                [
                    Query(
                        _increase("ksmon_findings_opened_total", "kafka_cluster, kind", CLUSTER),
                        "{{kafka_cluster}} {{kind}}",
                    )
                ],
                unit="short",
                width=24,
                minimum=0,
            ),
        ],
    )


def _sidecars() -> Row:
    return Row(
        "Sidecars",
        [
            Panel(
                "state-timeline",
                "App metrics endpoint",
                "Whether each sidecar's last scrape of its Kafka Streams app's metrics endpoint "
                "worked. DOWN for 5 minutes: KsmonSidecarAppMetricsDown.",
                [
                    Query(
                        "max by (kafka_cluster, group, process) ("
                        f"{selector('ksmon_sidecar_app_metrics_up', CLUSTER)})",
                        "{{group}} {{process}}",
                    )
                ],
                unit="none",
                width=24,
                height=6,
                value_texts=UP,
            ),
        ],
    )
