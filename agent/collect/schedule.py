"""Run every cluster's poll on its own interval with APScheduler.

Each cluster is one job: a job never overlaps itself (``max_instances=1``),
runs that were missed while a poll was slow are coalesced into one, and
every job has its own worker thread, so a slow or unreachable cluster never
delays another cluster, the sink, or the HTTP server. A poll slower than its
interval is said once per ``OVERRUN_LOG_INTERVAL`` (APScheduler would warn at
every skipped run; ``ksmon_poll_duration_seconds`` shows it all the time).
"""

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from agent.collect.poller import ClusterPoller, PollResult

log = logging.getLogger(__name__)

OVERRUN_LOG_INTERVAL = 600.0


@dataclass(frozen=True, slots=True)
class ScheduledPoller:
    poller: ClusterPoller
    interval_seconds: float


class PollScheduler:
    def __init__(
        self,
        pollers: Sequence[ScheduledPoller],
        on_result: Callable[[PollResult], None],
    ) -> None:
        self._pollers = list(pollers)
        self._on_result = on_result
        self._scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(max_workers=max(1, len(self._pollers)))},
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

    def stop(self) -> None:
        if self.started:
            self._scheduler.shutdown(wait=True)
            self.started = False

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
        if result.duration_seconds <= interval:
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
