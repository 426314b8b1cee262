"""rebalance_loop: rebalancing again and again, and the legitimate churn that is not a loop."""

from collections.abc import Callable
from dataclasses import dataclass, field

from agent.aggregation.judging.hysteresis import Candidate
from agent.model import MemberInfo, RebalanceEvent, Snapshot
from tests.support.snapshots import partition, snapshot, streams_member
from tests.unit.aggregation.cases import T0, Case, Expect, times

KIND = "rebalance_loop"


@dataclass
class Poll:
    """What the broker says at one poll."""

    state: str = "Stable"
    members: list[MemberInfo] = field(default_factory=list)
    generation: int | None = None
    rebalances: int = 0  # exact events read from __consumer_offsets since the last poll
    # Exact events with their own times: (generation, seconds from the first poll).
    listed: tuple[tuple[int, float], ...] = ()
    group_epoch: int | None = None  # a KIP-1071 streams group's (the broker assigns)
    max_message_bytes: int | None = 1_048_588  # __consumer_offsets', as the agent reports it


def _history(
    group: str, poll: Callable[[float], Poll], step: float = 20, until: float = 600
) -> list[Snapshot]:
    """Polls every ``step`` s for 10 minutes (the loop window), or ``until``."""
    snapshots = []
    for t in times(0, until, step):
        p = poll(t - T0)
        snapshots.append(
            snapshot(
                group,
                t,
                members=p.members,
                partitions=[partition("in", 0, end=100)],
                state=p.state,
                generation=p.generation,
                group_epoch=p.group_epoch,
                rebalances=[RebalanceEvent(1, t - 1) for _ in range(p.rebalances)]
                + [RebalanceEvent(gen, T0 + at) for gen, at in p.listed],
                max_message_bytes=p.max_message_bytes,
            )
        )
    return snapshots


def _thread(process: str, index: int = 1, generation: object = "", **kwargs: object) -> MemberInfo:
    return streams_member(process, index, member_id=f"{process}-{index}-{generation}", **kwargs)  # type: ignore[arg-type]


def _undecoded(*names: str) -> list[MemberInfo]:
    """Members as a rebalancing group describes them: no metadata, so no Streams data."""
    return [MemberInfo(member_id=n, client_id=n, client_host="h") for n in names]


