"""Run every cluster's poll on its own interval with APScheduler.

Each cluster is one job: a job never overlaps itself (``max_instances=1``),
runs that were missed while a poll was slow are coalesced into one, and
every job has its own worker thread, so a slow or unreachable cluster never
delays another cluster, the sink, or the HTTP server. A poll slower than its
interval is said once per ``OVERRUN_LOG_INTERVAL`` (APScheduler would warn at
every skipped run; ``ksmon_poll_duration_seconds`` shows it all the time).

Polls run in daemon threads: stopping waits a short grace for the polls under
way and then leaves the rest (one stuck in a dead broker's 30 s bootstrap)
behind, so the process exits in seconds, not a request timeout later.
"""

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from apscheduler.executors.pool import BasePoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from agent.collect.poller import ClusterPoller
from agent.model.poll_result import PollResult

log = logging.getLogger(__name__)

OVERRUN_LOG_INTERVAL = 600.0


@dataclass(frozen=True, slots=True)
class ScheduledPoller:
    poller: ClusterPoller
    interval_seconds: float


class _DaemonThreads(concurrent.futures.Executor):
    """Each job in a daemon thread of its own (APScheduler keeps one per cluster at a
    time): unlike a thread pool's workers, the interpreter does not wait for them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[threading.Thread, str] = {}

    def submit(  # APScheduler's job and its arguments are untyped
        self,
        fn: Callable[..., Any],
        /,
        *args: Any,  # noqa: ANN401
        **kwargs: Any,  # noqa: ANN401
    ) -> "concurrent.futures.Future[Any]":
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def run() -> None:
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(fn(*args, **kwargs))
                    except BaseException as e:  # noqa: BLE001 - handed to APScheduler
                        future.set_exception(e)
            finally:
                with self._lock:
                    self._running.pop(threading.current_thread(), None)

        job = args[0] if args else None
        name = getattr(job, "name", None) or "job"
        thread = threading.Thread(target=run, name=f"ksmon-{name}", daemon=True)
        with self._lock:
            self._running[thread] = name
        thread.start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if wait:
            self.wait(None)

    def wait(self, timeout: float | None) -> list[str]:
        """Wait for the jobs under way, at most ``timeout`` seconds; the names of
        those still running then."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            threads = list(self._running)
        for thread in threads:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            thread.join(left)
        with self._lock:
            return sorted(self._running.values())


class _DaemonExecutor(BasePoolExecutor):  # type: ignore[misc]  # APScheduler is untyped
    def __init__(self, pool: _DaemonThreads) -> None:
        super().__init__(pool)


class PollScheduler:
    def __init__(
        self,
        pollers: Sequence[ScheduledPoller],
        on_result: Callable[[PollResult], None],
    ) -> None:
        self._pollers = list(pollers)
        self._on_result = on_result
        self._threads = _DaemonThreads()
        self._scheduler = BackgroundScheduler(
            executors={"default": _DaemonExecutor(self._threads)},
            job_defaults={"coalesce": True, "max_instances": 1},
            timezone="UTC",
        )
        self.started = False
        self._overrun_logged: dict[str, float] = {}

    def start(self) -> None:
        for scheduled in self._pollers:
            self._scheduler.add_job(
                self._poll,
                "interval",
                args=[scheduled],
                seconds=scheduled.interval_seconds,
                id=f"poll-{scheduled.poller.cluster}",
                name=f"poll {scheduled.poller.cluster}",
                # First poll at once; a run missed by up to a whole interval still runs (once).
                next_run_time=_now_utc(),
                misfire_grace_time=max(1, int(scheduled.interval_seconds)),
            )
        self._scheduler.start()
        self.started = True

    def stop(self, grace: float | None = None) -> list[str]:
        """No new polls; wait for those under way (at most ``grace`` seconds; None:
        however long). Returns the names of the polls left running."""
        if not self.started:
            return []
        self._scheduler.shutdown(wait=False)
        self.started = False
        return self._threads.wait(grace)

    def _poll(self, scheduled: ScheduledPoller) -> None:
        poller = scheduled.poller
        try:
            result = poller.poll()
        except Exception:  # poll() reports failures itself; this is a bug guard, not flow
            log.exception("poll of cluster %s raised", poller.cluster)
            return
        self._note_overrun(result, scheduled.interval_seconds)
        try:
            self._on_result(result)
        except Exception:
            log.exception("handling the poll of cluster %s failed", poller.cluster)

    def _note_overrun(self, result: PollResult, interval: float) -> None:
        # A failed poll waited for a cluster away (its warning says so), not for CPU.
        if result.duration_seconds <= interval or not result.ok:
            return
        last = self._overrun_logged.get(result.cluster)
        now = time.monotonic()
        if last is not None and now - last < OVERRUN_LOG_INTERVAL:
            return
        self._overrun_logged[result.cluster] = now
        log.warning(
            "a poll of cluster %s took %.1f s, longer than its %.0f s interval: polls run back "
            "to back (missed ones are skipped); raise poll.offsets_interval or give the agent "
            "more CPU",
            result.cluster,
            result.duration_seconds,
            interval,
        )


def _now_utc() -> "object":
    from datetime import UTC, datetime  # noqa: PLC0415

    return datetime.fromtimestamp(time.time(), tz=UTC)
