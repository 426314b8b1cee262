import pytest

from agent.aggregation.judging.results import STORE_MEMORY_ESTIMATE
from agent.config.schema import DetectorsConfig
from tests.unit.aggregation.cases import T0, Case
from tests.unit.aggregation.cases.state_store_footprint import (
    CASES,
    GROWTH_UNTIL,
    KIND,
    MIB,
    PER_INSTANCE,
    TWELVE,
    UNTIL,
)
from tests.unit.aggregation.conftest import DetectorResults, run_cases
from tests.unit.aggregation.detector_checks import verify


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_state_store_footprint(case: Case, detector_results: DetectorResults) -> None:
    verify(case, detector_results)


def _judged_at(results: DetectorResults, group: str) -> set[float]:
    return {c.t - T0 for c in results.coverage[group] if c.kind == KIND}


def _estimates(results: DetectorResults, group: str) -> dict[str | None, float]:
    return {
        g.process: g.value
        for g in results.result.gauges
        if g.metric == STORE_MEMORY_ESTIMATE and g.group == group
    }


@pytest.mark.parametrize(
    "group", ["ssf-unknown-limit", "ssf-assignment-unknown", "ssf-changelog-short-history"]
)
def test_what_cannot_be_judged_is_not(group: str, detector_results: DetectorResults) -> None:
    """No limit, no known assignment, a look-back not yet covered: neither holding nor
    healthy (an open finding would not close on it)."""
    assert _judged_at(detector_results, group) == set()


def test_the_estimate_is_a_gauge_with_or_without_a_limit(
    detector_results: DetectorResults,
) -> None:
    assert _estimates(detector_results, "ssf-unknown-limit") == {"pA": float(TWELVE)}
    assert _estimates(detector_results, "ssf-only-the-instance-over") == {
        "pA": float(TWELVE),
        "pB": float(4 * PER_INSTANCE),
    }
    assert _estimates(detector_results, "ssf-assignment-unknown") == {}


def test_a_healthy_instance_is_judged(detector_results: DetectorResults) -> None:
    """Judged without holding, so an open finding closes once the excess is gone."""
    assert float(UNTIL) in _judged_at(detector_results, "ssf-generous-limit")
    assert float(GROWTH_UNTIL) in _judged_at(detector_results, "ssf-changelog-cleaned")


def test_a_bounded_shared_cache_is_the_instance_total() -> None:
    """With a RocksDBConfigSetter bounding every store to one shared 256 MiB, 12 RocksDB
    instances cost 256 MiB: not 1176 MiB, and under 80% of 1 GiB."""
    over, generous = (c for c in CASES if c.name in ("ssf-windowed-over", "ssf-generous-limit"))
    bounded = run_cases([over, generous], DetectorsConfig(rocksdb_bounded_memory_bytes=256 * MIB))
    assert [c for c in bounded.by_group[over.name] if c.kind == KIND] == []
    assert _estimates(bounded, over.name) == {"pA": float(256 * MIB)}
    tight = run_cases([over], DetectorsConfig(rocksdb_bounded_memory_bytes=900 * MIB))
    (found,) = {c.subject.process for c in tight.by_group[over.name] if c.t == T0 + UNTIL}
    assert found == "pA"
