"""Kafka's wire format for the two requests a poll sends per partition, ListOffsets and
OffsetFetch: requests packed from plain tuples, answers read straight into ``raw`` types.

kafka-python builds one generic message object per partition in each direction; at
1,000 groups x 20 partitions (ListOffsets asks for 19,000 partitions, OffsetFetch
answers 20,000) that was most of the CPU its IO thread spent on a poll. Only the
versions the edge asks for are known here (ListOffsets 1-11, OffsetFetch 8-9), laid
out as Kafka's message definitions publish them; the bytes equal what kafka-python
writes for the same request (unit tests compare them, version by version).

Pure: bytes in, values out. ``protocol`` hands these to kafka-python's connections.
"""

import struct
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from agent.collect.raw import CommittedOffset, GroupOffsets

# A response as kafka-python's connection hands it over (a bytearray), or test bytes.
Buffer = bytes | bytearray | memoryview
T = TypeVar("T")

LIST_OFFSETS_API_KEY = 2
LIST_OFFSETS_VERSIONS = (1, 11)
OFFSET_FETCH_API_KEY = 9
# 8 batches groups and keeps topic names; 10 identifies topics by id only.
OFFSET_FETCH_VERSIONS = (8, 9)

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_REQUEST_HEADER = struct.Struct(">hhi")  # api key, api version, correlation id
_NO_TAGS = b"\x00"  # a flexible version's empty tagged-field section
_COMPACT_NULL = b"\x00"  # a flexible version's null string or array (its length + 1 is 0)
_CLIENT_REPLICA = -1  # ListOffsets' replica id for a client that is not a broker
_NO_LEADER_EPOCH = -1

# One ListOffsets partition, by version range: index, (current leader epoch), time.
_ASKED_PARTITION = struct.Struct(">iq")  # 1-3
_ASKED_PARTITION_EPOCH = struct.Struct(">iiq")  # 4-5
_ASKED_PARTITION_FLEXIBLE = struct.Struct(">iiqB")  # 6+, with its empty tags
# The answer: index, error code, timestamp, offset, (leader epoch).
_ANSWERED_PARTITION = struct.Struct(">ihqq")  # 1-3
_ANSWERED_PARTITION_EPOCH = struct.Struct(">ihqqi")  # 4+
# OffsetFetch's answer for one partition: index, committed offset, its leader epoch;
# after its metadata, its error code and how many tagged fields follow (0: none).
_FETCHED_PARTITION = struct.Struct(">iqi")
_ERROR_AND_TAGS = struct.Struct(">hB")


def list_offsets_flexible(version: int) -> bool:
    return version >= 6  # noqa: PLR2004 - the version KIP-482's compact encoding starts at


def offset_fetch_flexible(version: int) -> bool:
    return version >= 6  # noqa: PLR2004 - ditto


# -- writing ------------------------------------------------------------------


_VARINT_BITS = 0x7F  # an unsigned varint's 7 bits per byte, low ones first
_VARINT_MORE = 0x80  # set on every byte but the last


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value > _VARINT_BITS:
        out.append((value & _VARINT_BITS) | _VARINT_MORE)
        value >>= 7
    out.append(value)
    return bytes(out)


def _string(text: str, *, flexible: bool) -> bytes:
    data = text.encode()
    return (_uvarint(len(data) + 1) if flexible else _INT16.pack(len(data))) + data


def _array_length(length: int, *, flexible: bool) -> bytes:
    return _uvarint(length + 1) if flexible else _INT32.pack(length)


def request_header(
    api_key: int, version: int, correlation_id: int, client_id: str | None, *, flexible: bool
) -> bytes:
    """Request header v1, or v2 for a flexible request: the client id is never compact."""
    if client_id is None:
        client = _INT16.pack(-1)
    else:
        data = client_id.encode()
        client = _INT16.pack(len(data)) + data
    header = _REQUEST_HEADER.pack(api_key, version, correlation_id) + client
    return header + _NO_TAGS if flexible else header


