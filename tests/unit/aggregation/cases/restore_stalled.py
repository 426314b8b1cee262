"""restore_stalled: state restoration that makes no progress, from the broker and a sidecar."""

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from agent.aggregation.judging.hysteresis import Candidate
from agent.model import (
    MemberInfo,
    SidecarInfo,
    SidecarStateUpdater,
    SidecarTask,
    SidecarThread,
    Snapshot,
    SubtopologyInfo,
    TopicInfo,
)
from tests.support.snapshots import changelog, partition, snapshot, streams_member
from tests.unit.aggregation.cases import T0, Case, Expect, all_of, evidence, explains, times

KIND = "restore_stalled"


def count_app(
    group: str,
    *,
    offset_sums: Mapping[str, int] | None = None,
    changelog_end: int = 50_000,
    commit_stops_at: float | None = 60,
    input_rate: float = 10.0,
    rebalancing: tuple[float, float] | None = None,
) -> list[Snapshot]:
    """A groupBy-count app (``<group>-counts-repartition`` feeds task 1_0, which owns
    ``<group>-counts-changelog``), polled every 30 s for 10 minutes. Task 1_0's input
    commits stop at ``commit_stops_at`` (None: never), while records keep arriving."""
    repartition = f"{group}-counts-repartition"
    snapshots = []
    for t in times(0, 600, 30):
        s = t - T0
        end = 1000 + round(input_rate * s)
        if commit_stops_at is not None and s >= commit_stops_at:
            committed = 1000 + round(input_rate * commit_stops_at)
        else:
            committed = end - 5
        busy = rebalancing is not None and rebalancing[0] <= s < rebalancing[1]
        member = streams_member(
            "pA",
            1,
            {"0_0": [("in", 0)], "1_0": [(repartition, 0)]},
            offset_sums=offset_sums or {},
        )
        snapshots.append(
            snapshot(
                group,
                t,
                members=[member],
                partitions=[
                    partition("in", 0, end=end),
                    partition(repartition, 0, end=end, committed=committed),
                ],
                topics=[
                    TopicInfo(repartition, 1, internal_kind="repartition", consumed=True),
                    changelog(f"{group}-counts-changelog", [changelog_end], size_bytes=5_000_000),
                ],
                state="PreparingRebalance" if busy else "Stable",
            )
        )
    return snapshots


def _one_thread_app(group: str, *, upstream_commits: bool) -> list[Snapshot]:
    """The count app on one stream thread: 0_0 reads ``in`` (30 s polls, 10 minutes),
    1_0 has no local state for 50000 changelog records, and nothing reaches its input
    (the repartition topic) after the first minute, so 1_0's own input shows no lag.
    ``in`` keeps receiving records; its commits stop too unless ``upstream_commits``."""
    repartition = f"{group}-counts-repartition"
    snapshots = []
    for t in times(0, 600, 30):
        s = t - T0
        end = 1000 + round(10 * s)
        committed = 1000 + round(5 * s) if upstream_commits else 1000 + round(10 * min(s, 60))
        member = streams_member("pA", 1, {"0_0": [("in", 0)], "1_0": [(repartition, 0)]})
        snapshots.append(
            snapshot(
                group,
                t,
                members=[member],
                partitions=[
                    partition("in", 0, end=end, committed=committed),
                    partition(repartition, 0, end=1600, committed=1600),
                ],
                topics=[
                    TopicInfo(repartition, 1, internal_kind="repartition", consumed=True),
                    changelog(f"{group}-counts-changelog", [50_000], size_bytes=5_000_000),
                ],
            )
        )
    return snapshots


def _check_thread_stuck(candidates: list[Candidate]) -> None:
    (found,) = candidates
    assert found.evidence["input_lag_growth"] == 0, "nothing reaches 1_0's own input"
    assert found.evidence["thread_input_lag_growth"] > 0
    assert "the lag of its stream thread" in found.explanation


