"""no_live_consumers: a group left with no members while its lag grows."""

from agent.model import Snapshot
from tests.support.snapshots import partition, snapshot, streams_member
from tests.unit.aggregation.cases import T0, Case, Expect, times

KIND = "no_live_consumers"


def _history(group: str, *, members_until: float | None, rate: float) -> list[Snapshot]:
    """Polls every 10 s for 3 minutes; one member until ``members_until`` (s after T0);
    the committed offset stops when the member goes; the topic grows at ``rate``."""
    snapshots = []
    for t in times(0, 180, 10):
        alive = members_until is not None and t - T0 < members_until
        end = 1000 + round(rate * (t - T0))
        committed = end if alive else 1000 + round(rate * (members_until or 0))
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


CASES = [
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
]
