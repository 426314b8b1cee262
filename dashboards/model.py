"""Grafana dashboard JSON from small typed pieces.

Every panel gets the ``datasource`` variable, a unit and a description by
construction, and rows are laid out on Grafana's 24-column grid here, so the
dashboard modules only say what to show. The JSON targets Grafana 10 and
later (schema version 39) and has the types Grafana publishes for it
(``@grafana/schema``, checked by a test with dashboards/typecheck/): no field
those types lack, and every option a panel plugin's schema requires.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

JsonObject = dict[str, Any]

SCHEMA_VERSION = 39
GRID_COLUMNS = 24
DATASOURCE: JsonObject = {"type": "prometheus", "uid": "${datasource}"}

PanelKind = Literal["timeseries", "stat", "table", "state-timeline"]


def selector(metric: str, *matchers: str) -> str:
    """``metric{m1, m2}``: one place that writes label matchers, so queries read as prose."""
    inner = ", ".join(m for m in matchers if m)
    return f"{metric}{{{inner}}}" if inner else metric


@dataclass(frozen=True)
class Query:
    """One Prometheus query of a panel. ``instant`` for tables and stats of the current state."""

    expr: str
    legend: str = "__auto"
    instant: bool = False


@dataclass(frozen=True)
class ValueText:
    """Show ``text`` (in ``color``) instead of the number ``value``."""

    value: int
    text: str
    color: str


@dataclass(frozen=True)
class Panel:
    kind: PanelKind
    title: str
    description: str
    queries: Sequence[Query]
    unit: str
    width: int = 12
    height: int = 8
    # A stat with no series shows this instead of "No data" (e.g. 0 open findings).
    no_value: str | None = None
    value_texts: Sequence[ValueText] = ()
    # Column -> link URL (tables): drill down from a row to another dashboard.
    links: Mapping[str, str] = field(default_factory=dict)
    # Column -> unit (tables whose columns differ in unit).
    column_units: Mapping[str, str] = field(default_factory=dict)
    minimum: float | None = None
    maximum: float | None = None

    def __post_init__(self) -> None:
        if not self.description.strip():
            raise ValueError(f"panel {self.title!r} needs a description")
        if not self.queries:
            raise ValueError(f"panel {self.title!r} needs at least one query")
        if not 0 < self.width <= GRID_COLUMNS:
            raise ValueError(f"panel {self.title!r}: width {self.width} is not in 1..24")


@dataclass(frozen=True)
class Row:
    title: str
    panels: Sequence[Panel]


@dataclass(frozen=True)
class Variable:
    """A query variable filled from ``label_values(...)``.

    ``multi`` variables are used with ``=~`` (their "All" is ``.*``); single
    ones with ``=``.
    """

    name: str
    label: str
    query: str
    multi: bool = False
    description: str = ""


@dataclass(frozen=True)
class DashboardLink:
    title: str
    uid: str


@dataclass(frozen=True)
class Dashboard:
    uid: str
    title: str
    description: str
    variables: Sequence[Variable]
    rows: Sequence[Row]
    links: Sequence[DashboardLink] = ()
    tags: Sequence[str] = ("ksmon", "kafka", "kafka-streams")
    time_from: str = "now-6h"
    refresh: str = "30s"

    def to_json(self) -> JsonObject:
        return {
            "uid": self.uid,
            "title": self.title,
            "description": self.description,
            "tags": list(self.tags),
            "editable": True,
            "graphTooltip": 1,
            "schemaVersion": SCHEMA_VERSION,
            "version": 1,
            "refresh": self.refresh,
            "time": {"from": self.time_from, "to": "now"},
            "timezone": "browser",
            "annotations": {"list": [_BUILTIN_ANNOTATIONS]},
            "links": [_link_json(link) for link in self.links],
            "templating": {"list": [_DATASOURCE_VARIABLE, *map(_variable_json, self.variables)]},
            "panels": _layout(self.rows),
        }


_BUILTIN_ANNOTATIONS: JsonObject = {
    "builtIn": 1,
    "datasource": {"type": "grafana", "uid": "-- Grafana --"},
    "enable": True,
    "hide": True,
    "iconColor": "rgba(0, 211, 255, 1)",
    "name": "Annotations & Alerts",
    "type": "dashboard",
}

_DATASOURCE_VARIABLE: JsonObject = {
    "name": "datasource",
    "label": "Data source",
    "description": "The Prometheus that scrapes ksmon's agent, sidecars and aggregation job.",
    "type": "datasource",
    "query": "prometheus",
    "hide": 0,
    "includeAll": False,
    "multi": False,
    "options": [],
    "refresh": 1,
    "regex": "",
}


def _link_json(link: DashboardLink) -> JsonObject:
    return {
        "title": link.title,
        "type": "link",
        "url": f"/d/{link.uid}",
        "icon": "dashboard",
        "includeVars": True,
        "keepTime": True,
        "asDropdown": False,
        "targetBlank": False,
        "tags": [],
        "tooltip": "",
    }


def _variable_json(v: Variable) -> JsonObject:
    variable: JsonObject = {
        "name": v.name,
        "label": v.label,
        "description": v.description,
        "type": "query",
        "datasource": DATASOURCE,
        "query": {"query": v.query, "refId": "StandardVariableQuery"},
        "hide": 0,
        "multi": v.multi,
        "includeAll": v.multi,
        "options": [],
        "refresh": 2,  # on time range change: new groups and instances show up
        "regex": "",
        "sort": 1,
    }
    if v.multi:  # the schema types allValue as a string: absent, not null, when unused
        variable["allValue"] = ".*"
    return variable


def _layout(rows: Sequence[Row]) -> list[JsonObject]:
    """Rows top to bottom; in a row, panels left to right, wrapping at 24 columns."""
    panels: list[JsonObject] = []
    y = 0
    next_id = 1
    for row in rows:
        panels.append(
            {
                "id": next_id,
                "type": "row",
                "title": row.title,
                "collapsed": False,
                "gridPos": {"h": 1, "w": GRID_COLUMNS, "x": 0, "y": y},
                "panels": [],
            }
        )
        next_id += 1
        y += 1
        x = 0
        line_height = 0
        for panel in row.panels:
            if x + panel.width > GRID_COLUMNS:
                y += line_height
                x, line_height = 0, 0
            position = {"h": panel.height, "w": panel.width, "x": x, "y": y}
            panels.append(_panel_json(panel, next_id, position))
            next_id += 1
            x += panel.width
            line_height = max(line_height, panel.height)
        y += line_height
    return panels


def _panel_json(panel: Panel, panel_id: int, position: Mapping[str, int]) -> JsonObject:
    defaults: JsonObject = {"unit": panel.unit, "color": {"mode": "palette-classic"}}
    if panel.no_value is not None:
        defaults["noValue"] = panel.no_value
    if panel.minimum is not None:
        defaults["min"] = panel.minimum
    if panel.maximum is not None:
        defaults["max"] = panel.maximum
    if panel.value_texts:
        defaults["mappings"] = [_value_mapping(panel.value_texts)]
    if panel.kind == "stat":
        defaults["color"] = {"mode": "thresholds"}
        defaults["thresholds"] = {"mode": "absolute", "steps": [{"color": "green", "value": None}]}
    if panel.kind == "timeseries":
        defaults["custom"] = {
            "drawStyle": "line",
            "lineWidth": 1,
            "fillOpacity": 10,
            "showPoints": "never",
            "spanNulls": False,
        }
    overrides = [
        {
            "matcher": {"id": "byName", "options": column},
            "properties": [{"id": "links", "value": [{"title": "Open", "url": url}]}],
        }
        for column, url in panel.links.items()
    ] + [
        {
            "matcher": {"id": "byName", "options": column},
            "properties": [{"id": "unit", "value": unit}],
        }
        for column, unit in panel.column_units.items()
    ]
    result: JsonObject = {
        "id": panel_id,
        "type": panel.kind,
        "title": panel.title,
        "description": panel.description,
        "datasource": DATASOURCE,
        "gridPos": dict(position),
        "fieldConfig": {"defaults": defaults, "overrides": overrides},
        "options": _options(panel),
        "targets": [_target_json(q, chr(ord("A") + i), panel) for i, q in enumerate(panel.queries)],
    }
    if panel.kind == "table":
        result["transformations"] = _table_transformations(panel)
    return result


def _target_json(query: Query, ref_id: str, panel: Panel) -> JsonObject:
    instant = query.instant or panel.kind == "table"
    return {
        "refId": ref_id,
        "datasource": DATASOURCE,
        "expr": query.expr,
        "legendFormat": query.legend,
        "instant": instant,
        "range": not instant,
        "format": "table" if panel.kind == "table" else "time_series",
        "editorMode": "code",
    }


def _value_mapping(texts: Sequence[ValueText]) -> JsonObject:
    return {
        "type": "value",
        "options": {
            str(t.value): {"text": t.text, "color": t.color, "index": i}
            for i, t in enumerate(texts)
        },
    }


def _table_transformations(panel: Panel) -> list[JsonObject]:
    # Several instant queries become one row per label set; Time is noise there.
    steps: list[JsonObject] = []
    if len(panel.queries) > 1:
        steps.append({"id": "merge", "options": {}})
    steps.append(
        {
            "id": "organize",
            "options": {
                "excludeByName": {"Time": True},
                "renameByName": {
                    _value_column(i, len(panel.queries)): q.legend
                    for i, q in enumerate(panel.queries)
                    if q.legend != "__auto"
                },
            },
        }
    )
    return steps


def _value_column(index: int, queries: int) -> str:
    # Grafana names a lone table query's value column "Value", else "Value #<refId>".
    return "Value" if queries == 1 else f"Value #{chr(ord('A') + index)}"


def _options(panel: Panel) -> JsonObject:
    if panel.kind == "timeseries":
        return {
            "legend": {
                "displayMode": "table",
                "placement": "bottom",
                "showLegend": True,
                "calcs": ["lastNotNull", "max"],
            },
            "tooltip": {"mode": "multi", "sort": "desc"},
        }
    if panel.kind == "stat":
        return {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "value",
            "graphMode": "none",
            "justifyMode": "auto",
            "orientation": "auto",
            "textMode": "auto",
            "wideLayout": True,
            "showPercentChange": False,
            "percentChangeColorMode": "standard",
        }
    if panel.kind == "table":
        return {"showHeader": True, "cellHeight": "sm", "frameIndex": 0}
    return {
        "mergeValues": True,
        "showValue": "never",
        "alignValue": "left",
        "rowHeight": 0.9,
        "legend": {
            "displayMode": "list",
            "placement": "bottom",
            "showLegend": True,
            "calcs": [],
        },
        "tooltip": {"mode": "single", "sort": "none"},
    }
