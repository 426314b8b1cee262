"""Kafka's own CLI tools as an oracle: what the official tooling says about a group."""

from dataclasses import dataclass

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.kafka_tools import main_class

# The same main classes `ksmon kafka tool` runs.
CONSUMER_GROUP_COMMAND = main_class("consumer-groups")


@dataclass(frozen=True)
class GroupMember:
    consumer_id: str
    host: str
    client_id: str
    partitions: int


def describe_members(kafka: EmbeddedKafka, group: str) -> list[GroupMember]:
    """``kafka-consumer-groups --describe --members --group <group>``, parsed."""
    result = kafka.distribution.run_tool(
        CONSUMER_GROUP_COMMAND,
        [
            "--bootstrap-server",
            kafka.bootstrap_servers,
            "--describe",
            "--members",
            "--group",
            group,
        ],
    )
    if result.returncode != 0:
        raise AssertionError(f"ConsumerGroupCommand failed: {result.stderr or result.stdout}")
    members = []
    for line in result.stdout.splitlines():
        fields = line.split()
        # GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS
        if len(fields) == 5 and fields[0] == group:
            members.append(GroupMember(fields[1], fields[2], fields[3], int(fields[4])))
    return members


@dataclass(frozen=True)
class GroupOffsetRow:
    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None


def _number(text: str) -> int | None:
    return None if text == "-" else int(text)


def describe_offsets(kafka: EmbeddedKafka, group: str) -> dict[tuple[str, int], GroupOffsetRow]:
    """``kafka-consumer-groups --describe --offsets --group <group>``, parsed by partition."""
    result = kafka.distribution.run_tool(
        CONSUMER_GROUP_COMMAND,
        [
            "--bootstrap-server",
            kafka.bootstrap_servers,
            "--describe",
            "--offsets",
            "--group",
            group,
        ],
    )
    if result.returncode != 0:
        raise AssertionError(f"ConsumerGroupCommand failed: {result.stderr or result.stdout}")
    rows = {}
    for line in result.stdout.splitlines():
        fields = line.split()
        # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
        if len(fields) >= 6 and fields[0] == group and fields[2].isdigit():
            row = GroupOffsetRow(
                fields[1],
                int(fields[2]),
                _number(fields[3]),
                _number(fields[4]),
                _number(fields[5]),
            )
            rows[(row.topic, row.partition)] = row
    return rows


CONFIG_COMMAND = main_class("configs")
STREAMS_GROUP_COMMAND = main_class("streams-groups")


def set_group_config(kafka: EmbeddedKafka, group: str, config: dict[str, str]) -> None:
    """``kafka-configs --entity-type groups --alter --add-config``: per-group settings, such as
    ``streams.num.standby.replicas`` (a KIP-1071 group takes it from the broker, not the app)."""
    result = kafka.distribution.run_tool(
        CONFIG_COMMAND,
        [
            "--bootstrap-server",
            kafka.bootstrap_servers,
            "--entity-type",
            "groups",
            "--entity-name",
            group,
            "--alter",
            "--add-config",
            ",".join(f"{k}={v}" for k, v in config.items()),
        ],
    )
    if result.returncode != 0:
        raise AssertionError(f"ConfigCommand failed: {result.stderr or result.stdout}")


@dataclass(frozen=True)
class StreamsGroupState:
    state: str
    group_epoch: int
    target_assignment_epoch: int
    members: int


def describe_streams_group(kafka: EmbeddedKafka, group: str) -> StreamsGroupState | None:
    """``kafka-streams-groups --describe --state --verbose``, parsed (None: no such row)."""
    result = kafka.distribution.run_tool(
        STREAMS_GROUP_COMMAND,
        [
            "--bootstrap-server",
            kafka.bootstrap_servers,
            "--describe",
            "--state",
            "--verbose",
            "--group",
            group,
        ],
    )
    if result.returncode != 0:
        raise AssertionError(f"StreamsGroupCommand failed: {result.stderr or result.stdout}")
    for line in result.stdout.splitlines():
        fields = line.split()
        # GROUP COORDINATOR (ID) STATE GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH #MEMBERS
        if len(fields) == 7 and fields[0] == group:
            return StreamsGroupState(fields[3], int(fields[4]), int(fields[5]), int(fields[6]))
    return None


TOPIC_COMMAND = main_class("topics")


@dataclass(frozen=True)
class TopicDescription:
    name: str
    partitions: int
    replication_factor: int
    # Broker ids of each partition's replicas, and each partition's leader (-1: none).
    replicas: tuple[tuple[int, ...], ...]
    leaders: tuple[int, ...]


def describe_topics(kafka: EmbeddedKafka) -> dict[str, TopicDescription]:
    """``kafka-topics --describe`` of every topic (internal ones included), parsed."""
    result = kafka.distribution.run_tool(
        TOPIC_COMMAND, ["--bootstrap-server", kafka.bootstrap_servers, "--describe"]
    )
    if result.returncode != 0:
        raise AssertionError(f"TopicCommand failed: {result.stderr or result.stdout}")
    heads: dict[str, dict[str, str]] = {}
    parts: dict[str, list[tuple[int, int, tuple[int, ...]]]] = {}
    for line in result.stdout.splitlines():
        fields = {
            key.strip(): value.strip()
            for key, _, value in (f.partition(":") for f in line.split("\t") if ":" in f)
        }
        if "PartitionCount" in fields:
            heads[fields["Topic"]] = fields
        elif "Partition" in fields and "Replicas" in fields:
            replicas = tuple(int(b) for b in fields["Replicas"].split(",") if b)
            leader = int(fields["Leader"]) if fields["Leader"].lstrip("-").isdigit() else -1
            parts.setdefault(fields["Topic"], []).append(
                (int(fields["Partition"]), leader, replicas)
            )
    described = {}
    for name, head in heads.items():
        rows = sorted(parts.get(name, []))
        described[name] = TopicDescription(
            name,
            int(head["PartitionCount"]),
            int(head["ReplicationFactor"]),
            tuple(r for _, _, r in rows),
            tuple(leader for _, leader, _ in rows),
        )
    return described
