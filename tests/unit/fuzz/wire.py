"""Encoders for every format the decoders read: decoded value in, Kafka's bytes out.

Written from the layout tables of ``streams-internals.md`` (sections 0.1, 1-3
and 8), independently of the decoders; ``test_wire.py`` proves they write
byte for byte what Kafka's own encoders wrote into the test vectors. The fuzz
strategies build valid messages with them, then damage the bytes.
"""

import base64
import struct
import uuid
from collections.abc import Callable, Iterable, Sequence

from agent.streams.assignment_info import AssignmentInfo
from agent.streams.consumer_protocol import ConsumerAssignment, ConsumerSubscription
from agent.streams.offsets_topic import (
    GroupMember,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    StreamsCommitMetadata,
)
from agent.streams.subscription_info import SubscriptionInfo
from agent.streams.types import HostInfo, TaskId, TopicPartition
from tests.unit.streams.vectors import bytes32, i8, i16, i32, i64, string16

# --- primitives beyond vectors.py --------------------------------------------------------------


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def compact_string(text: str | None) -> bytes:
    if text is None:
        return uvarint(0)
    raw = text.encode()
    return uvarint(len(raw) + 1) + raw


def compact_bytes(raw: bytes | None) -> bytes:
    return uvarint(0) if raw is None else uvarint(len(raw) + 1) + raw


def tagged_fields(fields: Sequence[tuple[int, bytes]] = ()) -> bytes:
    return uvarint(len(fields)) + b"".join(
        uvarint(tag) + uvarint(len(data)) + data for tag, data in fields
    )


def modified_utf8(text: str) -> bytes:
    """``DataOutputStream.writeUTF``'s payload: NUL as C0 80, supplementary chars as CESU-8."""
    units = text.encode("utf-16-be", "surrogatepass")
    out = bytearray()
    for (unit,) in struct.iter_unpack(">H", units):
        if 0x0001 <= unit <= 0x007F:
            out.append(unit)
        elif unit <= 0x07FF:
            out += bytes([0xC0 | (unit >> 6), 0x80 | (unit & 0x3F)])
        else:
            out += bytes([0xE0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3F), 0x80 | (unit & 0x3F)])
    return bytes(out)


def write_utf(text: str) -> bytes:
    raw = modified_utf8(text)
    return struct.pack(">H", len(raw)) + raw


