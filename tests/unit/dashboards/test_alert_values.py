"""The alert rules rendered from dashboards/alerts/templates/ and the alerting values:
the committed rule files are the defaults' rendering; promtool checks and unit-tests
both the defaults' rendering and a non-default one (dashboards/alerts/tests/custom/);
a values file changes only what it sets, and a wrong one is refused in one line naming
the setting; every setting has a placeholder name Helm can use."""

import re
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from agent.errors import ConfigError
from dashboards import alert_rules
from dashboards.alert_rules import (
    ALERTS_DIR,
    DEFAULTS_FILE,
    PLACEHOLDERS,
    TEMPLATES_DIR,
    load_values,
    main,
    render_rule_files,
    values_schema,
)
from tests.support.prometheus import RULE_FILES, RULE_TESTS, run_tool

ROOT = Path(__file__).resolve().parents[3]
CUSTOM = ALERTS_DIR / "tests" / "custom"
EXPLAIN_SOURCE = ROOT / "agent" / "explain" / "render.py"

BROKEN_YAML = "rules: [\n"
WRONG_VALUES = [
    ("disabledAlerts: [KsmonJobAbsnt]\n", "did you mean KsmonJobAbsent?"),
    ("disabledAlerts: KsmonJobAbsent\n", "disabledAlerts: a list of alert names"),
    ("rules:\n  KsmonJobStale:\n    fro: 5m\n", "unknown setting rules.KsmonJobStale.fro"),
    ("rules:\n  KsmonJobStale:\n    fro: 5m\n", "did you mean rules.KsmonJobStale.for?"),
    ("grafanaURL: https://g.example.com\n", "unknown setting grafanaURL"),
    (
        "rules:\n  KsmonJobStale:\n    for: 5 minutes\n",
        "rules.KsmonJobStale.for: a Prometheus duration",
    ),
    (
        "rules:\n  KsmonJobStale:\n    for: 5\n",
        "rules.KsmonJobStale.for: a Prometheus duration",
    ),
    ("rules:\n  KsmonJobStale:\n    thresholdSeconds: '300'\n", "thresholdSeconds: a number"),
    ("rules:\n  KsmonJobStale:\n    thresholdSeconds: -1\n", "thresholdSeconds: a number"),
    (
        "rules:\n  KafkaStreamsStateVolumeFillingUp:\n    horizonSeconds: 1d\n",
        "rules.KafkaStreamsStateVolumeFillingUp.horizonSeconds: a number",
    ),
    (
        "rules:\n  KafkaStreamsStateVolumeFillingUp:\n    window: 6 hours\n",
        "rules.KafkaStreamsStateVolumeFillingUp.window: a Prometheus duration",
    ),
    ("rules:\n  KsmonJobStale:\n    severity: 'no'\n", "severity: a severity label value"),
    ("rules:\n  KsmonJobStale: 5m\n", "rules.KsmonJobStale is a mapping of"),
    ("runbookBaseUrl: {a: b}\n", "runbookBaseUrl is a single value"),
    ("runbookBaseUrl: wiki/ksmon\n", "runbookBaseUrl: an http:// or https:// URL"),
    ("selectors:\n  job: ksmon-job\n", "selectors.job: PromQL label matchers"),
    ("selectors:\n  job: 'job=\"a: b\"'\n", "selectors.job: PromQL label matchers"),
    ("explainCommand: 'ksmon explain {{ x }}'\n", "explainCommand: a one-line command"),
    ("- runbookBaseUrl\n", "a YAML mapping of settings"),
    (BROKEN_YAML, "not valid YAML"),
]


def _render_into(directory: Path, values_file: Path | None, tests: list[Path]) -> Path:
    """The rule files rendered from ``values_file`` into ``directory``, with the promtool
    test files in ``directory/tests/`` (their ``rule_files`` say ``../<file>``)."""
    for name, text in render_rule_files(load_values(values_file)).items():
        (directory / name).write_text(text)
    (directory / "tests").mkdir()
    for test in tests:
        shutil.copy(test, directory / "tests")
    return directory


def _promtool_check_and_test(directory: Path) -> None:
    rule_files = sorted(str(p) for p in directory.glob("*.rules.yml"))
    assert len(rule_files) == len(RULE_FILES)
    checked = run_tool("promtool", "check", "rules", *rule_files)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for test in sorted((directory / "tests").glob("*.test.yml")):
        result = run_tool("promtool", "test", "rules", str(test))
        assert result.returncode == 0, result.stdout + result.stderr
        assert "SUCCESS" in result.stdout


def test_the_committed_rule_files_are_the_defaults_rendering() -> None:
    assert alert_rules.stale_files() == [], "run python -m dashboards.alert_rules"
    assert main(["--check"]) == 0


