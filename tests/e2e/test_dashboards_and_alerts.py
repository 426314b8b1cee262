"""Dashboards and alert rules as shipped, against a real Prometheus scraping the real
agent during a live fixture-app scenario (tests/e2e/scenario.py): every panel query and
every variable returns data, every rule evaluates, the injected faults' alerts fire and
the healthy application raises none, and promtool accepts what the agent exposes.

Queries on metrics of a component not on this branch yet (the aggregation job:
tests/support/metric_sources.py) run too, as strict expected failures: they
must return nothing until that component lands, and then they fail loudly until it is
started in the scenario.
"""

import time

import pytest

from tests.e2e.scenario import LOCAL_CLUSTER, UNREACHABLE_CLUSTER, Scenario, injected_faults
from tests.support import promql
from tests.support.grafana import PanelQuery, VariableQuery, queries, substitute, variable_queries
from tests.support.metric_sources import PENDING, landed, pending_component
from tests.support.prometheus import alert_rules, run_tool

pytestmark = pytest.mark.integration

# What a person would pick in each dashboard's variables for this scenario.
RATE_INTERVAL = "10s"


def _values(scenario: Scenario, dashboard_uid: str) -> dict[str, str]:
    if dashboard_uid == "ksmon-application":
        return {
            "cluster": LOCAL_CLUSTER,
            "application": scenario.healthy_app,
            "__rate_interval": RATE_INTERVAL,
        }
    # Multi-value variables set to "All".
    return {"cluster": ".*", "group": ".*", "__rate_interval": RATE_INTERVAL}


def _pending_reason(expr: str) -> str | None:
    components = sorted(
        {p.component for m in promql.read(expr).metrics if (p := pending_component(m)) is not None}
    )
    return f"pending: needs {' and '.join(components)}" if components else None


def _query_params() -> list[object]:
    params: list[object] = []
    for query in queries():
        reason = _pending_reason(query.expr)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(query, id=query.name, marks=marks))
    return params


@pytest.mark.parametrize("query", _query_params())
def test_every_panel_query_returns_series(scenario: Scenario, query: PanelQuery) -> None:
    expr = substitute(query.expr, _values(scenario, query.dashboard_uid))
    if query.instant:
        result = scenario.prometheus.query(expr)
    else:
        result = scenario.prometheus.query_range(expr, scenario.started_at, time.time(), step="2s")
    assert result, f"no series for {expr}"


def _expected_variable_values(scenario: Scenario, variable: VariableQuery) -> set[str]:
    return {
        "cluster": {LOCAL_CLUSTER, UNREACHABLE_CLUSTER},
        "group": {scenario.healthy_app, scenario.faulty_app},
        "application": {scenario.healthy_app},
    }[variable.name]


@pytest.mark.parametrize(
    "variable", variable_queries(), ids=lambda v: f"{v.dashboard_uid}/${v.name}"
)
def test_every_variable_offers_the_scenarios_values(
    scenario: Scenario, variable: VariableQuery
) -> None:
    selector = substitute(variable.selector, _values(scenario, variable.dashboard_uid))
    series = scenario.prometheus.series(selector, scenario.started_at, time.time())
    offered = {s[variable.label] for s in series if variable.label in s}
    assert _expected_variable_values(scenario, variable) <= offered


def test_every_shipped_rule_is_loaded_and_evaluates_without_error(scenario: Scenario) -> None:
    rules = scenario.prometheus.rules()
    assert sorted(r["name"] for r in rules) == sorted(r["alert"] for r in alert_rules())
    broken = {r["name"]: r.get("lastError") for r in rules if r["health"] != "ok"}
    assert not broken


@pytest.mark.parametrize("index", range(2), ids=["no-live-consumers", "kafka-down"])
def test_the_injected_fault_fires_its_alert(scenario: Scenario, index: int) -> None:
    alertname, labels = injected_faults(scenario)[index]
    firing = [
        a
        for a in scenario.prometheus.alerts()
        if a["labels"].get("alertname") == alertname
        and all(a["labels"].get(k) == v for k, v in labels.items())
        and a["state"] == "firing"
    ]
    assert len(firing) == 1, scenario.prometheus.alerts()
    annotations = firing[0]["annotations"]
    subject = labels.get("group", labels["kafka_cluster"])
    assert subject in annotations["description"]
    assert annotations["runbook_url"].endswith(f"/docs/runbooks/{alertname}.md")


def test_the_healthy_application_raises_no_alert(scenario: Scenario) -> None:
    about_healthy = [
        a for a in scenario.prometheus.alerts() if a["labels"].get("group") == scenario.healthy_app
    ]
    assert about_healthy == []
    # ... and the reachable cluster is not reported down.
    assert not [
        a
        for a in scenario.prometheus.alerts()
        if a["labels"].get("alertname") == "KsmonKafkaDown"
        and a["labels"].get("kafka_cluster") == LOCAL_CLUSTER
    ]


def _lint(text: str) -> str:
    result = run_tool("promtool", "check", "metrics", stdin=text)
    return (result.stdout + result.stderr).strip() if result.returncode != 0 else ""


def test_promtool_check_metrics_accepts_the_agents_output(scenario: Scenario) -> None:
    text = scenario.metrics_text("ksmon-agent")
    # Real poll data, Kafka Streams groups included.
    assert "ksmon_streams_task_assignment_info{" in text
    assert _lint(text) == ""


def test_promtool_check_metrics_accepts_the_sidecars_output(scenario: Scenario) -> None:
    text = scenario.metrics_text("ksmon-sidecar")
    # Real scrape data of the app next to it.
    assert "ksmon_sidecar_thread_state{" in text
    assert _lint(text) == ""


@pytest.mark.parametrize(("key", "job"), [("job", "ksmon-aggregation")])
def test_promtool_check_metrics_accepts_the_pending_components_output(
    scenario: Scenario, key: str, job: str
) -> None:
    if key in PENDING and not landed(PENDING[key]):
        pytest.xfail(f"pending: {PENDING[key].component} is not on this branch")
    text = scenario.metrics_text(job)
    assert _lint(text) == ""
