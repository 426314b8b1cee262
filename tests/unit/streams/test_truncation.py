"""Every prefix of every Kafka-made vector is a DecodeError: no partial value, no exception."""

from collections.abc import Callable

import pytest

from agent.streams.assignment_info import decode_assignment_info
from agent.streams.codec import DecodeError
from agent.streams.consumer_protocol import decode_consumer_assignment, decode_consumer_subscription
from agent.streams.member import decode_streams_member
from agent.streams.offsets_topic import (
    decode_group_metadata_value,
    decode_offset_commit_value,
    decode_offsets_key,
)
from agent.streams.subscription_info import decode_subscription_info
from tests.unit.streams.vectors import VECTORS, Vector, vector

DECODERS: dict[str, Callable[[bytes], object]] = {
    "SUB": decode_subscription_info,
    "ASG": decode_assignment_info,
    "CONSUMER_SUB": decode_consumer_subscription,
    "CONSUMER_ASG": decode_consumer_assignment,
    "OFFSETKEY": decode_offsets_key,
    "GROUPKEY": decode_offsets_key,
    "OFFSETVAL": decode_offset_commit_value,
    "GROUPVAL": decode_group_metadata_value,
}


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v.name.replace(" ", "-"))
def test_every_prefix_is_a_decode_error(v: Vector) -> None:
    # Every field of every known version is required, so no proper prefix of a
    # complete message can itself be complete.
    decode = DECODERS[v.kind]
    for cut in range(len(v.data)):
        result = decode(v.data[:cut])
        assert isinstance(result, DecodeError), (cut, result)
        assert result.offset is not None
        assert 0 <= result.offset <= cut


@pytest.mark.parametrize("cut_from", ["metadata", "assignment"])
def test_truncated_member_blobs_become_errors_not_exceptions(cut_from: str) -> None:
    sub, asg = vector("CONSUMER_SUB", 3).data, vector("CONSUMER_ASG", 3).data
    blob = sub if cut_from == "metadata" else asg
    for cut in range(1, len(blob)):
        if cut_from == "metadata":
            member = decode_streams_member(blob[:cut], asg)
        else:
            member = decode_streams_member(sub, blob[:cut])
        assert len(member.errors) == 1, cut
        # The other blob is untouched by the damage.
        if cut_from == "metadata":
            assert member.assignment_info is not None
        else:
            assert member.subscription_info is not None
