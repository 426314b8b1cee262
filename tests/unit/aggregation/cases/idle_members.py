"""idle_members: more stream threads than active tasks, so some threads can never work."""

import dataclasses
from collections.abc import Callable, Sequence

from agent.aggregation.judging.hysteresis import Candidate
from agent.model import MemberInfo, Snapshot
from tests.support.snapshots import partition, plain_member, snapshot, streams_member
from tests.unit.aggregation.cases import T0, Case, Expect, all_of, evidence, explains, times

KIND = "idle_members"
UNTIL = 420  # seconds of polls: past the default idle_members_after (300 s)

Members = Callable[[float], list[MemberInfo]]


def _tasks(subtopologies: int, partitions: int) -> list[str]:
    return [f"{s}_{p}" for s in range(subtopologies) for p in range(partitions)]


def _dealt(
    threads: dict[str, int], tasks: Sequence[str], standbys: Sequence[str] = ()
) -> list[MemberInfo]:
    """One member per (instance, thread); active tasks dealt round-robin over them, as the
    Streams assignor spreads task counts. ``standbys`` go, in order, to the members left
    without an active task."""
    slots = [(process, t) for process, count in threads.items() for t in range(1, count + 1)]
    held: dict[tuple[str, int], dict[str, list[tuple[str, int]]]] = {s: {} for s in slots}
    for i, task in enumerate(tasks):
        subtopology, number = task.split("_")
        held[slots[i % len(slots)]][task] = [(f"t{subtopology}", int(number))]
    spare = iter(s for s in slots if not held[s])
    standby_of: dict[tuple[str, int], list[str]] = {}
    for task in standbys:
        standby_of.setdefault(next(spare), []).append(task)
    return [
        streams_member(process, t, held[process, t], standby=standby_of.get((process, t), ()))
        for process, t in slots
    ]


def _history(
    group: str,
    members: Members,
    *,
    state: Callable[[float], str] = lambda s: "Stable",
    streams: bool = True,
    kip1071: bool = False,
) -> list[Snapshot]:
    """Polls every 10 s for ``UNTIL`` s; ``members(s)`` / ``state(s)``: s seconds after T0.
    Classic groups come undecoded while they rebalance, as the broker describes them."""
    snapshots = []
    for t in times(0, UNTIL, 10):
        s = t - T0
        word = state(s)
        present = members(s)
        if not kip1071 and word != "Stable":
            present = [dataclasses.replace(m, streams=None) for m in present]
        polled = snapshot(
            group,
            t,
            members=present,
            partitions=[partition("t0", 0, end=1000), partition("t0", 1, end=1000)],
            state=word,
            streams=streams,
        )
        if kip1071:
            polled = dataclasses.replace(
                polled,
                group=dataclasses.replace(
                    polled.group,
                    group_type="streams",
                    protocol_type="streams",
                    protocol=None,
                    group_epoch=7,
                    assignment_epoch=7,
                ),
            )
        snapshots.append(polled)
    return snapshots


def _undecoded(member: MemberInfo) -> MemberInfo:
    return dataclasses.replace(member, streams=None)


# 2 instances x 3 threads on 2 sub-topologies x 2 partitions: 6 members, 4 tasks.
OVERSIZED = {"pA": 3, "pB": 3}
FOUR_TASKS = _tasks(2, 2)


def _since_start(candidates: list[Candidate]) -> None:
    (found,) = candidates
    assert found.since == T0, "the run began at the first poll; the rebalance did not break it"


