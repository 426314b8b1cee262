"""Group members as the snapshot shows them: consumer-protocol data, and for
Kafka Streams members the decoded SubscriptionInfo and AssignmentInfo (classic
groups) or the tasks the broker assigned (KIP-1071 streams groups)."""

from agent.collect.raw import (
    ConsumerGroupMember,
    RawMember,
    StreamsGroupMember,
    StreamsTaskSet,
    Subtopology,
)
from agent.model import (
    ClientTag,
    DecodeIssue,
    MemberInfo,
    StreamsMemberInfo,
    StreamsTask,
    TaskOffsetSum,
    TopicPartitionRef,
)
from agent.streams.client_id import parse_stream_thread_client_id
from agent.streams.codec import DecodeError
from agent.streams.consumer_protocol import decode_consumer_assignment, decode_consumer_subscription
from agent.streams.member import DecodedStreamsMember, decode_streams_member
from agent.streams.types import TaskId, TopicPartition

_NO_REBALANCE_SCHEDULED = 2**63 - 1  # Long.MAX_VALUE in AssignmentInfo.nextRebalanceMs


def member_view(raw: RawMember, *, decode_streams: bool) -> MemberInfo:
    """A classic-group member; Streams userData is decoded when the group is a Streams app."""
    if decode_streams:
        decoded = decode_streams_member(raw.metadata or None, raw.assignment or None)
        subscription, assignment = decoded.subscription, decoded.assignment
        errors = tuple(DecodeIssue(e.what, e.reason) for e in decoded.errors)
        streams = _streams_info(raw, decoded)
    else:
        sub = decode_consumer_subscription(raw.metadata) if raw.metadata else None
        asg = decode_consumer_assignment(raw.assignment) if raw.assignment else None
        errors = tuple(
            DecodeIssue(e.what, e.reason) for e in (sub, asg) if isinstance(e, DecodeError)
        )
        subscription = None if isinstance(sub, DecodeError) else sub
        assignment = None if isinstance(asg, DecodeError) else asg
        streams = None
    return MemberInfo(
        member_id=raw.member_id,
        client_id=raw.client_id,
        client_host=raw.client_host,
        group_instance_id=raw.group_instance_id,
        assigned_partitions=_refs(assignment.partitions) if assignment is not None else (),
        subscribed_topics=tuple(subscription.topics) if subscription is not None else (),
        rack_id=subscription.rack_id if subscription is not None else None,
        subscription_bytes=len(raw.metadata),
        assignment_bytes=len(raw.assignment),
        streams=streams,
        decode_errors=errors,
    )


def consumer_group_member_view(member: ConsumerGroupMember) -> MemberInfo:
    """A KIP-848 consumer group member (its assignment comes decoded from the broker)."""
    return MemberInfo(
        member_id=member.member_id,
        client_id=member.client_id,
        client_host=member.client_host,
        group_instance_id=member.group_instance_id,
        assigned_partitions=tuple(TopicPartitionRef(t, p) for t, p in sorted(member.assigned)),
        subscribed_topics=member.subscribed_topics,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
    )


def streams_group_member_view(
    member: StreamsGroupMember, subtopologies: "tuple[Subtopology, ...] | None"
) -> MemberInfo:
    """A KIP-1071 streams group member. The broker names its tasks (sub-topology id and
    partition); the partitions a task reads come from the group's topology: partition p
    of every topic its sub-topology reads. Without a topology a task has no partitions."""
    reads = {
        s.subtopology_id: (*s.source_topics, *s.repartition_source_topics)
        for s in subtopologies or ()
    }

    def tasks(sets: tuple[StreamsTaskSet, ...]) -> tuple[StreamsTask, ...]:
        named = sorted(((s.subtopology, p) for s in sets for p in s.partitions), key=_task_order)
        return tuple(
            StreamsTask(
                f"{subtopology}_{partition}",
                tuple(TopicPartitionRef(t, partition) for t in sorted(reads.get(subtopology, ()))),
            )
            for subtopology, partition in named
        )

    active = tasks(member.active)
    thread = parse_stream_thread_client_id(member.client_id)
    return MemberInfo(
        member_id=member.member_id,
        client_id=member.client_id,
        client_host=member.client_host,
        group_instance_id=member.group_instance_id,
        assigned_partitions=tuple(
            sorted({p for t in active for p in t.partitions}, key=lambda p: (p.topic, p.partition))
        ),
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        streams=StreamsMemberInfo(
            process_id=member.process_id,
            thread_index=thread.thread_index if thread else None,
            base_client_id=thread.base_client_id if thread else None,
            endpoint=member.endpoint,
            active_tasks=active,
            standby_tasks=tasks(member.standby),
            warmup_tasks=tasks(member.warmup),
            client_tags=tuple(ClientTag(k, v) for k, v in sorted(member.client_tags)),
        ),
    )


def _task_order(task: tuple[str, int]) -> tuple[int, str, int]:
    """Numeric sub-topology ids in number order ("2" before "10"), named ones after."""
    subtopology, partition = task
    if subtopology.isdigit():
        return (0, f"{int(subtopology):012d}", partition)
    return (1, subtopology, partition)


def _streams_info(raw: RawMember, decoded: DecodedStreamsMember) -> StreamsMemberInfo | None:
    sub, asg = decoded.subscription_info, decoded.assignment_info
    if sub is None and asg is None:
        return None
    thread = parse_stream_thread_client_id(raw.client_id)
    standby = asg.standby_tasks if asg is not None else {}
    next_rebalance = asg.next_rebalance_ms if asg is not None else None
    return StreamsMemberInfo(
        process_id=sub.process_id if sub is not None else "",
        thread_index=thread.thread_index if thread else None,
        base_client_id=thread.base_client_id if thread else None,
        endpoint=sub.endpoint if sub is not None else None,
        subscription_version=sub.version if sub is not None else None,
        latest_supported_version=sub.latest_supported_version if sub is not None else None,
        assignment_version=asg.version if asg is not None else None,
        commonly_supported_version=asg.commonly_supported_version if asg is not None else None,
        active_tasks=tuple(
            StreamsTask(str(task), _refs(partitions))
            for task, partitions in sorted(decoded.active_tasks.items())
        ),
        standby_tasks=tuple(
            StreamsTask(str(task), _refs(partitions))
            for task, partitions in sorted(standby.items())
        ),
        task_offset_sums=tuple(
            TaskOffsetSum(str(task), offset)
            for task, offset in sorted((sub.task_offset_sums if sub is not None else {}).items())
        ),
        subscription_error_code=sub.error_code if sub is not None else None,
        assignment_error_code=asg.error_code if asg is not None else None,
        next_rebalance_ms=(
            None if next_rebalance in (None, _NO_REBALANCE_SCHEDULED) else next_rebalance
        ),
        client_tags=tuple(
            ClientTag(k, v) for k, v in sorted((sub.client_tags if sub is not None else {}).items())
        ),
    )


def _refs(
    partitions: "list[TopicPartition] | tuple[TopicPartition, ...]",
) -> tuple[TopicPartitionRef, ...]:
    return tuple(TopicPartitionRef(tp.topic, tp.partition) for tp in sorted(partitions))


__all__ = ["TaskId", "consumer_group_member_view", "member_view", "streams_group_member_view"]