def write_chars(text: str) -> bytes:
    """``writeChars`` behind an int32 count of UTF-16 code units (AssignmentInfo v10+ TaskId)."""
    units = text.encode("utf-16-be", "surrogatepass")
    return i32(len(units) // 2) + units


def uuid_bytes(text: str) -> bytes:
    return uuid.UUID(text).bytes


def runs(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    """Consecutive partitions of one topic as one ``{Topic, Partitions[]}`` entry."""
    entries: list[tuple[str, list[int]]] = []
    for tp in partitions:
        if entries and entries[-1][0] == tp.topic:
            entries[-1][1].append(tp.partition)
        else:
            entries.append((tp.topic, [tp.partition]))
    return entries


def topic_partition_entries(partitions: Iterable[TopicPartition]) -> bytes:
    entries = runs(partitions)
    return i32(len(entries)) + b"".join(
        string16(topic) + i32(len(ps)) + b"".join(i32(p) for p in ps) for topic, ps in entries
    )


# --- consumer protocol (section 1) -------------------------------------------------------------


def consumer_subscription(sub: ConsumerSubscription, appended: bytes = b"") -> bytes:
    """``appended``: a newer version's fields after the v3 layout."""
    out = i16(sub.version) + i32(len(sub.topics)) + b"".join(string16(t) for t in sub.topics)
    out += bytes32(sub.user_data)
    if sub.version >= 1:
        out += topic_partition_entries(sub.owned_partitions)
    if sub.version >= 2:
        out += i32(sub.generation_id)
    if sub.version >= 3:
        out += string16(sub.rack_id)
    return out + appended


def consumer_assignment(asg: ConsumerAssignment, appended: bytes = b"") -> bytes:
    return (
        i16(asg.version)
        + topic_partition_entries(asg.partitions)
        + bytes32(asg.user_data)
        + appended
    )


# --- Streams SubscriptionInfo (section 2) ------------------------------------------------------


def _task_list(tasks: Sequence[TaskId]) -> bytes:
    return i32(len(tasks)) + b"".join(i32(t.subtopology) + i32(t.partition) for t in tasks)


def _offset_sums(info: SubscriptionInfo) -> bytes:
    """v7-9 grouped by subtopology; v10+ one entry per task with its named topology."""
    v = info.version
    if v <= 6:
        return b""
    if v <= 9:
        grouped: dict[int, list[tuple[int, int]]] = {}
        for task, total in info.task_offset_sums.items():
            grouped.setdefault(task.subtopology, []).append((task.partition, total))
        out = i32(len(grouped))
        for subtopology, sums in grouped.items():
            out += i32(subtopology) + i32(len(sums))
            out += b"".join(i32(p) + i64(s) for p, s in sums)
        return out
    out = i32(len(info.task_offset_sums))
    for task, total in info.task_offset_sums.items():
        out += i32(task.subtopology) + i32(task.partition) + i64(total)
        out += string16(task.named_topology)
    return out


def subscription_info(info: SubscriptionInfo, future_tail: bytes = b"") -> bytes:
    v = info.version
    if info.is_future_version:
        return i32(v) + i32(info.latest_supported_version) + future_tail
    out = i32(v)
    if v >= 3:
        out += i32(info.latest_supported_version)
    out += uuid_bytes(info.process_id)
    if v <= 6:
        out += _task_list(info.prev_tasks) + _task_list(info.standby_tasks)
    if v >= 2:
        out += bytes32((info.endpoint or "").encode())
    out += _offset_sums(info)
    if v >= 8 and info.unique_field is not None:
        out += i8(info.unique_field)
    if v >= 9 and info.error_code is not None:
        out += i32(info.error_code)
    if v >= 11:
        out += i32(len(info.client_tags))
        for key, value in info.client_tags.items():
            out += bytes32(key.encode()) + bytes32(value.encode())
    return out


# --- Streams AssignmentInfo (section 3) --------------------------------------------------------


def _task_id(task: TaskId, version: int) -> bytes:
    out = i32(task.subtopology) + i32(task.partition)
    if version >= 10:
        out += write_chars(task.named_topology or "")
    return out


def _plain_partitions(partitions: Sequence[TopicPartition]) -> bytes:
    return i32(len(partitions)) + b"".join(
        write_utf(tp.topic) + i32(tp.partition) for tp in partitions
    )


def _host_map(
    hosts: dict[HostInfo, list[TopicPartition]], index_of: dict[str, int] | None
) -> bytes:
    out = i32(len(hosts))
    for host, partitions in hosts.items():
        out += write_utf(host.host) + i32(host.port)
        if index_of is None:
            out += _plain_partitions(partitions)
        else:
            out += i32(len(partitions))
            out += b"".join(i32(index_of[tp.topic]) + i32(tp.partition) for tp in partitions)
    return out


def assignment_info(info: AssignmentInfo) -> bytes:
    v = info.version
    out = i32(v)
    if v >= 3:
        out += i32(info.commonly_supported_version)
    out += i32(len(info.active_tasks)) + b"".join(_task_id(t, v) for t in info.active_tasks)
    out += i32(len(info.standby_tasks))
    for task, partitions in info.standby_tasks.items():
        out += _task_id(task, v) + _plain_partitions(partitions)
    if v >= 5:
        # Written in the dictionary's own order (Kafka: HashMap order), read by index.
        out += i32(len(info.topic_dictionary))
        out += b"".join(
            i32(index) + write_utf(topic) for index, topic in info.topic_dictionary.items()
        )
        index_of = {topic: index for index, topic in info.topic_dictionary.items()}
        out += _host_map(info.partitions_by_host, index_of)
        if v >= 6:
            out += _host_map(info.standby_partitions_by_host, index_of)
    elif v >= 2:
        out += _host_map(info.partitions_by_host, None)
    if v >= 4:
        out += i32(info.error_code)
    if v >= 7:
        out += i64(info.next_rebalance_ms)
    return out


# --- __consumer_offsets (section 8) ------------------------------------------------------------


def offsets_key(key: OffsetCommitKey | GroupMetadataKey) -> bytes:
    if isinstance(key, GroupMetadataKey):
        return i16(2) + string16(key.group)
    return i16(key.record_type) + string16(key.group) + string16(key.topic) + i32(key.partition)


def offset_commit_value(
    value: OffsetCommitValue, extra_tags: Sequence[tuple[int, bytes]] = ()
) -> bytes:
    v = value.version
    out = i16(v) + i64(value.offset)
    if v >= 3:
        out += i32(value.leader_epoch if value.leader_epoch is not None else -1)
    out += compact_string(value.metadata) if v >= 4 else string16(value.metadata)
    out += i64(value.commit_timestamp)
    if v == 1:
        out += i64(value.expire_timestamp if value.expire_timestamp is not None else -1)
    if v >= 4:
        tags = list(extra_tags)
        if value.topic_id is not None:
            padded = value.topic_id + "=" * (-len(value.topic_id) % 4)
            tags.insert(0, (0, base64.urlsafe_b64decode(padded)))
        out += tagged_fields(sorted(tags))
    return out


def group_metadata_value(value: GroupMetadataValue) -> bytes:
    v = value.version
    flexible = v >= 4
    string = compact_string if flexible else string16
    blob = compact_bytes if flexible else bytes32
    out = i16(v) + string(value.protocol_type) + i32(value.generation)
    out += string(value.protocol) + string(value.leader)
    if v >= 2:
        out += i64(
            value.current_state_timestamp if value.current_state_timestamp is not None else -1
        )
    count = len(value.members)
    out += uvarint(count + 1) if flexible else i32(count)
    for m in value.members:
        out += _member(m, v, string, blob)
    if flexible:
        out += tagged_fields()
    return out


def _member(
    m: GroupMember,
    v: int,
    string: Callable[[str | None], bytes],
    blob: Callable[[bytes | None], bytes],
) -> bytes:
    out = string(m.member_id)
    if v >= 3:
        out += string(m.group_instance_id)
    out += string(m.client_id) + string(m.client_host)
    if v >= 1:
        out += i32(m.rebalance_timeout_ms if m.rebalance_timeout_ms is not None else -1)
    out += i32(m.session_timeout_ms) + blob(m.subscription) + blob(m.assignment)
    if v >= 4:
        out += tagged_fields()
    return out


def streams_commit_metadata(meta: StreamsCommitMetadata, *, padded: bool = True) -> str:
    raw = i8(meta.magic) + i64(meta.partition_time)
    if meta.magic == 2 and meta.processor_metadata:
        raw += i32(len(meta.processor_metadata))
        for key, value in meta.processor_metadata.items():
            raw += bytes32(key.encode()) + i64(value)
    text = base64.b64encode(raw).decode()
    return text if padded else text.rstrip("=")
