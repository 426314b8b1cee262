"""One poll of the real broker with the real fixture app, checked against the
app's own view of its tasks and against Kafka's own ConsumerGroupCommand."""

import re
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient

from agent.collect.kafka_edge import KafkaEdge
from agent.collect.poller import ClusterPoller, GroupFilter
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import produce
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppConfig, StreamsAppInstance
from agent.embedded.topics import create_topics
from agent.model import AgentInfo, Snapshot
from tests.support.kafka_tools import describe_offsets
from tests.support.streams import StreamsApps, unique_name

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


def ksmon_view(snapshot: Snapshot) -> dict[tuple[str, int], tuple[set[str], set[str]]]:
    """(process id, thread index) -> (active tasks, standby tasks), as ksmon decoded them."""
    view = {}
    for m in snapshot.members:
        assert m.streams is not None, f"member {m.member_id} was not decoded: {m.decode_errors}"
        assert m.streams.thread_index is not None
        view[(m.streams.process_id, m.streams.thread_index)] = (
            {t.task for t in m.streams.active_tasks},
            {t.task for t in m.streams.standby_tasks},
        )
    return view


def app_view(
    instances: list[StreamsAppInstance],
) -> dict[tuple[str, int], tuple[set[str], set[str]]]:
    """The same, from each instance's own metadataForLocalThreads()."""
    view = {}
    for instance in instances:
        state: dict[str, Any] | None = instance.oracle()
        assert state is not None
        for thread in state["threads"]:
            index = int(thread["name"].rsplit("-", 1)[1])
            view[(state["processId"], index)] = (
                {t["taskId"] for t in thread["activeTasks"]},
                {t["taskId"] for t in thread["standbyTasks"]},
            )
    return view


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
