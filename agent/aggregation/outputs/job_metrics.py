"""The job's Prometheus metrics, written from the latest view (``latest``) (no Spark).

Names and labels are a contract (BRIEF, ``docs/metrics.md``, frozen by a
golden test). A label that does not apply to a finding's subject is the
empty string, which Prometheus treats as absent.

The metrics are a function of the job's view alone, which changes once per
micro-batch; ``JobExposition`` writes them once per view, at the first
scrape that sees it, and serves the same gzip-compressed bytes to every
scrape until the next batch. On a large cluster the text is big and slow
to write: written at every scrape, it would take CPU the batches need (see
docs/benchmarks.md).
"""

import gzip
import threading
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from agent import fast_gzip
from agent.aggregation.judging.results import (
    GROUP_STATUS,
    GROUP_STATUS_PARTITIONS,
    INSTANCE_LOAD,
    PARTITION_RATE,
    REBALANCES,
    RESTORE_ETA,
    RESTORE_RATE,
    RESTORE_REMAINING,
    STORE_MEMORY_ESTIMATE,
    TASK_RATE,
    THREAD_LOAD,
    THREADS_EXPECTED,
    UNSTABLE_RATIO,
    GaugeRow,
)
from agent.aggregation.judging.rules.consumer_status import STATUSES
from agent.aggregation.outputs.latest import JobView, LatestView
from agent.exposition.scrape_body import Exposition
from agent.model.findings import Finding

FINDING_LABELS = [
    "kafka_cluster",
    "group",
    "kind",
    "severity",
    "process",
    "thread",
    "task",
    "topic",
    "partition",
]
_RESTORE_LABELS = ["kafka_cluster", "group", "process", "task", "source"]
_STATUS_ORDER = {status: i for i, status in enumerate(STATUSES)}


def _text(value: object) -> str:
    return "" if value is None else str(value)


def finding_labels(f: Finding) -> list[str]:
    s = f.subject
    return [
        f.cluster,
        f.group,
        f.kind,
        f.severity,
        _text(s.process),
        _text(s.thread),
        _text(s.task),
        _text(s.topic),
        _text(s.partition),
    ]


class JobCollector(Collector):
    """The metrics of the job's view at the time of collecting."""

    def __init__(self, latest: LatestView) -> None:
        self.latest = latest

    def collect(self) -> Iterator[Metric]:
        yield from metrics_of(self.latest.view())


def metrics_of(view: JobView) -> Iterator[Metric]:
    yield from _findings(view.open_findings, view.findings_opened)
    yield from _gauges(view.gauges)
    yield from _health(view)


class _ViewCollector(Collector):
    def __init__(self, view: JobView) -> None:
        self.view = view

    def collect(self) -> Iterator[Metric]:
        return metrics_of(self.view)


class JobExposition:
    """/metrics: the text of the current view, written once and kept gzip-compressed."""

    def __init__(self, latest: LatestView) -> None:
        self.latest = latest
        self._lock = threading.Lock()
        # The view written last (kept, so its identity cannot be another view's), the
        # text gzip-compressed, and the text's length.
        self._written: tuple[JobView, bytes, int] | None = None

    def render(self, *, gzipped: bool) -> Exposition:
        view = self.latest.view()
        # Scrapes of one view wait for its one writing (views are replaced, never changed).
        with self._lock:
            if self._written is None or self._written[0] is not view:
                registry = CollectorRegistry(auto_describe=False)
                registry.register(_ViewCollector(view))
                text = generate_latest(registry)
                packed = fast_gzip.gzip_member(text)
                self._written = (view, packed, len(text))
            _view, packed, size = self._written
        if gzipped:
            return Exposition([packed], len(packed), True)
        # Prometheus always asks for gzip; other scrapers get the text back whole.
        return Exposition([gzip.decompress(packed)], size, False)


def _findings(
    open_findings: tuple[Finding, ...], opened: dict[tuple[str, str, str], int]
) -> Iterator[Metric]:
    active = GaugeMetricFamily(
        "ksmon_finding_active",
        "1 for each open finding of the detectors (kind, severity, subject).",
        labels=FINDING_LABELS,
    )
    since = GaugeMetricFamily(
        "ksmon_finding_since_timestamp_seconds",
        "When an open finding's condition began (event time, Unix seconds).",
        labels=FINDING_LABELS,
    )
    for f in open_findings:
        labels = finding_labels(f)
        active.add_metric(labels, 1)
        since.add_metric(labels, f.since)
    total = CounterMetricFamily(
        "ksmon_findings_opened",
        "Findings opened since the job started.",
        labels=["kafka_cluster", "group", "kind"],
    )
    for (cluster, group, kind), count in sorted(opened.items()):
        total.add_metric([cluster, group, kind], count)
    yield from (active, since, total)


