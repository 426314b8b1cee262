"""hot_partitions_colocated: hot units piled on one member or instance."""

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from agent.aggregation.judging.hysteresis import Candidate
from agent.model import MemberInfo, Snapshot
from tests.support.snapshots import partition, plain_member, snapshot, streams_member
from tests.unit.aggregation.cases import Case, Expect, times

KIND = "hot_partitions_colocated"
TOPIC = "in"


def _history(
    group: str,
    members: Sequence[MemberInfo],
    rates: Mapping[int, float],
    partitions: int = 8,
    state: str = "Stable",
    streams: bool = True,
) -> list[Snapshot]:
    """Polls every 10 s for 2 minutes; partition p grows at rates.get(p, 5) records/s."""
    return [
        snapshot(
            group,
            t,
            members=members,
            partitions=[
                partition(TOPIC, p, end=1000 + round(rates.get(p, 5) * (t - 1_700_000_000)))
                for p in range(partitions)
            ],
            state=state,
            streams=streams,
        )
        for t in times(0, 120, 10)
    ]


def _rekeyed_history(group: str, *, draining: bool) -> list[Snapshot]:
    """A re-key then an aggregation: pA's thread holds the aggregation's tasks 1_0 and
    1_1, whose repartition partitions grow at 100 records/s, pB the others (5 records/s)
    and the input's. The input grows at 5 records/s a partition; ``draining``: its lag
    falls by 200 records/s a partition (a backlog drained), else it stays at 10."""
    repartition = f"{group}-agg-repartition"
    rep_rates = {0: 100, 1: 100}
    members = [
        streams_member("pA", 1, {f"1_{p}": [(repartition, p)] for p in (0, 1)}),
        streams_member(
            "pB",
            1,
            {f"1_{p}": [(repartition, p)] for p in (2, 3)} | _tasks(0, 1, 2, 3),
        ),
    ]
    snapshots = []
    for t in times(0, 120, 10):
        s = t - 1_700_000_000
        end = 1000 + round(5 * s)
        lag = 30_000 - round(200 * s) if draining else 10
        partitions = [partition(TOPIC, p, end=end, committed=end - lag) for p in range(4)]
        partitions += [
            partition(repartition, p, end=1000 + round(rep_rates.get(p, 5) * s)) for p in range(4)
        ]
        snapshots.append(snapshot(group, t, members=members, partitions=partitions))
    return snapshots


def _tasks(*partitions: int) -> dict[str, list[tuple[str, int]]]:
    return {f"0_{p}": [(TOPIC, p)] for p in partitions}


def _without_process(member: MemberInfo) -> MemberInfo:
    """A decoded stream thread whose process id is not known (the userData left it empty)."""
    assert member.streams is not None
    return dataclasses.replace(member, streams=dataclasses.replace(member.streams, process_id=""))


def _by_level(candidates: list[Candidate]) -> dict[tuple[str, str | None], Candidate]:
    return {(str(c.evidence["level"]), c.subject.process): c for c in candidates}


def _no_move(reason: str, limited_by: str) -> Callable[[list[Candidate]], None]:
    """A check: pA's findings (member and instance) advise no move, for ``reason``, which
    is about instance ``limited_by`` (or its one thread)."""

    def check(candidates: list[Candidate]) -> None:
        by_level = _by_level(candidates)
        for level in ("member", "instance"):
            found = by_level[level, "pA"]
            assert found.evidence["suggested_move"] is None, found.evidence
            assert found.evidence["no_move_reason"] == reason, found.evidence
            assert "no single move" in found.explanation, found.explanation
            assert "to cut" not in found.explanation, found.explanation
            other = found.evidence["limited_by"]
            assert isinstance(other, dict), found.evidence
            assert other["process"] == limited_by, found.evidence

    return check


def _check_busiest_elsewhere(candidates: list[Candidate]) -> None:
    _no_move("another_is_as_busy", "pB")(candidates)
    by_level = _by_level(candidates)
    for level in ("member", "instance"):
        move = by_level[level, "pB"].evidence["suggested_move"]
        assert isinstance(move, dict)
        assert (move["unit"], move["max_load_before"], move["max_load_after"]) == ("0_3", 70, 60)
        assert by_level[level, "pB"].evidence["no_move_reason"] is None
        assert by_level[level, "pB"].evidence["limited_by"] is None


