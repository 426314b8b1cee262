"""Hypothesis strategies for valid messages of every format: the value, and its bytes.

Each strategy draws a decoded value field by field, over every version of its
format, with the corner values that matter (nulls, empty lists, negative and
extreme integers, NUL and supplementary characters where the format allows
them), and encodes it with ``wire``. A test then checks the decoder gives the
value back, or damages the bytes and checks it never raises.
"""

import base64
import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any, Union

from hypothesis import strategies as st

from agent.model import SCHEMA_VERSION, Snapshot
from agent.streams.assignment_info import NO_REBALANCE_SCHEDULED, AssignmentInfo
from agent.streams.checkpoint import OFFSET_UNKNOWN, ChangelogOffset, CheckpointFile
from agent.streams.consumer_protocol import ConsumerAssignment, ConsumerSubscription
from agent.streams.offsets_topic import (
    GroupMember,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    OtherRecordKey,
    StreamsCommitMetadata,
)
from agent.streams.subscription_info import (
    LATEST_OFFSET,
    UNKNOWN_OFFSET_SUM,
    UNKNOWN_VERSION,
    SubscriptionInfo,
)
from agent.streams.types import HostInfo, TaskId, TopicPartition
from tests.unit.fuzz import wire
from tests.unit.streams.vectors import i16

