"""The committed Grafana dashboards: what the code generates, structurally sound for
Grafana (stable uids, the datasource variable on every panel, units and descriptions,
a grid without overlaps), and every query valid PromQL (promtool) that reads only
metrics and labels that exist or are in the team's contract."""

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from dashboards.generate import expected_files
from dashboards.generate import main as generate
from tests.support import promql
from tests.support.grafana import (
    dashboards,
    panels,
    queries,
    rows,
    substitute,
    variable_queries,
    variables_used,
)
from tests.support.metric_sources import TARGET_LABELS, known_families
from tests.support.prometheus import run_tool

UIDS = {"ksmon-fleet", "ksmon-application", "ksmon-health"}
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# Values to render queries with, as Grafana would on a real dashboard.
EXAMPLE_VALUES = {
    "cluster": "prod",
    "group": "orders-app|billing",
    "application": "orders-app",
    "__rate_interval": "1m",
}


def test_the_committed_files_are_what_the_code_generates() -> None:
    stale = [str(p) for p, text in expected_files().items() if p.read_text() != text]
    assert not stale, f"run `make dashboards` and commit: {stale}"
    assert generate(["--check"]) == 0


def test_uids_are_the_stable_ones_and_file_names_follow_them() -> None:
    loaded = dashboards()
    assert set(loaded) == UIDS
    for path in Path(__file__).resolve().parents[3].glob("dashboards/grafana/*.json"):
        assert path.stem in loaded


@pytest.mark.parametrize("uid", sorted(UIDS))
def test_every_dashboard_has_a_datasource_variable_and_cluster_variable(uid: str) -> None:
    variables = {v["name"]: v for v in dashboards()[uid]["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert variables["cluster"]["type"] == "query"
    for v in variables.values():
        if v["type"] == "query":
            assert v["datasource"] == DATASOURCE
            assert v["query"]["query"].startswith("label_values(")


def test_fleet_has_a_group_variable_and_the_application_dashboard_an_application_one() -> None:
    def names(uid: str) -> list[str]:
        return [v["name"] for v in dashboards()[uid]["templating"]["list"]]

    assert names("ksmon-fleet") == ["datasource", "cluster", "group"]
    assert names("ksmon-application") == ["datasource", "cluster", "application"]
    assert names("ksmon-health") == ["datasource", "cluster"]


def _all_panels() -> list[tuple[str, dict[str, Any]]]:
    return [(uid, p) for uid, d in dashboards().items() for p in panels(d)]


@pytest.mark.parametrize(
    ("uid", "panel"), _all_panels(), ids=[f"{u}/{p['title']}" for u, p in _all_panels()]
)
def test_every_panel_uses_the_datasource_variable_and_has_a_unit_and_description(
    uid: str, panel: dict[str, Any]
) -> None:
    assert panel["datasource"] == DATASOURCE
    assert panel["targets"], "a panel without a query"
    for target in panel["targets"]:
        assert target["datasource"] == DATASOURCE
        assert target["expr"].strip()
    assert panel["fieldConfig"]["defaults"]["unit"]
    assert len(panel["description"]) > 40, "say what the panel shows and what to look for"


@pytest.mark.parametrize("uid", sorted(UIDS))
def test_panels_sit_on_the_grid_without_overlapping_and_ids_are_unique(uid: str) -> None:
    dashboard = dashboards()[uid]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    titles = [p["title"] for p in panels(dashboard)]
    assert len(titles) == len(set(titles)), "panel titles name panels in tests and links"
    occupied: set[tuple[int, int]] = set()
    for panel in dashboard["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] >= 0, panel["title"]
        assert 0 < pos["w"] <= 24 - pos["x"], panel["title"]
        cells = {(pos["x"] + dx, pos["y"] + dy) for dx in range(pos["w"]) for dy in range(pos["h"])}
        assert not cells & occupied, f"{panel['title']} overlaps another panel"
        occupied |= cells
    assert rows(dashboard), "panels are grouped in rows"


@pytest.mark.parametrize("query", queries(), ids=lambda q: q.name)
def test_every_range_in_a_query_is_the_rate_interval(query: Any) -> None:
    ranges = re.findall(r"\[([^\]]+)\]", query.expr)
    assert all(r == "$__rate_interval" for r in ranges), query.expr
    if "rate(" in query.expr or "increase(" in query.expr or "deriv(" in query.expr:
        assert ranges


@pytest.mark.parametrize("query", queries(), ids=lambda q: q.name)
def test_queries_use_only_the_dashboards_own_variables(query: Any) -> None:
    defined = {v["name"] for v in dashboards()[query.dashboard_uid]["templating"]["list"]}
    used = variables_used(query.expr) - {"__rate_interval"}
    assert used <= defined, f"undefined variables {used - defined}"


@pytest.mark.parametrize("query", queries(), ids=lambda q: q.name)
def test_queries_read_only_metrics_and_labels_that_exist(query: Any) -> None:
    known = known_families()
    reading = promql.read(query.expr)
    assert reading.metrics, query.expr
    usable: set[str] = set(TARGET_LABELS)
    for selector in reading.selectors:
        assert selector.metric in known, f"unknown metric {selector.metric} in {query.expr}"
        labels = known[selector.metric]
        if labels is None:
            usable |= {"alertname", "alertstate", "severity", "kafka_cluster", "group", "process"}
            continue
        usable |= labels
        unknown = selector.matched_labels - labels - TARGET_LABELS
        assert not unknown, f"{selector.metric} has no label {unknown}: {query.expr}"
    assert reading.grouping_labels <= usable, f"{reading.grouping_labels - usable}: {query.expr}"


def test_promtool_parses_every_panel_and_variable_query(tmp_path: Path) -> None:
    # promtool has no "parse this expression" command; a rule file with one
    # recording rule per query makes `promtool check rules` parse them all.
    exprs = {q.name: substitute(q.expr, EXAMPLE_VALUES) for q in queries()}
    for v in variable_queries():
        exprs[f"{v.dashboard_uid}/${v.name}"] = substitute(v.selector, EXAMPLE_VALUES)
    names = list(exprs)
    rules = [{"record": f"ksmon:panel_query_{i}", "expr": exprs[n]} for i, n in enumerate(names)]
    path = tmp_path / "panels.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))

    result = run_tool("promtool", "check", "rules", str(path))

    # promtool names a failing rule by its index; map it back to the panel.
    failing = [
        names[int(i)] for i in re.findall(r"ksmon:panel_query_(\d+)", result.stdout + result.stderr)
    ]
    assert result.returncode == 0, f"{failing}\n{result.stdout}{result.stderr}"
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout
