"""The latest micro-batch's results as the job's /metrics and API serve them, shared
between the batch thread (writer) and requests (readers). No Spark here.

Writers replace whole immutable values under a lock; a scrape takes a
consistent view and never waits on a batch.
"""

import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from agent.aggregation.judging.results import GaugeRow
from agent.model.findings import Finding, FindingEvent


@dataclass(frozen=True)
class JobView:
    open_findings: tuple[Finding, ...] = ()
    gauges: tuple[GaugeRow, ...] = ()
    findings_opened: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    snapshots_processed: int = 0
    snapshots_quarantined: Counter[str] = field(default_factory=Counter)
    snapshots_late: int = 0
    snapshots_not_judged: int = 0
    batch_errors: int = 0
    last_batch_at: float | None = None
    last_batch_seconds: float | None = None
    newest_snapshot: tuple[tuple[str, float], ...] = ()  # (cluster, poll time)
    started: bool = False
    waiting_for_input: bool = False  # the snapshot topic or spool directory is not there yet


class LatestView:
    """The newest ``JobView``, replaced whole by each change; readers never wait on a batch."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._view = JobView()

    def view(self) -> JobView:
        with self._lock:
            return self._view

    def started(self) -> None:
        with self._lock:
            self._view = replace(self._view, started=True)

    def waiting(self, waiting: bool) -> None:
        """Whether the job waits for its input before (re)starting its query."""
        with self._lock:
            if self._view.waiting_for_input != waiting:
                self._view = replace(self._view, waiting_for_input=waiting)

    def restored(self, open_findings: Iterable[Finding], newest: dict[str, float]) -> None:
        """After a restart: what the last completed batch left open."""
        with self._lock:
            self._view = replace(
                self._view,
                open_findings=tuple(open_findings),
                newest_snapshot=tuple(sorted(newest.items())),
            )

    def batch_done(
        self,
        *,
        at: float,
        seconds: float,
        open_findings: Iterable[Finding],
        gauges: Iterable[GaugeRow] | None,
        events: Iterable[FindingEvent],
        processed: int,
        quarantined: dict[str, int],
        late: int,
        not_judged: int,
        newest: dict[str, float],
    ) -> None:
        with self._lock:
            v = self._view
            opened = Counter(v.findings_opened)
            for event in events:
                if event.event == "open":
                    f = event.finding
                    opened[(f.cluster, f.group, f.kind)] += 1
            self._view = replace(
                v,
                open_findings=tuple(open_findings),
                gauges=tuple(gauges) if gauges is not None else v.gauges,
                findings_opened=opened,
                snapshots_processed=v.snapshots_processed + processed,
                snapshots_quarantined=v.snapshots_quarantined + Counter(quarantined),
                snapshots_late=v.snapshots_late + late,
                snapshots_not_judged=v.snapshots_not_judged + not_judged,
                last_batch_at=at,
                last_batch_seconds=seconds,
                newest_snapshot=tuple(sorted(newest.items())),
            )

    def batch_failed(self) -> None:
        with self._lock:
            self._view = replace(self._view, batch_errors=self._view.batch_errors + 1)
