"""``keep_running``: a failed query is restarted after a back-off, unless a stop signal
is under way, in which case the failure is part of the stop: a stop signal to the
whole process group kills Hadoop's chmod child of Spark's JVM, or the JVM itself,
an instant before this process's handler sees the signal."""

import logging
import threading
from collections.abc import Callable

import pytest

from agent.aggregation import commands
from agent.errors import KsmonError


class FailingOnceJob:
    """A job whose query has failed once; ``on_failure`` runs when the loop asks why."""

    def __init__(self, on_failure: Callable[[], None], done: threading.Event) -> None:
        self.on_failure = on_failure
        self.done = done
        self.failed = True
        self.restarts = 0

    def await_termination(self, timeout: float | None = None) -> bool:
        return self.failed

    def failure(self) -> str | None:
        self.on_failure()
        return "ExitCodeException exitCode=143" if self.failed else None

    def wait_for_input(self, until: threading.Event) -> bool:
        return True

    def start_query(self) -> None:
        self.restarts += 1
        self.failed = False
        self.done.set()  # one restart is all this test needs


def test_a_failure_with_a_stop_signal_under_way_is_a_stop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    done = threading.Event()
    # The signal's handler runs while the loop reads the failure: the stop was under way.
    job = FailingOnceJob(done.set, done)
    with caplog.at_level(logging.INFO, logger=commands.log.name):
        commands.keep_running(job, done)  # type: ignore[arg-type]
    assert job.restarts == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_failure_without_a_stop_is_reported_and_the_query_restarted(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commands, "_STOP_SIGNAL_GRACE", 0.01)
    monkeypatch.setattr(commands, "_RESTART_BACKOFF", (0.01,))
    done = threading.Event()
    job = FailingOnceJob(lambda: None, done)
    with caplog.at_level(logging.INFO, logger=commands.log.name):
        commands.keep_running(job, done)  # type: ignore[arg-type]
    assert job.restarts == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [
        "the streaming query failed (ExitCodeException exitCode=143); restarting in 0s"
    ]


class JvmGoneJob(FailingOnceJob):
    """A query stopped by the JVM's shutdown hook; asking why finds the JVM gone."""

    def failure(self) -> str | None:
        self.on_failure()
        raise ConnectionRefusedError(111, "Connection refused")


def test_a_jvm_gone_while_the_loop_asks_why_its_query_ended_is_a_stop_under_a_signal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    done = threading.Event()
    job = JvmGoneJob(done.set, done)
    with caplog.at_level(logging.INFO, logger=commands.log.name):
        commands.keep_running(job, done)  # type: ignore[arg-type]
    assert job.restarts == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_jvm_gone_without_a_stop_signal_is_one_error_saying_so() -> None:
    done = threading.Event()
    job = JvmGoneJob(lambda: None, done)
    with pytest.raises(KsmonError, match=r"^Spark's JVM stopped under the job \(.*refused"):
        commands.keep_running(job, done)  # type: ignore[arg-type]
