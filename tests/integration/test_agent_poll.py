"""One poll of the real broker with the real fixture app, checked against the
app's own view of its tasks and against Kafka's own ConsumerGroupCommand."""

import re
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient

from agent.collect.kafka_edge import KafkaEdge
from agent.collect.poller import ClusterPoller, GroupFilter
from agent.collect.sidecar import SidecarCollector, SidecarSettings
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import produce
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppConfig, StreamsAppInstance
from agent.embedded.topics import create_topics
from agent.model import AgentInfo, Snapshot
from tests.support.kafka_io import commit_offsets
from tests.support.kafka_tools import (
    describe_offsets,
    describe_streams_group,
    set_group_config,
)
from tests.support.streams import StreamsApps, app_view, ksmon_view, unique_name

pytestmark = pytest.mark.integration

PARTITIONS = 4


def poller_for(edge: KafkaEdge, group: str) -> ClusterPoller:

    return ClusterPoller(
        "local",
        AgentInfo("test", "0", "central"),
        edge,
        group_filter=GroupFilter(allow=(re.compile(re.escape(group)),)),
    )


def snapshot_of(poller: ClusterPoller, group: str) -> Snapshot:
    result = poller.poll()
    assert result.ok, result.error
    (snapshot,) = [s for s in result.snapshots if s.group.group_id == group]
    return snapshot


def test_decoded_tasks_per_thread_and_instance_equal_what_the_app_reports(
    kafka: EmbeddedKafka, streams_apps: StreamsApps, edge: KafkaEdge
) -> None:
    app = unique_name("tasks")
    topic = f"{app}-input"
    create_topics(kafka.bootstrap_servers, {topic: PARTITIONS})
    instances = streams_apps.start(
        StreamsAppConfig(
            application_id=app,
            input_topic=topic,
            output_topic=f"{app}-out",
            threads=2,
            standbys=1,
            application_server=True,
        ),
        instances=2,
    )
    poller = poller_for(edge, app)
    seen: dict[str, Any] = {}

    def views_agree() -> bool:
        # Standbys and warm-ups settle over a few rebalances; compare once both sides agree.
        snapshot = snapshot_of(poller, app)
        if snapshot.group.state != "Stable" or len(snapshot.members) != 4:
            return False
        seen["snapshot"] = snapshot
        return ksmon_view(snapshot) == app_view(instances)

    wait_until(views_agree, timeout=90, what="ksmon's decoded assignment to match the app's")

    snapshot: Snapshot = seen["snapshot"]
    assert snapshot.group.is_streams
    assert snapshot.group.protocol == "stream"
    processes = {m.streams.process_id for m in snapshot.members if m.streams}
    assert len(processes) == 2, "two instances, two threads each"
    active = [t.task for m in snapshot.members if m.streams for t in m.streams.active_tasks]
    assert sorted(active) == sorted(f"{s}_{p}" for s in (0, 1) for p in range(PARTITIONS))
    endpoints = {m.streams.endpoint for m in snapshot.members if m.streams}
    assert endpoints == {f"127.0.0.1:{i.oracle_port}" for i in instances}
    # Active tasks map to the partitions they read: sub-topology 0 reads the input topic.
    for m in snapshot.members:
        assert m.streams is not None
        for task in m.streams.active_tasks:
            subtopology, partition = task.task.split("_")
            expected = topic if subtopology == "0" else f"{app}-counts-repartition"
            assert [(p.topic, p.partition) for p in task.partitions] == [(expected, int(partition))]


def sidecar_sees_the_same(
    edge: KafkaEdge, app: str, instance: StreamsAppInstance, central: Snapshot
) -> None:
    """A sidecar describes its own group by id: DescribeGroups says "not a classic group",
    and the same poll asks StreamsGroupDescribe."""
    sidecar = ClusterPoller(
        "local",
        AgentInfo("test", "0", "sidecar"),
        edge,
        sidecar=SidecarCollector(SidecarSettings(app, instance.metrics_url, 5.0, None)),
    )
    result = sidecar.poll()
    assert result.ok, result.error
    (from_sidecar,) = result.snapshots
    assert from_sidecar.group.group_type == "streams"
    assert not from_sidecar.errors, from_sidecar.errors
    assert ksmon_view(from_sidecar) == ksmon_view(central)
    assert from_sidecar.sidecar is not None
    process = (instance.oracle() or {})["processId"]
    assert set(from_sidecar.sidecar.member_ids) == {
        m.member_id for m in from_sidecar.members if m.streams and m.streams.process_id == process
    }
    assert len(from_sidecar.sidecar.member_ids) == 2


