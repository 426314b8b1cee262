"""Generate ``deploy/monitoring/`` from ``dashboards/``: one PrometheusRule per alert rule
file and one ConfigMap per Grafana dashboard; and the same objects as the Helm chart's
templates (``deploy/helm/ksmon``), so that Kustomize and Helm ship the same rules and
dashboards.

The rule files (``dashboards/alerts/*.yml`` and ``*.yaml``, plain Prometheus rule files)
and the dashboards (``dashboards/grafana/*.json``) are the only source; the manifests
written here are their Kubernetes packaging and are never edited by hand. Kustomize
cannot derive them itself: a PrometheusRule is not a ConfigMap, and kustomize's default
load restrictor refuses files outside the kustomization's own directory. So they are
generated into ``deploy/monitoring/``, committed, and a test regenerates them and
compares byte for byte.

The chart gets its PrometheusRule template with a Helm expression
(``{{ .Values.alerting.<setting> }}``) wherever an alert setting goes, the settings'
defaults as the ``alerting:`` block of its ``values.yaml``, copies of the dashboards
(a chart reads only its own files) and the ConfigMap template that packages them.
Prometheus' own ``{{ ... }}`` templates in the rules are escaped for Helm.

    python -m deploy.generate          # rewrite the generated files
    python -m deploy.generate --check  # exit 1 and name the stale files instead

A file in ``dashboards/alerts/`` with ``tests:`` and no ``groups:`` is a
``promtool test rules`` file, not a rule file, and is left out.
"""

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from agent.errors import ConfigError
from dashboards import alert_rules

REPO = Path(__file__).resolve().parents[1]
ALERTS_DIR = "dashboards/alerts"
DASHBOARDS_DIR = "dashboards/grafana"
RULES_OUTPUT = "deploy/monitoring/prometheusrules.yaml"
DASHBOARDS_OUTPUT = "deploy/monitoring/dashboards.yaml"
CHART_DIR = "deploy/helm/ksmon"
CHART_VALUES = f"{CHART_DIR}/values.yaml"
CHART_VALUES_SCHEMA = f"{CHART_DIR}/values.schema.json"
CHART_RULES = f"{CHART_DIR}/templates/prometheusrules.yaml"
CHART_DASHBOARDS = f"{CHART_DIR}/templates/dashboards.yaml"
# The chart's copies of the dashboards (generated: the directory holds nothing else).
CHART_DASHBOARD_FILES = f"{CHART_DIR}/dashboards"
ALERTING_BEGIN = "# BEGIN generated alerting\n"
ALERTING_END = "# END generated alerting\n"

# Which source file a generated object came from; the tests map objects back with it.
SOURCE_ANNOTATION = "ksmon/generated-from"
# The label kube-prometheus-stack's Grafana dashboard sidecar looks for (its default),
# and the annotation that files them in a "ksmon" folder where the chart sets
# grafana.sidecar.dashboards.folderAnnotation: grafana_folder.
GRAFANA_DASHBOARD_LABEL = "grafana_dashboard"
GRAFANA_FOLDER_ANNOTATION = "grafana_folder"
# A ConfigMap holds at most 1 MiB; a dashboard beyond that cannot be shipped this way.
CONFIG_MAP_MAX_BYTES = 1024 * 1024
_CONFIG_MAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_NOT_NAME = re.compile(r"[^a-z0-9]+")
# A Prometheus template action (or a lone brace pair), and one brace pair.
_PROMETHEUS_TEMPLATE = re.compile(r"(?P<action>\{\{.*?\}\})|\{\{|\}\}", re.DOTALL)
_BRACES = re.compile(r"\{\{|\}\}")


@dataclass(frozen=True)
class SourceFile:
    """A source file's path relative to the repository, and its text."""

    path: str
    text: str

    @property
    def stem(self) -> str:
        return Path(self.path).stem


