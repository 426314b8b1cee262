"""consumer_status's cases, its gauges, its hysteresis, and what it leaves to other rules."""

import dataclasses

import pytest

from agent.aggregation.judging.hysteresis import HysteresisState, advance
from agent.aggregation.judging.results import GROUP_STATUS, GROUP_STATUS_PARTITIONS
from agent.config.schema import DetectorsConfig
from tests.unit.aggregation.cases import T0, Case
from tests.unit.aggregation.cases.consumer_status import (
    CASES,
    KIND,
    PAUSED,
    UNTIL,
    Group,
    Part,
    frozen_from,
    history,
    steady,
)
from tests.unit.aggregation.conftest import DetectorResults, run_cases
from tests.unit.aggregation.detector_checks import verify


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_consumer_status(case: Case, detector_results: DetectorResults) -> None:
    verify(case, detector_results)


def _status(results: DetectorResults, group: str) -> str:
    """The group's status at its last poll, from its gauges (exactly one is 1)."""
    rows = [g for g in results.result.gauges if g.group == group and g.metric == GROUP_STATUS]
    assert sorted(g.status or "" for g in rows) == sorted(
        ["ok", "lagging", "stalled", "stopped", "rewound"]
    )
    (status,) = [g.status for g in rows if g.value == 1]
    assert status is not None
    return status


def _partitions(results: DetectorResults, group: str) -> dict[str, float]:
    return {
        g.status or "": g.value
        for g in results.result.gauges
        if g.group == group and g.metric == GROUP_STATUS_PARTITIONS
    }


@pytest.mark.parametrize(
    ("group", "status"),
    [
        ("cs-paused", "stalled"),
        ("cs-streams-one-task-stuck", "stalled"),
        ("cs-reset-by-a-live-consumer", "rewound"),
        ("cs-reset-to-earliest", "rewound"),
        # It moved at the window's first poll, and falls behind since.
        ("cs-paused-not-a-window-yet", "lagging"),
        ("cs-slow-but-moving", "ok"),
        ("cs-slow-falling-behind", "lagging"),
        ("cs-quiet-topic-gets-a-record", "ok"),
        ("cs-just-joined", "ok"),
        ("cs-topic-left-behind", "ok"),
        ("cs-assigns-its-own", "ok"),
        ("cs-old-commits-no-lag", "ok"),
        ("cs-left-with-growing-lag", "stopped"),
        ("cs-abandoned-backlog", "stopped"),
        ("cs-reset-long-ago", "stopped"),
        # The metric is literal: a restore longer than the window commits nothing.
        ("cs-streams-restoring", "stalled"),
        ("cs-paused-mid-rebalance", "stalled"),
    ],
)
def test_the_group_status_gauge(detector_results: DetectorResults, group: str, status: str) -> None:
    assert _status(detector_results, group) == status


def test_partitions_per_status(detector_results: DetectorResults) -> None:
    counts = _partitions(detector_results, "cs-streams-one-task-stuck")
    assert counts == {"stalled": 1, "stopped": 0, "rewound": 0, "lagging": 0, "ok": 1}
    # A partition no member owns in a live group gets no status.
    assert _partitions(detector_results, "cs-topic-left-behind")["ok"] == 1
    assert sum(_partitions(detector_results, "cs-topic-left-behind").values()) == 1


def _candidates_at_any_poll(results: DetectorResults, group: str) -> list[float]:
    return [c.t - T0 for c in results.by_group.get(group, []) if c.kind == KIND]


@pytest.mark.parametrize(
    "group",
    [
        "cs-slow-but-moving",
        "cs-slow-falling-behind",
        "cs-quiet-topic-gets-a-record",
        "cs-just-joined",
        "cs-topic-left-behind",
        "cs-assigns-its-own",
        "cs-old-commits-no-lag",
        "cs-left-with-growing-lag",
        "cs-abandoned-backlog",
        "cs-streams-restoring",
    ],
)
def test_never_a_finding_at_any_poll(detector_results: DetectorResults, group: str) -> None:
    """Not only at the last poll: a slow consumer is never stalled, whatever the poll."""
    assert _candidates_at_any_poll(detector_results, group) == []


def test_a_group_left_with_a_growing_lag_is_no_live_consumers_finding(
    detector_results: DetectorResults,
) -> None:
    kinds = {c.kind for c in detector_results.by_group["cs-left-with-growing-lag"]}
    assert "no_live_consumers" in kinds
    assert KIND not in kinds


def test_a_poll_mid_rebalance_is_not_judged(detector_results: DetectorResults) -> None:
    judged = {
        c.t - T0 for c in detector_results.coverage["cs-paused-mid-rebalance"] if c.kind == KIND
    }
    assert UNTIL - 10 in judged
    assert UNTIL not in judged


