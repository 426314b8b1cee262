"""Lag in seconds on the real broker, against the truth: the time of the record at the
group's committed offset (issue 26 #1). The record times are written explicitly, so a
40-minute stall or an hour-old backlog takes seconds to set up: the stall runs on a
test clock that the records' times follow; the hour-old backlog is produced with old
times and read by an agent that has never seen the partition."""

import re
import time
from collections.abc import Iterator

import pytest
from kafka import KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient

from agent.collect.kafka_edge import KafkaEdge
from agent.collect.poller import ClusterPoller, GroupFilter
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.topics import create_topics
from agent.model import AgentInfo, PartitionInfo
from tests.support.kafka_io import commit_group_offset
from tests.support.streams import unique_name

pytestmark = pytest.mark.integration

POLL_SECONDS = 10.0


@pytest.fixture
def producer(kafka: EmbeddedKafka) -> Iterator[KafkaProducer]:
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers, linger_ms=0)
    yield producer
    producer.close()


@pytest.fixture
def admin(kafka: EmbeddedKafka) -> Iterator[KafkaAdminClient]:
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    yield admin
    admin.close()


class StepClock:
    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def poller_for(edge: KafkaEdge, group: str, clock: StepClock | None = None) -> ClusterPoller:
    return ClusterPoller(
        "local",
        AgentInfo("test", "0", "central"),
        edge,
        group_filter=GroupFilter(allow=(re.compile(re.escape(group)),)),
        clock=clock or time.time,
    )


def produce_at(producer: KafkaProducer, topic: str, times_ms: list[int]) -> None:
    for ms in times_ms:
        producer.send(topic, b"x", partition=0, timestamp_ms=ms)
    producer.flush()


def partition_of(poller: ClusterPoller, group: str) -> tuple[PartitionInfo, int]:
    """The group's one partition, and the ListOffsets requests that poll sent."""
    result = poller.poll()
    assert result.ok, result.error
    (snapshot,) = result.snapshots
    assert not snapshot.errors, snapshot.errors
    (partition,) = snapshot.partitions
    return partition, result.requests["ListOffsets"]


def test_a_consumer_stuck_forty_minutes_reads_within_one_poll_of_the_truth(
    kafka: EmbeddedKafka, edge: KafkaEdge, producer: KafkaProducer, admin: KafkaAdminClient
) -> None:
    """At 10 s polls the old table stopped at 630 s. The clock is the test's: every
    step it moves 10 s, five records are appended with times inside that step, and the
    agent polls; the group committed once, at the first step's records."""
    topic = unique_name("stuck")
    group = f"{topic}-group"
    create_topics(kafka.bootstrap_servers, {topic: 1})
    start = time.time() - 2 * 3600  # the records' times must not be in the future
    clock = StepClock(start)
    poller = poller_for(edge, group, clock)
    produce_at(producer, topic, [int((start - 9 + i) * 1000) for i in range(5)])
    commit_group_offset(admin, group, topic, 2)
    stuck_since = start - 9 + 2  # the time of record 2, the first one not consumed
    worst = 0.0
    for step in range(1, 241):  # 40 minutes of polls
        clock.now = start + step * POLL_SECONDS
        produce_at(producer, topic, [int((clock.now - 9 + 2 * i) * 1000) for i in range(5)])
        partition, _ = partition_of(poller, group)
        truth = clock.now - stuck_since
        assert partition.lag_seconds is not None
        assert not partition.lag_seconds_lower_bound
        worst = max(worst, abs(partition.lag_seconds - truth))
        assert partition.lag_seconds == pytest.approx(truth, abs=POLL_SECONDS), f"step {step}"
    assert partition.lag_seconds is not None
    assert partition.lag_seconds > 2390, "still growing at 40 minutes"
    assert partition.lag == 5 * 241 - 2


def test_an_agent_started_on_an_hour_old_backlog_reads_an_hour_at_its_first_poll(
    kafka: EmbeddedKafka, edge: KafkaEdge, producer: KafkaProducer, admin: KafkaAdminClient
) -> None:
    """The old table read a backlog older than the agent as the agent's uptime (210 s
    against a true 260 s); now the broker's time index dates it, once."""
    topic = unique_name("backlog")
    group = f"{topic}-group"
    create_topics(kafka.bootstrap_servers, {topic: 1})
    hour_ago = time.time() - 3600
    # 720 records over the hour, one every 5 s; the group is stuck at record 3.
    produce_at(producer, topic, [int((hour_ago + 5 * i) * 1000) for i in range(720)])
    commit_group_offset(admin, group, topic, 3)
    poller = poller_for(edge, group)

    first, first_requests = partition_of(poller, group)
    truth = time.time() - (hour_ago + 15)
    assert first.lag_seconds is not None
    assert not first.lag_seconds_lower_bound
    assert first.lag_seconds == pytest.approx(truth, abs=max(5.0, 0.01 * truth))
    assert first_requests > 2, "latest, earliest, and the dating questions"

    second, second_requests = partition_of(poller, group)
    truth = time.time() - (hour_ago + 15)
    assert second.lag_seconds == pytest.approx(truth, abs=max(5.0, 0.01 * truth))
    assert second_requests == 1, "dated once: the second poll asks only for the latest offsets"

    # The group rewinds to the middle of the backlog: dated again, that part only.
    commit_group_offset(admin, group, topic, 360)
    rewound, _ = partition_of(poller, group)
    truth = time.time() - (hour_ago + 5 * 360)
    assert rewound.lag_seconds == pytest.approx(truth, abs=max(5.0, 0.01 * truth))


def test_a_backlog_deleted_by_retention_reads_as_a_lower_bound(
    kafka: EmbeddedKafka, edge: KafkaEdge, producer: KafkaProducer, admin: KafkaAdminClient
) -> None:
    topic = unique_name("deleted")
    group = f"{topic}-group"
    create_topics(kafka.bootstrap_servers, {topic: 1})
    hour_ago = time.time() - 3600
    produce_at(producer, topic, [int((hour_ago + 60 * i) * 1000) for i in range(60)])
    commit_group_offset(admin, group, topic, 5)
    admin.delete_records({TopicPartition(topic, 0): 30})  # the group's record is gone

    partition, _ = partition_of(poller_for(edge, group), group)

    oldest_kept = time.time() - (hour_ago + 60 * 30)
    assert partition.lag_seconds_lower_bound, "record 5 is gone: at least as old as record 30"
    assert partition.lag_seconds == pytest.approx(oldest_kept, abs=5.0)
