"""Kafka protocol messages kafka-python 3.0 does not define, described from the
published wire layouts in ``protocol_schemas/`` (our own schema files), and the
requests whose bytes ``wire`` writes and reads itself (ListOffsets, OffsetFetch),
in the shape kafka-python's connections send and answer."""

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kafka.protocol.api_message import ApiMessage

from agent.collect.raw import GroupOffsets
from agent.collect.wire import (
    LIST_OFFSETS_API_KEY,
    LIST_OFFSETS_VERSIONS,
    OFFSET_FETCH_API_KEY,
    OFFSET_FETCH_VERSIONS,
    list_offsets_flexible,
    list_offsets_request,
    offset_fetch_flexible,
    offset_fetch_request,
    read_list_offsets_response,
    read_offset_fetch_response,
    request_header,
    response_header_size,
)

_SCHEMAS = "agent.collect.protocol_schemas"


class ConsumerGroupDescribeRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]
    """KIP-848 ConsumerGroupDescribe (API key 69): group and assignment epochs, members."""


class ConsumerGroupDescribeResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]
    pass


class StreamsGroupDescribeRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]
    """KIP-1071 StreamsGroupDescribe (API key 89): epochs, topology, members and their tasks."""


class StreamsGroupDescribeResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]
    pass


# -- requests written and read by ``wire`` ---------------------------------------------

T = TypeVar("T")
_FRAME_SIZE = struct.Struct(">i")
_CORRELATION_ID = struct.Struct(">i")


class _ResponseHeader:
    __slots__ = ("correlation_id",)

    def __init__(self, correlation_id: int) -> None:
        self.correlation_id = correlation_id


class _AnswerReader:
    """What kafka-python's protocol parser asks of a response class: read the header,
    then the body. The body is read in place (the parser's buffer is not copied)."""

    __slots__ = ("_request", "_version")

    def __init__(self, request: "WireRequest", version: int) -> None:
        self._request, self._version = request, version

    def parse_header(self, buffer: Any) -> _ResponseHeader:  # noqa: ANN401 - kafka-python's KafkaBytes
        start = buffer.tell()
        view = memoryview(buffer)[start:]
        if len(view) < _CORRELATION_ID.size:
            raise ValueError("response shorter than its header")
        correlation_id = _CORRELATION_ID.unpack_from(view)[0]
        buffer.seek(
            start + response_header_size(view, flexible=self._request.flexible(self._version))
        )
        return _ResponseHeader(correlation_id)

    def decode(self, buffer: Any) -> object:  # noqa: ANN401 - kafka-python's KafkaBytes
        return self._request.read(memoryview(buffer)[buffer.tell() :], self._version)


class _SentHeader:
    """The request header kafka-python's parser keeps until the answer comes."""

    __slots__ = ("api_key", "api_version", "client_id", "correlation_id", "request")

    def __init__(
        self, request: "WireRequest", version: int, correlation_id: int, client_id: str | None
    ) -> None:
        self.request = request
        self.api_key = request.API_KEY
        self.api_version = version
        self.correlation_id = correlation_id
        self.client_id = client_id

    def get_response_class(self) -> _AnswerReader:
        return _AnswerReader(self.request, self.api_version)


class WireRequest:
    """A request kafka-python's connection sends as one of its own (it negotiates the
    version within ``min_version``-``max_version``, numbers, frames and times it, and
    matches the answer to it), written and answered by ``wire`` instead of by
    kafka-python's generic message objects. The class name is what the edge counts
    requests by, as for kafka-python's ``ListOffsetsRequest``."""

    API_KEY: int
    min_version: int
    max_version: int

    def __init__(self) -> None:
        # Read and set by kafka-python's connection (the negotiated version).
        self.API_VERSION: int | None = None
        self._min_version = self.min_version
        self._max_version = self.max_version
        self._header: _SentHeader | None = None

    @property
    def name(self) -> str:
        return type(self).__name__.removesuffix("Request")

    @property
    def header(self) -> _SentHeader | None:
        return self._header

    def expect_response(self) -> bool:
        return True

    def with_header(self, correlation_id: int = 0, client_id: str | None = None) -> None:
        self._header = _SentHeader(self, self._version(), correlation_id, client_id)

    def _version(self) -> int:
        if self.API_VERSION is None:
            raise ValueError(f"{self.name}: no version negotiated")
        return self.API_VERSION

    def encode(self, *, header: bool = False, framed: bool = False) -> bytes:
        version, sent = self._version(), self._header
        flexible = self.flexible(version)
        parts = [self.body(version)]
        if header:
            if sent is None:
                raise ValueError(f"{self.name}: no header")
            parts.insert(
                0,
                request_header(
                    self.API_KEY, version, sent.correlation_id, sent.client_id, flexible=flexible
                ),
            )
        if framed:
            parts.insert(0, _FRAME_SIZE.pack(sum(len(p) for p in parts)))
        return b"".join(parts)

    def flexible(self, version: int) -> bool:
        raise NotImplementedError

    def body(self, version: int) -> bytes:
        raise NotImplementedError

    def read(self, data: memoryview, version: int) -> object:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class ListOffsetsAnswer(Generic[T]):
    throttle_time_ms: int  # read by kafka-python's connection, which backs off that long
    partitions: list[T]


class ListOffsetsRequest(WireRequest, Generic[T]):
    """ListOffsets: for each topic, (partition, timestamp) pairs; ``make`` makes each
    partition's answer of (topic, partition, error code, timestamp, offset)."""

    API_KEY = LIST_OFFSETS_API_KEY
    min_version, max_version = LIST_OFFSETS_VERSIONS

    def __init__(
        self,
        topics: Sequence[tuple[str, Sequence[tuple[int, int]]]],
        make: Callable[[str, int, int, int, int], T],
    ) -> None:
        super().__init__()
        self.topics = topics
        self.make = make

    def flexible(self, version: int) -> bool:
        return list_offsets_flexible(version)

    def body(self, version: int) -> bytes:
        return list_offsets_request(version, self.topics)

    def read(self, data: memoryview, version: int) -> ListOffsetsAnswer[T]:
        return ListOffsetsAnswer(*read_list_offsets_response(data, version, self.make))


@dataclass(frozen=True, slots=True)
class OffsetFetchAnswer:
    throttle_time_ms: int
    groups: list[GroupOffsets]


class OffsetFetchRequest(WireRequest):
    """OffsetFetch of every committed offset of many groups (one coordinator's)."""

    API_KEY = OFFSET_FETCH_API_KEY
    min_version, max_version = OFFSET_FETCH_VERSIONS

    def __init__(self, group_ids: Sequence[str]) -> None:
        super().__init__()
        self.group_ids = group_ids

    def flexible(self, version: int) -> bool:
        return offset_fetch_flexible(version)

    def body(self, version: int) -> bytes:
        return offset_fetch_request(version, self.group_ids, require_stable=False)

    def read(self, data: memoryview, version: int) -> OffsetFetchAnswer:
        return OffsetFetchAnswer(*read_offset_fetch_response(data, version))
