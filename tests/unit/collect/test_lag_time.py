from bisect import bisect_right
from collections.abc import Hashable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.collect.lag_time import (
    DATING_ABSOLUTE_TOLERANCE,
    DATING_RELATIVE_TOLERANCE,
    DatingAnswer,
    DatingWanted,
    OffsetHistory,
    date_backlogs,
)

P = ("orders", 0)


def history_of(*points: tuple[float, int]) -> OffsetHistory:
    history = OffsetHistory(max_points=8)
    for at, offset in points:
        history.record(P, at, offset)
    return history


@pytest.mark.parametrize(
    ("points", "committed", "now", "expected", "why"),
    [
        ([(0, 100), (10, 200)], 200, 20, 0.0, "committed at the log end: caught up"),
        (
            [(0, 100), (10, 200)],
            250,
            20,
            0.0,
            "committed past the log end (truncation race): caught up",
        ),
        (
            [(0, 100), (10, 200)],
            149,
            20,
            15.0,
            "record 149 was appended when the log reached 150, halfway between t=0 and t=10",
        ),
        ([(0, 100), (10, 200)], 199, 20, 10.0, "the last record before the end: appended at t=10"),
        (
            [(0, 100), (10, 200)],
            50,
            20,
            20.0,
            "older than all history: at least as old as the oldest point (a lower bound)",
        ),
        (
            [(0, 100), (10, 100), (20, 100)],
            90,
            30,
            30.0,
            "an idle partition the consumer is behind on keeps ageing, never NaN",
        ),
        ([(5, 100)], 90, 5, None, "seen once, just now: the backlog's age is unknown"),
        ([(5, 100)], 90, 65, 60.0, "seen once a minute ago and never grew: at least a minute"),
        (
            [(0, 100), (3600, 100), (3610, 200)],
            149,
            3620,
            15.0,
            "a burst after an idle hour: appended within the last poll, not over the hour",
        ),
    ],
)
def test_lag_seconds_interpolates_the_append_time_of_the_first_unconsumed_record(
    points: list[tuple[float, int]], committed: int, now: float, expected: float | None, why: str
) -> None:
    assert history_of(*points).lag_seconds(P, committed, now) == expected, why


def test_a_value_older_than_every_point_is_a_lower_bound_and_says_so() -> None:
    history = history_of((0, 100), (10, 200))

    older = history.estimate(P, 50, 20)
    inside = history.estimate(P, 149, 20)

    assert older is not None
    assert older.lower_bound
    assert older.seconds == 20.0
    assert inside is not None
    assert not inside.lower_bound
    assert inside.error_seconds == 10.0, "the bracket is one poll wide"


def test_unknown_partition_has_no_lag_seconds() -> None:
    assert OffsetHistory().lag_seconds(P, 0, 100.0) is None


def test_a_truncated_log_restarts_the_history() -> None:
    history = history_of((0, 1000), (10, 2000))
    history.record(P, 20, 5)  # topic deleted and re-created

    assert history.lag_seconds(P, 2, 30) == 10.0, "only the new point counts"


def test_a_consumer_stuck_for_hours_keeps_ageing_in_bounded_points() -> None:
    """The issue's case: 64 points used to stop the age at 63 polls."""
    history = OffsetHistory(max_points=16, slack=8)
    rate = 10.0  # records per second, steady
    for poll in range(0, 7201, 10):
        history.record(P, poll, int(poll * rate))
        assert len(history.points(P)) <= 24

    estimate = history.estimate(P, 100, 7200)

    assert estimate is not None
    assert not estimate.lower_bound
    assert estimate.seconds == pytest.approx(7200 - 10, abs=10), "record 100 was appended at 10 s"
    assert history.points(P)[0] == (0, 0), "the oldest point is never dropped for its age"


