"""Dashboards and alert rules as shipped, against a real Prometheus scraping the real
agent, sidecar and aggregation job during a live fixture-app scenario
(tests/e2e/scenario.py): every panel query and every variable returns data, every rule
evaluates, the injected faults' alerts fire (from the agent's metrics and from the job's
findings) and the healthy application raises none, and promtool accepts what each
component exposes.
"""

import time

import pytest

from agent.aggregation.commands import open_findings
from tests.e2e.scenario import (
    AGENT_JOB,
    AGGREGATION_JOB,
    FAULTS,
    LOCAL_CLUSTER,
    SIDECAR_JOB,
    UNREACHABLE_CLUSTER,
    Scenario,
    injected_faults,
)
from tests.support.grafana import PanelQuery, VariableQuery, queries, substitute, variable_queries
from tests.support.prometheus import alert_rules, run_tool

# The scenario's setup counts towards the first test's time: it waits for the job's
# findings (tests/e2e/scenario.py, ALERT_TIMEOUT).
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]

# What a person would pick in each dashboard's variables for this scenario.
RATE_INTERVAL = "10s"


def _values(scenario: Scenario, dashboard_uid: str) -> dict[str, str]:
    if dashboard_uid == "ksmon-application":
        return {
            "cluster": LOCAL_CLUSTER,
            "application": scenario.drill_app,
            "__rate_interval": RATE_INTERVAL,
        }
    # Multi-value variables set to "All".
    return {"cluster": ".*", "group": ".*", "__rate_interval": RATE_INTERVAL}


@pytest.mark.parametrize("query", queries(), ids=lambda q: q.name)
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
        "group": {scenario.healthy_app, scenario.faulty_app, scenario.drill_app},
        "application": {scenario.healthy_app, scenario.drill_app},
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


@pytest.mark.parametrize("fault", FAULTS)
def test_the_injected_fault_fires_its_alert(scenario: Scenario, fault: str) -> None:
    alertname, labels = injected_faults(scenario)[fault]
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
    # The dashboard link is filled with the alert's own labels, ready to click.
    assert annotations["dashboard_url"].startswith("http://localhost:3000/d/ksmon-")
    assert f"var-cluster={labels['kafka_cluster']}" in annotations["dashboard_url"]
    assert "{{" not in annotations["dashboard_url"]


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


def test_the_scraped_job_is_not_absent(scenario: Scenario) -> None:
    """The default job selector finds the job as the scenario scrapes it: KsmonJobAbsent
    (its wait shortened like every rule's) is neither pending nor firing."""
    assert not [
        a for a in scenario.prometheus.alerts() if a["labels"].get("alertname") == "KsmonJobAbsent"
    ]


def _lint(text: str) -> str:
    result = run_tool("promtool", "check", "metrics", stdin=text)
    return (result.stdout + result.stderr).strip() if result.returncode != 0 else ""


def test_promtool_check_metrics_accepts_the_agents_output(scenario: Scenario) -> None:
    text = scenario.metrics_text(AGENT_JOB)
    # Real poll data, Kafka Streams groups included.
    assert "ksmon_streams_task_assignment_info{" in text
    assert _lint(text) == ""


def test_promtool_check_metrics_accepts_the_sidecars_output(scenario: Scenario) -> None:
    text = scenario.metrics_text(SIDECAR_JOB)
    # Real scrape data of the app next to it.
    assert "ksmon_sidecar_thread_state{" in text
    assert _lint(text) == ""


def test_promtool_check_metrics_accepts_the_jobs_output(scenario: Scenario) -> None:
    text = scenario.metrics_text(AGGREGATION_JOB)
    # Real findings and loads, from the snapshots of both agents.
    assert f'ksmon_finding_active{{group="{scenario.drill_app}"' in text
    assert "ksmon_streams_thread_load_records_per_second{" in text
    assert _lint(text) == ""


def test_ksmon_findings_names_the_hot_member_and_the_empty_group(scenario: Scenario) -> None:
    """The findings topic, folded as ``ksmon findings`` does, says what the alerts say."""
    process, thread = scenario.hot_member
    found = {
        (f.group, f.kind, f.subject.process, f.subject.thread)
        for f in open_findings(scenario.job_config)
    }
    assert (scenario.drill_app, "hot_partitions_colocated", process, int(thread)) in found
    assert (scenario.faulty_app, "no_live_consumers", None, None) in found
    assert not [f for f in found if f[0] == scenario.healthy_app]
