"""``__consumer_offsets``: keys, unknown versions, v4 tags, Streams metadata, partitioning."""

import base64
from collections.abc import Callable

import pytest

from agent.streams.codec import DecodeError
from agent.streams.offsets_topic import (
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    OtherRecordKey,
    StreamsCommitMetadata,
    decode_group_metadata_value,
    decode_offset_commit_value,
    decode_offsets_key,
    decode_streams_commit_metadata,
    java_abs,
    java_string_hash,
    offsets_topic_partition,
)
from tests.unit.streams.vectors import bytes32, i8, i16, i32, i64, string16, vector

# --- keys --------------------------------------------------------------------------------------


def test_record_type_0_is_an_offset_commit_key_too() -> None:
    # Types 0 and 1 share the layout; old brokers wrote 0.
    data = i16(0) + string16("g") + string16("t1") + i32(4)

    assert decode_offsets_key(data) == OffsetCommitKey(0, "g", "t1", 4)


@pytest.mark.parametrize(
    "record_type",
    [
        pytest.param(3, id="KIP-848 consumer group metadata"),
        pytest.param(17, id="KIP-1071 streams group metadata"),
        pytest.param(99, id="a type from a future broker"),
    ],
)
def test_other_record_types_are_named_for_skipping(record_type: int) -> None:
    # Their key layouts are not read at all: a reader only needs to skip them.
    assert decode_offsets_key(i16(record_type) + b"\x00\x01x whatever") == OtherRecordKey(
        record_type
    )


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(b"", "truncated", id="empty key"),
        pytest.param(i16(2) + string16("g") + b"\x00", "1 trailing bytes", id="trailing"),
        pytest.param(i16(1) + string16("g") + string16("t1"), "truncated", id="no partition"),
        pytest.param(i16(2) + string16(None), "null", id="null group"),
    ],
)
def test_malformed_keys(data: bytes, reason: str) -> None:
    result = decode_offsets_key(data)

    assert isinstance(result, DecodeError)
    assert reason in result.reason


# --- values ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("decode", "version"),
    [
        pytest.param(decode_offset_commit_value, 5, id="offset commit v5"),
        pytest.param(decode_offset_commit_value, -1, id="offset commit v-1"),
        pytest.param(decode_group_metadata_value, 5, id="group metadata v5"),
        pytest.param(decode_group_metadata_value, -2, id="group metadata v-2"),
    ],
)
def test_unknown_value_versions_are_errors(decode: Callable[[bytes], object], version: int) -> None:
    # The coordinator refuses versions it does not know, and so do we.
    result = decode(i16(version) + b"\x00" * 40)

    assert isinstance(result, DecodeError)
    assert result.reason == f"unknown version {version}"
    assert result.version == version


def offset_commit_v4(tags: bytes) -> bytes:
    return i16(4) + i64(42) + i32(7) + b"\x02m" + i64(1000) + tags


def test_v4_offset_commit_reads_the_topic_id_tag() -> None:
    topic_id = bytes(range(16))
    value = decode_offset_commit_value(offset_commit_v4(b"\x01" + b"\x00\x10" + topic_id))

    assert isinstance(value, OffsetCommitValue)
    assert value.topic_id == base64.urlsafe_b64encode(topic_id).decode().rstrip("=")
    assert (value.offset, value.leader_epoch, value.metadata) == (42, 7, "m")


def test_v4_offset_commit_skips_unknown_tags() -> None:
    value = decode_offset_commit_value(offset_commit_v4(b"\x01" + b"\x07\x03abc"))

    assert isinstance(value, OffsetCommitValue)
    assert value.topic_id is None


def test_a_topic_id_tag_of_the_wrong_size_is_an_error() -> None:
    result = decode_offset_commit_value(offset_commit_v4(b"\x01" + b"\x00\x02ab"))

    assert isinstance(result, DecodeError)
    assert "topicId tag holds 2 bytes" in result.reason


@pytest.mark.parametrize(
    ("kind", "version"),
    [("OFFSETVAL", n) for n in range(5)] + [("GROUPVAL", n) for n in range(5)],
)
def test_trailing_bytes_after_a_value_are_an_error(kind: str, version: int) -> None:
    data = vector(kind, version).data + b"\x00"
    decode = decode_offset_commit_value if kind == "OFFSETVAL" else decode_group_metadata_value

    result = decode(data)

    assert isinstance(result, DecodeError)
    assert result.reason == "1 trailing bytes"


def test_an_empty_group_has_no_members() -> None:
    # Written after the last member leaves: no protocol, no leader, empty list.
    data = i16(3) + string16("consumer") + i32(8) + string16(None) + string16(None)
    data += i64(1234) + i32(0)

    assert decode_group_metadata_value(data) == GroupMetadataValue(
        version=3,
        protocol_type="consumer",
        generation=8,
        protocol=None,
        leader=None,
        current_state_timestamp=1234,
        members=[],
    )


def test_static_members_keep_their_instance_id() -> None:
    member = string16("m1") + string16("app-1") + string16("c") + string16("/h")
    member += i32(300000) + i32(45000) + bytes32(b"") + bytes32(b"")
    data = i16(3) + string16("consumer") + i32(1) + string16("stream") + string16("m1")
    data += i64(-1) + i32(1) + member

    value = decode_group_metadata_value(data)

    assert isinstance(value, GroupMetadataValue)
    assert value.members[0].group_instance_id == "app-1"
    assert value.current_state_timestamp == -1


