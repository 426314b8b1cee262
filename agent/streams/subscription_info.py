"""Kafka Streams' SubscriptionInfo, versions 1-11: the userData of a Streams member's JoinGroup.

Reads the bytes ``SubscriptionInfo.encode()`` writes (the generated
``SubscriptionInfoData`` message, no int16 prefix: the first field is the int32
version). Layout per version: ``streams-internals.md`` section 2.

A version above 11 is a newer member probing for a newer protocol; as Kafka's
own decoder does, only its version and latestSupportedVersion are read.

>>> info = decode_subscription_info(bytes.fromhex(
...     "00000002" "00112233445566778899aabbccddeeff" "00000001" "0000000000000000"
...     "00000000" "00000003" "683a31"))
>>> info.process_id, info.endpoint, {str(t): s for t, s in info.task_offset_sums.items()}
('00112233-4455-6677-8899-aabbccddeeff', 'h:1', {'0_0': -2})
"""

import struct
from dataclasses import dataclass, field
from typing import Final

from agent.streams.codec import DecodeError, MalformedError, Reader, decode_utf8, run_decoder
from agent.streams.types import TaskId

LATEST_SUPPORTED_VERSION: Final = 11
UNKNOWN_VERSION: Final = -1  # latestSupportedVersion of v1-2, which do not carry it
LATEST_OFFSET: Final = -2  # Task.LATEST_OFFSET: the task runs as an active task on this client
UNKNOWN_OFFSET_SUM: Final = -3  # what a v1-6 standby task's offset sum is taken to be

_LATEST_SUPPORTED_SINCE: Final = 3
_ENDPOINT_SINCE: Final = 2
_LAST_TASK_LIST_VERSION: Final = 6  # prevTasks/standbyTasks; offset sums from 7
_PER_TASK_SUMS_SINCE: Final = 10  # one flat entry per task, with a named topology
_UNIQUE_FIELD_SINCE: Final = 8
_ERROR_CODE_SINCE: Final = 9
_CLIENT_TAGS_SINCE: Final = 11

_PARTITION_SUM: Final = struct.Struct(">iq")  # v7-9 {partition, offsetSum}
_TASK_SUM: Final = struct.Struct(">iiq")  # v10+ {topicGroupId, partition, offsetSum}
_TASK_SUM_MIN_SIZE: Final = _TASK_SUM.size + 2  # + the namedTopology string length


@dataclass(frozen=True, slots=True)
class SubscriptionInfo:
    """One Streams member's subscription userData.

    ``task_offset_sums`` maps every task with local state to the sum of its
    changelog offsets; -2 marks a task running active on this client. For v1-6,
    which only list task ids, it is built the way Kafka does: previous active
    tasks -2, standby tasks -3 (``prev_tasks`` / ``standby_tasks`` keep the
    lists themselves). For a future version (``is_future_version``) only the
    two versions are known and every other field is empty.
    """

    version: int
    latest_supported_version: int  # -1 for v1-2
    process_id: str  # canonical UUID text; "" for a future version
    endpoint: str | None  # application.server "host:port"; None when unset (v1: never sent)
    task_offset_sums: dict[TaskId, int]
    unique_field: int | None  # v8+
    error_code: int | None  # v9+, an AssignorError code (4 = shutdown requested)
    client_tags: dict[str, str]  # v11+, client.tag.*
    prev_tasks: tuple[TaskId, ...] = field(default=())  # v1-6 wire list
    standby_tasks: tuple[TaskId, ...] = field(default=())  # v1-6 wire list

    @property
    def is_future_version(self) -> bool:
        return self.version > LATEST_SUPPORTED_VERSION

    @property
    def active_tasks(self) -> list[TaskId]:
        """Tasks this client runs as active, as the assignor reads them (sum == -2)."""
        return [task for task, total in self.task_offset_sums.items() if total == LATEST_OFFSET]


def decode_subscription_info(data: bytes) -> SubscriptionInfo | DecodeError:
    """Decode Streams subscription userData (the consumer protocol's ``user_data``)."""
    return run_decoder("SubscriptionInfo", data, _read)


