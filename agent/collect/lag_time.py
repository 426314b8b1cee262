"""Lag in seconds: when the first unconsumed record was appended, however long ago.

Each partition keeps a table of points ``(t, o)``: at time ``t`` the log-end
offset was ``o`` (records below ``o`` were appended by then, record ``o``
not yet). The record at the committed offset ``c`` was appended when the log
grew past ``c``: between the last point with ``o <= c`` and the first with
``o > c``; interpolating inside that bracket estimates the moment, and the
lag in seconds is how long ago it was.

Points come from two places. The agent's own polls add one whenever the
log-end offset moved, and keep the end of a plateau (the last poll that saw
it unchanged), so a burst after an idle hour is dated within a poll and not
spread over the hour. Before the agent's first poll of a partition (a
backlog older than its uptime), or where a group rewound, the broker's time
index dates it: ListOffsets for a timestamp ``T`` answers the first offset
whose record time is ``>= T`` and that record's time, which gives the points
``(T, offset)``, ``(ts, offset)`` and ``(ts, offset + 1)``. ``probe_time``
says which ``T`` to ask for next; the poller asks (batched per broker) only
for the partitions where ``needs_dating`` holds, so a backlog is dated once
and then read from the table.

The table is bounded in points, not in age: it never drops its oldest point
because of age. Points no group needs any more (below every committed offset)
are pruned; beyond ``max_points`` the points interpolation needs least are
merged away. Every segment carries an error bound (how far its
interpolation may be from the true append time): a fresh segment's bound is
its width (the truth and the estimate both lie inside the bracket); merging
two segments adds the deviation of the removed point from the new line. The
merge that costs least relative to the segment's age goes first, so recent
history stays at poll resolution and old history keeps what its shape needs.

A value is a lower bound, not a measurement, only when the first unconsumed
record is older than every point: the broker could not be asked or could not
date it (it failed, or the record was deleted by retention).
"""

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, TypeVar

# Dating is precise enough once its bracket is this narrow, in seconds or relative to
# the record's age (1 % of an hour is 36 s); the agent's own points are a poll apart.
DATING_ABSOLUTE_TOLERANCE = 5.0
DATING_RELATIVE_TOLERANCE = 0.01
# A partition the broker could not date is asked again after this long.
UNDATABLE_RETRY_SECONDS = 600.0
# Merging weighs a segment's error against its age, but never against less than this:
# the newest points are a poll apart, and relative error means nothing there.
_AGE_FLOOR_SECONDS = 60.0


Key = TypeVar("Key", bound=Hashable)  # a partition's key, the caller's choice

Aim = Literal["below", "above", "middle"]
_AIMS: tuple[Aim, ...] = ("below", "above", "middle")


class LagEstimate(NamedTuple):
    seconds: float
    # True: the first unconsumed record is at least ``seconds`` old (older than every
    # point the agent has), not a measurement.
    lower_bound: bool = False
    # How far the estimate may be from the true append time (0 for a lower bound).
    error_seconds: float = 0.0


@dataclass(slots=True)
class _Track:
    times: "array[float]" = field(default_factory=lambda: array("d"))
    offsets: "array[int]" = field(default_factory=lambda: array("q"))
    # errors[i]: the bound of the segment (offsets[i - 1], offsets[i]]; errors[0] unused.
    errors: "array[float]" = field(default_factory=lambda: array("d"))
    # The first log-end offset the agent saw itself: below it, points come from the broker.
    own_from: int = 0
    # When the broker could not date this partition: do not ask before then.
    undatable_until: float = 0.0


