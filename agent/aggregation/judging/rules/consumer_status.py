"""consumer_status: every group's status over a sliding window of its commits, per partition
and for the group: ok, lagging, stalled, stopped or rewound.

Plain consumer groups and Kafka Streams applications alike. Each partition with a
committed offset and a lag is judged over the last ``consumer_status_window`` of polls
(the window), from what the agent read at each poll: the committed offset, the lag (log
end minus committed) and which member owns the partition.

* **stalled**: the group has members, and had some at every poll of the window, one of
  them owns the partition, and for the whole window its committed offset did not move
  while its lag stayed above 0. Something in the group is alive (it heartbeats) and
  makes no progress: a paused consumer, a loop retrying one record, a blocked thread.
* **stopped**: the group has no member, and for the whole window the committed offset
  did not move while the lag stayed above 0. Nobody consumes it.
* **rewound**: the committed offset went back at some poll of the window (a reset, a
  consumer seeking back): those records are read again.
* **lagging**: the lag grows across the window while the committed offset moves: each
  quarter of the window has a poll, the least lag of each quarter is above the quarter's
  before, and the last quarter's least lag is above the first quarter's greatest. Least
  values because lag from committed offsets is a saw-tooth (up between commits, down at
  each); above the first quarter's peak so that a consumer keeping up, whose lag wobbles
  between 0 and a few records, is not lagging.
* **ok**: anything else: caught up, keeping up, idle (no lag), or too little history to
  say (less than a window).

The group's status is its partitions' worst, in that order (stalled, stopped, rewound,
lagging, ok); a group without partitions to judge is ok.

What Burrow got wrong, and how this avoids it. Burrow judges a window of *commits*: a
consumer committing the same offset every few seconds while it works through a slow
batch fills its window with "no progress" and reads as stalled. This window is *time*:
a partition is stalled only when nothing moved for the whole of it, and the default
(5 minutes) is ``max.poll.interval.ms``'s: a consumer the group keeps has polled within
it, and its commits follow its polls. So a slow but moving consumer is never stalled.
Other false alarms avoided on purpose:

* A quiet topic that gets a record: its consumer had nothing to commit for an hour, and
  the poll right after the record shows lag 1 with an old commit. The lag must have been
  above 0 for the whole window too.
* A consumer that just joined (a restart, a scale-out) has had no time to commit: the
  group must have had members at every poll of the window.
* Offsets of a topic the group no longer reads linger (until they expire) with a growing
  lag: a partition no member owned within the window is not the group's work, and gets
  no status while the group has members.
* A group without members whose committed offsets keep moving is alive, just not in the
  group (consumers that assign partitions themselves: Flink, Spark, ``assign()``): never
  stopped.

Findings. One per group (subject: the group), for the statuses configured as findings
(``consumer_<status>_severity``; ``none``: the metric only); the most severe speaks in
the explanation, the evidence lists the partitions of each (the ten with the most lag).
Defaults:

* stalled is **critical**: records pile up unconsumed while the group looks healthy
  (Stable, members present), which no other rule says.
* rewound is **info**: usually someone's reset; the evidence says by how much.
* stopped is **none**: a group that has just lost its members while its lag grows is
  no_live_consumers' (critical), and groups abandoned with a backlog are common and
  nobody's emergency. When enabled, a stopped finding is only for a group gone for good:
  no member and no rebalance for ``thread_history`` and an evaluation window, and no
  no_live_consumers finding open (which stays open while the group's lag grows).
* lagging is **none**: every burst of input makes a lag grow while the consumer moves;
  how much it matters is time lag's to say (KafkaStreamsTimeLagHigh), and why is
  threads_fewer_than_tasks' and hot_partitions_colocated's.

The metric is literal, the finding leaves to other rules what they explain:

* A Kafka Streams task restoring its state commits nothing until it is done, and a
  stream thread restoring one task may hold all its others. The stalled partitions of a
  member that restore_stalled speaks for (a task of it with a restore gauge or a
  restore_stalled finding at this poll, or whose state was more than
  ``acceptable_recovery_lag`` behind its changelogs when the member joined) are not in
  this finding: restore_stalled judges whether that restore moves.
* While rebalance_loop holds, stalled partitions are not reported: a group that keeps
  rebalancing commits little, and that finding says why.

Not judged (neither holds nor closes) at a poll that sees the group rebalancing, or
whose snapshot had errors; the latter gives no status either (unknown, not guessed).

The status goes to /metrics at every poll: per group, 1 for its status and 0 for the
others, and how many partitions are in each status; the job's JSON API also lists each
partition not ok, with its status and lag.
"""