INT8 = st.integers(-(2**7), 2**7 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
# Small values most of the time (counts, partitions), the extremes some of the time.
SMALL_OR_EXTREME_INT32 = st.integers(0, 64) | st.sampled_from([-1, 2**31 - 1, -(2**31)]) | INT32
OFFSET_SUM = st.sampled_from([LATEST_OFFSET, UNKNOWN_OFFSET_SUM, 0, 2**63 - 1]) | INT64

# Generated-message strings are UTF-8: any text without lone surrogates round-trips.
TEXT = st.text(max_size=12)
# DataOutputStream strings: NUL (C0 80) and supplementary characters (CESU-8) are the hard part.
JAVA_TEXT = st.text(
    alphabet=st.characters(codec="utf-8") | st.sampled_from("\x00\U0001f600é"), max_size=10
)
NON_EMPTY_TEXT = st.text(min_size=1, max_size=12)
SMALL_BYTES = st.binary(max_size=24)
PROCESS_ID = st.uuids().map(str)


@dataclass(frozen=True)
class Example:
    """A valid input and what decoding it must give."""

    data: Any  # bytes, or str for the text formats
    expected: object


# --- consumer protocol -------------------------------------------------------------------------


def topic_partition_lists(
    topics: st.SearchStrategy[str] = TEXT,
) -> st.SearchStrategy[list[TopicPartition]]:
    return st.lists(st.builds(TopicPartition, topics, SMALL_OR_EXTREME_INT32), max_size=6)


@st.composite
def consumer_subscriptions(draw: st.DrawFn) -> Example:
    version = draw(st.integers(0, 3) | st.integers(4, 2**15 - 1))
    layout = min(version, 3)
    sub = ConsumerSubscription(
        version=version,
        topics=draw(st.lists(TEXT, max_size=5)),
        user_data=draw(st.none() | SMALL_BYTES),
        owned_partitions=draw(topic_partition_lists()) if layout >= 1 else [],
        generation_id=draw(INT32) if layout >= 2 else -1,
        rack_id=draw(st.none() | TEXT) if layout >= 3 else None,
    )
    # A newer version appends fields the reader does not know and skips.
    appended = draw(SMALL_BYTES) if version > layout else b""
    return Example(wire.consumer_subscription(sub, appended), sub)


@st.composite
def consumer_assignments(draw: st.DrawFn) -> Example:
    version = draw(st.integers(0, 3) | st.integers(4, 2**15 - 1))
    asg = ConsumerAssignment(version, draw(topic_partition_lists()), draw(st.none() | SMALL_BYTES))
    appended = draw(SMALL_BYTES) if version > 3 else b""
    return Example(wire.consumer_assignment(asg, appended), asg)


# --- Streams userData --------------------------------------------------------------------------

PLAIN_TASK = st.builds(TaskId, SMALL_OR_EXTREME_INT32, SMALL_OR_EXTREME_INT32)


@st.composite
def subscription_infos(draw: st.DrawFn) -> Example:
    version = draw(st.integers(1, 11) | st.integers(12, 2**31 - 1))
    if version > 11:
        latest = draw(st.integers(version, 2**31 - 1))
        info = SubscriptionInfo(version, latest, "", None, {}, None, None, {})
        return Example(wire.subscription_info(info, draw(SMALL_BYTES)), info)
    latest = draw(st.integers(version, 2**31 - 1)) if version >= 3 else UNKNOWN_VERSION
    prev: tuple[TaskId, ...] = ()
    standby: tuple[TaskId, ...] = ()
    if version <= 6:
        prev = tuple(draw(st.lists(PLAIN_TASK, max_size=5)))
        standby = tuple(draw(st.lists(PLAIN_TASK, max_size=5)))
        sums = dict.fromkeys(prev, LATEST_OFFSET)
        sums.update(dict.fromkeys(standby, UNKNOWN_OFFSET_SUM))
    elif version <= 9:
        sums = draw(st.dictionaries(PLAIN_TASK, OFFSET_SUM, max_size=6))
    else:
        named = st.builds(TaskId, SMALL_OR_EXTREME_INT32, SMALL_OR_EXTREME_INT32, st.none() | TEXT)
        sums = draw(st.dictionaries(named, OFFSET_SUM, max_size=6))
    info = SubscriptionInfo(
        version=version,
        latest_supported_version=latest,
        process_id=draw(PROCESS_ID),
        endpoint=draw(st.none() | NON_EMPTY_TEXT) if version >= 2 else None,
        task_offset_sums=sums,
        unique_field=draw(INT8) if version >= 8 else None,
        error_code=draw(INT32) if version >= 9 else None,
        client_tags=draw(st.dictionaries(TEXT, TEXT, max_size=3)) if version >= 11 else {},
        prev_tasks=prev,
        standby_tasks=standby,
    )
    return Example(wire.subscription_info(info), info)


@st.composite
def assignment_infos(draw: st.DrawFn) -> Example:
    version = draw(st.integers(1, 11))
    task = (
        st.builds(TaskId, SMALL_OR_EXTREME_INT32, SMALL_OR_EXTREME_INT32, st.none() | JAVA_TEXT)
        if version >= 10
        else PLAIN_TASK
    )
    host = st.builds(HostInfo, JAVA_TEXT, INT32)
    plain = topic_partition_lists(JAVA_TEXT)
    dictionary: dict[int, str] = {}
    by_host: dict[HostInfo, list[TopicPartition]] = {}
    standby_by_host: dict[HostInfo, list[TopicPartition]] = {}
    if version >= 5:
        topics = draw(st.lists(JAVA_TEXT, unique=True, max_size=4))
        indexes = draw(st.lists(INT32, unique=True, min_size=len(topics), max_size=len(topics)))
        dictionary = dict(zip(indexes, topics, strict=True))
        indexed = topic_partition_lists(st.sampled_from(topics)) if topics else st.just([])
        by_host = draw(st.dictionaries(host, indexed, max_size=3))
        if version >= 6:
            standby_by_host = draw(st.dictionaries(host, indexed, max_size=3))
    elif version >= 2:
        by_host = draw(st.dictionaries(host, plain, max_size=3))
    info = AssignmentInfo(
        version=version,
        commonly_supported_version=draw(INT32) if version >= 3 else -1,
        active_tasks=draw(st.lists(task, max_size=6)),
        standby_tasks=draw(st.dictionaries(task, plain, max_size=4)),
        partitions_by_host=by_host,
        standby_partitions_by_host=standby_by_host,
        error_code=draw(INT32) if version >= 4 else 0,
        next_rebalance_ms=draw(INT64) if version >= 7 else NO_REBALANCE_SCHEDULED,
        topic_dictionary=dictionary,
    )
    return Example(wire.assignment_info(info), info)


# --- __consumer_offsets ------------------------------------------------------------------------


@st.composite
def offsets_keys(draw: st.DrawFn) -> Example:
    kind = draw(st.sampled_from(["commit", "group", "other"]))
    if kind == "commit":
        key = OffsetCommitKey(draw(st.sampled_from([0, 1])), draw(TEXT), draw(TEXT), draw(INT32))
        return Example(wire.offsets_key(key), key)
    if kind == "group":
        group_key = GroupMetadataKey(draw(TEXT))
        return Example(wire.offsets_key(group_key), group_key)
    record_type = draw(st.integers(-(2**15), 2**15 - 1).filter(lambda t: t not in (0, 1, 2)))
    return Example(i16(record_type) + draw(SMALL_BYTES), OtherRecordKey(record_type))


TOPIC_ID = st.binary(min_size=16, max_size=16).map(
    lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
)


@st.composite
def offset_commit_values(draw: st.DrawFn) -> Example:
    version = draw(st.integers(0, 4))
    value = OffsetCommitValue(
        version=version,
        offset=draw(INT64),
        leader_epoch=draw(INT32) if version >= 3 else None,
        metadata=draw(TEXT),
        commit_timestamp=draw(INT64),
        expire_timestamp=draw(INT64) if version == 1 else None,
        topic_id=draw(st.none() | TOPIC_ID) if version >= 4 else None,
    )
    unknown_tags = draw(st.dictionaries(st.integers(1, 300), SMALL_BYTES, max_size=2))
    extra = sorted(unknown_tags.items()) if version >= 4 else []
    return Example(wire.offset_commit_value(value, extra), value)


@st.composite
def group_metadata_values(draw: st.DrawFn) -> Example:
    version = draw(st.integers(0, 4))
    member = st.builds(
        GroupMember,
        member_id=TEXT,
        group_instance_id=(st.none() | TEXT) if version >= 3 else st.none(),
        client_id=TEXT,
        client_host=TEXT,
        rebalance_timeout_ms=INT32 if version >= 1 else st.none(),
        session_timeout_ms=INT32,
        subscription=SMALL_BYTES,
        assignment=SMALL_BYTES,
    )
    value = GroupMetadataValue(
        version=version,
        protocol_type=draw(TEXT),
        generation=draw(INT32),
        protocol=draw(st.none() | TEXT),
        leader=draw(st.none() | TEXT),
        current_state_timestamp=draw(INT64) if version >= 2 else None,
        members=draw(st.lists(member, max_size=3)),
    )
    return Example(wire.group_metadata_value(value), value)


@st.composite
def streams_commit_metadata(draw: st.DrawFn) -> Example:
    magic = draw(st.sampled_from([1, 2]))
    processor = draw(st.dictionaries(TEXT, INT64, max_size=3)) if magic == 2 else {}
    meta = StreamsCommitMetadata(magic, draw(INT64), processor)
    # Java's Base64 decoder takes the text with or without its padding.
    return Example(wire.streams_commit_metadata(meta, padded=draw(st.booleans())), meta)


# --- snapshots ---------------------------------------------------------------------------------


def values_of(kind: Any) -> st.SearchStrategy[Any]:
    """Every value a field of the snapshot model may hold, walking its type hints.

    Generic on purpose: a field added to the model is fuzzed without touching
    this file. Floats are finite, as ``to_json`` writes them.
    """
    origin = typing.get_origin(kind)
    if origin in (Union, types.UnionType):
        return st.one_of([values_of(option) for option in typing.get_args(kind)])
    if kind is type(None):
        return st.none()
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        hints = typing.get_type_hints(kind)
        fields = {f.name: values_of(hints[f.name]) for f in dataclasses.fields(kind)}
        return st.builds(kind, **fields)
    if origin is tuple:
        item, _ellipsis = typing.get_args(kind)
        return st.lists(values_of(item), max_size=2).map(tuple)
    simple: dict[Any, st.SearchStrategy[Any]] = {
        str: st.text(max_size=6),
        int: INT64 | st.integers(-5, 5),
        float: st.floats(allow_nan=False, allow_infinity=False),
        bool: st.booleans(),
    }
    return simple[kind]


@st.composite
def snapshots(draw: st.DrawFn) -> Example:
    snapshot = draw(values_of(Snapshot))
    snapshot = dataclasses.replace(snapshot, schema_version=draw(st.integers(1, SCHEMA_VERSION)))
    return Example(snapshot.to_json(), snapshot)


# --- the sidecar's .checkpoint files -------------------------------------------------------------

KAFKA_TOPIC = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
    min_size=1,
    max_size=20,
)


@st.composite
def checkpoint_files(draw: st.DrawFn) -> Example:
    """An OffsetCheckpoint file: version 0, a count, ``<topic> <partition> <offset>`` lines.

    Offsets are known (>= 0) or -4 ("registered, unknown"); lines end as Java's
    readLine accepts (\\n, \\r\\n, \\r) and fields are split on any Java whitespace.
    """
    entries = draw(
        st.lists(
            st.tuples(
                KAFKA_TOPIC,
                st.integers(0, 2**31 - 1),
                st.integers(0, 2**63 - 1) | st.just(OFFSET_UNKNOWN),
            ),
            max_size=6,
            unique_by=lambda e: (e[0], e[1]),
        )
    )
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    space = draw(st.sampled_from([" ", "  ", "\t"]))
    lines = ["0", str(len(entries))] + [space.join(map(str, e)) for e in entries]
    expected = CheckpointFile(
        offsets=tuple(ChangelogOffset(t, p, o) for t, p, o in entries if o != OFFSET_UNKNOWN),
        unknown=tuple((t, p) for t, p, o in entries if o == OFFSET_UNKNOWN),
    )
    return Example(newline.join(lines).encode() + newline.encode(), expected)