def test_a_kip1071_streams_group_is_described_like_a_classic_one(
    kafka: EmbeddedKafka, streams_apps: StreamsApps, edge: KafkaEdge
) -> None:
    """group.protocol=streams: the broker assigns the tasks and DescribeGroups knows no such
    group; StreamsGroupDescribe gives the same per-thread view the classic decoding gives,
    centrally (the group listed as type streams) and from a sidecar (never listed)."""
    app = unique_name("kip1071")
    topic = f"{app}-input"
    create_topics(kafka.bootstrap_servers, {topic: PARTITIONS})
    config = StreamsAppConfig(
        application_id=app,
        input_topic=topic,
        output_topic=f"{app}-out",
        threads=2,
        application_server=True,
        streams_config={"group.protocol": "streams"},
    )
    # Standbys of a streams group are the broker's to assign: a group config, not the app's.
    set_group_config(kafka, app, {"streams.num.standby.replicas": "1"})
    instances = streams_apps.start(config, instances=2)
    poller = poller_for(edge, app)
    seen: dict[str, Any] = {}

    def views_agree() -> bool:
        snapshot = snapshot_of(poller, app)
        if snapshot.group.state != "Stable" or len(snapshot.members) != 4:
            return False
        seen["snapshot"] = snapshot
        view = ksmon_view(snapshot)
        return view == app_view(instances) and all(standby for _, standby in view.values())

    wait_until(views_agree, timeout=90, what="ksmon's view of the streams group to match the app's")

    snapshot: Snapshot = seen["snapshot"]
    assert (snapshot.group.group_type, snapshot.group.protocol_type) == ("streams", "streams")
    assert snapshot.group.is_streams
    oracle = describe_streams_group(kafka, app)
    assert oracle is not None
    assert oracle.state == "Stable"
    assert snapshot.group.group_epoch is not None
    assert snapshot.group.group_epoch <= oracle.group_epoch, "epochs only grow"
    assert snapshot.group.assignment_epoch == snapshot.group.group_epoch, "Stable: reconciled"
    assert {m.member_epoch for m in snapshot.members} == {snapshot.group.group_epoch}
    # The topology the broker holds: the count reads the input, then its repartition topic.
    repartition = f"{app}-counts-repartition"
    topology = {s.subtopology_id: s for s in snapshot.subtopologies}
    assert set(topology) == {"0", "1"}
    assert topology["0"].source_topics == (topic,)
    assert topology["0"].repartition_sink_topics == (repartition,)
    assert topology["1"].repartition_source_topics == (repartition,)
    assert topology["1"].changelog_topics == (f"{app}-counts-changelog",)
    for m in snapshot.members:
        assert m.streams is not None
        assert m.streams.endpoint in {f"127.0.0.1:{i.oracle_port}" for i in instances}
        for task in m.streams.active_tasks:
            subtopology, partition = task.task.split("_")
            expected = topic if subtopology == "0" else repartition
            assert [(p.topic, p.partition) for p in task.partitions] == [(expected, int(partition))]
        assert {(p.topic, p.partition) for p in m.assigned_partitions} == {
            (p.topic, p.partition) for t in m.streams.active_tasks for p in t.partitions
        }
    owners = {(p.topic, p.partition): p.owner_member_id for p in snapshot.partitions}
    assert all(owners[(topic, n)] is not None for n in range(PARTITIONS)), owners

    sidecar_sees_the_same(edge, app, instances[0], snapshot)


def test_committed_offsets_and_lag_equal_what_consumer_group_command_prints(
    kafka: EmbeddedKafka, streams_apps: StreamsApps, edge: KafkaEdge
) -> None:
    app = unique_name("offsets")
    topic = f"{app}-input"
    create_topics(kafka.bootstrap_servers, {topic: PARTITIONS})
    (instance,) = streams_apps.start(
        StreamsAppConfig(application_id=app, input_topic=topic, output_topic=f"{app}-out")
    )
    produce(kafka.bootstrap_servers, topic, [(f"k{n}", "v") for n in range(400)])
    poller = poller_for(edge, app)
    wait_until(
        lambda: (
            all(p.lag == 0 for p in snapshot_of(poller, app).partitions if p.topic == topic)
            and len([p for p in snapshot_of(poller, app).partitions if p.topic == topic])
            == PARTITIONS
        ),
        timeout=60,
        what="the app to commit all 400 input records",
    )
    # Stop the app, then add records nobody consumes: offsets and lag are now fixed.
    instance.stop()
    produce(kafka.bootstrap_servers, topic, [(f"k{n}", "v") for n in range(100)])

    snapshot = snapshot_of(poller, app)
    official = describe_offsets(kafka, app)

    ours = {(p.topic, p.partition): p for p in snapshot.partitions}
    assert set(ours) == set(official)
    for key, row in official.items():
        assert (ours[key].committed_offset, ours[key].log_end_offset, ours[key].lag) == (
            row.current_offset,
            row.log_end_offset,
            row.lag,
        ), key
    assert sum(p.lag or 0 for p in snapshot.partitions if p.topic == topic) == 100


