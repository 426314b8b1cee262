"""Fleet overview: every watched application and group, its open findings, its lag."""

from dashboards.links import FLEET_UID, LINKS, application_link
from dashboards.model import Dashboard, Panel, Query, Row, ValueText, Variable, selector

CLUSTER = 'kafka_cluster=~"$cluster"'
GROUP = 'group=~"$group"'
STREAMS = 'streams="true"'
NOT_STABLE = 'state!="Stable"'
BY_GROUP = "kafka_cluster, group"


def _per_group(metric: str, *matchers: str) -> str:
    # max, not sum: two agents watching one cluster (HA) report the same group twice.
    return f"max by ({BY_GROUP}) ({selector(metric, CLUSTER, GROUP, *matchers)})"


def dashboard() -> Dashboard:
    return Dashboard(
        uid=FLEET_UID,
        title="ksmon / Fleet overview",
        description=(
            "Every Kafka Streams application and consumer group ksmon watches: open findings, "
            "lag in records and in time. Start here; drill down from a group to its application "
            "dashboard."
        ),
        variables=[
            Variable(
                "cluster",
                "Kafka cluster",
                "label_values(ksmon_kafka_up, kafka_cluster)",
                multi=True,
                description="Kafka clusters (the kafka_cluster name in ksmon's configuration).",
            ),
            Variable(
                "group",
                "Group",
                'label_values(ksmon_group_info{kafka_cluster=~"$cluster"}, group)',
                multi=True,
                description="Consumer groups; a Kafka Streams application's group is its "
                "application.id.",
            ),
        ],
        links=[link for link in LINKS if link.uid != FLEET_UID],
        rows=[_overview(), _applications(), _findings(), _lag()],
    )


def _overview() -> Row:
    up = [ValueText(0, "DOWN", "red"), ValueText(1, "up", "green")]
    return Row(
        "Overview",
        [
            Panel(
                "stat",
                "Kafka clusters reachable",
                "Whether ksmon's last poll reached each Kafka cluster (ksmon_kafka_up). DOWN: "
                "every lag and group series of that cluster is missing, see the ksmon health "
                "dashboard.",
                [
                    Query(
                        f"min by (kafka_cluster) ({selector('ksmon_kafka_up', CLUSTER)})",
                        "{{kafka_cluster}}",
                        instant=True,
                    )
                ],
                unit="none",
                width=6,
                height=5,
                value_texts=up,
            ),
            Panel(
                "stat",
                "Kafka Streams applications",
                "Groups whose members run Kafka Streams (decoded from their assignment data).",
                [
                    Query(
                        f"count({_per_group('ksmon_group_info', STREAMS)})",
                        "applications",
                        instant=True,
                    )
                ],
                unit="none",
                width=4,
                height=5,
                no_value="0",
            ),
            Panel(
                "stat",
                "Groups watched",
                "Consumer groups ksmon watches (its groups allow/deny regexes choose them).",
                [Query(f"count({_per_group('ksmon_group_info')})", "groups", instant=True)],
                unit="none",
                width=4,
                height=5,
                no_value="0",
            ),
            Panel(
                "stat",
                "Groups not Stable",
                "Groups whose state is not Stable right now: rebalancing (PreparingRebalance, "
                "CompletingRebalance, Reconciling), Empty (no member) or Dead.",
                [
                    Query(
                        f"count({_per_group('ksmon_group_state', NOT_STABLE)})",
                        "groups",
                        instant=True,
                    )
                ],
                unit="none",
                width=4,
                height=5,
                no_value="0",
            ),
            Panel(
                "stat",
                "Open findings",
                "Problems the ksmon aggregation job has found and not yet closed, by severity: "
                "dead stream threads, hot partitions co-located, stalled restores, rebalance "
                "loops, no live consumers.",
                [
                    Query(
                        "count by (severity) ("
                        f"{selector('ksmon_finding_active', CLUSTER, GROUP)} == 1)",
                        "{{severity}}",
                        instant=True,
                    )
                ],
                unit="none",
                width=6,
                height=5,
                no_value="0",
            ),
        ],
    )


