"""Replay's fast paths give exactly what the plain way gives (issue 24: a replay judges
every poll of every group, so the rules and the decoding take shortcuts where a window
allows). Each shortcut against the way it short-cuts, on random windows and records:

* the window's look-backs found by halves, against walking back from now;
* a steady loop window (no rebalance at any poll), against counting every poll;
* the newest poll's lag floors, against the sliding floors of the whole history;
* partition rates from a window's oldest poll at once, against looking each up;
* the loads from a plan of the members, against the original walk over them;
* what a rule works out once for the polls that share its inputs, anew when they differ.
"""

import random
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.aggregation.judging.facts import (
    Member,
    Partition,
    Poll,
    Subtopology,
    Task,
    Topic,
    TopicPartition,
)
from agent.aggregation.judging.rules import (
    copartition_mismatch,
    rebalance_loop,
    restore_stalled,
    threads_fewer_than_tasks,
)
from agent.aggregation.judging.rules import rates as rates_module
from agent.aggregation.judging.rules.rates import (
    InstanceLoad,
    MemberLoad,
    Rates,
    UnitRate,
    compute_rates,
    partition_rates,
)
from agent.aggregation.judging.window import SeriesWindow, _ms

T0 = 1_700_000_000.0
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
seeds = st.integers(0, 2**32)


def _rnd(seed: int) -> random.Random:
    return random.Random(seed)


# -- polls --------------------------------------------------------------------------------


def _member(rnd: random.Random, i: int, *, decoded: bool = True) -> Member:
    tasks = tuple(
        Task(f"{s}_{n}", tuple(TopicPartition(f"t{s}", n) for _ in range(rnd.randint(0, 2))))
        for s in range(rnd.randint(0, 2))
        for n in range(rnd.randint(0, 3))
    )
    if tasks and rnd.random() < 0.2:
        tasks += (tasks[0]._replace(partitions=(TopicPartition("t1", 0),)),)  # one id twice
    return Member(
        member_id=f"m-{i}",
        client_id=f"c-{i}",
        host="h",
        instance_id=None,
        process=rnd.choice([None, "p1", "p2"]) if decoded else None,
        thread=rnd.choice([None, 1, 2]),
        decoded=decoded,
        broker_assigned=False,
        active=tasks if decoded else (),
        standby=(),
        warmup=(),
        offset_sums=(),
        assigned=tuple(TopicPartition("t0", n) for n in range(rnd.randint(0, 3))),
        next_rebalance_ms=None,
        endpoint=None,
        assignment_version=None,
        subscription_bytes=0,
        assignment_bytes=0,
    )


def _poll(
    t: float,
    *,
    state: str = "Stable",
    members: tuple[Member, ...] = (),
    partitions: tuple[Partition, ...] | None = (),
    generation: int | None = None,
    group_epoch: int | None = None,
    rebalances: tuple[tuple[int, float], ...] = (),
    is_streams: bool = True,
    lag: tuple[int, int] = (0, 0),
) -> Poll:
    return Poll(
        t=t,
        sequence=0,
        agent_mode="central",
        state=state,
        group_type="classic",
        is_streams=is_streams,
        generation=generation,
        group_epoch=group_epoch,
        rebalances=rebalances,
        members=members,
        partitions=partitions,
        topics=(),
        changelog_ends=None,
        subtopologies=(),
        max_message_bytes=None,
        cluster_totals=None,
        brokers=(),
        sidecar=None,
        errors=(),
        lag_total=lag[0],
        lag_partitions=lag[1],
    )


def _times(rnd: random.Random, count: int) -> list[float]:
    """Poll times, in order: mostly 10 s apart, some odd gaps and sub-millisecond ones."""
    t, times = T0, []
    for _ in range(count):
        t += rnd.choice([10.0] * 8 + [0.0004, 0.001, 9.9995, 35.0, 0.25])
        times.append(t)
    return times


# -- look-backs ---------------------------------------------------------------------------


def _walked_back(polls: Sequence[Poll], seconds: float, *, strictly: bool) -> Sequence[Poll]:
    start = _ms(polls[-1].t) - round(seconds * 1000)
    i = len(polls)
    while i > 0 and (_ms(polls[i - 1].t) > start if strictly else _ms(polls[i - 1].t) >= start):
        i -= 1
    return polls[i:]


