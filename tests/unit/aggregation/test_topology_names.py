import pytest

from tests.unit.aggregation.cases import Case
from tests.unit.aggregation.cases.topology_names import CASES
from tests.unit.aggregation.conftest import DetectorResults
from tests.unit.aggregation.detector_checks import verify


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_findings_name_their_tasks_subtopologies(
    case: Case, detector_results: DetectorResults
) -> None:
    verify(case, detector_results)


def test_findings_without_a_topology_are_unchanged(detector_results: DetectorResults) -> None:
    """The same cases' original groups carry no topology: no names, the words as they were."""
    for original in ("restore-broker-stalled", "hot-two-on-one-thread"):
        found = detector_results.by_group[original]
        assert found, original
        for candidate in found:
            assert "subtopology_names" not in candidate.evidence, candidate.evidence
            assert "sub-topology" not in candidate.explanation, candidate.explanation