def list_offsets_request(
    version: int,
    topics: Sequence[tuple[str, Sequence[tuple[int, int]]]],
    *,
    isolation_level: int = 0,
) -> bytes:
    """The body of a ListOffsets request: for each topic, (partition, timestamp) pairs
    (-1 latest, -2 earliest, otherwise Unix milliseconds)."""
    _check_version("ListOffsets", version, LIST_OFFSETS_VERSIONS)
    flexible = list_offsets_flexible(version)
    out = [_INT32.pack(_CLIENT_REPLICA)]
    if version >= 2:  # noqa: PLR2004 - the version isolation levels came in
        out.append(_INT8.pack(isolation_level))
    out.append(_array_length(len(topics), flexible=flexible))
    for name, partitions in topics:
        out.append(_string(name, flexible=flexible))
        out.append(_array_length(len(partitions), flexible=flexible))
        if flexible:
            pack = _ASKED_PARTITION_FLEXIBLE.pack
            out.extend(pack(p, _NO_LEADER_EPOCH, at, 0) for p, at in partitions)
            out.append(_NO_TAGS)
        elif version >= 4:  # noqa: PLR2004 - the version leader epochs came in
            pack = _ASKED_PARTITION_EPOCH.pack
            out.extend(pack(p, _NO_LEADER_EPOCH, at) for p, at in partitions)
        else:
            out.extend(_ASKED_PARTITION.pack(p, at) for p, at in partitions)
    if version >= 10:  # noqa: PLR2004 - the version the timeout came in
        # 0, as kafka-python sends it: the timeout only bounds reads from tiered storage.
        out.append(_INT32.pack(0))
    if flexible:
        out.append(_NO_TAGS)
    return b"".join(out)


def offset_fetch_request(version: int, group_ids: Iterable[str], *, require_stable: bool) -> bytes:
    """The body of an OffsetFetch request for every committed offset of each group."""
    _check_version("OffsetFetch", version, OFFSET_FETCH_VERSIONS)
    groups = list(group_ids)
    out = [_array_length(len(groups), flexible=True)]
    for group_id in groups:
        out.append(_string(group_id, flexible=True))
        if version >= 9:  # noqa: PLR2004 - the version member ids came in
            out.append(_COMPACT_NULL)  # no member id
            out.append(_INT32.pack(-1))  # nor member epoch
        out.append(_COMPACT_NULL)  # topics: null, every committed partition
        out.append(_NO_TAGS)
    out.append(_INT8.pack(1 if require_stable else 0))
    out.append(_NO_TAGS)
    return b"".join(out)


def _check_version(api: str, version: int, known: tuple[int, int]) -> None:
    if not known[0] <= version <= known[1]:
        raise ValueError(f"{api} v{version} is not one ksmon reads (v{known[0]}-{known[1]})")


# -- reading ------------------------------------------------------------------
# Each reader takes (data, pos) and returns (value, new pos); a truncated or malformed
# buffer raises ValueError (what kafka-python's connection expects of a decoder).


def _read_uvarint(data: Buffer, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & _VARINT_BITS) << shift
        if not byte & _VARINT_MORE:
            return value, pos
        shift += 7


def _read_length(data: Buffer, pos: int, *, flexible: bool) -> tuple[int, int]:
    """An array's or a string's length; -1 for null."""
    if flexible:
        length, pos = _read_uvarint(data, pos)
        return length - 1, pos
    return _INT32.unpack_from(data, pos)[0], pos + 4


def _read_string(data: Buffer, pos: int, *, flexible: bool) -> tuple[str | None, int]:
    if flexible:
        length, pos = _read_uvarint(data, pos)
        length -= 1
    else:
        length = _INT16.unpack_from(data, pos)[0]
        pos += 2
    if length < 0:
        return None, pos
    end = pos + length
    if end > len(data):
        raise ValueError("string past the end of the response")
    return str(data[pos:end], "utf-8"), end


def _skip_tags(data: Buffer, pos: int) -> int:
    """Past a flexible version's tagged fields (none of which ksmon reads)."""
    if data[pos] == 0:  # the usual case: none
        return pos + 1
    count, pos = _read_uvarint(data, pos)
    for _ in range(count):
        _, pos = _read_uvarint(data, pos)  # the tag
        size, pos = _read_uvarint(data, pos)
        pos += size
    return pos


def response_header_size(data: Buffer, *, flexible: bool) -> int:
    """Bytes of the response header (v0: the correlation id; v1 adds tagged fields)."""
    try:
        return _skip_tags(data, 4) if flexible else 4
    except IndexError as e:
        raise ValueError("response header past the end of the response") from e


