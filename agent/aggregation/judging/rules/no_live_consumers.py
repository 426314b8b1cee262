"""no_live_consumers (critical): the group is left with no members and its lag grows.

"Left": it had members within ``thread_history``, and has had none for
``thread_death_grace`` (a single member re-joining after a poll timeout
leaves the group empty for a moment). A group nobody has consumed for
longer is abandoned, not broken, and the agent's lag metrics cover it.

A group that is Empty at every poll while its generation climbs is not
stopped: its members join and leave again between polls. Seen live: one stream
thread overrunning ``max.poll.interval.ms`` re-joins after its buffered records,
minutes later, and is out again within seconds, so a 10 s poll never sees it. The
explanation here says what is going on; ``rebalance_loop`` opens beside it once the
generations between Empty polls reach its count of rebalances.

Once open, the finding holds for as long as the group has no member and its
lag is not shrinking (input still arriving, or a backlog nobody reads),
however long that is: the look-back bounds what the rule reads to open it,
not how long an outage stays true. It closes when a member returns, when the
lag shrinks (someone consumes, or the offsets were reset forward), or with
the group (deleted, no longer polled): an evaluation window after it last
held, or at once when members are in the group at two polls in a row and
have committed since its last poll without members (``_consuming_again``).

Judged at every poll except one that sees the group Empty for less than
``thread_death_grace``: there it cannot yet tell a member's brief re-join from
consumers gone. Judging it would close the finding of a looping group at its
first poll that catches a member (the evaluation window after the rule last
held comes before the grace is over again), and open it anew one grace
later: seen live, a critical alert that fired twice for one outage.
"""

from collections.abc import Sequence

from agent.aggregation.judging.facts import Poll
from agent.aggregation.judging.rules.base import Evaluation, Found, Judgement
from agent.model.findings import FindingSubject

KIND = "no_live_consumers"


def _generation(poll: Poll) -> int | None:
    # Classic groups count generations, KIP-848 groups epochs: either rises per rebalance.
    return poll.generation if poll.generation is not None else poll.group_epoch


def judge(ev: Evaluation) -> Judgement:
    p, w, now = ev.params, ev.window, ev.now
    if now.members:  # it holds only without a member (below)
        return Judgement(KIND, judged=True, cleared=_consuming_again(ev))
    emptied_at = w.run_start(lambda poll: poll.member_count == 0)
    if now.member_count == 0 and now.t - emptied_at < p.thread_death_grace:
        return Judgement(KIND, judged=False)
    recent = w.looking_back(p.evaluation_window)
    history = w.looking_back(p.thread_history)
    lag_start = recent[0]
    lag_growth = now.lag_total - lag_start.lag_total
    members_last_seen = max((q.t for q in history if q.member_count > 0), default=None)
    generation_now = _generation(now)
    rejoins = emptied = None
    rising = False
    if generation_now is not None:
        emptied = _generation_at_last_run_start(w.polls)
        if emptied is not None:
            rejoins = max(generation_now - emptied, 0)
        known = [g for g in map(_generation, history) if g is not None]
        rising = bool(known) and generation_now > min(known)
    rejoining = rejoins is not None and rejoins > 0 and rising
    still_down = ev.is_open(KIND) and (lag_growth > 0 or (now.lag_total > 0 and lag_growth == 0))
    holds = now.member_count == 0 and (
        ((members_last_seen is not None or rejoining) and lag_growth > 0) or still_down
    )
    if not holds:
        return Judgement(KIND, judged=True)
    if members_last_seen is None and not rejoining:
        # Down longer than the look-back: when the last member left, the finding knows.
        members_last_seen = _last_seen_when_opened(ev)
    over = now.t - lag_start.t
    if rejoining:
        explanation = (
            f"group {ev.group} shows no member at any poll for {now.t - emptied_at:.0f} s, yet "
            f"its generation went from {emptied} to {generation_now} "
            f"meanwhile, and its lag grew by {lag_growth} records in {over:.0f} s: members "
            "join and leave again between polls (processing longer than "
            "max.poll.interval.ms, or instances crash-looping); look at the application's "
            "logs for poll timeouts and restarts"
        )
    else:
        left = (
            ""
            if members_last_seen is None
            else f" (the last left {now.t - members_last_seen:.0f} s ago)"
        )
        change = (
            f"its lag grew by {lag_growth} records in {over:.0f} s"
            if lag_growth > 0
            else f"its lag of {now.lag_total} records waits, unread"
        )
        explanation = (
            f"group {ev.group} has no member any more{left} and {change}: nothing consumes "
            "it; start the application or find why all its instances stopped"
        )
    found = Found(
        KIND,
        "critical",
        FindingSubject(),
        explanation,
        {
            "lag_records": now.lag_total,
            "lag_growth_records": lag_growth,
            "over_seconds": over,
            "members_last_seen_at": members_last_seen,
            "partitions": now.lag_partitions,
            "group_state": now.state,
            "rebalances_while_empty": rejoins,
        },
    )
    return Judgement(KIND, judged=True, found=(found,))


def _consuming_again(ev: Evaluation) -> tuple[FindingSubject, ...]:
    """The group, when its finding is open and members are back at this poll and the one
    before, having committed since its last poll without members: the app is back, and
    the finding closes now rather than a window later. Two polls, so that one snapshot
    catching a looping member between its re-join and its time-out does not close it."""
    previous = ev.window.previous
    if not ev.is_open(KIND) or previous is None or not previous.members:
        return ()
    empty = next((q for q in ev.window.reversed() if q.member_count == 0), None)
    if empty is None or empty.partitions is None or ev.now.partitions is None:
        return ()
    before = {(p.topic, p.partition): p.committed for p in empty.partitions}
    committed_now = committed_then = 0
    for p in ev.now.partitions:
        then = before.get((p.topic, p.partition))
        if p.committed is not None and then is not None:
            committed_now += p.committed
            committed_then += then
    return (FindingSubject(),) if committed_now > committed_then else ()


def _last_seen_when_opened(ev: Evaluation) -> float | None:
    """When the group last had a member, as the open finding recorded it."""
    for finding in ev.open_findings:
        if finding.kind == KIND:
            seen = finding.evidence.get("members_last_seen_at")
            if isinstance(seen, int | float):
                return float(seen)
    return None


def _generation_at_last_run_start(polls: Sequence[Poll]) -> int | None:
    """The generation at the newest poll that began a run of (non-)emptiness and knew its
    generation: where the group last emptied (or filled)."""
    for i in range(len(polls) - 1, -1, -1):
        began = i == 0 or (polls[i].member_count == 0) != (polls[i - 1].member_count == 0)
        if began:
            generation = _generation(polls[i])
            if generation is not None:
                return generation
    return None
