"""Each scenario switch of the fixture app really drives the app into its condition."""

from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import KeyedLoad, KeySkew, partition_of, produce
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppConfig
from agent.embedded.topics import create_topics, end_offsets
from tests.support.streams import StreamsApps, fill_changelog, unique_name

pytestmark = pytest.mark.integration

PARTITIONS = 4


def new_app(kafka: EmbeddedKafka, base: str) -> tuple[str, str]:
    app = unique_name(base)
    create_topics(kafka.bootstrap_servers, {f"{app}-input": PARTITIONS})
    return app, f"{app}-input"


def test_keyed_load_puts_the_hot_key_where_kafka_streams_repartitions_it(
    kafka: EmbeddedKafka, streams_apps: StreamsApps
) -> None:
    app, topic = new_app(kafka, "skew")
    streams_apps.start(
        StreamsAppConfig(application_id=app, input_topic=topic, output_topic=f"{app}-out")
    )
    repartition = f"{app}-counts-repartition"

    with KeyedLoad(kafka.bootstrap_servers, topic, rate=400, skew=KeySkew({"hot": 0.8})) as load:
        wait_until(lambda: load.sent >= 1200, timeout=60, what="1200 records produced")
    sent = load.sent
    assert load.errors == 0
    # Every record passes groupBy, so the Java producer inside Kafka Streams
    # writes each one to the repartition topic with Kafka's own partitioner.
    wait_until(
        lambda: sum(end_offsets(kafka.bootstrap_servers, repartition).values()) == sent,
        timeout=60,
        what=f"all {sent} records in {repartition}",
    )

    hot = partition_of("hot", PARTITIONS)
    inputs = end_offsets(kafka.bootstrap_servers, topic)
    repartitioned = end_offsets(kafka.bootstrap_servers, repartition)
    assert sum(inputs.values()) == sent
    assert inputs[hot] / sent > 0.75, "about 80% of the input lands on the hot key's partition"
    assert repartitioned[hot] / sent > 0.75, "Java's partitioner agrees with ours"
    assert repartitioned == inputs, "the groupBy keeps the key, so the skew is copied"


def test_static_membership_and_standbys_show_in_the_group_and_the_app(
    kafka: EmbeddedKafka, streams_apps: StreamsApps
) -> None:
    app, topic = new_app(kafka, "static")
    first, second = streams_apps.start(
        StreamsAppConfig(
            application_id=app,
            input_topic=topic,
            output_topic=f"{app}-out",
            threads=1,
            standbys=1,
            static_membership=True,
            application_server=True,
        ),
        instances=2,
    )
    # Standbys are placed once the assignor knows both clients' state; the
    # oracle shows them when each instance holds a replica of a stateful task.
    for instance in (first, second):
        instance.wait_for(
            lambda s: any(t["standbyTasks"] for t in s["threads"]),
            timeout=60,
            what="a standby task",
        )

    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        group = admin.describe_groups([app])[app]
    finally:
        admin.close()
    assert group["protocol_type"] == "consumer"
    assert group["protocol_data"] == "stream", "the StreamsPartitionAssignor's protocol name"
    assert sorted(m["group_instance_id"] for m in group["members"]) == [
        f"{first.name}-1",
        f"{second.name}-1",
    ]


def test_restore_throttle_holds_a_restore_until_its_marker_is_removed(
    kafka: EmbeddedKafka, streams_apps: StreamsApps, tmp_path: Path
) -> None:
    app, topic = new_app(kafka, "restore")
    marker = tmp_path / "hold-restore"
    (instance,) = streams_apps.start(
        StreamsAppConfig(
            application_id=app,
            input_topic=topic,
            output_topic=f"{app}-out",
            static_membership=True,  # the restarted instance takes its old member's place at once
            restore_marker=marker,
        )
    )
    fill_changelog(kafka, topic, f"{app}-counts-changelog", 500)

    marker.touch()
    instance.restart(wipe_state=True)

    held = instance.wait_for(
        lambda s: s["activeRestores"] >= 1, timeout=60, what="a restore to begin"
    )
    assert held["state"] == "REBALANCING"
    assert held["restoredRecords"] == 0
    still_held = instance.oracle()
    assert still_held is not None
    assert (still_held["state"], still_held["restoredRecords"]) == ("REBALANCING", 0)

    marker.unlink()

    done = instance.wait_until_running(timeout=60)
    assert done["restoredRecords"] >= 500
    assert done["activeRestores"] == 0


def test_processing_slower_than_max_poll_interval_makes_the_thread_rejoin_again_and_again(
    kafka: EmbeddedKafka, streams_apps: StreamsApps, tmp_path: Path
) -> None:
    app, topic = new_app(kafka, "slow")
    slow = tmp_path / "slow"
    streams_apps.start(
        StreamsAppConfig(
            application_id=app,
            input_topic=topic,
            output_topic=f"{app}-out",
            processing_delay_ms=4000,
            processing_delay_marker=slow,
            streams_config={"max.poll.interval.ms": "3000"},
        )
    )
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    member_ids: set[str] = set()

    def seen_three_member_ids() -> bool:
        group = admin.describe_groups([app])[app]
        member_ids.update(m["member_id"] for m in group["members"])
        return len(member_ids) >= 3

    try:
        first = admin.describe_groups([app])[app]
        assert len(first["members"]) == 1
        slow.touch()
        produce(kafka.bootstrap_servers, topic, [(f"k{n}", "v") for n in range(20)])

        # Each poll timeout evicts the member; the thread rejoins under a new id.
        wait_until(seen_three_member_ids, timeout=90, what="three member ids in turn", interval=0.5)
    finally:
        admin.close()
    client_ids = {m.rsplit("-", 5)[0] for m in member_ids}
    assert len(client_ids) == 1, "one and the same stream thread, rejoining each time"
