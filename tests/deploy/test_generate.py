"""deploy.generate: the packaging of dashboards/ as Kubernetes objects, for Kustomize and
for the Helm chart. Pure tests: the committed files are what the generator makes from
the repository today, the generated text parses back to the sources exactly, and bad
sources get one clear line naming the file. (helm itself renders the chart's parts in
test_helm.)"""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from agent.errors import ConfigError
from deploy.generate import (
    ALERTING_BEGIN,
    ALERTING_END,
    CHART_DASHBOARD_FILES,
    CHART_DASHBOARDS,
    CHART_DIR,
    CHART_RULES,
    CHART_VALUES,
    DASHBOARDS_DIR,
    DASHBOARDS_OUTPUT,
    RULES_OUTPUT,
    SOURCE_ANNOTATION,
    AlertSettings,
    SourceFile,
    dashboard_config_maps,
    generate,
    generated_files,
    helm_rules_template,
    main,
    prometheus_rules,
    render,
    stale_files,
    with_alerting_block,
    with_alerting_schema,
)
from tests.deploy.manifests import REPO

GROUPS = "groups:\n  - name: lag\n    rules:\n      - record: x:y\n        expr: vector(1)\n"


def test_the_committed_files_are_up_to_date() -> None:
    assert stale_files(REPO) == [], "run: make deploy-generate"


def test_no_sources_give_a_header_only_file_kustomize_reads_as_empty(tmp_path: Path) -> None:
    generated = generate(tmp_path)
    assert set(generated) == {RULES_OUTPUT, DASHBOARDS_OUTPUT}
    for text in generated.values():
        assert text.startswith("# Generated from ")
        assert list(yaml.safe_load_all(text)) == []


def test_a_rule_file_becomes_a_prometheus_rule_with_its_groups() -> None:
    (rule,) = prometheus_rules([SourceFile("dashboards/alerts/ksmon-lag.yaml", GROUPS)])
    assert rule["kind"] == "PrometheusRule"
    assert rule["metadata"]["name"] == "ksmon-alerts-lag"
    assert rule["metadata"]["annotations"] == {
        SOURCE_ANNOTATION: "dashboards/alerts/ksmon-lag.yaml"
    }
    assert rule["spec"] == yaml.safe_load(GROUPS)


# Each case: a source file name and the PrometheusRule it becomes.
NAMES = [
    ("lag.yml", "ksmon-alerts-lag"),
    ("ksmon-lag.yaml", "ksmon-alerts-lag"),  # no ksmon twice
    ("kafka-streams.rules.yml", "ksmon-alerts-kafka-streams"),  # the usual *.rules.yml
    ("ksmon.rules.yml", "ksmon-alerts-ksmon"),
    ("Streams_Lag.v2.yml", "ksmon-alerts-streams-lag-v2"),  # a valid Kubernetes name
]


@pytest.mark.parametrize(("file_name", "name"), NAMES)
def test_rule_objects_are_named_after_their_files(file_name: str, name: str) -> None:
    (rule,) = prometheus_rules([SourceFile(f"dashboards/alerts/{file_name}", GROUPS)])
    assert rule["metadata"]["name"] == name


def test_promtool_test_files_are_not_rule_files() -> None:
    tests = SourceFile("dashboards/alerts/lag_test.yml", "rule_files: [lag.yml]\ntests: []\n")
    assert prometheus_rules([tests]) == []


# Each case: a dashboard text that must survive YAML generation and parsing unchanged.
ROUND_TRIPS = [
    pytest.param('{"uid": "a"}\n', id="one line with final newline"),
    pytest.param('{"uid": "a"}', id="no final newline"),
    pytest.param('{\n  "uid": "a"\n}\n\n\n', id="several final newlines"),
    pytest.param('{\n  "title": "trailing space" \n}\n', id="trailing space (no literal block)"),
    pytest.param('{\n\t"title": "tab"\n}\n', id="tab indentation"),
    pytest.param('{"title": "Débit — 流量 ✓"}\n', id="non-ASCII text"),
    pytest.param('{"expr": "rate(x[$__rate_interval])", "d": "a: b # c"}\n', id="YAML-ish"),
]


