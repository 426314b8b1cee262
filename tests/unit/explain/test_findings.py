"""Which of the job's open findings ``ksmon explain`` shows for a group, and what it
says when the findings topic cannot be read."""

from collections.abc import Sequence
from dataclasses import replace

import pytest

from agent.aggregation.outputs.findings_topic import FindingsTopicError
from agent.explain.findings import EVIDENCE_CHARS, findings_for_group
from agent.model.findings import Finding, FindingSubject

TOPIC = "ksmon.findings"


def finding(group: str = "orders", cluster: str = "prod", **evidence: object) -> Finding:
    return Finding(
        kind="hot_partitions_colocated",
        severity="warning",
        cluster=cluster,
        group=group,
        # The subject names where it came from, so a test can tell which ones were kept.
        subject=FindingSubject(process=f"{cluster}.{group}", thread=1),
        since=1_700_000_000.0,
        last_seen=1_700_000_060.0,
        explanation="tasks 0_1 and 1_1 are hot and both on thread 1",
        evidence=dict(evidence),
    )


@pytest.mark.parametrize(
    ("why", "open_now", "cluster", "expected_groups_clusters"),
    [
        pytest.param(
            "only the asked group's findings belong in its report",
            [finding("orders"), finding("payments")],
            "prod",
            [("orders", "prod")],
            id="other-group-left-out",
        ),
        pytest.param(
            "a group of the same name on another cluster is another group",
            [finding("orders", "prod"), finding("orders", "staging")],
            "prod",
            [("orders", "prod")],
            id="other-cluster-left-out",
        ),
        pytest.param(
            "given only --bootstrap, the cluster's name is unknown: match the group alone",
            [finding("orders", "prod"), finding("payments", "prod")],
            None,
            [("orders", "prod")],
            id="cluster-unknown",
        ),
        pytest.param(
            "the job runs and found nothing: an empty list, not 'unknown'",
            [finding("payments")],
            "prod",
            [],
            id="none-open",
        ),
    ],
)
def test_the_findings_shown_are_the_groups_own(
    why: str,
    open_now: list[Finding],
    cluster: str | None,
    expected_groups_clusters: list[tuple[str, str]],
) -> None:
    lines, source = findings_for_group(lambda: open_now, TOPIC, "orders", cluster)
    assert lines is not None, why
    assert [line.subject for line in lines] == [
        f"instance {c}.{g} thread 1" for g, c in expected_groups_clusters
    ], why
    assert source == f"the aggregation job, findings topic {TOPIC}"


def test_an_unreadable_findings_topic_makes_findings_unknown_with_the_reason() -> None:
    def broken() -> Sequence[Finding]:
        raise FindingsTopicError("findings topic ksmon.findings does not exist")

    lines, source = findings_for_group(broken, TOPIC, "orders", "prod")
    assert lines is None, "unknown is not the same as none"
    assert source == "findings topic ksmon.findings does not exist"


def test_evidence_is_one_compact_line_cut_at_a_bound() -> None:
    short, _ = findings_for_group(
        lambda: [finding(load=12.5, hot_units=["0_1", "1_1"])], TOPIC, "orders", "prod"
    )
    assert short is not None
    assert short[0].evidence == '{"hot_units":["0_1","1_1"],"load":12.5}'
    long, _ = findings_for_group(
        lambda: [finding(members=["m" * 50] * 20)], TOPIC, "orders", "prod"
    )
    assert long is not None
    assert len(long[0].evidence) == EVIDENCE_CHARS
    assert long[0].evidence.endswith("...")


THREAD_CLIENT = "orders-6f1c2a8e-StreamThread-2-consumer"


@pytest.mark.parametrize(
    ("evidence", "expected"),
    [
        pytest.param({"likely_cause": "max.poll.interval.ms"}, None, id="no-client-named"),
        pytest.param({"client_id": "orders-consumer-1"}, None, id="a-plain-consumer"),
        pytest.param(
            {
                "a_long_list_first": ["x" * 50] * 10,  # past the cut of the shown line
                "members_rejoining": [{"client_id": THREAD_CLIENT, "member_ids": ["m-1"]}],
            },
            THREAD_CLIENT,
            id="deep-in-rebalance-loop-evidence",
        ),
        pytest.param(
            {"clients": ["orders-6f1c2a8e-StreamThread-2-restore-consumer"]},
            None,
            id="a-restore-consumer-is-no-group-member",
        ),
    ],
)
def test_a_stream_thread_named_anywhere_in_the_evidence_is_found(
    evidence: dict[str, object], expected: str | None
) -> None:
    """Issue 27 #4: an Empty looping app shows no member; the job's evidence names them."""
    lines, _ = findings_for_group(
        lambda: [replace(finding(), evidence=evidence)], TOPIC, "orders", "prod"
    )

    assert lines is not None
    assert lines[0].stream_thread_client == expected