def test_irregular_traffic_keeps_the_points_its_shape_needs() -> None:
    """Bursts every ten minutes for four hours, idle in between: each burst needs two
    points (the plateau's end and the jump), more than the table holds. The last hour
    stays at poll resolution; an older burst may be dated to its neighbour's time (off
    by one period), never further, and its error bound says so."""
    history = OffsetHistory()
    leo, truth = 0, {}
    for poll in range(0, 4 * 3600 + 1, 10):
        if poll % 600 == 0:
            truth[leo] = poll  # the burst's first record is appended during the poll gap
            leo += 1000
        history.record(P, poll, leo)

    for first_of_burst, appended_by in truth.items():
        estimate = history.estimate(P, first_of_burst, 4 * 3600)
        assert estimate is not None
        age = 4 * 3600 - appended_by
        assert estimate.seconds == pytest.approx(age, abs=10.0 if age <= 3600 else 600.0)
        assert abs(estimate.seconds - age) <= estimate.error_seconds + 10.0


def test_prune_forgets_points_below_every_committed_offset_but_keeps_the_bracket() -> None:
    history = history_of((0, 100), (10, 200), (20, 300), (30, 400))

    history.prune(P, 250)

    assert history.points(P) == [(10, 200), (20, 300), (30, 400)]
    assert history.lag_seconds(P, 250, 40) == pytest.approx(24.9)


def test_a_caught_up_partition_that_does_not_grow_keeps_one_plateau() -> None:
    """Polled and pruned at its log end, it keeps where its plateau began and where it
    was last seen: the end moves, no point is added and dropped again at every poll."""
    history = OffsetHistory(max_points=8)
    for at in (0, 10, 20, 30):
        history.record(P, at, 500)
        history.prune(P, 500)

    assert history.points(P) == [(0, 500), (30, 500)]
    assert history.lag_seconds(P, 500, 40) == 0.0
    # A group that appears behind it: its record was appended before the plateau began.
    assert history.estimate(P, 499, 40) == (40.0, True, 0.0)


def test_a_poll_forgets_partitions_it_did_not_ask_about() -> None:
    history = history_of((0, 1))
    history.record(("other", 1), 0, 5)

    history.record_poll({("other", 1): 6, ("unknown", 0): None}, 10)

    assert len(history) == 1
    assert history.lag_seconds(P, 0, 10) is None
    assert history.points(("other", 1)) == [(0, 5), (10, 6)]


PARTITIONS = [("a", 0), ("a", 1), ("b", 0)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            # Per partition: not polled, polled without an answer, or a log-end move
            # (mostly none or growth, sometimes a truncation).
            st.lists(
                st.one_of(st.just("absent"), st.none(), st.sampled_from([0, 0, 0, 1, 5, -3])),
                min_size=len(PARTITIONS),
                max_size=len(PARTITIONS),
            ),
            st.lists(st.lists(st.integers(0, 60), min_size=1, max_size=3), max_size=3),
            st.sampled_from([10.0, 10.0, 0.0, -5.0]),  # time steps, some not forward
        ),
        min_size=1,
        max_size=25,
    )
)
def test_a_whole_poll_at_once_is_each_partition_recorded_retained_and_pruned(
    polls: list[tuple[list[object], list[list[int]], float]],
) -> None:
    """``record_poll`` and ``prune_below`` take their short ways for the commonest
    partitions; the tables must be exactly those of ``record``, ``retain`` and ``prune``
    one partition at a time."""
    whole, one_by_one = OffsetHistory(max_points=4, slack=2), OffsetHistory(max_points=4, slack=2)
    log_ends = dict.fromkeys(PARTITIONS, 20)
    at = 0.0
    for moves, committed_lists, step in polls:
        at += step
        asked: dict[tuple[str, int], int | None] = {}
        for partition, move in zip(PARTITIONS, moves, strict=True):
            if move == "absent":
                continue
            if move is None:
                asked[partition] = None
                continue
            assert isinstance(move, int)
            log_ends[partition] = max(0, log_ends[partition] + move)
            asked[partition] = log_ends[partition]
        whole.record_poll(asked, at)
        for key, offset in asked.items():
            if offset is not None:
                one_by_one.record(key, at, offset)
        for partition in [p for p in PARTITIONS if p not in asked]:
            one_by_one._tracks.pop(partition, None)
        committed = dict(zip(PARTITIONS, committed_lists, strict=False))
        whole.prune_below(committed)
        for partition, values in committed.items():
            one_by_one.prune(partition, min(values))
        for partition in PARTITIONS:
            assert whole.points(partition) == one_by_one.points(partition)
        assert len(whole) == len(one_by_one)


