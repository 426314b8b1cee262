"""Generate ``deploy/monitoring/`` from ``dashboards/``: one PrometheusRule per alert rule
file and one ConfigMap per Grafana dashboard.

The rule files (``dashboards/alerts/*.yml`` and ``*.yaml``, plain Prometheus rule files)
and the dashboards (``dashboards/grafana/*.json``) are the only source; the manifests
written here are their Kubernetes packaging and are never edited by hand. Kustomize
cannot derive them itself: a PrometheusRule is not a ConfigMap, and kustomize's default
load restrictor refuses files outside the kustomization's own directory. So they are
generated into ``deploy/monitoring/``, committed, and a test regenerates them and
compares byte for byte.

    python -m deploy.generate          # rewrite the two generated files in deploy/monitoring/
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

REPO = Path(__file__).resolve().parents[1]
ALERTS_DIR = "dashboards/alerts"
DASHBOARDS_DIR = "dashboards/grafana"
RULES_OUTPUT = "deploy/monitoring/prometheusrules.yaml"
DASHBOARDS_OUTPUT = "deploy/monitoring/dashboards.yaml"

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


def stale_files(repo: Path) -> list[str]:
    """The generated files whose committed text differs from what ``generate`` gives."""
    stale = []
    for path, text in generate(repo).items():
        target = repo / path
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            stale.append(path)
    return stale


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
        for path, text in generate(args.repo).items():
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
