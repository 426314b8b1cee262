"""The job's JSON API from its view: what each path answers, filters, errors, and that
an index is made once per view."""

import json
from typing import Any
from urllib.parse import parse_qs

import pytest

from agent.aggregation.judging.results import PARTITION_STATUS, GaugeRow
from agent.aggregation.outputs.api import JobApi
from agent.aggregation.outputs.api_view import answer, index_of
from agent.aggregation.outputs.job_metrics import JobExposition
from agent.aggregation.outputs.latest import JobView
from agent.model.findings import FindingSubject
from tests.unit.aggregation.api_state import (
    GAUGES,
    HOT,
    OPEN,
    T,
    api_state,
    finding,
    partition_row,
    status_rows,
)
from tests.unit.aggregation.conftest import DetectorResults


def get(request: str, view: JobView | None = None) -> tuple[int, dict[str, Any]]:
    path, _, query = request.partition("?")
    index = index_of(view if view is not None else api_state().view())
    status, body = answer(index, path, parse_qs(query, keep_blank_values=True))
    json.dumps(body, allow_nan=False)  # strict JSON, whatever the view holds
    return status, body


def keys_of(findings: object) -> list[str]:
    assert isinstance(findings, list)
    return [f["key"] for f in findings]


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        # Most severe first, then by cluster, group and key.
        (
            "v1/findings",
            [
                "prod/billing/consumer_status/group",
                "prod/orders-app/hot_partitions_colocated/process=pA,thread=1",
                "prod//broker_partition_budget/group",
                "staging/clicks/partition_skew/topic=clicks,partition=2",
            ],
        ),
        # Values comma-separated or the parameter repeated: either of them.
        (
            "v1/findings?severity=critical,warning",
            [
                "prod/billing/consumer_status/group",
                "prod/orders-app/hot_partitions_colocated/process=pA,thread=1",
            ],
        ),
        (
            "v1/findings?severity=critical&severity=warning",
            [
                "prod/billing/consumer_status/group",
                "prod/orders-app/hot_partitions_colocated/process=pA,thread=1",
            ],
        ),
        # Filters together: all of them.
        ("v1/findings?cluster=prod&severity=info", ["prod//broker_partition_budget/group"]),
        (
            "v1/findings?kind=partition_skew",
            ["staging/clicks/partition_skew/topic=clicks,partition=2"],
        ),
        # A group that does not exist is a filter that matches nothing, not an error.
        ("v1/findings?group=nobody", []),
        # The cluster's own findings have the empty group.
        ("v1/findings?group=", ["prod//broker_partition_budget/group"]),
    ],
)
def test_findings_filters(request_: str, expected: list[str]) -> None:
    status, body = get(request_)
    assert status == 200
    assert keys_of(body["findings"]) == expected


@pytest.mark.parametrize(
    ("request_", "status", "error", "names"),
    [
        # Each names what was not found, and what there is.
        ("v1/clusters/nowhere", 404, "not_found", ["'nowhere'", "prod, staging"]),
        ("v1/clusters/nowhere/groups/billing", 404, "not_found", ["'nowhere'"]),
        ("v1/clusters/prod/groups/nobody", 404, "not_found", ["'nobody'", "'prod'"]),
        # A group of the other cluster is not this cluster's.
        ("v1/clusters/prod/groups/clicks", 404, "not_found", ["'clicks'", "'prod'"]),
        ("v2/findings", 404, "not_found", ["'v2'", "v1"]),
        ("", 404, "not_found", ["v1"]),
        ("v1/topics", 404, "not_found", ["/api/v1/topics", "/api/v1/findings"]),
        ("v1/clusters/prod/groups/billing/partitions", 404, "not_found", ["/api/v1/clusters"]),
        # Bad filters name the parameter and what would be right.
        ("v1/findings?severity=urgent", 400, "bad_request", ["severity='urgent'", "critical"]),
        ("v1/findings?kind=lag", 400, "bad_request", ["kind='lag'", "consumer_status"]),
        ("v1/findings?sevrity=info", 400, "bad_request", ["'sevrity'", "severity"]),
        ("v1/clusters/prod/groups?status=STALL", 400, "bad_request", ["'STALL'", "stalled"]),
        # A path without parameters takes none: a typo is not silently ignored.
        ("v1/clusters?cluster=prod", 400, "bad_request", ["'cluster'", "takes none"]),
    ],
)
def test_errors_name_what_is_wrong(
    request_: str, status: int, error: str, names: list[str]
) -> None:
    got, body = get(request_)
    assert (got, body["error"]) == (status, error)
    assert set(body) == {"error", "message"}
    message = str(body["message"])
    assert "\n" not in message
    for name in names:
        assert name in message


