import pytest

from tests.unit.aggregation.cases import T0, Case
from tests.unit.aggregation.cases.rebalance_loop import CASES, KIND
from tests.unit.aggregation.conftest import DetectorResults
from tests.unit.aggregation.detector_checks import verify


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_rebalance_loop(case: Case, detector_results: DetectorResults) -> None:
    verify(case, detector_results)


def _judged(results: DetectorResults, group: str) -> set[float]:
    return {c.t - T0 for c in results.coverage[group] if c.kind == KIND}


def test_a_group_that_stays_empty_is_judged(detector_results: DetectorResults) -> None:
    # Empty for a whole poll interval hides no member mid-join: judging those polls is
    # what closes a loop seen between polls once the application stopped for good.
    judged = _judged(detector_results, "loop-stopped-after-rejoins")
    assert {70.0, 600.0, 920.0} <= judged
    assert 60.0 not in judged  # Stable just before: members may have left mid-rebalance


def test_an_empty_poll_after_a_stable_one_is_not_judged(
    detector_results: DetectorResults,
) -> None:
    # The lone member's loop alternates Stable and Empty polls: judging the Empty ones,
    # where nothing is counted, would close the finding its Stable polls hold.
    judged = _judged(detector_results, "loop-lone-member-poll-timeouts")
    assert {20.0, 60.0} <= judged  # Stable
    assert not {40.0, 80.0} & judged