def _two_stores(
    group: str, offset_sums: Mapping[str, int], stores: Sequence[str]
) -> list[Snapshot]:
    """Two sub-topologies reading ``in`` and ``in2``, stores without repartition topics;
    no commit on either input for 10 minutes while records arrive."""
    snapshots = []
    for t in times(0, 600, 30):
        end = 1000 + round(10 * (t - T0))
        snapshots.append(
            snapshot(
                group,
                t,
                members=[
                    streams_member(
                        "pA", 1, {"0_0": [("in", 0)], "1_0": [("in2", 0)]}, offset_sums=offset_sums
                    )
                ],
                partitions=[
                    partition("in", 0, end=end, committed=1000),
                    partition("in2", 0, end=end, committed=1000),
                ],
                topics=[changelog(f"{group}-{store}-changelog", [50_000]) for store in stores],
            )
        )
    return snapshots


def _sidecar_app(group: str, sidecar: Callable[[float], SidecarInfo]) -> list[Snapshot]:
    """A sidecar next to instance pA, polling every 10 s for 3 minutes."""
    return [
        snapshot(
            group,
            t,
            members=[streams_member("pA", 1, {"1_0": [(f"{group}-counts-repartition", 0)]})],
            partitions=[partition(f"{group}-counts-repartition", 0, end=100)],
            sidecar=sidecar(t - T0),
            agent="sidecar-pA",
        )
        for t in times(0, 180, 10)
    ]


def _restoring(
    *,
    active: int = 1,
    rate: float | None = 0.0,
    remaining: int = 5000,
    thread_state: str = "RUNNING",
    restored_total: float | None = None,
    updater: bool = True,
) -> SidecarInfo:
    return SidecarInfo(
        process_id="pA",
        app_metrics_up=True,
        client_state="REBALANCING" if active else "RUNNING",
        alive_stream_threads=1,
        threads=(SidecarThread("app-pA-StreamThread-1", 1, thread_state),),
        tasks=(
            SidecarTask(
                "1_0",
                "app-pA-StreamThread-1",
                restore_remaining_records=remaining,
                restored_records_total=restored_total,
            ),
        ),
        state_updaters=(SidecarStateUpdater("app-pA-StateUpdater-1", active, 0, 0, rate),)
        if updater
        else (),
    )


def _check_broker_evidence(candidates: list[Candidate]) -> None:
    (found,) = candidates
    e = found.evidence
    assert e["source"] == "broker"
    assert e["mapping"] == "repartition topic of the same store"
    assert e["changelogs"] == ["restore-broker-stalled-counts-changelog"]
    assert e["backlog_records"] == 50_000
    assert e["task_offset_sum"] is None, "no local state: nothing was restored before"
    assert e["backlog_bytes_estimate"] == 5_000_000
    # The input last committed 540 s ago; a poll sees its partitions' history as far as
    # progress_stall_after + evaluation_window (360 s), so that is what it can say.
    assert e["seconds_without_commit"] == 360
    assert "50000 changelog records behind" in found.explanation


# -- an instance restarted on an empty state directory (issue 25) ------------------------

RESTART = 100  # pB stops, and comes back as pC (a new process id) 20 s later
BACK = 120  # the first poll that shows pC holding pB's tasks, the group Stable again


