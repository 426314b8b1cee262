"""hot_partitions_colocated: hot units piled on one member or instance."""

from collections.abc import Mapping, Sequence

from agent.aggregation.hysteresis import Candidate
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


def _tasks(*partitions: int) -> dict[str, list[tuple[str, int]]]:
    return {f"0_{p}": [(TOPIC, p)] for p in partitions}


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
]
