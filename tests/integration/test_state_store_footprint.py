"""state_store_footprint on the real broker with the real fixture app and a sidecar reading
its real state directory: an instance whose RocksDB stores (a window store, one RocksDB per
segment, in each of its 4 tasks) are estimated above 80% of its memory limit is named, with
the RocksDB instances that are on disk; under a generous limit nothing is found.

The limit comes the way a node-level deployment gives it: a cgroup v2 ``memory.max`` file,
here one the test writes (64 GiB, then 256 MiB), read by the sidecar at every poll.
"""

import json
import shutil
from pathlib import Path

import pytest

from agent.aggregation.replay import replay
from agent.collect.kafka_edge import KafkaEdge
from agent.collect.poller import ClusterPoller
from agent.collect.sidecar import SidecarCollector, SidecarSettings
from agent.config.schema import DetectorsConfig
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import key_for_partition, produce
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppConfig, StreamsAppInstance
from agent.embedded.topics import create_topics
from agent.model import AgentInfo, Snapshot
from agent.model.findings import Finding
from tests.support.recording import poll_into
from tests.support.streams import StreamsApps, unique_name

pytestmark = pytest.mark.integration

KIND = "state_store_footprint"
PARTITIONS = 4
STORE = "windowed-counts"  # Topologies.windowedCount
HELD = 4.0  # seconds each limit must be seen at judged polls: past the window
PARAMS = DetectorsConfig(evaluation_window=2.0)
GENEROUS = 64 * 2**30
LOW = 256 * 2**20  # under one task's worth of defaults x 4 tasks (>= 392 MiB)


def on_disk(instance: StreamsAppInstance, app: str) -> dict[str, int]:
    """Per task directory, the RocksDB instances on disk, counted here from the paths:
    ``rocksdb/<store>/`` directories and ``<store>/<store>.<segment>/`` directories."""
    counts: dict[str, int] = {}
    for task in sorted((instance.state_dir / app).glob("[0-9]*_[0-9]*")):
        key_value = [p for p in (task / "rocksdb").glob("*") if p.is_dir()]
        segments = [p for p in (task / STORE).glob(f"{STORE}.*") if p.is_dir()]
        counts[task.name] = len(key_value) + len(segments)
    return counts


class SidecarRecorder:
    """A sidecar's poller next to one instance; every snapshot goes to the current
    recording. Keeps since when the polls have been judgeable with the same limit."""

    def __init__(
        self, edge: KafkaEdge, app: str, instance: StreamsAppInstance, limit_file: Path
    ) -> None:
        settings = SidecarSettings(
            app,
            instance.metrics_url,
            5.0,
            instance.state_dir,
            app_memory_limit_file=limit_file,
        )
        self.poller = ClusterPoller(
            "local",
            AgentInfo("ssf-sidecar", "0", "sidecar"),
            edge,
            sidecar=SidecarCollector(settings),
        )
        self.last: Snapshot | None = None
        self.judgeable_since: float | None = None

    def poll(self, recording: Path) -> Snapshot:
        (snapshot,) = poll_into(self.poller, recording)
        sidecar = snapshot.sidecar
        assert sidecar is not None
        previous = self.last
        judgeable = (
            snapshot.group.state == "Stable"
            and any(m.streams is not None for m in snapshot.members)
            and sidecar.state_dir_readable
            and sidecar.memory_limit_bytes is not None
        )
        same_limit = (
            previous is not None
            and previous.sidecar is not None
            and previous.sidecar.memory_limit_bytes == sidecar.memory_limit_bytes
        )
        if not judgeable:
            self.judgeable_since = None
        elif not same_limit or self.judgeable_since is None:
            self.judgeable_since = snapshot.poll.started_at
        self.last = snapshot
        return snapshot

    def held(self, recording: Path, seconds: float) -> bool:
        snapshot = self.poll(recording)
        return (
            self.judgeable_since is not None
            and snapshot.poll.started_at - self.judgeable_since >= seconds
        )


