"""The one assertion every detector case makes."""

from tests.unit.aggregation.cases import Case, found
from tests.unit.aggregation.conftest import DetectorResults


def verify(case: Case, results: DetectorResults) -> None:
    candidates = results.by_group.get(case.name, [])
    at_time = [c for c in candidates if c.kind == case.kind and c.t == case.when]
    assert found(candidates, case) == set(case.expect), (
        f"{case.name}: {case.why}\n  found: {[(c.severity, c.subject) for c in at_time]}"
    )
    if case.check is not None:
        case.check(at_time)
