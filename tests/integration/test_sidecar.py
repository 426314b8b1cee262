"""Sidecar mode against the real broker and the real fixture app, whose metrics come from the
real JMX exporter java agent or, for thread death and a held restore, from Micrometer's
KafkaStreamsMetrics on a Prometheus registry (as a Spring Boot app serves them): thread
death, a held restore, checkpoint offsets, and an app whose endpoint is down. Each is
checked against the app's own view of itself (its oracle)."""

import json
from pathlib import Path

import pytest
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.structs import OffsetAndMetadata

from agent.collect.kafka_edge import KafkaEdge
from agent.collect.poller import ClusterPoller
from agent.collect.sidecar import SidecarCollector, SidecarSettings
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from agent.embedded.streams_app import MetricsExporter, StreamsAppBuild, StreamsAppConfig
from agent.embedded.topics import create_topics, end_offsets
from agent.model import AgentInfo, SidecarInfo, Snapshot
from agent.streams.app_metrics import parse_app_metrics
from tests.support.sidecar_agent import Samples, SidecarAgent, value
from tests.support.streams import StreamsApps, fill_changelog, poison_instance, unique_name

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 2
# The two namings a sidecar reads without being told which: found the same way in both.
EXPORTERS = pytest.mark.parametrize("exporter", ["jmx-exporter", "micrometer"])


def sidecar_poller(
    edge: KafkaEdge, application_id: str, metrics_url: str, state_dir: Path | None = None
) -> ClusterPoller:
    settings = SidecarSettings(application_id, metrics_url, 5.0, state_dir)
    return ClusterPoller(
        "local", AgentInfo("test", "0", "sidecar"), edge, sidecar=SidecarCollector(settings)
    )


def poll(poller: ClusterPoller) -> tuple[Snapshot, SidecarInfo]:
    result = poller.poll()
    assert result.ok, result.error
    assert "ListGroups" not in result.requests, "a sidecar never lists the cluster's groups"
    (snapshot,) = result.snapshots
    assert snapshot.sidecar is not None
    return snapshot, snapshot.sidecar


def new_app(kafka: EmbeddedKafka, base: str) -> tuple[str, str]:
    app = unique_name(base)
    create_topics(kafka.bootstrap_servers, {f"{app}-input": PARTITIONS})
    return app, f"{app}-input"


# -- thread death, through the real `ksmon agent` daemon ------------------------------


def thread_states(metrics: Samples) -> list[tuple[str, str]]:
    samples = metrics.get("ksmon_sidecar_thread_state", [])
    return sorted((labels["thread"], labels["state"]) for labels, _ in samples)


def client_states(metrics: Samples) -> list[str]:
    return [labels["state"] for labels, _ in metrics.get("ksmon_sidecar_client_state", [])]