def _applications() -> Row:
    return Row(
        "Groups",
        [
            Panel(
                "table",
                "Groups and applications",
                "One row per group: state, members, Kafka Streams instances, lag and time lag, "
                "open findings. Click a group to open its application dashboard.",
                [
                    Query(f"{_per_group('ksmon_group_members')}", "members"),
                    Query(f"{_per_group('ksmon_streams_instances')}", "instances"),
                    Query(f"{_per_group('ksmon_group_lag')}", "lag (records)"),
                    Query(f"{_per_group('ksmon_group_lag_seconds')}", "time lag (s)"),
                    Query(
                        f"sum by ({BY_GROUP}) ("
                        f"{selector('ksmon_finding_active', CLUSTER, GROUP)} == 1)",
                        "open findings",
                    ),
                ],
                unit="short",
                width=24,
                height=10,
                links={
                    "group": application_link("${__data.fields.kafka_cluster}", "${__value.raw}")
                },
            ),
            Panel(
                "table",
                "Firing alerts",
                "ksmon's alerts (KafkaStreams*, Ksmon*) firing in this Prometheus right now, "
                "with their labels. Each alert's runbook is in docs/runbooks/<alert>.md.",
                [
                    Query(
                        "max by (alertname, severity, kafka_cluster, group, process, instance) ("
                        'ALERTS{alertstate="firing", alertname=~"KafkaStreams.*|Ksmon.*"})',
                        "firing",
                    )
                ],
                unit="none",
                width=24,
                height=6,
            ),
        ],
    )


def _findings() -> Row:
    subject = "kafka_cluster, group, kind, severity, process, thread, task, topic, partition"
    return Row(
        "Findings (aggregation job)",
        [
            Panel(
                "table",
                "Findings",
                "Every open finding with its subject (instance = process, stream thread = "
                "thread, task, partition) and how long it has been open. The job's /metrics and "
                "the alert's runbook say what to do.",
                [
                    Query(
                        f"time() - max by ({subject}) ("
                        f"{selector('ksmon_finding_since_timestamp_seconds', CLUSTER, GROUP)})",
                        "open for",
                    )
                ],
                unit="s",
                width=14,
            ),
            Panel(
                "timeseries",
                "Open findings by kind",
                "How many findings of each kind were open over time: a step up is a new "
                "problem, a step down one that closed (after a full quiet evaluation window).",
                [
                    Query(
                        "count by (kind) ("
                        f"{selector('ksmon_finding_active', CLUSTER, GROUP)} == 1)",
                        "{{kind}}",
                    )
                ],
                unit="none",
                width=10,
                minimum=0,
            ),
        ],
    )


def _lag() -> Row:
    return Row(
        "Lag",
        [
            Panel(
                "timeseries",
                "Time lag by group",
                "How old the oldest unconsumed record is, per group (the largest over its "
                "partitions; 0 when caught up). What users of the application's output feel.",
                [Query(_per_group("ksmon_group_lag_seconds"), "{{group}} ({{kafka_cluster}})")],
                unit="s",
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Lag by group",
                "Records not yet consumed, summed over each group's partitions.",
                [Query(_per_group("ksmon_group_lag"), "{{group}} ({{kafka_cluster}})")],
                unit="short",
                minimum=0,
            ),
            Panel(
                "timeseries",
                "Lag growth",
                "How fast each group's lag changes (records/s, a per-second derivative): above "
                "0 for long means the group does not keep up; below 0 it is catching up.",
                [
                    Query(
                        f"max by ({BY_GROUP}) (deriv("
                        f"{selector('ksmon_group_lag', CLUSTER, GROUP)}[$__rate_interval]))",
                        "{{group}} ({{kafka_cluster}})",
                    )
                ],
                unit="suffix:rec/s",
            ),
            Panel(
                "timeseries",
                "Members by group",
                "Group members (one per stream thread for Kafka Streams). Drops to 0 mean no "
                "live consumer; saw-teeth mean rebalances.",
                [Query(_per_group("ksmon_group_members"), "{{group}} ({{kafka_cluster}})")],
                unit="none",
                minimum=0,
            ),
        ],
    )
