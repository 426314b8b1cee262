"""stream_threads_dead: fewer stream threads than an instance should run."""

import dataclasses
from collections.abc import Callable

from agent.model import MemberInfo, SidecarInfo, SidecarThread, Snapshot
from tests.support.snapshots import partition, snapshot, streams_member
from tests.unit.aggregation.cases import T0, Case, Closing, Expect, times

KIND = "stream_threads_dead"

Members = Callable[[float], list[MemberInfo]]


def _history(
    group: str, members: Members, sidecar: Callable[[float], SidecarInfo] | None = None
) -> list[Snapshot]:
    """Polls every 10 s for 5 minutes; ``members(s)`` / ``sidecar(s)``: s seconds after T0."""
    return [
        snapshot(
            group,
            t,
            members=members(t - T0),
            partitions=[partition("in", 0, end=1000)],
            sidecar=sidecar(t - T0) if sidecar else None,
            agent="sidecar-pA" if sidecar else "central",
        )
        for t in times(0, 300, 10)
    ]


def _threads(process: str, *indexes: int, generation: str = "") -> list[MemberInfo]:
    return [streams_member(process, i, member_id=f"{process}-{i}{generation}") for i in indexes]


def _sidecar(
    alive: int = 2,
    expected: int | None = 2,
    state: str = "RUNNING",
    failed: float = 0.0,
    up: bool = True,
) -> SidecarInfo:
    return SidecarInfo(
        process_id="pA",
        app_metrics_up=up,
        client_state=state,
        alive_stream_threads=alive,
        failed_stream_threads=failed,
        expected_stream_threads=expected,
        threads=tuple(
            SidecarThread(f"app-pA-StreamThread-{i}", i, "RUNNING") for i in range(1, alive + 1)
        ),
    )


def _unknown_process(s: float) -> SidecarInfo:
    # Neither the app's metrics, nor a state directory, nor the members it matched know
    # the process id: the sidecar reports it empty, as its members' subscriptions do.
    return dataclasses.replace(_sidecar(), process_id="")


def _rolling_restart(s: float) -> list[MemberInfo]:
    # The old members linger until their session times out (Streams never leaves on close).
    old = _threads("pA", 1, 2) if s < 200 else []
    new = _threads("pA", 1, 2, generation="-new") if s >= 150 else []
    return old + new + _threads("pB", 1, 2)


def _mid_rebalance(process: str, index: int, member_id: str) -> MemberInfo:
    """A stream thread's member as a rebalancing classic group describes it: its ids only,
    no Streams data (the client id names the instance and the thread)."""
    return MemberInfo(
        member_id=member_id,
        client_id=f"app-{process}-StreamThread-{index}-consumer",
        client_host="h",
    )


