"""No input makes a decoder raise: each gives the value or a typed error.

Every decoder in ``targets.TARGETS`` gets the same properties: valid
messages of every version decode to exactly what was encoded; damaged,
random and other formats' messages give a value or a typed error, never an
exception. ``KSMON_FUZZ_EXAMPLES`` raises the example count for a longer run
(``KSMON_FUZZ_EXAMPLES=20000 .venv/bin/pytest tests/unit/fuzz``).
"""

import os
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.streams.assignment_info import AssignmentInfo, active_tasks_by_partition
from agent.streams.client_id import StreamThreadClientId, parse_stream_thread_client_id
from agent.streams.codec import DecodeError
from agent.streams.consumer_protocol import ConsumerAssignment, ConsumerSubscription
from agent.streams.internal_topics import (
    InternalTopicKind,
    changelog_store_name,
    classify_internal_topic,
)
from agent.streams.member import decode_streams_member
from agent.streams.offsets_topic import offsets_topic_partition
from agent.streams.subscription_info import SubscriptionInfo
from agent.streams.types import TaskId, TopicPartition
from tests.unit.fuzz import mutations, strategies, wire
from tests.unit.fuzz.targets import BINARY_TARGETS, TARGETS, Target
from tests.unit.streams.vectors import VECTORS

