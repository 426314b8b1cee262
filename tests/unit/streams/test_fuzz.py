"""No input makes a public decoder raise: random bytes, and Kafka's vectors damaged at random."""

from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.streams.assignment_info import (
    AssignmentInfo,
    active_tasks_by_partition,
    decode_assignment_info,
)
from agent.streams.client_id import StreamThreadClientId, parse_stream_thread_client_id
from agent.streams.codec import DecodeError
from agent.streams.consumer_protocol import (
    ConsumerAssignment,
    ConsumerSubscription,
    decode_consumer_assignment,
    decode_consumer_subscription,
)
from agent.streams.internal_topics import (
    InternalTopicKind,
    changelog_store_name,
    classify_internal_topic,
)
from agent.streams.member import DecodedStreamsMember, decode_streams_member
from agent.streams.offsets_topic import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    OtherRecordKey,
    StreamsCommitMetadata,
    decode_group_metadata_value,
    decode_offset_commit_value,
    decode_offsets_key,
    decode_streams_commit_metadata,
    offsets_topic_partition,
)
from agent.streams.subscription_info import SubscriptionInfo, decode_subscription_info
from agent.streams.types import TaskId, TopicPartition
from tests.unit.streams.vectors import VECTORS, Vector

# Modest example counts keep the unit tier at a few seconds; no example database,
# so runs leave nothing behind in the working tree.
FUZZ = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Each bytes decoder with the types it may return.
BYTES_DECODERS: list[tuple[Callable[[bytes], object], tuple[type, ...]]] = [
    (decode_consumer_subscription, (ConsumerSubscription,)),
    (decode_consumer_assignment, (ConsumerAssignment,)),
    (decode_subscription_info, (SubscriptionInfo,)),
    (decode_assignment_info, (AssignmentInfo,)),
    (decode_offsets_key, (OffsetCommitKey, GroupMetadataKey, OtherRecordKey)),
    (decode_offset_commit_value, (OffsetCommitValue,)),
    (decode_group_metadata_value, (GroupMetadataValue,)),
]


def assert_every_decoder_returns_a_value(data: bytes) -> None:
    for decode, types in BYTES_DECODERS:
        result = decode(data)
        assert isinstance(result, (*types, DecodeError)), (decode.__name__, result)
    member = decode_streams_member(data, data)
    assert isinstance(member, DecodedStreamsMember)
    assert all(isinstance(e, DecodeError) for e in member.errors)


@st.composite
def damaged_vectors(draw: st.DrawFn) -> bytes:
    """A Kafka-made vector with random flips, cuts, insertions and extensions."""
    data = bytearray(draw(st.sampled_from(VECTORS)).data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "set", "cut", "insert", "extend"]))
        at = draw(st.integers(0, len(data)))
        if op == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and at < len(data):
            # 0x00, 0x7f, 0x80 and 0xff are the bytes that turn counts and
            # lengths into zero, huge, or negative values.
            data[at] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF]))
        elif op == "cut":
            del data[at:]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:
            data += draw(st.binary(min_size=1, max_size=16))
    return bytes(data)


@FUZZ
@given(st.binary(max_size=256))
def test_random_bytes_never_raise(data: bytes) -> None:
    assert_every_decoder_returns_a_value(data)


@FUZZ
@given(damaged_vectors())
def test_damaged_vectors_never_raise(data: bytes) -> None:
    assert_every_decoder_returns_a_value(data)


@FUZZ
@given(st.sampled_from([v for v in VECTORS if v.kind in ("SUB", "ASG")]), st.binary(max_size=64))
def test_streams_user_data_inside_damaged_consumer_blobs_never_raises(
    v: Vector, tail: bytes
) -> None:
    # Valid consumer-protocol framing around damaged Streams userData, so the
    # fuzzing reaches the second pipeline stage and the zip.
    user_data = v.data[: len(v.data) // 2] + tail
    framed = (
        b"\x00\x00"
        + b"\x00\x00\x00\x01\x00\x02t1\x00\x00\x00\x01\x00\x00\x00\x00"
        + len(user_data).to_bytes(4, "big")
        + user_data
    )
    member = decode_streams_member(framed, framed)
    assert all(isinstance(e, DecodeError) for e in member.errors)


@FUZZ
@given(st.text(max_size=64))
def test_text_decoders_never_raise(text: str) -> None:
    commit = decode_streams_commit_metadata(text)
    assert commit is None or isinstance(commit, (StreamsCommitMetadata, DecodeError))
    thread = parse_stream_thread_client_id(text)
    assert thread is None or isinstance(thread, StreamThreadClientId)
    kind = classify_internal_topic(text, "app")
    assert kind is None or isinstance(kind, InternalTopicKind)
    store = changelog_store_name(text, "app")
    assert store is None or isinstance(store, str)
    task = TaskId.parse(text)
    assert task is None or str(TaskId.parse(str(task))) == str(task)
    assert 0 <= offsets_topic_partition(text) < 50


@FUZZ
@given(
    st.text(
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", max_size=40
    )
)
def test_base64_lookalikes_never_raise(text: str) -> None:
    result = decode_streams_commit_metadata(text)
    assert result is None or isinstance(result, (StreamsCommitMetadata, DecodeError))


@FUZZ
@given(
    st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 3)), max_size=6),
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3)), max_size=6),
)
def test_the_zip_is_a_mapping_or_an_error(
    assigned: list[tuple[str, int]], active: list[tuple[int, int]]
) -> None:
    info = AssignmentInfo(11, 11, [TaskId(s, p) for s, p in active], {}, {}, {}, 0, 0, {})
    result = active_tasks_by_partition([TopicPartition(t, p) for t, p in assigned], info)
    if len(assigned) == len(active):
        assert isinstance(result, dict)
        assert sum(len(ps) for ps in result.values()) == len(assigned)
    else:
        assert isinstance(result, DecodeError)