def test_internal_topics_are_classified_with_their_configs(
    kafka: EmbeddedKafka, streams_apps: StreamsApps, edge: KafkaEdge
) -> None:
    count_app, windowed_app = unique_name("classify"), unique_name("windowed")
    create_topics(
        kafka.bootstrap_servers, {f"{count_app}-input": PARTITIONS, f"{windowed_app}-input": 2}
    )
    streams_apps.start(
        StreamsAppConfig(
            application_id=count_app, input_topic=f"{count_app}-input", output_topic="o1"
        )
    )
    streams_apps.start(
        StreamsAppConfig(
            application_id=windowed_app,
            topology="windowed",
            input_topic=f"{windowed_app}-input",
            output_topic="o2",
        )
    )
    count = {t.name: t for t in snapshot_of(poller_for(edge, count_app), count_app).topics}
    windowed = {t.name: t for t in snapshot_of(poller_for(edge, windowed_app), windowed_app).topics}

    repartition = count[f"{count_app}-counts-repartition"]
    changelog = count[f"{count_app}-counts-changelog"]
    assert (repartition.internal_kind, repartition.consumed, repartition.cleanup_policy) == (
        "repartition",
        True,
        "delete",
    )
    assert (changelog.internal_kind, changelog.consumed, changelog.cleanup_policy) == (
        "changelog",
        False,
        "compact",
    )
    assert len(changelog.log_end_offsets) == PARTITIONS
    assert count[f"{count_app}-input"].internal_kind is None
    window_log = windowed[f"{windowed_app}-windowed-counts-changelog"]
    assert window_log.internal_kind == "changelog"
    assert window_log.cleanup_policy == "compact,delete"
    assert not any(name.startswith(count_app) for name in windowed), "no other app's topics"


def test_polling_never_joins_commits_for_or_changes_a_group(
    kafka: EmbeddedKafka, streams_apps: StreamsApps, edge: KafkaEdge
) -> None:
    app = unique_name("untouched")
    topic = f"{app}-input"
    create_topics(kafka.bootstrap_servers, {topic: PARTITIONS})
    streams_apps.start(
        StreamsAppConfig(application_id=app, input_topic=topic, output_topic=f"{app}-out")
    )
    produce(kafka.bootstrap_servers, topic, [(f"k{n}", "v") for n in range(50)])
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)

    def fingerprint() -> tuple[object, ...]:
        group = admin.describe_groups([app])[app]
        offsets = admin.list_group_offsets({app: None})[app]
        groups = sorted(g["group_id"] for g in admin.list_groups())
        return (
            group["group_state"],
            sorted(m["member_id"] for m in group["members"]),
            sorted((tp.topic, tp.partition, o.offset) for tp, o in offsets.items()),
            groups,
        )

    try:
        wait_until(
            lambda: (
                bool(describe_offsets(kafka, app))
                and all(r.lag == 0 for r in describe_offsets(kafka, app).values())
            ),
            timeout=60,
            what="a quiet, caught-up group",
        )
        before = fingerprint()
        poller = ClusterPoller("local", AgentInfo("test", "0", "central"), edge)
        for _ in range(3):
            assert poller.poll().ok
        after = fingerprint()
    finally:
        admin.close()

    assert after == before


def test_a_deleted_group_gets_one_last_snapshot_saying_dead(
    kafka: EmbeddedKafka, edge: KafkaEdge
) -> None:
    # What `kafka-consumer-groups --delete` does; the job closes the group's findings
    # on this snapshot ("group deleted") instead of waiting out its look-back.
    group = unique_name("deleted")
    topic = f"{group}-input"
    commit_offsets(kafka.bootstrap_servers, group, topic, {0: 0, 1: 0})
    poller = poller_for(edge, group)
    first = poller.poll()
    assert [s.group.group_id for s in first.snapshots] == [group]
    assert first.departed == []

    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        admin.delete_groups([group])
    finally:
        admin.close()
    gone = poller.poll()
    assert gone.ok, gone.error
    assert gone.snapshots == []
    assert [(s.group.group_id, s.group.state) for s in gone.departed] == [(group, "Dead")]
    assert gone.departed[0].partitions == ()
    after = poller.poll()
    assert after.snapshots == []
    assert after.departed == []