def _gauges(rows: tuple[GaugeRow, ...]) -> Iterator[Metric]:
    partition = GaugeMetricFamily(
        "ksmon_partition_records_per_second",
        "Log-end offset growth of a partition over the evaluation window.",
        labels=["kafka_cluster", "topic", "partition"],
    )
    task = GaugeMetricFamily(
        "ksmon_streams_task_records_per_second",
        "Input rate of a Kafka Streams task: the sum over its source partitions.",
        labels=["kafka_cluster", "group", "task"],
    )
    thread = GaugeMetricFamily(
        "ksmon_streams_thread_load_records_per_second",
        "Load of a stream thread (group member): the input rate of the tasks it holds.",
        labels=["kafka_cluster", "group", "process", "thread"],
    )
    instance = GaugeMetricFamily(
        "ksmon_streams_instance_load_records_per_second",
        "Load of a Kafka Streams instance: the input rate of the tasks its threads hold.",
        labels=["kafka_cluster", "group", "process"],
    )
    expected = GaugeMetricFamily(
        "ksmon_streams_instance_threads_expected",
        "Stream threads an instance should run: configured (sidecar), else the most seen "
        "within the look-back.",
        labels=["kafka_cluster", "group", "process"],
    )
    remaining = GaugeMetricFamily(
        "ksmon_restore_remaining_records",
        "Changelog records a restoring task still has to restore (source: broker or sidecar).",
        labels=_RESTORE_LABELS,
    )
    rate = GaugeMetricFamily(
        "ksmon_restore_rate_records_per_second",
        "Records a restoring task restores per second.",
        labels=_RESTORE_LABELS,
    )
    eta = GaugeMetricFamily(
        "ksmon_restore_estimated_remaining_seconds",
        "Remaining records divided by the restore rate (absent while the rate is 0).",
        labels=_RESTORE_LABELS,
    )
    rebalances = GaugeMetricFamily(
        "ksmon_group_rebalances_in_window",
        "Rebalance events of the group within the rebalance-loop window.",
        labels=["kafka_cluster", "group"],
    )
    unstable = GaugeMetricFamily(
        "ksmon_group_unstable_ratio",
        "Fraction of the rebalance-loop window the group spent rebalancing (0..1).",
        labels=["kafka_cluster", "group"],
    )
    store_memory = GaugeMetricFamily(
        "ksmon_streams_instance_state_store_memory_estimate_bytes",
        "Estimated RocksDB memory of an instance's persistent stores (RocksDB instances of "
        "the tasks it holds x the configured per-instance memory; from its sidecar).",
        labels=["kafka_cluster", "group", "process"],
    )
    seen_partitions: set[tuple[str, str, str]] = set()
    for g in sorted(rows, key=_order):
        if g.metric == PARTITION_RATE:
            # A rate belongs to the partition: two groups reading it see the same one.
            key = (g.cluster, _text(g.topic), _text(g.partition))
            if key not in seen_partitions:
                seen_partitions.add(key)
                partition.add_metric(list(key), g.value)
        elif g.metric == TASK_RATE:
            task.add_metric([g.cluster, g.group, _text(g.task)], g.value)
        elif g.metric == THREAD_LOAD:
            thread.add_metric([g.cluster, g.group, _text(g.process), _text(g.thread)], g.value)
        elif g.metric == INSTANCE_LOAD:
            instance.add_metric([g.cluster, g.group, _text(g.process)], g.value)
        elif g.metric == THREADS_EXPECTED:
            expected.add_metric([g.cluster, g.group, _text(g.process)], g.value)
        elif g.metric in (RESTORE_REMAINING, RESTORE_RATE, RESTORE_ETA):
            family = {RESTORE_REMAINING: remaining, RESTORE_RATE: rate, RESTORE_ETA: eta}[g.metric]
            family.add_metric(
                [g.cluster, g.group, _text(g.process), _text(g.task), _text(g.source)], g.value
            )
        elif g.metric == REBALANCES:
            rebalances.add_metric([g.cluster, g.group], g.value)
        elif g.metric == UNSTABLE_RATIO:
            unstable.add_metric([g.cluster, g.group], g.value)
        elif g.metric == STORE_MEMORY_ESTIMATE:
            store_memory.add_metric([g.cluster, g.group, _text(g.process)], g.value)
    yield from (partition, task, thread, instance, expected, remaining, rate, eta)
    yield from (rebalances, unstable, store_memory)
    yield from _consumer_status(rows)