# -- the table against a brute-force oracle -------------------------------------------


def oracle_bracket(polls: list[tuple[float, int]], committed: int) -> tuple[float, float] | None:
    """From every poll, kept: the last time the log end was <= committed (record
    ``committed`` not yet appended) and the first time it was beyond (appended by then)."""
    before = [t for t, leo in polls if leo <= committed]
    after = [t for t, leo in polls if leo > committed]
    if not after or not before:
        return None
    return max(before), min(after)


@st.composite
def traffic(draw: st.DrawFn) -> tuple[list[tuple[float, int]], list[float]]:
    """Polls (time, log end) of a log whose records were appended at ``record_times``."""
    gaps = draw(st.lists(st.floats(0.0, 600.0), min_size=1, max_size=300))
    record_times, t = [], 0.0
    for gap in gaps:
        t += gap
        record_times.append(t)
    interval = draw(st.sampled_from([1.0, 10.0, 30.0]))
    polls: list[tuple[float, int]] = []
    now = draw(st.floats(0.0, 100.0))
    while len(polls) < 2 or now <= t + interval:
        polls.append((now, bisect_right(record_times, now)))
        now += interval * draw(st.sampled_from([1.0, 1.0, 1.0, 3.0]))  # sometimes a missed poll
    return polls, record_times


@settings(max_examples=300, deadline=None)
@given(traffic(), st.integers(3, 12), st.integers(1, 8), st.data())
def test_the_bounded_table_stays_within_its_error_bound_of_the_full_one(
    sample: tuple[list[tuple[float, int]], list[float]],
    max_points: int,
    slack: int,
    data: st.DataObject,
) -> None:
    polls, record_times = sample
    history = OffsetHistory(max_points=max_points, slack=slack)
    for at, leo in polls:
        history.record(P, at, leo)
        assert len(history.points(P)) <= max_points + slack
    now = polls[-1][0] + data.draw(st.floats(0.0, 1000.0))
    leo = polls[-1][1]
    first_seen = polls[0][1]
    committed = data.draw(st.integers(0, max(leo, 1)))

    estimate = history.estimate(P, committed, now)

    if committed >= leo:
        assert estimate is not None
        assert estimate.seconds == 0.0
        return
    if committed < first_seen:
        assert estimate is not None
        assert estimate.lower_bound
        assert estimate.seconds == pytest.approx(now - polls[0][0])
        assert now - record_times[committed] >= estimate.seconds - 1e-6, "a true lower bound"
        return
    bracket = oracle_bracket(polls, committed)
    assert bracket is not None
    assert estimate is not None
    assert not estimate.lower_bound
    low, high = bracket
    assert low < record_times[committed] <= high, "the oracle's bracket holds the truth"
    appended_at = now - estimate.seconds
    distance = max(low - appended_at, appended_at - high, 0.0)
    assert distance <= estimate.error_seconds + 1e-6, "the error bound is honest"
    if len(polls) <= max_points + slack:
        assert low - 1e-6 <= appended_at <= high + 1e-6, "nothing merged: inside the bracket"


# -- dating by the broker's time index --------------------------------------------------


