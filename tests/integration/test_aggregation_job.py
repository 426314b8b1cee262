"""The streaming job for real: spool and Kafka sources, the findings topic, /metrics,
quarantine, and a job killed and restarted that neither loses nor repeats a finding."""

import json
import logging
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql import SparkSession

from agent.aggregation.commands import open_findings
from agent.aggregation.job import AggregationJob
from agent.aggregation.judging.facts import decode
from agent.aggregation.outputs.findings_topic import read_events
from agent.aggregation.replay import replay
from agent.config import Config, kafka_client_settings
from agent.config.schema import DetectorsConfig
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import produce
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from agent.embedded.topics import create_topics
from agent.model import Snapshot
from agent.model.task_loads import TaskLoads
from tests.support.aggregation import (
    active_findings,
    get_json,
    in_chunks,
    job_config,
    run_job_until_caught_up,
    scrape,
    write_spool,
)
from tests.support.kafka_io import read_all
from tests.support.snapshots import CLUSTER, partition, snapshot, streams_member
from tests.support.streams import unique_name
from tests.unit.aggregation.cases import T0, hot_partitions, rebalance_loop, times

pytestmark = pytest.mark.integration

HOT = hot_partitions.CASES[0]  # two hot tasks on instance pA's only thread
LOOP = rebalance_loop.CASES[0]  # a rebalance loop from poll timeouts


def test_the_job_reads_a_spool_quarantines_bad_snapshots_and_publishes_findings(
    kafka: EmbeddedKafka, spark: SparkSession, tmp_path: Path
) -> None:
    spool = tmp_path / "spool"
    snapshots = list(HOT.snapshots)
    write_spool(spool, [snapshots[:6]])
    bad = spool / "snapshots-20260101T000000-000002.jsonl"
    bad.write_text('not json\n{"schema_version": 99, "cluster": "local"}\n')
    write_spool(spool, [])  # nothing; keeps the helper's ordering obvious
    loads_topic = unique_name("task-loads")
    config = job_config(
        kafka,
        tmp_path,
        findings_topic=unique_name("findings"),
        spool=spool,
        task_loads_topic=loads_topic,
    )
    job = AggregationJob(config, spark)
    job.start()
    try:
        job.process_available()
        (spool / "snapshots-20260101T000000-000003.jsonl").write_bytes(
            b"".join(s.to_json() + b"\n" for s in snapshots[6:])
        )
        job.process_available()
        assert job.server is not None
        metrics = scrape(job.server.port)
        api_findings = get_json(job.server.port, "/api/v1/findings?severity=warning")
        api_group = get_json(job.server.port, f"/api/v1/clusters/{CLUSTER}/groups/{HOT.name}")
        api_missing = get_json(job.server.port, f"/api/v1/clusters/{CLUSTER}/groups/nobody")
    finally:
        job.stop()

    subjects = {
        (f["kind"], f["process"], f["thread"], f["severity"]) for f in active_findings(metrics)
    }
    assert subjects == {
        ("hot_partitions_colocated", "pA", "1", "warning"),
        ("hot_partitions_colocated", "pA", "", "warning"),
    }
    assert 'ksmon_job_snapshots_quarantined_total{reason="malformed"} 1.0' in metrics
    assert 'ksmon_job_snapshots_quarantined_total{reason="future_version"} 1.0' in metrics
    assert f"ksmon_job_snapshots_processed_total {len(snapshots)}.0" in metrics
    assert 'ksmon_streams_thread_load_records_per_second{group="hot-two-on-one-thread"' in metrics
    (sample,) = (tmp_path / "checkpoint" / "quarantine").glob("*.jsonl")
    reasons = [json.loads(line)["error"] for line in sample.read_text().splitlines()]
    assert any("newer than this job's" in r for r in reasons)

    findings = open_findings(config)
    assert {(f.kind, f.subject.process, f.subject.thread) for f in findings} == {
        ("hot_partitions_colocated", "pA", 1),
        ("hot_partitions_colocated", "pA", None),
    }
    move = next(f for f in findings if f.subject.thread == 1).evidence["suggested_move"]
    assert move["to_process"] == "pB"

    # The JSON API answers from the same micro-batch as /metrics and the findings topic.
    status, body = api_findings
    assert status == 200
    assert body["api_version"] == "v1"
    assert {
        (f["kind"], f["group"], f["subject"]["process"], f["subject"]["thread"])
        for f in body["findings"]
    } == {
        ("hot_partitions_colocated", HOT.name, "pA", 1),
        ("hot_partitions_colocated", HOT.name, "pA", None),
    }
    on_thread = next(f for f in body["findings"] if f["subject"]["thread"] == 1)
    assert on_thread["suggested_move"]["to_process"] == "pB"
    assert on_thread["explanation"]
    status, group = api_group
    assert status == 200
    assert group["group"] == HOT.name
    assert {f["key"] for f in group["findings"]} == {f["key"] for f in body["findings"]}
    assert sum(group["partition_counts"].values()) == group["partition_count"] > 0
    assert api_missing[0] == 404
    assert "nobody" in api_missing[1]["message"]

    _check_task_loads(kafka, loads_topic, metrics, snapshots)


