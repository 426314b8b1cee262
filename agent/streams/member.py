"""Everything one classic-group Kafka Streams member's two blobs say, decoded in one call.

Pipeline (``streams-internals.md`` section 1)::

    member_metadata   -> ConsumerProtocolSubscription -> .user_data -> SubscriptionInfo
    member_assignment -> ConsumerProtocolAssignment   -> .user_data -> AssignmentInfo
    sorted(assignment partitions) zip AssignmentInfo.active_tasks   -> active task partitions

Each stage that fails adds a ``DecodeError`` and leaves its result None; the
other stages still run, so one bad blob never hides what the other says.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from agent.streams.assignment_info import (
    AssignmentInfo,
    active_tasks_by_partition,
    decode_assignment_info,
)
from agent.streams.codec import DecodeError
from agent.streams.consumer_protocol import (
    ConsumerAssignment,
    ConsumerSubscription,
    decode_consumer_assignment,
    decode_consumer_subscription,
)
from agent.streams.subscription_info import SubscriptionInfo, decode_subscription_info
from agent.streams.types import TaskId, TopicPartition

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class DecodedStreamsMember:
    """What could be decoded of one member; ``errors`` says what could not."""

    subscription: ConsumerSubscription | None = None
    assignment: ConsumerAssignment | None = None
    subscription_info: SubscriptionInfo | None = None
    assignment_info: AssignmentInfo | None = None
    active_tasks: dict[TaskId, list[TopicPartition]] = field(default_factory=dict)
    errors: tuple[DecodeError, ...] = ()


def decode_streams_member(
    member_metadata: bytes | None, member_assignment: bytes | None
) -> DecodedStreamsMember:
    """Decode a Streams member's JoinGroup metadata and SyncGroup assignment.

    Empty or None blobs are normal, not errors: DescribeGroups sends empty
    metadata (and, from the old coordinator, an empty assignment) while the
    group is not Stable, and a member that just joined has no assignment yet.

    >>> member = decode_streams_member(b"", None)
    >>> member.subscription_info, member.active_tasks, member.errors
    (None, {}, ())
    """
    errors: list[DecodeError] = []
    subscription: ConsumerSubscription | None = None
    subscription_info: SubscriptionInfo | None = None
    if member_metadata:
        decoded_sub = decode_consumer_subscription(member_metadata)
        if isinstance(decoded_sub, DecodeError):
            errors.append(decoded_sub)
        else:
            subscription = decoded_sub
            subscription_info = _user_data(
                "SubscriptionInfo", decoded_sub.user_data, decode_subscription_info, errors
            )

    assignment: ConsumerAssignment | None = None
    assignment_info: AssignmentInfo | None = None
    if member_assignment:
        decoded_asg = decode_consumer_assignment(member_assignment)
        if isinstance(decoded_asg, DecodeError):
            errors.append(decoded_asg)
        else:
            assignment = decoded_asg
            assignment_info = _user_data(
                "AssignmentInfo", decoded_asg.user_data, decode_assignment_info, errors
            )

    active_tasks: dict[TaskId, list[TopicPartition]] = {}
    if assignment is not None and assignment_info is not None:
        zipped = active_tasks_by_partition(assignment.partitions, assignment_info)
        if isinstance(zipped, DecodeError):
            errors.append(zipped)
        else:
            active_tasks = zipped

    return DecodedStreamsMember(
        subscription, assignment, subscription_info, assignment_info, active_tasks, tuple(errors)
    )


def _user_data(
    what: str,
    user_data: bytes | None,
    decode: Callable[[bytes], T | DecodeError],
    errors: list[DecodeError],
) -> T | None:
    # A member of a group whose protocol is "stream" always sends Streams
    # userData; a blob without it is worth reporting, not skipping silently.
    if not user_data:
        errors.append(DecodeError(what, "the consumer-protocol blob has no userData"))
        return None
    decoded = decode(user_data)
    if isinstance(decoded, DecodeError):
        errors.append(decoded)
        return None
    return decoded