def test_absurd_member_count_is_refused() -> None:
    data = i16(0) + string16("consumer") + i32(1) + string16(None) + string16(None)
    data += i32(0x7FFFFFFF)

    result = decode_group_metadata_value(data)

    assert isinstance(result, DecodeError)
    assert "count 2147483647" in result.reason


# --- Streams commit metadata -------------------------------------------------------------------


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        pytest.param("", None, id="empty means unknown"),
        pytest.param(b64(i8(1) + i64(1000)), StreamsCommitMetadata(1, 1000, {}), id="magic 1"),
        pytest.param(
            b64(i8(2) + i64(1000)), StreamsCommitMetadata(2, 1000, {}), id="magic 2 without map"
        ),
        pytest.param(
            b64(i8(2) + i64(-1) + i32(2) + bytes32(b"a") + i64(5) + bytes32(b"b") + i64(-7)),
            StreamsCommitMetadata(2, -1, {"a": 5, "b": -7}),
            id="magic 2 with processor metadata",
        ),
        pytest.param(b64(i8(2) + i64(7) + i32(0)), StreamsCommitMetadata(2, 7, {}), id="empty map"),
        # Java's Base64 decoder does not insist on padding.
        pytest.param(
            b64(i8(1) + i64(2)).rstrip("="), StreamsCommitMetadata(1, 2, {}), id="unpadded"
        ),
    ],
)
def test_streams_commit_metadata(metadata: str, expected: StreamsCommitMetadata | None) -> None:
    assert decode_streams_commit_metadata(metadata) == expected


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        pytest.param("not base64!", "not Base64", id="a plain consumer's metadata"),
        pytest.param("é", "not Base64", id="non-ASCII"),
        pytest.param(b64(i8(3) + i64(1)), "unknown magic byte 3", id="future magic"),
        pytest.param(b64(i8(1) + i64(1) + b"\x00"), "1 trailing bytes", id="trailing"),
        pytest.param(b64(i8(1) + b"\x00\x00"), "truncated", id="short partition time"),
        pytest.param(b64(i8(2) + i64(1) + i32(-1)), "negative count -1", id="negative map size"),
    ],
)
def test_malformed_streams_commit_metadata(metadata: str, reason: str) -> None:
    result = decode_streams_commit_metadata(metadata)

    assert isinstance(result, DecodeError)
    assert result.what == "StreamsCommitMetadata"
    assert reason in result.reason


# --- which partition holds a group -------------------------------------------------------------


def independent_java_hash(text: str) -> int:
    """String.hashCode as the closed form s[0]*31^(n-1) + ... + s[n-1], wrapped to int32."""
    raw = text.encode("utf-16-be")
    units = [int.from_bytes(raw[i : i + 2], "big") for i in range(0, len(raw), 2)]
    total: int = sum(u * pow(31, len(units) - 1 - i) for i, u in enumerate(units)) % 2**32
    return total - 2**32 if total >= 2**31 else total


@pytest.mark.parametrize(
    ("group_id", "hash_code", "partition"),
    [
        # 'g' is 103; 103 % 50 = 3.
        pytest.param("g", 103, 3, id="one char"),
        # 'a'*31 + 'b' = 97*31 + 98 = 3105; 3105 % 50 = 5.
        pytest.param("ab", 3105, 5, id="two chars"),
        # "Aa" and "BB" are Java's classic collision: 65*31+97 = 66*31+66 = 2112.
        pytest.param("Aa", 2112, 12, id="collision A"),
        pytest.param("BB", 2112, 12, id="collision B"),
        # "hello".hashCode() is 99162322 in every Java; 99162322 % 50 = 22.
        pytest.param("hello", 99162322, 22, id="hello"),
        # Overflows to a negative hash; |-1550722138| % 50 = 38.
        pytest.param("my-streams-app", -1550722138, 38, id="negative hash"),
        # U+1F600 is two UTF-16 units D83D DE00: 55357*31 + 56832 = 1772899; % 50 = 49.
        pytest.param("\U0001f600", 1772899, 49, id="supplementary char counts twice"),
        # The famous string whose hashCode is Integer.MIN_VALUE: Utils.abs gives 0,
        # where a plain abs would give 2147483648 % 50 = 48.
        pytest.param("polygenelubricants", -(2**31), 0, id="Integer.MIN_VALUE"),
    ],
)
def test_offsets_topic_partition(group_id: str, hash_code: int, partition: int) -> None:
    assert java_string_hash(group_id) == hash_code == independent_java_hash(group_id)
    assert offsets_topic_partition(group_id) == partition


def test_partition_count_is_honoured() -> None:
    assert offsets_topic_partition("hello", 7) == 99162322 % 7
    assert offsets_topic_partition("polygenelubricants", 7) == 0


def test_java_abs_maps_min_value_to_zero() -> None:
    assert java_abs(-(2**31)) == 0
    assert java_abs(-(2**31) + 1) == 2**31 - 1
    assert java_abs(-5) == 5


def test_a_partition_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="num_partitions must be at least 1"):
        offsets_topic_partition("g", 0)
