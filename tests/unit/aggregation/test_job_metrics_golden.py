"""The job's metric names, labels and HELP texts are a contract (BRIEF): this golden file
freezes them. Regenerate it deliberately with KSMON_UPDATE_GOLDEN=1 and update
docs/metrics.md in the same change."""

import gzip
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from agent.aggregation.judging import results as r
from agent.aggregation.judging.results import GaugeRow
from agent.aggregation.judging.rules.consumer_status import STATUSES
from agent.aggregation.outputs.job_metrics import JobCollector, JobExposition
from agent.aggregation.outputs.latest import LatestView
from agent.model.findings import Finding, FindingEvent, FindingSubject

GOLDEN = Path(__file__).parent / "golden" / "job_metrics.txt"

FINDING = {
    "kafka_cluster",
    "group",
    "kind",
    "severity",
    "process",
    "thread",
    "task",
    "topic",
    "partition",
}
RESTORE = {"kafka_cluster", "group", "process", "task", "source"}
# The contract table of BRIEF.md: every one of these must be exposed, with these labels.
CONTRACT = {
    "ksmon_finding_active": FINDING,
    "ksmon_finding_since_timestamp_seconds": FINDING,
    "ksmon_findings_opened_total": {"kafka_cluster", "group", "kind"},
    "ksmon_partition_records_per_second": {"kafka_cluster", "topic", "partition"},
    "ksmon_streams_task_records_per_second": {"kafka_cluster", "group", "task"},
    "ksmon_streams_thread_load_records_per_second": {"kafka_cluster", "group", "process", "thread"},
    "ksmon_streams_instance_load_records_per_second": {"kafka_cluster", "group", "process"},
    "ksmon_streams_instance_threads_expected": {"kafka_cluster", "group", "process"},
    "ksmon_restore_remaining_records": RESTORE,
    "ksmon_restore_rate_records_per_second": RESTORE,
    "ksmon_restore_estimated_remaining_seconds": RESTORE,
    "ksmon_group_rebalances_in_window": {"kafka_cluster", "group"},
    "ksmon_group_unstable_ratio": {"kafka_cluster", "group"},
    "ksmon_group_consumer_status": {"kafka_cluster", "group", "status"},
    "ksmon_group_consumer_status_partitions": {"kafka_cluster", "group", "status"},
    "ksmon_job_last_batch_timestamp_seconds": set(),
    "ksmon_job_batch_duration_seconds": set(),
    "ksmon_job_newest_snapshot_timestamp_seconds": {"kafka_cluster"},
    "ksmon_job_snapshots_processed_total": set(),
    "ksmon_job_snapshots_quarantined_total": {"reason"},
    "ksmon_job_batch_errors_total": set(),
    "ksmon_job_waiting_for_input": set(),
}  # fmt: skip


def finding(kind: str, severity: str, subject: FindingSubject) -> Finding:
    return Finding(
        kind, severity, "prod", "orders-app", subject, 1_700_000_000.0, 1_700_000_060.0, "x"
    )


def _state() -> LatestView:
    state = LatestView()
    hot = finding("hot_partitions_colocated", "warning", FindingSubject(process="p1", thread=2))
    restore = finding("restore_stalled", "warning", FindingSubject(process="p2", task="1_3"))
    skew = finding("partition_skew", "info", FindingSubject(topic="orders", partition=3))
    loop = finding("rebalance_loop", "warning", FindingSubject())

    def gauge(metric: str, value: float, **labels: object) -> GaugeRow:
        return GaugeRow(metric, "prod", "orders-app", value, **labels)  # type: ignore[arg-type]

    restoring = {"process": "p2", "task": "1_3"}
    gauges = [
        gauge(r.PARTITION_RATE, 120.5, topic="orders", partition=3),
        gauge(r.TASK_RATE, 120.5, task="0_3"),
        gauge(r.THREAD_LOAD, 130.0, process="p1", thread=2),
        gauge(r.INSTANCE_LOAD, 140.0, process="p1"),
        gauge(r.THREADS_EXPECTED, 2.0, process="p1"),
        gauge(r.RESTORE_REMAINING, 50000.0, **restoring, source="broker"),
        gauge(r.RESTORE_REMAINING, 42000.0, **restoring, source="sidecar"),
        gauge(r.RESTORE_RATE, 700.0, **restoring, source="sidecar"),
        gauge(r.RESTORE_ETA, 60.0, **restoring, source="sidecar"),
        gauge(r.REBALANCES, 7.0),
        gauge(r.UNSTABLE_RATIO, 0.25),
        gauge(r.STORE_MEMORY_ESTIMATE, 1233125376.0, process="p1"),
        *(gauge(r.GROUP_STATUS, float(s == "stalled"), status=s) for s in STATUSES),
        *(
            gauge(r.GROUP_STATUS_PARTITIONS, float(n), status=s)
            for s, n in zip(STATUSES, (2, 0, 0, 1, 5), strict=True)
        ),
    ]
    state.started()
    state.batch_done(
        at=1_700_000_065.0,
        seconds=2.5,
        open_findings=[hot, restore, skew, loop],
        gauges=gauges,
        events=[FindingEvent.of("open", 1_700_000_000.0, f) for f in (hot, restore, skew, loop)],
        processed=42,
        quarantined={"malformed": 1},
        late=0,
        not_judged=3,
        newest={"prod": 1_700_000_060.0},
    )
    state.batch_failed()
    return state


