"""threads_fewer_than_tasks: stream threads carrying many tasks each while the lag grows."""

import dataclasses
from collections.abc import Callable

from agent.aggregation.judging.hysteresis import Candidate
from agent.model import MemberInfo, Snapshot, TopicInfo
from tests.support.snapshots import partition, snapshot, streams_member
from tests.unit.aggregation.cases import T0, Case, Expect, all_of, evidence, explains, times

KIND = "threads_fewer_than_tasks"
UNTIL = 400  # seconds of polls: past the default window (300 s) by a few polls
STEP = 10

Members = Callable[[float], list[MemberInfo]]
Lag = Callable[[float], int]


def _repartition(group: str) -> str:
    return f"{group}-counts-repartition"


def _count_topology(group: str, partitions: int) -> dict[str, list[tuple[str, int]]]:
    """groupBy + count: sub-topology 0 reads the input, 1 the repartition topic."""
    return {
        f"{s}_{p}": [(topic, p)]
        for s, topic in enumerate(("in", _repartition(group)))
        for p in range(partitions)
    }


def _one_subtopology(partitions: int) -> dict[str, list[tuple[str, int]]]:
    return {f"0_{p}": [("in", p)] for p in range(partitions)}


def _dealt(threads: dict[str, int], tasks: dict[str, list[tuple[str, int]]]) -> list[MemberInfo]:
    """One member per (instance, thread), the tasks dealt round-robin over them."""
    slots = [(process, t) for process, count in threads.items() for t in range(1, count + 1)]
    held: dict[tuple[str, int], dict[str, list[tuple[str, int]]]] = {s: {} for s in slots}
    for i, (task, parts) in enumerate(tasks.items()):
        held[slots[i % len(slots)]][task] = parts
    return [streams_member(process, t, held[process, t]) for process, t in slots]


def _sawtooth(base: Lag, amplitude: int = 600, period: int = 30) -> Lag:
    """Lag from committed offsets: up between two commits, down at each."""
    return lambda s: base(s) + amplitude * (round(s) % period) // period


def _growing(s: float) -> int:
    return 40 * round(s)  # 40 records/s behind


def _history(
    group: str,
    members: Members,
    lag: Lag,
    *,
    partitions: int = 4,
    state: Callable[[float], str] = lambda s: "Stable",
    kip1071: bool = False,
    start: float = 0,
) -> list[Snapshot]:
    """Polls every 10 s from ``start`` to ``UNTIL``; the lag sits on input partition 0.
    Classic groups come undecoded while they rebalance, as the broker describes them."""
    polls = []
    for t in times(start, UNTIL, STEP):
        s = t - T0
        word = state(s)
        present = members(s)
        if not kip1071 and word != "Stable":
            present = [dataclasses.replace(m, streams=None) for m in present]
        end = 200 * round(s) + 100_000
        polled = snapshot(
            group,
            t,
            members=present,
            partitions=[
                partition("in", 0, end=end, committed=end - lag(s)),
                *(partition("in", p, end=end) for p in range(1, partitions)),
                *(partition(_repartition(group), p, end=end) for p in range(partitions)),
            ],
            topics=[
                TopicInfo("in", partitions, consumed=True),
                TopicInfo(_repartition(group), partitions, "repartition", consumed=True),
                TopicInfo(f"{group}-counts-changelog", partitions, "changelog"),
            ],
            state=word,
            group_epoch=7 if kip1071 else None,
        )
        polls.append(polled)
    return polls


# (seconds, topic, partition) -> (log-end offset, committed offset) of one partition.
PartitionAt = Callable[[float, str, int], tuple[int, int]]