@pytest.mark.parametrize(
    ("request_", "groups"),
    [
        ("v1/clusters/prod/groups", ["billing", "orders-app", "shipping"]),
        ("v1/clusters/prod/groups?status=stalled", ["billing"]),
        # A group without a status yet is "unknown" to the filter.
        ("v1/clusters/prod/groups?status=unknown,ok", ["orders-app", "shipping"]),
        ("v1/clusters/staging/groups?status=stalled", []),
    ],
)
def test_groups_and_their_status_filter(request_: str, groups: list[str]) -> None:
    status, body = get(request_)
    assert status == 200
    listed = body["groups"]
    assert isinstance(listed, list)
    assert [g["group"] for g in listed] == groups


def test_a_group_has_its_status_its_partitions_worst_first_and_its_findings() -> None:
    status, body = get("v1/clusters/prod/groups/billing")
    assert status == 200
    assert body["status"] == "stalled"
    assert body["partition_count"] == 6
    assert body["partition_counts"] == {
        "stalled": 1,
        "stopped": 0,
        "rewound": 0,
        "lagging": 2,
        "ok": 3,
    }
    # Worst status first, then the most lag; ok partitions are counted, not listed.
    assert body["partitions"] == [
        {"topic": "payments", "partition": 1, "status": "stalled", "lag": 17},
        {"topic": "payments", "partition": 0, "status": "lagging", "lag": 900},
        {"topic": "payments", "partition": 4, "status": "lagging", "lag": 120},
    ]
    assert keys_of(body["findings"]) == ["prod/billing/consumer_status/group"]


def test_a_group_not_judged_yet_has_no_status() -> None:
    status, body = get("v1/clusters/prod/groups/shipping")
    assert status == 200
    assert (body["status"], body["partition_count"], body["partition_counts"]) == (None, None, None)
    assert body["partitions"] == []


def test_after_a_restart_groups_come_from_their_findings_before_the_first_batch() -> None:
    # A restarted job's view has the findings it left open, and no gauges yet.
    view = JobView(open_findings=OPEN, newest_snapshot=(("prod", T),))
    status, body = get("v1/clusters/prod/groups", view)
    assert status == 200
    assert body["as_of"] is None
    assert [(g["group"], g["status"]) for g in body["groups"]] == [
        ("billing", None),
        ("orders-app", None),
    ]


def test_a_cluster_known_only_from_its_snapshots_has_no_groups() -> None:
    view = JobView(newest_snapshot=(("quiet", T),))
    status, body = get("v1/clusters/quiet", view)
    assert status == 200
    assert (body["group_count"], body["newest_snapshot_at"], body["cluster_findings"]) == (0, T, [])


def test_a_clusters_own_findings_are_the_clusters_not_a_groups() -> None:
    _, body = get("v1/clusters/prod")
    (own,) = body["cluster_findings"]
    assert (own["kind"], own["group"], own["subject_description"]) == (
        "broker_partition_budget",
        "",
        "the cluster",
    )
    _, groups = get("v1/clusters/prod/groups")
    assert "" not in [g["group"] for g in groups["groups"]]