class OffsetHistory:
    """Per-partition (time, log-end offset) tables, bounded in points."""

    def __init__(self, max_points: int = 32, *, slack: int = 16) -> None:
        if max_points < 3 or slack < 1:  # noqa: PLR2004 - a merge needs a point between two
            raise ValueError("max_points must be >= 3 and slack >= 1")
        self.max_points = max_points
        self.slack = slack
        self._tracks: dict[Hashable, _Track] = {}

    def __len__(self) -> int:
        return len(self._tracks)

    def points(self, partition: Hashable) -> list[tuple[float, int]]:
        """The table of one partition, oldest first (for tests and debugging)."""
        track = self._tracks.get(partition)
        if track is None:
            return []
        return list(zip(track.times, track.offsets, strict=True))

    # -- the agent's own observations -----------------------------------------

    def record(self, partition: Hashable, at: float, log_end_offset: int) -> None:
        track = self._tracks.get(partition)
        if track is None:
            track = self._tracks[partition] = _Track(own_from=log_end_offset)
            _append(track, at, log_end_offset, 0.0)
            return
        offsets, times = track.offsets, track.times
        last = offsets[-1]
        if log_end_offset < last:
            # The log was truncated or the topic re-created: old points lie.
            self._tracks[partition] = fresh = _Track(own_from=log_end_offset)
            _append(fresh, at, log_end_offset, 0.0)
            return
        if at <= times[-1]:
            return  # not later than what is known (a broker point from a skewed clock)
        if log_end_offset == last and len(offsets) > 1 and offsets[-2] == last:
            times[-1] = at  # the plateau goes on: move its end
            return
        # A new plateau end (same offset) or growth: the record(s) in between were
        # appended inside (times[-1], at].
        _append(track, at, log_end_offset, at - times[-1])
        if len(offsets) > self.max_points + self.slack:
            _compact(track, self.max_points, at)

    def record_poll(self, log_ends: Mapping[Key, int | None], at: float) -> None:
        """One poll's log-end offsets (None: not known this time): ``record`` each, then
        forget the partitions the poll did not ask about (``retain``). The commonest
        case at 20,000 partitions a poll, a plateau that goes on, is taken here at once.
        """
        tracks = self._tracks
        for partition, log_end_offset in log_ends.items():
            if log_end_offset is None:
                continue
            track = tracks.get(partition)
            if track is not None:
                offsets, times = track.offsets, track.times
                if (
                    log_end_offset == offsets[-1]
                    and len(offsets) > 1
                    and offsets[-2] == log_end_offset
                    and at > times[-1]
                ):
                    times[-1] = at  # as ``record`` does for a plateau that goes on
                    continue
            self.record(partition, at, log_end_offset)
        for gone in [p for p in tracks if p not in log_ends]:
            del tracks[gone]

    def prune_below(self, committed: Mapping[Key, Sequence[int]]) -> None:
        """``prune`` each partition below the lowest of the offsets groups committed on it."""
        tracks = self._tracks
        for partition, offsets_committed in committed.items():
            track = tracks.get(partition)
            if track is None or track.offsets[0] == track.offsets[-1]:
                continue  # one plateau (a quiet partition): never anything below to forget
            self.prune(partition, min(offsets_committed))

    def prune(self, partition: Hashable, oldest_needed: int) -> None:
        """Forget points below the lowest committed offset any group still has: keep
        the last point at or below it (the lower end of its bracket), and the points
        of the same offset before it."""
        track = self._tracks.get(partition)
        if track is None:
            return
        offsets = track.offsets
        keep_from = bisect_right(offsets, oldest_needed) - 1
        if keep_from > 0:
            # From the start of the plateau that point ends: a caught-up partition whose
            # log does not grow then has its plateau's end moved at the next poll, instead
            # of a point added there and dropped here again (20,000 partitions a poll).
            keep_from = bisect_left(offsets, offsets[keep_from])
        if keep_from > 0:
            del track.times[:keep_from]
            del track.offsets[:keep_from]
            del track.errors[:keep_from]
            track.errors[0] = 0.0

    # -- estimates --------------------------------------------------------------

    def estimate(
        self, partition: Hashable, committed_offset: int, now: float
    ) -> LagEstimate | None:
        """When the record at ``committed_offset`` was appended, as seconds before ``now``;
        None without any point, or when the only point is from this very moment."""
        track = self._tracks.get(partition)
        if track is None:
            return None
        offsets, times = track.offsets, track.times
        if committed_offset >= offsets[-1]:
            return _CAUGHT_UP
        i = bisect_right(offsets, committed_offset)
        if i == 0:
            if times[0] >= now:
                return None  # seen for the first time just now: no idea how old
            return LagEstimate(max(0.0, now - times[0]), lower_bound=True)
        t0, o0, t1, o1 = times[i - 1], offsets[i - 1], times[i], offsets[i]
        appended_at = t0 + (committed_offset + 1 - o0) / (o1 - o0) * (t1 - t0)
        return LagEstimate(max(0.0, now - appended_at), False, track.errors[i])

    def lag_seconds(self, partition: Hashable, committed_offset: int, now: float) -> float | None:
        estimate = self.estimate(partition, committed_offset, now)
        return None if estimate is None else estimate.seconds

    # -- dating by the broker ---------------------------------------------------

    def needs_dating(
        self, partition: Hashable, committed_offset: int, log_start_offset: int | None, now: float
    ) -> bool:
        """Whether the broker should be asked when the record at ``committed_offset``
        (or the oldest one kept, when retention deleted it) was appended."""
        track = self._tracks.get(partition)
        if track is None or now < track.undatable_until:
            return False
        offsets = track.offsets
        target = max(committed_offset, log_start_offset or 0)
        if target >= offsets[-1] or target >= track.own_from:
            return False  # caught up, or inside the agent's own observations
        i = bisect_right(offsets, target)
        if i == 0:
            return True
        width = track.times[i] - track.times[i - 1]
        age = now - track.times[i]
        return min(width, track.errors[i]) > max(
            DATING_ABSOLUTE_TOLERANCE, DATING_RELATIVE_TOLERANCE * age
        )

    def probe_time(
        self,
        partition: Hashable,
        committed_offset: int,
        log_start_offset: int | None,
        *,
        aim: "Aim",
    ) -> float:
        """The time to ask the broker for next (Unix seconds), narrowing the bracket of
        the record at ``committed_offset``: 0 (the oldest record kept) while no point is
        older; else a little before or after its interpolated append time (the answers
        then close the bracket around it from both sides), or the bracket's middle
        (taking turns, any bracket halves at least every third question)."""
        track = self._tracks[partition]
        offsets, times = track.offsets, track.times
        target = max(committed_offset, log_start_offset or 0)
        i = bisect_right(offsets, target)
        if i == 0:
            return 0.0
        t0, o0, t1, o1 = times[i - 1], offsets[i - 1], times[i], offsets[i]
        if aim == "middle":
            return (t0 + t1) / 2
        guess = t0 + (target + 1 - o0) / (o1 - o0) * (t1 - t0)
        # Inside the bracket: asking for one of its ends again would tell nothing new.
        margin = DATING_ABSOLUTE_TOLERANCE / 2
        if aim == "below":
            return max(guess - margin, (t0 + guess) / 2)
        return min(guess + margin, (guess + t1) / 2)

    def add_dated(
        self,
        partition: Hashable,
        asked: float,
        answer: "DatingAnswer",
        *,
        log_start_offset: int | None,
        log_end_offset: int,
    ) -> None:
        """The broker's answer to "the first record at or after ``asked``": its offset
        (-1: none, every record is older) and its time (None when it has none)."""
        track = self._tracks.get(partition)
        if track is None:
            return
        offset, timestamp = answer
        if offset < 0:
            _insert(track, asked, log_end_offset)
            return
        if timestamp is None or timestamp < 0:
            self.undatable(partition, asked)
            return
        if offset > (log_start_offset or 0) and asked > 0:
            # Records below the answer are older than ``asked`` (deleted ones too, unless
            # the answer is the oldest record kept: then nothing is known of them).
            _insert(track, min(asked, timestamp), offset)
        _insert(track, timestamp, offset)
        _insert(track, timestamp, offset + 1)

    def undatable(self, partition: Hashable, now: float) -> None:
        """The broker could not date this partition (no record times, an error)."""
        track = self._tracks.get(partition)
        if track is not None:
            track.undatable_until = now + UNDATABLE_RETRY_SECONDS


