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
