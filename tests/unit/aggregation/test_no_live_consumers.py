import pytest

from agent.aggregation.judging.hysteresis import HysteresisState, advance
from agent.config.schema import DetectorsConfig
from tests.unit.aggregation.cases import T0, Case, Closing, open_close_events
from tests.unit.aggregation.cases.no_live_consumers import CASES, CLOSING, KIND
from tests.unit.aggregation.conftest import DetectorResults
from tests.unit.aggregation.detector_checks import verify


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_no_live_consumers(case: Case, detector_results: DetectorResults) -> None:
    verify(case, detector_results)


@pytest.mark.parametrize("case", CLOSING, ids=lambda c: c.name)
def test_no_live_consumers_closes(case: Closing) -> None:
    assert open_close_events(case) == list(case.events), case.why


def _judged(results: DetectorResults, group: str) -> set[float]:
    return {c.t - T0 for c in results.coverage[group] if c.kind == KIND}


def test_an_empty_group_within_the_grace_is_not_judged(
    detector_results: DetectorResults,
) -> None:
    # Empty for less than thread_death_grace (60 s): a member may be re-joining.
    judged = _judged(detector_results, "nolive-member-seen-once")
    assert {90.0, 190.0, 200.0, 270.0, 300.0} <= judged  # a member, or Empty for 60 s+
    assert not {100.0, 150.0, 210.0, 260.0} & judged


def test_a_member_seen_at_one_poll_does_not_close_the_finding(
    detector_results: DetectorResults,
) -> None:
    # The looping member caught at one poll: before, the finding closed at 250 s (the
    # evaluation window after it last held) and opened again at 270 s.
    group = "nolive-member-seen-once"
    _, events = advance(
        HysteresisState(),
        [c for c in detector_results.by_group[group] if c.kind == KIND],
        [c for c in detector_results.coverage[group] if c.kind == KIND],
        close_after=DetectorsConfig().evaluation_window,
    )
    # No close, no second open (updates carry the newest text).
    assert [(e.event, e.at - T0) for e in events if e.event != "update"] == [("open", 160.0)]
