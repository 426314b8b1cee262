"""Which metric families the dashboards and alert rules may read, with their labels.

What the code exposes is what its golden exposition files freeze (the agent's,
the sidecar's and the aggregation job's). The job's and the sidecar's families
are also the contract tables of the team brief, which dashboards and alerts
were written against; ``test_metric_sources`` checks that the code keeps them.
"""

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_FILES = tuple(sorted(ROOT.glob("tests/**/golden/*.txt")))

# Labels Prometheus adds to every scraped series.
TARGET_LABELS = frozenset({"job", "instance"})

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"')


def _labels(*names: str) -> frozenset[str]:
    return frozenset(names)


_FINDING = _labels(
    "kafka_cluster", "group", "kind", "severity", "process", "thread", "task", "topic", "partition"
)
_RESTORE = _labels("kafka_cluster", "group", "process", "task", "source")
_INSTANCE = _labels("kafka_cluster", "group", "process")

# The aggregation job's /metrics (BRIEF.md, "The aggregation job's metrics").
JOB_FAMILIES: Mapping[str, frozenset[str]] = {
    "ksmon_finding_active": _FINDING,
    "ksmon_finding_since_timestamp_seconds": _FINDING,
    "ksmon_findings_opened_total": _labels("kafka_cluster", "group", "kind"),
    "ksmon_partition_records_per_second": _labels("kafka_cluster", "topic", "partition"),
    "ksmon_streams_task_records_per_second": _labels("kafka_cluster", "group", "task"),
    "ksmon_streams_thread_load_records_per_second": _INSTANCE | {"thread"},
    "ksmon_streams_instance_load_records_per_second": _INSTANCE,
    "ksmon_streams_instance_threads_expected": _INSTANCE,
    "ksmon_restore_remaining_records": _RESTORE,
    "ksmon_restore_rate_records_per_second": _RESTORE,
    "ksmon_restore_estimated_remaining_seconds": _RESTORE,
    "ksmon_group_rebalances_in_window": _labels("kafka_cluster", "group"),
    "ksmon_group_unstable_ratio": _labels("kafka_cluster", "group"),
    "ksmon_group_consumer_status": _labels("kafka_cluster", "group", "status"),
    "ksmon_group_consumer_status_partitions": _labels("kafka_cluster", "group", "status"),
    "ksmon_job_last_batch_timestamp_seconds": _labels(),
    "ksmon_job_batch_duration_seconds": _labels(),
    "ksmon_job_newest_snapshot_timestamp_seconds": _labels("kafka_cluster"),
    "ksmon_job_snapshots_processed_total": _labels(),
    "ksmon_job_snapshots_quarantined_total": _labels("reason"),
    "ksmon_job_batch_errors_total": _labels(),
}

# The sidecar's additions to the agent's /metrics (BRIEF.md, "The sidecar's own metrics").
SIDECAR_FAMILIES: Mapping[str, frozenset[str]] = {
    "ksmon_sidecar_app_metrics_up": _INSTANCE,
    "ksmon_sidecar_client_state": _INSTANCE | {"state"},
    "ksmon_sidecar_stream_threads_alive": _INSTANCE,
    "ksmon_sidecar_stream_threads_expected": _INSTANCE,
    "ksmon_sidecar_stream_threads_failed_total": _INSTANCE,
    "ksmon_sidecar_thread_state": _INSTANCE | {"thread", "state"},
    "ksmon_sidecar_restoring_tasks": _INSTANCE,
    "ksmon_sidecar_task_restore_remaining_records": _INSTANCE | {"task"},
    "ksmon_sidecar_state_dir_bytes": _INSTANCE,
    "ksmon_sidecar_state_volume_size_bytes": _INSTANCE,
    "ksmon_sidecar_state_volume_available_bytes": _INSTANCE,
}

# Series Prometheus makes itself. ALERTS carries each alert's own labels, so any label goes.
PROMETHEUS_FAMILIES: Mapping[str, frozenset[str] | None] = {
    "up": _labels(),
    "ALERTS": None,
}


@cache
def golden_families() -> Mapping[str, frozenset[str]]:
    """Family name -> label names, over every golden exposition file (the code's contract)."""
    families: dict[str, frozenset[str]] = {}
    for path in GOLDEN_FILES:
        for line in path.read_text().splitlines():
            match = _SAMPLE.match(line)
            if match is not None:
                labels = frozenset(_LABEL.findall(match[2] or ""))
                families[match[1]] = families.get(match[1], frozenset()) | labels
    return families


def known_families() -> Mapping[str, frozenset[str] | None]:
    """Every family a query may read, with its labels (None: any label)."""
    known: dict[str, frozenset[str] | None] = dict(PROMETHEUS_FAMILIES)
    known.update(golden_families())
    return known
