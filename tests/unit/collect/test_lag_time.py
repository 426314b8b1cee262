import pytest

from agent.collect.lag_time import OffsetHistory

P = ("orders", 0)


def history_of(*points: tuple[float, int]) -> OffsetHistory:
    history = OffsetHistory(max_age_seconds=600, max_points=8)
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
    ],
)
def test_lag_seconds_interpolates_the_append_time_of_the_first_unconsumed_record(
    points: list[tuple[float, int]], committed: int, now: float, expected: float | None, why: str
) -> None:
    assert history_of(*points).lag_seconds(P, committed, now) == expected, why


def test_unknown_partition_has_no_lag_seconds() -> None:
    assert OffsetHistory().lag_seconds(P, 0, 100.0) is None


def test_a_truncated_log_restarts_the_history() -> None:
    history = history_of((0, 1000), (10, 2000))
    history.record(P, 20, 5)  # topic deleted and re-created

    assert history.lag_seconds(P, 2, 30) == 10.0, "only the new point counts"


def test_points_are_bounded_in_number_and_age_but_one_old_point_remains() -> None:
    history = OffsetHistory(max_age_seconds=100, max_points=4)
    for t in range(0, 1000, 10):
        history.record(P, t, t)

    # The oldest point kept is at most 100 s old (plus one older bound) and at most 4 points.
    assert history.lag_seconds(P, 0, 990) == pytest.approx(990 - 960)


def test_retain_forgets_partitions_no_longer_polled() -> None:
    history = history_of((0, 1))
    history.record(("other", 1), 0, 5)

    history.retain([("other", 1)])

    assert len(history) == 1
    assert history.lag_seconds(P, 0, 10) is None
