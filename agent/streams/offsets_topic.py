"""``__consumer_offsets`` records: offset commits, group metadata, Streams commit metadata.

Reads the group coordinator's record keys (int16 record type + key struct) and
the values of record types 0-2 (int16 version + generated struct, flexible from
v4), plus the Base64 metadata string Kafka Streams commits with every input
partition. Layouts: ``streams-internals.md`` section 8 (8.1 record types, 8.2
OffsetCommitValue and the Streams metadata string, 8.3 GroupMetadataValue).

A GroupMetadata member's ``subscription`` and ``assignment`` are the same blobs
DescribeGroups returns; pass them to ``agent.streams.member.decode_streams_member``.

>>> decode_offsets_key(bytes.fromhex("0002" "0001" "67"))
GroupMetadataKey(group='g')
>>> offsets_topic_partition("g")  # "g".hashCode() == 103
3
"""

import base64
import binascii
import struct
from dataclasses import dataclass
from typing import Final

from agent.streams.codec import DecodeError, MalformedError, Reader, decode_utf8, run_decoder

OFFSETS_TOPIC_PARTITIONS_DEFAULT: Final = 50  # offsets.topic.num.partitions
OFFSET_COMMIT_RECORD_TYPES: Final = frozenset({0, 1})  # same key layout; 1 is what brokers write
GROUP_METADATA_RECORD_TYPE: Final = 2

_LATEST_OFFSET_COMMIT_VERSION: Final = 4
_LATEST_GROUP_METADATA_VERSION: Final = 4
_FLEXIBLE_SINCE: Final = 4  # both value types
_EXPIRE_TIMESTAMP_VERSION: Final = 1  # only v1 carries it
_LEADER_EPOCH_SINCE: Final = 3
_TOPIC_ID_TAG: Final = 0  # OffsetCommitValue v4 tagged field, written by Kafka 4.1+
_UUID_SIZE: Final = 16
_REBALANCE_TIMEOUT_SINCE: Final = 1
_STATE_TIMESTAMP_SINCE: Final = 2
_INSTANCE_ID_SINCE: Final = 3

_PARTITION_TIME_MAGIC: Final = 1
_PROCESSOR_METADATA_MAGIC: Final = 2

_INT32_MASK: Final = 0xFFFFFFFF
_INT32_MIN: Final = -(2**31)


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    """Key of an offset commit (record types 0 and 1 share this layout)."""

    record_type: int
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    """Key of a classic group's metadata (record type 2)."""

    group: str


@dataclass(frozen=True, slots=True)
class OtherRecordKey:
    """Any other record type (KIP-848, share and streams groups, ...): skip the record."""

    record_type: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    """A committed offset. A null record value (tombstone) means the offset was deleted."""

    version: int
    offset: int
    leader_epoch: int | None  # v3+; -1 on the wire means unknown
    metadata: str  # the committer's string; Kafka Streams: see decode_streams_commit_metadata
    commit_timestamp: int  # epoch ms
    expire_timestamp: int | None  # v1 only, epoch ms
    topic_id: str | None  # v4 tag 0 (Kafka 4.1+), as Kafka prints Uuids (URL-safe Base64)


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One member of a classic group as the coordinator stored it."""

    member_id: str
    group_instance_id: str | None  # v3+, static membership
    client_id: str
    client_host: str  # InetAddress.toString(), e.g. "/10.0.0.5"
    rebalance_timeout_ms: int | None  # v1+
    session_timeout_ms: int
    subscription: bytes  # ConsumerProtocolSubscription for protocol type "consumer"
    assignment: bytes  # ConsumerProtocolAssignment for protocol type "consumer"


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    """A classic group's state at one generation. A tombstone means the group was deleted."""

    version: int
    protocol_type: str  # "consumer" for consumers and classic Streams groups
    generation: int
    protocol: str | None  # the selected assignor; "stream" for Kafka Streams
    leader: str | None  # the leader's member id
    current_state_timestamp: int | None  # v2+, epoch ms; -1 on the wire when unknown
    members: list[GroupMember]