@EXPORTERS
def test_thread_death_under_shutdown_client_is_reported_with_alive_and_expected_counts(
    kafka: EmbeddedKafka, streams_apps: StreamsApps, tmp_path: Path, exporter: MetricsExporter
) -> None:
    app, topic = new_app(kafka, "sidecar-death")
    (instance,) = streams_apps.start(
        StreamsAppConfig(
            application_id=app,
            input_topic=topic,
            output_topic=f"{app}-out",
            threads=2,
            poison_key_prefix="poison",
            on_error="shutdown_client",
            metrics=exporter,
        )
    )
    process = instance.wait_until_running()["processId"]
    agent = SidecarAgent(kafka, app, instance, tmp_path)
    try:
        before = agent.wait_for(
            "2 alive threads", lambda m: value(m, "ksmon_sidecar_stream_threads_alive") == 2
        )
        assert value(before, "ksmon_sidecar_stream_threads_expected") == 2
        assert before["ksmon_sidecar_client_state"] == [
            ({"kafka_cluster": "local", "group": app, "process": process, "state": "RUNNING"}, 1)
        ]
        assert thread_states(before) == [("1", "RUNNING"), ("2", "RUNNING")]
        assert parse_app_metrics(instance.metrics_text()).dialect == exporter, "told apart"
        requests = {labels["api"] for labels, _ in before["ksmon_kafka_requests_total"]}
        assert "ListGroups" not in requests, "a sidecar never lists the cluster's groups"
        # Judged while the client runs: a page scraped mid-close may lack some of its fields.
        running_log = agent.log.read_text()
        assert "naming) has no" not in running_log, "every field a running client has is there"

        # The pill kills a thread; SHUTDOWN_CLIENT then shuts the whole client down to
        # ERROR, while the JVM keeps running. On the way the app may briefly show 0 alive
        # threads while PENDING_ERROR; then the client closes and removes all its metrics.
        poison_instance(kafka, instance, topic, PARTITIONS)
        after = agent.wait_for(
            "both stream threads dead",
            lambda m: thread_states(m) == [("1", "DEAD"), ("2", "DEAD")],
        )

        oracle = instance.oracle()
        assert oracle is not None
        assert (oracle["state"], oracle["aliveThreads"]) == ("ERROR", 0), "the app agrees"
        assert instance.process.alive, "the JVM is up: only its Kafka Streams client died"
        assert value(after, "ksmon_sidecar_stream_threads_alive") == 0
        assert value(after, "ksmon_sidecar_stream_threads_expected") == 2
        assert value(after, "ksmon_sidecar_app_metrics_up") == 1
        # Kafka Streams removed the client's metrics before entering ERROR: the app never
        # says ERROR, the sidecar infers it (a scrape may have caught PENDING_ERROR first).
        errored = agent.wait_for("client state ERROR", lambda m: client_states(m) == ["ERROR"])
        assert errored["ksmon_sidecar_client_state"] == [
            ({"kafka_cluster": "local", "group": app, "process": process, "state": "ERROR"}, 1)
        ]

        def closed() -> Snapshot | None:
            return next(
                (s for s in reversed(agent.snapshots()) if s.sidecar and s.sidecar.client_closed),
                None,
            )

        wait_until(lambda: closed() is not None, timeout=30, what="a spooled snapshot")
        snapshot = closed()
        assert snapshot is not None
        assert snapshot.sidecar is not None
        assert snapshot.agent.mode == "sidecar"
        sidecar = snapshot.sidecar
        assert (sidecar.alive_stream_threads, sidecar.expected_stream_threads) == (0, 2)
        assert sidecar.client_state == "ERROR"
        assert sidecar.process_id == process
        # Kafka Streams does not leave the group on close: its members linger, and are its.
        assert len(sidecar.member_ids) == 2
        assert set(sidecar.member_ids) == {m.member_id for m in snapshot.members}
    finally:
        code = agent.stop()
    assert code == 0
    log = agent.log.read_text()
    assert "Traceback" not in log


# -- a restore held by the throttle ---------------------------------------------------


def restored(info: SidecarInfo) -> float:
    totals = [t.restored_records_total for t in info.tasks]
    assert all(t is not None for t in totals), "counted at DEBUG recording level"
    return sum(t for t in totals if t is not None)


def restoring(info: SidecarInfo) -> int:
    counts = [u.active_restoring_tasks for u in info.state_updaters]
    assert counts, "Kafka Streams 3.8+ restores in state-updater threads"
    return sum(c or 0 for c in counts)


@EXPORTERS
def test_a_held_restore_shows_as_restoring_without_progress_and_progresses_once_released(
    kafka: EmbeddedKafka,
    streams_apps: StreamsApps,
    edge: KafkaEdge,
    tmp_path: Path,
    exporter: MetricsExporter,
) -> None:
    app, topic = new_app(kafka, "sidecar-restore")
    marker = tmp_path / "hold-restore"
    (instance,) = streams_apps.start(
        StreamsAppConfig(
            application_id=app,
            input_topic=topic,
            output_topic=f"{app}-out",
            static_membership=True,  # the restarted instance takes its old member's place
            restore_marker=marker,
            # restore-total is a DEBUG sensor; at INFO only the state updater shows restores.
            streams_config={"metrics.recording.level": "DEBUG"},
            metrics=exporter,
        )
    )
    changelog = f"{app}-counts-changelog"
    fill_changelog(kafka, topic, changelog, 500)
    marker.touch()
    instance.restart(wipe_state=True)
    instance.wait_for(lambda s: s["activeRestores"] >= 1, timeout=60, what="a restore to begin")
    poller = sidecar_poller(edge, app, instance.metrics_url, instance.state_dir)
    polls: list[tuple[Snapshot, SidecarInfo]] = []

    def restore_on_the_page() -> bool:
        # Micrometer binds the state updater's metrics at its next refresh, after the
        # restore began; the JMX exporter reads them at once.
        polls.append(poll(poller))
        return any(u.active_restoring_tasks for u in polls[-1][1].state_updaters)

    wait_until(restore_on_the_page, timeout=30, what="the restore on the metrics page")
    first_snapshot, held = polls[-1]
    _, still_held = poll(poller)

    for info in (held, still_held):
        assert info.client_state == "REBALANCING"
        assert restoring(info) >= 1
        assert restored(info) == 0
        assert all(u.restore_records_rate == 0 for u in info.state_updaters)
    changelog_topic = next(t for t in first_snapshot.topics if t.name == changelog)
    assert changelog_topic.internal_kind == "changelog", "found without listing every topic"
    to_restore = sum(o for o in changelog_topic.log_end_offsets if o is not None)
    assert to_restore >= 500

    marker.unlink()

    def released() -> bool:
        _, info = poll(poller)
        return info.client_state == "RUNNING" and restoring(info) == 0

    wait_until(released, timeout=60, what="the restore to finish", interval=1.0)
    _, done = poll(poller)
    oracle = instance.oracle()
    assert oracle is not None
    assert restored(done) == oracle["restoredRecords"] == to_restore, (
        "every changelog record restored, as the app's restore listener counted"
    )
    assert any((u.restore_records_rate or 0) > 0 for u in done.state_updaters)