def _check_processless_target(candidates: list[Candidate]) -> None:
    (found,) = candidates
    move = found.evidence["suggested_move"]
    assert isinstance(move, dict)
    assert move["to_member_id"] == "app-pX-StreamThread-1-consumer-pX1", move
    assert move["to_process"] is None, "its process is not known: no client id in its place"
    assert "move 0_0 to member app-pX-StreamThread-1-consumer " in found.explanation, (
        found.explanation
    )
    assert "instance app-pX" not in found.explanation, found.explanation


def _check_processless_holder(candidates: list[Candidate]) -> None:
    (found,) = candidates
    assert found.evidence["process"] is None, found.evidence
    assert found.explanation.startswith("member app-pX-StreamThread-1-consumer holds 2 hot"), (
        found.explanation
    )


def _check_folded(candidates: list[Candidate]) -> None:
    by_level = _by_level(candidates)
    instance = by_level["instance", "pA"]
    move = instance.evidence["suggested_move"]
    assert isinstance(move, dict), instance.evidence
    assert move["to_process"] == "pB", instance.evidence
    members = instance.evidence["folded_members"]
    assert isinstance(members, list), instance.evidence
    (folded,) = members
    assert isinstance(folded, dict), instance.evidence
    assert (folded["thread"], folded["no_move_reason"]) == (1, "another_is_as_busy"), folded
    assert [u["unit"] for u in folded["hot_units"]] == ["0_0", "0_1"], folded
    assert "thread 1 of instance pA holds 0_0, 0_1, which no move" in instance.explanation
    thread = next(c for c in candidates if c.subject.thread == 2)
    assert isinstance(thread.evidence["suggested_move"], dict), thread.evidence


def _check_move(candidates: list[Candidate]) -> None:
    member = next(c for c in candidates if c.evidence.get("level") == "member")
    move = member.evidence["suggested_move"]
    assert move["to_process"] == "pB", "the only other member is the target"
    assert move["unit"] in {"0_0", "0_1"}, "moving a hot task is what lowers the maximum"
    assert move["max_load_after"] < move["max_load_before"]
    assert [u["unit"] for u in member.evidence["hot_units"]] == ["0_0", "0_1"]
    assert member.evidence["median_partition_rate"] == 5.0


