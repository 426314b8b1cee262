"""Kafka Streams' AssignmentInfo, versions 1-11: the userData of a Streams member's SyncGroup.

Reads the bytes Streams' hand-written ``AssignmentInfo.encode()`` writes with
``java.io.DataOutputStream`` (big-endian, no int16 prefix, first field the int32
version). Layout per version: ``streams-internals.md`` section 3; TaskId wire
forms in section 4.

The active task list has one entry per assigned partition, in the order of the
member's partitions sorted by (topic, partition); ``active_tasks_by_partition``
does the zip Streams itself does to map tasks to partitions.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, cast

from agent.streams.codec import INT64_MAX, DecodeError, MalformedError, Reader, run_decoder
from agent.streams.types import HostInfo, TaskId, TopicPartition, topic_partitions

LATEST_SUPPORTED_VERSION: Final = 11
UNKNOWN_VERSION: Final = -1  # commonlySupportedVersion of v1-2, which do not carry it
NO_REBALANCE_SCHEDULED: Final = INT64_MAX  # nextRebalanceMs: Long.MAX_VALUE

_COMMONLY_SUPPORTED_SINCE: Final = 3
_PLAIN_HOST_MAP_SINCE: Final = 2
_ERROR_CODE_SINCE: Final = 4
_TOPIC_DICTIONARY_SINCE: Final = 5
_STANDBY_HOST_MAP_SINCE: Final = 6
_NEXT_REBALANCE_SINCE: Final = 7
_NAMED_TOPOLOGY_SINCE: Final = 10

_MIN_WRITE_UTF: Final = 2  # an empty writeUTF string is just its length
_MIN_PLAIN_PARTITION: Final = _MIN_WRITE_UTF + 4
_MIN_HOST_ENTRY: Final = _MIN_WRITE_UTF + 4 + 4  # host, port, partition count


@dataclass(frozen=True, slots=True)
class AssignmentInfo:
    """One Streams member's assignment userData.

    Warm-up replicas are encoded as standby tasks and cannot be told apart.
    ``partitions_by_host`` / ``standby_partitions_by_host`` are the group-wide
    maps of every client with an ``application.server``, copied to every member.
    """

    version: int
    commonly_supported_version: int  # v3+, -1 before
    active_tasks: list[TaskId]  # one per assigned partition, see active_tasks_by_partition
    standby_tasks: dict[TaskId, list[TopicPartition]]  # the tasks' source partitions
    partitions_by_host: dict[HostInfo, list[TopicPartition]]  # v2+
    standby_partitions_by_host: dict[HostInfo, list[TopicPartition]]  # v6+
    error_code: int  # v4+, an AssignorError code; 0 (NONE) before, as Kafka reads it
    next_rebalance_ms: int  # v7+; Long.MAX (none scheduled) before, as Kafka reads it
    topic_dictionary: dict[int, str]  # v5+, index -> topic of the host maps

    @property
    def rebalance_scheduled(self) -> bool:
        """True when the leader asked for a follow-up or probing rebalance."""
        return self.next_rebalance_ms != NO_REBALANCE_SCHEDULED


def decode_assignment_info(data: bytes) -> AssignmentInfo | DecodeError:
    """Decode Streams assignment userData (the consumer protocol's ``user_data``)."""
    return run_decoder("AssignmentInfo", data, _read)


def active_tasks_by_partition(
    assigned: Sequence[TopicPartition], info: AssignmentInfo
) -> dict[TaskId, list[TopicPartition]] | DecodeError:
    """Each active task's input partitions, by the zip Streams does in ``onAssignment``.

    ``assigned`` is the member's consumer-protocol assignment in any order; it is
    sorted by (topic, partition) and paired with ``info.active_tasks`` entry by entry.
    """
    ordered = sorted(assigned)
    if len(ordered) != len(info.active_tasks):
        return DecodeError(
            "ActiveTaskPartitions",
            f"{len(ordered)} assigned partitions but {len(info.active_tasks)} active task entries",
            version=info.version,
        )
    tasks: dict[TaskId, list[TopicPartition]] = {}
    for partition, task in zip(ordered, info.active_tasks, strict=True):
        tasks.setdefault(task, []).append(partition)
    return tasks


def _read(r: Reader) -> AssignmentInfo:
    version = r.int32()
    r.version = version
    # Unlike SubscriptionInfo there is no "future version" reading: Kafka's
    # decoder throws for anything outside 1-11, and the leader never writes a
    # version newer than the oldest member's subscription.
    if not 1 <= version <= LATEST_SUPPORTED_VERSION:
        raise MalformedError(f"unknown version {version}", 0)
    commonly_supported = r.int32() if version >= _COMMONLY_SUPPORTED_SINCE else UNKNOWN_VERSION
    named = version >= _NAMED_TOPOLOGY_SINCE
    active = _task_ids(r, named)
    standby: dict[TaskId, list[TopicPartition]] = {}
    for _ in range(r.count(_task_id_size(named) + 4)):
        task = _task_id(r, named)
        # Standby entries always name topics in full, even where a dictionary exists.
        standby[task] = _plain_partitions(r)

    dictionary: dict[int, str] = {}
    by_host: dict[HostInfo, list[TopicPartition]] = {}
    standby_by_host: dict[HostInfo, list[TopicPartition]] = {}
    if version >= _TOPIC_DICTIONARY_SINCE:
        dictionary = _topic_dictionary(r)
        by_host = _host_map(r, lambda: _indexed_partitions(r, dictionary))
        if version >= _STANDBY_HOST_MAP_SINCE:
            standby_by_host = _host_map(r, lambda: _indexed_partitions(r, dictionary))
    elif version >= _PLAIN_HOST_MAP_SINCE:
        by_host = _host_map(r, lambda: _plain_partitions(r))

    error_code = r.int32() if version >= _ERROR_CODE_SINCE else 0
    next_rebalance = r.int64() if version >= _NEXT_REBALANCE_SINCE else NO_REBALANCE_SCHEDULED
    # Kafka's DataInputStream reader stops after the last field it knows and
    # never looks further; for a version we read completely, leftovers mean
    # corrupt or misidentified bytes, so they are an error here.
    r.expect_end()
    return AssignmentInfo(
        version,
        commonly_supported,
        active,
        standby,
        by_host,
        standby_by_host,
        error_code,
        next_rebalance,
        dictionary,
    )


def _task_id_size(named: bool) -> int:
    return 12 if named else 8


def _task_ids(r: Reader, named: bool) -> list[TaskId]:
    count = r.count(_task_id_size(named))
    if not named:
        flat = r.int32s(2 * count)
        return [TaskId(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]
    return [_task_id(r, named) for _ in range(count)]


def _task_id(r: Reader, named: bool) -> TaskId:
    subtopology = r.int32()
    partition = r.int32()
    if not named:
        return TaskId(subtopology, partition)
    # v10+: writeChars of the topology name behind an int32 char count; "no
    # name" is written as 0 chars. Kafka's reader would take a negative count as
    # 0, but no encoder writes one, so it is refused as corruption.
    chars = r.int32()
    return TaskId(subtopology, partition, r.java_chars(chars) if chars else None)


def _plain_partitions(r: Reader) -> list[TopicPartition]:
    """``int32 n`` then n x (writeUTF topic, int32 partition)."""
    partitions = []
    for _ in range(r.count(_MIN_PLAIN_PARTITION)):
        topic = r.java_utf()
        partitions.append(TopicPartition(topic, r.int32()))
    return partitions


def _topic_dictionary(r: Reader) -> dict[int, str]:
    # Entries come in HashMap order, not index order, so the index is the key.
    dictionary: dict[int, str] = {}
    for _ in range(r.count(4 + _MIN_WRITE_UTF)):
        index = r.int32()
        dictionary[index] = r.java_utf()
    return dictionary


def _indexed_partitions(r: Reader, dictionary: dict[int, str]) -> list[TopicPartition]:
    """``int32 n`` then n x (int32 topic index, int32 partition)."""
    flat = r.int32s(2 * r.count(8))
    # The group-wide host maps hold every partition of the app once per member,
    # so this runs over slices instead of a per-partition loop.
    topics = [dictionary.get(index) for index in flat[0::2]]
    if None in topics:
        missing = flat[2 * topics.index(None)]
        raise r.fail(f"topic index {missing} is not in the topic dictionary")
    return topic_partitions(cast(list[str], topics), flat[1::2])


def _host_map(
    r: Reader, read_partitions: Callable[[], list[TopicPartition]]
) -> dict[HostInfo, list[TopicPartition]]:
    hosts: dict[HostInfo, list[TopicPartition]] = {}
    for _ in range(r.count(_MIN_HOST_ENTRY)):
        host = HostInfo(r.java_utf(), r.int32())
        hosts[host] = read_partitions()
    return hosts