def _wiped_count_app(
    group: str, *, until: float = BACK + 300, changelog_end: int = 2000, commits: bool = False
) -> list[Snapshot]:
    """Seen live: the count app on two instances (1 thread each, 2 partitions); pB
    restarts on an empty state directory at 100 s, the group rebalances, and from 120 s
    pC holds 0_1 and 1_1 with no offset sums while pA reports its caught-up 1_0. pC's
    restore of 1_1 is held: its input (the repartition topic, fed by 0_0 and 0_1) takes
    no commit while records arrive, unless ``commits``. The changelog holds
    ``changelog_end`` records per partition, below acceptable_recovery_lag (10000) by
    default: a small state, restored in a second when nothing holds it."""
    repartition = f"{group}-counts-repartition"
    snapshots = []
    for t in times(0, until, 10):
        s = t - T0
        end = 1000 + 10 * round(s)
        held = not commits and s >= RESTART
        restarting = RESTART <= s < BACK
        second = "pB" if s < RESTART else "pC"
        members = [
            streams_member(
                "pA",
                1,
                {"0_0": [("in", 0)], "1_0": [(repartition, 0)]},
                offset_sums={"1_0": -2} if s >= BACK else {},
            ),
            streams_member(
                second,
                1,
                {"0_1": [("in", 1)], "1_1": [(repartition, 1)]},
                offset_sums={"1_1": -2} if s < RESTART else {},
            ),
        ]
        if restarting:
            members = [dataclasses.replace(m, streams=None) for m in members[:1]]
        snapshots.append(
            snapshot(
                group,
                t,
                members=members,
                partitions=[
                    partition("in", 0, end=end),
                    partition("in", 1, end=end, committed=end - 5),
                    partition(repartition, 0, end=end),
                    partition(
                        repartition, 1, end=end, committed=1000 + 10 * RESTART if held else end
                    ),
                ],
                topics=[
                    TopicInfo(repartition, 2, internal_kind="repartition", consumed=True),
                    changelog(f"{group}-counts-changelog", [changelog_end] * 2, size_bytes=400_000),
                ],
                state="PreparingRebalance" if restarting else "Stable",
            )
        )
    return snapshots


def _join_app(
    group: str, *, kip1071: bool, standby: bool = False, held_all_along: bool = False
) -> list[Snapshot]:
    """A stream-table join (one sub-topology reading ``in`` and ``table``; its store's
    changelog is named after no repartition topic) on two instances, 1 thread each. pB
    restarts on an empty state directory at 100 s and comes back as pC holding 0_1,
    whose input takes no commit since while records arrive. ``kip1071``: a KIP-1071
    group (the broker assigns, describes its topology, and no member reports offset
    sums); ``standby``: pB leaves for good instead, and pC, a third instance that kept
    0_1's standby all along (its state), takes 0_1 over; ``held_all_along``: no
    restart, 0_1 simply stops committing on pB at 100 s."""
    store = f"{group}-table-store-changelog"
    reads = {"0_0": [("in", 0), ("table", 0)], "0_1": [("in", 1), ("table", 1)]}
    epoch = 5 if kip1071 else None
    snapshots = []
    for t in times(0, BACK + 300, 10):
        s = t - T0
        end = 1000 + 10 * round(s)
        restarting = not held_all_along and RESTART <= s < BACK
        members: list[MemberInfo] = [
            streams_member("pA", 1, {"0_0": reads["0_0"]}, member_epoch=epoch)
        ]
        if s < RESTART or held_all_along:
            members.append(streams_member("pB", 1, {"0_1": reads["0_1"]}, member_epoch=epoch))
        elif not restarting:
            members.append(streams_member("pC", 1, {"0_1": reads["0_1"]}, member_epoch=epoch))
        if standby and (s < BACK):
            members.append(streams_member("pC", 1, standby=("0_1",), member_epoch=epoch))
        if restarting and not kip1071:
            members = [dataclasses.replace(m, streams=None) for m in members]
        state = "Stable"
        if restarting:
            state = "Reconciling" if kip1071 else "PreparingRebalance"
        polled = snapshot(
            group,
            t,
            members=members,
            partitions=[
                partition("in", 0, end=end),
                partition("table", 0, end=500),
                partition("in", 1, end=end, committed=min(end, 1000 + 10 * RESTART)),
                partition("table", 1, end=500, committed=500),
            ],
            topics=[changelog(store, [20_000, 20_000], size_bytes=8_000_000)],
            state=state,
            group_epoch=epoch,
        )
        if kip1071:
            polled = dataclasses.replace(
                polled,
                subtopologies=(
                    SubtopologyInfo("0", source_topics=("in", "table"), changelog_topics=(store,)),
                ),
            )
        snapshots.append(polled)
    return snapshots


