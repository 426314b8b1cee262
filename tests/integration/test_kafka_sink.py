"""The snapshot sink on the real broker: order, size, outages, a deleted topic."""

import textwrap
import time
from collections.abc import Iterator

import pytest
from kafka.admin import KafkaAdminClient

from agent.collect.kafka_edge import KafkaEdge
from agent.collect.raw import TopicConfig
from agent.config import parse_config
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.process import wait_until
from agent.embedded.topics import end_offsets
from agent.transport.factory import open_sink
from agent.transport.kafka_sink import KafkaTopicSink
from tests.support import kafka_io
from tests.support.streams import unique_name

pytestmark = pytest.mark.integration


@pytest.fixture
def topic() -> str:
    return unique_name("snapshots")


@pytest.fixture
def sink(kafka: EmbeddedKafka, topic: str) -> Iterator[KafkaTopicSink]:
    sink = KafkaTopicSink(
        {"bootstrap_servers": kafka.bootstrap_servers, "client_id": "ksmon-test"},
        topic,
        partitions=3,
        buffer_max_snapshots=50,
        max_message_bytes=4 * 1024 * 1024,
        delivery_timeout=5.0,
    )
    yield sink
    sink.close(timeout=5)


def topic_config(kafka: EmbeddedKafka, topic: str) -> TopicConfig:
    edge = KafkaEdge({"bootstrap_servers": kafka.bootstrap_servers})
    try:
        configs, _ = edge.describe_configs([topic], None)
    finally:
        edge.close()
    return configs[topic]


def read_all(kafka: EmbeddedKafka, topic: str) -> list[tuple[bytes, bytes]]:
    return kafka_io.read_all(kafka.bootstrap_servers, topic)


def test_records_arrive_keyed_and_in_order_per_key(
    kafka: EmbeddedKafka, sink: KafkaTopicSink, topic: str
) -> None:
    for n in range(30):
        sink.send(f"c/g{n % 3}".encode(), f'{{"n":{n}}}'.encode())

    assert sink.flush(timeout=30)

    records = read_all(kafka, topic)
    for key in (b"c/g0", b"c/g1", b"c/g2"):
        values = [int(v.decode()[5:-1]) for k, v in records if k == key]
        assert values == sorted(values), key
        assert len(values) == 10, key
    stats = sink.stats()
    assert (stats.sent, stats.dropped, stats.buffered) == (30, 0, 0)


def test_the_topic_is_created_for_large_snapshots_and_takes_one(
    kafka: EmbeddedKafka, sink: KafkaTopicSink, topic: str
) -> None:
    big = b'{"pad":"' + b"x" * (2 * 1024 * 1024) + b'"}'

    sink.send(b"c/big", big)

    assert sink.flush(timeout=30), sink.stats().last_error
    config = topic_config(kafka, topic)
    assert config.max_message_bytes == 4 * 1024 * 1024
    assert config.cleanup_policy == "delete"
    assert read_all(kafka, topic) == [(b"c/big", big)]


def test_a_broker_outage_buffers_boundedly_and_delivers_after(
    kafka: EmbeddedKafka, sink: KafkaTopicSink, topic: str
) -> None:
    sink.send(b"c/g", b'{"n":-1}')
    assert sink.flush(timeout=30)
    kafka.stop()
    try:
        slowest = 0.0
        for n in range(80):
            started = time.monotonic()
            sink.send(b"c/g", f'{{"n":{n}}}'.encode())
            slowest = max(slowest, time.monotonic() - started)
        stats = sink.stats()
        assert slowest < 0.05, "send never waits on the dead broker"
        assert stats.buffered <= 50
        assert stats.dropped == 30, "80 sent into room for 50: the 30 oldest go"
    finally:
        kafka.start()

    wait_until(lambda: sink.stats().buffered == 0, timeout=60, what="the buffer to drain")
    values = [v for _, v in read_all(kafka, topic)]
    assert values[0] == b'{"n":-1}'
    delivered = [int(v.decode()[5:-1]) for v in values[1:]]
    # Every record still buffered arrives. Records the buffer gave up on may arrive
    # too if the producer already held them; and a batch cut off by the outage may
    # be sent twice (at least once), but first deliveries keep their order.
    assert set(range(30, 80)) <= set(delivered)
    first_seen = list(dict.fromkeys(delivered))
    assert first_seen == sorted(first_seen)
    assert sink.stats().last_success_timestamp is not None


def test_a_deleted_topic_is_created_again_and_sending_resumes(
    kafka: EmbeddedKafka, sink: KafkaTopicSink, topic: str
) -> None:
    sink.send(b"c/g", b'{"n":1}')
    assert sink.flush(timeout=30)
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        admin.delete_topics([topic])
        wait_until(lambda: topic not in admin.list_topics(), timeout=30, what="the topic to go")
    finally:
        admin.close()

    sink.send(b"c/g", b'{"n":2}')

    wait_until(
        lambda: sink.stats().buffered == 0 and sink.stats().sent == 2,
        timeout=90,
        what="the second record to be delivered",
    )
    assert [v for _, v in read_all(kafka, topic)] == [b'{"n":2}']
    # Re-created by ksmon with its own settings, not auto-created by the producer
    # with the broker's defaults (one partition, 1 MB messages).
    assert len(end_offsets(kafka.bootstrap_servers, topic)) == 3
    assert topic_config(kafka, topic).max_message_bytes == 4 * 1024 * 1024


def test_the_sink_the_daemon_opens_from_a_config_delivers(kafka: EmbeddedKafka, topic: str) -> None:
    # The daemon builds its sink from a cluster's client settings, which carry the
    # poll's request_timeout_ms: the producer must take the sink's own instead of
    # failing every delivery with "got multiple values for keyword argument".
    config = parse_config(
        textwrap.dedent(
            f"""\
        clusters:
          - name: local
            bootstrap_servers: ["{kafka.bootstrap_servers}"]
            poll: {{request_timeout: 5s}}
        sink:
          type: kafka
          kafka: {{topic: {topic}, partitions: 1, replication_factor: 1}}
        """
        ),
        "test config",
    )
    sink = open_sink(config)
    try:
        sink.send(b"local/g", b'{"n":1}')
        assert sink.flush(timeout=30), sink.stats().last_error
    finally:
        sink.close(timeout=5)
    assert read_all(kafka, topic) == [(b"local/g", b'{"n":1}')]