EXAMPLES = int(os.environ.get("KSMON_FUZZ_EXAMPLES", "100"))
# No example database: runs leave nothing behind in the working tree.
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# The member pipeline builds two messages of two formats per example.
FUZZ_MEMBERS = settings(FUZZ, max_examples=max(10, EXAMPLES // 2))
by_name = pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)


def fuzz(target: Target, prop: Callable[[Target, st.DataObject], None]) -> None:
    """Run ``prop`` over ``target`` with the target's share of the example budget."""
    examples = max(10, round(EXAMPLES * target.weight))

    @settings(FUZZ, max_examples=examples)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        prop(target, data)

    run()


def valid_messages_decode_to_what_was_encoded(target: Target, data: st.DataObject) -> None:
    example = data.draw(target.valid)
    assert target.decode(example.data) == example.expected


def damaged_messages_give_a_value_or_a_typed_error(target: Target, data: st.DataObject) -> None:
    example = data.draw(target.valid)
    target.outcome(data.draw(target.damage(example.data)))


def random_input_gives_a_value_or_a_typed_error(target: Target, data: st.DataObject) -> None:
    target.outcome(data.draw(target.random_inputs()))


def prefixes_give_a_value_or_a_typed_error(target: Target, data: st.DataObject) -> None:
    example = data.draw(target.valid)
    target.outcome(example.data[: data.draw(st.integers(0, len(example.data)))])


def other_formats_give_a_value_or_a_typed_error(target: Target, data: st.DataObject) -> None:
    # Confusion between formats is the likeliest "valid-looking garbage" in
    # practice: userData of one kind read as the other, a key read as a value.
    others = [t for t in BINARY_TARGETS if t is not target and t.weight == 1.0]
    other = data.draw(st.sampled_from(others))
    target.outcome(data.draw(other.valid).data)


def kafka_vectors_damaged_give_a_value_or_a_typed_error(
    target: Target, data: st.DataObject
) -> None:
    raw = data.draw(mutations.damaged(data.draw(st.sampled_from(VECTORS)).data))
    target.outcome(raw.decode("latin-1") if target.text else raw)


@by_name
def test_valid_messages_of_every_version_decode_to_what_was_encoded(target: Target) -> None:
    fuzz(target, valid_messages_decode_to_what_was_encoded)


@by_name
def test_damaged_messages_give_a_value_or_a_typed_error(target: Target) -> None:
    fuzz(target, damaged_messages_give_a_value_or_a_typed_error)


@by_name
def test_random_input_gives_a_value_or_a_typed_error(target: Target) -> None:
    fuzz(target, random_input_gives_a_value_or_a_typed_error)


@by_name
def test_every_prefix_of_a_valid_message_gives_a_value_or_a_typed_error(target: Target) -> None:
    fuzz(target, prefixes_give_a_value_or_a_typed_error)


@pytest.mark.parametrize("target", BINARY_TARGETS, ids=lambda t: t.name)
def test_another_formats_message_gives_a_value_or_a_typed_error(target: Target) -> None:
    fuzz(target, other_formats_give_a_value_or_a_typed_error)


@by_name
def test_kafkas_own_vectors_damaged_give_a_value_or_a_typed_error(target: Target) -> None:
    fuzz(target, kafka_vectors_damaged_give_a_value_or_a_typed_error)


# --- the member pipeline: two blobs, two layers each --------------------------------------------


@st.composite
def streams_members(draw: st.DrawFn) -> tuple[bytes, bytes, dict[TaskId, list[TopicPartition]]]:
    """A member's JoinGroup metadata and SyncGroup assignment around valid Streams userData,
    with as many assigned partitions as active-task entries so the zip succeeds."""
    sub_info = draw(strategies.subscription_infos())
    asg_info = draw(strategies.assignment_infos())
    assert isinstance(asg_info.expected, AssignmentInfo)
    active = asg_info.expected.active_tasks
    partitions = sorted(
        draw(
            st.lists(
                st.builds(TopicPartition, strategies.TEXT, strategies.INT32),
                min_size=len(active),
                max_size=len(active),
                unique=True,
            )
        )
    )
    expected: dict[TaskId, list[TopicPartition]] = {}
    for partition, task in zip(partitions, active, strict=True):
        expected.setdefault(task, []).append(partition)
    metadata = wire.consumer_subscription(
        ConsumerSubscription(3, ["t"], sub_info.data, [], 1, None)
    )
    # The wire order need not be sorted: the decoder sorts before the zip.
    shuffled = draw(st.permutations(partitions))
    assignment = wire.consumer_assignment(ConsumerAssignment(3, list(shuffled), asg_info.data))
    return metadata, assignment, expected


@FUZZ_MEMBERS
@given(streams_members())
def test_a_valid_member_decodes_without_errors(
    member: tuple[bytes, bytes, dict[TaskId, list[TopicPartition]]],
) -> None:
    metadata, assignment, expected = member

    decoded = decode_streams_member(metadata, assignment)

    assert decoded.errors == ()
    assert isinstance(decoded.subscription_info, SubscriptionInfo)
    assert decoded.active_tasks == expected


@FUZZ_MEMBERS
@given(streams_members(), st.sampled_from(["metadata", "assignment", "both"]), st.data())
def test_a_damaged_member_gives_typed_errors_and_keeps_the_undamaged_blob(
    member: tuple[bytes, bytes, dict[TaskId, list[TopicPartition]]],
    which: str,
    data: st.DataObject,
) -> None:
    metadata, assignment, expected = member
    intact = decode_streams_member(metadata, assignment)
    if which in ("metadata", "both"):
        metadata = data.draw(mutations.damaged(metadata))
    if which in ("assignment", "both"):
        assignment = data.draw(mutations.damaged(assignment))

    decoded = decode_streams_member(metadata, assignment)

    assert all(isinstance(e, DecodeError) for e in decoded.errors)
    # Damage to one blob never costs what the other says.
    if which == "assignment":
        assert decoded.subscription_info == intact.subscription_info
    if which == "metadata":
        assert decoded.assignment_info == intact.assignment_info
        assert decoded.active_tasks == expected


@FUZZ_MEMBERS
@given(
    st.sampled_from([strategies.subscription_infos(), strategies.assignment_infos()]).flatmap(
        lambda s: s
    ),
    st.data(),
)
def test_damaged_user_data_inside_valid_consumer_framing_is_a_typed_error(
    user_data: strategies.Example, data: st.DataObject
) -> None:
    # The outer layer stays valid so the damage reaches the inner decoder and the zip.
    inner = data.draw(mutations.damaged(user_data.data))
    metadata = wire.consumer_subscription(ConsumerSubscription(3, [], inner, [], -1, None))
    assignment = wire.consumer_assignment(ConsumerAssignment(3, [TopicPartition("t", 0)], inner))

    decoded = decode_streams_member(metadata, assignment)

    assert decoded.subscription is not None
    assert decoded.assignment is not None
    assert all(isinstance(e, DecodeError) for e in decoded.errors)


# --- small text parsers --------------------------------------------------------------------------


@FUZZ
@given(
    st.text(max_size=64) | st.from_regex(r"[a-z]{1,5}(__)?[0-9]{1,12}_[0-9]{1,12}", fullmatch=True)
)
def test_text_parsers_give_a_value_or_none(text: str) -> None:
    thread = parse_stream_thread_client_id(text)
    assert thread is None or isinstance(thread, StreamThreadClientId)
    kind = classify_internal_topic(text, "app")
    assert kind is None or isinstance(kind, InternalTopicKind)
    store = changelog_store_name(text, "app")
    assert store is None or isinstance(store, str)
    task = TaskId.parse(text)
    assert task is None or TaskId.parse(str(task)) == task
    assert 0 <= offsets_topic_partition(text) < 50


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
