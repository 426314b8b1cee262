"""Hysteresis: findings open when their rule holds and close only after it has not held
for a full window; replays change nothing. Pure Python, no Spark."""

from dataclasses import dataclass, field

import pytest

from agent.aggregation.judging.hysteresis import (
    Candidate,
    Clearance,
    Coverage,
    HysteresisState,
    advance,
)
from agent.model.findings import FindingSubject

WINDOW = 60.0
KIND = "stream_threads_dead"


def held(t: float, severity: str = "warning", process: str = "pA", agent: str = "a") -> Candidate:
    return Candidate("c", "g", agent, t, KIND, severity, FindingSubject(process=process), t, "x")


def judged(t: float, agent: str = "a", kind: str = KIND) -> Coverage:
    return Coverage("c", "g", agent, t, kind)


@dataclass
class Step:
    """One batch: the rule held at ``holds`` times; it could judge at ``judges`` times."""

    holds: list[float] = field(default_factory=list)
    judges: list[float] = field(default_factory=list)
    severity: str = "warning"


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        pytest.param([Step(holds=[10])], [("open", 10)], id="opens the first time the rule holds"),
        pytest.param(
            [Step(holds=[10, 20, 30])],
            [("open", 10)],
            id="holding again is no new event",
        ),
        pytest.param(
            [Step(holds=[10], judges=[20, 30, 40, 50])],
            [("open", 10)],
            id="not holding for less than the window keeps it open (no flapping)",
        ),
        pytest.param(
            [Step(holds=[10], judges=[20, 40, 60, 70])],
            [("open", 10), ("close", 70)],
            id="closes at the first evaluation a full window after it last held",
        ),
        pytest.param(
            [Step(holds=[10, 50], judges=[30, 90, 110])],
            [("open", 10), ("close", 110)],
            id="holding again within the window restarts the countdown",
        ),
        pytest.param(
            [Step(holds=[10]), Step(judges=[200]), Step(holds=[210])],
            [("open", 10), ("close", 200), ("open", 210)],
            id="a closed finding can open again",
        ),
        pytest.param(
            [Step(holds=[10]), Step(holds=[20], severity="critical")],
            [("open", 10), ("update", 20)],
            id="a severity change while open is an update",
        ),
        pytest.param(
            [Step(holds=[10]), Step()],
            [("open", 10)],
            id="a batch without evaluations of the group changes nothing",
        ),
    ],
)
def test_hysteresis(steps: list[Step], expected: list[tuple[str, float]]) -> None:
    state = HysteresisState()
    events = []
    for step in steps:
        candidates = [held(t, step.severity) for t in step.holds]
        coverage = [judged(t) for t in sorted(step.holds + step.judges)]
        state, new = advance(state, candidates, coverage, close_after=WINDOW)
        events += new
    assert [(e.event, e.at) for e in events] == expected


def test_a_rule_that_cannot_judge_never_closes_a_finding() -> None:
    state, _ = advance(HysteresisState(), [held(10)], [judged(10)], close_after=WINDOW)
    # Later evaluations judged other kinds only (the group rebalanced): still open.
    state, events = advance(
        state, [], [judged(t, kind="rebalance_loop") for t in (100, 200)], close_after=WINDOW
    )
    assert events == []
    assert len(state.open) == 1


def test_a_replayed_batch_changes_nothing() -> None:
    batch = ([held(10), held(20)], [judged(10), judged(20), judged(100)])
    state, first = advance(HysteresisState(), *batch, close_after=WINDOW)
    again, second = advance(state, *batch, close_after=WINDOW)
    assert [e.event for e in first] == ["open", "close"]
    assert second == []
    assert again == state


def test_late_evaluations_of_a_series_are_ignored() -> None:
    state, _ = advance(HysteresisState(), [held(100)], [judged(100)], close_after=WINDOW)
    state, events = advance(state, [held(50, process="pB")], [judged(50)], close_after=WINDOW)
    assert events == [], "evaluating at 50 after 100 would rewrite history"


def test_two_agents_holding_the_same_finding_keep_one_open_finding() -> None:
    candidates = [held(10, agent="a"), held(12, severity="critical", agent="b")]
    state, events = advance(
        HysteresisState(), candidates, [judged(10, "a"), judged(12, "b")], close_after=WINDOW
    )
    assert [(e.event, e.finding.severity) for e in events] == [
        ("open", "warning"),
        ("update", "critical"),
    ]
    # Agent a no longer sees it, but b still does: it stays open.
    state, events = advance(
        state,
        [held(t, severity="critical", agent="b") for t in (22, 32, 82)],
        [judged(t, "a") for t in (80, 90)] + [judged(t, "b") for t in (22, 32, 82)],
        close_after=WINDOW,
    )
    assert events == []


