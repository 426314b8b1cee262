"""The consumer protocol blobs: old and newer versions, and what is refused."""

import pytest

from agent.streams.codec import DecodeError
from agent.streams.consumer_protocol import (
    ConsumerAssignment,
    ConsumerSubscription,
    decode_consumer_assignment,
    decode_consumer_subscription,
)
from agent.streams.types import TopicPartition
from tests.unit.streams.vectors import bytes32, i16, i32, string16, vector


def topic_partitions(entries: list[tuple[str, list[int]]]) -> bytes:
    out = i32(len(entries))
    for topic, partitions in entries:
        out += string16(topic) + i32(len(partitions)) + b"".join(i32(p) for p in partitions)
    return out


def test_v0_subscription_defaults_the_fields_it_lacks() -> None:
    data = i16(0) + i32(1) + string16("t1") + bytes32(None)

    assert decode_consumer_subscription(data) == ConsumerSubscription(
        version=0,
        topics=["t1"],
        user_data=None,
        owned_partitions=[],
        generation_id=-1,
        rack_id=None,
    )


def test_a_newer_subscription_is_read_as_v3_and_its_appended_fields_skipped() -> None:
    # Fields are only ever appended: a v4 blob starts with the complete v3 layout.
    v3 = vector("CONSUMER_SUB", 3).data
    v4 = i16(4) + v3[2:] + b"\x00\x00\x00\x2a new field"

    result = decode_consumer_subscription(v4)

    assert isinstance(result, ConsumerSubscription)
    assert result.version == 4
    assert result.rack_id == "r1"
    assert result.generation_id == 5


def test_a_newer_assignment_is_read_as_v3() -> None:
    v3 = vector("CONSUMER_ASG", 3).data
    result = decode_consumer_assignment(i16(9) + v3[2:] + b"\x01")

    assert isinstance(result, ConsumerAssignment)
    assert result.version == 9
    assert result.partitions == [TopicPartition("t1", 0)]


@pytest.mark.parametrize("kind", ["CONSUMER_SUB", "CONSUMER_ASG"])
def test_trailing_bytes_after_a_known_version_are_an_error(kind: str) -> None:
    # For v0-3 we know every field; leftovers mean the blob is not what it says.
    data = vector(kind, 3).data + b"\x00"
    decode = decode_consumer_subscription if kind == "CONSUMER_SUB" else decode_consumer_assignment

    result = decode(data)

    assert isinstance(result, DecodeError)
    assert result.reason == "1 trailing bytes"
    assert result.version == 3


def test_assignment_partitions_are_flattened_in_wire_order() -> None:
    data = i16(1) + topic_partitions([("b", [2, 0]), ("a", [7])]) + bytes32(b"\x01")

    assert decode_consumer_assignment(data) == ConsumerAssignment(
        version=1,
        partitions=[TopicPartition("b", 2), TopicPartition("b", 0), TopicPartition("a", 7)],
        user_data=b"\x01",
    )


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(i16(-1) + i32(0) + bytes32(None), "unknown version -1", id="negative version"),
        pytest.param(i16(0) + i32(1) + i16(-1) + bytes32(None), "null", id="null topic name"),
        pytest.param(i16(0) + i32(-1) + bytes32(None), "negative count -1", id="null topic list"),
        pytest.param(i16(0) + i32(100_000) + bytes32(None), "count 100000", id="absurd count"),
        pytest.param(b"\x00", "truncated", id="half a version"),
    ],
)
def test_malformed_subscriptions(data: bytes, reason: str) -> None:
    result = decode_consumer_subscription(data)

    assert isinstance(result, DecodeError)
    assert result.what == "ConsumerProtocolSubscription"
    assert reason in result.reason
