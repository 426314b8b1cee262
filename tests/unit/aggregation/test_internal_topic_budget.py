import pytest

from tests.unit.aggregation.cases import T0, Case, found
from tests.unit.aggregation.cases.internal_topic_budget import BROKER_CASES, CASES, KIND, UNTIL
from tests.unit.aggregation.conftest import DetectorResults
from tests.unit.aggregation.detector_checks import verify


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_internal_topic_budget(case: Case, detector_results: DetectorResults) -> None:
    verify(case, detector_results)


@pytest.mark.parametrize("case", BROKER_CASES, ids=lambda c: c.name)
def test_broker_partition_budget(case: Case, detector_results: DetectorResults) -> None:
    """A cluster-level finding: group empty, the case's name is its cluster."""
    candidates = [
        c
        for c in detector_results.result.candidates
        if c.cluster == case.name and c.kind == case.kind
    ]
    assert all(c.group == "" for c in candidates), "no application is the subject"
    at_time = [c for c in candidates if c.t == case.when]
    as_group = [
        type(c)(**{**{f: getattr(c, f) for f in c.__dataclass_fields__}, "group": case.name})
        for c in at_time
    ]
    assert found(as_group, case) == set(case.expect), (
        f"{case.name}: {case.why}\n  found: {[(c.severity, c.subject) for c in at_time]}"
    )
    if case.check is not None:
        case.check(at_time)


def _judged_at(results: DetectorResults, group: str, kind: str = KIND) -> set[float]:
    return {c.t - T0 for c in results.coverage[group] if c.kind == kind}


def test_an_application_under_budget_is_judged_so_an_open_finding_can_close(
    detector_results: DetectorResults,
) -> None:
    assert float(UNTIL) in _judged_at(detector_results, "budget-within")
    assert float(UNTIL) in _judged_at(detector_results, "budget-shrunk")


def test_without_every_topic_in_view_nothing_is_judged(
    detector_results: DetectorResults,
) -> None:
    assert _judged_at(detector_results, "budget-sidecar-view") == set()
    assert _judged_at(detector_results, "budget-plain-consumer") == set()
    sidecar = [c for c in detector_results.coverage[""] if c.cluster == "brokers-sidecar"]
    assert sidecar == []


def test_brokers_are_judged_once_per_poll_whatever_the_number_of_groups(
    detector_results: DetectorResults,
) -> None:
    judged = [c.t for c in detector_results.coverage[""] if c.cluster == "brokers-over"]
    assert len(judged) == len(set(judged)) == UNTIL // 10 + 1
    held = [
        c.t
        for c in detector_results.result.candidates
        if c.cluster == "brokers-over" and c.t == T0 + UNTIL
    ]
    assert len(held) == 1