def test_an_open_finding_follows_the_newest_text_with_an_update_a_window_at_most() -> None:
    def saying(t: float, text: str) -> Candidate:
        return Candidate("c", "g", "a", t, KIND, "warning", FindingSubject(process="pA"), 10, text)

    texts = [(10, "lag 1"), (20, "lag 2"), (30, "lag 3"), (70, "lag 7"), (80, "lag 8")]
    state, events = advance(
        HysteresisState(),
        [saying(t, text) for t, text in texts],
        [judged(t) for t, _ in texts],
        close_after=WINDOW,
    )
    # Opened at 10 saying "lag 1"; by 70 the text changed and a window went by.
    assert [(e.event, e.at, e.finding.explanation) for e in events] == [
        ("open", 10, "lag 1"),
        ("update", 70, "lag 7"),
    ]
    (finding,) = state.open
    assert (finding.explanation, finding.last_seen, finding.since) == ("lag 8", 80, 10)
    # The state remembers the last event: the next update comes a window after it.
    state, events = advance(
        state,
        [saying(120, "lag 12"), saying(130, "lag 13")],
        [judged(120), judged(130)],
        close_after=WINDOW,
    )
    assert [(e.event, e.at) for e in events] == [("update", 130)]
    state, events = advance(state, [saying(140, "lag 13")], [judged(140)], close_after=WINDOW)
    assert events == [], "the same text again is no news"


def test_a_less_severe_view_of_another_agent_does_not_flap_the_severity() -> None:
    # A sidecar sees the instance's threads dead (critical), the central agent only a
    # missing member (warning); their polls alternate. Before: warning, critical,
    # warning, ... an update event at each.
    candidates = [
        held(t, severity="critical" if agent == "sidecar" else "warning", agent=agent)
        for t, agent in [(10, "central"), (15, "sidecar"), (20, "central"), (25, "sidecar")]
    ]
    coverage = [judged(c.t, c.agent) for c in candidates]
    state, events = advance(HysteresisState(), candidates, coverage, close_after=WINDOW)
    assert [(e.event, e.finding.severity) for e in events] == [
        ("open", "warning"),
        ("update", "critical"),
    ]
    (finding,) = state.open
    assert (finding.severity, finding.last_seen) == ("critical", 25)
    # The sidecar stops holding it; a window later the central agent's view speaks.
    later = [held(t, agent="central") for t in (40, 60, 90)]
    state, events = advance(state, later, [judged(c.t, c.agent) for c in later], close_after=WINDOW)
    assert [(e.event, e.at, e.finding.severity) for e in events] == [("update", 90, "warning")]


def test_the_state_survives_json() -> None:
    state, _ = advance(HysteresisState(), [held(10)], [judged(10)], close_after=WINDOW)
    assert HysteresisState.from_json(state.to_json()) == state


def test_events_carry_a_deterministic_id_and_the_finding() -> None:
    _, events = advance(HysteresisState(), [held(10)], [judged(10)], close_after=WINDOW)
    _, again = advance(HysteresisState(), [held(10)], [judged(10)], close_after=WINDOW)
    (event,) = events
    assert event.event_id == again[0].event_id
    assert event.finding.key == "c/g/stream_threads_dead/process=pA"
    assert event.finding.since == 10


def cleared(t: float, agent: str = "a") -> Clearance:
    return Clearance("c", "g", agent, t, KIND, FindingSubject(process="pA"))


@pytest.mark.parametrize(
    ("holders", "clear_at", "expected"),
    [
        pytest.param(
            [held(10), held(20)],
            cleared(30),
            [("open", 10), ("close", 30)],
            id="a finding its rule sees over closes at once, not a window later",
        ),
        pytest.param(
            [held(10), held(20, agent="sidecar")],
            cleared(30),
            [("open", 10)],
            id="not while another series held it within the window (its view is not over)",
        ),
        pytest.param(
            [held(10), held(30)],
            cleared(30),
            [("open", 10)],
            id="not at an instant that holds it",
        ),
    ],
)
def test_a_cleared_finding_closes_at_once(
    holders: list[Candidate], clear_at: Clearance, expected: list[tuple[str, float]]
) -> None:
    _, events = advance(HysteresisState(), holders, [], close_after=WINDOW, cleared=[clear_at])
    assert [(e.event, e.at) for e in events] == expected