import itertools
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from agent.aggregation.judging.facts import Member, Partition, Poll
from agent.aggregation.judging.results import (
    GROUP_STATUS,
    GROUP_STATUS_PARTITIONS,
    PARTITION_STATUS,
    RESTORE_REMAINING,
)
from agent.aggregation.judging.rules.base import (
    Evaluation,
    Found,
    Gauge,
    Judgement,
    counted,
    thread_name,
)
from agent.aggregation.judging.rules.columns import (
    COMMITTED,
    KNOWN,
    LAG,
    OWNED,
    Bools,
    Floats,
    Ints,
    PartitionColumns,
    partition_columns,
)
from agent.aggregation.judging.rules.restore_stalled import (
    far_behind_members,
    unowned_stateful_subtopologies,
)
from agent.aggregation.judging.window import SeriesWindow
from agent.model.findings import SEVERITIES, FindingSubject
from agent.model.records import JsonObject

KIND = "consumer_status"

OK = "ok"
LAGGING = "lagging"
STALLED = "stalled"
STOPPED = "stopped"
REWOUND = "rewound"
# Worst first: the group's status is the first one any of its partitions has.
STATUSES = (STALLED, STOPPED, REWOUND, LAGGING, OK)

LISTED = 10  # partitions listed per status in the evidence (the most lag first)
TASKS_NAMED = 5  # tasks a restore hint names
QUARTERS = 4
_NONE = "none"

_Key = tuple[str, int]


class _Track:
    """One partition's rows over the window, walked from the newest poll back."""

    __slots__ = (
        "committed",
        "committed_run",
        "committed_since",
        "first_lag",
        "first_peak",
        "floors",
        "index",
        "lag",
        "lag_run",
        "lag_since",
        "moved",
        "newer",
        "newer_t",
        "owned",
        "partition",
        "rewind_at",
        "rewind_from",
        "rewind_records",
        "rewind_to",
        "topic",
    )

    def __init__(self, index: int, t: float, row: Partition) -> None:
        # Only rows with both are judged (``_statuses``).
        assert row.committed is not None  # noqa: S101
        assert row.lag is not None  # noqa: S101
        self.index = index  # its place in the newest poll's partitions
        self.topic, self.partition = row.topic, row.partition
        self.committed, self.lag = row.committed, row.lag
        self.owned = row.owner is not None  # a member owned it at a poll of the window
        # The committed offset's current run (unchanged since), and the lag's (above 0).
        self.committed_run, self.committed_since = True, t
        self.lag_run, self.lag_since = row.lag > 0, t
        self.newer, self.newer_t = row.committed, t  # the newest row with an offset
        self.moved = False  # the offset went forward within the window
        self.rewind_records = 0  # ... and back: by how many records in all
        self.rewind_at: float | None = None  # the newest poll that saw it go back
        self.rewind_from: int | None = None  # before the oldest step back
        self.rewind_to: int | None = None  # after the newest step back
        # The least lag of each quarter of the window (now is in the last one), the
        # greatest of the first, and the lag at the window's oldest row.
        self.floors: list[int | None] = [None] * (QUARTERS - 1) + [row.lag]
        self.first_peak: int | None = None
        self.first_lag: int | None = None

    def follow(self, older: "list[_Older]") -> None:  # noqa: PLR0912, PLR0915 - the hot loop
        """The partition's older rows, newest first: the runs and the rewinds (the row
        just before the window only tells whether a run began before it, or the offset
        moved into it), and within the window the owner and the lag per quarter.

        Every partition of every group at every poll comes through here: plain locals,
        written back once."""
        topic, number, i = self.topic, self.partition, self.index
        newer, newer_t = self.newer, self.newer_t
        committed_run, committed_since = True, self.committed_since
        lag_run, lag_since = self.lag_run, self.lag_since
        moved, owned = False, self.owned
        rewind_records, rewind_at, rewind_from, rewind_to = 0, None, None, None
        floors, peak, first_lag = self.floors, None, None
        for poll in older:
            rows = poll.rows
            # Polls list the partitions in the same order, mostly: look there first.
            row = rows[i] if i < poll.count else None
            if row is None or row.partition != number or row.topic != topic:
                row = poll.find(topic, number)
                if row is None:
                    continue
            _, _, _, committed, lag, owner = row
            t = poll.t
            if committed is not None:
                if committed != newer:
                    if committed > newer:
                        rewind_records += committed - newer
                        if rewind_at is None:
                            rewind_at, rewind_to = newer_t, newer
                        rewind_from = committed
                    else:
                        moved = True
                    committed_run = False
                    newer = committed
                elif committed_run:
                    committed_since = t
                newer_t = t
            if lag_run and lag is not None:
                if lag > 0:
                    lag_since = t
                else:
                    lag_run = False
            q = poll.quarter
            if q < 0:
                continue  # the poll before the window
            if owner is not None:
                owned = True
            if lag is not None:
                first_lag = lag
                floor = floors[q]
                if floor is None or lag < floor:
                    floors[q] = lag
                if q == 0 and (peak is None or lag > peak):
                    peak = lag
        self.newer, self.newer_t = newer, newer_t
        self.committed_run, self.committed_since = committed_run, committed_since
        self.lag_run, self.lag_since = lag_run, lag_since
        self.moved, self.owned = moved, owned
        self.rewind_records, self.rewind_at = rewind_records, rewind_at
        self.rewind_from, self.rewind_to = rewind_from, rewind_to
        self.first_peak, self.first_lag = peak, first_lag

    def further(self, t: float, row: Partition) -> None:
        """One row older than the window, for a partition stuck throughout it: how long
        before the window its runs began."""
        if self.committed_run and row.committed is not None:
            if row.committed == self.newer:
                self.committed_since = t
            else:
                self.committed_run = False
        if self.lag_run and row.lag is not None:
            if row.lag > 0:
                self.lag_since = t
            else:
                self.lag_run = False

    @property
    def stuck_since(self) -> float:
        """Since when the committed offset has stood still with records waiting."""
        return max(self.committed_since, self.lag_since)

    @property
    def lagging(self) -> bool:
        """Further behind at every quarter while moving; at its best now further behind
        than it was at its worst in the first quarter."""
        if not self.moved or self.lag <= 0 or self.first_peak is None:
            return False
        floors = self.floors
        for i in range(1, QUARTERS):
            before, floor = floors[i - 1], floors[i]
            if before is None or floor is None or floor <= before:
                return False
        last = floors[-1]
        return last is not None and last > self.first_peak