CASES = [
    Case(
        "hot-two-on-one-thread",
        "instance pA's only thread holds both hot tasks while pB holds none: member and "
        "instance level both fire",
        KIND,
        _history(
            "hot-two-on-one-thread",
            [
                streams_member("pA", 1, _tasks(0, 1, 2, 3)),
                streams_member("pB", 1, _tasks(4, 5, 6, 7)),
            ],
            {0: 100, 1: 100},
        ),
        expect=[Expect("warning", "pA", 1), Expect("warning", "pA")],
        check=_check_move,
    ),
    Case(
        "hot-spread-over-instances",
        "each instance holds one hot task: nothing is piled up",
        KIND,
        _history(
            "hot-spread-over-instances",
            [
                streams_member("pA", 1, _tasks(0, 2, 3, 4)),
                streams_member("pB", 1, _tasks(1, 5, 6, 7)),
            ],
            {0: 100, 1: 100},
        ),
    ),
    Case(
        "hot-uniform-load",
        "all partitions carry the same rate, so none is hot",
        KIND,
        _history(
            "hot-uniform-load",
            [
                streams_member("pA", 1, _tasks(0, 1, 2, 3)),
                streams_member("pB", 1, _tasks(4, 5, 6, 7)),
            ],
            dict.fromkeys(range(8), 50.0),
        ),
    ),
    Case(
        "hot-below-min-rate",
        "tasks 0_0 and 0_1 are 4x the median but only 8 records/s, below min_hot_rate (10)",
        KIND,
        _history(
            "hot-below-min-rate",
            [
                streams_member("pA", 1, _tasks(0, 1, 2, 3)),
                streams_member("pB", 1, _tasks(4, 5, 6, 7)),
            ],
            {0: 8, 1: 8, **dict.fromkeys(range(2, 8), 2.0)},
        ),
    ),
    Case(
        "hot-two-threads-one-instance",
        "pA's two threads hold one hot task each (no member has two) while instance pB holds "
        "none: only the instance level fires",
        KIND,
        _history(
            "hot-two-threads-one-instance",
            [
                streams_member("pA", 1, _tasks(0, 2)),
                streams_member("pA", 2, _tasks(1, 3)),
                streams_member("pB", 1, _tasks(4, 5)),
                streams_member("pB", 2, _tasks(6, 7)),
            ],
            {0: 100, 1: 100},
        ),
        expect=[Expect("warning", "pA")],
    ),
    Case(
        "hot-everyone-has-some",
        "both members hold two hot tasks: no member holds none, so moving cannot help",
        KIND,
        _history(
            "hot-everyone-has-some",
            [
                streams_member("pA", 1, _tasks(0, 1, 2, 3)),
                streams_member("pB", 1, _tasks(4, 5, 6, 7)),
            ],
            {0: 100, 1: 100, 4: 100, 5: 100},
            partitions=12,
        ),
    ),
    Case(
        "hot-plain-consumer-group",
        "outside Kafka Streams partitions are the units: consumer c1 holds both hot "
        "partitions, c2 none; its client id stands for the instance",
        KIND,
        _history(
            "hot-plain-consumer-group",
            [
                plain_member("c1", [(TOPIC, p) for p in (0, 1, 2, 3)]),
                plain_member("c2", [(TOPIC, p) for p in (4, 5, 6, 7)]),
            ],
            {0: 100, 1: 100},
            streams=False,
        ),
        expect=[Expect("warning", "c1")],
    ),
    Case(
        "hot-while-rebalancing",
        "mid-rebalance the members come undecoded: the rule cannot judge and stays silent",
        KIND,
        _history(
            "hot-while-rebalancing",
            [
                MemberInfo(
                    member_id="m1", client_id="app-pA-StreamThread-1-consumer", client_host="h"
                ),
                MemberInfo(
                    member_id="m2", client_id="app-pB-StreamThread-1-consumer", client_host="h"
                ),
            ],
            {0: 100, 1: 100},
            state="PreparingRebalance",
        ),
    ),
    # Issue 25, "advice that helps nobody": a move that leaves the maximum where it is.
    Case(
        "hot-max-is-one-task",
        "pA holds hot 0_0 and 0_1 while pC holds none, but pB's one task 0_2 alone carries "
        "120 records/s, the group's maximum (mean 61.7): no move lowers it, so none is "
        "advised (the old rule said: from 120.0 to 120.0)",
        KIND,
        _history(
            "hot-max-is-one-task",
            [
                streams_member("pA", 1, _tasks(0, 1, 3)),
                streams_member("pB", 1, _tasks(2)),
                streams_member("pC", 1, _tasks(4, 5, 6, 7)),
            ],
            {0: 20, 1: 20, 2: 120},
        ),
        expect=[Expect("warning", "pA", 1), Expect("warning", "pA")],
        check=_no_move("one_unit_is_the_maximum", "pB"),
    ),
    Case(
        "hot-busiest-elsewhere",
        "pA (60 records/s) and pB (70) each hold two hot tasks while pC holds none: moving "
        "one of pB's to pC cuts the maximum from 70 to 60; moving one of pA's cuts nothing "
        "(the old rule said: from 70.0 to 70.0), so pA's findings advise no move",
        KIND,
        _history(
            "hot-busiest-elsewhere",
            [
                streams_member("pA", 1, _tasks(0, 1)),
                streams_member("pB", 1, _tasks(2, 3)),
                streams_member("pC", 1, _tasks(*range(4, 12))),
            ],
            {0: 30, 1: 30, 2: 30, 3: 40, **dict.fromkeys(range(4, 12), 2.0)},
            partitions=12,
        ),
        expect=[
            Expect("warning", "pA", 1),
            Expect("warning", "pA"),
            Expect("warning", "pB", 1),
            Expect("warning", "pB"),
        ],
        check=_check_busiest_elsewhere,
    ),
    Case(
        "hot-no-room",
        "pA (100 records/s) holds hot 0_0 and 0_1 at 50 each; pB holds none but carries 60: "
        "either task would leave pB at 110, busier than pA is now (the old rule said: from "
        "100.0 to 110.0), so no move is advised",
        KIND,
        _history(
            "hot-no-room",
            [
                streams_member("pA", 1, _tasks(0, 1)),
                streams_member("pB", 1, _tasks(*range(2, 14))),
            ],
            {0: 50, 1: 50},
            partitions=14,
        ),
        expect=[Expect("warning", "pA", 1), Expect("warning", "pA")],
        check=_no_move("destination_would_be_as_busy", "pB"),
    ),
    # Issue 25, "a consumer client id shown as an instance".
    Case(
        "hot-processless-target",
        "the only member holding no hot task is a stream thread whose process id is not "
        "known: a member, not an instance, so only the member level fires, and the move "
        "names it by its client id, never as an instance (the old rule named instance "
        "app-pX-StreamThread-1-consumer)",
        KIND,
        _history(
            "hot-processless-target",
            [
                streams_member("pA", 1, _tasks(0, 1, 2)),
                streams_member("pB", 1, _tasks(3, 4)),
                _without_process(streams_member("pX", 1, _tasks(5, 6, 7))),
            ],
            {0: 100, 1: 100, 3: 100},
        ),
        expect=[Expect("warning", "pA", 1)],
        check=_check_processless_target,
    ),
    Case(
        "hot-processless-holder",
        "a stream thread whose process id is not known holds both hot tasks: the member "
        "level fires with no instance in its subject (the old rule put its client id "
        "there); no instance is known to hold them",
        KIND,
        _history(
            "hot-processless-holder",
            [
                _without_process(streams_member("pX", 1, _tasks(0, 1, 2, 3))),
                streams_member("pB", 1, _tasks(4, 5, 6, 7)),
            ],
            {0: 100, 1: 100},
        ),
        expect=[Expect("warning", None, 1)],
        check=_check_processless_holder,
    ),
    Case(
        "hot-four-on-one-instance",
        "four hot tasks on instance pA, two on each thread (thread 2 the busier): the "
        "instance's finding and thread 2's name a move to pB; no move of thread 1's tasks "
        "lowers the busiest member's load (thread 2 is busier), so thread 1's pile is no "
        "warning of its own, nothing to act on, but folded into the instance's finding, "
        "whose move is the answer (before: a third warning saying no move would help)",
        KIND,
        _history(
            "hot-four-on-one-instance",
            [
                streams_member("pA", 1, _tasks(0, 1)),
                streams_member("pA", 2, _tasks(2, 3)),
                streams_member("pB", 1, _tasks(4, 5, 6, 7)),
                streams_member("pB", 2, _tasks(8, 9, 10, 11)),
            ],
            {0: 50.0, 1: 50.0, 2: 60.0, 3: 60.0},
            partitions=12,
        ),
        expect=[Expect("warning", "pA"), Expect("warning", "pA", thread=2)],
        check=_check_folded,
    ),
    Case(
        "hot-draining-a-backlog",
        "back from an outage, the group drains its input's backlog (lag falling 40 times "
        "faster than records arrive): the repartition topic behind the re-key grows as "
        "fast as it drains, so the aggregation's tasks look hot while the input's rate "
        "is ordinary; load that ends with the backlog is no co-location finding",
        KIND,
        _rekeyed_history("hot-draining-a-backlog", draining=True),
    ),
    Case(
        "hot-lasting-behind-a-rekey",
        "the same piles with the input's lag steady: a lasting hot key behind the "
        "re-key, found as before",
        KIND,
        _rekeyed_history("hot-lasting-behind-a-rekey", draining=False),
        expect=[Expect("warning", "pA", 1), Expect("warning", "pA")],
    ),
]