def _check_wiped(candidates: list[Candidate]) -> None:
    (found,) = candidates
    e = found.evidence
    assert e["task_offset_sum"] is None, "an empty state directory: no offset sum"
    assert e["backlog_records"] == 2000
    assert e["changelog_bytes_estimate"] == 200_000, "half of the topic's 400 kB"
    assert e["seconds_since_assigned"] == 300
    assert e["seconds_without_commit"] == 300, "since the group was Stable again"
    assert found.since == T0 + BACK
    assert (
        "assigned to that instance 300 s ago (local state: none), its changelog partition 1 "
        "of restore-broker-wiped-small-state-counts-changelog holds up to 2000 records "
        "(about 200 kB) to restore, no commit on its input for 300 s" in found.explanation
    ), found.explanation


WIPED_CASES = [
    Case(
        "restore-broker-wiped-small-state",
        "issue 25: an instance restarted on an empty state directory (a new process id, no "
        "offset sums) holds 1_1 restoring 2000 records, under acceptable_recovery_lag, and "
        "its input takes no commit for progress_stall_after since the assignment: found at "
        "the first poll 300 s after it",
        KIND,
        _wiped_count_app("restore-broker-wiped-small-state"),
        expect=[Expect("warning", "pC", task="1_1")],
        check=_check_wiped,
    ),
    Case(
        "restore-broker-wiped-not-yet",
        "the same, 290 s after the assignment: not quiet for progress_stall_after yet",
        KIND,
        _wiped_count_app("restore-broker-wiped-not-yet", until=BACK + 290),
    ),
    Case(
        "restore-broker-wiped-restored",
        "the same restart, but 1_1's input commits again once its small restore is done",
        KIND,
        _wiped_count_app("restore-broker-wiped-restored", commits=True),
    ),
    Case(
        "restore-broker-lone-join-instance",
        "a classic join app (its changelog named after no repartition topic) whose wiped "
        "instance reports no offset sum, like every other: the group's only sub-topology "
        "owns the changelog",
        KIND,
        _join_app("restore-broker-lone-join-instance", kip1071=False),
        expect=[Expect("warning", "pC", task="0_1")],
        check=evidence(mapping="the group's only sub-topology", backlog_records=20_000),
    ),
    Case(
        "restore-broker-kip1071-wiped",
        "a KIP-1071 join app: no member reports offset sums, but the broker's topology says "
        "whose changelog it is, and 0_1 was just assigned to pC (a new process id) and "
        "processes nothing",
        KIND,
        _join_app("restore-broker-kip1071-wiped", kip1071=True),
        expect=[Expect("warning", "pC", task="0_1")],
        check=all_of(
            evidence(mapping="topology described by the broker", task_offset_sum=None),
            explains("(local state: not reported to the broker)"),
        ),
    ),
    Case(
        "restore-broker-kip1071-held-all-along",
        "a KIP-1071 task held by pB all along stops committing: no offset sum says its "
        "state is behind (KIP-1071 members report none), so no restore is assumed",
        KIND,
        _join_app("restore-broker-kip1071-held-all-along", kip1071=True, held_all_along=True),
    ),
    Case(
        "restore-broker-kip1071-from-standby",
        "0_1 moves to pC, which kept its standby: pC has its state, nothing to restore from "
        "scratch, and KIP-1071 reports no offset sum to say it is behind",
        KIND,
        _join_app("restore-broker-kip1071-from-standby", kip1071=True, standby=True),
    ),
]