def _per_partition(
    group: str,
    members: Members,
    at: PartitionAt,
    *,
    partitions: int = 8,
    state: Callable[[float], str] = lambda s: "Stable",
) -> list[Snapshot]:
    """The count app, polled every 10 s to ``UNTIL``, each partition of both topics as
    ``at`` says; classic groups come undecoded while they rebalance."""
    polls = []
    for t in times(0, UNTIL, STEP):
        s = t - T0
        word = state(s)
        present = members(s)
        if word != "Stable":
            present = [dataclasses.replace(m, streams=None) for m in present]
        listed = []
        for topic in ("in", _repartition(group)):
            for p in range(partitions):
                end, committed = at(s, topic, p)
                listed.append(partition(topic, p, end=end, committed=committed))
        polls.append(
            snapshot(
                group,
                t,
                members=present,
                partitions=listed,
                topics=[
                    TopicInfo("in", partitions, consumed=True),
                    TopicInfo(_repartition(group), partitions, "repartition", consumed=True),
                    TopicInfo(f"{group}-counts-changelog", partitions, "changelog"),
                ],
                state=word,
            )
        )
    return polls


def _end(s: float) -> int:
    return 100_000 + 50 * round(s)  # 50 records/s into every partition


def _keeping_up(s: float) -> tuple[int, int]:
    return _end(s), _end(s) - 20


def _stuck_from(start: float, s: float) -> tuple[int, int]:
    """No commit since ``start`` while records keep arriving."""
    return _end(s), _end(min(s, start)) - 20


def _wiped_restart(group: str) -> Members:
    """2 instances x 2 threads, 16 tasks dealt 4 a thread; pB restarts at 40 s on an empty
    state directory and comes back as pC (a new process id) with the same tasks
    (partitions 2, 3, 6 and 7 of both topics)."""
    tasks = _count_topology(group, 8)
    return lambda s: _dealt({"pA": 2, "pB" if s < 40 else "pC": 2}, tasks)


PC_PARTITIONS = (2, 3, 6, 7)


def _restore_held(group: str, *, short_of_threads: bool = False) -> list[Snapshot]:
    """Seen live (issue 25): pC's tasks restore, held, and process nothing from 40 s on,
    while pA keeps up; with ``short_of_threads``, pA's thread 1 also falls behind on
    input partition 0 (its commits move, slower than the records come)."""

    def at(s: float, topic: str, p: int) -> tuple[int, int]:
        if p in PC_PARTITIONS:
            return _stuck_from(40, s)
        if short_of_threads and topic == "in" and p == 0:
            return _end(s), _end(s) - _sawtooth(_growing)(s)
        return _keeping_up(s)

    return _per_partition(
        group,
        _wiped_restart(group),
        at,
        state=lambda s: "PreparingRebalance" if 40 <= s < 50 else "Stable",
    )


def _thread_died(group: str) -> list[Snapshot]:
    """2 instances x 2 threads; pA's thread 2 dies at 60 s and its thread 1 takes all of
    pA's 8 tasks (partitions 0, 1, 4 and 5), processing them too slowly: their lag grows
    while they commit. pB keeps up."""
    tasks = _count_topology(group, 8)
    before = _dealt({"pA": 2, "pB": 2}, tasks)

    def members(s: float) -> list[MemberInfo]:
        if s < 60:
            return before
        by_slot = {(m.streams.process_id, m.streams.thread_index): m for m in before if m.streams}
        merged = {
            t.task: [(p.topic, p.partition) for p in t.partitions]
            for m in before
            if m.streams and m.streams.process_id == "pA"
            for t in m.streams.active_tasks
        }
        return [streams_member("pA", 1, merged), by_slot["pB", 1], by_slot["pB", 2]]

    def at(s: float, topic: str, p: int) -> tuple[int, int]:
        if p in (0, 1, 4, 5) and s >= 60:
            return _end(s), _end(s) - _sawtooth(lambda x: 5 * round(x - 60))(s)
        return _keeping_up(s)

    return _per_partition(
        group, members, at, state=lambda s: "PreparingRebalance" if 60 <= s < 70 else "Stable"
    )


def _busiest_on(candidates: list[Candidate], process: str) -> None:
    (found,) = candidates
    assert found.evidence["busiest"]["process"] == process, found.evidence["busiest"]


