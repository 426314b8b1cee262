from agent.aggregation.outputs.render import events_text, findings_text
from agent.model.findings import Finding, FindingEvent, FindingSubject


def _finding(group: str) -> Finding:
    return Finding(
        "broker_partition_budget" if not group else "internal_topic_budget",
        "warning",
        "prod",
        group,
        FindingSubject(),
        since=100.0,
        last_seen=200.0,
        explanation="over budget",
    )


def test_a_cluster_level_finding_names_the_cluster_not_an_empty_group() -> None:
    text = findings_text([_finding(""), _finding("orders-app")], now=200.0)
    assert "broker_partition_budget  prod  the cluster" in text
    assert "internal_topic_budget  prod/orders-app  the group" in text
    timeline = events_text([FindingEvent.of("open", 100.0, _finding(""))])
    assert "prod  the cluster: over budget" in timeline