class _Status(NamedTuple):
    """One partition's status at the judged poll."""

    status: str
    track: _Track
    owner: str | None  # member id


# Gauges are immutable: every group with the same status (counts) shares them.
_STATUS_GAUGES = {
    status: tuple(Gauge(GROUP_STATUS, float(s == status), status=s) for s in STATUSES)
    for status in STATUSES
}


@lru_cache(maxsize=4096)
def _partition_gauges(counts: tuple[int, ...]) -> tuple[Gauge, ...]:
    return tuple(
        Gauge(GROUP_STATUS_PARTITIONS, float(n), status=s)
        for s, n in zip(STATUSES, counts, strict=True)
    )


def judge(ev: Evaluation) -> Judgement:
    now = ev.now
    if now.errors:
        # Members or offsets not read: no status is better than a wrong one.
        return Judgement(KIND, judged=False)
    p = ev.params
    statuses, ok, unassigned = _statuses(ev)
    by_status: dict[str, list[_Status]] = {s: [] for s in STATUSES}
    for st in statuses:
        by_status[st.status].append(st)
    counts = {s: len(by_status[s]) for s in STATUSES}
    counts[OK] += ok
    group_status = next((s for s in STATUSES if counts[s]), OK)
    gauges = _STATUS_GAUGES[group_status] + _partition_gauges(tuple(counts[s] for s in STATUSES))
    # The partitions not ok by name, for the job's JSON API (a healthy group adds none).
    gauges += tuple(
        Gauge(
            PARTITION_STATUS,
            float(st.track.lag),
            topic=st.track.topic,
            partition=st.track.partition,
            status=st.status,
        )
        for st in statuses
    )
    if now.rebalancing:
        return Judgement(KIND, judged=False, gauges=gauges)
    severities = {
        STALLED: p.consumer_stalled_severity,
        STOPPED: p.consumer_stopped_severity,
        REWOUND: p.consumer_rewound_severity,
        LAGGING: p.consumer_lagging_severity,
    }
    reportable = {
        s: _not_explained_elsewhere(ev, s, by_status[s])
        for s in STATUSES
        if by_status[s] and severities.get(s, _NONE) != _NONE
    }
    reported = [s for s in STATUSES if reportable.get(s)]
    if not reported:
        return Judgement(KIND, judged=True, gauges=gauges)
    found = _found(ev, group_status, reported, severities, reportable, counts, unassigned)
    return Judgement(KIND, judged=True, found=(found,), gauges=gauges)


# -- the statuses -------------------------------------------------------------------------