def test_a_changed_or_missing_rule_file_is_stale(tmp_path: Path) -> None:
    for name, text in render_rule_files(load_values()).items():
        (tmp_path / name).write_text(text)
    assert alert_rules.stale_files(tmp_path) == []
    edited = tmp_path / "ksmon.rules.yml"
    edited.write_text(edited.read_text().replace("for: 5m", "for: 6m", 1))
    (tmp_path / "kafka-streams.rules.yml").unlink()
    assert sorted(alert_rules.stale_files(tmp_path)) == [
        str(tmp_path / "kafka-streams.rules.yml"),
        str(edited),
    ]


def test_promtool_on_the_defaults_rendering(tmp_path: Path) -> None:
    _promtool_check_and_test(_render_into(tmp_path, None, list(RULE_TESTS)))


def test_promtool_on_a_non_default_rendering(tmp_path: Path) -> None:
    directory = _render_into(tmp_path, CUSTOM / "values.yaml", [CUSTOM / "custom.test.yml"])
    _promtool_check_and_test(directory)
    # The custom tests cannot pass on the defaults: what they test is the values' doing.
    default = tmp_path / "default"
    default.mkdir()
    _render_into(default, None, [CUSTOM / "custom.test.yml"])
    result = run_tool("promtool", "test", "rules", str(default / "tests" / "custom.test.yml"))
    assert result.returncode != 0


def test_a_values_file_changes_only_what_it_sets(tmp_path: Path) -> None:
    values = tmp_path / "mine.yaml"
    values.write_text(
        "runbookBaseUrl: https://runbooks.example.com/ksmon/\n"
        "rules:\n  KsmonJobStale:\n    thresholdSeconds: 900\n"
    )
    rendered = render_rule_files(load_values(values))
    default = render_rule_files(load_values())
    ksmon = yaml.safe_load(rendered["ksmon.rules.yml"])["groups"][0]["rules"]
    stale = next(r for r in ksmon if r.get("alert") == "KsmonJobStale")
    assert "> 900" in stale["expr"]
    assert stale["for"] == "5m"
    assert stale["annotations"]["runbook_url"] == (
        "https://runbooks.example.com/ksmon/KsmonJobStale.md"
    )
    changed = {
        line
        for name in default
        for line in set(rendered[name].splitlines()) ^ set(default[name].splitlines())
    }
    assert all("runbook" in line or "> 900" in line or "> 300" in line for line in changed)


def _alerts(rendered: dict[str, str]) -> dict[str, list[str]]:
    return {
        group["name"]: [rule["alert"] for rule in group["rules"]]
        for text in rendered.values()
        for group in yaml.safe_load(text)["groups"]
    }


def test_disabled_alerts_are_left_out_with_every_rule_of_theirs(tmp_path: Path) -> None:
    values = tmp_path / "mine.yaml"
    values.write_text("disabledAlerts: [KsmonJobAbsent, KafkaStreamsThreadsDead]\n")
    default = _alerts(render_rule_files(load_values()))
    rendered = _alerts(render_rule_files(load_values(values)))
    # KafkaStreamsThreadsDead has two rules (the job's and the sidecar's): both go.
    assert default["ksmon-kafka-streams"].count("KafkaStreamsThreadsDead") == 2
    for group, alerts in default.items():
        expected = [a for a in alerts if a not in ("KsmonJobAbsent", "KafkaStreamsThreadsDead")]
        assert rendered[group] == expected


