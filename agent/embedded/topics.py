"""Create topics on a (local) cluster and wait until every partition has a leader."""

import contextlib
from collections.abc import Mapping

from agent.embedded.process import wait_until


def create_topics(
    bootstrap_servers: str,
    topics: Mapping[str, int],
    *,
    configs: Mapping[str, Mapping[str, str]] | None = None,
    timeout: float = 30.0,
) -> None:
    """Create ``{name: partitions}`` with replication factor 1; existing topics stay as they are."""
    from kafka.admin import KafkaAdminClient, NewTopic  # noqa: PLC0415 - slow import
    from kafka.errors import TopicAlreadyExistsError  # noqa: PLC0415

    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="ksmon-topics")
    try:
        existing = set(admin.list_topics())
        wanted = [
            NewTopic(name, partitions, 1, topic_configs=dict((configs or {}).get(name, {})))
            for name, partitions in topics.items()
            if name not in existing
        ]
        if wanted:
            # A topic created concurrently by someone else is fine too.
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics(wanted)

        def all_led() -> bool:
            described = admin.describe_topics(list(topics))
            led = {
                t["name"]: sum(1 for p in t["partitions"] if p["leader_id"] >= 0)
                for t in described
                if t.get("error_code", 0) == 0
            }
            return all(led.get(name, 0) >= n for name, n in topics.items())

        wait_until(all_led, timeout=timeout, what=f"leaders for topics {sorted(topics)}")
    finally:
        admin.close()


def end_offsets(bootstrap_servers: str, topic: str) -> dict[int, int]:
    """``{partition: log-end offset}`` of ``topic``."""
    from kafka import TopicPartition  # noqa: PLC0415 - slow import
    from kafka.admin import KafkaAdminClient  # noqa: PLC0415
    from kafka.protocol.consumer import OffsetSpec  # noqa: PLC0415

    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="ksmon-topics")
    try:
        described = admin.describe_topics([topic])
        partitions = [p["partition_index"] for t in described for p in t["partitions"]]
        offsets = admin.list_partition_offsets(
            {TopicPartition(topic, p): OffsetSpec.LATEST for p in partitions}
        )
        return {tp.partition: int(o.offset) for tp, o in offsets.items()}
    finally:
        admin.close()
