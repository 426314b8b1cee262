"""Which snapshots of a micro-batch are judged: table-driven, each case says why."""

from dataclasses import dataclass, field

import pytest

from agent.aggregation.judging import Judging, snapshots_to_judge
from agent.aggregation.parse import SnapshotKey

HORIZON = 1000.0


def poll(t: float, group: str = "orders", agent: str = "a1") -> SnapshotKey:
    return ("prod", group, agent, t)


@dataclass(frozen=True)
class Case:
    name: str
    why: str
    snapshots: list[SnapshotKey]
    newest_per_series: int
    expect: Judging
    evaluated_until: dict[tuple[str, str, str], float] = field(default_factory=dict)


CASES = [
    Case(
        "all-by-default",
        "0 judges every new poll: the contract replay equivalence rests on",
        [poll(1010), poll(1020), poll(1030)],
        0,
        Judging([poll(1010), poll(1020), poll(1030)], late=0, skipped=0),
    ),
    Case(
        "newest-of-a-job-behind",
        "a batch carrying four polls of a group with a limit of 2 judges the newest two",
        [poll(1010), poll(1040), poll(1020), poll(1030)],
        2,
        Judging([poll(1040), poll(1030)], late=0, skipped=2),
    ),
    Case(
        "per-series",
        "the limit counts per group and per agent: one busy series takes nothing from another",
        [poll(1010), poll(1020), poll(1010, "payments"), poll(1010, agent="a2")],
        1,
        Judging([poll(1020), poll(1010, "payments"), poll(1010, agent="a2")], late=0, skipped=1),
    ),
    Case(
        "within-the-limit",
        "a job that keeps up carries one or two polls a group: nothing is skipped",
        [poll(1010), poll(1020)],
        2,
        Judging([poll(1010), poll(1020)], late=0, skipped=0),
    ),
    Case(
        "late-not-skipped",
        "older than the horizon is late, counted as late only, never judged",
        [poll(990), poll(1010), poll(1020)],
        1,
        Judging([poll(1020)], late=1, skipped=1),
    ),
    Case(
        "already-judged",
        "a poll its series was judged at (or after) is a repeat: neither judged nor skipped",
        [poll(1010), poll(1020), poll(1030)],
        1,
        Judging([poll(1030)], late=0, skipped=1),
        evaluated_until={("prod", "orders", "a1"): 1010.0},
    ),
    Case(
        "nothing-new",
        "every poll already judged: an empty evaluation",
        [poll(1010)],
        1,
        Judging([], late=0, skipped=0),
        evaluated_until={("prod", "orders", "a1"): 1010.0},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_snapshots_to_judge(case: Case) -> None:
    judging = snapshots_to_judge(
        case.snapshots,
        horizon=HORIZON,
        evaluated_until=case.evaluated_until,
        newest_per_series=case.newest_per_series,
    )
    assert judging == case.expect, case.why