def test_a_group_whose_every_alert_is_disabled_is_an_empty_valid_group(tmp_path: Path) -> None:
    own = _alerts(render_rule_files(load_values()))["ksmon-self"]
    values = tmp_path / "mine.yaml"
    values.write_text(f"disabledAlerts: [{', '.join(own)}]\n")
    directory = tmp_path / "rules"
    directory.mkdir()
    for name, text in render_rule_files(load_values(values)).items():
        (directory / name).write_text(text)
    assert _alerts(render_rule_files(load_values(values)))["ksmon-self"] == []
    checked = run_tool("promtool", "check", "rules", *map(str, directory.glob("*.rules.yml")))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_an_empty_values_file_is_the_defaults(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing changed\n")
    assert load_values(empty) == load_values()


@pytest.mark.parametrize(("text", "message"), WRONG_VALUES)
def test_wrong_values_are_refused_in_one_line_naming_the_setting(
    tmp_path: Path, text: str, message: str
) -> None:
    values = tmp_path / "mine.yaml"
    values.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_values(values)
    assert message in str(error.value)
    assert str(values) in str(error.value)
    assert "\n" not in str(error.value)


def test_the_command_line_renders_a_users_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rules"
    assert main(["--values", str(CUSTOM / "values.yaml"), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in RULE_FILES)
    assert (out / "ksmon.rules.yml").read_text() == render_rule_files(
        load_values(CUSTOM / "values.yaml")
    )["ksmon.rules.yml"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  KsmonJobStale:\n    for: soon\n")
    capsys.readouterr()
    assert main(["--values", str(bad), "--out", str(tmp_path / "bad")]) == 1
    error = capsys.readouterr().err
    assert error.startswith("dashboards.alert_rules: error: alerting values ")
    assert "rules.KsmonJobStale.for" in error
    assert error.count("\n") == 1
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize(
    ("text", "message"), [(text, message) for text, message in WRONG_VALUES if text != BROKEN_YAML]
)
def test_the_json_schema_refuses_what_load_values_refuses(text: str, message: str) -> None:
    """The schema a Helm chart can check its `alerting:` values with says the same."""
    errors = list(jsonschema.Draft7Validator(values_schema()).iter_errors(yaml.safe_load(text)))
    assert errors, message


def test_the_json_schema_accepts_the_defaults_and_the_custom_values() -> None:
    validator = jsonschema.Draft7Validator(values_schema())
    validator.check_schema(values_schema())
    assert list(validator.iter_errors(yaml.safe_load(DEFAULTS_FILE.read_text()))) == []
    custom = yaml.safe_load((CUSTOM / "values.yaml").read_text())
    assert list(validator.iter_errors(custom)) == []


def test_values_without_an_output_directory_are_refused() -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--values", str(CUSTOM / "values.yaml")])
    assert exit_.value.code == 2  # argparse's usage error


def test_every_setting_has_a_helm_friendly_name_and_a_placeholder() -> None:
    segment = re.compile(r"[A-Za-z][A-Za-z0-9]*")
    assert len(set(PLACEHOLDERS)) == len(PLACEHOLDERS)
    for name in PLACEHOLDERS:
        assert all(segment.fullmatch(part) for part in name.split(".")), name
    used = {
        match
        for template in TEMPLATES_DIR.glob("*.rules.yml")
        for match in re.findall(r"\$\{([^}]*)\}", template.read_text())
    }
    settings = {name for name in used if not name.startswith(alert_rules.BUILT_IN_PREFIX)}
    assert settings == set(PLACEHOLDERS)
    defaults = yaml.safe_load(DEFAULTS_FILE.read_text())
    assert set(defaults["rules"]) == _alert_names()


def test_each_value_can_be_another_templating_languages_expression() -> None:
    """What the Helm chart does: each setting becomes a `.Values` expression."""
    expressions = {name: f"{{{{ .Values.alerting.{name} }}}}" for name in PLACEHOLDERS}
    rendered = "".join(render_rule_files(expressions).values())
    assert "${" not in rendered
    for expression in expressions.values():
        assert expression in rendered


def test_every_kafka_streams_alert_on_a_group_names_its_explain_command() -> None:
    sections = set(re.findall(r"under ([A-Z][A-Z ]*[A-Z])", "".join(_descriptions())))
    assert {"REBALANCING ADVICE", "INSTANCES", "PARTITIONS"} <= sections
    explain = EXPLAIN_SOURCE.read_text()
    for section in sections:
        assert f'"{section}' in explain, f"ksmon explain prints no {section} section"
    for rule in _rules():
        if rule["alert"].startswith("KafkaStreams") and "group" in rule["expr"]:
            assert (
                "`ksmon explain --config ksmon.yaml {{ $labels.group }} --cluster "
                in (rule["annotations"]["description"])
            ), rule["alert"]


def test_hot_partitions_point_at_the_rebalancing_advice() -> None:
    (rule,) = [r for r in _rules() if r["alert"] == "KafkaStreamsHotPartitionsColocated"]
    assert "under REBALANCING ADVICE" in rule["annotations"]["description"]
    runbook = (ROOT / "docs" / "runbooks" / "KafkaStreamsHotPartitionsColocated.md").read_text()
    assert "ksmon explain" in runbook
    assert "REBALANCING ADVICE" in runbook


def _rules() -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for text in render_rule_files(load_values()).values():
        for group in yaml.safe_load(text)["groups"]:
            rules += [r for r in group["rules"] if "alert" in r]
    return rules


def _alert_names() -> set[str]:
    return {str(r["alert"]) for r in _rules()}


def _descriptions() -> list[str]:
    return [str(rule["annotations"]["description"]) for rule in _rules()]


def test_every_setting_and_its_default_is_documented() -> None:
    docs = (ROOT / "docs" / "deploy.md").read_text()
    values = load_values()
    for name in ("runbookBaseUrl", "grafanaUrl", "explainCommand"):
        assert f"`{name}` (default `{values[name]}`)" in docs, name
    selectors = values["selectors"]
    assert isinstance(selectors, dict)
    for name, selector in selectors.items():
        assert f"`selectors.{name}` (default `{selector}`)" in docs, name
    rules = values["rules"]
    assert isinstance(rules, dict)
    for row in _rule_rows("rules", rules):
        assert row in docs


def _rule_rows(prefix: str, node: dict[str, Any]) -> list[str]:
    """The documentation's table row of each rule's settings, with their defaults."""
    if not all(isinstance(child, dict) for child in node.values()):
        others = [f"`{key}` {node[key]}" for key in node if key not in ("for", "severity")]
        threshold = ", ".join(others) or "-"
        return [f"| `{prefix}` | {node.get('for', '-')} | {node['severity']} | {threshold} |"]
    return [row for key, child in node.items() for row in _rule_rows(f"{prefix}.{key}", child)]
