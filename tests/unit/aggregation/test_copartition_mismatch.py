import pytest

from tests.unit.aggregation.cases import T0, Case
from tests.unit.aggregation.cases.copartition_mismatch import CASES, KIND, UNTIL
from tests.unit.aggregation.conftest import DetectorResults
from tests.unit.aggregation.detector_checks import verify


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_copartition_mismatch(case: Case, detector_results: DetectorResults) -> None:
    verify(case, detector_results)


def _judged_at(results: DetectorResults, group: str) -> set[float]:
    return {c.t - T0 for c in results.coverage[group] if c.kind == KIND}


def test_unknown_counts_and_unknown_tasks_are_not_judged(
    detector_results: DetectorResults,
) -> None:
    """Neither holding nor healthy: an open finding would neither be confirmed nor closed."""
    assert _judged_at(detector_results, "cpm-unknown-count") == set()
    assert _judged_at(detector_results, "cpm-always-rebalancing") == set()
    assert _judged_at(detector_results, "cpm-plain-consumer") == set()
    judged = _judged_at(detector_results, "cpm-through-a-rebalance")
    assert {40.0, 50.0, 60.0}.isdisjoint(judged)
    assert {30.0, 70.0, float(UNTIL)} <= judged


@pytest.mark.parametrize("group", ["cpm-repaired", "cpm-equal", "cpm-kip1071-equal"])
def test_matching_counts_are_judged_healthy(group: str, detector_results: DetectorResults) -> None:
    """Judged without holding: an open finding closes once the counts match."""
    assert float(UNTIL) in _judged_at(detector_results, group)


def test_a_repaired_mismatch_held_until_the_counts_matched(
    detector_results: DetectorResults,
) -> None:
    held = {c.t - T0 for c in detector_results.by_group.get("cpm-repaired", []) if c.kind == KIND}
    assert held == {60.0}, "held 60 s at the 60 s poll, gone once customers had 4 partitions"
