"""One Streams member's pipeline: what is normal when blobs are missing, and how errors collect."""

from agent.streams.member import DecodedStreamsMember, decode_streams_member
from agent.streams.types import TaskId, TopicPartition
from tests.unit.streams.vectors import bytes32, i16, i32, string16, vector

CONSUMER_SUB = vector("CONSUMER_SUB", 3).data
CONSUMER_ASG = vector("CONSUMER_ASG", 3).data


def assignment(partitions: list[tuple[str, int]], user_data: bytes | None) -> bytes:
    """ConsumerProtocolAssignment v0 with one entry per partition."""
    body = i32(len(partitions))
    for topic, partition in partitions:
        body += string16(topic) + i32(1) + i32(partition)
    return i16(0) + body + bytes32(user_data)


def test_missing_blobs_are_normal_not_errors() -> None:
    # DescribeGroups sends empty metadata and assignment while the group rebalances.
    assert decode_streams_member(None, None) == DecodedStreamsMember()
    assert decode_streams_member(b"", b"") == DecodedStreamsMember()


def test_assignment_without_metadata_still_gives_tasks() -> None:
    # The KIP-848-era coordinator keeps the assignment but drops metadata when not Stable.
    member = decode_streams_member(b"", CONSUMER_ASG)

    assert member.errors == ()
    assert member.subscription is None
    assert member.subscription_info is None
    assert member.active_tasks == {TaskId(0, 0): [TopicPartition("t1", 0)]}


def test_a_bad_subscription_does_not_hide_the_assignment() -> None:
    member = decode_streams_member(b"\x00\x03\xff", CONSUMER_ASG)

    assert [e.what for e in member.errors] == ["ConsumerProtocolSubscription"]
    assert member.assignment_info is not None
    assert member.active_tasks == {TaskId(0, 0): [TopicPartition("t1", 0)]}


def test_bad_streams_user_data_is_reported_with_the_consumer_data_kept() -> None:
    metadata = i16(0) + i32(1) + string16("t1") + bytes32(b"\x00\x00\x00\x00")

    member = decode_streams_member(metadata, None)

    assert member.subscription is not None
    assert member.subscription.topics == ["t1"]
    assert member.subscription_info is None
    assert [(e.what, e.reason) for e in member.errors] == [
        ("SubscriptionInfo", "unknown version 0")
    ]


def test_a_consumer_blob_without_user_data_is_reported() -> None:
    # In a group whose protocol is "stream" every member sends Streams userData.
    member = decode_streams_member(None, assignment([("t1", 0)], None))

    assert member.assignment is not None
    assert [(e.what, e.reason) for e in member.errors] == [
        ("AssignmentInfo", "the consumer-protocol blob has no userData")
    ]


def test_a_partition_count_that_does_not_match_the_active_list_is_reported() -> None:
    # ASG v11 lists one active entry; here the consumer got two partitions.
    blob = assignment([("t1", 0), ("t1", 1)], vector("ASG", 11).data)

    member = decode_streams_member(CONSUMER_SUB, blob)

    assert member.assignment_info is not None
    assert member.subscription_info is not None
    assert member.active_tasks == {}
    assert [e.what for e in member.errors] == ["ActiveTaskPartitions"]