def _check_task_loads(
    kafka: EmbeddedKafka, topic: str, metrics: str, snapshots: list[Snapshot]
) -> None:
    """The task loads topic holds a record for each micro-batch that moved the group on,
    the latest with the tasks' rates as /metrics shows them, keyed cluster/application id."""
    records = read_all(kafka.bootstrap_servers, topic)
    assert len(records) == 2, "one per micro-batch"
    assert {key for key, _ in records} == {f"{CLUSTER}/{HOT.name}".encode()}
    latest = TaskLoads.from_json(records[-1][1])
    task_rates = {
        sample.labels["task"]: sample.value
        for family in text_string_to_metric_families(metrics)
        if family.name == "ksmon_streams_task_records_per_second"
        for sample in family.samples
        if sample.labels["group"] == HOT.name
    }
    assert task_rates, "the hot case's tasks have rates"
    assert (latest.application_id, latest.tasks) == (HOT.name, task_rates)
    newest = max(decode(s.to_json())[1].t for s in snapshots)
    assert latest.measured_at == TaskLoads.of(HOT.name, newest, {}).measured_at


def test_the_job_reads_the_snapshot_topic(
    kafka: EmbeddedKafka, spark: SparkSession, tmp_path: Path
) -> None:
    topic = unique_name("snapshots")
    create_topics(kafka.bootstrap_servers, {topic: 2})
    produce(
        kafka.bootstrap_servers,
        topic,
        [(f"local/{s.group.group_id}", s.to_json().decode()) for s in LOOP.snapshots],
    )
    config = job_config(
        kafka, tmp_path, findings_topic=unique_name("findings"), snapshot_topic=topic
    )
    run_job_until_caught_up(config, spark)
    assert [(f.kind, f.group) for f in open_findings(config)] == [
        ("rebalance_loop", "loop-poll-timeouts")
    ]


