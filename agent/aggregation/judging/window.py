"""One series' polls up to the one being judged: what a rule looks back over.

A *series* is one agent's view of one group: two agents watching the same
group (a central agent and sidecars) are judged side by side, never
interleaved, so one agent's poll never looks like a change of another's.
``SeriesWindow`` is the look-back a rule sees when it judges the newest poll:
the polls of its series, oldest first, ending with the poll judged (``now``).

Look-backs follow event time, in whole milliseconds as the earlier Spark
rules did: ``looking_back(s)`` holds the polls at most ``s`` seconds before
``now``, both ends included.
"""

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from agent.aggregation.judging.facts import Poll

_V = TypeVar("_V")


def _ms(t: float) -> int:
    return int(t * 1000)


def _poll_ms(poll: Poll) -> int:
    return int(poll.t * 1000)


class SeriesWindow:
    """The polls of one series, oldest first (in time order, no two at the same time);
    the last one is the poll being judged."""

    __slots__ = ("polls",)

    def __init__(self, polls: Sequence[Poll]) -> None:
        if not polls:
            raise ValueError("a window holds at least the poll being judged")
        self.polls = polls

    @property
    def now(self) -> Poll:
        return self.polls[-1]

    @property
    def t(self) -> float:
        return self.polls[-1].t

    @property
    def previous(self) -> Poll | None:
        return self.polls[-2] if len(self.polls) > 1 else None

    @property
    def first(self) -> Poll:
        """The oldest poll the window holds (the series' start, or the look-back's)."""
        return self.polls[0]

    def looking_back(self, seconds: float) -> Sequence[Poll]:
        """The polls within ``seconds`` before now, both ends included, oldest first."""
        return self.polls[self._start(seconds) :]

    def strictly_after(self, seconds: float) -> Sequence[Poll]:
        """The polls in (now - seconds, now], oldest first."""
        start = _ms(self.t) - round(seconds * 1000)
        return self.polls[bisect_right(self.polls, start, key=_poll_ms) :]

    def _start(self, seconds: float) -> int:
        # The polls are in time order (``group.step`` keeps them so): the first one at or
        # after the start is found by halves, not by walking back from now.
        start = _ms(self.t) - round(seconds * 1000)
        return bisect_left(self.polls, start, key=_poll_ms)

    def run_start(self, value: Callable[[Poll], object]) -> float:
        """When the current run of equal ``value`` began: the earliest poll from which on
        ``value`` has been what it is now (a condition: how long has it held? any value:
        since when unchanged?). A run older than the window starts at its first poll."""
        current = value(self.polls[-1])
        start = self.polls[-1].t
        for poll in reversed(self.polls[:-1]):
            if value(poll) != current:
                break
            start = poll.t
        return start

    def reversed(self) -> Iterator[Poll]:
        return reversed(self.polls)


def run_start_of(
    rows: Sequence[tuple[float, _V]],
) -> float:
    """``SeriesWindow.run_start`` over (t, value) rows of one key, oldest first: when the
    last row's value began."""
    t, current = rows[-1]
    start = t
    for row_t, value in reversed(rows[:-1]):
        if value != current:
            break
        start = row_t
    return start
