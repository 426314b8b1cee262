import pytest

from tests.unit.aggregation.cases import Case
from tests.unit.aggregation.cases.hot_partitions import CASES
from tests.unit.aggregation.conftest import DetectorResults
from tests.unit.aggregation.detector_checks import verify


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_hot_partitions_colocated(case: Case, detector_results: DetectorResults) -> None:
    verify(case, detector_results)


def test_no_coverage_while_the_group_rebalances(detector_results: DetectorResults) -> None:
    kinds = {c.kind for c in detector_results.coverage["hot-while-rebalancing"]}
    assert "hot_partitions_colocated" not in kinds, "undecoded members: the rule cannot judge"
    assert "no_live_consumers" in kinds, "a rule on the member count judges at any time"
    assert "rebalance_loop" not in kinds, "rebalances are counted once the members are visible"