@pytest.mark.parametrize("text", ROUND_TRIPS)
def test_a_dashboard_survives_generation_byte_for_byte(text: str) -> None:
    config_maps = dashboard_config_maps([SourceFile("dashboards/grafana/overview.json", text)])
    (parsed,) = yaml.safe_load_all(render(config_maps, "# header\n"))
    assert parsed["data"] == {"overview.json": text}
    assert parsed["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert parsed["metadata"]["annotations"]["grafana_folder"] == "ksmon"


# Each case: a bad source, and the words the one-line error must contain.
BAD_RULE_FILES = [
    pytest.param("groups: [", "not valid YAML", id="not YAML"),
    pytest.param("- a\n- b\n", "YAML mapping", id="a list, not a mapping"),
    pytest.param("rules: []\n", "non-empty 'groups:'", id="no groups"),
    pytest.param("groups: []\n", "non-empty 'groups:'", id="empty groups"),
    pytest.param(GROUPS + "extra: 1\n", "unexpected: extra", id="unknown top-level key"),
]


@pytest.mark.parametrize(("text", "words"), BAD_RULE_FILES)
def test_a_bad_rule_file_is_named_in_one_line(text: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        prometheus_rules([SourceFile("dashboards/alerts/bad.yml", text)])
    message = str(caught.value)
    assert message.startswith("dashboards/alerts/bad.yml: ")
    assert words in message
    assert "\n" not in message


BAD_DASHBOARDS = [
    pytest.param("overview.json", "{", "not valid JSON", id="not JSON"),
    pytest.param("over view.json", "{}", "rename the file", id="not a ConfigMap key"),
    pytest.param("big.json", '{"a": "' + "x" * 1024 * 1024 + '"}', "at most", id="over 1 MiB"),
]


@pytest.mark.parametrize(("name", "text", "words"), BAD_DASHBOARDS)
def test_a_bad_dashboard_is_named_in_one_line(name: str, text: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as caught:
        dashboard_config_maps([SourceFile(f"dashboards/grafana/{name}", text)])
    assert str(caught.value).startswith(f"dashboards/grafana/{name}: ")


def test_two_files_that_would_share_a_name_are_refused() -> None:
    sources = [SourceFile("dashboards/alerts/lag.yml", GROUPS)]
    sources.append(SourceFile("dashboards/alerts/Lag.yaml", GROUPS))
    with pytest.raises(ConfigError, match="both become PrometheusRule ksmon-alerts-lag"):
        prometheus_rules(sources)


def test_check_reports_stale_files_until_generated(tmp_path: Path) -> None:
    (tmp_path / "dashboards" / "alerts").mkdir(parents=True)
    (tmp_path / "dashboards" / "alerts" / "lag.yml").write_text(GROUPS)
    (tmp_path / "deploy" / "monitoring").mkdir(parents=True)
    assert main(["--check", "--repo", str(tmp_path)]) == 1
    assert main(["--repo", str(tmp_path)]) == 0
    assert main(["--check", "--repo", str(tmp_path)]) == 0
    assert "ksmon-alerts-lag" in (tmp_path / RULES_OUTPUT).read_text()


def test_a_bad_source_fails_the_command_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "dashboards" / "grafana").mkdir(parents=True)
    (tmp_path / "dashboards" / "grafana" / "x.json").write_text("{")
    assert main(["--repo", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("deploy.generate: error: dashboards/grafana/x.json: not valid JSON")
    assert err.count("\n") == 1


# --- The Helm chart's generated parts. ---


def test_the_chart_gets_rules_dashboards_and_alerting_values() -> None:
    generated = generated_files(REPO)
    dashboards = sorted(p.name for p in (REPO / DASHBOARDS_DIR).glob("*.json"))
    assert dashboards
    assert {CHART_RULES, CHART_DASHBOARDS, CHART_VALUES} <= set(generated)
    assert {p for p in generated if p.startswith(f"{CHART_DASHBOARD_FILES}/")} == {
        f"{CHART_DASHBOARD_FILES}/{name}" for name in dashboards
    }
    for name in dashboards:
        copy = generated[f"{CHART_DASHBOARD_FILES}/{name}"]
        assert copy == (REPO / DASHBOARDS_DIR / name).read_text()
        assert f'.Files.Get "dashboards/{name}"' in generated[CHART_DASHBOARDS]


@pytest.fixture
def chart_repo(tmp_path: Path) -> Path:
    """A repository with one dashboard and the chart's values.yaml."""
    (tmp_path / DASHBOARDS_DIR).mkdir(parents=True)
    (tmp_path / DASHBOARDS_DIR / "ksmon-overview.json").write_text('{"uid": "a"}\n')
    (tmp_path / CHART_DIR).mkdir(parents=True)
    shutil.copy(REPO / CHART_VALUES, tmp_path / CHART_VALUES)
    return tmp_path


def test_a_dashboard_gone_from_the_sources_is_removed_from_the_chart(chart_repo: Path) -> None:
    assert main(["--repo", str(chart_repo)]) == 0
    copy = chart_repo / CHART_DASHBOARD_FILES / "ksmon-overview.json"
    assert copy.read_text() == '{"uid": "a"}\n'
    (chart_repo / DASHBOARDS_DIR / "ksmon-overview.json").unlink()
    stale = stale_files(chart_repo)
    assert f"{CHART_DASHBOARD_FILES}/ksmon-overview.json" in stale
    assert CHART_DASHBOARDS in stale
    assert main(["--repo", str(chart_repo)]) == 0
    assert not copy.exists()
    assert stale_files(chart_repo) == []


def test_the_alerting_block_is_rewritten_and_nothing_else() -> None:
    values = f"image: x\n{ALERTING_BEGIN}alerting: {{}}\n{ALERTING_END}job: y\n"
    text = with_alerting_block(values, {"runbookBaseUrl": "https://example.com", "n": 300})
    assert text == (
        f"image: x\n{ALERTING_BEGIN}alerting:\n  runbookBaseUrl: https://example.com\n"
        f"  n: 300\n{ALERTING_END}job: y\n"
    )


def test_values_without_the_alerting_markers_are_named_in_one_line() -> None:
    with pytest.raises(ConfigError, match=f"^{CHART_VALUES}: needs the lines") as caught:
        with_alerting_block("alerting: {}\n", {})
    assert "\n" not in str(caught.value)


def test_a_setting_no_rule_uses_is_refused() -> None:
    settings = AlertSettings(
        [SourceFile("dashboards/alerts/lag.yml", GROUPS)], {"ksmonsetting0x": "lag.for"}, {}
    )
    with pytest.raises(ConfigError, match=r"^alert settings lag\.for appear in no rule file"):
        helm_rules_template(settings)


def test_prometheus_templates_are_escaped_and_settings_become_values() -> None:
    rules = GROUPS.replace("vector(1)", "up{ksmonsetting0x} > 1\n        for: ksmonsetting1x")
    rules += '        annotations: {summary: "{{ $labels.job }} {{ printf `%s` 1 }}"}\n'
    settings = AlertSettings(
        [SourceFile("dashboards/alerts/lag.yml", rules)],
        {"ksmonsetting0x": "selectors.targets", "ksmonsetting1x": "rules.Lag.for"},
        {},
    )
    text = helm_rules_template(settings)
    assert 'up{{ print "{" .Values.alerting.selectors.targets }}} > 1' in text
    assert "for: {{ .Values.alerting.rules.Lag.for }}" in text
    assert "{{`{{ $labels.job }}`}}" in text
    # A backtick cannot go into a raw string: that action is escaped brace by brace.
    assert '{{"{{"}} printf `%s` 1 {{"}}"}}' in text
    assert text.startswith("{{- /* Generated from ")
    assert text.rstrip().endswith("{{- end }}")


def test_the_alerting_schema_follows_the_defaults() -> None:
    schema = '{\n  "type": "object",\n  "properties": {"image": {"type": "object"}}\n}\n'
    text = with_alerting_schema(schema, {"url": "https://x", "rules": {"A": {"threshold": 3}}})
    alerting = json.loads(text)["properties"]["alerting"]
    assert alerting["additionalProperties"] is False
    assert alerting["properties"]["url"]["type"] == "string"
    rule = alerting["properties"]["rules"]["properties"]["A"]
    assert rule == {
        "type": "object",
        "properties": {"threshold": {"type": "number", "minimum": 0}},
        "additionalProperties": False,
    }
    assert json.loads(text)["properties"]["image"] == {"type": "object"}
