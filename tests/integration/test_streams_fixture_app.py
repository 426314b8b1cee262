"""The Kafka Streams fixture app is real: real JVMs, a real group, real internal
topics, real JMX metrics, and real thread death."""

import pytest
from kafka.admin import KafkaAdminClient
from prometheus_client.parser import text_string_to_metric_families

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.streams_app import StreamsAppConfig, StreamsAppInstance
from agent.embedded.topics import create_topics
from tests.support.kafka_tools import describe_members
from tests.support.streams import StreamsApps, poison_instance, unique_name

pytestmark = pytest.mark.integration

INPUT_PARTITIONS = 4


def alive_stream_threads(instance: StreamsAppInstance) -> float | None:
    """``alive-stream-threads`` as the JMX exporter publishes it, or None if absent."""
    for family in text_string_to_metric_families(instance.metrics_text()):
        if family.name == "kafka_streams_stream_metrics_alive_stream_threads":
            return sum(sample.value for sample in family.samples)
    return None


@pytest.fixture
def two_by_two(
    kafka: EmbeddedKafka, streams_apps: StreamsApps
) -> tuple[str, list[StreamsAppInstance]]:
    """Two instances x two stream threads of the groupBy+count topology."""
    app = unique_name("count")
    topic = f"{app}-input"
    create_topics(kafka.bootstrap_servers, {topic: INPUT_PARTITIONS})
    config = StreamsAppConfig(
        application_id=app,
        topology="count",
        input_topic=topic,
        output_topic=f"{app}-out",
        threads=2,
    )
    return app, streams_apps.start(config, instances=2)


def test_two_instances_of_two_threads_form_one_group_of_four_members(
    kafka: EmbeddedKafka, two_by_two: tuple[str, list[StreamsAppInstance]]
) -> None:
    app, instances = two_by_two
    views = [instance.oracle() for instance in instances]
    assert all(v is not None and v["state"] == "RUNNING" for v in views)
    process_ids = {v["processId"] for v in views if v}
    assert len(process_ids) == 2, "each instance is its own Streams process"

    members = describe_members(kafka, app)

    assert len(members) == 4
    expected_clients = {
        f"{app}-{pid}-StreamThread-{n}-consumer" for pid in process_ids for n in (1, 2)
    }
    assert {m.client_id for m in members} == expected_clients
    # groupBy+count has two sub-topologies of 4 tasks each: 8 partitions in all.
    assert sum(m.partitions for m in members) == 2 * INPUT_PARTITIONS


def test_groupby_count_creates_its_repartition_and_changelog_topics(
    kafka: EmbeddedKafka, two_by_two: tuple[str, list[StreamsAppInstance]]
) -> None:
    app, _ = two_by_two
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        described = {
            t["name"]: len(t["partitions"])
            for t in admin.describe_topics([f"{app}-counts-repartition", f"{app}-counts-changelog"])
            if t["error_code"] == 0
        }
    finally:
        admin.close()

    assert described == {
        f"{app}-counts-repartition": INPUT_PARTITIONS,
        f"{app}-counts-changelog": INPUT_PARTITIONS,
    }


def test_jmx_exporter_reports_two_alive_stream_threads_per_instance(
    two_by_two: tuple[str, list[StreamsAppInstance]],
) -> None:
    _, instances = two_by_two

    assert [alive_stream_threads(instance) for instance in instances] == [2.0, 2.0]


def test_poison_pill_under_shutdown_client_kills_the_threads_but_not_the_jvm(
    kafka: EmbeddedKafka, streams_apps: StreamsApps
) -> None:
    app = unique_name("poison")
    topic = f"{app}-input"
    create_topics(kafka.bootstrap_servers, {topic: INPUT_PARTITIONS})
    victim, bystander = streams_apps.start(
        StreamsAppConfig(
            application_id=app,
            input_topic=topic,
            output_topic=f"{app}-out",
            threads=2,
            poison_key_prefix="poison",
            on_error="shutdown_client",
        ),
        instances=2,
    )
    # Aim the pill at a source partition the victim owns, found from its own view.
    poison_instance(kafka, victim, topic, INPUT_PARTITIONS)

    after = victim.wait_for(
        lambda s: s["state"] == "ERROR" and s["aliveThreads"] == 0,
        timeout=60,
        what="client state ERROR with no alive stream threads",
    )
    assert victim.process.alive, "the JVM stays up with all its stream threads dead"
    assert after["uncaughtExceptions"] >= 1
    assert "PoisonPillException" in after["lastError"]
    assert alive_stream_threads(victim) in (0.0, None)
    bystander_view = bystander.oracle()
    assert bystander_view is not None
    assert bystander_view["state"] == "RUNNING"
    assert bystander_view["aliveThreads"] == 2
