"""The alert rules in dashboards/alerts/: valid for promtool, unit-tested with promtool
(each alert firing on its problem and silent on healthy and legitimate-churn series),
following the conventions (severity, summary, templated description, runbook, for:),
and reading only metrics and labels that exist or are in the team's contract."""

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from dashboards.links import APPLICATION_UID, FLEET_UID, HEALTH_UID
from tests.support import promql
from tests.support.metric_sources import TARGET_LABELS, known_families
from tests.support.prometheus import RULE_FILES, RULE_TESTS, alert_rules, duration_seconds, run_tool

ROOT = Path(__file__).resolve().parents[3]
RUNBOOKS = ROOT / "docs" / "runbooks"
RUNBOOK_BASE = "https://github.com/ksmon/ksmon/blob/main/docs/runbooks/"
DASHBOARD_BASE = "http://localhost:3000/d/"
ANNOTATIONS = {"summary", "description", "runbook_url", "dashboard_url"}
SEVERITIES = {"critical", "warning", "info"}
PREFIXES = ("KafkaStreams", "Ksmon")
ALERT_NAMES = sorted({rule["alert"] for rule in alert_rules()})


def test_there_are_rule_files_and_rule_tests() -> None:
    assert [p.name for p in RULE_FILES] == ["kafka-streams.rules.yml", "ksmon.rules.yml"]
    assert [p.name for p in RULE_TESTS] == ["kafka-streams.test.yml", "ksmon.test.yml"]
    assert len(ALERT_NAMES) >= 13


def test_promtool_check_rules_accepts_every_rule_file() -> None:
    result = run_tool("promtool", "check", "rules", *map(str, RULE_FILES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize("test_file", RULE_TESTS, ids=lambda p: p.name)
def test_promtool_rule_unit_tests_pass(test_file: Path) -> None:
    result = run_tool("promtool", "test", "rules", str(test_file))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def _rule_tests() -> list[dict[str, Any]]:
    cases = []
    for path in RULE_TESTS:
        for test in yaml.safe_load(path.read_text())["tests"]:
            cases += test.get("alert_rule_test", [])
    return cases


@pytest.mark.parametrize("alert", ALERT_NAMES)
def test_every_alert_has_a_firing_case_with_annotations_and_a_silent_case(alert: str) -> None:
    cases = [c for c in _rule_tests() if c["alertname"] == alert]
    firing = [c for c in cases if c["exp_alerts"]]
    assert firing, f"no promtool case where {alert} fires"
    assert any(c["exp_alerts"] == [] for c in cases), f"no promtool case where {alert} is silent"
    for case in firing:
        for expected in case["exp_alerts"]:
            assert set(expected["exp_annotations"]) == ANNOTATIONS
            assert "severity" in expected["exp_labels"]


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda r: r["alert"])
def test_every_alert_follows_the_conventions(rule: dict[str, Any]) -> None:
    name = rule["alert"]
    assert name.startswith(PREFIXES)
    assert "_" not in name
    assert rule["labels"]["severity"] in SEVERITIES
    annotations = rule["annotations"]
    assert set(annotations) == ANNOTATIONS
    # Templated with the subject's labels (or, for absent(), saying what is absent).
    if not rule["expr"].startswith("absent("):
        assert "{{ $labels." in annotations["description"], name
    assert annotations["runbook_url"] == f"{RUNBOOK_BASE}{name}.md"
    # A ksmon dashboard, its variables set from labels the alert has.
    uid, _, query = annotations["dashboard_url"].removeprefix(DASHBOARD_BASE).partition("?")
    assert uid in {FLEET_UID, APPLICATION_UID, HEALTH_UID}, name
    assert (uid == HEALTH_UID) == name.startswith("Ksmon"), name
    for label in re.findall(r"\$labels\.(\w+)", query):
        assert label in _output_labels(rule["expr"]), f"{name}: no label {label}"
    if "lag" in rule["expr"]:
        assert duration_seconds(rule["for"]) >= 300, f"{name}: for: must be >= 5m on lag"


def _output_labels(expr: str) -> set[str]:
    """The labels an alert of ``expr`` can carry: its aggregation's, or (none) its series'."""
    reading = promql.read(expr)
    if reading.grouping_labels:
        return set(reading.grouping_labels)
    known = known_families()
    return {label for s in reading.selectors for label in known.get(s.metric) or ()}


@pytest.mark.parametrize("alert", ALERT_NAMES)
def test_every_alert_has_a_runbook_that_says_what_to_do(alert: str) -> None:
    page = RUNBOOKS / f"{alert}.md"
    assert page.is_file(), f"{page} is missing"
    text = page.read_text()
    assert text.startswith(f"# {alert}\n")
    for section in ("## What it means", "## How to confirm", "## What to do"):
        assert section in text, f"{page.name}: no '{section}' section"
    confirm = text.split("## How to confirm", 1)[1].split("## What to do", 1)[0]
    # Confirm with ksmon (its CLI or the agent's, sidecar's or job's /metrics) ...
    assert any(s in confirm for s in ("ksmon snapshot", ":8479/metrics", ":8480/metrics"))
    # ... and with Kafka's own tools.
    assert "kafka-consumer-groups" in confirm or "kafka-broker-api-versions" in confirm


def test_no_runbook_without_an_alert() -> None:
    pages = {p.stem for p in RUNBOOKS.glob("*.md")} - {"README"}
    assert pages == set(ALERT_NAMES)


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda r: r["alert"])
def test_alerts_read_only_metrics_and_labels_that_exist(rule: dict[str, Any]) -> None:
    known = known_families()
    reading = promql.read(rule["expr"])
    assert reading.metrics, rule["expr"]
    usable: set[str] = set(TARGET_LABELS)
    for selector in reading.selectors:
        assert selector.metric in known, f"{rule['alert']}: unknown metric {selector.metric}"
        labels = known[selector.metric]
        if labels is None:
            continue
        usable |= labels
        unknown = selector.matched_labels - labels - TARGET_LABELS
        assert not unknown, f"{rule['alert']}: {selector.metric} has no label {unknown}"
    assert reading.grouping_labels <= usable, rule["expr"]
