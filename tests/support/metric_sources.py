"""Which component produces each metric family the dashboards and alert rules read.

The agent's families are what its golden exposition files freeze (real code).
The aggregation job's (issue 3) and the sidecar's (issue 4) are the contract
tables of the team brief: while their code is not on this branch they are
*pending*, and every panel query or alert on them is checked end to end as an
expected failure (``xfail(strict=True)``: it must return nothing) instead of
being skipped. ``test_pending_components_have_not_landed`` fails the moment a
pending component's metrics appear in a golden file or its package exists:
then delete its entry from ``PENDING`` and start it in the e2e scenario
(``tests/e2e/scenario.py``), and its panels and alerts are checked for real.
"""

import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass
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
}

# Series Prometheus makes itself. ALERTS carries each alert's own labels, so any label goes.
PROMETHEUS_FAMILIES: Mapping[str, frozenset[str] | None] = {
    "up": _labels(),
    "ALERTS": None,
}


@dataclass(frozen=True)
class Pending:
    """A component whose code is not on this branch yet."""

    component: str
    families: Mapping[str, frozenset[str]]
    # The Python package it will live in, if known: its existence means it landed.
    package: str | None = None


PENDING: Mapping[str, Pending] = {
    "job": Pending("the aggregation job (issue 3)", JOB_FAMILIES, package="agent.aggregation"),
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


def landed(pending: Pending) -> list[str]:
    """Evidence that a pending component's code exists now (empty while it does not)."""
    evidence = [
        f"{name} is in a golden file" for name in pending.families if name in golden_families()
    ]
    if pending.package is not None and importlib.util.find_spec(pending.package) is not None:
        evidence.append(f"package {pending.package} exists")
    return evidence


def known_families() -> Mapping[str, frozenset[str] | None]:
    """Every family a query may read, with its labels (None: any label)."""
    known: dict[str, frozenset[str] | None] = dict(PROMETHEUS_FAMILIES)
    known.update(SIDECAR_FAMILIES)
    for pending in PENDING.values():
        known.update(pending.families)
    known.update(golden_families())
    return known


def pending_component(family: str) -> Pending | None:
    """The pending component that will produce ``family``, or None if it is produced now."""
    for pending in PENDING.values():
        if family in pending.families:
            return pending
    return None
