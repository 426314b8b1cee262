import pytest

from tests.unit.aggregation.cases import T0, Case
from tests.unit.aggregation.cases.idle_members import CASES, KIND, UNTIL
from tests.unit.aggregation.conftest import DetectorResults
from tests.unit.aggregation.detector_checks import verify


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_idle_members(case: Case, detector_results: DetectorResults) -> None:
    verify(case, detector_results)


def _judged_at(results: DetectorResults, group: str) -> set[float]:
    return {c.t - T0 for c in results.coverage[group] if c.kind == KIND}


def test_polls_mid_rebalance_are_not_judged(detector_results: DetectorResults) -> None:
    """Neither holding nor failing: a rebalance never closes an open finding by itself."""
    judged = _judged_at(detector_results, "idle-through-a-rebalance")
    assert {200.0, 210.0, 220.0}.isdisjoint(judged)
    assert {190.0, 230.0, float(UNTIL)} <= judged
    kip1071 = _judged_at(detector_results, "idle-kip1071")
    assert {200.0, 210.0}.isdisjoint(kip1071), "Assigning and Reconciling are not Stable"


def test_a_group_with_an_unknown_member_is_not_judged(detector_results: DetectorResults) -> None:
    assert _judged_at(detector_results, "idle-undecoded-member") == set()


def test_a_scaled_back_group_is_judged_healthy(detector_results: DetectorResults) -> None:
    """Judged at its last poll without holding: an open finding closes after the window."""
    assert float(UNTIL) in _judged_at(detector_results, "idle-scaled-back")
