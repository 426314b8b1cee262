"""The dashboards' stable uids and the links between them.

A uid is part of every bookmarked or shared dashboard URL: never change one.
"""

from dashboards.model import DashboardLink

FLEET_UID = "ksmon-fleet"
APPLICATION_UID = "ksmon-application"
HEALTH_UID = "ksmon-health"

LINKS = (
    DashboardLink("Fleet overview", FLEET_UID),
    DashboardLink("Application", APPLICATION_UID),
    DashboardLink("ksmon health", HEALTH_UID),
)


def application_link(cluster: str, application: str) -> str:
    """The application dashboard for one application, keeping time range and data source."""
    return (
        f"/d/{APPLICATION_UID}?var-cluster={cluster}&var-application={application}"
        "&${__url_time_range}&${datasource:queryparam}"
    )


def alert_dashboard_path(uid: str, **variables: str) -> str:
    """A dashboard's path for an alert's ``dashboard_url``: each Grafana variable (keyword)
    set from one of the alert's labels (value), as a Prometheus template, URL-escaped."""
    query = "&".join(
        f"var-{variable}={{{{ $labels.{label} | urlquery }}}}"
        for variable, label in variables.items()
    )
    return f"/d/{uid}?{query}" if query else f"/d/{uid}"


# The dashboard each alert links to, by what its labels name: a Kafka Streams
# application, any consumer group, a cluster, or ksmon's own health.
ALERT_DASHBOARDS = {
    "application": alert_dashboard_path(
        APPLICATION_UID, cluster="kafka_cluster", application="group"
    ),
    "fleetGroup": alert_dashboard_path(FLEET_UID, cluster="kafka_cluster", group="group"),
    "fleetCluster": alert_dashboard_path(FLEET_UID, cluster="kafka_cluster"),
    "healthCluster": alert_dashboard_path(HEALTH_UID, cluster="kafka_cluster"),
    "health": alert_dashboard_path(HEALTH_UID),
}