def test_a_job_killed_mid_stream_and_restarted_neither_loses_nor_repeats_findings(
    kafka: EmbeddedKafka, spark: SparkSession, tmp_path: Path
) -> None:
    spool = tmp_path / "spool"
    files = [
        hot + loop
        for hot, loop in zip(in_chunks(HOT.snapshots, 4), in_chunks(LOOP.snapshots, 4), strict=True)
    ]
    paths = write_spool(spool, files)
    config = job_config(
        kafka,
        tmp_path,
        findings_topic=unique_name("findings"),
        spool=spool,
        max_files_per_batch=1,
    )
    ledger = tmp_path / "checkpoint" / "ledger"
    log = (tmp_path / "job.log").open("ab")

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "agent", "aggregate", "--config", str(tmp_path / "ksmon.yaml")],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its JVM too dies with the kill below: a pod lost
        )

    def batches_done() -> int:
        return len(list(ledger.glob("batch-*.json")))

    def published_through() -> int:
        marker = ledger / "published.json"
        return int(json.loads(marker.read_text())["through"]) if marker.exists() else -1

    def exited() -> str | None:
        code = job.poll()
        return None if code is None else f"ksmon aggregate exited with {code}; see {log.name}"

    job = start()
    try:
        wait_until(
            lambda: batches_done() >= 1, timeout=300, what="the first micro-batch", abort=exited
        )
        os.killpg(job.pid, signal.SIGKILL)  # most likely in the middle of the second batch
        job.wait(timeout=30)
        killed_at = batches_done()
        job = start()
        wait_until(
            lambda: published_through() >= len(paths) - 1,
            timeout=300,
            what=f"all {len(paths)} micro-batches published after the restart",
            abort=exited,
        )
        # Stopped as a supervisor stops it (SIGTERM to the process group: the JVM too).
        before_stop = (tmp_path / "job.log").stat().st_size
        os.killpg(job.pid, signal.SIGTERM)
        job.wait(timeout=60)
        stopping = (tmp_path / "job.log").read_text()[before_stop:]
        assert "Traceback" not in stopping, stopping
        assert " failed" not in stopping, stopping
        assert "ksmon aggregate stopped" in stopping, stopping
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGTERM)
            job.wait(timeout=60)
        log.close()

    findings = config.aggregation.findings
    assert findings is not None
    published = read_events(kafka_client_settings(config.cluster("local")), findings.topic)
    ids = [e.event_id for e in published]
    assert len(ids) == len(set(ids)), "an event was published twice"
    replayed = replay(paths, config.aggregation.detectors)
    assert sorted((e.event, e.finding.key, e.at) for e in published) == sorted(
        (e.event, e.finding.key, e.at) for e in replayed.events
    ), f"the restarted job (killed after {killed_at} batches) disagrees with a replay"
    assert {e.finding.kind for e in published} == {"hot_partitions_colocated", "rebalance_loop"}


# Short look-backs, so a batch of five minutes of polls spans more than the retention.
LONG_BATCH_DETECTORS: dict[str, object] = {
    "evaluation_window": "10s",
    "thread_history": "2m",
    "thread_death_grace": "30s",
    "loop_window": "1m",
    "progress_stall_after": "1m",
    "restore_stall_after": "1m",
    "idle_members_after": "1m",
    "budget_hold": "1m",
    "tasks_per_thread_lag_window": "1m",
    "consumer_status_window": "1m",
}


def _opened_threads_dead(config: Config) -> list[tuple[str, str | None, float, float]]:
    findings = config.aggregation.findings
    assert findings is not None
    return [
        (e.finding.kind, e.finding.subject.process, e.at, e.finding.since)
        for e in read_events(kafka_client_settings(config.cluster("local")), findings.topic)
        if e.event == "open" and e.finding.kind == "stream_threads_dead"
    ]


def test_every_poll_of_a_long_micro_batch_is_judged_with_its_own_look_back(
    kafka: EmbeddedKafka, spark: SparkSession, tmp_path: Path
) -> None:
    # One micro-batch brings 5 minutes of polls (a job catching up), more than the
    # retention (130 s: the 2-minute thread history and a 10 s window). Each poll joins
    # the window and is judged in turn: pB, last seen at 90 s, has been gone for the
    # 30 s grace at 120 s, where the finding opens, as it would have live.
    group = "long-batch-instance-gone"
    snapshots = [
        snapshot(
            group,
            t,
            members=[streams_member("pA", 1), *([streams_member("pB", 1)] if t - T0 < 100 else [])],
            partitions=[partition("in", 0, end=1000)],
        )
        for t in times(0, 300, 10)
    ]
    write_spool(tmp_path / "spool", [snapshots])
    config = job_config(
        kafka,
        tmp_path,
        findings_topic=unique_name("findings"),
        spool=tmp_path / "spool",
        detectors=LONG_BATCH_DETECTORS,
    )
    assert config.aggregation.detectors.history_retention == 130
    view = run_job_until_caught_up(config, spark)
    assert _opened_threads_dead(config) == [("stream_threads_dead", "pB", T0 + 120, T0 + 90)]
    assert (view.snapshots_processed, view.snapshots_late, view.snapshots_not_judged) == (31, 0, 0)


