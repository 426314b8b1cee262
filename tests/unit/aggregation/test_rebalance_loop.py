import pytest

from tests.unit.aggregation.cases import Case
from tests.unit.aggregation.cases.rebalance_loop import CASES
from tests.unit.aggregation.conftest import DetectorResults
from tests.unit.aggregation.detector_checks import verify


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_rebalance_loop(case: Case, detector_results: DetectorResults) -> None:
    verify(case, detector_results)