_CAUGHT_UP = LagEstimate(0.0)


def _append(track: _Track, at: float, offset: int, error: float) -> None:
    track.times.append(at)
    track.offsets.append(offset)
    track.errors.append(error)


def _insert(track: _Track, at: float, offset: int) -> None:
    """Add a point from the broker where it belongs; a time out of order (a producer's
    clock, or the agent's, off) is clamped between its neighbours."""
    offsets, times, errors = track.offsets, track.times, track.errors
    if offset > offsets[-1]:
        return  # newer than the agent's own last look: the next poll will see it
    pos = bisect_left(offsets, offset)
    while pos < len(offsets) and offsets[pos] == offset and times[pos] < at:
        pos += 1
    if pos == len(offsets):
        return  # after the agent's own last look: it knows better
    if pos > 0:
        at = max(at, times[pos - 1])
    at = min(at, times[pos])
    if offsets[pos] == offset and times[pos] == at:
        return  # known already
    if pos > 0 and offsets[pos - 1] == offset and times[pos - 1] == at:
        return
    old_error = errors[pos] if pos > 0 else 0.0
    times.insert(pos, at)
    offsets.insert(pos, offset)
    if pos == 0:
        errors.insert(0, 0.0)
        errors[1] = times[1] - at
        return
    # Splitting a segment: each half is bounded by its width, and by the old bound plus
    # how far the new point lies from the old line.
    t0, o0, t1, o1 = times[pos - 1], offsets[pos - 1], times[pos + 1], offsets[pos + 1]
    line = t0 + (offset - o0) / (o1 - o0) * (t1 - t0) if o1 > o0 else t0
    shifted = old_error + abs(at - line)
    errors.insert(pos, min(at - t0, shifted))
    errors[pos + 1] = min(t1 - at, shifted)