def render() -> str:
    """What the job's /metrics serves (a scraper that does not ask for gzip)."""
    exposition = JobExposition(_state()).render(gzipped=False)
    text = b"".join(exposition.chunks)
    assert len(text) == exposition.length
    return text.decode()


def test_job_metrics_match_the_golden_file() -> None:
    text = render()
    if os.environ.get("KSMON_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), f"metrics changed; see {GOLDEN} (KSMON_UPDATE_GOLDEN=1)"


def test_every_metric_of_the_contract_is_exposed_with_its_labels() -> None:
    text = render()
    for name, labels in CONTRACT.items():
        lines = [line for line in text.splitlines() if re.match(rf"{name}(\{{| )", line)]
        assert lines, f"{name} is not exposed"
        found = set(re.findall(r'([a-z_]+)="', lines[0]))
        assert found == labels, (
            f"{name}: labels {sorted(found)}, the contract says {sorted(labels)}"
        )


def test_every_metric_has_help_and_the_ksmon_prefix() -> None:
    text = render()
    names = set(re.findall(r"^# TYPE (\S+) ", text, flags=re.MULTILINE))
    helped = set(re.findall(r"^# HELP (\S+) \S", text, flags=re.MULTILINE))
    assert names == helped
    assert all(n.startswith("ksmon_") for n in names)


def test_subject_labels_that_do_not_apply_are_empty() -> None:
    line = next(
        line
        for line in render().splitlines()
        if line.startswith("ksmon_finding_active") and 'kind="rebalance_loop"' in line
    )
    assert 'process=""' in line
    assert 'partition=""' in line


def test_promtool_accepts_the_exposition() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool not found (Debian package prometheus)")
    result = subprocess.run(
        [promtool, "check", "metrics"], input=render(), capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_page_is_prometheus_clients_text_gzip_or_not() -> None:
    state = _state()
    registry = CollectorRegistry()
    registry.register(JobCollector(state))
    expected = generate_latest(registry)
    packed = JobExposition(state).render(gzipped=True)
    assert packed.gzipped
    body = b"".join(packed.chunks)
    assert len(body) == packed.length
    assert gzip.decompress(body) == expected


def test_the_page_is_written_once_per_view_of_the_job() -> None:
    # Every scrape between two micro-batches gets the same bytes, written once; the
    # next batch's view is written anew.
    state = _state()
    exposition = JobExposition(state)
    first = exposition.render(gzipped=True)
    again = exposition.render(gzipped=True)
    assert next(iter(again.chunks)) is next(iter(first.chunks))
    state.batch_done(
        at=1_700_000_075.0,
        seconds=2.0,
        open_findings=[],
        gauges=[],
        events=[],
        processed=1,
        quarantined={},
        late=0,
        not_judged=0,
        newest={"prod": 1_700_000_070.0},
    )
    after = gzip.decompress(b"".join(exposition.render(gzipped=True).chunks)).decode()
    assert "ksmon_finding_active{" not in after
    assert "ksmon_job_snapshots_processed_total 43.0" in after