@dataclass(frozen=True, slots=True)
class StreamsCommitMetadata:
    """What Kafka Streams packs into an input partition's commit metadata."""

    magic: int  # 1: partition time only; 2: plus processor metadata
    partition_time: int  # the partition's stream time, epoch ms (-1 when unknown)
    processor_metadata: dict[str, int]  # magic 2, possibly empty


def decode_offsets_key(
    data: bytes,
) -> OffsetCommitKey | GroupMetadataKey | OtherRecordKey | DecodeError:
    """Decode a ``__consumer_offsets`` record key; record types other than 0-2 are not parsed."""
    return run_decoder("OffsetsTopicKey", data, _read_key)


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue | DecodeError:
    """Decode the value of an offset commit record (versions 0-4)."""
    return run_decoder("OffsetCommitValue", data, _read_offset_commit)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue | DecodeError:
    """Decode the value of a group metadata record (versions 0-4)."""
    return run_decoder("GroupMetadataValue", data, _read_group_metadata)


def decode_streams_commit_metadata(metadata: str) -> StreamsCommitMetadata | DecodeError | None:
    """Decode a Kafka Streams offset-commit metadata string; "" (unknown) gives None.

    >>> decode_streams_commit_metadata("AQAAAAAAAAPo")
    StreamsCommitMetadata(magic=1, partition_time=1000, processor_metadata={})
    """
    if not metadata:
        return None
    try:
        # Java's Base64 decoder, which Streams reads with, does not require the
        # padding; Python's does, so it is restored first.
        raw = base64.b64decode(metadata + "=" * (-len(metadata) % 4), validate=True)
    except (binascii.Error, ValueError) as e:
        return DecodeError("StreamsCommitMetadata", f"not Base64: {e}")
    return run_decoder("StreamsCommitMetadata", raw, _read_streams_metadata)


def offsets_topic_partition(
    group_id: str, num_partitions: int = OFFSETS_TOPIC_PARTITIONS_DEFAULT
) -> int:
    """The ``__consumer_offsets`` partition holding ``group_id``'s records.

    Kafka computes ``Utils.abs(groupId.hashCode()) % partitions`` with Java's
    ``String.hashCode`` (31-polynomial over UTF-16 code units, int32 overflow)
    and an ``abs`` that maps Integer.MIN_VALUE to 0.
    """
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be at least 1, got {num_partitions}")
    return java_abs(java_string_hash(group_id)) % num_partitions


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``: code units of UTF-16, so a supplementary char counts twice."""
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for (unit,) in struct.iter_unpack(">H", units):
        h = (31 * h + unit) & _INT32_MASK
    return h - (1 << 32) if h & 0x80000000 else h


def java_abs(value: int) -> int:
    """Kafka's ``Utils.abs``: like ``abs``, except Integer.MIN_VALUE gives 0, not itself."""
    return 0 if value == _INT32_MIN else abs(value)


def _read_key(r: Reader) -> OffsetCommitKey | GroupMetadataKey | OtherRecordKey:
    record_type = r.int16()
    r.version = record_type  # up to Kafka 3.x the record type was the key's version
    if record_type in OFFSET_COMMIT_RECORD_TYPES:
        key: OffsetCommitKey | GroupMetadataKey = OffsetCommitKey(
            record_type, r.string(), r.string(), r.int32()
        )
    elif record_type == GROUP_METADATA_RECORD_TYPE:
        key = GroupMetadataKey(r.string())
    else:
        # Newer brokers keep adding record types (3-23 by Kafka 4.1); their keys
        # are left unparsed so a reader can skip them without knowing them.
        return OtherRecordKey(record_type)
    # Keys are never flexible and their layouts never grew: leftovers are corruption.
    r.expect_end()
    return key


def _read_value_version(r: Reader, latest: int) -> int:
    version = r.int16()
    r.version = version
    # The coordinator refuses versions it does not know rather than guess at
    # them, and a monitor that guessed could misreport offsets.
    if not 0 <= version <= latest:
        raise MalformedError(f"unknown version {version}", 0)
    return version