def _left_out(*partitions: str, why: str) -> Callable[[list[Candidate]], None]:
    def check(candidates: list[Candidate]) -> None:
        (found,) = candidates
        assert found.evidence["lag_not_counted"] == [
            {"partition": p, "why": why} for p in partitions
        ], found.evidence["lag_not_counted"]

    return check


# Seed 001: 8 input partitions, 8 stream threads (2 instances x 4), and a repartition:
# 16 tasks, 2 per thread.
SEED_THREADS = {"pA": 4, "pB": 4}


def _seed(group: str) -> Members:
    return lambda s: _dealt(SEED_THREADS, _count_topology(group, 8))


def _single_thread(group: str) -> Members:
    return lambda s: _dealt({"pA": 1}, _count_topology(group, 4))


def _since(expected: float) -> Callable[[list[Candidate]], None]:
    def check(candidates: list[Candidate]) -> None:
        (found,) = candidates
        assert found.since == T0 + expected, found.since - T0

    return check


CASES = [
    Case(
        "tft-seed-001",
        "8 input partitions on 8 threads, but the repartition adds a sub-topology: 16 tasks, "
        "2 per thread, and the lag's low point rises all through the window: too few threads",
        KIND,
        _history("tft-seed-001", _seed("tft-seed-001"), _sawtooth(_growing), partitions=8),
        expect=[Expect("warning")],
        check=all_of(
            evidence(
                max_tasks_per_thread=2,
                mean_tasks_per_thread=2.0,
                tasks_per_thread_threshold=2,
                threads=8,
                instances=2,
                threads_per_instance=4,
                active_tasks=16,
                repartition_tasks=8,
                subtopologies=[
                    {"subtopology": "0", "tasks": 8, "topics": ["in"], "reads_repartition": False},
                    {
                        "subtopology": "1",
                        "tasks": 8,
                        "topics": ["tft-seed-001-counts-repartition"],
                        "reads_repartition": True,
                    },
                ],
                # The least lag in each quarter of 100..400 s: at 100, 180, 250 and 330 s.
                lag_floor_per_quarter=[4200, 7200, 10200, 13200],
                lag_growth_records=9000,
                window_seconds=300.0,
                group_type="classic",
                fix={
                    "threads": 16,
                    "num_stream_threads": 8,
                    "instances": 4,
                    "max_useful_threads": 16,
                },
            ),
            explains(
                "group tft-seed-001's busiest stream thread (thread 4 of instance pB) runs 2 "
                "active tasks (2.0 per thread on average: 16 tasks on 8 stream threads of 2 "
                "instances) while the group's lag kept growing over the last 300 s (its low "
                "point rose from 4200 to 13200 records",
                "8 of the 16 tasks read repartition topics (tft-seed-001-counts-repartition)",
                "run 8 stream threads per instance (num.stream.threads, on instances with idle "
                "CPU cores), or 4 instances, for 16 threads in all (beyond 16 threads they "
                "sit idle), or repartition less",
            ),
        ),
    ),
    Case(
        "tft-single-thread",
        "one instance, one thread (num.stream.threads' default) on 4 partitions with a "
        "repartition: 8 tasks on one thread, lag growing",
        KIND,
        _history("tft-single-thread", _single_thread("tft-single-thread"), _sawtooth(_growing)),
        expect=[Expect("warning")],
        check=all_of(
            evidence(
                max_tasks_per_thread=8,
                threads=1,
                busiest={
                    "active_tasks": 8,
                    "process": "pA",
                    "thread": 1,
                    "client_id": "app-pA-StreamThread-1-consumer",
                    "member_id": "app-pA-StreamThread-1-consumer-pA1",
                    "tasks": ["0_0", "0_1", "0_2", "0_3", "1_0", "1_1", "1_2", "1_3"],
                },
                fix={
                    "threads": 8,
                    "num_stream_threads": 8,
                    "instances": 8,
                    "max_useful_threads": 8,
                },
            ),
            explains("run 8 stream threads per instance", "or 8 instances"),
        ),
    ),
    Case(
        "tft-one-subtopology",
        "one sub-topology (no repartition), 4 tasks on 1 thread, lag growing: still too few "
        "threads, and nothing to say about repartitions",
        KIND,
        _history(
            "tft-one-subtopology",
            lambda s: _dealt({"pA": 1}, _one_subtopology(4)),
            _sawtooth(_growing),
        ),
        expect=[Expect("warning")],
        check=all_of(
            evidence(repartition_tasks=0, active_tasks=4),
            explains("run 4 stream threads per instance", absent="repartition"),
        ),
    ),
    Case(
        "tft-kip1071",
        "a KIP-1071 streams group, 8 tasks on one thread, lag growing; an Assigning and a "
        "Reconciling poll on the way are not judged and do not break the run",
        KIND,
        _history(
            "tft-kip1071",
            _single_thread("tft-kip1071"),
            _sawtooth(_growing),
            state=lambda s: {340: "Assigning", 350: "Reconciling"}.get(round(s), "Stable"),
            kip1071=True,
        ),
        expect=[Expect("warning")],
        check=all_of(evidence(group_type="streams", max_tasks_per_thread=8), _since(230)),
    ),
    Case(
        "tft-through-a-rebalance",
        "growing all along; a classic rebalance at 340-360 s (members undecoded) neither "
        "holds nor breaks the run: it holds since the window's first quarter first held a "
        "poll (230 s)",
        KIND,
        _history(
            "tft-through-a-rebalance",
            _single_thread("tft-through-a-rebalance"),
            _sawtooth(_growing),
            state=lambda s: "PreparingRebalance" if 340 <= s < 370 else "Stable",
        ),
        expect=[Expect("warning")],
        check=_since(230),
    ),
    Case(
        "tft-healthy-sawtooth",
        "8 tasks on one thread keeping up: the lag rises between commits and falls back to "
        "the same low point at each, however high the teeth",
        KIND,
        _history(
            "tft-healthy-sawtooth",
            _single_thread("tft-healthy-sawtooth"),
            _sawtooth(lambda s: 300, amplitude=20_000),
        ),
    ),
    Case(
        "tft-draining",
        "8 tasks on one thread working off a backlog: the lag falls",
        KIND,
        _history(
            "tft-draining",
            _single_thread("tft-draining"),
            _sawtooth(lambda s: max(0, 50_000 - 100 * round(s))),
        ),
    ),
    Case(
        "tft-spike",
        "8 tasks on one thread, flat lag but for one poll far above at the evaluation: a "
        "spike, not growth",
        KIND,
        _history(
            "tft-spike",
            _single_thread("tft-spike"),
            _sawtooth(lambda s: 500 + (80_000 if s >= UNTIL else 0)),
        ),
    ),
    Case(
        "tft-step",
        "8 tasks on one thread; a burst raised the lag once, 200 s ago, and it has stayed "
        "level since: a backlog worked at the input's pace, not a growing one",
        KIND,
        _history(
            "tft-step",
            _single_thread("tft-step"),
            _sawtooth(lambda s: 500 + (20_000 if s >= 200 else 0)),
        ),
    ),
    Case(
        "tft-slow-growth",
        "8 tasks on one thread, the low point rising in every quarter but by 460 records in "
        "300 s: under tasks_per_thread_min_lag_growth (1000)",
        KIND,
        _history("tft-slow-growth", _single_thread("tft-slow-growth"), lambda s: 2 * round(s)),
    ),
    Case(
        "tft-one-task-per-thread",
        "lag growing with 1 task per thread (8 threads for 8 tasks): more threads cannot "
        "take any work off a thread; a throughput or hot-partition problem, not this",
        KIND,
        _history(
            "tft-one-task-per-thread",
            lambda s: _dealt({"pA": 4, "pB": 4}, _count_topology("tft-one-task-per-thread", 4)),
            _sawtooth(_growing),
        ),
    ),
    Case(
        "tft-short-history",
        "8 tasks on one thread, lag growing, but the group was first seen 150 s ago: the "
        "window's first quarters are empty, so no growth across it is known yet",
        KIND,
        _history(
            "tft-short-history",
            _single_thread("tft-short-history"),
            _sawtooth(_growing),
            start=250,
        ),
    ),
    Case(
        "tft-mid-rebalance",
        "growing for minutes, but PreparingRebalance at the evaluation: members come "
        "undecoded (their tasks unknown), nothing is judged",
        KIND,
        _history(
            "tft-mid-rebalance",
            _single_thread("tft-mid-rebalance"),
            _sawtooth(_growing),
            state=lambda s: "PreparingRebalance" if s >= 390 else "Stable",
        ),
    ),
    Case(
        "tft-kip1071-assigning",
        "a KIP-1071 group Assigning at the evaluation: described, but its assignment is "
        "moving, so it is not judged",
        KIND,
        _history(
            "tft-kip1071-assigning",
            _single_thread("tft-kip1071-assigning"),
            _sawtooth(_growing),
            state=lambda s: "Assigning" if s >= 400 else "Stable",
            kip1071=True,
        ),
    ),
    Case(
        "tft-undecoded-member",
        "2 threads, one of them undecoded: its tasks are unknown, so the busiest thread is "
        "unknown too",
        KIND,
        _history(
            "tft-undecoded-member",
            lambda s: [
                *_dealt({"pA": 1}, _count_topology("tft-undecoded-member", 4)),
                dataclasses.replace(streams_member("pB", 1), streams=None),
            ],
            _sawtooth(_growing),
        ),
    ),
    Case(
        "tft-empty",
        "no member left and the lag grows: nobody consumes (no_live_consumers), not too few "
        "threads",
        KIND,
        _history("tft-empty", lambda s: [], _sawtooth(_growing), state=lambda s: "Empty"),
    ),
    Case(
        "tft-restore-held-elsewhere",
        "seen live (issue 25): an instance restarted on an empty state directory restores, "
        "held, and its 8 partitions take no commit while records arrive; the other "
        "instance's threads (4 tasks each) keep up. All the growth is on partitions that make "
        "no progress at all: more threads would not move them",
        KIND,
        _restore_held("tft-restore-held-elsewhere"),
    ),
    Case(
        "tft-restore-held-and-short-of-threads",
        "the same held restore, and pA's thread 1 really falls behind on a partition it "
        "commits: that lag grows with the stuck partitions left out, so the rule holds, and "
        "says what it left out",
        KIND,
        _restore_held("tft-restore-held-and-short-of-threads", short_of_threads=True),
        expect=[Expect("warning")],
        check=all_of(
            _left_out(
                *(
                    f"{topic}-{p}"
                    for topic in ("in", "tft-restore-held-and-short-of-threads-counts-repartition")
                    for p in PC_PARTITIONS
                ),
                why="no progress",
            ),
            # in-0's floors (4200, 7200, ...) and 7 more partitions of pA's at 20 each.
            evidence(lag_floor_per_quarter=[4340, 7340, 10340, 13340], lag_growth_records=9000),
            lambda found: _busiest_on(found, "pA"),
            explains("not counting 8 partitions (no commit in the window's last quarter)"),
        ),
    ),
    Case(
        "tft-thread-died",
        "pA lost a stream thread (stream_threads_dead open on it) and its last thread, "
        "holding all 8 of pA's tasks, falls behind while it commits: that lag is the dead "
        "thread's to explain, not a reason to run more threads",
        KIND,
        _thread_died("tft-thread-died"),
    ),
    Case(
        "tft-no-traffic",
        "8 tasks on one thread and no lag at all: an idle application is a healthy one",
        KIND,
        _history("tft-no-traffic", _single_thread("tft-no-traffic"), lambda s: 0),
    ),
]