def _poll_timeouts(s: float) -> Poll:
    # Every minute pA's thread overruns max.poll.interval.ms, leaves, and re-joins under a
    # new member id; the old id is gone first (no overlap).
    k = int(s // 60)
    if s % 60 < 20:
        return Poll("PreparingRebalance", _undecoded("x", "y"))
    return Poll(members=[_thread("pA", 1, k), _thread("pB")])


def _group_forms(s: float) -> Poll:
    # A new application's two instances start: the agent first sees the group rebalancing,
    # and it goes through five generations in its first minute (one instance joins, the
    # other, cooperative follow-ups) before it is Stable, then stays.
    if s < 60:
        return Poll("PreparingRebalance", _undecoded("x", "y"), 1 + 2 * int(s // 20))
    return Poll(members=[_thread("pA"), _thread("pB")], generation=6)


def _generations_learnt_late(s: float) -> Poll:
    # Seen live: the group was created just before the agent started; its first polls
    # show it Stable without a generation, then one lists generations 0-3 at once, three
    # of them from before the first poll.
    members = [_thread("pA"), _thread("pB")]
    if s < 40:
        return Poll(members=members)
    listed = ((0, -3.0), (1, -2.0), (2, -1.0), (3, 30.0)) if s == 40 else ()
    return Poll(members=members, generation=3, listed=listed)


def _formation_learnt_late(s: float) -> Poll:
    # Seen live: two instances started together. The agent first sees the group mid-
    # rebalance, then Stable without a generation; a poll later lists generations 1-3
    # from the forming and 4 (a follow-up) from just after it.
    if s == 0:
        return Poll("CompletingRebalance", _undecoded("x"))
    members = [_thread("pA"), _thread("pB")]
    if s < 60:
        return Poll(members=members)
    listed = ((0, -1.0), (1, 5.0), (2, 10.0), (3, 20.0), (4, 21.0)) if s == 60 else ()
    return Poll(members=members, generation=4, listed=listed)


def _never_settles(s: float) -> Poll:
    # First seen rebalancing, and never Stable since: a new generation every 20 s for 20
    # minutes, longer than a group takes to form.
    return Poll("PreparingRebalance", _undecoded("x", "y"), 1 + int(s // 20))


def _lone_member_poll_timeouts(s: float) -> Poll:
    # A one-thread application overruns max.poll.interval.ms: its only member leaves (the
    # group is Empty), then re-joins under a new id, every 40 s. The agent saw the group
    # form (Empty first), but re-forming again and again is no forming.
    k = int(s // 40)
    if s % 40 < 20:
        return Poll("Empty", [], 2 * k)
    return Poll(members=[_thread("pA", 1, k)], generation=2 * k + 1)


def _rejoins_between_polls(s: float) -> Poll:
    # Seen live (bench/detection_latency.py): a one-thread application overruns
    # max.poll.interval.ms from 60 s on. Put out of the group, its thread goes on through
    # the records it had fetched, re-joins minutes later and is out again within seconds:
    # every 10 s poll sees the group Empty, its generation rising by two every 120 s.
    if s < 60:
        return Poll(members=[_thread("pA")], generation=8)
    return Poll("Empty", [], 9 + 2 * int((s - 60) // 120))


def _loop_after_a_deploy(s: float) -> Poll:
    # Seen live: the loop comes with a restart (a new version, a new config). The thread
    # is replaced at 100 s (one member change, which explains a rolling restart's
    # rebalances), then overruns max.poll.interval.ms: Empty at every poll from 110 s,
    # re-joining and leaving again between polls every minute.
    if s < 100:
        return Poll(members=[_thread("pA", 1, "old")], generation=2)
    if s < 110:
        return Poll(members=[_thread("pA", 1, "new")], generation=4)
    return Poll("Empty", [], 5 + 2 * int((s - 110) // 60))


def _loop_then_stopped(s: float) -> Poll:
    # The same loop until the application is stopped at 300 s: Empty since, its
    # generation still.
    return _rejoins_between_polls(min(s, 299))


def _probing(s: float) -> Poll:
    # KIP-441: a warm-up is pending, so every assignment announces the next (probing)
    # rebalance; the members never change.
    return Poll(
        members=[_thread("pA", next_rebalance_ms=1), _thread("pB")],
        generation=10 + int(s // 120),
    )


def _kip1071_rolling_restart(s: float) -> Poll:
    # Seen live: a KIP-1071 streams group is Stable again right after a member leaves, and
    # mid-restart it is Reconciling or Assigning, not Stable. Three instances restarted one
    # after the other, every 40 s from 300 s; judged at 920 s, the window starts just after
    # the first leave, so its Stable polls show only the group after the restart.
    def thread(process: str, epoch: int, restarted: bool = False) -> MemberInfo:
        return _thread(process, 1, "new" if restarted else "", member_epoch=epoch)

    steps = [  # (from second, state, group epoch, instances; ' marks a restarted one)
        (0, "Stable", 10, "A B C"),
        (300, "Stable", 11, "B C"),
        (320, "Reconciling", 12, "A' B C"),
        (340, "Assigning", 13, "A' C"),
        (360, "Reconciling", 14, "A' B' C"),
        (380, "Assigning", 15, "A' B'"),
        (400, "Reconciling", 16, "A' B' C'"),
        (420, "Stable", 16, "A' B' C'"),
    ]
    _, state, epoch, instances = [step for step in steps if step[0] <= s][-1]
    members = [thread(f"p{i[0]}", epoch, i.endswith("'")) for i in instances.split()]
    return Poll(state, members, group_epoch=epoch)


def _rolling_restart(s: float) -> Poll:
    # pA, pB, pC restart one after the other; each old member lingers until its session
    # times out, then leaves: two rebalances per instance.
    members = []
    for process, restart in (("pA", 100), ("pB", 250), ("pC", 400)):
        if s < restart + 60:
            members.append(_thread(process, 1, "old"))
        if s >= restart:
            members.append(_thread(process, 1, "new"))
    busy = any(s in (restart, restart + 60) for restart in (100, 250, 400))
    return Poll("PreparingRebalance", _undecoded("x")) if busy else Poll(members=members)


def _scale_out(s: float) -> Poll:
    # pC (two threads) joins at 300 s: four generations in 40 s (join, cooperative
    # follow-up, and again as its second thread arrives), then quiet.
    members = [_thread("pA", 1), _thread("pA", 2), _thread("pB", 1), _thread("pB", 2)]
    if s >= 300:
        members += [_thread("pC", 1), _thread("pC", 2)]
    generation = 10 if s < 300 else 12 if s < 320 else 14
    return Poll(members=members, generation=generation)


def _scale_out_joining(s: float) -> Poll:
    # pC's two threads join at 300 s: four generations before the group is Stable again,
    # the newcomers undecoded meanwhile.
    members = [_thread("pA", 1), _thread("pB", 1)]
    if s < 300:
        return Poll(members=members, generation=10)
    if s < 340:
        return Poll("PreparingRebalance", _undecoded("x", "y", "z", "w"), 12 if s < 320 else 14)
    return Poll(members=[*members, _thread("pC", 1), _thread("pC", 2)], generation=14)


def _crash_loop(s: float) -> Poll:
    # pA's JVM dies and restarts every 2 minutes; its old member lingers next to the new one.
    k = int(s // 120)
    phase = s % 120
    members = [_thread("pA", 1, k), _thread("pB")]
    if k > 0 and phase < 40:
        members.append(_thread("pA", 1, k - 1))
    busy = phase in (0, 40)
    return Poll("PreparingRebalance", _undecoded("x")) if busy else Poll(members=members)


def _too_large(s: float) -> Poll:
    # KAFKA-7149: every SyncGroup fails to store the group's metadata, so it rebalances
    # again and again with the same members; the metadata is 600 KB of the 1 MB limit.
    big = {"subscription_bytes": 200_000, "assignment_bytes": 100_000}
    generation = 5 + int(s // 40)
    if s % 40 == 20:
        return Poll("CompletingRebalance", _undecoded("x", "y"), generation)
    return Poll(members=[_thread("pA", **big), _thread("pB", **big)], generation=generation)


def _mid_rebalance(process: str, slot: int, member_id: str) -> MemberInfo:
    """A stream thread's member as a rebalancing classic group describes it: no metadata,
    only its ids (the client id names the instance and the thread)."""
    return MemberInfo(
        member_id=member_id,
        client_id=f"app-{process}-StreamThread-{slot}-consumer",
        client_host="h",
    )


_INSTANCES = ("pA", "pB", "pC")
_LOOP_START = 60.0  # pC restarts: the rebalance that never completes begins
_TURN = 45.0  # session.timeout.ms: a dead thread's member lingers that long


def _turn_members(turn: int) -> list[MemberInfo]:
    """Turn ``turn`` of the loop: every thread replaced under the next free indexes (3 and
    4 for 1 and 2, then 1 and 2 again), each id new."""
    slots = (3, 4) if turn % 2 else (1, 2)
    return [_mid_rebalance(p, slot, f"{p}-{slot}-t{turn}") for p in _INSTANCES for slot in slots]


def _sync_fails(s: float, *, generation: int | None = 2, record: int = 800) -> Poll:
    # Issue 25 #3, as the agent saw it live (Kafka 4.3, classic protocol, REPLACE_THREAD):
    # three instances of two threads, Stable at generation 2 with a 4800-byte record. The
    # offsets topic's max.message.bytes is lowered to 3500 at 30 s (the broker's default
    # stays in the window), pC restarts at 60 s: every SyncGroup fails to store the
    # assignment, the stream threads die and are replaced, the dead ones' members linger a
    # session timeout. Mid-rebalance the broker lists members without metadata, and the
    # generation read from __consumer_offsets stays at 2: no record is written.
    limit = 1_048_588 if s < 30 else 3500
    threads = [
        _thread(p, i, "", subscription_bytes=record // 2, assignment_bytes=record // 2)
        for p in _INSTANCES
        for i in (1, 2)
    ]
    if s < _LOOP_START:
        return Poll(members=threads, generation=generation, max_message_bytes=limit)
    turn = int((s - _LOOP_START) // _TURN)
    if turn == 0:
        # pA's and pB's threads wait in the rebalance, pC's old members linger beside
        # its restarted ones.
        members = [
            _mid_rebalance(p, i, _thread(p, i, "").member_id) for p in _INSTANCES for i in (1, 2)
        ]
        members += [_mid_rebalance("pC", i, f"pC-{i}-restarted") for i in (1, 2)]
    else:
        members = _turn_members(turn) + _turn_members(turn - 1) if turn > 1 else _turn_members(1)
    return Poll("PreparingRebalance", members, generation, max_message_bytes=limit)


def _redeploy(s: float) -> Poll:
    # Every instance restarted at 60 s: the new members join at once, the old ones linger
    # until their session times out (45 s), and the rebalance waits for them.
    if s < _LOOP_START:
        return _sync_fails(s)
    old = [_mid_rebalance(p, i, _thread(p, i, "").member_id) for p in _INSTANCES for i in (1, 2)]
    new = [_mid_rebalance(p, i, f"{p}-{i}-new") for p in _INSTANCES for i in (1, 2)]
    return Poll("PreparingRebalance", old + new, generation=2)


def _newcomers_one_by_one(s: float) -> Poll:
    # A scale-out from one instance to four: six threads join one after the other while
    # the first one is busy and slow to re-join, so the rebalance lasts a minute and no
    # generation is stored meanwhile.
    if s < 300:
        return Poll(members=[_thread("pA", 1), _thread("pA", 2)], generation=4)
    if s >= 380:
        members = [_thread(p, i) for p in ("pA", "pB", "pC", "pD") for i in (1, 2)]
        return Poll(members=members, generation=5)
    joined = [("pB", 1), ("pB", 2), ("pC", 1), ("pC", 2), ("pD", 1), ("pD", 2)]
    members = [_mid_rebalance("pA", i, f"pA-{i}-") for i in (1, 2)]
    members += [_mid_rebalance(p, i, f"{p}-{i}-") for p, i in joined[: int((s - 300) // 10) + 1]]
    return Poll("PreparingRebalance", members, generation=4)


def _empty_between_rejoins(s: float) -> Poll:
    # Issue 27 #3, as the agent saw it live: two instances of two threads, each record 3 s
    # against max.poll.interval.ms 2 s. Every thread is put out within seconds of each
    # re-join: the group is Empty at most polls, now and then Stable with a thread or two
    # under new member ids, its generation climbing by three every 10 s.
    k = int(s // 10)
    if s < 60:
        return Poll(members=[_thread(p, i) for p in ("pA", "pB") for i in (1, 2)], generation=2)
    generation = 2 + 3 * (k - 5)
    if k % 4:
        return Poll("Empty", [], generation)
    process = ("pA", "pB")[(k // 4) % 2]
    return Poll(members=[_thread(process, 1 + (k // 8) % 2, k)], generation=generation)


def _unstable(s: float) -> Poll:
    # Stuck in one long rebalance from 150 s on: not many events, but rarely Stable.
    if s >= 150:
        return Poll("PreparingRebalance", _undecoded("x", "y"))
    return Poll(members=[_thread("pA"), _thread("pB")])


def _members_gone(s: float) -> Poll:
    # The app's only instance died at 60 s and nothing restarted it: Empty from then on.
    if s >= 60:
        return Poll("Empty", [], 7)
    return Poll(members=[_thread("pA")], generation=6)


def _members_gone_one_by_one(s: float) -> Poll:
    # An application with four threads stopped at 300 s; without leave-on-close each
    # member times out on its own, 10 s apart: four generations, the group rebalancing
    # between them, then Empty for good.
    threads = [_thread("pA", i) for i in (1, 2, 3, 4)]
    if s < 350:
        return Poll(members=threads, generation=5)
    if s < 390:
        return Poll("PreparingRebalance", _undecoded("x"), 6 + int((s - 350) // 10))
    return Poll("Empty", [], 9)


_SIX_THREADS = [("pA", 1), ("pA", 2), ("pB", 1), ("pB", 2), ("pC", 1), ("pC", 2)]


def _back_after_outage(s: float, *, loop: bool = False) -> Poll:
    # Three instances of two threads stopped at 100 s, all back at 820 s (the outage
    # longer than the loop window): the group re-forms through four generations (the
    # instances joining one by one, cooperative follow-ups) and is Stable from 880 s.
    # ``loop``: once re-formed, pA's first thread re-joins under a new id every 40 s.
    if s < 100:
        return Poll(members=[_thread(p, i, "old") for p, i in _SIX_THREADS], generation=5)
    if s < 820:
        return Poll("Empty", [], 6)
    if s < 880:
        return Poll("PreparingRebalance", _undecoded("x", "y"), 7 + int((s - 820) // 20))
    if not loop or s < 920:
        return Poll(members=[_thread(p, i, "new") for p, i in _SIX_THREADS], generation=10)
    k = int((s - 920) // 40)
    members = [_thread(p, i, k if (p, i) == ("pA", 1) else "new") for p, i in _SIX_THREADS]
    return Poll(members=members, generation=10 + k)


def _exact_events(s: float) -> Poll:
    # The agent reads __consumer_offsets: one generation change per minute, all between polls.
    return Poll(members=[_thread("pA"), _thread("pB")], rebalances=1 if s % 60 == 0 and s else 0)


def _check_cause(expected: str) -> Callable[[list[Candidate]], None]:
    def check(candidates: list[Candidate]) -> None:
        (found,) = candidates
        assert expected in found.evidence["likely_cause"], found.evidence
        assert expected in found.explanation

    return check


def _check_sync_fails(candidates: list[Candidate]) -> None:
    (found,) = candidates
    evidence = found.evidence
    # The limit the agent reports now, not the stale default earlier in the window.
    assert evidence["offsets_topic_max_message_bytes"] == 3500, evidence
    assert evidence["group_metadata_bytes"] == 4800, evidence
    assert evidence["generations_stored"] == 0, evidence
    assert evidence["unfinished_rebalance"]["generation_still"] == 2, evidence
    assert (
        "4800 bytes at its last Stable poll, is over __consumer_offsets' max.message.bytes 3500"
        in (found.explanation)
    )
    assert "KAFKA-7149" in found.explanation
    assert "(generation 2 all along)" in found.explanation
    assert "rebalanced 0 times" not in found.explanation


def _check_unstored(candidates: list[Candidate]) -> None:
    (found,) = candidates
    assert "no generation is stored" in found.evidence["likely_cause"], found.evidence
    assert "max.message.bytes 3500" in found.evidence["likely_cause"], found.evidence


def _check_empty_between_rejoins(candidates: list[Candidate]) -> None:
    (found,) = candidates
    assert "max.poll.interval.ms" in found.evidence["likely_cause"], found.evidence
    assert "Empty between re-joins" in found.explanation, found.explanation
    assert "rebalancing 0% of the time" not in found.explanation, found.explanation
    assert found.evidence["empty_ratio"] >= 0.6, found.evidence


def _check_exact(candidates: list[Candidate]) -> None:
    (found,) = candidates
    assert found.evidence["events_from"] == "exact"
    assert found.evidence["rebalances"] == 10


CASES = [
    Case(
        "loop-poll-timeouts",
        "pA's thread re-joins under a new member id every minute (no old member lingers): "
        "processing exceeds max.poll.interval.ms (the group forming in the window explains "
        "nothing of that)",
        KIND,
        _history("loop-poll-timeouts", _poll_timeouts),
        expect=[Expect("warning")],
        at=T0 + 580,  # Stable: rebalances are counted when the members are visible
        check=_check_cause("max.poll.interval.ms"),
    ),
    Case(
        "loop-group-forms",
        "a new group formed: five generations in its first minute before it was first "
        "Stable (the agent saw it form): the rebalances of forming, not a loop",
        KIND,
        _history("loop-group-forms", _group_forms),
    ),
    Case(
        "loop-group-forming",
        "a new group still forming, four generations and not Stable yet, 40 s after the "
        "agent first saw it: not a loop (yet)",
        KIND,
        _history("loop-group-forming", _group_forms),
        at=T0 + 40,
    ),
    Case(
        "loop-formation-learnt-late",
        "first seen mid-rebalance, then Stable; a later snapshot lists the generations "
        "dated within the forming (and one follow-up after it): they are the forming's, "
        "not a loop",
        KIND,
        _history("loop-formation-learnt-late", _formation_learnt_late),
        at=T0 + 100,
    ),
    Case(
        "loop-history-before-first-poll",
        "the agent's first snapshot of a group lists the five generations it went through "
        "before (its creation, members joining); Stable and quiet since: nothing to count",
        KIND,
        _history(
            "loop-history-before-first-poll",
            lambda s: Poll(members=[_thread("pA"), _thread("pB")], rebalances=5 if s == 0 else 0),
        ),
        at=T0 + 100,
    ),
    Case(
        "loop-generations-learnt-late",
        "a later snapshot lists four generations, three of them from before the agent's "
        "first poll: those happened before it watched; one rebalance is no loop",
        KIND,
        _history("loop-generations-learnt-late", _generations_learnt_late),
        at=T0 + 100,
    ),
    Case(
        "loop-group-never-settles",
        "first seen rebalancing and not once Stable in 20 minutes: forming does not take "
        "longer than the loop window, this is a loop",
        KIND,
        _history("loop-group-never-settles", _never_settles, until=1200),
        expect=[Expect("warning")],
    ),
    Case(
        "loop-lone-member-poll-timeouts",
        "the only thread leaves and re-joins under a new id every 40 s, the group Empty in "
        "between: only its first forming is explained",
        KIND,
        _history("loop-lone-member-poll-timeouts", _lone_member_poll_timeouts),
        expect=[Expect("warning")],
        at=T0 + 580,
        check=_check_cause("max.poll.interval.ms"),
    ),
    Case(
        "loop-rejoins-between-polls",
        "Empty at every poll for nine minutes while the generation climbs: the thread "
        "re-joined and left again between polls four times (one rebalance each way), "
        "never seen Stable, and nothing explains eight rebalances",
        KIND,
        _history("loop-rejoins-between-polls", _rejoins_between_polls, step=10),
        expect=[Expect("warning")],
        at=T0 + 600,
        check=_check_cause("between polls"),
    ),
    Case(
        "loop-after-a-deploy",
        "the restart at 100 s replaced the thread once, then seven rebalances by 240 s, four "
        "of them between Empty polls: a member change the Stable polls saw cannot explain "
        "members that came and went unseen (before, the restart explained six and the loop "
        "was found only once it left the window)",
        KIND,
        _history("loop-after-a-deploy", _loop_after_a_deploy, step=10, until=240),
        expect=[Expect("warning")],
        check=_check_cause("between polls"),
    ),
    Case(
        "loop-rejoins-between-polls-once",
        "the same application 130 s after the fault: it left, and re-joined and left once "
        "between two Empty polls; three rebalances are no loop yet",
        KIND,
        _history("loop-rejoins-between-polls-once", _rejoins_between_polls, step=10),
        at=T0 + 190,
    ),
    Case(
        "loop-stopped-after-rejoins",
        "a loop between polls until the application was stopped: Empty and the generation "
        "still for the whole window since, nothing to count",
        KIND,
        _history("loop-stopped-after-rejoins", _loop_then_stopped, step=10, until=920),
    ),
    Case(
        "loop-members-gone-one-by-one",
        "four threads time out one after the other while the app is stopped (four "
        "generations, the group never Stable in between) and the group stays Empty: no "
        "member came and went between two Empty polls, so no loop",
        KIND,
        _history("loop-members-gone-one-by-one", _members_gone_one_by_one, step=10),
    ),
    Case(
        "loop-probing",
        "KIP-441 probing rebalances: announced by the assignment, same members after: legitimate",
        KIND,
        _history("loop-probing", _probing),
    ),
    Case(
        "loop-kip1071-rolling-restart",
        "a KIP-1071 group's rolling restart: the broker describes its members mid-restart "
        "too, and they show each instance replaced once (the Stable polls alone do not)",
        KIND,
        _history("loop-kip1071-rolling-restart", _kip1071_rolling_restart, until=920),
    ),
    Case(
        "loop-rolling-restart",
        "a rolling restart of three instances: each replaced once, the newcomers stay",
        KIND,
        _history("loop-rolling-restart", _rolling_restart),
    ),
    Case(
        "loop-scale-out",
        "a scale-out from 2 to 3 instances: four rebalances, all explained by the two new "
        "members, then it settles",
        KIND,
        _history("loop-scale-out", _scale_out),
    ),
    Case(
        "loop-scale-out-mid-rebalance",
        "four generations while pC's threads join, judged before the group is Stable again: "
        "the newcomers that explain them are not visible yet, so nothing is counted",
        KIND,
        _history("loop-scale-out-mid-rebalance", _scale_out_joining),
        at=T0 + 320,
    ),
    Case(
        "loop-scale-out-joined",
        "the same scale-out once Stable: the two newcomers explain the four generations",
        KIND,
        _history("loop-scale-out-joined", _scale_out_joining),
        at=T0 + 360,
    ),
    Case(
        "loop-crash-loop",
        "pA restarts every two minutes, its old member lingering each time: a crash loop",
        KIND,
        _history("loop-crash-loop", _crash_loop),
        expect=[Expect("warning")],
        at=T0 + 580,
        check=_check_cause("crash loop"),
    ),
    Case(
        "loop-metadata-too-large",
        "generation after generation with the same members and 600 KB of group metadata "
        "against a 1 MB max.message.bytes: KAFKA-7149",
        KIND,
        _history("loop-metadata-too-large", _too_large),
        expect=[Expect("warning")],
        check=_check_cause("KAFKA-7149"),
    ),
    Case(
        "loop-sync-fails-generation-still",
        "issue 25 #3: the group's 4800-byte record is over the 3500 the offsets topic allows "
        "now; from 60 s every SyncGroup fails, the threads are replaced again and again, the "
        "group never Stable and its generation still at 2. Found within 2 minutes of the "
        "loop's start, with the size against the newest limit (before: nothing until the unstable "
        "share reached half the window, then 'rebalanced 0 times', the stale 1048588 and "
        "cause unknown)",
        KIND,
        _history("loop-sync-fails-generation-still", _sync_fails, step=10, until=180),
        expect=[Expect("warning")],
        check=_check_sync_fails,
    ),
    Case(
        "loop-sync-fails-store-fails",
        "the same loop with a record far below the limit (300 bytes at the last Stable "
        "poll; the offsets topic unavailable, say): the generation still while members are "
        "replaced twice over names the store that fails, not the size",
        KIND,
        _history(
            "loop-sync-fails-store-fails",
            lambda s: _sync_fails(s, record=50),
            step=10,
            until=180,
        ),
        expect=[Expect("warning")],
        check=_check_unstored,
    ),
    Case(
        "loop-redeploy-in-one-rebalance",
        "all three instances redeployed at once: every member replaced once within one "
        "long rebalance (the old ones linger a session timeout), no generation stored "
        "meanwhile: a redeploy, no loop",
        KIND,
        _history("loop-redeploy-in-one-rebalance", _redeploy, step=10, until=100),
    ),
    Case(
        "loop-scale-out-newcomers-one-by-one",
        "six newcomers join one after the other during one long rebalance, no generation "
        "stored meanwhile: members added are not members replaced, no loop",
        KIND,
        _history("loop-scale-out-newcomers-one-by-one", _newcomers_one_by_one, step=10),
        at=T0 + 360,
    ),
    Case(
        "loop-empty-between-rejoins",
        "issue 27 #3: two instances' threads re-join under new ids and are out again within "
        "seconds, the group Empty at most polls: the text says it was Empty between "
        "re-joins, never 'rebalancing 0% of the time'",
        KIND,
        _history("loop-empty-between-rejoins", _empty_between_rejoins, step=10),
        expect=[Expect("warning")],
        at=T0 + 560,  # Stable
        check=_check_empty_between_rejoins,
    ),
    Case(
        "loop-unstable",
        "one rebalance that never ends: rebalancing for 75% of the window",
        KIND,
        _history("loop-unstable", _unstable),
        expect=[Expect("warning")],
    ),
    Case(
        "loop-empty-all-along",
        "no member for 20 minutes, offsets committed for it (a batch job): Empty is not "
        "rebalancing, however long it lasts (longer than a group takes to form)",
        KIND,
        _history("loop-empty-all-along", lambda _s: Poll("Empty", []), until=1200),
    ),
    Case(
        "loop-members-gone",
        "the only member left for good: one change, then Empty for 90% of the window, "
        "no loop (no_live_consumers says what matters)",
        KIND,
        _history("loop-members-gone", _members_gone),
    ),
    Case(
        "loop-back-after-outage",
        "every instance back after an outage longer than the window, the group Empty "
        "and quiet before: the four generations of re-forming are its six members "
        "joining, as in a scale-out, not a loop",
        KIND,
        _history("loop-back-after-outage", _back_after_outage, until=1000),
        at=T0 + 900,
    ),
    Case(
        "loop-back-after-outage-settled",
        "the same group two minutes after it re-formed, Stable and quiet: nothing",
        KIND,
        _history("loop-back-after-outage-settled", _back_after_outage, until=1000),
    ),
    Case(
        "loop-back-after-outage-then-loops",
        "re-formed after the outage, then pA's first thread re-joins under a new member "
        "id every 40 s: re-forming explains its own generations, not a loop that follows",
        KIND,
        _history(
            "loop-back-after-outage-then-loops",
            lambda s: _back_after_outage(s, loop=True),
            until=1200,
        ),
        expect=[Expect("warning")],
        check=_check_cause("max.poll.interval.ms"),
    ),
    Case(
        "loop-quiet",
        "a Stable group with the same members all along",
        KIND,
        _history("loop-quiet", lambda _s: Poll(members=[_thread("pA"), _thread("pB")])),
    ),
    Case(
        "loop-exact-events",
        "ten generation changes read from __consumer_offsets, none visible in the polls",
        KIND,
        _history("loop-exact-events", _exact_events),
        expect=[Expect("warning")],
        check=_check_exact,
    ),
]
