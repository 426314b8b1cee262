import pytest

from tests.unit.aggregation.cases import T0, Case
from tests.unit.aggregation.cases.assignment_size_risk import CASES, KIND, SHORT
from tests.unit.aggregation.conftest import DetectorResults
from tests.unit.aggregation.detector_checks import verify


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_assignment_size_risk(case: Case, detector_results: DetectorResults) -> None:
    verify(case, detector_results)


def _judged_at(results: DetectorResults, group: str) -> set[float]:
    return {c.t - T0 for c in results.coverage[group] if c.kind == KIND}


def test_polls_mid_rebalance_are_not_judged(detector_results: DetectorResults) -> None:
    """Their empty metadata is no size: neither holding nor failing."""
    judged = _judged_at(detector_results, "asr-through-a-rebalance")
    assert {60.0, 70.0, 80.0}.isdisjoint(judged)
    assert {50.0, 90.0, float(SHORT)} <= judged
    assert float(SHORT) not in _judged_at(detector_results, "asr-mid-rebalance")


@pytest.mark.parametrize("group", ["asr-kip1071", "asr-kip848-with-sizes", "asr-unknown-limit"])
def test_groups_without_a_record_or_a_limit_are_never_judged(
    group: str, detector_results: DetectorResults
) -> None:
    assert _judged_at(detector_results, group) == set()


def test_a_small_group_is_judged_healthy(detector_results: DetectorResults) -> None:
    """Judged without holding: an open finding would close after the window."""
    assert float(SHORT) in _judged_at(detector_results, "asr-small")
