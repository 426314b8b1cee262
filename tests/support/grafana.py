"""Read the committed Grafana dashboards the way Grafana would: panels, queries, variables.

Tests read the JSON files (the artifact users import), never the Python that
generates them.
"""

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD_DIR = ROOT / "dashboards" / "grafana"

_VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)(?::\w+)?\}")
_LABEL_VALUES = re.compile(r"^label_values\((.*),\s*(\w+)\)$")


def dashboards() -> dict[str, dict[str, Any]]:
    """uid -> dashboard JSON, for every file in dashboards/grafana/."""
    loaded = {}
    for path in sorted(DASHBOARD_DIR.glob("*.json")):
        dashboard = json.loads(path.read_text())
        loaded[dashboard["uid"]] = dashboard
    return loaded


def panels(dashboard: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel that shows data (rows, and panels nested in collapsed rows, included)."""
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            yield from panel.get("panels", [])
        else:
            yield panel


def rows(dashboard: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [p for p in dashboard["panels"] if p["type"] == "row"]


@dataclass(frozen=True)
class PanelQuery:
    dashboard_uid: str
    panel_title: str
    ref_id: str
    expr: str
    instant: bool

    @property
    def name(self) -> str:
        return f"{self.dashboard_uid}/{self.panel_title}/{self.ref_id}"


def queries() -> list[PanelQuery]:
    """Every query of every panel of every committed dashboard."""
    found = []
    for uid, dashboard in dashboards().items():
        for panel in panels(dashboard):
            for target in panel.get("targets", []):
                found.append(
                    PanelQuery(
                        uid,
                        panel["title"],
                        target["refId"],
                        target["expr"],
                        bool(target.get("instant")),
                    )
                )
    return found


@dataclass(frozen=True)
class VariableQuery:
    dashboard_uid: str
    name: str
    selector: str
    label: str


def variable_queries() -> list[VariableQuery]:
    """Every ``label_values(selector, label)`` query variable of every dashboard."""
    found = []
    for uid, dashboard in dashboards().items():
        for variable in dashboard["templating"]["list"]:
            if variable["type"] != "query":
                continue
            match = _LABEL_VALUES.match(variable["query"]["query"])
            if match is None:
                raise AssertionError(f"{uid}: variable {variable['name']} is not label_values()")
            found.append(VariableQuery(uid, variable["name"], match[1], match[2]))
    return found


def variables_used(expr: str) -> set[str]:
    return {a or b for a, b in _VARIABLE.findall(expr)}


def substitute(expr: str, values: Mapping[str, str]) -> str:
    """Replace ``$name`` and ``${name}`` as Grafana does; fail on a variable not given."""

    def value(match: re.Match[str]) -> str:
        name = match[1] or match[2]
        if name not in values:
            raise KeyError(f"no value for variable ${name} in {expr!r}")
        return values[name]

    return _VARIABLE.sub(value, expr)