@SETTINGS
@given(seeds)
def test_look_backs_by_halves_walk_back_as_far(seed: int) -> None:
    rnd = _rnd(seed)
    window = SeriesWindow([_poll(t) for t in _times(rnd, rnd.randint(1, 60))])
    for seconds in (0.0, 0.001, 0.25, 9.9995, 10.0, 60.0, 300.0, 1e6):
        assert window.looking_back(seconds) == _walked_back(window.polls, seconds, strictly=False)
        assert window.strictly_after(seconds) == _walked_back(window.polls, seconds, strictly=True)


# -- rebalance_loop: steady windows -------------------------------------------------------


@SETTINGS
@given(seeds)
def test_a_steady_window_counts_as_every_poll_counted(seed: int) -> None:
    rnd = _rnd(seed)
    shared = tuple(_member(rnd, i) for i in range(rnd.randint(0, 3)))
    generation = rnd.choice([None, 4])
    epoch = rnd.choice([None, 7])
    polls = []
    for t in _times(rnd, rnd.randint(1, 40)):
        odd = rnd.random() < 0.05
        polls.append(
            _poll(
                t,
                state=rnd.choice(["PreparingRebalance", "Empty"]) if odd else "Stable",
                # Members replaced (or an equal tuple, not the shared one) between polls.
                members=rnd.choice([(*shared, _member(rnd, 9)), tuple(shared)])
                if rnd.random() < 0.05
                else shared,
                generation=None if generation is None else generation + odd,
                group_epoch=epoch,
                rebalances=((5, t - 1.0),) if rnd.random() < 0.1 else (),
            )
        )
    first = rnd.randrange(len(polls))
    forming = rebalance_loop.formation_end(polls, 600.0)
    fast = rebalance_loop.rebalance_events(polls, first, forming)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rebalance_loop, "_steady", lambda *_: None)
        assert fast == rebalance_loop.rebalance_events(polls, first, forming)


# -- threads_fewer_than_tasks: the newest floors -----------------------------------------


@SETTINGS
@given(seeds, st.sampled_from([60.0, 300.0, 299.9995]))
def test_the_newest_floors_are_the_sliding_floors_first(seed: int, seconds: float) -> None:
    rnd = _rnd(seed)
    polls = [
        _poll(t, lag=(rnd.randint(0, 50), rnd.choice([0, 1, 3])))
        for t in _times(rnd, rnd.randint(1, 60))
    ]
    history = threads_fewer_than_tasks._LagHistory(polls, seconds)
    newest = threads_fewer_than_tasks._newest_floors(polls, seconds)
    assert newest == next(history.floors_newest_first())


# -- rates --------------------------------------------------------------------------------


def _partitions(rnd: random.Random, keys: list[tuple[str, int]], t: float) -> tuple[Partition, ...]:
    """A poll's rows of ``keys``: log-end offsets growing with time (mostly), the k-th key
    a thousand records apart from the one before it (a key listed twice reads otherwise
    the second time); now and then a row missing, an offset unknown, the order shuffled."""
    elapsed = int(t - T0)
    rows = [
        Partition(
            topic,
            n,
            None if rnd.random() < 0.03 else 1000 * k + elapsed * rnd.choice([0, 3, 3, 3, 7]),
            None,
            rnd.choice([None, 0, 4]),
            None,
        )
        for k, (topic, n) in enumerate(keys)
        if rnd.random() > 0.03
    ]
    if rnd.random() < 0.05:
        rnd.shuffle(rows)
    return tuple(rows)


@SETTINGS
@given(seeds, st.sampled_from([0.0, 10.0, 60.0]))
def test_rates_at_once_are_the_rates_looked_up(seed: int, seconds: float) -> None:
    rnd = _rnd(seed)
    keys = [("in", n) for n in range(rnd.randint(1, 6))] + [("rep", 0)]
    if rnd.random() < 0.2:
        keys.append(keys[0])  # listed twice, with other offsets: read once, the first
    polls = [
        _poll(t, partitions=None if rnd.random() < 0.05 else _partitions(rnd, keys, t))
        for t in _times(rnd, rnd.randint(1, 12))
    ]
    now = polls[-1]
    if now.partitions is None:
        polls[-1] = now._replace(partitions=_partitions(rnd, keys, now.t))
    window = SeriesWindow(polls)
    older = window.looking_back(seconds)[:-1]
    expected = rates_module._rates_by_key(window.t, window.now.partitions or (), older)
    assert partition_rates(window, seconds) == expected
    assert [type(r.rate) for r in partition_rates(window, seconds)] == [
        type(r.rate) for r in expected
    ]


