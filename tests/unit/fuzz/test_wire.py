"""The fuzz encoders write exactly Kafka's bytes: every test vector, decoded and re-encoded."""

from collections.abc import Callable

import pytest

from agent.streams.assignment_info import decode_assignment_info
from agent.streams.codec import decode_modified_utf8
from agent.streams.consumer_protocol import decode_consumer_assignment, decode_consumer_subscription
from agent.streams.offsets_topic import (
    GroupMetadataKey,
    OffsetCommitKey,
    decode_group_metadata_value,
    decode_offset_commit_value,
    decode_offsets_key,
)
from agent.streams.subscription_info import decode_subscription_info
from tests.unit.fuzz import wire
from tests.unit.streams.vectors import VECTORS, Vector


def _offsets_key(data: bytes) -> bytes:
    key = decode_offsets_key(data)
    assert isinstance(key, OffsetCommitKey | GroupMetadataKey), key
    return wire.offsets_key(key)


def _round_trip(
    decode: Callable[[bytes], object], encode: Callable[..., bytes]
) -> Callable[[bytes], bytes]:
    def run(data: bytes) -> bytes:
        return encode(decode(data))

    return run


RE_ENCODE: dict[str, Callable[[bytes], bytes]] = {
    "SUB": _round_trip(decode_subscription_info, wire.subscription_info),
    "ASG": _round_trip(decode_assignment_info, wire.assignment_info),
    "CONSUMER_SUB": _round_trip(decode_consumer_subscription, wire.consumer_subscription),
    "CONSUMER_ASG": _round_trip(decode_consumer_assignment, wire.consumer_assignment),
    "OFFSETKEY": _offsets_key,
    "GROUPKEY": _offsets_key,
    "OFFSETVAL": _round_trip(decode_offset_commit_value, wire.offset_commit_value),
    "GROUPVAL": _round_trip(decode_group_metadata_value, wire.group_metadata_value),
}


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v.name.replace(" ", "-"))
def test_the_encoders_reproduce_kafkas_bytes(v: Vector) -> None:
    assert RE_ENCODE[v.kind](v.data).hex() == v.data.hex()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("plain", "706c61696e", id="ASCII is itself"),
        pytest.param("\x00", "c080", id="NUL takes two bytes"),
        pytest.param("é", "c3a9", id="two-byte UTF-8"),
        pytest.param("€", "e282ac", id="three-byte UTF-8"),
        pytest.param("\U0001f600", "eda0bdedb880", id="supplementary: CESU-8 surrogates"),
    ],
)
def test_modified_utf8_is_javas(text: str, expected: str) -> None:
    raw = wire.modified_utf8(text)

    assert raw.hex() == expected
    assert decode_modified_utf8(raw) == text