def test_a_job_whose_findings_cluster_is_away_at_start_starts_and_serves_metrics(
    kafka: EmbeddedKafka, spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The findings topic is created when the job starts; a cluster away then (restarting,
    unreachable) used to end the job with "unexpected KafkaTimeoutError". Now it starts,
    says why the topic is missing, and each micro-batch tries again before publishing."""
    away = f"127.0.0.1:{free_port()}"  # nothing listens there
    config = job_config(
        kafka, tmp_path, findings_topic=unique_name("findings"), spool=tmp_path / "spool"
    )
    findings = config.aggregation.findings
    assert findings is not None
    config = replace(
        config,
        clusters=(
            *config.clusters,
            replace(
                config.clusters[0],
                name="away",
                bootstrap_servers=(away,),
                poll=replace(config.clusters[0].poll, request_timeout=2.0),
            ),
        ),
        aggregation=replace(config.aggregation, findings=replace(findings, cluster="away")),
    )
    (tmp_path / "spool").mkdir()
    job = AggregationJob(config, spark)
    with caplog.at_level(logging.WARNING, logger="agent.aggregation.job"):
        job.start()
    try:
        assert job.server is not None
        assert "ksmon_job_snapshots_processed_total 0.0" in scrape(job.server.port)
        assert job.failure() is None
    finally:
        job.stop()
    assert [r.getMessage() for r in caplog.records if r.name == "agent.aggregation.job"] == [
        f"cannot create findings topic {findings.topic}: KafkaTimeoutError: "
        f"Unable to bootstrap from ['{away}']; trying again with the first micro-batch"
    ]


def test_the_jvm_buckets_a_group_where_python_looks_for_it(spark: SparkSession) -> None:
    # The operator's key is computed in the JVM; replay and tests compute it in Python.
    from agent.aggregation.judging.stored_bucket import bucket_of  # noqa: PLC0415
    from agent.aggregation.spark.operator import keyed  # noqa: PLC0415

    groups = [("prod", f"app-{i}") for i in range(50)] + [("prod", "ünïcode-gröup")]
    rows = [(snapshot(g, T0, cluster=c).to_json().decode(), "test") for c, g in groups]
    keys = tuple(1000 + b for b in range(32))  # any keys: bucket b's is keys[b]
    frame = keyed(spark.createDataFrame(rows, ["value", "origin"]), keys, DetectorsConfig())
    buckets = [r["bucket"] for r in frame.select("bucket").collect()]
    assert buckets == [keys[bucket_of(c, g, 32)] for c, g in groups]


@pytest.mark.parametrize(("buckets", "partitions"), [(32, 4), (32, 2), (64, 8), (3, 4)])
def test_spark_puts_each_bucket_in_the_partition_its_key_was_chosen_for(
    spark: SparkSession, buckets: int, partitions: int
) -> None:
    # The stateful operator's shuffle is Spark's hash partitioning of the key; a
    # repartition by the same column and count is the same partitioning.
    from pyspark.sql import functions as F  # noqa: PLC0415

    from agent.aggregation.spark.partitioning import spread_keys  # noqa: PLC0415

    keys = spread_keys(buckets, partitions)
    frame = spark.createDataFrame([(k,) for k in keys], "bucket int")
    placed: dict[int, int] = dict(
        frame.repartition(partitions, "bucket")
        .select("bucket", F.spark_partition_id().alias("partition"))
        .collect()
    )
    assert [placed[k] for k in keys] == [b % partitions for b in range(buckets)]
