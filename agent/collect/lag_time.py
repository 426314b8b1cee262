"""Lag in seconds from the history of log-end offsets.

The agent sees each partition's log-end offset at every poll. A point
``(t, offset)`` is kept when the offset moved, so it records the first time
the log was seen that long. The first unconsumed record (at the committed
offset ``c``) was appended when the log grew past ``c``; interpolating
between the two points around ``c + 1`` estimates that moment, and the lag
in seconds is how long ago it was.

Unlike a plain interpolation this never yields NaN: a caught-up consumer is
0; an idle partition the consumer has not caught up on keeps ageing from the
oldest point known; a committed offset older than all history is reported as
at least as old as that history (a lower bound, not a guess).
"""

from bisect import bisect_right
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field


@dataclass(slots=True)
class _Track:
    times: list[float] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)


class OffsetHistory:
    """Per-partition log-end offset history, bounded in age and in points."""

    def __init__(self, max_age_seconds: float = 1800.0, max_points: int = 64) -> None:
        if max_age_seconds <= 0 or max_points < 2:  # noqa: PLR2004 - interpolation needs two points
            raise ValueError("max_age_seconds must be > 0 and max_points >= 2")
        self.max_age = max_age_seconds
        self.max_points = max_points
        self._tracks: dict[Hashable, _Track] = {}

    def __len__(self) -> int:
        return len(self._tracks)

    def record(self, partition: Hashable, at: float, log_end_offset: int) -> None:
        track = self._tracks.get(partition)
        if track is None:
            self._tracks[partition] = _Track([at], [log_end_offset])
            return
        if log_end_offset < track.offsets[-1]:
            # The log was truncated or the topic re-created: old points lie.
            track.times[:] = [at]
            track.offsets[:] = [log_end_offset]
            return
        if log_end_offset == track.offsets[-1]:
            return
        track.times.append(at)
        track.offsets.append(log_end_offset)
        # Keep one point older than max_age: it bounds the lag of old commits.
        horizon = at - self.max_age
        drop = 0
        while drop + 1 < len(track.times) and track.times[drop + 1] <= horizon:
            drop += 1
        drop = max(drop, len(track.times) - self.max_points)
        if drop:
            del track.times[:drop]
            del track.offsets[:drop]

    def lag_seconds(self, partition: Hashable, committed_offset: int, now: float) -> float | None:
        """Seconds since the first unconsumed record was appended; None without history."""
        track = self._tracks.get(partition)
        if track is None:
            return None
        if committed_offset >= track.offsets[-1]:
            return 0.0
        if len(track.times) == 1 and track.times[0] >= now:
            return None  # seen just now for the first time: no idea how old the backlog is
        # The first point whose log-end offset is beyond the committed one.
        i = bisect_right(track.offsets, committed_offset)
        if i == 0:
            return max(0.0, now - track.times[0])
        t0, o0 = track.times[i - 1], track.offsets[i - 1]
        t1, o1 = track.times[i], track.offsets[i]
        appended_at = t0 + (committed_offset + 1 - o0) / (o1 - o0) * (t1 - t0)
        return max(0.0, now - appended_at)

    def retain(self, partitions: Iterable[Hashable]) -> None:
        """Forget partitions that are no longer polled (deleted topics, gone groups)."""
        keep = set(partitions)
        for partition in [p for p in self._tracks if p not in keep]:
            del self._tracks[partition]
