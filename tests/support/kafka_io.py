"""Reading topics and committing offsets on the real broker, for test set-up and checks."""

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agent.embedded.process import wait_until
from agent.embedded.topics import create_topics, end_offsets

if TYPE_CHECKING:
    from kafka.admin import KafkaAdminClient


def read_all(
    bootstrap_servers: str, topic: str, timeout: float = 30.0
) -> list[tuple[bytes, bytes]]:
    """Every record of ``topic`` (key, value), partition by partition in offset order;
    none when the topic does not exist (yet)."""
    from kafka import KafkaConsumer, TopicPartition  # noqa: PLC0415 - slow import

    ends = end_offsets(bootstrap_servers, topic)
    if not ends:
        return []
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap_servers,
        group_id=None,
        enable_auto_commit=False,
        max_partition_fetch_bytes=8 * 1024 * 1024,
        fetch_max_bytes=16 * 1024 * 1024,
        # Reading must never create the topic (a deleted one, say) with broker defaults.
        allow_auto_create_topics=False,
    )
    # kafka-python 3.0 ignores that option (see agent/transport/kafka_sink.py).
    consumer._cluster.config["allow_auto_create_topics"] = False
    try:
        partitions = [TopicPartition(topic, p) for p in ends]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        records: list[tuple[bytes, bytes]] = []
        deadline = time.monotonic() + timeout
        while sum(ends.values()) > len(records) and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend((r.key, r.value) for r in batch)
        return records
    finally:
        consumer.close()


def commit_offsets(
    bootstrap_servers: str, group: str, topic: str, offsets: Mapping[int, int]
) -> None:
    """A consumer group that has committed ``{partition: offset}`` on ``topic`` (and is Empty).

    The topic is created with enough partitions; the group never joins, so it
    exists from its commits alone, like a stopped application's group.
    """
    from kafka import KafkaConsumer, TopicPartition  # noqa: PLC0415 - slow import
    from kafka.structs import OffsetAndMetadata  # noqa: PLC0415

    create_topics(bootstrap_servers, {topic: max(offsets) + 1})
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap_servers, group_id=group, enable_auto_commit=False
    )
    try:
        consumer.commit(
            {TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()}
        )
    finally:
        consumer.close()


def commit_group_offset(admin: "KafkaAdminClient", group: str, topic: str, offset: int) -> None:
    """Commit ``offset`` on partition 0 of ``topic`` for a group without members (retried
    while the broker is still creating its coordinators), then wait until it is listed."""
    from kafka import TopicPartition  # noqa: PLC0415 - slow import
    from kafka.errors import KafkaError  # noqa: PLC0415
    from kafka.structs import OffsetAndMetadata  # noqa: PLC0415

    def committed() -> bool:
        try:
            results = admin.alter_group_offsets(
                group, {TopicPartition(topic, 0): OffsetAndMetadata(offset, "", -1)}
            )
        except KafkaError as e:
            if e.retriable:
                return False
            raise
        # Errors per partition come back as values (a topic not yet known: retriable).
        errors = [e for e in results.values() if e.__name__ != "NoError"]
        if any(not e.retriable for e in errors):
            raise RuntimeError(f"committing for {group} failed: {errors}")
        return not errors

    wait_until(committed, timeout=60, what=f"a commit for {group}", interval=0.5)
    wait_until(
        lambda: any(g["group_id"] == group for g in admin.list_groups()),
        timeout=30,
        what=f"{group} to be listed",
        interval=0.2,
    )