def _walked_loads(window: SeriesWindow, seconds: float) -> Rates:
    """The loads as ``compute_rates`` worked them out before its plan of the members."""
    now = window.now
    partitions = partition_rates(window, seconds)
    rate_by = {(p.topic, p.partition): p.rate for p in partitions}
    units: list[UnitRate] = []
    members: list[MemberLoad] = []
    for m in now.members:
        held: list[UnitRate] = []
        if m.decoded:
            for task in m.active:
                if task.partitions:
                    rate = 0.0
                    for topic, n in task.partitions:
                        rate += rate_by.get((topic, n)) or 0.0
                    held.append(UnitRate(m, m.process, task.task, "task", rate, task.partitions))
        elif not now.is_streams:
            for tp in m.assigned:
                rate = 0.0 + (rate_by.get((tp.topic, tp.partition)) or 0.0)
                unit = f"{tp.topic}-{tp.partition}"
                held.append(UnitRate(m, m.client_id, unit, "partition", rate, (tp,)))
        units += held
        if m.decoded or not now.is_streams:
            process = m.process if m.process is not None else m.client_id
            load = sum(u.rate for u in held)
            members.append(MemberLoad(m, process, load, len({u.unit for u in held})))
    instances: dict[str, list[MemberLoad]] = {}
    for ml in members:
        instances.setdefault(ml.process, []).append(ml)
    return Rates(
        partitions=partitions,
        units=tuple(units),
        members=tuple(members),
        instances=tuple(
            InstanceLoad(process, sum(ml.load for ml in held), len(held))
            for process, held in sorted(instances.items())
        ),
    )


@SETTINGS
@given(seeds)
def test_loads_from_a_plan_are_the_loads_walked(seed: int) -> None:
    rnd = _rnd(seed)
    keys = [(f"t{s}", n) for s in (0, 1) for n in range(3)]
    members = tuple(_member(rnd, i, decoded=rnd.random() < 0.8) for i in range(rnd.randint(0, 5)))
    streams = rnd.random() < 0.5
    polls = [
        _poll(t, members=members, is_streams=streams, partitions=_partitions(rnd, keys, t))
        for t in _times(rnd, rnd.randint(1, 8))
    ]
    window = SeriesWindow(polls)
    planned, walked = compute_rates(window, 60.0), _walked_loads(window, 60.0)
    assert planned == walked
    assert [type(m.load) for m in planned.members] == [type(m.load) for m in walked.members]


# -- what rules work out once for the polls that share it ------------------------------


def _topic(name: str, partitions: int) -> Topic:
    return Topic(name, partitions, None, True, None, None, None)


def test_a_poll_sharing_members_and_topology_is_assessed_anew_when_a_count_changes() -> None:
    reads = Subtopology("0", "configured", ("a", "b"), (), (), (), (), ())
    base = _poll(T0, members=(_member(_rnd(1), 0),))._replace(subtopologies=(reads,))
    fine = base._replace(topics=(_topic("a", 4), _topic("b", 4)))
    grown = base._replace(t=T0 + 10, topics=(_topic("a", 4), _topic("b", 8)))
    assert copartition_mismatch._assess(fine) == copartition_mismatch._assess_anew(
        fine, {"a": 4, "b": 4}
    )
    mismatched = copartition_mismatch._assess(grown)
    assert mismatched is not None
    assert [r.subtopology for r in mismatched.mismatches] == ["0"]
    assert copartition_mismatch._assess(fine) is not None
    assert not copartition_mismatch._assess(fine).mismatches  # type: ignore[union-attr]


def test_changelog_owners_follow_the_changelogs_listed_at_each_poll() -> None:
    member = _member(_rnd(2), 0)._replace(
        process="p1", active=(Task("0_0", (TopicPartition("in", 0),)),), offset_sums=(("0_0", 5),)
    )
    base = _poll(T0, members=(member,))
    one = base._replace(changelog_ends=(("g-s-changelog", (5,)),))
    none = base._replace(changelog_ends=(("g-s-changelog", ()),))
    owners = restore_stalled.changelog_owners("g", one)
    assert {s: o.topics for s, o in owners.items()} == {"0": ["g-s-changelog"]}
    assert restore_stalled.changelog_owners("g", none) == {}
    assert restore_stalled.changelog_owners("g", one) is owners  # worked out once