def prometheus_rules(rule_files: Sequence[SourceFile]) -> list[dict[str, Any]]:
    """A PrometheusRule per rule file, its ``spec`` exactly the file's content (``groups``).

    >>> [r["metadata"]["name"] for r in prometheus_rules(
    ...     [SourceFile("dashboards/alerts/lag.yml", "groups: [{name: lag, rules: []}]")])]
    ['ksmon-alerts-lag']
    """
    rules = []
    for source in rule_files:
        content = _yaml_mapping(source)
        if "groups" not in content and "tests" in content:
            continue  # a promtool unit-test file
        groups = content.get("groups")
        if not isinstance(groups, list) or not groups:
            raise ConfigError(
                f"{source.path}: a Prometheus rule file needs a non-empty 'groups:' list "
                f"(found top-level keys: {', '.join(map(str, content)) or 'none'})"
            )
        unexpected = sorted(set(content) - {"groups"})
        if unexpected:
            raise ConfigError(
                f"{source.path}: a Prometheus rule file has only 'groups:' at the top level; "
                f"unexpected: {', '.join(map(str, unexpected))}"
            )
        rules.append(
            {
                "apiVersion": "monitoring.coreos.com/v1",
                "kind": "PrometheusRule",
                "metadata": {
                    "name": f"ksmon-alerts-{_name_part(source)}",
                    "labels": _labels("alerts"),
                    "annotations": {SOURCE_ANNOTATION: source.path},
                },
                "spec": {"groups": groups},
            }
        )
    _refuse_duplicate_names(rules)
    return rules


def dashboard_config_maps(dashboards: Sequence[SourceFile]) -> list[dict[str, Any]]:
    """A ConfigMap per dashboard, holding the JSON text unchanged under the file's name,
    labelled for kube-prometheus-stack's Grafana sidecar."""
    config_maps = []
    for source in dashboards:
        key = Path(source.path).name
        if not _CONFIG_MAP_KEY.fullmatch(key):
            raise ConfigError(
                f"{source.path}: a ConfigMap key may hold only letters, digits, '-', '_' "
                f"and '.'; rename the file"
            )
        try:
            json.loads(source.text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{source.path}: not valid JSON: {e}") from None
        size = len(source.text.encode())
        if size > CONFIG_MAP_MAX_BYTES:
            raise ConfigError(
                f"{source.path}: {size} bytes; a ConfigMap holds at most {CONFIG_MAP_MAX_BYTES}"
            )
        config_maps.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": f"ksmon-dashboard-{_name_part(source)}",
                    "labels": {**_labels("dashboards"), GRAFANA_DASHBOARD_LABEL: "1"},
                    "annotations": {
                        SOURCE_ANNOTATION: source.path,
                        GRAFANA_FOLDER_ANNOTATION: "ksmon",
                    },
                },
                "data": {key: source.text},
            }
        )
    _refuse_duplicate_names(config_maps)
    return config_maps


