"""Hand-made snapshots for the detector tests: a few lines per poll of a group.

Every builder returns the model's own records (``agent.model.snapshot``), so
the tests feed the job exactly what an agent would ship, JSON included.
"""

from collections.abc import Iterable, Mapping, Sequence

from agent.model import (
    SCHEMA_VERSION,
    AgentInfo,
    ClusterFacts,
    GroupInfo,
    MemberInfo,
    PartitionInfo,
    PollInfo,
    RebalanceEvent,
    SidecarInfo,
    Snapshot,
    StreamsMemberInfo,
    StreamsTask,
    TaskOffsetSum,
    TopicInfo,
    TopicPartitionRef,
)

CLUSTER = "test"
AGENT = "agent-1"

Tasks = Mapping[str, Sequence[tuple[str, int]]]


def streams_member(
    process: str,
    thread: int = 1,
    tasks: Tasks | None = None,
    *,
    member_id: str | None = None,
    standby: Sequence[str] = (),
    offset_sums: Mapping[str, int] | None = None,
    next_rebalance_ms: int | None = None,
    instance_id: str | None = None,
    host: str = "/10.0.0.1",
    subscription_bytes: int = 100,
    assignment_bytes: int = 100,
    app: str = "app",
    member_epoch: int | None = None,
) -> MemberInfo:
    """A Kafka Streams stream thread's member; ``tasks``: task -> its source partitions."""
    tasks = tasks or {}
    client = f"{app}-{process}-StreamThread-{thread}-consumer"
    return MemberInfo(
        member_id=member_id or f"{client}-{process}{thread}",
        client_id=client,
        client_host=host,
        group_instance_id=instance_id,
        assigned_partitions=tuple(
            TopicPartitionRef(topic, p) for parts in tasks.values() for topic, p in parts
        ),
        subscription_bytes=subscription_bytes,
        assignment_bytes=assignment_bytes,
        member_epoch=member_epoch,
        streams=StreamsMemberInfo(
            process_id=process,
            thread_index=thread,
            base_client_id=f"{app}-{process}",
            active_tasks=tuple(
                StreamsTask(task, tuple(TopicPartitionRef(t, p) for t, p in parts))
                for task, parts in tasks.items()
            ),
            standby_tasks=tuple(StreamsTask(task) for task in standby),
            task_offset_sums=tuple(
                TaskOffsetSum(task, total) for task, total in (offset_sums or {}).items()
            ),
            next_rebalance_ms=next_rebalance_ms,
        ),
    )


def plain_member(
    client_id: str, partitions: Sequence[tuple[str, int]], member_id: str = ""
) -> MemberInfo:
    return MemberInfo(
        member_id=member_id or f"{client_id}-m",
        client_id=client_id,
        client_host="/10.0.0.2",
        assigned_partitions=tuple(TopicPartitionRef(t, p) for t, p in partitions),
    )


def partition(
    topic: str, number: int, end: int, committed: int | None = None, owner: str | None = None
) -> PartitionInfo:
    committed = end if committed is None else committed
    return PartitionInfo(
        topic=topic,
        partition=number,
        log_end_offset=end,
        log_start_offset=0,
        committed_offset=committed,
        lag=max(0, end - committed),
        owner_member_id=owner,
    )


def changelog(topic: str, ends: Sequence[int], size_bytes: int | None = None) -> TopicInfo:
    return TopicInfo(
        name=topic,
        partitions=len(ends),
        internal_kind="changelog",
        size_bytes=size_bytes,
        log_end_offsets=tuple(ends),
    )


def snapshot(
    group: str,
    t: float,
    *,
    members: Iterable[MemberInfo] = (),
    partitions: Iterable[PartitionInfo] = (),
    topics: Iterable[TopicInfo] = (),
    state: str = "Stable",
    streams: bool = True,
    generation: int | None = None,
    group_epoch: int | None = None,
    rebalances: Iterable[RebalanceEvent] = (),
    sidecar: SidecarInfo | None = None,
    max_message_bytes: int | None = 1_048_588,
    agent: str = AGENT,
    cluster: str = CLUSTER,
    sequence: int = 0,
) -> Snapshot:
    return Snapshot(
        schema_version=SCHEMA_VERSION,
        cluster=cluster,
        agent=AgentInfo(agent, "0.1.0", "sidecar" if sidecar is not None else "central"),
        poll=PollInfo(sequence or int(t), float(t), 0.1),
        # A group epoch makes it a KIP-1071 streams group (the broker assigns).
        group=GroupInfo(
            group_id=group,
            group_type="classic" if group_epoch is None else "streams",
            state=state,
            protocol_type="consumer" if group_epoch is None else "streams",
            protocol=("stream" if streams else "range") if group_epoch is None else None,
            is_streams=streams,
            generation=generation,
            group_epoch=group_epoch,
        ),
        members=tuple(members),
        partitions=tuple(partitions),
        topics=tuple(topics),
        cluster_facts=ClusterFacts(offsets_topic_max_message_bytes=max_message_bytes),
        rebalances=tuple(rebalances),
        sidecar=sidecar,
    )
