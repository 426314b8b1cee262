"""ListOffsets and OffsetFetch as ksmon writes and reads them (``agent.collect.wire``),
against the real broker: the answers equal those of kafka-python's own request classes,
sent over the same connection, for latest, earliest and by-time offsets, errors (a
partition that does not exist) and committed offsets with and without metadata."""

import time
from functools import partial
from typing import Any

import pytest
from kafka import KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError
from kafka.protocol.consumer import (
    ListOffsetsRequest,
    OffsetFetchRequest,
)
from kafka.structs import OffsetAndMetadata

from agent.collect.kafka_edge import EARLIEST, LATEST, KafkaEdge
from agent.collect.raw import PartitionOffset, TimedOffset
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.process import wait_until
from agent.embedded.topics import create_topics
from tests.support.kafka_protocol import ListedOffset, their_group_offsets, their_listed_offsets
from tests.support.streams import unique_name

pytestmark = pytest.mark.integration

PARTITIONS = 3


@pytest.fixture
def topic_with_records(kafka: EmbeddedKafka) -> tuple[str, int]:
    """A topic whose partitions hold 5, 10 and 15 records written a second apart in
    record time (from ``start`` ms), and that start."""
    topic = unique_name("wire")
    create_topics(kafka.bootstrap_servers, {topic: PARTITIONS})
    start = int(time.time() * 1000) - 3_600_000
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers, linger_ms=0)
    try:
        for partition in range(PARTITIONS):
            for n in range(5 * (partition + 1)):
                producer.send(topic, b"x", partition=partition, timestamp_ms=start + 1000 * n)
        producer.flush()
    finally:
        producer.close()
    return topic, start


def theirs(edge: KafkaEdge, request: Any) -> Any:
    """kafka-python's own request, sent over the edge's connection to broker 1."""

    async def run() -> Any:
        return await edge._admin._manager.send(request, node_id=edge.broker_ids()[0])

    return edge._run(run)


def ask_their_way(edge: KafkaEdge, asked: list[tuple[str, int, int]]) -> list[ListedOffset]:
    """ListOffsets for (topic, partition, timestamp) with kafka-python's own classes."""
    topic = ListOffsetsRequest.ListOffsetsTopic
    partition = topic.ListOffsetsPartition
    by_topic: dict[str, list[Any]] = {}
    for name, p, at in asked:
        by_topic.setdefault(name, []).append(partition(partition_index=p, timestamp=at))
    response = theirs(
        edge,
        ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=[topic(name=name, partitions=ps) for name, ps in by_topic.items()],
        ),
    )
    return their_listed_offsets(response)


def test_latest_and_earliest_offsets_equal_kafka_pythons_answers(
    edge: KafkaEdge, topic_with_records: tuple[str, int]
) -> None:
    topic, _ = topic_with_records
    (leader,) = edge.broker_ids()
    # Partition 99 does not exist: an error per partition, not a failed request.
    asked = [(topic, p) for p in (*range(PARTITIONS), 99)]

    for at in (LATEST, EARLIEST):
        ours, failures = edge.list_offsets({leader: asked}, at)

        expected = [
            PartitionOffset(name, p, None, error) if error else PartitionOffset(name, p, offset)
            for name, p, error, _, offset in ask_their_way(edge, [(t, p, at) for t, p in asked])
        ]
        assert not failures
        assert ours == expected
    latest, _ = edge.list_offsets({leader: asked}, LATEST)
    by_partition = {p.partition: p for p in latest}
    assert [by_partition[p].offset for p in (0, 1, 2, 99)] == [5, 10, 15, None]
    assert by_partition[99].error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION


def test_offsets_by_time_equal_kafka_pythons_answers(
    edge: KafkaEdge, topic_with_records: tuple[str, int]
) -> None:
    topic, start = topic_with_records
    (leader,) = edge.broker_ids()
    found = set()
    # Before every record, at the third, between two records, after every record (one
    # time per partition and request: the broker refuses a partition asked twice).
    for at in (start - 5000, start + 2000, start + 2500, start + 10**9):
        asked = [(topic, p, at) for p in range(PARTITIONS)]

        ours, failures = edge.offsets_for_times({leader: asked})

        expected = [
            TimedOffset(name, p, offset, timestamp)
            for name, p, _, timestamp, offset in ask_their_way(edge, asked)
        ]
        assert not failures
        assert ours == expected
        found |= {(t.partition, t.offset, t.timestamp_ms) for t in ours}
    assert {(0, 0, start), (0, 2, start + 2000), (0, 3, start + 3000), (0, -1, -1)} <= found


def test_committed_offsets_equal_kafka_pythons_answers(
    kafka: EmbeddedKafka, edge: KafkaEdge, topic_with_records: tuple[str, int]
) -> None:
    topic, _ = topic_with_records
    groups = [unique_name("wire-group"), unique_name("wire-group")]
    commits = {
        groups[0]: {
            TopicPartition(topic, 0): OffsetAndMetadata(3, "", -1),
            TopicPartition(topic, 2): OffsetAndMetadata(11, "ünïcode metadata", -1),
        },
        groups[1]: {TopicPartition(topic, 1): OffsetAndMetadata(0, "", -1)},
    }
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)

    def committed(group: str) -> bool:
        try:
            results = admin.alter_group_offsets(group, commits[group])
        except KafkaError as e:
            if e.retriable:  # the coordinator of a fresh broker is still loading
                return False
            raise
        return all(e.__name__ == "NoError" for e in results.values())

    try:
        for group_id in groups:
            wait_until(partial(committed, group_id), timeout=60, what=f"a commit for {group_id}")
    finally:
        admin.close()
    coordinators, _ = edge.coordinators(groups)
    # A group that never committed is answered with no partitions.
    asked = [*groups, unique_name("wire-never")]
    (coordinator,) = set(coordinators.values())

    ours, failures = edge.offset_fetch({coordinator: asked})

    request_group = OffsetFetchRequest.OffsetFetchRequestGroup
    for version in (8, 9):
        response = theirs(
            edge,
            OffsetFetchRequest(
                groups=[request_group(group_id=g, topics=None) for g in asked],
                require_stable=False,
                min_version=version,
                max_version=version,
            ),
        )
        expected = their_group_offsets(response)
        assert not failures
        assert ours == expected
    by_group = {g.group_id: {(c.partition, c.offset, c.metadata) for c in g.offsets} for g in ours}
    assert by_group[groups[0]] == {(0, 3, ""), (2, 11, "ünïcode metadata")}
    assert by_group[groups[1]] == {(1, 0, "")}
    assert by_group[asked[2]] == set()
