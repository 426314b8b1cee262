"""The rendered PrometheusRules are the rule files of dashboards/alerts/, group for
group, and pass `promtool check rules`; the rendered dashboard ConfigMaps hold exactly
the JSON files of dashboards/grafana/. Checked on the repository's own files (however
many there are) and end to end on temporary sources: generate, render with
kustomize, validate against the CRD, check with promtool."""

import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from deploy.generate import (
    ALERTS_DIR,
    DASHBOARDS_DIR,
    GRAFANA_DASHBOARD_LABEL,
    SOURCE_ANNOTATION,
    generate,
)
from tests.deploy.manifests import DEPLOY, REPO, CrdSchemas, Object, Rendered, objects_of
from tests.support.crds import validation_errors
from tests.support.kustomize import render

RULES = textwrap.dedent(
    """\
    # Alerts on the aggregation job's findings.
    groups:
      - name: ksmon-findings
        rules:
          - alert: KafkaStreamsThreadsDead
            expr: |
              max by (kafka_cluster, group, process) (
                ksmon_finding_active{kind="stream_threads_dead"}
              ) > 0
            for: 5m
            labels:
              severity: critical
            annotations:
              summary: "Stream threads died in {{ $labels.group }} ({{ $labels.process }})"
              description: "{{ $value }} finding(s) open."
              runbook_url: "https://example.invalid/runbooks/threads-dead"
      - name: ksmon-recording
        interval: 1m
        rules:
          - record: ksmon:group_lag_seconds:max
            expr: max by (kafka_cluster, group) (ksmon_group_lag_seconds)
    """
)
RULE_TESTS = textwrap.dedent(
    """\
    rule_files: [findings.yml]
    tests:
      - interval: 1m
        input_series: []
        alert_rule_test: []
    """
)
DASHBOARD = '{\n  "uid": "ksmon-overview",\n  "title": "ksmon — overview",\n  "panels": []\n}\n'


def _sources(root: Path, directory: str, patterns: tuple[str, ...]) -> dict[str, str]:
    paths = sorted({p for pattern in patterns for p in (root / directory).glob(pattern)})
    return {p.relative_to(root).as_posix(): p.read_text() for p in paths}


def _rule_files(root: Path) -> dict[str, Any]:
    """Rule files by path, parsed; promtool unit-test files are not rule files."""
    parsed = {
        path: yaml.safe_load(text)
        for path, text in _sources(root, ALERTS_DIR, ("*.yml", "*.yaml")).items()
    }
    return {path: content for path, content in parsed.items() if "groups" in content}


def _check_rules(promtool: Path, rule: Object, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / f"{rule['metadata']['name']}.yml"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    return subprocess.run(
        [str(promtool), "check", "rules", str(path)], capture_output=True, text=True, check=False
    )


def _assert_rules_match(objects: list[Object], root: Path) -> None:
    rules = {
        r["metadata"]["annotations"][SOURCE_ANNOTATION]: r["spec"]["groups"]
        for r in objects_of(objects, "PrometheusRule")
    }
    assert rules == {path: content["groups"] for path, content in _rule_files(root).items()}


def _assert_dashboards_match(objects: list[Object], root: Path) -> None:
    dashboards = {
        c["metadata"]["annotations"][SOURCE_ANNOTATION]: c["data"]
        for c in objects_of(objects, "ConfigMap")
        if c["metadata"].get("labels", {}).get(GRAFANA_DASHBOARD_LABEL) == "1"
    }
    assert dashboards == {
        path: {Path(path).name: text}
        for path, text in _sources(root, DASHBOARDS_DIR, ("*.json",)).items()
    }


@pytest.mark.parametrize("directory", ["monitoring", "examples/one-namespace"])
def test_rendered_rules_and_dashboards_are_the_repository_files(
    rendered: Rendered, directory: str
) -> None:
    _assert_rules_match(rendered[directory], REPO)
    _assert_dashboards_match(rendered[directory], REPO)


def test_rendered_rules_pass_promtool(rendered: Rendered, promtool: Path, tmp_path: Path) -> None:
    for rule in objects_of(rendered["examples/one-namespace"], "PrometheusRule"):
        result = _check_rules(promtool, rule, tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture
def sample_repo(tmp_path: Path) -> Path:
    """A repository with one rule file, one promtool test file and one dashboard, and
    deploy/monitoring/ generated from them next to a copy of its kustomization."""
    root = tmp_path / "repo"
    (root / ALERTS_DIR).mkdir(parents=True)
    (root / DASHBOARDS_DIR).mkdir(parents=True)
    (root / ALERTS_DIR / "findings.yml").write_text(RULES)
    (root / ALERTS_DIR / "findings_test.yml").write_text(RULE_TESTS)
    (root / DASHBOARDS_DIR / "ksmon-overview.json").write_text(DASHBOARD)
    monitoring = root / "deploy" / "monitoring"
    monitoring.mkdir(parents=True)
    shutil.copy(DEPLOY / "monitoring" / "kustomization.yaml", monitoring)
    for path, text in generate(root).items():
        (root / path).write_text(text)
    return root


def test_generated_from_sources_renders_valid_and_equal(
    sample_repo: Path, kustomize: Path, crd_schemas: CrdSchemas, promtool: Path, tmp_path: Path
) -> None:
    objects = render(kustomize, sample_repo / "deploy" / "monitoring")
    assert sorted(o["kind"] for o in objects) == ["ConfigMap", "PrometheusRule"]
    _assert_rules_match(objects, sample_repo)
    _assert_dashboards_match(objects, sample_repo)
    (rule,) = objects_of(objects, "PrometheusRule")
    assert [g["name"] for g in rule["spec"]["groups"]] == ["ksmon-findings", "ksmon-recording"]
    assert (
        validation_errors(rule, crd_schemas[("monitoring.coreos.com/v1", "PrometheusRule")]) == []
    )
    result = _check_rules(promtool, rule, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 2 rules found" in result.stdout


def test_promtool_rejects_a_broken_rule(
    sample_repo: Path, kustomize: Path, promtool: Path, tmp_path: Path
) -> None:
    """The promtool check can fail: an expression that does not parse is caught."""
    (sample_repo / ALERTS_DIR / "findings.yml").write_text(
        RULES.replace("max by (kafka_cluster, group) (ksmon_group_lag_seconds)", "max by (")
    )
    for path, text in generate(sample_repo).items():
        (sample_repo / path).write_text(text)
    (rule,) = objects_of(render(kustomize, sample_repo / "deploy" / "monitoring"), "PrometheusRule")
    result = _check_rules(promtool, rule, tmp_path)
    assert result.returncode != 0
    assert "parse error" in result.stdout + result.stderr
