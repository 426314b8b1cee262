"""stream_threads_dead: fewer stream threads than an instance should run."""

import dataclasses
from collections.abc import Callable

from agent.model import MemberInfo, SidecarInfo, SidecarThread, Snapshot
from tests.support.snapshots import partition, snapshot, streams_member
from tests.unit.aggregation.cases import T0, Case, Expect, times

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
