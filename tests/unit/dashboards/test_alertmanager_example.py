"""The example Alertmanager configuration: valid for amtool, and routing ksmon's
alerts where its comments say."""

from pathlib import Path

import pytest

from tests.support.prometheus import run_tool

EXAMPLE = (
    Path(__file__).resolve().parents[3] / "dashboards" / "alertmanager" / "alertmanager.example.yml"
)


def test_amtool_accepts_the_example() -> None:
    result = run_tool("amtool", "check-config", str(EXAMPLE))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize(
    ("labels", "receiver", "why"),
    [
        (
            ["alertname=KafkaStreamsThreadsDead", "severity=critical", "group=orders-app"],
            "kafka-streams-oncall",
            "an application down hard pages its on-call",
        ),
        (
            ["alertname=KafkaStreamsHotPartitionsColocated", "severity=warning"],
            "kafka-streams-team",
            "a warning goes to the application team's channel",
        ),
        (
            ["alertname=KsmonKafkaDown", "severity=warning", "kafka_cluster=prod"],
            "ksmon-operators",
            "ksmon's own health goes to whoever runs ksmon",
        ),
        (
            ["alertname=KsmonTargetDown", "severity=critical"],
            "ksmon-operators",
            "even a critical ksmon alert is ksmon's operators' business",
        ),
        (["alertname=SomethingElse", "severity=info"], "blackhole", "info notifies nobody"),
    ],
)
def test_routes(labels: list[str], receiver: str, why: str) -> None:
    result = run_tool(
        "amtool",
        "config",
        "routes",
        "test",
        f"--config.file={EXAMPLE}",
        f"--verify.receivers={receiver}",
        *labels,
    )
    assert result.returncode == 0, f"{why}: {result.stdout}{result.stderr}"