# -- .checkpoint offsets (Kafka Streams 3.x: 4.3 keeps them inside RocksDB) ------------


def test_checkpoint_offsets_on_disk_equal_the_changelog_offsets_the_app_reports(
    kafka: EmbeddedKafka,
    streams_apps: StreamsApps,
    streams_app_build_3x: StreamsAppBuild,
    edge: KafkaEdge,
) -> None:
    app, topic = new_app(kafka, "sidecar-checkpoint")
    (instance,) = streams_apps.start(
        StreamsAppConfig(
            application_id=app,
            input_topic=topic,
            output_topic=f"{app}-out",
            static_membership=True,
        ),
        build=streams_app_build_3x,
    )
    poller = sidecar_poller(edge, app, instance.metrics_url, instance.state_dir)
    _, starting = poll(poller)
    stateful = [t for t in starting.state_dir_tasks if t.task.startswith("1_")]
    assert [(t.has_checkpoint, t.checkpoint) for t in stateful] == [(True, ())] * PARTITIONS, (
        "Kafka Streams 3.x writes -4 (offset unknown) for a fresh store: present, no offset"
    )

    changelog = f"{app}-counts-changelog"
    fill_changelog(kafka, topic, changelog, 600)
    # A clean close writes every task's checkpoint; the restart reads it back.
    instance.restart()
    view = instance.wait_until_running()
    changelog_end = end_offsets(kafka.bootstrap_servers, changelog)

    snapshot, info = poll(poller)

    on_disk = {(o.topic, o.partition): o.offset for t in info.state_dir_tasks for o in t.checkpoint}
    reported = {(r["topic"], r["partition"]): r for r in view["restores"]}
    assert set(on_disk) == set(reported) == {(changelog, p) for p in range(PARTITIONS)}
    for key, offset in on_disk.items():
        assert offset + 1 == reported[key]["startingOffset"], (
            f"{key}: the app resumed restoring right after the checkpointed offset"
        )
        assert offset + 1 == changelog_end[key[1]], f"{key}: the last changelog record"
    assert info.process_id == view["processId"] or view["processId"] is None
    assert info.matched_by == "process_id"
    assert set(info.member_ids) == {m.member_id for m in snapshot.members}
    assert (info.client_state, info.alive_stream_threads) == (None, 1), (
        "3.x: no client-state metric (unknown), alive-stream-threads as ever"
    )
    assert [t.thread_index for t in info.threads] == [1]
    assert info.threads[0].rebalance_total is not None


# -- the app's endpoint is down -------------------------------------------------------


def test_an_app_whose_metrics_endpoint_is_down_still_ships_the_broker_side_snapshot(
    kafka: EmbeddedKafka, edge: KafkaEdge, tmp_path: Path
) -> None:
    group, topic = new_app(kafka, "sidecar-down")
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        admin.alter_group_offsets(group, {TopicPartition(topic, 0): OffsetAndMetadata(0, "", -1)})
    finally:
        admin.close()
    url = f"http://127.0.0.1:{free_port()}/metrics"
    poller = sidecar_poller(edge, group, url, tmp_path / "not-mounted")

    snapshot, info = poll(poller)

    assert [(p.topic, p.partition, p.committed_offset) for p in snapshot.partitions] == [
        (topic, 0, 0)
    ]
    assert snapshot.group.is_streams, "a sidecar's group is a Kafka Streams app, even empty"
    assert not info.app_metrics_up
    assert info.app_metrics_error == f"cannot reach {url}: Connection refused"
    assert info.alive_stream_threads is None
    assert not info.state_dir_readable
    assert json.loads(snapshot.to_json())["sidecar"]["app_metrics_up"] is False