class TimeIndex:
    """A broker's answer to ListOffsets by time, worked out from every record's time."""

    def __init__(self, record_times: list[float], log_start: int = 0) -> None:
        self.times = record_times
        self.log_start = log_start
        self.questions = 0

    def ask(
        self, questions: dict[Hashable, float]
    ) -> tuple[dict[Hashable, DatingAnswer], set[Hashable]]:
        self.questions += len(questions)
        answers = {}
        for partition, at in questions.items():
            at_ms = int(at * 1000)
            found = next(
                (
                    i
                    for i in range(self.log_start, len(self.times))
                    if int(self.times[i] * 1000) >= at_ms
                ),
                None,
            )
            answers[partition] = (
                DatingAnswer(-1, None)
                if found is None
                else DatingAnswer(found, int(self.times[found] * 1000) / 1000)
            )
        return answers, set()


def test_a_backlog_older_than_the_agent_is_dated_at_its_first_poll() -> None:
    """An hour of records at 10 per second, the consumer stuck at the start: the agent
    starts now and has only one point of its own."""
    now = 100_000.0
    times = [now - 3600 + i / 10 for i in range(36_000)]
    history = OffsetHistory()
    history.record(P, now, len(times))
    broker = TimeIndex(times)

    outcome = date_backlogs(history, {P: DatingWanted((5,), 0, len(times))}, broker.ask, now)

    estimate = history.estimate(P, 5, now)
    assert estimate is not None
    assert not estimate.lower_bound
    assert estimate.seconds == pytest.approx(3600 - 0.5, abs=DATING_ABSOLUTE_TOLERANCE)
    assert outcome.rounds <= 4, "the log start, then interpolation finds it"
    again = date_backlogs(history, {P: DatingWanted((5,), 0, len(times))}, broker.ask, now + 10)
    assert again.rounds == 0, "dated once: the next poll reads the table"


def test_records_deleted_by_retention_give_a_lower_bound_from_the_oldest_one_kept() -> None:
    now = 10_000.0
    times = [now - 5000 + i for i in range(5000)]
    history = OffsetHistory()
    history.record(P, now, len(times))
    broker = TimeIndex(times, log_start=1000)

    date_backlogs(history, {P: DatingWanted((10,), 1000, len(times))}, broker.ask, now)

    estimate = history.estimate(P, 10, now)
    assert estimate is not None
    assert estimate.lower_bound
    assert estimate.seconds == pytest.approx(4000), "at least as old as record 1000"


def test_a_partition_the_broker_refuses_is_not_asked_again_at_every_poll() -> None:
    history = OffsetHistory()
    history.record(P, 100.0, 50)
    asked: list[dict[Hashable, float]] = []

    def refuse(
        questions: dict[Hashable, float],
    ) -> tuple[dict[Hashable, DatingAnswer], set[Hashable]]:
        asked.append(questions)
        return {}, set(questions)

    date_backlogs(history, {P: DatingWanted((0,), 0, 50)}, refuse, 100.0)
    date_backlogs(history, {P: DatingWanted((0,), 0, 50)}, refuse, 110.0)

    assert len(asked) == 1
    assert history.estimate(P, 0, 110.0) == (10.0, True, 0.0)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0.0, 120.0), min_size=2, max_size=400),
    st.data(),
)
def test_dating_by_the_broker_finds_any_committed_offset_within_its_tolerance(
    gaps: list[float], data: st.DataObject
) -> None:
    t, times = 1_000_000.0, []
    for gap in gaps:
        t += gap
        times.append(round(t, 3))
    now = times[-1] + data.draw(st.floats(0.0, 7200.0))
    history = OffsetHistory()
    history.record(P, now, len(times))
    committed = data.draw(st.integers(0, len(times) - 1))
    broker = TimeIndex(times)

    for poll in range(3):  # a hard backlog may take more than one poll's rounds
        date_backlogs(
            history, {P: DatingWanted((committed,), 0, len(times))}, broker.ask, now + poll
        )

    estimate = history.estimate(P, committed, now)
    assert estimate is not None
    assert not estimate.lower_bound
    age = now - times[committed]
    tolerance = max(DATING_ABSOLUTE_TOLERANCE, DATING_RELATIVE_TOLERANCE * age) + 0.002
    assert estimate.seconds == pytest.approx(age, abs=tolerance)