def _statuses(ev: Evaluation, *, by_row: bool = False) -> tuple[list[_Status], int, int]:
    """Every judged partition's status at the judged poll but ok, in the newest poll's
    order; how many are ok; and how many partitions got none (stuck, but owned by no
    member of a live group).

    The window's partitions are judged all at once, as columns (``_Columns``); a
    partition whose rows do not fit them (a row missing or without an offset or a lag,
    an offset that went back) is walked row by row (``_Track.follow``), as are all of
    them when ``by_row`` (the tests compare both)."""
    w, now, span = ev.window, ev.now, ev.params.consumer_status_window
    rows = now.partitions or ()
    index = _judged_rows(rows)
    if not index:
        return [], 0, 0
    cut = now.t - span  # a run that began at or before this spans the window
    walked, first = _walked(w, span)
    quarter, last = span / QUARTERS, QUARTERS - 1
    # The quarter of the window each poll walked falls in (0: the oldest; -1: before it).
    quarters = [
        max(min(int((poll.t - cut) // quarter), last), 0) if inside else -1
        for poll, inside in walked
    ]
    members_now = now.member_count > 0
    members_throughout = members_now and _members_throughout(w.polls, cut)
    columns = None
    if walked and not by_row:
        columns = _Columns.of(now, index, walked, quarters, cut)
    statuses = []
    ok = unassigned = 0
    older: list[_Older] | None = None
    if columns is None:
        positions: Sequence[int] = range(len(index))
    else:
        codes = columns.codes(members_now, members_throughout)
        ok = int(np.count_nonzero(codes == _OK))
        unassigned = int(np.count_nonzero(codes == _UNASSIGNED))
        positions = np.flatnonzero(codes > _UNASSIGNED).tolist()
    for k in positions:
        i = index[k]
        status: str | None
        if columns is not None and columns.clean[k]:
            tr = columns.track(k, i, rows[i])
            status = _CODES[int(columns.status[k])]
        else:
            tr = _Track(i, now.t, rows[i])
            if older is None:
                older = [_Older(poll, q) for (poll, _), q in zip(walked, quarters, strict=True)]
            tr.follow(older)
            status = _status_of(tr, cut, members_now=members_now, throughout=members_throughout)
        if status is None:
            unassigned += 1
        elif status == OK:
            ok += 1
        else:
            statuses.append(_Status(status, tr, rows[i].owner))
    stuck_tracks = [st.track for st in statuses if st.status in (STALLED, STOPPED)]
    if stuck_tracks:
        _walk_further(stuck_tracks, w.polls, first)
    return statuses, ok, unassigned


def _judged_rows(rows: tuple[Partition, ...]) -> list[int]:
    """The newest poll's rows with a committed offset and a lag: those judged."""
    columns = partition_columns(rows) if rows else None
    if columns is not None and columns.values[KNOWN].all():
        return list(range(len(rows)))
    return [i for i, row in enumerate(rows) if row.committed is not None and row.lag is not None]


def _status_of(tr: _Track, cut: float, *, members_now: bool, throughout: bool) -> str | None:
    """A partition's status (None: stuck but no member's, so none)."""
    stuck = tr.lag > 0 and tr.stuck_since <= cut
    if stuck and not members_now:
        return STOPPED
    if stuck and throughout:
        if not tr.owned:
            return None  # no member reads it: a topic the group left
        return STALLED
    if tr.rewind_at is not None:
        return REWOUND
    if tr.lagging:
        return LAGGING
    return OK


# Status codes of the columns: ok and unassigned are counted, the others listed.
_OK, _UNASSIGNED, _STALLED, _STOPPED, _LAGGING, _BY_ROW = range(6)
_CODES: dict[int, str] = {_STALLED: STALLED, _STOPPED: STOPPED, _LAGGING: LAGGING}


class _Columns:
    """The judged partitions over the window, as ``_Track.follow`` would find them, all at
    once: one row per poll walked (newest first), one column per judged partition of the
    newest poll. A column is *clean* when every poll walked has its row, with an offset
    and a lag, and its offset never went back: then its runs, quarters and status follow
    from the arrays; other columns are walked row by row."""

    __slots__ = (
        "clean",
        "committed_since",
        "first_lag",
        "floors",
        "lag_run",
        "lag_since",
        "lagging",
        "moved",
        "newer",
        "newer_t",
        "owned",
        "peak",
        "status",
        "stuck",
    )
    clean: Bools
    committed_since: Floats
    first_lag: Ints | None
    floors: list[Ints | None]
    lag_run: Bools
    lag_since: Floats
    lagging: Bools
    moved: Bools
    newer: Ints
    newer_t: float
    owned: Bools
    peak: Ints | None
    status: Ints
    stuck: Bools

    @classmethod
    def of(
        cls,
        now: Poll,
        index: list[int],
        walked: list[tuple[Poll, bool]],
        quarters: list[int],
        cut: float,
    ) -> "_Columns | None":
        """None when some poll's offsets do not fit 64-bit integers: walked row by row."""
        rows = _window_rows(now, index, walked)
        if rows is None:
            return None
        self = cls()
        self._runs(now, walked, rows, cut)
        self._quarters(rows, quarters)
        return self

    def _runs(self, now: Poll, walked: list[tuple[Poll, bool]], rows: "_Rows", cut: float) -> None:
        """The offset's run and the lag's, back from the newest poll; whether it moved."""
        committed = rows.committed
        last = len(committed)
        # The offset at the row before (newer), and whether it moved, or went back.
        newer = np.empty_like(committed)
        newer[0] = rows.now[COMMITTED]
        newer[1:] = committed[:-1]
        changed = committed != newer
        went_back = (committed > newer).any(0)
        self.clean = np.logical_and(rows.walked[:, KNOWN].all(0), ~went_back)
        self.moved = changed.any(0)
        # Times of the newest poll (0) and of each poll walked (1...): a run that ends at
        # walked poll j began at time j (the row before it).
        times = np.array([now.t, *(poll.t for poll, _ in walked)])
        self.committed_since = np.where(self.moved, times[changed.argmax(0)], times[last])
        self.newer, self.newer_t = committed[last - 1], float(times[last])
        waiting = rows.now[LAG] > 0
        caught_up = rows.lag <= 0
        ended = caught_up.any(0)
        self.lag_run = waiting & ~ended
        self.lag_since = np.where(
            waiting, np.where(ended, times[caught_up.argmax(0)], times[last]), now.t
        )
        self.stuck = waiting & (np.maximum(self.committed_since, self.lag_since) <= cut)

    def _quarters(self, rows: "_Rows", quarters: list[int]) -> None:
        """Within the window: whether a member owned it, the least lag per quarter, the
        first quarter's greatest, the oldest lag; and so whether it is lagging."""
        lag, now_lag = rows.lag, rows.now[LAG]
        at = _rows_of(quarters)
        inside = [j for j, q in enumerate(quarters) if q >= 0]
        self.owned = rows.now[OWNED] > 0
        self.first_lag = None
        if inside:
            self.owned = self.owned | (rows.walked[inside, OWNED] > 0).any(0)
            self.first_lag = lag[inside[-1]]
        floors: list[Ints | None] = [
            lag[at[quarter]].min(0) if quarter in at else None for quarter in range(QUARTERS)
        ]
        floors[-1] = now_lag if floors[-1] is None else np.minimum(floors[-1], now_lag)
        self.floors = floors
        self.peak = lag[at[0]].max(0) if 0 in at else None
        lagging = self.moved & (now_lag > 0)
        rising = [f for f in floors if f is not None]
        if self.peak is None or len(rising) < QUARTERS:
            lagging &= False
        else:
            for before, floor in itertools.pairwise(rising):
                lagging &= floor > before
            lagging &= rising[-1] > self.peak
        self.lagging = lagging

    def codes(self, members_now: bool, throughout: bool) -> npt.NDArray[np.int64]:
        """Each column's status code (``_BY_ROW``: not clean, walk it row by row)."""
        stuck = self.stuck
        status = np.where(self.lagging, _LAGGING, _OK)
        if not members_now:
            status = np.where(stuck, _STOPPED, status)
        elif throughout:
            status = np.where(stuck, np.where(self.owned, _STALLED, _UNASSIGNED), status)
        self.status = status
        return np.where(self.clean, status, _BY_ROW)

    def track(self, k: int, i: int, row: Partition) -> _Track:
        """Column ``k`` (the newest poll's row ``i``) as the track its walk would leave."""
        tr = _Track(i, 0.0, row)
        moved = bool(self.moved[k])
        tr.committed_run, tr.committed_since = not moved, float(self.committed_since[k])
        tr.lag_run, tr.lag_since = bool(self.lag_run[k]), float(self.lag_since[k])
        tr.newer, tr.newer_t = int(self.newer[k]), self.newer_t
        tr.moved, tr.owned = moved, bool(self.owned[k])
        tr.floors = [None if f is None else int(f[k]) for f in self.floors]
        tr.first_peak = None if self.peak is None else int(self.peak[k])
        tr.first_lag = None if self.first_lag is None else int(self.first_lag[k])
        return tr


def _rows_of(quarters: list[int]) -> dict[int, slice | list[int]]:
    """The rows walked of each quarter: a slice where they follow one another (always,
    in a window ordered by time), else their indices."""
    at: dict[int, list[int]] = {}
    for j, q in enumerate(quarters):
        at.setdefault(q, []).append(j)
    return {
        q: slice(js[0], js[-1] + 1) if js[-1] - js[0] + 1 == len(js) else js for q, js in at.items()
    }


class _Rows(NamedTuple):
    """The judged partitions' rows: the newest poll's, shape (4, partitions), and each
    poll walked's (newest first), shape (polls, 4, partitions); ``columns.COMMITTED`` ...
    index the second axis."""

    now: Ints
    walked: Ints

    @property
    def committed(self) -> Ints:
        return self.walked[:, COMMITTED]

    @property
    def lag(self) -> Ints:
        return self.walked[:, LAG]


def _window_rows(now: Poll, index: list[int], walked: list[tuple[Poll, bool]]) -> _Rows | None:
    mine = partition_columns(now.partitions or ())
    if mine is None:
        return None
    per_poll = []
    for poll, _ in walked:
        theirs = partition_columns(poll.partitions or ())
        if theirs is None:
            return None
        same = theirs.keys is mine.keys or theirs.keys == mine.keys
        per_poll.append(theirs.values if same else _aligned(theirs, mine.keys))
    rows = _Rows(mine.values, np.array(per_poll))
    if len(index) == len(mine.keys):
        return rows
    sel = np.array(index, dtype=np.intp)
    return _Rows(rows.now[:, sel], rows.walked[:, :, sel])


def _aligned(theirs: PartitionColumns, keys: tuple[tuple[str, int], ...]) -> Ints:
    """An older poll's columns in the newest poll's row order, as ``_Older.at`` finds each
    row (at the same place, else by its key: the last row of that key); a row not found
    is unknown, owned by nobody."""
    count = len(theirs.keys)
    by_key: dict[tuple[str, int], int] | None = None
    at = []
    for i, key in enumerate(keys):
        if i < count and theirs.keys[i] == key:
            at.append(i)
            continue
        if by_key is None:
            by_key = {k: j for j, k in enumerate(theirs.keys)}
        at.append(by_key.get(key, -1))
    if count == 0:
        return np.zeros((4, len(keys)), dtype=np.int64)
    found = np.array(at, dtype=np.intp)
    missing = found < 0
    found[missing] = 0
    values = theirs.values[:, found]
    values[KNOWN:, missing] = 0  # neither known nor owned
    return values


def _walked(w: SeriesWindow, span: float) -> tuple[list[tuple[Poll, bool]], int]:
    """The polls older than the judged one that still hold partitions, newest first: the
    window's and the one before it (does a run reach back past the window's start?), each
    with whether it is within the window; and where the polls older than those end (how
    far back a stuck partition's runs go is read there, for its evidence)."""
    polls = w.polls
    start = len(polls) - len(w.looking_back(span))
    first = max(start - 1, 0)
    walked = [
        (poll, i >= start)
        for i in range(len(polls) - 2, first - 1, -1)
        if (poll := polls[i]).partitions is not None and not poll.errors
    ]
    return walked, first


class _Older:
    """An older poll as the walk reads it."""

    __slots__ = ("by_key", "count", "quarter", "rows", "t")

    def __init__(self, poll: Poll, quarter: int) -> None:
        self.t = poll.t
        self.rows = poll.partitions or ()
        self.count = len(self.rows)
        self.quarter = quarter  # of the window (0: the oldest); -1: the poll before it
        self.by_key: dict[_Key, Partition] | None = None

    def at(self, index: int, topic: str, number: int) -> Partition | None:
        """The partition's row: at ``index`` (its place in the newest poll), mostly."""
        if index < self.count:
            row = self.rows[index]
            if row.partition == number and row.topic == topic:
                return row
        return self.find(topic, number)

    def find(self, topic: str, number: int) -> Partition | None:
        if self.by_key is None:
            self.by_key = {(r.topic, r.partition): r for r in self.rows}
        return self.by_key.get((topic, number))


def _walk_further(tracks: list[_Track], polls: Sequence[Poll], end: int) -> None:
    """Stuck partitions' rows in ``polls[:end]`` (older than the window), newest first,
    while a run of theirs goes on."""
    for k in range(end - 1, -1, -1):
        poll = polls[k]
        if poll.partitions is None or poll.errors:
            continue
        tracks = [tr for tr in tracks if tr.committed_run or tr.lag_run]
        if not tracks:
            return
        older = _Older(poll, -1)
        for tr in tracks:
            row = older.at(tr.index, tr.topic, tr.partition)
            if row is not None:
                tr.further(poll.t, row)


def _members_throughout(polls: Sequence[Poll], cut: float) -> bool:
    """The group has had members at every poll back to one at or before ``cut`` (polls
    that failed to read the group count neither way)."""
    for i in range(len(polls) - 1, -1, -1):
        poll = polls[i]
        if poll.errors:
            continue
        if not poll.members:
            return False
        if poll.t <= cut:
            return True
    return False


# -- what other rules already say ---------------------------------------------------------


def _not_explained_elsewhere(ev: Evaluation, status: str, found: list[_Status]) -> list[_Status]:
    """The partitions of ``status`` no other rule's finding speaks for at this poll."""
    if status == STALLED:
        loop = ev.said("rebalance_loop")
        if loop is not None and loop.found:
            return []
        restoring = _restoring_members(ev)
        return [st for st in found if st.owner not in restoring]
    if status == STOPPED:
        left = ev.said("no_live_consumers")
        if (left is not None and left.found) or not _gone_for_good(ev):
            return []
    return found


def _restoring_members(ev: Evaluation) -> frozenset[str]:
    """The members restore_stalled speaks for: holding a task with its restore gauge (a
    restore under way, from the broker or a sidecar) or its finding (a restore stuck) at
    this poll, or one it will judge once commits stop (restoring as the broker sees it)."""
    judgement = ev.said("restore_stalled")
    tasks: set[str | None] = set()
    if judgement is not None:
        tasks = {g.task for g in judgement.gauges if g.metric == RESTORE_REMAINING}
        tasks |= {f.subject.task for f in judgement.found}
    holding = {m.member_id for m in ev.now.members if any(t.task in tasks for t in m.active)}
    return frozenset(holding) | far_behind_members(ev)


def _gone_for_good(ev: Evaluation) -> bool:
    """No member and no rebalance at any poll of thread_history and one evaluation window,
    and not no_live_consumers' finding: it opens on a group that had members lately (or a
    rising generation) and stays open for as long as its lag grows."""
    p = ev.params
    if ev.is_open("no_live_consumers"):
        return False
    generations = set()
    for poll in ev.window.looking_back(p.thread_history + p.evaluation_window):
        if poll.member_count > 0:
            return False
        generation = poll.generation if poll.generation is not None else poll.group_epoch
        if generation is not None:
            generations.add(generation)
    return len(generations) <= 1


# -- the finding --------------------------------------------------------------------------


def _found(  # noqa: PLR0917 - one finding's every part
    ev: Evaluation,
    group_status: str,
    reported: list[str],
    severities: Mapping[str, str],
    reportable: Mapping[str, list[_Status]],
    counts: Mapping[str, int],
    unassigned: int,
) -> Found:
    now, span = ev.now, ev.params.consumer_status_window
    rank = {s: i for i, s in enumerate(SEVERITIES)}  # critical first
    # The most severe status speaks; between equals, the worse one.
    main = min(reported, key=lambda s: (rank[severities[s]], STATUSES.index(s)))
    owners = _owners(now.members, unowned_stateful_subtopologies(ev.group, now))
    evidence: JsonObject = {
        "status": group_status,
        "reported": list(reported),
        "window_seconds": span,
        "members": now.member_count,
        "group_state": now.state,
        "lag_records": now.lag_total,
        "partition_counts": dict(counts),
        "unassigned_partitions": unassigned,
        # Stalled, but a restore's: restore_stalled speaks for them.
        "stalled_restoring": counts[STALLED] - len(reportable.get(STALLED, ())),
    }
    since = now.t
    for status in reported:
        listed = sorted(reportable[status], key=_most_lag)
        evidence[status] = [
            _partition_evidence(now.t, st, status, owners) for st in listed[:LISTED]
        ]
        since = min(since, _since(status, listed, now.t - span))
    explanation = _explain(ev, main, reportable[main])
    if main == STALLED:
        explanation += _restore_hint(reportable[main], owners)
    others = [f"{counted(len(reportable[s]), 'partition')} {s}" for s in reported if s != main]
    if others:
        explanation += f"; also {', '.join(others)}"
    return Found(KIND, severities[main], FindingSubject(), explanation, evidence, since=since)


def _most_lag(st: _Status) -> tuple[int, str, int]:
    return (-st.track.lag, st.track.topic, st.track.partition)


def _since(status: str, statuses: list[_Status], window_start: float) -> float:
    """When the status's condition began, at its earliest partition."""
    if status in (STALLED, STOPPED):
        return min(st.track.stuck_since for st in statuses)
    if status == REWOUND:
        return min(st.track.rewind_at or window_start for st in statuses)
    return window_start


class _Owner(NamedTuple):
    name: str  # "thread 1 of instance p" or "member <client id>"
    tasks: dict[_Key, str]  # the Kafka Streams task reading each of its partitions
    # Its tasks that hold state whose changelogs the broker cannot tie to them.
    restore_unseen: frozenset[str]


def _owners(members: Sequence[Member], unowned: frozenset[str]) -> dict[str, _Owner]:
    """Member id -> who it is, its partitions' tasks, and which of them may be restoring
    unseen (their sub-topology in ``unowned``)."""
    return {
        m.member_id: _Owner(
            thread_name(m.process, m.thread, m.client_id),
            {(tp.topic, tp.partition): task.task for task in m.active for tp in task.partitions},
            frozenset(task.task for task in m.active if task.subtopology in unowned),
        )
        for m in members
    }


def _restore_unseen(st: _Status, owners: Mapping[str, _Owner]) -> str | None:
    """The stalled partition's task, if it holds state restore_stalled cannot judge."""
    owner = owners.get(st.owner) if st.owner is not None else None
    if owner is None:
        return None
    task = owner.tasks.get((st.track.topic, st.track.partition))
    return task if task in owner.restore_unseen else None


def _restore_hint(statuses: list[_Status], owners: Mapping[str, _Owner]) -> str:
    """What to suspect when the stalled tasks hold state whose restore the broker cannot
    see: with changelogs it cannot tie to tasks, a stuck restore looks like this."""
    tasks = sorted({task for st in statuses if (task := _restore_unseen(st, owners))})
    if not tasks:
        return ""
    more = len(tasks) - TASKS_NAMED
    named = ", ".join(tasks[:TASKS_NAMED]) + (f" and {more} more" if more > 0 else "")
    holds = "task {} holds" if len(tasks) == 1 else "tasks {} hold"
    return (
        f"; {holds.format(named)} state and a changelog with records has no owner the "
        "broker can name: a state restore that does not progress is the likely cause (the "
        "instance's log, or a ksmon sidecar beside it, shows the restore)"
    )


def _partition_evidence(
    t: float, st: _Status, status: str, owners: Mapping[str, _Owner]
) -> JsonObject:
    tr = st.track
    entry: JsonObject = {
        "topic": tr.topic,
        "partition": tr.partition,
        "committed_offset": tr.committed,
        "lag": tr.lag,
        "lag_growth": None if tr.first_lag is None else tr.lag - tr.first_lag,
    }
    if status in (STALLED, STOPPED):
        entry["seconds_without_commit"] = t - tr.committed_since
        # The same offset at the oldest poll the job keeps partitions of: longer, maybe.
        entry["seconds_without_commit_is_a_bound"] = tr.committed_run
    if status == STALLED:
        owner = owners.get(st.owner) if st.owner is not None else None
        entry["owner"] = None if owner is None else owner.name
        entry["task"] = None if owner is None else owner.tasks.get((tr.topic, tr.partition))
        entry["restore_likely"] = _restore_unseen(st, owners) is not None
    if status == REWOUND:
        entry["rewound_records"] = tr.rewind_records
        entry["from_offset"] = tr.rewind_from
        entry["to_offset"] = tr.rewind_to
        entry["rewound_at"] = tr.rewind_at
    return entry


def _named(statuses: list[_Status]) -> str:
    """``orders-0, orders-3 and 4 more`` (the most lag first)."""
    listed = sorted(statuses, key=_most_lag)
    shown = [f"{st.track.topic}-{st.track.partition}" for st in listed[:3]]
    more = len(listed) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def _quiet(t: float, statuses: list[_Status]) -> str:
    """``360 s``, or ``at least 360 s`` when the oldest poll kept shows the same offset."""
    longest = max(statuses, key=lambda st: (t - st.track.committed_since, st.track.committed_run))
    seconds = f"{t - longest.track.committed_since:.0f} s"
    return f"at least {seconds}" if longest.track.committed_run else seconds


def _explain(ev: Evaluation, status: str, statuses: list[_Status]) -> str:
    now, span = ev.now, ev.params.consumer_status_window
    n = counted(len(statuses), "partition")
    waiting = sum(st.track.lag for st in statuses)
    where = _named(statuses)
    quiet = _quiet(now.t, statuses)
    if status == STALLED:
        return (
            f"group {ev.group} has {counted(now.member_count, 'member')} yet committed "
            f"nothing on {n} ({where}) for {quiet} while {waiting} records wait there: "
            "a consumer that stays in the group without progress is paused, retrying one "
            "record again and again, or blocked (a slow one that still moves commits within "
            f"{span:.0f} s); look at its logs and a thread dump"
        )
    if status == STOPPED:
        return (
            f"group {ev.group} has no member, and nothing was committed on {n} ({where}) for "
            f"{quiet} while {waiting} records wait there: nobody consumes them; start "
            "its consumers, or delete the group if it was retired"
        )
    if status == REWOUND:
        records = sum(st.track.rewind_records for st in statuses)
        return (
            f"group {ev.group}'s committed offsets went back on {n} ({where}) within the "
            f"last {span:.0f} s, by {records} records in all: a reset, or a consumer seeking "
            "back, reads them again; expect them processed twice downstream"
        )
    growth = sum(
        st.track.lag - st.track.first_lag for st in statuses if st.track.first_lag is not None
    )
    return (
        f"group {ev.group} falls behind on {n} ({where}): their lag grew by {growth} records "
        f"over the last {span:.0f} s while its commits moved ({waiting} records behind now)"
    )
