"""Kafka's own CLI tools as an oracle: what the official tooling says about a group."""

from dataclasses import dataclass

from agent.embedded.kafka import EmbeddedKafka

CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


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
