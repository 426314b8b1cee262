"""Load-aware rebalancing advice: where a group's active tasks would go to balance load
(records/s), not task count, under Kafka Streams' rules.

Kafka Streams' own assignors balance task *counts* (with stickiness and, for stateful
tasks, the state already on each instance); two hot tasks can land on one thread and stay
there. This computes the assignment that a person (or a custom ``TaskAssignor``, KIP-924)
could aim for instead:

* every active task on exactly one member (stream thread); instances and threads as
  they are now (the advice never adds capacity);
* standby replicas apart from their active: a standby on the instance its active moves
  to is swapped back to where the active was (a promotion, no restore; the instance the
  active leaves held no copy of it, so the swap always fits);
* the objective: first the best balance, the lowest busiest-instance load and then
  busiest-thread load; then, among the assignments within ``TOLERANCE`` of both, the
  fewest moved tasks (each move costs a restore unless a standby is promoted; rates
  measured over seconds differ by more than that anyway, so a move that gains 1 % is
  noise, not advice).

Small groups are solved exactly (branch and bound over tasks in decreasing load, which
``tests/unit/explain/test_balance.py`` checks against enumerating every assignment);
larger ones by greedy placement (largest task first, onto the place that keeps the
balance best) then single moves and swaps while they improve it, then moves taken back
while the balance stays within the tolerance; the advice says it is not proven optimal
then. Pure: loads and members in, a plan out.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

# Beyond this many assignments to consider, the exact search gives way to the heuristic.
EXACT_SEARCH_LIMIT = 200_000
# How far above the best balance an assignment may be and still be preferred for moving
# fewer tasks.
TOLERANCE = 0.05


@dataclass(frozen=True, slots=True)
class Move:
    task: str
    load: float
    from_member: str
    to_member: str
    promotes_standby: bool = False  # the target instance holds a standby: no restore


@dataclass(frozen=True, slots=True)
class BalanceAdvice:
    assignment: Mapping[str, str]  # task -> member
    moves: tuple[Move, ...]
    before_instance_max: float
    after_instance_max: float
    before_member_max: float
    after_member_max: float
    # Standby copies the moves displace: (task, from instance, to instance).
    standby_moves: tuple[tuple[str, str, str], ...] = ()
    exact: bool = True  # False: the heuristic's answer, not proven optimal
    objective: tuple[float, float, int] = field(default=(0.0, 0.0, 0), compare=False)


def balance(
    loads: Mapping[str, float],
    member_instance: Mapping[str, str],
    current: Mapping[str, str],
    standbys: Mapping[str, Sequence[str]] | None = None,
) -> BalanceAdvice:
    """The balanced assignment of ``loads`` (task -> records/s) over the members of
    ``member_instance`` (member -> its instance), starting from ``current`` (task ->
    member); ``standbys``: task -> instances holding a standby copy.

    >>> advice = balance({"0_0": 90, "0_1": 80, "0_2": 5, "0_3": 5},
    ...                  {"a1": "A", "b1": "B"},
    ...                  {"0_0": "a1", "0_1": "a1", "0_2": "b1", "0_3": "b1"})
    >>> advice.before_instance_max, advice.after_instance_max
    (170.0, 90.0)
    >>> [(m.task, m.to_member) for m in advice.moves]
    [('0_1', 'b1')]
    """
    members = sorted(member_instance)
    if not members:
        raise ValueError("no members to assign tasks to")
    tasks = sorted(loads, key=lambda t: (-loads[t], t))
    unknown = sorted({m for m in current.values() if m not in member_instance})
    if unknown:
        raise ValueError(f"tasks are held by members not listed: {', '.join(unknown)}")
    problem = _Problem(loads, member_instance, current, tasks, members)
    before = problem.loads_of(problem.as_is())
    if len(members) ** len(tasks) <= EXACT_SEARCH_LIMIT:
        balanced = problem.search(problem.balance_key)
        caps = problem.caps(balanced)
        assignment, exact = problem.search(problem.moves_key, caps), True
    else:
        # From the better of the greedy placement and the assignment as it is.
        start = min(problem.greedy(), problem.as_is(), key=problem.objective)
        balanced = problem.improve(start)
        assignment, exact = problem.fewer_moves(balanced, problem.caps(balanced)), False
    after = problem.loads_of(assignment)
    moves = tuple(
        Move(
            task,
            float(loads[task]),
            current[task],
            member,
            member_instance[member] in (standbys or {}).get(task, ()),
        )
        for task, member in sorted(assignment.items())
        if task in current and current[task] != member
    )
    return BalanceAdvice(
        assignment=assignment,
        moves=moves,
        before_instance_max=before[0],
        after_instance_max=after[0],
        before_member_max=before[1],
        after_member_max=after[1],
        # A standby where its active moves goes where the active was.
        standby_moves=tuple(
            (m.task, member_instance[m.to_member], member_instance[m.from_member])
            for m in moves
            if m.promotes_standby
        ),
        exact=exact,
        objective=problem.objective(assignment),
    )


class _Problem:
    def __init__(
        self,
        loads: Mapping[str, float],
        member_instance: Mapping[str, str],
        current: Mapping[str, str],
        tasks: list[str],
        members: list[str],
    ) -> None:
        self.loads, self.member_instance, self.current = loads, member_instance, current
        self.tasks, self.members = tasks, members
        self.instances = sorted(set(member_instance.values()))

    def loads_of(self, assignment: Mapping[str, str]) -> tuple[float, float]:
        """(busiest instance's load, busiest member's load)."""
        by_member = dict.fromkeys(self.members, 0.0)
        for task, member in assignment.items():
            by_member[member] += float(self.loads[task])
        by_instance = dict.fromkeys(self.instances, 0.0)
        for member, load in by_member.items():
            by_instance[self.member_instance[member]] += load
        return max(by_instance.values()), max(by_member.values())

    def objective(self, assignment: Mapping[str, str]) -> tuple[float, float, int]:
        """(busiest instance, busiest member, moved tasks)."""
        moved = sum(1 for t, m in assignment.items() if self.current.get(t, m) != m)
        instance_max, member_max = self.loads_of(assignment)
        return (_rounded(instance_max), _rounded(member_max), moved)

    @staticmethod
    def balance_key(instance_max: float, member_max: float, moved: int) -> tuple[float, ...]:
        return (instance_max, member_max, moved)

    @staticmethod
    def moves_key(instance_max: float, member_max: float, moved: int) -> tuple[float, ...]:
        return (moved, instance_max, member_max)

    def search(
        self,
        key: Callable[[float, float, int], tuple[float, ...]],
        caps: tuple[float, float] | None = None,
    ) -> dict[str, str]:
        """Branch and bound: tasks in decreasing load, each onto every member, for the
        lowest ``key``; with ``caps``, only assignments whose maxima stay within them.
        Every part of a key only grows as tasks are added, so a branch whose partial key
        is already no better than the best found is cut."""
        best: list[tuple[tuple[float, ...], dict[str, str]]] = []
        by_member = dict.fromkeys(self.members, 0.0)
        by_instance = dict.fromkeys(self.instances, 0.0)
        chosen: dict[str, str] = {}

        def search(index: int, moved: int) -> None:
            instance_max = _rounded(max(by_instance.values()))
            member_max = _rounded(max(by_member.values()))
            if caps is not None and (instance_max > caps[0] or member_max > caps[1]):
                return
            bound = key(instance_max, member_max, moved)
            if best and bound >= best[0][0]:
                return  # no completion can do better than the best found
            if index == len(self.tasks):
                best[:] = [(bound, dict(chosen))]
                return
            task = self.tasks[index]
            load = float(self.loads[task])
            # The task's current member first: ties keep it where it is.
            for member in sorted(self.members, key=lambda m: m != self.current.get(task)):
                instance = self.member_instance[member]
                by_member[member] += load
                by_instance[instance] += load
                chosen[task] = member
                search(index + 1, moved + (self.current.get(task, member) != member))
                by_member[member] -= load
                by_instance[instance] -= load
                del chosen[task]

        search(0, 0)
        return best[0][1]

    def caps(self, balanced: Mapping[str, str]) -> tuple[float, float]:
        """The maxima an assignment may reach to count as balanced as ``balanced``."""
        instance_max, member_max, _ = self.objective(balanced)
        return (_rounded(instance_max * (1 + TOLERANCE)), _rounded(member_max * (1 + TOLERANCE)))

    def as_is(self) -> dict[str, str]:
        """The current assignment (a task no member holds goes to the first member)."""
        return {t: self.current.get(t, self.members[0]) for t in self.tasks}

    def within(self, assignment: Mapping[str, str], caps: tuple[float, float]) -> bool:
        instance_max, member_max, _ = self.objective(assignment)
        return instance_max <= caps[0] and member_max <= caps[1]

    def fewer_moves(self, assignment: dict[str, str], caps: tuple[float, float]) -> dict[str, str]:
        """No move if the assignment as it is stays within ``caps``; else moves taken
        back, the smallest task first, while the maxima stay within them."""
        if self.within(self.as_is(), caps):
            return self.as_is()
        for task in sorted(self.tasks, key=lambda t: (self.loads[t], t)):
            home = self.current.get(task)
            if home is None or assignment[task] == home:
                continue
            reverted = {**assignment, task: home}
            if self.within(reverted, caps):
                assignment = reverted
        return assignment

    def greedy(self) -> dict[str, str]:
        """Largest task first, onto the member whose instance, then itself, ends up least
        loaded (the current member first among equals)."""
        by_member = dict.fromkeys(self.members, 0.0)
        by_instance = dict.fromkeys(self.instances, 0.0)
        assignment: dict[str, str] = {}
        for task in self.tasks:
            load = float(self.loads[task])
            member = min(
                self.members,
                key=lambda m: (
                    _rounded(by_instance[self.member_instance[m]] + load),
                    _rounded(by_member[m] + load),
                    m != self.current.get(task),
                    m,
                ),
            )
            assignment[task] = member
            by_member[member] += load
            by_instance[self.member_instance[member]] += load
        return assignment

    def improve(self, assignment: dict[str, str]) -> dict[str, str]:
        """Local search on the bottleneck, the best step each round while one improves:
        a task of the busiest instance or member moved to any other member, or swapped
        with a task of the least loaded instance. Only such steps can lower the maxima,
        and each is judged from the per-member and per-instance loads, not from scratch,
        so a group of hundreds of tasks takes seconds."""
        assignment = dict(assignment)
        by_member = dict.fromkeys(self.members, 0.0)
        for task, member in assignment.items():
            by_member[member] += float(self.loads[task])
        by_instance = dict.fromkeys(self.instances, 0.0)
        for member, load in by_member.items():
            by_instance[self.member_instance[member]] += load
        moved = sum(1 for t, m in assignment.items() if self.current.get(t, m) != m)

        def after(changes: dict[str, float], steps: int) -> tuple[float, float, int]:
            """The objective once member loads change by ``changes``."""
            members = {m: by_member[m] + d for m, d in changes.items()}
            instances: dict[str, float] = {}
            for m, d in changes.items():
                i = self.member_instance[m]
                instances[i] = instances.get(i, by_instance[i]) + d
            return (
                _rounded(max(instances.get(i, v) for i, v in by_instance.items())),
                _rounded(max(members.get(m, v) for m, v in by_member.items())),
                moved + steps,
            )

        def moves_of(task: str, source: str, target: str) -> int:
            home = self.current.get(task)
            return (target != home) - (source != home) if home is not None else 0

        best = after({}, 0)
        while True:
            busiest_instance = max(by_instance, key=lambda i: by_instance[i])
            busiest_member = max(by_member, key=lambda m: by_member[m])
            idlest_instance = min(by_instance, key=lambda i: by_instance[i])
            hot = [
                t
                for t, m in assignment.items()
                if self.member_instance[m] == busiest_instance or m == busiest_member
            ]
            cold = [t for t, m in assignment.items() if self.member_instance[m] == idlest_instance]
            step: tuple[tuple[float, float, int], dict[str, str]] | None = None
            for task in hot:
                source, load = assignment[task], float(self.loads[task])
                for target in self.members:
                    if target == source:
                        continue
                    score = after({source: -load, target: load}, moves_of(task, source, target))
                    if score < best and (step is None or score < step[0]):
                        step = (score, {task: target})
                for other in cold:
                    target, other_load = assignment[other], float(self.loads[other])
                    if target == source:
                        continue
                    delta = other_load - load
                    steps = moves_of(task, source, target) + moves_of(other, target, source)
                    score = after({source: delta, target: -delta}, steps)
                    if score < best and (step is None or score < step[0]):
                        step = (score, {task: target, other: source})
            if step is None:
                return assignment
            best, changed = step
            for task, target in changed.items():
                source, load = assignment[task], float(self.loads[task])
                by_member[source] -= load
                by_member[target] += load
                by_instance[self.member_instance[source]] -= load
                by_instance[self.member_instance[target]] += load
                moved += moves_of(task, source, target)
                assignment[task] = target


def _rounded(value: float) -> float:
    # Loads are sums of measured rates: compare them at a precision that ignores the
    # order they were added in.
    return round(value, 6)
