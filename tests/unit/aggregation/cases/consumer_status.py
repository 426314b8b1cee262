"""consumer_status: each group's status over a window of its commits (the default, 5
minutes), and the statuses that are findings (stalled: critical; rewound: info; stopped and
lagging: the metric only). Burrow's false alarms are here too, each saying why it is not
one."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agent.aggregation.judging.hysteresis import Candidate
from agent.model import MemberInfo, PartitionInfo, Snapshot
from tests.support.snapshots import changelog, partition, plain_member, snapshot, streams_member
from tests.unit.aggregation.cases import (
    T0,
    Case,
    Check,
    Expect,
    all_of,
    evidence,
    explains,
    times,
)

KIND = "consumer_status"
UNTIL = 560  # the last poll (s after T0): a stall from 210 s on has held a whole window

Offsets = Callable[[float], int]  # seconds after T0 -> an offset


def steady(rate: float, start: int = 1000) -> Offsets:
    """Records arriving (or consumed) at ``rate`` per second."""
    return lambda s: start + round(rate * s)


def frozen_from(at: float, offsets: Offsets) -> Offsets:
    """``offsets`` until ``at`` seconds, then standing still."""
    return lambda s: offsets(min(s, at))


def every(period: float, offsets: Offsets) -> Offsets:
    """``offsets`` as committed every ``period`` seconds only (a slow batch in between)."""
    return lambda s: offsets(period * (s // period))


@dataclass(frozen=True)
class Part:
    """One partition of the group: its log end and committed offset over time."""

    topic: str
    number: int
    end: Offsets
    committed: Offsets
    owned: Callable[[float], bool] = lambda s: True  # a member owns it (when there is one)
    subtopology: int = 0  # of its task in a Kafka Streams app: <subtopology>_<number>


@dataclass(frozen=True)
class Group:
    parts: Sequence[Part]
    members: Callable[[float], bool] = lambda s: True  # the group has its member(s)
    streams: bool = False  # a Kafka Streams app: one thread per partition, one task each
    offset_sums: dict[str, int] = field(default_factory=dict)
    changelog_ends: Sequence[int] = ()
    state: Callable[[float], str] = lambda s: "Stable"


def history(group: str, g: Group, *, until: float = UNTIL, step: float = 10) -> list[Snapshot]:
    """Polls every ``step`` seconds from 0 to ``until``."""
    snapshots = []
    for t in times(0, until, step):
        s = t - T0
        members = _members(group, g) if g.members(s) else []
        owners = {_owned_by(m): m.member_id for m in members}
        partitions: list[PartitionInfo] = []
        for p in g.parts:
            owner = owners.get((p.topic, p.number)) if p.owned(s) else None
            partitions.append(
                partition(p.topic, p.number, end=p.end(s), committed=p.committed(s), owner=owner)
            )
        snapshots.append(
            snapshot(
                group,
                t,
                members=[m for m in members if _owns(m, g, s)],
                partitions=partitions,
                topics=[changelog(f"{group}-store-changelog", g.changelog_ends)]
                if g.changelog_ends
                else [],
                state=g.state(s) if members else "Empty",
                streams=g.streams,
            )
        )
    return snapshots


def _members(group: str, g: Group) -> list[MemberInfo]:
    """One member per partition (a plain consumer, or a stream thread of one instance)."""
    if g.streams:
        return [
            streams_member(
                "pA",
                i + 1,
                {f"{p.subtopology}_{p.number}": [(p.topic, p.number)]},
                # One instance: every thread reports the offset sums of all its state.
                offset_sums=g.offset_sums,
            )
            for i, p in enumerate(g.parts)
        ]
    return [plain_member(f"{group}-c{i}", [(p.topic, p.number)]) for i, p in enumerate(g.parts)]


def _owned_by(m: MemberInfo) -> tuple[str, int]:
    tp = m.assigned_partitions[0]
    return (tp.topic, tp.partition)


def _owns(m: MemberInfo, g: Group, s: float) -> bool:
    """A member of a partition no member owns (offsets of a topic the group left) is not
    in the group at all."""
    tp = m.assigned_partitions[0]
    return next(p.owned(s) for p in g.parts if (p.topic, p.number) == (tp.topic, tp.partition))


ARRIVING = steady(5.0)  # 5 records/s on every partition

PAUSED = Group(
    [
        Part("in", 0, ARRIVING, frozen_from(200, ARRIVING)),
        Part("in", 1, ARRIVING, frozen_from(200, ARRIVING)),
    ]
)


def _stalled_partitions(*names: str) -> Check:
    """A check: the stalled partitions the evidence lists, in its order."""

    def check(candidates: list[Candidate]) -> None:
        (found,) = candidates
        assert [f"{p['topic']}-{p['partition']}" for p in found.evidence["stalled"]] == list(
            names
        ), found.evidence

    return check


CASES = [
    # -- it fires ---------------------------------------------------------------------------
    Case(
        "cs-paused",
        "a consumer paused at 200 s stays in the group: its committed offsets stand still "
        "while records arrive, with lag since 210 s, so for the whole window at 560 s",
        KIND,
        history("cs-paused", PAUSED),
        expect=[Expect("critical")],
        check=all_of(
            explains("has 2 members yet committed nothing on 2 partitions", "for at least 360 s"),
            evidence(status="stalled", reported=["stalled"], stalled_restoring=0),
            _stalled_partitions("in-0", "in-1"),
        ),
    ),
    Case(
        "cs-streams-one-task-stuck",
        "a Kafka Streams app: task 0_1's thread commits nothing since 200 s (a record it "
        "retries for ever) while task 0_0 moves: only in-1 is stalled, named with its task",
        KIND,
        history(
            "cs-streams-one-task-stuck",
            Group(
                [
                    Part("in", 0, ARRIVING, ARRIVING),
                    Part("in", 1, ARRIVING, frozen_from(200, ARRIVING)),
                ],
                streams=True,
            ),
        ),
        expect=[Expect("critical")],
        check=all_of(
            _stalled_partitions("in-1"),
            lambda cs: _evidence_of(cs, "in-1", owner="thread 2 of instance pA", task="0_1"),
        ),
    ),
    Case(
        "cs-reset-by-a-live-consumer",
        "a consumer seeks back to offset 0 at 500 s and commits it, then reads on: its "
        "offsets went back within the window",
        KIND,
        history(
            "cs-reset-by-a-live-consumer",
            Group(
                [
                    Part(
                        "in",
                        0,
                        ARRIVING,
                        lambda s: ARRIVING(s) if s < 500 else round(40 * (s - 500)),
                    )
                ]
            ),
        ),
        expect=[Expect("info")],
        check=all_of(
            explains("offsets went back on 1 partition (in-0)", "by 3450 records"),
            lambda cs: _evidence_of(
                cs, "in-0", from_offset=3450, to_offset=0, rewound_records=3450
            ),
        ),
    ),
    Case(
        "cs-reset-to-earliest",
        "kafka-consumer-groups --reset-offsets --to-earliest on a group without members "
        "(it must be inactive) at 530 s: rewound, and not yet stopped",
        KIND,
        history(
            "cs-reset-to-earliest",
            Group(
                [Part("in", 0, steady(0.0, 800), lambda s: 800 if s < 530 else 0)],
                members=lambda s: False,
            ),
        ),
        expect=[Expect("info")],
        check=evidence(status="rewound", reported=["rewound"]),
    ),
    # -- it does not ------------------------------------------------------------------------
    Case(
        "cs-paused-not-a-window-yet",
        "paused at 200 s, lag since 210 s: at 500 s the offsets have stood still for less "
        "than a window",
        KIND,
        history("cs-paused-not-a-window-yet", PAUSED, until=500),
    ),
    Case(
        "cs-slow-but-moving",
        "Burrow's false alarm: a consumer that works through a batch for 4 minutes, its "
        "committed offset the same at 24 polls in a row, commits within every window: "
        "never stalled",
        KIND,
        history(
            "cs-slow-but-moving",
            Group([Part("in", 0, ARRIVING, every(240, ARRIVING))]),
            until=900,
        ),
    ),
    Case(
        "cs-slow-falling-behind",
        "slow and falling behind (it commits half of what arrives, every 2 minutes): "
        "lagging, which is the metric only",
        KIND,
        history(
            "cs-slow-falling-behind",
            Group([Part("in", 0, ARRIVING, every(120, steady(2.5)))]),
            until=900,
        ),
    ),
    Case(
        "cs-quiet-topic-gets-a-record",
        "nothing arrived for 10 minutes (nothing to commit), then a record at the last poll: "
        "lag 1 with an old commit is a consumer about to read it, not a stalled one",
        KIND,
        history(
            "cs-quiet-topic-gets-a-record",
            Group([Part("in", 0, lambda s: 1000 + (s >= 600), steady(0.0))]),
            until=600,
        ),
    ),
    Case(
        "cs-just-joined",
        "a group without members until 420 s (its lag piling up), then a consumer joins: "
        "at 560 s it has not committed yet, but it has not had a window to",
        KIND,
        history(
            "cs-just-joined",
            Group(
                [Part("in", 0, ARRIVING, frozen_from(0, ARRIVING))],
                members=lambda s: s >= 420,
            ),
        ),
    ),
    Case(
        "cs-topic-left-behind",
        "the group stopped reading topic old (its offsets linger until they expire, with a "
        "growing lag) and reads in: old-0 has no owner and is not the group's work",
        KIND,
        history(
            "cs-topic-left-behind",
            Group(
                [
                    Part("in", 0, ARRIVING, ARRIVING),
                    Part("old", 0, ARRIVING, frozen_from(0, ARRIVING), owned=lambda s: False),
                ]
            ),
        ),
    ),
    Case(
        "cs-assigns-its-own",
        "no member, yet the committed offset moves every 30 s: a consumer that assigns its "
        "partitions itself (Flink, Spark) is alive, not stopped",
        KIND,
        history(
            "cs-assigns-its-own",
            Group([Part("in", 0, ARRIVING, every(30, ARRIVING))], members=lambda s: False),
        ),
    ),
    Case(
        "cs-old-commits-no-lag",
        "no member, old commits, nothing to read: ok (stopped needs a lag)",
        KIND,
        history(
            "cs-old-commits-no-lag",
            Group([Part("in", 0, steady(0.0), steady(0.0))], members=lambda s: False),
        ),
    ),
    Case(
        "cs-left-with-growing-lag",
        "the only member left at 100 s and records keep arriving: stopped, which is "
        "no_live_consumers' finding (critical), not this rule's",
        KIND,
        history(
            "cs-left-with-growing-lag",
            Group(
                [Part("in", 0, ARRIVING, frozen_from(100, ARRIVING))],
                members=lambda s: s < 100,
            ),
        ),
    ),
    Case(
        "cs-abandoned-backlog",
        "no member for as long as the look-back reaches, a backlog of 500 records nobody "
        "reads: stopped, the metric only by default",
        KIND,
        history(
            "cs-abandoned-backlog",
            Group([Part("in", 0, steady(0.0, 1500), steady(0.0))], members=lambda s: False),
        ),
    ),
    Case(
        "cs-reset-long-ago",
        "reset to earliest at 100 s and nobody came to read: the rewind is out of the "
        "window, what remains is stopped (the metric only)",
        KIND,
        history(
            "cs-reset-long-ago",
            Group(
                [Part("in", 0, steady(0.0, 800), lambda s: 800 if s < 100 else 0)],
                members=lambda s: False,
            ),
        ),
    ),
    Case(
        "cs-streams-restoring",
        "a stream thread whose task's state was 49,900 records behind its changelog when it "
        "joined commits nothing on its input: a restore, restore_stalled's to judge (the "
        "metric still says stalled)",
        KIND,
        history(
            "cs-streams-restoring",
            Group(
                [Part("in", 0, ARRIVING, frozen_from(0, ARRIVING))],
                streams=True,
                offset_sums={"0_0": 100},
                changelog_ends=[50_000],
            ),
        ),
    ),
    Case(
        "cs-streams-restore-unseen",
        "task 0_0 (a stateful sub-topology) commits nothing on its input while task 1_0 of "
        "another stateful one moves, and the changelog with 49,900 records to restore is "
        "named after no repartition topic: restore_stalled cannot tell whose it is, so the "
        "stall is consumer_status's, which names a stuck restore as the likely cause",
        KIND,
        history(
            "cs-streams-restore-unseen",
            Group(
                [
                    Part("in", 0, ARRIVING, frozen_from(0, ARRIVING)),
                    Part("by-region", 0, ARRIVING, ARRIVING, subtopology=1),
                ],
                streams=True,
                offset_sums={"0_0": 100, "1_0": -2},
                changelog_ends=[50_000],
            ),
        ),
        expect=[Expect("critical")],
        check=all_of(
            _stalled_partitions("in-0"),
            explains("task 0_0 holds state", "a state restore that does not progress"),
            lambda cs: _evidence_of(cs, "in-0", task="0_0", restore_likely=True),
        ),
    ),
    Case(
        "cs-streams-stateless-stall-no-restore-hint",
        "the same stall, but on a stateless task (no offset sum) while the only stateful "
        "sub-topology owns the changelog: a restore cannot be why, and nothing says it is",
        KIND,
        history(
            "cs-streams-stateless-stall-no-restore-hint",
            Group(
                [
                    Part("in", 0, ARRIVING, frozen_from(0, ARRIVING)),
                    Part("by-region", 0, ARRIVING, ARRIVING, subtopology=1),
                ],
                streams=True,
                offset_sums={"1_0": -2},
                changelog_ends=[50_000],
            ),
        ),
        expect=[Expect("critical")],
        check=all_of(
            _stalled_partitions("in-0"),
            lambda cs: _not_explained(cs, "likely cause"),
            lambda cs: _evidence_of(cs, "in-0", task="0_0", restore_likely=False),
        ),
    ),
    Case(
        "cs-paused-mid-rebalance",
        "paused as cs-paused, but the last poll sees the group rebalancing: not judged",
        KIND,
        history(
            "cs-paused-mid-rebalance",
            Group(
                PAUSED.parts,
                state=lambda s: "PreparingRebalance" if s >= UNTIL else "Stable",
            ),
        ),
    ),
]


def _not_explained(candidates: list[Candidate], text: str) -> None:
    (found,) = candidates
    assert text not in found.explanation, found.explanation


def _evidence_of(candidates: list[Candidate], partition_name: str, **expected: object) -> None:
    """The listed partition's evidence has each of these values."""
    (found,) = candidates
    entries = [
        p
        for status in found.evidence["reported"]
        for p in found.evidence[status]
        if f"{p['topic']}-{p['partition']}" == partition_name
    ]
    assert entries, found.evidence
    for key, value in expected.items():
        assert entries[0][key] == value, (key, entries[0])