def _read_offset_commit(r: Reader) -> OffsetCommitValue:
    version = _read_value_version(r, _LATEST_OFFSET_COMMIT_VERSION)
    flexible = version >= _FLEXIBLE_SINCE
    offset = r.int64()
    leader_epoch = r.int32() if version >= _LEADER_EPOCH_SINCE else None
    metadata = r.compact_string() if flexible else r.string()
    commit_timestamp = r.int64()
    expire_timestamp = r.int64() if version == _EXPIRE_TIMESTAMP_VERSION else None
    topic_id = None
    if flexible:
        raw_topic_id = r.tagged_fields().get(_TOPIC_ID_TAG)
        if raw_topic_id is not None:
            if len(raw_topic_id) != _UUID_SIZE:
                raise r.fail(f"topicId tag holds {len(raw_topic_id)} bytes, not 16")
            topic_id = Reader(raw_topic_id).kafka_uuid()
    # Known versions are read to their last field; leftovers mean corruption
    # (the coordinator's generated reader would ignore them).
    r.expect_end()
    return OffsetCommitValue(
        version, offset, leader_epoch, metadata, commit_timestamp, expire_timestamp, topic_id
    )


def _read_group_metadata(r: Reader) -> GroupMetadataValue:
    version = _read_value_version(r, _LATEST_GROUP_METADATA_VERSION)
    flexible = version >= _FLEXIBLE_SINCE
    string = r.compact_string if flexible else r.string
    nullable_string = r.compact_nullable_string if flexible else r.nullable_string
    blob = r.compact_bytes if flexible else r.bytes_

    protocol_type = string()
    generation = r.int32()
    protocol = nullable_string()
    leader = nullable_string()
    state_timestamp = r.int64() if version >= _STATE_TIMESTAMP_SINCE else None
    member_count = (
        r.compact_count(_min_member_size(version))
        if flexible
        else r.count(_min_member_size(version))
    )
    members = []
    for _ in range(member_count):
        member_id = string()
        instance_id = nullable_string() if version >= _INSTANCE_ID_SINCE else None
        client_id = string()
        client_host = string()
        rebalance_timeout = r.int32() if version >= _REBALANCE_TIMEOUT_SINCE else None
        session_timeout = r.int32()
        subscription = blob()
        assignment = blob()
        if flexible:
            r.tagged_fields()  # GroupMetadataValue defines no member tags yet
        members.append(
            GroupMember(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                subscription,
                assignment,
            )
        )
    if flexible:
        r.tagged_fields()
    r.expect_end()  # as for OffsetCommitValue
    return GroupMetadataValue(
        version, protocol_type, generation, protocol, leader, state_timestamp, members
    )


def _min_member_size(version: int) -> int:
    if version >= _FLEXIBLE_SINCE:
        # 1-byte lengths for 3 strings, instance id and 2 blobs, 2 int32s, 1-byte tag count
        return 6 + 8 + 1
    size = 3 * 2 + 4 + 2 * 4  # strings, session timeout, blob lengths
    if version >= _REBALANCE_TIMEOUT_SINCE:
        size += 4
    if version >= _INSTANCE_ID_SINCE:
        size += 2
    return size


def _read_streams_metadata(r: Reader) -> StreamsCommitMetadata:
    magic = r.int8()
    r.version = magic
    if magic not in (_PARTITION_TIME_MAGIC, _PROCESSOR_METADATA_MAGIC):
        raise MalformedError(f"unknown magic byte {magic}", 0)
    partition_time = r.int64()
    processor_metadata: dict[str, int] = {}
    # The processor metadata of magic 2 is optional: absent means nothing follows.
    if magic == _PROCESSOR_METADATA_MAGIC and r.remaining:
        for _ in range(r.count(4 + 8)):
            key = decode_utf8(r.bytes_())
            processor_metadata[key] = r.int64()
    r.expect_end()
    return StreamsCommitMetadata(magic, partition_time, processor_metadata)
