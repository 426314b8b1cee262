"""Rebalancing advice: the balanced assignment against a brute-force optimum on generated
small groups, the heuristic's guarantees on larger ones, and the standby rules."""

import itertools
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.explain.balance import EXACT_SEARCH_LIMIT, TOLERANCE, balance


def objective(
    assignment: Mapping[str, str],
    loads: Mapping[str, float],
    member_instance: Mapping[str, str],
    current: Mapping[str, str],
) -> tuple[float, float, int]:
    """(busiest instance, busiest member, moved tasks), computed the plain way."""
    per_member = dict.fromkeys(member_instance, 0.0)
    for task, member in assignment.items():
        per_member[member] += loads[task]
    per_instance: dict[str, float] = {}
    for member, load in per_member.items():
        per_instance[member_instance[member]] = (
            per_instance.get(member_instance[member], 0.0) + load
        )
    moved = sum(1 for t, m in assignment.items() if current[t] != m)
    return (round(max(per_instance.values()), 6), round(max(per_member.values()), 6), moved)


def brute_force(
    loads: Mapping[str, float], member_instance: Mapping[str, str], current: Mapping[str, str]
) -> tuple[float, float, int]:
    """The advice's objective, by enumerating every assignment: the best balance (busiest
    instance, then busiest member); then, within TOLERANCE of both, the fewest moves."""
    tasks, members = sorted(loads), sorted(member_instance)
    every = [
        objective(dict(zip(tasks, choice, strict=True)), loads, member_instance, current)
        for choice in itertools.product(members, repeat=len(tasks))
    ]
    instance_best, member_best, _ = min(every)
    within = [
        o
        for o in every
        if o[0] <= round(instance_best * (1 + TOLERANCE), 6)
        and o[1] <= round(member_best * (1 + TOLERANCE), 6)
    ]
    return min(within, key=lambda o: (o[2], o[0], o[1]))


@st.composite
def small_groups(draw: st.DrawFn) -> tuple[dict[str, float], dict[str, str], dict[str, str]]:
    """Up to 3 instances of up to 2 threads, up to 6 tasks; whole-number loads, with hot
    ones, so ties (the moves tie-break) are common."""
    instances = draw(st.integers(1, 3))
    member_instance = {
        f"i{i}-t{t}": f"i{i}" for i in range(instances) for t in range(draw(st.integers(1, 2)))
    }
    members = sorted(member_instance)
    count = draw(st.integers(1, 6))
    loads = {f"0_{n}": float(draw(st.sampled_from([0, 1, 5, 10, 50, 90]))) for n in range(count)}
    current = {task: draw(st.sampled_from(members)) for task in loads}
    return loads, member_instance, current


@settings(max_examples=300, deadline=None)
@given(small_groups())
def test_small_groups_get_the_brute_force_optimum(
    group: tuple[dict[str, float], dict[str, str], dict[str, str]],
) -> None:
    loads, member_instance, current = group
    advice = balance(loads, member_instance, current)
    assert advice.exact
    assert sorted(advice.assignment) == sorted(loads), "every task exactly once"
    found = objective(advice.assignment, loads, member_instance, current)
    assert found == brute_force(loads, member_instance, current)
    assert found == advice.objective
    assert len(advice.moves) == found[2]


@st.composite
def large_groups(draw: st.DrawFn) -> tuple[dict[str, float], dict[str, str], dict[str, str]]:
    """Beyond the exact search: 4-6 instances of 2-4 threads, 30-60 tasks."""
    member_instance = {
        f"i{i}-t{t}": f"i{i}"
        for i in range(draw(st.integers(4, 6)))
        for t in range(draw(st.integers(2, 4)))
    }
    members = sorted(member_instance)
    count = draw(st.integers(30, 60))
    loads = {
        f"{n % 2}_{n}": draw(st.floats(0, 200, allow_nan=False).map(lambda x: round(x, 1)))
        for n in range(count)
    }
    current = {task: draw(st.sampled_from(members)) for task in loads}
    return loads, member_instance, current


@settings(max_examples=25, deadline=None)
@given(large_groups())
def test_large_groups_are_never_made_worse_and_reach_the_lower_bounds_closely(
    group: tuple[dict[str, float], dict[str, str], dict[str, str]],
) -> None:
    loads, member_instance, current = group
    assert len(member_instance) ** len(loads) > EXACT_SEARCH_LIMIT
    advice = balance(loads, member_instance, current)
    assert not advice.exact
    assert sorted(advice.assignment) == sorted(loads)
    if advice.moves:
        before = (advice.before_instance_max, advice.before_member_max)
        after = (advice.after_instance_max, advice.after_member_max)
        assert after[0] <= before[0] * (1 + TOLERANCE) + 1e-6, "never a busier instance"
        assert after[0] < before[0] or after[1] < before[1], "moves only where they help"
    else:
        assert advice.assignment == current, "no move: the assignment as it is"
    # No plan beats the biggest task, nor the total spread evenly over the instances.
    instances = len(set(member_instance.values()))
    largest = max(loads.values())
    lower = max(largest, sum(loads.values()) / instances)
    # Greedy largest-first placement is within one task of the even spread.
    assert advice.after_instance_max <= lower + largest + 1e-6


def test_two_hot_tasks_on_one_thread_are_split_over_the_instances() -> None:
    loads = {"0_0": 90.0, "0_1": 80.0, "0_2": 5.0, "0_3": 5.0}
    members = {"A-1": "A", "A-2": "A", "B-1": "B", "B-2": "B"}
    current = {"0_0": "A-1", "0_1": "A-1", "0_2": "B-1", "0_3": "B-2"}
    advice = balance(loads, members, current)
    assert (advice.before_instance_max, advice.after_instance_max) == (170.0, 90.0)
    assert (advice.before_member_max, advice.after_member_max) == (170.0, 90.0)
    assert len(advice.moves) == 1, "one move is enough: the fewest moves win a tie"


def test_a_balanced_group_is_left_as_it_is() -> None:
    loads = {"0_0": 10.0, "0_1": 10.0}
    members = {"A-1": "A", "B-1": "B"}
    current = {"0_0": "A-1", "0_1": "B-1"}
    advice = balance(loads, members, current)
    assert advice.moves == ()
    assert advice.after_instance_max == advice.before_instance_max == 10.0


def test_moving_onto_a_standby_promotes_it_and_the_standby_takes_the_old_place() -> None:
    loads = {"0_0": 90.0, "0_1": 80.0}
    members = {"A-1": "A", "B-1": "B"}
    current = {"0_0": "A-1", "0_1": "A-1"}
    advice = balance(loads, members, current, standbys={"0_1": ["B"], "0_0": ["B"]})
    (move,) = advice.moves
    assert move.to_member == "B-1"
    assert move.promotes_standby, "B holds a standby of the task: no restore"
    assert advice.standby_moves == ((move.task, "B", "A"),), "apart from its active again"


def test_tasks_held_by_unknown_members_are_refused_naming_them() -> None:
    with pytest.raises(ValueError, match="ghost"):
        balance({"0_0": 1.0}, {"A-1": "A"}, {"0_0": "ghost"})