def _merged_error(
    times: "array[float]", offsets: "array[int]", errors: "array[float]", i: int
) -> float:
    """The error bound of the segment left when point ``i`` is removed."""
    t0, o0, t1, o1 = times[i - 1], offsets[i - 1], times[i + 1], offsets[i + 1]
    if o1 == o0:
        return 0.0  # a plateau: no record lies inside it
    line = t0 + (offsets[i] - o0) / (o1 - o0) * (t1 - t0)
    return min(t1 - t0, max(errors[i], errors[i + 1]) + abs(times[i] - line))


def _compact(track: _Track, keep: int, now: float) -> None:
    """Merge away the points whose removal costs least, relative to their segment's
    age, until ``keep`` remain; the first and the last point always stay. One pass:
    the cheapest points that are not neighbours go together (each merge's bound then
    holds on its own)."""
    times, offsets, errors = track.times, track.offsets, track.errors
    n = len(times)
    costs = sorted(
        (_merged_error(times, offsets, errors, i) / max(now - times[i + 1], _AGE_FLOOR_SECONDS), i)
        for i in range(1, n - 1)
    )
    remove: set[int] = set()
    for _, i in costs:
        if len(remove) >= n - keep:
            break
        if i - 1 not in remove and i + 1 not in remove:
            remove.add(i)
    merged = {i + 1: _merged_error(times, offsets, errors, i) for i in remove}
    kept = [i for i in range(n) if i not in remove]
    track.times = array("d", (times[i] for i in kept))
    track.offsets = array("q", (offsets[i] for i in kept))
    track.errors = array("d", (merged.get(i, errors[i]) for i in kept))


class DatingAnswer(NamedTuple):
    """The broker's answer for one partition: the first offset whose record time is at
    or after the time asked (-1: none is), and that record's time (Unix seconds; None
    when it has none)."""

    offset: int
    timestamp: float | None


@dataclass(frozen=True, slots=True)
class DatingWanted:
    """A partition some group is behind on: its committed offsets and its log's ends."""

    committed: tuple[int, ...]
    log_start_offset: int | None
    log_end_offset: int


@dataclass(slots=True)
class DatingOutcome:
    rounds: int = 0  # questions asked in turn (each one request per broker at most)
    partitions: int = 0  # partitions asked about at least once
    undatable: int = 0  # partitions the broker could not date (retried later)


# Each round is one ListOffsets per broker; a backlog still not dated within this many
# goes on at the next poll from where it stopped (its points stay in the table).
MAX_DATING_ROUNDS = 12


def date_backlogs(
    history: OffsetHistory,
    wanted: dict[Hashable, DatingWanted],
    ask: Callable[[dict[Hashable, float]], tuple[dict[Hashable, DatingAnswer], set[Hashable]]],
    now: float,
    max_rounds: int = MAX_DATING_ROUNDS,
) -> DatingOutcome:
    """Ask the broker's time index about the committed offsets the table cannot date.

    ``ask`` sends one question per partition (the time to look up) and returns the
    answers and the partitions the broker refused (an error for that partition); a
    partition in neither (its broker did not answer) is left for the next poll.
    """
    outcome = DatingOutcome()
    # Per partition: the offset being dated and how many times it was asked about.
    asked_about: dict[Hashable, tuple[int, int]] = {}
    silent: set[Hashable] = set()
    for _ in range(max_rounds):
        questions: dict[Hashable, float] = {}
        for partition, want in wanted.items():
            if partition in silent:
                continue
            start = want.log_start_offset
            for committed in want.committed:
                if history.needs_dating(partition, committed, start, now):
                    target, count = asked_about.get(partition, (committed, 0))
                    count = count if target == committed else 0
                    questions[partition] = history.probe_time(
                        partition, committed, start, aim=_AIMS[count % len(_AIMS)]
                    )
                    asked_about[partition] = (committed, count + 1)
                    break
        if not questions:
            break
        outcome.rounds += 1
        answers, refused = ask(questions)
        for partition, asked in questions.items():
            answer = answers.get(partition)
            if answer is not None:
                want = wanted[partition]
                history.add_dated(
                    partition,
                    asked,
                    answer,
                    log_start_offset=want.log_start_offset,
                    log_end_offset=want.log_end_offset,
                )
            elif partition in refused:
                history.undatable(partition, now)
                outcome.undatable += 1
            else:
                silent.add(partition)
    outcome.partitions = len(asked_about)
    return outcome