def poll_timeout_loop(group: str, until: float = 300) -> list[Snapshot]:
    """Issue 27 #2, as the agent saw it live: two instances of two threads, each record
    3 s against max.poll.interval.ms 2 s from 60 s on. Both JVMs and all four threads
    live (TaskMigratedException, CommitFailedException, no uncaught exception), but each
    thread is put out of the group within seconds of re-joining under a new member id:
    the Stable polls show pA's thread 1 alone, pB never; pA's thread 2 and pB's threads
    are in the group at the polls in between, mid-rebalance, without their Streams data.
    The generation climbs by two every 10 s."""
    snapshots = []
    for t in times(0, until, 10):
        s = t - T0
        k = int(s // 10)
        if s < 60:
            state, members, generation = "Stable", _threads("pA", 1, 2) + _threads("pB", 1, 2), 2
        else:
            generation = 2 + 2 * (k - 5)
            if k % 3 == 0:
                state, members = "Stable", _threads("pA", 1, generation=f"-{k}")
            elif k % 3 == 1:
                state = "PreparingRebalance"
                ids = [("pA", 2), ("pB", 1), ("pB", 2)]
                members = [_mid_rebalance(p, i, f"{p}-{i}-{k}") for p, i in ids]
            else:
                state, members = "Empty", []
        snapshots.append(
            snapshot(
                group,
                t,
                members=members,
                partitions=[partition("in", 0, end=1000)],
                state=state,
                generation=generation,
            )
        )
    return snapshots


def _out_in_a_loop(group: str) -> list[Snapshot]:
    """pB's only thread overruns max.poll.interval.ms: every 20 s it re-joins under a new
    member id (the generation up by two). pA's thread 2, put out of the group at 100 s
    by the same slowness, works through what it had fetched and stays out for minutes:
    not seen at any poll since, but not dead (seen live: a thread out for 3 minutes in a
    poll-timeout loop, then back)."""
    snapshots = []
    for t in times(0, 300, 10):
        s = t - T0
        pa = _threads("pA", 1, 2) if s < 100 else _threads("pA", 1)
        pb = _threads("pB", 1, generation=f"-{int(s // 20)}")
        snapshots.append(
            snapshot(
                group,
                t,
                members=pa + pb,
                partitions=[partition("in", 0, end=1000)],
                generation=2 + 2 * int(s // 20),
            )
        )
    return snapshots


CASES = [
    Case(
        "threads-partial-loss",
        "instance pA lost thread 2 at 190 s and kept running on thread 1 for 110 s (> 60 s grace)",
        KIND,
        _history(
            "threads-partial-loss",
            lambda s: _threads("pA", 1, 2) if s < 190 else _threads("pA", 1),
        ),
        expect=[Expect("warning", "pA")],
    ),
    Case(
        "threads-loss-within-grace",
        "thread 2 of pA has been gone for 30 s only: within thread_death_grace",
        KIND,
        _history(
            "threads-loss-within-grace",
            lambda s: _threads("pA", 1, 2) if s < 270 else _threads("pA", 1),
        ),
    ),
    Case(
        "threads-rolling-restart-lingering",
        "a restarted instance's old members linger next to the new ones: threads are counted "
        "by index, so the count never drops",
        KIND,
        _history("threads-rolling-restart-lingering", _rolling_restart),
    ),
    Case(
        "threads-replaced",
        "thread 2 died and Kafka Streams replaced it under the same index 10 s later",
        KIND,
        _history(
            "threads-replaced",
            lambda s: (
                _threads("pA", 1, 2, generation="" if s < 110 else "-r")
                if not 100 <= s < 110
                else _threads("pA", 1)
            ),
        ),
    ),
    Case(
        "threads-instance-gone",
        "instance pB left 150 s ago and none replaced it: info, it may be a scale-down",
        KIND,
        _history(
            "threads-instance-gone",
            lambda s: _threads("pA", 1) + (_threads("pB", 1) if s < 150 else []),
        ),
        expect=[Expect("info", "pB")],
    ),
    Case(
        "threads-instance-replaced",
        "pB went and pC came at the same time (a restart under a new process id): the "
        "group has as many instances as before",
        KIND,
        _history(
            "threads-instance-replaced",
            lambda s: _threads("pA", 1) + (_threads("pB", 1) if s < 150 else _threads("pC", 1)),
        ),
    ),
    Case(
        "threads-scale-out",
        "a third instance joined: nothing was lost",
        KIND,
        _history(
            "threads-scale-out",
            lambda s: (
                _threads("pA", 1) + _threads("pB", 1) + (_threads("pC", 1) if s >= 150 else [])
            ),
        ),
    ),
    Case(
        "threads-poll-timeout-loop",
        "issue 27 #2: a poll-timeout loop, both instances and all their threads alive; at "
        "the Stable polls pA runs 1 of its 2 threads and pB is gone for four minutes, but "
        "their members re-join under new ids in between: the loop (rebalance_loop says so), "
        "not dead threads (before: a warning 'look for the uncaught exception' for pA and "
        "an info 'all its stream threads died' for pB)",
        KIND,
        poll_timeout_loop("threads-poll-timeout-loop"),
    ),
    Case(
        "threads-out-for-long-in-a-loop",
        "pA's thread 2 has not been in the group for 200 s while the group loops (pB's "
        "thread re-joins under a new id every 20 s): while a rebalance_loop is open the "
        "broker cannot tell a thread out between re-joins from a dead one, and the loop's "
        "finding says why members are out",
        KIND,
        _out_in_a_loop("threads-out-for-long-in-a-loop"),
    ),
    Case(
        "threads-sidecar-shortfall",
        "the sidecar sees 1 of 2 configured threads alive for the whole history",
        KIND,
        _history(
            "threads-sidecar-shortfall",
            lambda _s: _threads("pA", 1),
            lambda _s: _sidecar(alive=1, expected=2),
        ),
        expect=[Expect("warning", "pA")],
    ),
    Case(
        "threads-sidecar-client-error",
        "the app is in ERROR with no thread alive and no member in the group, while its pod "
        "(and sidecar) runs: all stream threads dead",
        KIND,
        _history(
            "threads-sidecar-client-error",
            lambda _s: _threads("pB", 1),
            lambda _s: _sidecar(alive=0, state="ERROR"),
        ),
        expect=[Expect("critical", "pA")],
    ),
    Case(
        "threads-sidecar-client-error-at-once",
        "the client went to ERROR at the last poll (a poison pill under SHUTDOWN_CLIENT): "
        "a client leaves ERROR only by being closed, so the grace has nothing to wait for",
        KIND,
        _history(
            "threads-sidecar-client-error-at-once",
            lambda s: _threads("pA", 1, 2) if s < 300 else [],
            lambda s: _sidecar() if s < 300 else _sidecar(alive=0, state="ERROR"),
        ),
        expect=[Expect("critical", "pA")],
    ),
    Case(
        "threads-sidecar-not-running-within-grace",
        "the client went to NOT_RUNNING at the last poll: an orderly close (a pod stopping) "
        "looks the same for a while, so it waits thread_death_grace",
        KIND,
        _history(
            "threads-sidecar-not-running-within-grace",
            lambda s: _threads("pA", 1, 2) if s < 300 else [],
            lambda s: _sidecar() if s < 300 else _sidecar(alive=0, state="NOT_RUNNING"),
        ),
    ),
    Case(
        "threads-sidecar-short-within-grace",
        "1 of 2 threads alive for the last 20 s only, the client RUNNING: a replacement "
        "thread may still come (REPLACE_THREAD), so it waits thread_death_grace",
        KIND,
        _history(
            "threads-sidecar-short-within-grace",
            lambda s: _threads("pA", 1, 2) if s < 280 else _threads("pA", 1),
            lambda s: _sidecar() if s < 280 else _sidecar(alive=1),
        ),
    ),
    Case(
        "threads-sidecar-failed-replaced",
        "failed-stream-threads went from 0 to 1 at 250 s; a replacement runs, but a thread died",
        KIND,
        _history(
            "threads-sidecar-failed-replaced",
            lambda _s: _threads("pA", 1, 2),
            lambda s: _sidecar(failed=0.0 if s < 250 else 1.0),
        ),
        expect=[Expect("warning", "pA")],
    ),
    Case(
        "threads-sidecar-healthy",
        "2 of 2 threads alive, RUNNING, nothing failed",
        KIND,
        _history("threads-sidecar-healthy", lambda _s: _threads("pA", 1, 2), lambda _s: _sidecar()),
    ),
    Case(
        "threads-sidecar-app-unreachable",
        "the sidecar cannot scrape the app (alive 0 is stale data, not a fact): no finding",
        KIND,
        _history(
            "threads-sidecar-app-unreachable",
            lambda _s: _threads("pA", 1, 2),
            lambda _s: _sidecar(alive=0, up=False),
        ),
    ),
    Case(
        "threads-sidecar-process-unknown",
        "a healthy app (2 of 2 threads alive, RUNNING) whose process id nobody knows: its "
        "members' subscriptions carry an empty one (a future version) and so does its "
        "sidecar. An unknown process id is no instance: not one with no member in the "
        "group (a false critical), nor a finding's process",
        KIND,
        _history(
            "threads-sidecar-process-unknown",
            lambda _s: _threads("", 1, 2),
            _unknown_process,
        ),
    ),
]


def _three_instances(group: str, third: Callable[[float], list[MemberInfo]]) -> list[Snapshot]:
    """pA and pB (two threads each) all along, and ``third(s)``; every 10 s for 400 s."""
    return [
        snapshot(
            group,
            t,
            members=_threads("pA", 1, 2) + _threads("pB", 1, 2) + third(t - T0),
            partitions=[partition("in", 0, end=1000)],
        )
        for t in times(0, 400, 10)
    ]


def _on_host(process: str, generation: str = "", host: str = "/10.0.0.3") -> list[MemberInfo]:
    return [
        streams_member(process, i, member_id=f"{process}-{i}{generation}", host=host)
        for i in (1, 2)
    ]


CLOSING = [
    Closing(
        "threads-back-same-process",
        "pC was stopped on purpose at 100 s (info at 150 s: out for the 60 s grace) and "
        "started again at 250 s under the same process id, its two threads re-joined under "
        "new member ids: the first Stable poll listing it with both threads says it is "
        "back, so the info closes there (before: at 300 s, a full evaluation window after "
        "it last held)",
        KIND,
        _three_instances(
            "threads-back-same-process",
            lambda s: [] if 100 <= s < 250 else _on_host("pC", "" if s < 100 else "-new"),
        ),
        events=[("open", 150.0), ("close", 250.0)],
        process="pC",
    ),
    Closing(
        "threads-back-as-successor",
        "pC stopped at 100 s; at 250 s pD, never seen before, joined on pC's host with two "
        "threads and the group has its three instances again: pC restarted under a new "
        "process id (its state directory gone), so pC's info closes at once",
        KIND,
        _three_instances(
            "threads-back-as-successor",
            lambda s: _on_host("pC") if s < 100 else [] if s < 250 else _on_host("pD"),
        ),
        events=[("open", 150.0), ("close", 250.0)],
        process="pC",
    ),
    Closing(
        "threads-lost-thread-back",
        "pA lost thread 2 at 100 s (warning at 160 s, after the grace) and a thread 2 "
        "re-joined at 250 s: pA runs its two threads again, the warning closes at that poll",
        KIND,
        _history(
            "threads-lost-thread-back",
            lambda s: (
                _threads("pA", 1, 2, generation="" if s < 100 else "-r")
                if not 100 <= s < 250
                else _threads("pA", 1)
            ),
        ),
        events=[("open", 160.0), ("close", 250.0)],
        process="pA",
    ),
]