CASES = [
    *WIPED_CASES,
    Case(
        "restore-broker-stalled",
        "task 1_0's member has no local state for 50000 changelog records and its input has "
        "not committed for 9 minutes while the lag grew and the group stayed Stable",
        KIND,
        count_app("restore-broker-stalled"),
        expect=[Expect("warning", "pA", task="1_0")],
        check=_check_broker_evidence,
    ),
    Case(
        "restore-broker-progressing",
        "the task is behind, but its input keeps committing: the restore finished and it works",
        KIND,
        count_app("restore-broker-progressing", commit_stops_at=None),
    ),
    Case(
        "restore-broker-small-backlog",
        "5000 records behind is within acceptable_recovery_lag (10000)",
        KIND,
        count_app("restore-broker-small-backlog", changelog_end=5000),
    ),
    Case(
        "restore-broker-running-active",
        "the member reports the task as running active (offset sum -2): caught up",
        KIND,
        count_app("restore-broker-running-active", offset_sums={"1_0": -2}),
    ),
    Case(
        "restore-broker-recent-rebalance",
        "the group rebalanced 2 minutes ago: the task has not been quiet long enough while Stable",
        KIND,
        count_app("restore-broker-recent-rebalance", rebalancing=(450, 480)),
    ),
    Case(
        "restore-broker-no-traffic",
        "no commit, but no new records either: an idle task, not a stuck restore",
        KIND,
        count_app("restore-broker-no-traffic", input_rate=0.0),
    ),
    Case(
        "restore-broker-whole-thread-stuck",
        "task 1_0 has no local state for 50000 records; its state updater is stuck, so the "
        "thread commits nothing for 9 minutes: nothing reaches 1_0's input, but the thread's "
        "lag on `in` grows",
        KIND,
        _one_thread_app("restore-broker-whole-thread-stuck", upstream_commits=False),
        expect=[Expect("warning", "pA", task="1_0")],
        check=_check_thread_stuck,
    ),
    Case(
        "restore-broker-idle-input-busy-thread",
        "task 1_0 looks behind and its input is idle, but the thread keeps committing on "
        "`in` (slowly, its lag grows): it processes, so no restore holds it",
        KIND,
        _one_thread_app("restore-broker-idle-input-busy-thread", upstream_commits=True),
    ),
    Case(
        "restore-broker-unknown-mapping",
        "two stateful sub-topologies and no repartition topic to tell their changelogs apart: "
        "the mapping is unknown, so the rule stays silent",
        KIND,
        _two_stores("restore-broker-unknown-mapping", {"0_0": 0, "1_0": 0}, ["a", "b"]),
    ),
    Case(
        "restore-broker-single-stateful",
        "one changelog and one stateful sub-topology (0, from its offset sums): the changelog "
        "is task 0_0's, which is 49900 records behind with a stalled input",
        KIND,
        _two_stores("restore-broker-single-stateful", {"0_0": 100}, ["store"]),
        expect=[Expect("warning", "pA", task="0_0")],
    ),
    Case(
        "restore-sidecar-stuck",
        "the state updater has restored nothing (rate 0) for 3 minutes while task 1_0 restores",
        KIND,
        _sidecar_app("restore-sidecar-stuck", lambda _s: _restoring()),
        expect=[Expect("critical", "pA", task="1_0")],
    ),
    Case(
        "restore-sidecar-progressing",
        "the state updater restores 500 records/s: slow maybe, but moving",
        KIND,
        _sidecar_app("restore-sidecar-progressing", lambda _s: _restoring(rate=500.0)),
    ),
    Case(
        "restore-sidecar-overshoot",
        "remaining records stay at 3 after the restore ended (KAFKA-20711) but nothing "
        "restores and the thread runs: not a restore at all",
        KIND,
        _sidecar_app("restore-sidecar-overshoot", lambda _s: _restoring(active=0, remaining=3)),
    ),
    Case(
        "restore-sidecar-just-started",
        "restoring with rate 0 for 60 s only: within restore_stall_after (2 min)",
        KIND,
        _sidecar_app(
            "restore-sidecar-just-started",
            lambda s: _restoring(active=1 if s >= 120 else 0),
        ),
    ),
    Case(
        "restore-sidecar-no-updater",
        "no state updater (before 3.8): the thread sits in PARTITIONS_ASSIGNED and the task's "
        "restored total has not moved for 3 minutes",
        KIND,
        _sidecar_app(
            "restore-sidecar-no-updater",
            lambda _s: _restoring(
                thread_state="PARTITIONS_ASSIGNED", restored_total=1200.0, updater=False
            ),
        ),
        expect=[Expect("critical", "pA", task="1_0")],
    ),
]
