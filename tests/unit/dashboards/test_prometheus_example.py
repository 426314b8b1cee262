"""The example Prometheus configuration for users without the Prometheus Operator:
valid for promtool, loading every alert rule file ksmon ships, and naming its scrape
jobs so that the alerts about ksmon's own targets find them."""

import re
from pathlib import Path

import yaml

from tests.support.prometheus import run_tool

DASHBOARDS = Path(__file__).resolve().parents[3] / "dashboards"
EXAMPLE = DASHBOARDS / "prometheus" / "prometheus.example.yml"


def test_promtool_accepts_the_example_and_its_rule_files() -> None:
    result = run_tool("promtool", "check", "config", str(EXAMPLE))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is valid prometheus config file syntax" in result.stdout


def test_every_shipped_rule_file_is_loaded() -> None:
    config = yaml.safe_load(EXAMPLE.read_text())
    loaded = {(EXAMPLE.parent / path).resolve() for path in config["rule_files"]}
    shipped = {path.resolve() for path in (DASHBOARDS / "alerts").glob("*.rules.yml")}
    assert shipped, "dashboards/alerts holds rule files"
    assert loaded == shipped


def test_scrape_jobs_match_the_default_ksmon_job_selector() -> None:
    """The ksmon health alerts select ksmon's targets by job name; a renamed job here
    would leave KsmonTargetDown blind for whoever copies this file."""
    rules = (DASHBOARDS / "alerts" / "ksmon.rules.yml").read_text()
    selectors = set(re.findall(r'job=~"([^"]+)"', rules))
    assert selectors, "the ksmon rules select their targets by job name"
    jobs = [job["job_name"] for job in yaml.safe_load(EXAMPLE.read_text())["scrape_configs"]]
    for job in jobs:
        assert any(re.fullmatch(selector, job) for selector in selectors), job