def test_a_finding_carries_its_suggested_move_and_non_finite_numbers_as_null() -> None:
    _, body = get("v1/findings")
    by_key = {f["key"]: f for f in body["findings"]}
    hot = by_key[HOT.key]
    assert hot["suggested_move"] == {"unit": "task", "task": "0_1", "to_process": "pB"}
    assert hot["subject"] == {
        "process": "pA",
        "thread": 1,
        "task": None,
        "topic": None,
        "partition": None,
    }
    assert hot["subject_description"] == "instance pA thread 1"
    stalled = by_key["prod/billing/consumer_status/group"]
    assert stalled["suggested_move"] is None
    assert stalled["evidence"] == {"status": "stalled", "eta_seconds": None, "ratio": None}


def test_names_with_slashes_and_spaces_come_percent_encoded() -> None:
    group = "team/orders app"
    f = finding("idle_members", "info", "prod", group, FindingSubject())
    view = JobView(
        open_findings=(f,), gauges=tuple(status_rows("prod", group, "ok", (0, 0, 0, 0, 1)))
    )
    status, body = get("v1/clusters/prod/groups/team%2Forders%20app", view)
    assert status == 200
    assert (body["group"], body["status"]) == (group, "ok")
    # A trailing slash is the same path.
    assert get("v1/clusters/prod/groups/team%2Forders%20app/", view)[0] == 200


def test_every_reply_is_new_so_no_request_changes_another() -> None:
    api = JobApi(api_state())
    first: Any = api.get("v1/findings", {})[1]
    first["findings"][0]["evidence"]["status"] = "changed"
    again: Any = api.get("v1/findings", {})[1]
    assert again["findings"][0]["evidence"]["status"] == "stalled"


def test_the_index_is_made_once_per_view() -> None:
    state = api_state()
    api = JobApi(state)
    first = api.index()
    assert api.index() is first
    state.batch_done(
        at=T + 75, seconds=1.0, open_findings=[], gauges=[], events=[], processed=0,
        quarantined={}, late=0, not_judged=0, newest={"prod": T + 70},
    )  # fmt: skip
    second = api.index()
    assert second is not first
    assert (second.as_of, second.findings) == (T + 75, ())


def test_partition_statuses_stay_off_metrics() -> None:
    # They are the API's; /metrics has the counts per status already.
    text = b"".join(JobExposition(api_state()).render(gzipped=False).chunks).decode()
    assert 'topic="payments"' not in text
    assert "partition_status" not in text
    assert any(g.metric == PARTITION_STATUS for g in GAUGES)


@pytest.mark.parametrize(
    ("group", "partitions"),
    [
        # One task's partition stuck while its member stays: stalled, by name.
        ("cs-streams-one-task-stuck", {"stalled"}),
        ("cs-reset-to-earliest", {"rewound"}),
        ("cs-slow-falling-behind", {"lagging"}),
        # A healthy group lists none.
        ("cs-slow-but-moving", set()),
    ],
)
def test_consumer_status_names_each_partition_not_ok(
    detector_results: DetectorResults, group: str, partitions: set[str]
) -> None:
    rows: tuple[GaugeRow, ...] = tuple(
        g for g in detector_results.result.gauges if g.group == group
    )
    (cluster,) = {g.cluster for g in rows}
    _, body = get(f"v1/clusters/{cluster}/groups/{group}", JobView(gauges=rows))
    listed = body["partitions"]
    assert isinstance(listed, list)
    assert {p["status"] for p in listed} == partitions
    counts = body["partition_counts"]
    assert isinstance(counts, dict)
    assert len(listed) == sum(n for s, n in counts.items() if s != "ok")
    assert all(p["lag"] >= 0 for p in listed)


def test_partition_row_helper_is_what_the_rule_emits() -> None:
    row = partition_row("c", "g", "t", 3, "stalled", 5)
    assert (row.metric, row.topic, row.partition, row.status, row.value) == (
        PARTITION_STATUS, "t", 3, "stalled", 5.0,
    )  # fmt: skip
