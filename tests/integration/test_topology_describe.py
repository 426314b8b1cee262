"""``Topology#describe()`` as Kafka Streams itself prints it (the fixture app serves it),
parsed by ksmon, against two other views of the same topology: what the classic
assignment says each task reads, and the topology a KIP-1071 broker holds."""

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from agent.collect.kafka_edge import KafkaEdge
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppConfig
from agent.embedded.topics import create_topics
from agent.model import Snapshot
from agent.streams.topology import TopologyDescription, parse_topology
from tests.support.kafka_tools import describe_topics
from tests.support.recording import group_poller
from tests.support.streams import StreamsApps, unique_name

pytestmark = pytest.mark.integration

PARTITIONS = 2


def poll_until(
    edge: KafkaEdge,
    group: str,
    ready: Any,
    topologies: Mapping[str, TopologyDescription] | None = None,
) -> Snapshot:
    """The first poll of ``group`` whose snapshot is ``ready``."""
    poller = group_poller(edge, [group], topologies=topologies)
    seen: list[Snapshot] = []

    def polled() -> bool:
        seen[:] = [s for s in poller.poll().snapshots if s.group.group_id == group]
        return bool(seen) and bool(ready(seen[0]))

    wait_until(polled, timeout=90, what=f"a settled poll of {group}")
    return seen[0]


def explain(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "agent", "explain", *args, "--sample", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_parsed_description_reads_what_the_tasks_and_the_broker_say(
    kafka: EmbeddedKafka, streams_apps: StreamsApps, edge: KafkaEdge, tmp_path: Path
) -> None:
    joined, counted = unique_name("describe-join"), unique_name("describe-count")
    create_topics(
        kafka.bootstrap_servers,
        {f"{joined}-in": PARTITIONS, f"{joined}-table": PARTITIONS, f"{counted}-in": PARTITIONS},
    )
    classic = StreamsAppConfig(
        application_id=joined,
        topology="join",
        input_topic=f"{joined}-in",
        table_topic=f"{joined}-table",
        output_topic=f"{joined}-out",
    )
    kip1071 = StreamsAppConfig(
        application_id=counted,
        input_topic=f"{counted}-in",
        output_topic=f"{counted}-out",
        streams_config={"group.protocol": "streams"},
    )
    (join_app,) = streams_apps.start(classic, wait=False)
    (count_app,) = streams_apps.start(kip1071, wait=False)
    for instance in (join_app, count_app):
        instance.wait_until_running(timeout=120)

    # Classic: each task's partitions, decoded from the assignment, name its topics.
    described = parse_topology(join_app.topology_text())
    snapshot = poll_until(
        edge, joined, lambda s: s.group.state == "Stable" and any(m.streams for m in s.members)
    )
    read_by_tasks: dict[int, set[str]] = {}
    for member in snapshot.members:
        assert member.streams is not None
        for task in member.streams.active_tasks:
            subtopology = int(task.task.split("_")[0])
            read_by_tasks.setdefault(subtopology, set()).update(p.topic for p in task.partitions)
    assert read_by_tasks == {
        s.subtopology_id: set(s.source_topics) for s in described.task_subtopologies
    }
    (join,) = described.task_subtopologies
    assert set(join.source_topics) == {f"{joined}-in", f"{joined}-table"}
    assert join.sink_topics == (f"{joined}-out",)
    assert join.stores, "the table the stream joins is a store"
    # Handed to ksmon in its config, the same text names the join in `ksmon explain`.
    (tmp_path / "join.topology").write_text(join_app.topology_text())
    (tmp_path / "ksmon.yaml").write_text(
        f"clusters: [{{name: local, bootstrap_servers: '{kafka.bootstrap_servers}'}}]\n"
        f"topologies: [{{group: {joined}, file: '{tmp_path / 'join.topology'}'}}]\n"
    )
    text = explain(joined, "--config", str(tmp_path / "ksmon.yaml"))
    assert "TOPOLOGY (from the configured Topology#describe() text)" in text
    assert f"sub-topology 0: {PARTITIONS} active tasks; reads " in text
    assert f"stores {', '.join(join.stores)}" in text
    # The agent ships the configured text as the group's sub-topologies, as a KIP-1071
    # broker would hold them: what the tasks read, the stores and their changelogs.
    snapshot = poll_until(
        edge, joined, lambda s: s.group.state == "Stable", topologies={joined: described}
    )
    (shipped,) = snapshot.subtopologies
    assert shipped.origin == "configured"
    assert {int(shipped.subtopology_id): set(shipped.source_topics)} == read_by_tasks
    assert (shipped.state_stores, shipped.processors) == (join.stores, join.processors)
    on_broker = set(describe_topics(kafka))
    assert (
        set(shipped.changelog_topics)
        == {f"{joined}-{store}-changelog" for store in join.stores} & on_broker
    )
    assert shipped.changelog_topics, "the join's table store logs to a changelog"

    # KIP-1071: the broker holds the topology the app sent it; the description agrees.
    # describe() prints internal topics without the application id they carry.
    unprefixed = parse_topology(count_app.topology_text())
    assert f"{counted}-counts-repartition" not in unprefixed.subtopologies[0].sink_topics
    described = unprefixed.for_application(counted)
    snapshot = poll_until(edge, counted, lambda s: len(s.subtopologies) == 2)
    broker = {
        int(s.subtopology_id): set(s.source_topics) | set(s.repartition_source_topics)
        for s in snapshot.subtopologies
    }
    assert broker == {s.subtopology_id: set(s.source_topics) for s in described.subtopologies}
    sinks = {int(s.subtopology_id): set(s.repartition_sink_topics) for s in snapshot.subtopologies}
    repartition = f"{counted}-counts-repartition"
    assert sinks[0] == {repartition}
    assert repartition in described.subtopologies[0].sink_topics
    text = explain(counted, "--bootstrap", kafka.bootstrap_servers)
    assert "TOPOLOGY (as the broker holds it)" in text
    assert f"sub-topology 1: {PARTITIONS} active tasks; reads {repartition}; stores counts" in text
    assert {s.origin for s in snapshot.subtopologies} == {"broker"}
    assert [s.state_stores for s in snapshot.subtopologies] == [
        s.stores for s in described.subtopologies
    ], "the broker's stores, named from their changelogs"
    changelogs = {t for s in snapshot.subtopologies for t in s.changelog_topics}
    assert changelogs == {
        f"{counted}-{store}-changelog" for store in described.subtopologies[1].stores
    }
