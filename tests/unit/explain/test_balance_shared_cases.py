"""ksmon explain's balance advice against the cases the Java task assignor also reads, so
that both mean the same by "balanced" (tests/data/balance-cases.json says what each proves)."""

import json
from pathlib import Path
from typing import Any

import pytest

from agent.explain.balance import balance

CASES = json.loads((Path(__file__).parents[2] / "data" / "balance-cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_balance_meets_the_shared_case(case: dict[str, Any]) -> None:
    member_instance = {
        f"{instance}-{n}": instance
        for instance, threads in case["instances"].items()
        for n in range(threads)
    }
    current = {task: f"{instance}-0" for task, instance in case["current"].items()}

    advice = balance(case["tasks"], member_instance, current)

    assert advice.after_instance_max == pytest.approx(case["expect_busiest_instance"])
    assert len(advice.moves) <= case["max_moves"]
    assert sorted(advice.assignment) == sorted(case["tasks"])
