"""A poll slower than its interval is logged once per OVERRUN_LOG_INTERVAL per cluster,
not at every run APScheduler skips behind it."""

import logging

import pytest

from agent.collect.schedule import PollScheduler
from agent.model.poll_result import PollResult


def result(cluster: str, seconds: float) -> PollResult:
    return PollResult(cluster=cluster, sequence=1, started_at=0.0, duration_seconds=seconds)


def overruns(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "longer than its" in r.getMessage()]


def test_a_slow_poll_is_said_once_and_a_fast_one_not_at_all(
    caplog: pytest.LogCaptureFixture,
) -> None:
    scheduler = PollScheduler([], on_result=lambda _: None)
    with caplog.at_level(logging.WARNING, logger="agent.collect.schedule"):
        scheduler._note_overrun(result("prod", 1.5), interval=2.0)
        assert overruns(caplog) == [], "within its interval: nothing to say"
        for _ in range(5):
            scheduler._note_overrun(result("prod", 3.2), interval=2.0)
        scheduler._note_overrun(result("staging", 40.0), interval=30.0)
    assert overruns(caplog) == [
        "a poll of cluster prod took 3.2 s, longer than its 2 s interval: polls run back to "
        "back (missed ones are skipped); raise poll.offsets_interval or give the agent more CPU",
        "a poll of cluster staging took 40.0 s, longer than its 30 s interval: polls run back "
        "to back (missed ones are skipped); raise poll.offsets_interval or give the agent "
        "more CPU",
    ], "once per cluster, however many polls overrun"