def render(documents: Sequence[dict[str, Any]], header: str) -> str:
    """YAML documents after a comment header; an empty list is just the header, which
    kustomize reads as no resources."""
    body = "".join(
        "---\n" + yaml.dump(d, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
        for d in documents
    )
    return header + body


def generate(repo: Path) -> dict[str, str]:
    """The generated files' text by their path relative to ``repo``."""
    rule_files = _read_sources(repo, ALERTS_DIR, ("*.yml", "*.yaml"))
    dashboards = _read_sources(repo, DASHBOARDS_DIR, ("*.json",))
    return {
        RULES_OUTPUT: render(prometheus_rules(rule_files), _header(ALERTS_DIR, len(rule_files))),
        DASHBOARDS_OUTPUT: render(
            dashboard_config_maps(dashboards), _header(DASHBOARDS_DIR, len(dashboards))
        ),
    }


@dataclass(frozen=True)
class AlertSettings:
    """The rule files rendered with a marker in place of each alert setting, which marker
    stands for which setting (its dotted name), and the settings' defaults."""

    rule_files: list[SourceFile]
    markers: dict[str, str]
    defaults: dict[str, object]


def alert_settings() -> AlertSettings:
    """The alert rules as ``dashboards.alert_rules`` renders them, a marker in each
    setting's place (the renderer writes values as text, unchecked)."""
    markers = setting_markers(alert_rules.PLACEHOLDERS)
    rendered = alert_rules.render_rule_files({s: m for m, s in markers.items()})
    return AlertSettings(
        [SourceFile(f"{ALERTS_DIR}/{name}", text) for name, text in sorted(rendered.items())],
        markers,
        alert_rules.load_values(),
    )


def setting_markers(settings: Sequence[str]) -> dict[str, str]:
    """A marker for each setting, marker -> setting: words no rule holds otherwise.

    >>> setting_markers(["runbookBaseUrl", "rules.KsmonJobStale.for"])
    {'ksmonsetting0x': 'runbookBaseUrl', 'ksmonsetting1x': 'rules.KsmonJobStale.for'}
    """
    return {f"ksmonsetting{index}x": setting for index, setting in enumerate(settings)}


def chart_files(repo: Path, settings: AlertSettings) -> dict[str, str]:
    """The chart's generated files by their path relative to ``repo``: the PrometheusRule
    and dashboard templates, the dashboards' copies, and ``values.yaml`` with its
    ``alerting:`` block rewritten."""
    dashboards = _read_sources(repo, DASHBOARDS_DIR, ("*.json",))
    files = {
        CHART_RULES: helm_rules_template(settings),
        CHART_DASHBOARDS: helm_dashboards_template(dashboards),
        CHART_VALUES: with_alerting_block(
            (repo / CHART_VALUES).read_text(encoding="utf-8"), settings.defaults
        ),
    }
    schema_path = repo / CHART_VALUES_SCHEMA
    if schema_path.is_file():
        files[CHART_VALUES_SCHEMA] = with_alerting_schema(
            schema_path.read_text(encoding="utf-8"), settings.defaults
        )
    for source in dashboards:
        files[f"{CHART_DASHBOARD_FILES}/{Path(source.path).name}"] = source.text
    return files


def helm_rules_template(settings: AlertSettings) -> str:
    """The PrometheusRules as one Helm template, behind ``prometheusRule.enabled``: each
    rule file's text under ``spec:``, each setting's marker as
    ``{{ .Values.alerting.<setting> }}``, and Prometheus' own templates escaped so that
    Helm prints them unchanged. The text itself, not a YAML re-rendering: a value lands
    exactly where the rule templates put it."""
    documents = []
    used = set()
    for source in settings.rule_files:
        for rule in prometheus_rules([source]):
            spec = "".join(f"  {line}" if line.strip() else line for line in _rules_body(source))
            used |= {setting for marker, setting in settings.markers.items() if marker in spec}
            documents.append(
                _chart_object_header(rule, "alerts", "prometheusRule.labels", ".Release.Namespace")
                + "spec:\n"
                + _switchable_alerts(
                    _escape_for_helm(spec, settings.markers, _numeric_settings(settings))
                )
            )
    unused = sorted(set(settings.markers.values()) - used)
    if unused:
        raise ConfigError(
            f"alert settings {', '.join(unused)} appear in no rule file; the chart could "
            f"not set them"
        )
    return _chart_template(
        "prometheusRule.enabled", "the alert rule templates (dashboards.alert_rules)", documents
    )


def _rules_body(source: SourceFile) -> list[str]:
    """The rule file's lines from ``groups:`` on (its header comment says how the file
    was made, which is not how the chart's copy was)."""
    lines = source.text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.startswith("groups:"):
            return lines[index:]
    raise ConfigError(f"{source.path}: no top-level 'groups:' line")


def helm_dashboards_template(dashboards: Sequence[SourceFile]) -> str:
    """The dashboard ConfigMaps as one Helm template, behind ``dashboards.enabled``, each
    reading its JSON from the chart's copy of the file."""
    documents = []
    for config_map in dashboard_config_maps(dashboards):
        (key,) = config_map["data"]
        documents.append(
            _chart_object_header(
                config_map,
                "dashboards",
                "dashboards.labels",
                ".Values.dashboards.namespace | default .Release.Namespace",
                annotations="dashboards.annotations",
            )
            + "data:\n"
            + f'  {key}: {{{{ .Files.Get "dashboards/{key}" | toJson }}}}\n'
        )
    return _chart_template("dashboards.enabled", f"{DASHBOARDS_DIR}/", documents)


def with_alerting_block(values: str, defaults: dict[str, Any]) -> str:
    """The chart's ``values.yaml`` text with the ``alerting:`` block between its markers
    replaced by ``defaults``."""
    begin, end = values.find(ALERTING_BEGIN), values.find(ALERTING_END)
    if begin < 0 or end < begin:
        raise ConfigError(
            f"{CHART_VALUES}: needs the lines {ALERTING_BEGIN.strip()!r} and "
            f"{ALERTING_END.strip()!r} around the alerting: block"
        )
    block = yaml.dump(
        {"alerting": defaults}, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100
    )
    return values[: begin + len(ALERTING_BEGIN)] + block + values[end:]


def with_alerting_schema(schema: str, defaults: dict[str, object]) -> str:
    """The chart's ``values.schema.json`` text with ``properties.alerting`` describing the
    alert settings: the defaults' keys and nesting, and each setting's type, so that a
    misspelt or misplaced setting fails ``helm install`` instead of being ignored."""
    try:
        content = json.loads(schema)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{CHART_VALUES_SCHEMA}: not valid JSON: {e}") from None
    properties = content.get("properties") if isinstance(content, dict) else None
    if not isinstance(properties, dict):
        raise ConfigError(f"{CHART_VALUES_SCHEMA}: needs a top-level 'properties' object")
    properties["alerting"] = _settings_schema(defaults) | {
        "description": "The alert rules' settings (defaults: dashboards/alerts/config/values.yaml)."
    }
    return json.dumps(content, indent=2, ensure_ascii=False) + "\n"


def _settings_schema(value: object) -> dict[str, Any]:
    if isinstance(value, dict):
        return {
            "type": "object",
            "properties": {key: _settings_schema(item) for key, item in value.items()},
            "additionalProperties": False,
        }
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {"type": "number", "minimum": 0}
    if isinstance(value, list):  # disabledAlerts: alert names
        return {"type": "array", "uniqueItems": True, "items": {"enum": alert_rules.alert_names()}}
    return {"type": "string", "minLength": 1}


def _chart_object_header(
    obj: dict[str, Any],
    component: str,
    labels: str,
    namespace: str,
    annotations: str | None = None,
) -> str:
    """apiVersion, kind and metadata of a generated object as chart template text: named
    <fullname>-<name without ksmon->, in the chart's labels plus the values' ``labels``."""
    metadata = obj["metadata"]
    lines = [
        f"apiVersion: {obj['apiVersion']}",
        f"kind: {obj['kind']}",
        "metadata:",
        f'  name: {{{{ include "ksmon.fullname" . }}}}-{metadata["name"].removeprefix("ksmon-")}',
        f"  namespace: {{{{ {namespace} }}}}",
        "  labels:",
        f'    {{{{- include "ksmon.labels" (dict "root" . "component" "{component}")'
        " | nindent 4 }}",
        f"    {{{{- with .Values.{labels} }}}}",
        "    {{- toYaml . | nindent 4 }}",
        "    {{- end }}",
        "  annotations:",
        f"    {SOURCE_ANNOTATION}: {metadata['annotations'][SOURCE_ANNOTATION]}",
    ]
    if annotations:
        lines += [
            f"    {{{{- with .Values.{annotations} }}}}",
            "    {{- toYaml . | nindent 4 }}",
            "    {{- end }}",
        ]
    return "\n".join(lines) + "\n"


def _chart_template(switch: str, source: str, documents: Sequence[str]) -> str:
    header = (
        f"{{{{- /* Generated from {source} by `make deploy-generate` (python -m\n"
        "deploy.generate). Do not edit: change the source files and regenerate; a test\n"
        "fails when this file is stale. */}}\n"
    )
    body = "".join("---\n" + document for document in documents)
    return f"{header}{{{{- if .Values.{switch} }}}}\n{body}{{{{- end }}}}\n"


def _escape_for_helm(text: str, markers: dict[str, str], numbers: set[str]) -> str:
    """Prometheus' ``{{ ... }}`` as Helm raw strings (or brace by brace where a setting's
    marker sits inside one), then each marker as its Helm value; the ``numbers`` among
    the settings through ``ksmon.number``, which writes 1000000 and not Go's 1e+06."""

    def escape(match: re.Match[str]) -> str:
        action = match.group()
        whole = match.group("action") is not None
        if whole and "`" not in action and not any(m in action for m in markers):
            return "{{`" + action + "`}}"
        return _BRACES.sub(lambda brace: '{{"' + brace.group() + '"}}', action)

    escaped = _PROMETHEUS_TEMPLATE.sub(escape, text)
    if not markers:
        return escaped
    alternatives = "|".join(re.escape(m) for m in sorted(markers, key=len, reverse=True))

    def expression(match: re.Match[str]) -> str:
        setting = markers[match.group("marker")]
        value = f".Values.alerting.{setting}"
        if setting in numbers:
            value = f'include "ksmon.number" {value}'
        if not match.group("brace"):
            return f"{{{{ {value} }}}}"
        # "{{{" would not parse: a PromQL selector's own brace goes into the action.
        argument = f"({value})" if setting in numbers else value
        return f'{{{{ print "{{" {argument} }}}}'

    return re.sub(f"(?P<brace>{{?)(?P<marker>{alternatives})", expression, escaped)


def _switchable_alerts(spec: str) -> str:
    """Each alerting rule behind ``alerting.disabledAlerts``, as the renderer leaves the
    disabled ones out; a group whose every alert is disabled gets ``rules: []``."""
    disabled = f"$.Values.alerting.{alert_rules.DISABLED}"
    lines = spec.splitlines(keepends=True)
    groups = [index for index, line in enumerate(lines) if line.strip() == "rules:"]
    opening: dict[int, str] = {}
    closing: dict[int, int] = {}
    alerts_of: dict[int, list[str]] = {index: [] for index in groups}
    for name, start, end in alert_rules.alert_spans(spec):
        opening[start] = f'{{{{- if not (has "{name}" {disabled}) }}}}\n'
        closing[end] = closing.get(end, 0) + 1
        group = max(index for index in groups if index < start)
        if name not in alerts_of[group]:
            alerts_of[group].append(name)
    out = []
    for index, line in enumerate(lines):
        out.extend(["{{- end }}\n"] * closing.get(index, 0))
        out.append(opening.get(index, ""))
        if alerts_of.get(index):
            # "rules: []" when every alert of the group is disabled: null is no list.
            listed = " ".join(f'"{name}"' for name in alerts_of[index])
            out.append(
                line.rstrip("\n")
                + f"{{{{- $on := false }}}}{{{{- range list {listed} }}}}"
                + f"{{{{- if not (has . {disabled}) }}}}{{{{- $on = true }}}}{{{{- end }}}}"
                + "{{- end }}{{ if not $on }} []{{ end }}\n"
            )
            continue
        out.append(line)
    out.extend(["{{- end }}\n"] * closing.get(len(lines), 0))
    return "".join(out)


def _numeric_settings(settings: AlertSettings) -> set[str]:
    numbers = set()
    for setting in settings.markers.values():
        node: object = settings.defaults
        for part in setting.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, int | float) and not isinstance(node, bool):
            numbers.add(setting)
    return numbers