def _read(r: Reader) -> SubscriptionInfo:
    version = r.int32()
    r.version = version
    if version > LATEST_SUPPORTED_VERSION:
        latest = r.int32()
        _check_versions(version, latest)
        return SubscriptionInfo(version, latest, "", None, {}, None, None, {})
    if version < 1:
        raise MalformedError(f"unknown version {version}", 0)
    latest = r.int32() if version >= _LATEST_SUPPORTED_SINCE else UNKNOWN_VERSION
    if version >= _LATEST_SUPPORTED_SINCE:
        _check_versions(version, latest)
    process_id = r.uuid()

    prev_tasks: tuple[TaskId, ...] = ()
    standby_tasks: tuple[TaskId, ...] = ()
    sums: dict[TaskId, int] = {}
    if version <= _LAST_TASK_LIST_VERSION:
        prev_tasks = _task_list(r)
        standby_tasks = _task_list(r)
        # Kafka fills the map from prevTasks first, then standbyTasks, so a task
        # in both lists ends up with the standby value.
        sums = dict.fromkeys(prev_tasks, LATEST_OFFSET)
        sums.update(dict.fromkeys(standby_tasks, UNKNOWN_OFFSET_SUM))

    endpoint = _endpoint(r.bytes_()) if version >= _ENDPOINT_SINCE else None
    if version >= _PER_TASK_SUMS_SINCE:
        sums = _per_task_sums(r)
    elif version > _LAST_TASK_LIST_VERSION:
        sums = _grouped_sums(r)
    unique_field = r.int8() if version >= _UNIQUE_FIELD_SINCE else None
    error_code = r.int32() if version >= _ERROR_CODE_SINCE else None
    tags = _client_tags(r) if version >= _CLIENT_TAGS_SINCE else {}
    # Kafka's generated reader would ignore leftovers; for a version whose every
    # field we read, they can only mean corrupt or misidentified bytes.
    r.expect_end()
    return SubscriptionInfo(
        version,
        latest,
        process_id,
        endpoint,
        sums,
        unique_field,
        error_code,
        tags,
        prev_tasks,
        standby_tasks,
    )


def _check_versions(version: int, latest: int) -> None:
    # Kafka's SubscriptionInfo refuses these too (validateVersions): a member
    # cannot use a version newer than the newest it says it supports.
    if latest < version:
        raise MalformedError(f"latestSupportedVersion {latest} is below version {version}", 4)


def _task_list(r: Reader) -> tuple[TaskId, ...]:
    """v1-6 ``[]TaskId{int32 topicGroupId, int32 partition}``."""
    flat = r.int32s(2 * r.count(8))
    return tuple(TaskId(flat[i], flat[i + 1]) for i in range(0, len(flat), 2))


def _endpoint(raw: bytes) -> str | None:
    # An unset application.server is written as zero bytes, and Kafka reads it as null.
    return decode_utf8(raw) if raw else None


def _grouped_sums(r: Reader) -> dict[TaskId, int]:
    """v7-9: per subtopology, a list of {partition, offsetSum}."""
    sums: dict[TaskId, int] = {}
    for _ in range(r.count(8)):
        subtopology = r.int32()
        for partition, total in r.unpack_many(_PARTITION_SUM, r.count(_PARTITION_SUM.size)):
            sums[TaskId(subtopology, partition)] = total
    return sums


def _per_task_sums(r: Reader) -> dict[TaskId, int]:
    """v10+: one {topicGroupId, partition, offsetSum, namedTopology} per task."""
    sums: dict[TaskId, int] = {}
    for _ in range(r.count(_TASK_SUM_MIN_SIZE)):
        subtopology, partition, total = r.unpack(_TASK_SUM)
        sums[TaskId(subtopology, partition, r.nullable_string())] = total
    return sums


def _client_tags(r: Reader) -> dict[str, str]:
    tags: dict[str, str] = {}
    for _ in range(r.count(8)):
        key = decode_utf8(r.bytes_())
        tags[key] = decode_utf8(r.bytes_())
    return tags