def _consumer_status(rows: tuple[GaugeRow, ...]) -> Iterator[Metric]:
    """consumer_status's gauges: per group, each status and its partitions."""
    status = GaugeMetricFamily(
        "ksmon_group_consumer_status",
        "The group's consumer status over detectors.consumer_status_window: 1 for the current one "
        "(ok, lagging, stalled, stopped, rewound), 0 for the others.",
        labels=["kafka_cluster", "group", "status"],
    )
    partitions = GaugeMetricFamily(
        "ksmon_group_consumer_status_partitions",
        "Partitions of the group in each consumer status (ok, lagging, stalled, stopped, rewound).",
        labels=["kafka_cluster", "group", "status"],
    )
    families = {GROUP_STATUS: status, GROUP_STATUS_PARTITIONS: partitions}
    for g in sorted((g for g in rows if g.metric in families), key=_order):
        families[g.metric].add_metric([g.cluster, g.group, _text(g.status)], g.value)
    yield from (status, partitions)


def _order(g: GaugeRow) -> tuple[str, ...]:
    return (
        g.metric,
        g.cluster,
        g.group,
        _text(g.process),
        f"{g.thread or 0:09d}",
        _text(g.task),
        _text(g.topic),
        f"{g.partition or 0:09d}",
        _text(g.source),
        _status_order(g.status),
    )


def _status_order(status: str | None) -> str:
    """Statuses worst first, as the rule lists them (not alphabetically)."""
    return f"{_STATUS_ORDER.get(status or '', 9)}"


def _health(view: JobView) -> Iterator[Metric]:
    last = GaugeMetricFamily(
        "ksmon_job_last_batch_timestamp_seconds", "When the last micro-batch finished (Unix time)."
    )
    duration = GaugeMetricFamily(
        "ksmon_job_batch_duration_seconds", "How long the last micro-batch took."
    )
    if view.last_batch_at is not None:
        last.add_metric([], view.last_batch_at)
    if view.last_batch_seconds is not None:
        duration.add_metric([], view.last_batch_seconds)
    newest = GaugeMetricFamily(
        "ksmon_job_newest_snapshot_timestamp_seconds",
        "Poll time of the newest snapshot processed, per cluster (staleness: now minus this).",
        labels=["kafka_cluster"],
    )
    for cluster, t in view.newest_snapshot:
        newest.add_metric([cluster], t)
    processed = CounterMetricFamily("ksmon_job_snapshots_processed", "Snapshots processed.")
    processed.add_metric([], view.snapshots_processed)
    quarantined = CounterMetricFamily(
        "ksmon_job_snapshots_quarantined",
        "Snapshots set aside unread: malformed, or of a newer schema_version than this job's.",
        labels=["reason"],
    )
    for reason in ("malformed", "future_version"):
        quarantined.add_metric([reason], view.snapshots_quarantined.get(reason, 0))
    late = CounterMetricFamily(
        "ksmon_job_snapshots_late",
        "Snapshots not judged because a newer poll of their series was judged before they "
        "arrived (kept for the look-back), or older than the look-back (dropped).",
    )
    late.add_metric([], view.snapshots_late)
    not_judged = CounterMetricFamily(
        "ksmon_job_snapshots_not_judged",
        "Snapshots not judged because the same poll (series and time) was judged already: "
        "delivered twice.",
    )
    not_judged.add_metric([], view.snapshots_not_judged)
    errors = CounterMetricFamily(
        "ksmon_job_batch_errors", "Micro-batches that failed (the job keeps running)."
    )
    errors.add_metric([], view.batch_errors)
    waiting = GaugeMetricFamily(
        "ksmon_job_waiting_for_input",
        "1 while the job waits for its input (the snapshot topic or spool directory) to exist "
        "or its cluster to answer, before it starts its streaming query; else 0.",
    )
    waiting.add_metric([], 1 if view.waiting_for_input else 0)
    yield from (last, duration, newest, processed, quarantined, late, not_judged, errors, waiting)
