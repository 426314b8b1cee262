"""no_live_consumers: a group left with no members while its lag grows."""

from collections.abc import Callable

from agent.model import Snapshot
from tests.support.snapshots import partition, snapshot, streams_member
from tests.unit.aggregation.cases import T0, Case, Closing, Expect, explains, times

KIND = "no_live_consumers"


def _history(
    group: str,
    *,
    members_until: float | None,
    rate: float,
    generation: Callable[[float], int | None] = lambda s: None,
    until: float = 180,
    seen_again_at: tuple[float, ...] = (),
    input_until: float | None = None,
) -> list[Snapshot]:
    """Polls every 10 s for ``until`` seconds; one member until ``members_until`` (s after
    T0), and at the polls ``seen_again_at``; the committed offset stops when the member
    first goes; the topic grows at ``rate`` until ``input_until``; the group's generation
    at each poll from ``generation`` (s after T0)."""
    snapshots = []
    for t in times(0, until, 10):
        consuming = members_until is not None and t - T0 < members_until
        alive = consuming or t - T0 in seen_again_at
        arriving = t - T0 if input_until is None else min(t - T0, input_until)
        end = 1000 + round(rate * arriving)
        committed = end if consuming else 1000 + round(rate * (members_until or 0))
        snapshots.append(
            snapshot(
                group,
                t,
                members=[streams_member("pA", 1, {"0_0": [("in", 0)]})] if alive else [],
                partitions=[partition("in", 0, end=end, committed=committed)],
                state="Stable" if alive else "Empty",
                generation=generation(t - T0),
            )
        )
    return snapshots


