"""The committed dashboards type-check (``tsc --noEmit``) against Grafana's published schema
types, @grafana/schema (dashboards/typecheck/), and the check is able to fail: a copy with a
misspelled field, a value of the wrong type or an unknown panel type is rejected at its line."""

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.errors import SetupError
from tests.support.environment import unavailable
from tests.support.grafana import DASHBOARD_DIR, dashboards
from tests.support.grafana_schema import SchemaError, toolchain, type_check

Dashboard = dict[str, Any]


@pytest.fixture(scope="module")
def installed() -> Path:
    """The pinned packages, installed into ksmon's cache (once per lock file)."""
    try:
        return toolchain()
    except SetupError as e:
        unavailable("@grafana/schema and typescript (npm ci from the npm registry)", e)


@pytest.mark.usefixtures("installed")
def test_every_committed_dashboard_has_grafanas_published_types(tmp_path: Path) -> None:
    documents = {path.name: path.read_text() for path in sorted(DASHBOARD_DIR.glob("*.json"))}
    assert len(documents) == len(dashboards()) > 0
    errors = type_check(documents, tmp_path)
    assert not errors, "\n".join(map(str, errors))


def test_the_dashboards_use_the_json_model_the_published_dashboard_type_describes() -> None:
    # @grafana/schema's `Dashboard` is the classic model (schemaVersion, panels with
    # gridPos); the v2 resources (elements + layout) would need the v2 types instead.
    for uid, dashboard in dashboards().items():
        assert isinstance(dashboard["schemaVersion"], int), uid
        assert "elements" not in dashboard, uid
        assert "layout" not in dashboard, uid
        assert all("gridPos" in panel for panel in dashboard["panels"]), uid


@dataclass(frozen=True)
class Mutation:
    """A change to one dashboard that the check must reject at the line holding ``marker``."""

    name: str
    uid: str
    change: Callable[[Dashboard], None]
    marker: str
    code: str
    says: str


def _first_panel(dashboard: Dashboard, kind: str) -> Dashboard:
    panel: Dashboard = next(p for p in dashboard["panels"] if p["type"] == kind)
    return panel


def _variable(dashboard: Dashboard, name: str) -> Dashboard:
    variable: Dashboard = next(v for v in dashboard["templating"]["list"] if v["name"] == name)
    return variable


def _collapsed_first_row(dashboard: Dashboard) -> list[Dashboard]:
    """Collapse the first row as Grafana saves it (its panels move inside it); its panels."""
    panels = dashboard["panels"]
    start, end = [i for i, p in enumerate(panels) if p["type"] == "row"][:2]
    inside: list[Dashboard] = panels[start + 1 : end]
    panels[start].update(collapsed=True, panels=inside)
    del panels[start + 1 : end]
    return inside