def generated_files(repo: Path) -> dict[str, str]:
    """Everything the generator writes: ``deploy/monitoring/``, and the chart's generated
    parts where the repository has the chart."""
    files = generate(repo)
    if (repo / CHART_VALUES).is_file():
        files |= chart_files(repo, alert_settings())
    return files


def stale_files(repo: Path) -> list[str]:
    """The generated files whose committed text differs from what the generator gives, and
    leftovers in the chart's dashboard directory that it no longer gives."""
    generated = generated_files(repo)
    stale = []
    for path, text in generated.items():
        target = repo / path
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            stale.append(path)
    return stale + [path for path in _chart_dashboard_copies(repo) if path not in generated]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.generate", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only report stale files")
    parser.add_argument("--repo", type=Path, default=REPO, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        if args.check:
            stale = stale_files(args.repo)
            for path in stale:
                print(f"{path} is stale: run python -m deploy.generate", file=sys.stderr)  # noqa: T201
            return 1 if stale else 0
        generated = generated_files(args.repo)
        for path in _chart_dashboard_copies(args.repo):
            if path not in generated:
                (args.repo / path).unlink()
        for path, text in generated.items():
            (args.repo / path).parent.mkdir(parents=True, exist_ok=True)
            (args.repo / path).write_text(text, encoding="utf-8")
    except ConfigError as e:
        print(f"deploy.generate: error: {e}", file=sys.stderr)  # noqa: T201
        return 1
    return 0


def _read_sources(repo: Path, directory: str, patterns: Sequence[str]) -> list[SourceFile]:
    paths = sorted({p for pattern in patterns for p in (repo / directory).glob(pattern)})
    sources = []
    for path in paths:
        relative = path.relative_to(repo).as_posix()
        try:
            sources.append(SourceFile(relative, path.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            raise ConfigError(f"{relative}: not UTF-8 text") from None
    return sources


def _chart_dashboard_copies(repo: Path) -> list[str]:
    directory = repo / CHART_DASHBOARD_FILES
    return sorted(p.relative_to(repo).as_posix() for p in directory.glob("*") if p.is_file())


def _yaml_mapping(source: SourceFile) -> dict[str, Any]:
    try:
        content = yaml.safe_load(source.text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{source.path}: not valid YAML: {_one_line(e)}") from None
    if not isinstance(content, dict):
        raise ConfigError(f"{source.path}: a rule file is a YAML mapping with 'groups:'")
    return content


def _name_part(source: SourceFile) -> str:
    """The file's stem as a Kubernetes name fragment, without the ``.rules`` of
    ``*.rules.yml`` and without a ``ksmon-`` the object name already starts with:
    ``Streams_Lag.v2`` -> ``streams-lag-v2``, ``ksmon-lag.rules`` -> ``lag``."""
    stem = source.stem.lower().removesuffix(".rules")
    part = _NOT_NAME.sub("-", stem).strip("-").removeprefix("ksmon-")
    if not part:
        raise ConfigError(f"{source.path}: the file name gives no usable Kubernetes name")
    return part


def _refuse_duplicate_names(objects: list[dict[str, Any]]) -> None:
    seen: dict[str, str] = {}
    for obj in objects:
        name, path = obj["metadata"]["name"], obj["metadata"]["annotations"][SOURCE_ANNOTATION]
        if name in seen:
            raise ConfigError(
                f"{path} and {seen[name]} both become {obj['kind']} {name}; rename one"
            )
        seen[name] = path


def _labels(component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "ksmon", "app.kubernetes.io/component": component}


def _header(source_dir: str, count: int) -> str:
    return (
        f"# Generated from {source_dir}/ ({count} file{'s' if count != 1 else ''}) by\n"
        "# `make deploy-generate` (python -m deploy.generate). Do not edit: change the\n"
        "# source files and regenerate; a test fails when this file is stale.\n"
    )


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (dashboard JSON, long PromQL) as literal blocks, so the
    generated files read like their sources and diff line by line."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


if __name__ == "__main__":
    sys.exit(main())