def test_the_finding_opens_at_the_first_holding_poll_and_closes_a_window_after() -> None:
    """Paused from 200 s (lag from 210 s), committing again from 700 s: it holds from 510 s
    (a whole window stuck) to 690 s, and closes at the first poll an evaluation window
    after that."""
    group = "cs-resumes"
    resumed = Group(
        [
            Part("in", 0, steady(5.0), lambda s: steady(5.0)(s if s >= 700 else min(s, 200))),
        ]
    )
    case = Case(group, "", KIND, history(group, resumed, until=800))
    params = DetectorsConfig()
    results = run_cases([case], params)
    held = sorted(c.t - T0 for c in results.by_group[group] if c.kind == KIND)
    assert (held[0], held[-1]) == (510.0, 690.0)
    _, events = advance(
        HysteresisState(),
        [c for c in results.by_group[group] if c.kind == KIND],
        [c for c in results.coverage[group] if c.kind == KIND],
        close_after=params.evaluation_window,
    )
    # (Updates in between carry the newest text; what matters here is when it opens and closes.)
    assert [(e.event, e.at - T0, e.finding.severity) for e in events if e.event != "update"] == [
        ("open", 510.0, "critical"),
        ("close", 750.0, "critical"),
    ]
    assert events[0].finding.since == T0 + 210


def test_stopped_is_a_finding_only_for_a_group_gone_for_good() -> None:
    """With stopped findings turned on: a backlog nobody has read for the whole look-back
    is one; a group whose member left at 100 s is no_live_consumers' until thread_history
    and a window have passed since (no finding of this rule beside it)."""
    params = DetectorsConfig(consumer_stopped_severity="warning")
    abandoned = next(c for c in CASES if c.name == "cs-abandoned-backlog")
    left = next(c for c in CASES if c.name == "cs-left-with-growing-lag")
    results = run_cases([abandoned, left], params)
    (found,) = [c for c in results.by_group[abandoned.name] if c.t - T0 == UNTIL]
    assert (found.kind, found.severity) == (KIND, "warning")
    assert "has no member, and nothing was committed on 1 partition" in found.explanation
    assert [c for c in results.by_group[left.name] if c.kind == KIND] == []


def test_stopped_findings_never_stand_beside_no_live_consumers() -> None:
    """The member leaves at 100 s and records keep arriving for half an hour: the app is
    down all that time (no_live_consumers, open throughout, issue 27), and this rule's
    stopped finding (turned on) never opens beside it."""
    group = "cs-left-for-good"
    params = DetectorsConfig(consumer_stopped_severity="warning")
    g = Group(
        [Part("in", 0, steady(5.0), frozen_from(100, steady(5.0)))], members=lambda s: s < 100
    )
    results = run_cases([Case(group, "", KIND, history(group, g, until=1800))], params)
    stopped_at = [c.t for c in results.by_group[group] if c.kind == KIND]
    down_at = [c.t for c in results.by_group[group] if c.kind == "no_live_consumers"]
    assert down_at, "no_live_consumers holds while the app is down"
    assert not set(stopped_at) & set(down_at), "never both at one poll"
    _, events = advance(
        HysteresisState(),
        results.by_group[group],
        results.coverage[group],
        close_after=params.evaluation_window,
    )
    timeline = [(e.event, e.finding.kind, e.at - T0) for e in events if e.event != "update"]
    assert ("open", "no_live_consumers", 160.0) in timeline, timeline
    assert not any(kind == KIND for _event, kind, _at in timeline), timeline


def test_lagging_is_a_finding_when_configured() -> None:
    case = next(c for c in CASES if c.name == "cs-slow-falling-behind")
    results = run_cases([case], DetectorsConfig(consumer_lagging_severity="warning"))
    (found,) = [c for c in results.by_group[case.name] if c.t == case.when]
    assert found.severity == "warning"
    assert "falls behind on 1 partition (in-0)" in found.explanation


def test_several_statuses_in_one_finding_the_most_severe_speaks() -> None:
    """One partition stuck since 200 s, another rewound at 500 s: one finding, critical,
    its explanation about the stall, the rewind mentioned."""
    group = "cs-two-faults"
    g = Group(
        [
            Part("in", 0, steady(5.0), frozen_from(200, steady(5.0))),
            Part("in", 1, steady(5.0), lambda s: steady(5.0)(s) if s < 500 else 0),
        ]
    )
    results = run_cases([Case(group, "", KIND, history(group, g))], DetectorsConfig())
    (found,) = [c for c in results.by_group[group] if c.kind == KIND and c.t - T0 == UNTIL]
    assert found.severity == "critical"
    assert found.evidence["reported"] == ["stalled", "rewound"]
    assert found.explanation.endswith("; also 1 partition rewound")


def test_the_window_is_the_configured_one() -> None:
    """With a 2-minute window a pause is stalled two minutes after the lag began."""
    case = Case("cs-short-window", "", KIND, history("cs-short-window", PAUSED, until=340))
    params = dataclasses.replace(DetectorsConfig(), consumer_status_window=120.0)
    results = run_cases([case], params)
    held = sorted(c.t - T0 for c in results.by_group[case.name] if c.kind == KIND)
    assert held[0] == 330.0