def read_list_offsets_response(
    data: Buffer, version: int, make: Callable[[str, int, int, int, int], T]
) -> tuple[int, list[T]]:
    """(throttle time in ms, every partition's answer) from a ListOffsets response body;
    ``make`` turns (topic, partition, error code, timestamp or -1, offset) into one,
    as it is read (no row is held in between: 19,000 a poll)."""
    _check_version("ListOffsets", version, LIST_OFFSETS_VERSIONS)
    try:
        return _read_list_offsets(data, version, make)
    except (IndexError, struct.error) as e:
        raise ValueError(f"malformed ListOffsets v{version} response: {e}") from e


def _read_list_offsets(
    data: Buffer, version: int, make: Callable[[str, int, int, int, int], T]
) -> tuple[int, list[T]]:
    flexible = list_offsets_flexible(version)
    pos = 0
    throttle_ms = 0
    if version >= 2:  # noqa: PLR2004 - the version throttling came in
        throttle_ms = _INT32.unpack_from(data, pos)[0]
        pos += 4
    answered = _ANSWERED_PARTITION_EPOCH if version >= 4 else _ANSWERED_PARTITION  # noqa: PLR2004
    unpack, size = answered.unpack_from, answered.size
    made: list[T] = []
    topics, pos = _read_length(data, pos, flexible=flexible)
    for _ in range(topics):
        name, pos = _read_string(data, pos, flexible=flexible)
        topic = name or ""
        partitions, pos = _read_length(data, pos, flexible=flexible)
        for _ in range(partitions):
            partition, error_code, timestamp, offset = unpack(data, pos)[:4]
            pos += size
            if flexible:
                pos = pos + 1 if data[pos] == 0 else _skip_tags(data, pos)
            made.append(make(topic, partition, error_code, timestamp, offset))
        if flexible:
            pos = _skip_tags(data, pos)
    return throttle_ms, made


def read_offset_fetch_response(data: Buffer, version: int) -> tuple[int, list[GroupOffsets]]:
    """(throttle time in ms, each group's committed offsets) from an OffsetFetch body."""
    _check_version("OffsetFetch", version, OFFSET_FETCH_VERSIONS)
    try:
        return _read_offset_fetch(data)
    except (IndexError, struct.error) as e:
        raise ValueError(f"malformed OffsetFetch v{version} response: {e}") from e


def _read_offset_fetch(data: Buffer) -> tuple[int, list[GroupOffsets]]:
    # Versions 8 and 9 answer alike (9 only adds fields to the request).
    throttle_ms = _INT32.unpack_from(data, 0)[0]
    pos = 4
    unpack, size = _FETCHED_PARTITION.unpack_from, _FETCHED_PARTITION.size
    results: list[GroupOffsets] = []
    groups, pos = _read_length(data, pos, flexible=True)
    for _ in range(groups):
        group_id, pos = _read_string(data, pos, flexible=True)
        offsets: list[CommittedOffset] = []
        topics, pos = _read_length(data, pos, flexible=True)
        for _ in range(topics):
            name, pos = _read_string(data, pos, flexible=True)
            topic = name or ""
            partitions, pos = _read_length(data, pos, flexible=True)
            for _ in range(partitions):
                partition, offset, _epoch = unpack(data, pos)
                pos += size
                # The metadata string, read here while its length fits one byte (the
                # usual: Kafka Streams writes about 20 characters, consumers none).
                length = data[pos] - 1
                if length < 0:
                    metadata: str | None = None
                    pos += 1
                elif length < _VARINT_BITS:
                    end = pos + 1 + length
                    if end > len(data):
                        raise ValueError("string past the end of the response")
                    metadata = str(data[pos + 1 : end], "utf-8")
                    pos = end
                else:
                    metadata, pos = _read_string(data, pos, flexible=True)
                error_code, tags = _ERROR_AND_TAGS.unpack_from(data, pos)
                pos = pos + 3 if tags == 0 else _skip_tags(data, pos + 2)
                offsets.append(CommittedOffset(topic, partition, offset, metadata, error_code))
            pos = _skip_tags(data, pos)
        error_code = _INT16.unpack_from(data, pos)[0]
        pos = _skip_tags(data, pos + 2)
        results.append(GroupOffsets(group_id or "", error_code, tuple(offsets)))
    return throttle_ms, results