MUTATIONS = [
    Mutation(
        "misspelled dashboard field",
        "ksmon-fleet",
        lambda d: d.update(timezon="browser"),
        '"timezon": "browser"',
        "TS2353",
        "'\"timezon\"' does not exist",
    ),
    Mutation(
        "misspelled panel field",
        "ksmon-fleet",
        lambda d: _first_panel(d, "stat").update(descripton="typo"),
        '"descripton": "typo"',
        "TS2353",
        "'\"descripton\"' does not exist",
    ),
    Mutation(
        "misspelled field config default",
        "ksmon-application",
        lambda d: _first_panel(d, "timeseries")["fieldConfig"]["defaults"].update(unitz="s"),
        '"unitz": "s"',
        "TS2353",
        "'\"unitz\"' does not exist",
    ),
    Mutation(
        "misspelled panel plugin option",
        "ksmon-application",
        lambda d: _first_panel(d, "timeseries")["options"]["legend"].update(showLegnd=True),
        '"showLegnd": true',
        "TS2353",
        "'\"showLegnd\"' does not exist",
    ),
    Mutation(
        "misspelled custom field config of the plugin",
        "ksmon-health",
        lambda d: _first_panel(d, "timeseries")["fieldConfig"]["defaults"]["custom"].update(
            lineWidht=1
        ),
        '"lineWidht": 1',
        "TS2353",
        "'\"lineWidht\"' does not exist",
    ),
    Mutation(
        "misspelled plugin option of a panel in a collapsed row",
        "ksmon-fleet",
        lambda d: _collapsed_first_row(d)[0]["options"].update(colourMode="value"),
        '"colourMode": "value"',
        "TS2353",
        "'\"colourMode\"' does not exist",
    ),
    Mutation(
        "misspelled variable field",
        "ksmon-fleet",
        lambda d: _variable(d, "cluster").update(multy=True),
        '"multy": true',
        "TS2353",
        "'\"multy\"' does not exist",
    ),
    Mutation(
        "grid width as a string",
        "ksmon-health",
        lambda d: _first_panel(d, "stat")["gridPos"].update(w="12"),
        '"w": "12"',
        "TS2322",
        "not assignable to type 'number'",
    ),
    Mutation(
        "colour mode outside the schema's enum",
        "ksmon-fleet",
        lambda d: _first_panel(d, "stat")["fieldConfig"]["defaults"]["color"].update(
            mode="treshold"
        ),
        '"mode": "treshold"',
        "TS2820",
        "'\"treshold\"' is not assignable",
    ),
    Mutation(
        "query refId as a number",
        "ksmon-application",
        lambda d: _first_panel(d, "table")["targets"][0].update(refId=7),
        '"refId": 7',
        "TS2322",
        "not assignable to type 'string'",
    ),
    Mutation(
        "legend option of the wrong type",
        "ksmon-health",
        lambda d: _first_panel(d, "timeseries")["options"]["legend"].update(showLegend="yes"),
        '"showLegend": "yes"',
        "TS2322",
        "not assignable to type 'boolean'",
    ),
]


def _text(dashboard: Dashboard) -> str:
    return json.dumps(dashboard, indent=2, ensure_ascii=False) + "\n"


@pytest.fixture(scope="module")
def mutation_errors(
    installed: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[SchemaError]]:
    """File name -> its errors, for each mutated copy and the unchanged dashboards, in one
    compiler run."""
    loaded = dashboards()
    documents = {f"{uid}.json": _text(dashboard) for uid, dashboard in loaded.items()}
    for index, mutation in enumerate(MUTATIONS):
        mutated = copy.deepcopy(loaded[mutation.uid])
        mutation.change(mutated)
        documents[f"mutation-{index}.json"] = _text(mutated)
    errors = type_check(documents, tmp_path_factory.mktemp("grafana-schema"))
    outside = [str(e) for e in errors if e.source not in documents]
    assert not outside, f"errors in the type-check project itself: {outside}"
    return {name: [e for e in errors if e.source == name] for name in documents}


def test_the_unchanged_copies_pass_in_the_same_run(
    mutation_errors: dict[str, list[SchemaError]],
) -> None:
    for uid in dashboards():
        assert mutation_errors[f"{uid}.json"] == []


@pytest.mark.parametrize("index", range(len(MUTATIONS)), ids=[m.name for m in MUTATIONS])
def test_the_check_rejects_a_wrong_field_at_its_line(
    index: int, mutation_errors: dict[str, list[SchemaError]]
) -> None:
    mutation = MUTATIONS[index]
    errors = mutation_errors[f"mutation-{index}.json"]
    assert errors, f"tsc accepted a dashboard with a {mutation.name}"
    assert len(errors) == 1, "\n".join(map(str, errors))
    (error,) = errors
    assert error.text.rstrip(",") == mutation.marker, str(error)
    assert error.code == mutation.code, str(error)
    assert mutation.says in error.message, str(error)


@pytest.mark.usefixtures("installed")
def test_a_panel_type_the_check_has_no_plugin_types_for_is_rejected(tmp_path: Path) -> None:
    dashboard = dashboards()["ksmon-fleet"]
    _first_panel(dashboard, "table")["type"] = "tabel"
    errors = type_check({"unknown-panel-type.json": _text(dashboard)}, tmp_path)
    assert errors, "tsc accepted a panel of type 'tabel'"
    first = errors[0]
    assert first.text.rstrip(",") == '"type": "tabel"', "\n".join(map(str, errors))
    assert first.code == "TS2820", str(first)
    assert "Did you mean '\"table\"'?" in first.message, str(first)