CASES = [
    Case(
        "idle-oversized",
        "6 stream threads (2 instances x 3) for 4 tasks, Stable for 7 minutes: 2 threads can "
        "never get a task",
        KIND,
        _history("idle-oversized", lambda s: _dealt(OVERSIZED, FOUR_TASKS)),
        expect=[Expect("info")],
        check=all_of(
            evidence(
                members=6,
                active_tasks=4,
                idle_member_count=2,
                instances=2,
                threads_per_instance=3,
                subtopologies=2,
                idle_standby_tasks=0,
                fix={
                    "max_threads_per_instance": 2,
                    "max_instances": 1,
                    "min_partitions_per_subtopology": 3,
                },
            ),
            explains(
                "group idle-oversized runs 6 stream threads (2 instances, up to 3 threads "
                "each) for 4 active tasks, so 2 threads can never get one: thread 2 of "
                "instance pB, thread 3 of instance pB; run at most 2 stream threads per "
                "instance, or at most 1 instance, or give each of its 2 sub-topologies at "
                "least 3 partitions",
                absent="standby",
            ),
        ),
    ),
    Case(
        "idle-keeping-standbys",
        "4 threads (2 x 2) for 2 tasks of one sub-topology; the idle threads keep the two "
        "standbys: standbys process nothing, so they are idle, and the explanation says so",
        KIND,
        _history(
            "idle-keeping-standbys",
            lambda s: _dealt({"pA": 2, "pB": 2}, _tasks(1, 2), standbys=["0_0", "0_1"]),
        ),
        expect=[Expect("info")],
        check=all_of(
            evidence(idle_member_count=2, idle_standby_tasks=2),
            explains(
                "(they keep 2 standby tasks warm, spares for a failover, but process nothing)"
            ),
        ),
    ),
    Case(
        "idle-one-instance-too-many",
        "3 instances x 1 thread for 2 tasks: fewer threads cannot help (1 is the least), "
        "fewer instances or more partitions can",
        KIND,
        _history(
            "idle-one-instance-too-many", lambda s: _dealt(dict.fromkeys("ABC", 1), _tasks(1, 2))
        ),
        expect=[Expect("info")],
        check=all_of(
            evidence(
                fix={
                    "max_threads_per_instance": None,
                    "max_instances": 2,
                    "min_partitions_per_subtopology": 3,
                }
            ),
            explains(
                "3 stream threads (3 instances, up to 1 thread each) for 2 active tasks, so 1 "
                "thread can never get one: thread 1 of instance C; at most 2 instances, or give "
                "each of its 1 sub-topology at least 3 partitions"
            ),
        ),
    ),
    Case(
        "idle-through-a-rebalance",
        "oversized all along; a rebalance at 200-230 s (members undecoded) neither counts nor "
        "breaks the run: the finding holds since the first poll",
        KIND,
        _history(
            "idle-through-a-rebalance",
            lambda s: _dealt(OVERSIZED, FOUR_TASKS),
            state=lambda s: "PreparingRebalance" if 200 <= s < 230 else "Stable",
        ),
        expect=[Expect("info")],
        check=_since_start,
    ),
    Case(
        "idle-kip1071",
        "a KIP-1071 streams group (the broker assigns and describes in every state): 6 threads "
        "for 4 tasks, with an Assigning and a Reconciling poll in between that do not break it",
        KIND,
        _history(
            "idle-kip1071",
            lambda s: _dealt(OVERSIZED, FOUR_TASKS),
            state=lambda s: {200: "Assigning", 210: "Reconciling"}.get(round(s), "Stable"),
            kip1071=True,
        ),
        expect=[Expect("info")],
        check=all_of(evidence(group_type="streams", idle_member_count=2), _since_start),
    ),
    Case(
        "idle-kip1071-reconciling",
        "a KIP-1071 group Reconciling at the evaluation: members are described, but the "
        "assignment is moving, so the rule does not judge it",
        KIND,
        _history(
            "idle-kip1071-reconciling",
            lambda s: _dealt(OVERSIZED, FOUR_TASKS),
            state=lambda s: "Reconciling" if s >= 410 else "Stable",
            kip1071=True,
        ),
    ),
    Case(
        "idle-mid-rebalance",
        "oversized for minutes, but PreparingRebalance at the evaluation: members come "
        "undecoded, nothing can be judged",
        KIND,
        _history(
            "idle-mid-rebalance",
            lambda s: _dealt(OVERSIZED, FOUR_TASKS),
            state=lambda s: "PreparingRebalance" if s >= 400 else "Stable",
        ),
    ),
    Case(
        "idle-not-for-long",
        "a third instance joined 120 s ago and its threads are idle: oversized for less than "
        "idle_members_after (300 s)",
        KIND,
        _history(
            "idle-not-for-long",
            lambda s: _dealt(
                {"pA": 2, "pB": 2, "pC": 2} if s >= 300 else {"pA": 2, "pB": 2}, FOUR_TASKS
            ),
        ),
    ),
    Case(
        "idle-scaled-back",
        "oversized for 300 s, then scaled to 4 threads for 4 tasks: the rule no longer holds",
        KIND,
        _history(
            "idle-scaled-back",
            lambda s: _dealt(OVERSIZED if s < 300 else {"pA": 2, "pB": 2}, FOUR_TASKS),
        ),
    ),
    Case(
        "idle-warmup-gap",
        "4 threads for 4 tasks, one thread holding only a warm-up (KIP-441: the task moves to "
        "it once caught up), however long: there are tasks enough, it is not structural",
        KIND,
        _history(
            "idle-warmup-gap",
            lambda s: [
                streams_member("pA", 1, {"0_0": [("t0", 0)], "0_1": [("t0", 1)]}),
                streams_member("pA", 2, {"1_0": [("t1", 0)]}),
                streams_member("pB", 1, {"1_1": [("t1", 1)]}),
                streams_member("pB", 2, {}, standby=["0_1"]),
            ],
        ),
    ),
    Case(
        "idle-plain-consumers",
        "a plain consumer group with 6 members on 2 partitions: not Kafka Streams (its idle "
        "consumers are its owner's choice, and there are no tasks)",
        KIND,
        _history(
            "idle-plain-consumers",
            lambda s: (
                [plain_member("c0", [("t0", 0)]), plain_member("c1", [("t0", 1)])]
                + [plain_member(f"c{n}", []) for n in range(2, 6)]
            ),
            streams=False,
        ),
    ),
    Case(
        "idle-undecoded-member",
        "5 members, the 4 decoded ones holding 4 tasks with one of them empty, and one whose "
        "Streams data did not decode: it may hold tasks too, so the task count is unknown "
        "and unknown is not idle",
        KIND,
        _history(
            "idle-undecoded-member",
            lambda s: [
                *_dealt({"pA": 2, "pB": 2}, ["0_0", "0_1", "1_0"]),
                _undecoded(streams_member("pC", 1, {"1_1": [("t1", 1)]})),
            ],
        ),
    ),
    Case(
        "idle-no-tasks",
        "Stable with 2 members and no task at all (the source topics are missing): another "
        "problem than too many threads",
        KIND,
        _history("idle-no-tasks", lambda s: _dealt({"pA": 2}, [])),
    ),
]