def test_an_instance_whose_stores_outgrow_its_memory_limit_is_named_and_a_generous_limit_is_not(
    kafka: EmbeddedKafka,
    streams_apps: StreamsApps,
    edge: KafkaEdge,
    tmp_path: Path,
) -> None:
    app = unique_name("ssf")
    create_topics(kafka.bootstrap_servers, {f"{app}-in": PARTITIONS})
    config = StreamsAppConfig(
        application_id=app,
        topology="windowed",
        input_topic=f"{app}-in",
        output_topic=f"{app}-out",
        # Flush the record cache into RocksDB every second: segments appear on disk soon.
        streams_config={"commit.interval.ms": "1000"},
    )
    (instance,) = streams_apps.start(config, 1)
    keys = [key_for_partition(p, PARTITIONS, prefix="k") for p in range(PARTITIONS)]
    produce(kafka.bootstrap_servers, f"{app}-in", [(k, "v") for k in keys])
    wait_until(
        lambda: len(on_disk(instance, app)) == PARTITIONS and all(on_disk(instance, app).values()),
        timeout=60,
        what=f"a segment of {STORE} on disk in each of the {PARTITIONS} task directories",
        abort=instance.died,
    )

    limit_file = tmp_path / "memory.max"
    limit_file.write_text(f"{GENEROUS}\n")
    generous, everything = tmp_path / "generous.jsonl", tmp_path / "all.jsonl"
    recorder = SidecarRecorder(edge, app, instance, limit_file)

    wait_until(
        lambda: recorder.held(generous, HELD),
        timeout=60,
        interval=0.5,
        what=f"judgeable sidecar polls with the generous limit for {HELD} s",
        abort=instance.died,
    )
    shutil.copyfile(generous, everything)  # the whole history goes on in the second one
    limit_file.write_text(f"{LOW}\n")
    lowered_at = recorder.last.poll.started_at if recorder.last else 0.0
    disk_at_last_poll: dict[str, int] = {}

    def held_low() -> bool:
        before = on_disk(instance, app)
        ok = recorder.held(everything, HELD)
        after = on_disk(instance, app)
        disk_at_last_poll.clear()
        disk_at_last_poll.update(after)
        limit = recorder.last.sidecar.memory_limit_bytes if recorder.last else None  # type: ignore[union-attr]
        return ok and before == after and limit == LOW

    wait_until(
        held_low,
        timeout=60,
        interval=0.5,
        what=f"judgeable sidecar polls with the low limit for {HELD} s, the disk unchanged",
        abort=instance.died,
    )
    assert recorder.last is not None
    sidecar = recorder.last.sidecar
    assert sidecar is not None
    process = json.loads((instance.state_dir / app / "kafka-streams-process-metadata").read_text())[
        "processId"
    ]
    assert sidecar.process_id == process
    assert sidecar.memory_limit_source == f"file {limit_file}"
    read = {t.task: sum(s.segments for s in t.stores) for t in sidecar.state_dir_tasks}
    assert read == disk_at_last_poll, "the sidecar's reading is what is on disk"

    result = replay([everything], PARAMS)

    found = [f for f in result.open_findings if f.kind == KIND]
    assert [f.subject.process for f in found] == [process], [f.explanation for f in found]
    check_finding(found[0], process, sum(disk_at_last_poll.values()), lowered_at)
    healthy = replay([generous], PARAMS)
    assert not [e for e in healthy.events if e.finding.kind == KIND]


def check_finding(
    finding: Finding, process: str, rocksdb_instances: int, lowered_at: float
) -> None:
    """The finding names the instance and counts what is on disk: one window store in each
    task, one RocksDB per segment directory."""
    evidence = finding.evidence
    per_instance = 50 * 2**20 + 3 * 16 * 2**20
    assert finding.severity == "warning"
    assert finding.since > lowered_at, "nothing under the generous limit"
    assert evidence["stores"] == 1, evidence
    assert evidence["tasks_held"] == PARTITIONS
    assert evidence["store_instances"] == PARTITIONS
    assert evidence["rocksdb_instances"] == rocksdb_instances
    assert evidence["segments"] == rocksdb_instances
    assert evidence["estimate_bytes"] == rocksdb_instances * per_instance
    assert evidence["memory_limit_bytes"] == LOW
    assert evidence["largest_stores"][0]["store"] == STORE
    assert f"instance {process} holds {PARTITIONS} tasks with 1 persistent store(s)" in (
        finding.explanation
    )
