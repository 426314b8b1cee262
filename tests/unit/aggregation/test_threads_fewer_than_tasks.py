import pytest

from tests.unit.aggregation.cases import T0, Case
from tests.unit.aggregation.cases.threads_fewer_than_tasks import CASES, KIND, UNTIL
from tests.unit.aggregation.conftest import DetectorResults
from tests.unit.aggregation.detector_checks import verify


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_threads_fewer_than_tasks(case: Case, detector_results: DetectorResults) -> None:
    verify(case, detector_results)


def _judged_at(results: DetectorResults, group: str) -> set[float]:
    return {c.t - T0 for c in results.coverage[group] if c.kind == KIND}


def test_polls_mid_rebalance_are_not_judged(detector_results: DetectorResults) -> None:
    """Neither holding nor failing: a rebalance never closes an open finding by itself."""
    judged = _judged_at(detector_results, "tft-through-a-rebalance")
    assert {340.0, 350.0, 360.0}.isdisjoint(judged)
    assert {330.0, 370.0, float(UNTIL)} <= judged
    kip1071 = _judged_at(detector_results, "tft-kip1071")
    assert {340.0, 350.0}.isdisjoint(kip1071), "Assigning and Reconciling are not Stable"


def test_a_group_with_an_unknown_member_is_not_judged(detector_results: DetectorResults) -> None:
    assert _judged_at(detector_results, "tft-undecoded-member") == set()


def test_healthy_and_empty_groups_are_judged(detector_results: DetectorResults) -> None:
    """Judged without holding: an open finding closes once the lag stops growing, or when
    every member has gone."""
    for group in ("tft-healthy-sawtooth", "tft-draining", "tft-empty"):
        assert float(UNTIL) in _judged_at(detector_results, group), group
