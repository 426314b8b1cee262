"""The consumer protocol's JoinGroup metadata and SyncGroup assignment, versions 0-3.

Reads Kafka's ``ConsumerProtocolSubscription`` and ``ConsumerProtocolAssignment``
(generated, non-flexible, each behind an int16 version prefix). These are the
``MemberMetadata`` / ``MemberAssignment`` bytes of DescribeGroups and the
``subscription`` / ``assignment`` of a GroupMetadata record; for a Kafka Streams
member their ``user_data`` is the Streams SubscriptionInfo / AssignmentInfo.
Layout: ``streams-internals.md`` sections 1.1 and 1.2.

>>> decode_consumer_assignment(bytes.fromhex("0000" "00000001" "00027431" "00000001" "00000000"
...                                          "ffffffff"))
ConsumerAssignment(version=0, partitions=[TopicPartition(topic='t1', partition=0)], user_data=None)
"""

from dataclasses import dataclass
from itertools import repeat
from typing import Final

from agent.streams.codec import DecodeError, Reader, run_decoder
from agent.streams.types import TopicPartition, topic_partitions

LATEST_KNOWN_VERSION: Final = 3
_NO_GENERATION: Final = -1  # GenerationId's default before v2 put it on the wire
_OWNED_PARTITIONS_SINCE: Final = 1
_GENERATION_SINCE: Final = 2
_RACK_SINCE: Final = 3
_MIN_TOPIC_ENTRY: Final = 2 + 4  # an empty topic name and an empty partition list


@dataclass(frozen=True, slots=True)
class ConsumerSubscription:
    """What a consumer sent in JoinGroup: its topics, userData and owned partitions."""

    version: int  # as written; versions above 3 are read as v3
    topics: list[str]
    user_data: bytes | None  # for Kafka Streams: SubscriptionInfo
    owned_partitions: list[TopicPartition]  # v1+, sorted by the client
    generation_id: int  # v2+, -1 before
    rack_id: str | None  # v3+, the consumer's client.rack


@dataclass(frozen=True, slots=True)
class ConsumerAssignment:
    """What the leader gave a consumer in SyncGroup: partitions and userData."""

    version: int
    partitions: list[TopicPartition]  # in wire order (topic by topic)
    user_data: bytes | None  # for Kafka Streams: AssignmentInfo


def decode_consumer_subscription(data: bytes) -> ConsumerSubscription | DecodeError:
    """Decode JoinGroup member metadata of protocol type "consumer"."""
    return run_decoder("ConsumerProtocolSubscription", data, _read_subscription)


def decode_consumer_assignment(data: bytes) -> ConsumerAssignment | DecodeError:
    """Decode a SyncGroup member assignment of protocol type "consumer"."""
    return run_decoder("ConsumerProtocolAssignment", data, _read_assignment)


def _read_version(r: Reader) -> int:
    version = r.int16()
    r.version = version
    if version < 0:
        raise r.fail(f"unknown version {version}")
    return version


def _read_subscription(r: Reader) -> ConsumerSubscription:
    version = _read_version(r)
    # Fields are only ever appended, so a newer client's bytes start with the
    # v3 layout; Kafka's own ConsumerProtocol reads them as v3 the same way.
    layout = min(version, LATEST_KNOWN_VERSION)
    topics = [r.string() for _ in range(r.count(2))]
    user_data = r.nullable_bytes()
    owned = read_topic_partitions(r) if layout >= _OWNED_PARTITIONS_SINCE else []
    generation_id = r.int32() if layout >= _GENERATION_SINCE else _NO_GENERATION
    rack_id = r.nullable_string() if layout >= _RACK_SINCE else None
    _end_of_message(r, version)
    return ConsumerSubscription(version, topics, user_data, owned, generation_id, rack_id)


def _read_assignment(r: Reader) -> ConsumerAssignment:
    version = _read_version(r)
    partitions = read_topic_partitions(r)
    user_data = r.nullable_bytes()
    _end_of_message(r, version)
    return ConsumerAssignment(version, partitions, user_data)


def _end_of_message(r: Reader, version: int) -> None:
    # Bytes after the last field of a version we know mean the blob is not what
    # its version says (Kafka's generated reader would silently drop them).
    # After a newer version's v3 prefix they are that version's appended fields.
    if version <= LATEST_KNOWN_VERSION:
        r.expect_end()


def read_topic_partitions(r: Reader) -> list[TopicPartition]:
    """``[]{Topic string, Partitions []int32}`` flattened to topic partitions."""
    partitions: list[TopicPartition] = []
    for _ in range(r.count(_MIN_TOPIC_ENTRY)):
        topic = r.string()
        partitions += topic_partitions(repeat(topic), r.int32s(r.count(4)))
    return partitions