def _rejoins_every_minute(s: float) -> int:
    # A member joins and is out again within seconds, once a minute, between two polls:
    # two generations each time (the join, the leave).
    return 5 + 2 * int(s // 60)


CASES = [
    Case(
        "nolive-down-for-long",
        "every instance stopped 20 minutes ago, twice the look-back, and records keep "
        "arriving: the app is still down, the finding stays (issue 27: it closed after 10 "
        "minutes while its own text said the lag grew)",
        KIND,
        _history("nolive-down-for-long", members_until=100, rate=20.0, until=1300),
        expect=[Expect("critical")],
        check=explains("has no member any more (the last left 1210 s ago)", "lag grew by"),
    ),
    Case(
        "nolive-down-input-stopped",
        "every instance stopped 20 minutes ago and the input stopped too, its backlog unread: "
        "still down (the lag does not shrink)",
        KIND,
        _history(
            "nolive-down-input-stopped",
            members_until=100,
            rate=20.0,
            until=1300,
            input_until=600,
        ),
        expect=[Expect("critical")],
        check=explains("its lag of 10000 records waits, unread"),
    ),
    Case(
        "nolive-all-gone",
        "the only member left 80 s ago and the lag keeps growing: nobody consumes",
        KIND,
        _history("nolive-all-gone", members_until=100, rate=20.0),
        expect=[Expect("critical")],
    ),
    Case(
        "nolive-just-emptied",
        "the only member left 20 s ago (a re-join after a poll timeout looks like this): "
        "within thread_death_grace",
        KIND,
        _history("nolive-just-emptied", members_until=160, rate=20.0),
    ),
    Case(
        "nolive-idle-topic",
        "no member, but nothing arrives either: the lag does not grow",
        KIND,
        _history("nolive-idle-topic", members_until=100, rate=0.0),
    ),
    Case(
        "nolive-abandoned",
        "no member in the whole look-back: an abandoned group, not one that just died",
        KIND,
        _history("nolive-abandoned", members_until=None, rate=20.0),
    ),
    Case(
        "nolive-consuming",
        "a member consumes and commits: the group is alive",
        KIND,
        _history("nolive-consuming", members_until=1000, rate=20.0),
    ),
    Case(
        "nolive-stopped",
        "the only member left at 100 s (its leave was the last generation, 6) and the lag "
        "grows: a stop, explained as one",
        KIND,
        _history(
            "nolive-stopped", members_until=100, rate=20.0, generation=lambda s: 5 + (s >= 100)
        ),
        expect=[Expect("critical")],
        check=explains("has no member any more", absent="join and leave"),
    ),
    Case(
        "nolive-rejoin-loop",
        "no member at any poll since 40 s, yet the generation climbs by two a minute: members "
        "join and leave between polls (a poll-timeout loop, seen live), and the lag grows",
        KIND,
        _history(
            "nolive-rejoin-loop",
            members_until=40,
            rate=20.0,
            generation=_rejoins_every_minute,
        ),
        expect=[Expect("critical")],
        check=explains("generation went from 5 to 11", "join and leave again"),
    ),
    Case(
        "nolive-rejoin-loop-never-seen",
        "no member at any poll of the look-back, but the generation climbs: not an abandoned "
        "group, a looping one",
        KIND,
        _history(
            "nolive-rejoin-loop-never-seen",
            members_until=None,
            rate=20.0,
            generation=_rejoins_every_minute,
        ),
        expect=[Expect("critical")],
        check=explains("join and leave again"),
    ),
    Case(
        "nolive-loop-long-over",
        "the generation last rose at 120 s, more than thread_history (600 s) before the last "
        "poll, and no member since while records keep arriving: the loop ended in an app "
        "that is down, and the finding opened during the loop stays (issue 27)",
        KIND,
        _history(
            "nolive-loop-long-over",
            members_until=None,
            rate=20.0,
            generation=lambda s: 5 + 2 * int(min(s, 120) // 60),
            until=900,
        ),
        expect=[Expect("critical")],
        check=explains("has no member any more and its lag grew by"),
    ),
    Case(
        "nolive-member-seen-once",
        "gone since 100 s, one poll (200 s) catches a looping member that re-joined, Empty "
        "again since 210 s: at 300 s the grace (60 s) is over again and the lag grows",
        KIND,
        _history(
            "nolive-member-seen-once",
            members_until=100,
            rate=20.0,
            until=300,
            seen_again_at=(200,),
        ),
        expect=[Expect("critical")],
    ),
]


def _back(group: str, members_at: Callable[[float], bool], commits: bool) -> list[Snapshot]:
    """Polls every 10 s for 300 s, 20 records a second arriving; one member at the polls
    ``members_at(s)`` says, the only one until 100 s. ``commits``: the members, back,
    commit what they read (a restored app), else the offset stays where the outage left
    it (back, but not consuming yet)."""
    snapshots = []
    for t in times(0, 300, 10):
        s = t - T0
        end = 1000 + 20 * round(s)
        alive = members_at(s)
        committed = end if alive and (s < 100 or commits) else 1000 + 20 * 90
        snapshots.append(
            snapshot(
                group,
                t,
                members=[streams_member("pA", 1, {"0_0": [("in", 0)]})] if alive else [],
                partitions=[partition("in", 0, end=end, committed=committed)],
                state="Stable" if alive else "Empty",
            )
        )
    return snapshots


CLOSING = [
    Closing(
        "nolive-back-committing",
        "down from 100 s (critical at 160 s, the grace over), back at 200 s and committing: "
        "members at 200 s and 210 s that committed since the outage close it at 210 s, "
        "the second poll (before: at 250 s, an evaluation window after it last held)",
        KIND,
        _back("nolive-back-committing", lambda s: s < 100 or s >= 200, commits=True),
        events=[("open", 160.0), ("close", 210.0)],
    ),
    Closing(
        "nolive-back-not-committing",
        "back at 200 s but committing nothing yet (restoring, say): no proof it consumes, "
        "so it closes the usual way, an evaluation window after it last held (190 s)",
        KIND,
        _back("nolive-back-not-committing", lambda s: s < 100 or s >= 200, commits=False),
        events=[("open", 160.0), ("close", 250.0)],
    ),
    Closing(
        "nolive-one-snapshot-committing",
        "one poll (200 s) shows a member and an offset committed, Empty again from 210 s "
        "(a member re-joining in a crash loop, or a noisy snapshot): one poll is not two, "
        "the finding stays open and no second one opens",
        KIND,
        _back("nolive-one-snapshot-committing", lambda s: s < 100 or s == 200, commits=True),
        events=[("open", 160.0)],
    ),
]
