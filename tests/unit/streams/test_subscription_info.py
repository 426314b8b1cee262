"""SubscriptionInfo beyond the vectors: version probing, bad versions, endpoints, topologies."""

import time

import pytest

from agent.streams.codec import DecodeError
from agent.streams.subscription_info import SubscriptionInfo, decode_subscription_info
from agent.streams.types import TaskId
from tests.unit.streams.vectors import (
    PROCESS_ID,
    PROCESS_ID_HEX,
    bytes32,
    i8,
    i32,
    i64,
    string16,
    vector,
)

UUID = bytes.fromhex(PROCESS_ID_HEX)


def v2(prev: list[tuple[int, int]], standby: list[tuple[int, int]], endpoint: bytes) -> bytes:
    """Layout v2: version, processId, prevTasks, standbyTasks, userEndPoint."""
    tasks = b""
    for task_list in (prev, standby):
        tasks += i32(len(task_list)) + b"".join(i32(s) + i32(p) for s, p in task_list)
    return i32(2) + UUID + tasks + endpoint


def v10_entry(subtopology: int, partition: int, total: int, topology: str | None) -> bytes:
    return i32(subtopology) + i32(partition) + i64(total) + string16(topology)


def decoded(data: bytes) -> SubscriptionInfo:
    result = decode_subscription_info(data)
    assert isinstance(result, SubscriptionInfo), result
    return result


def test_a_future_version_reads_only_the_two_versions() -> None:
    # A member on a newer Streams probes with version 12; whatever follows is
    # a layout we do not know, and Kafka reads only the two ints too.
    info = decoded(i32(12) + i32(13) + b"\xde\xad\xbe\xef" * 5)

    assert info.is_future_version
    assert (info.version, info.latest_supported_version) == (12, 13)
    assert info.process_id == ""
    assert info.task_offset_sums == {}
    assert info.endpoint is None


def test_known_versions_are_not_future_versions() -> None:
    assert not decoded(vector("SUB", 11).data).is_future_version


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(i32(0) + UUID, "unknown version 0", id="version 0 never existed"),
        pytest.param(i32(-1) + UUID, "unknown version -1", id="negative version"),
        pytest.param(
            i32(12) + i32(11), "latestSupportedVersion 11 is below version 12", id="future"
        ),
        pytest.param(
            i32(3) + i32(2) + UUID, "latestSupportedVersion 2 is below version 3", id="v3"
        ),
        pytest.param(i32(12), "truncated", id="future version without its latest version"),
        pytest.param(b"", "truncated", id="empty"),
    ],
)
def test_impossible_versions_are_decode_errors(data: bytes, reason: str) -> None:
    result = decode_subscription_info(data)

    assert isinstance(result, DecodeError)
    assert result.what == "SubscriptionInfo"
    assert reason in result.reason


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        pytest.param(bytes32(b"h:1"), "h:1", id="set"),
        # application.server unset is written as zero bytes and read back as null.
        pytest.param(bytes32(b""), None, id="empty means unset"),
        # Bytes Java would not decode become U+FFFD, as new String(bytes, UTF_8) does.
        pytest.param(bytes32(b"h\xff:1"), "h\ufffd:1", id="invalid UTF-8 is replaced"),
    ],
)
def test_endpoint(endpoint: bytes, expected: str | None) -> None:
    assert decoded(v2([], [], endpoint)).endpoint == expected


def test_a_null_endpoint_is_a_decode_error() -> None:
    # userEndPoint is non-nullable bytes: Kafka never writes -1 there.
    result = decode_subscription_info(v2([], [], bytes32(None)))

    assert isinstance(result, DecodeError)
    assert "null" in result.reason


def test_a_task_in_both_v1_6_lists_counts_as_standby() -> None:
    # Kafka fills the offset-sum map from prevTasks first, then standbyTasks.
    info = decoded(v2([(0, 0), (0, 1)], [(0, 1)], bytes32(b"")))

    assert info.task_offset_sums == {TaskId(0, 0): -2, TaskId(0, 1): -3}
    assert info.active_tasks == [TaskId(0, 0)]


def test_v10_tasks_carry_their_named_topology() -> None:
    data = (
        i32(10)
        + i32(11)
        + UUID
        + bytes32(b"h:1")
        + i32(3)
        + v10_entry(0, 1, -2, "orders")
        + v10_entry(1, 0, 57, None)
        # An empty name is no name (Kafka's TaskId downgrades it to null).
        + v10_entry(2, 3, 8, "")
        + i8(-5)
        + i32(4)
    )

    info = decoded(data)

    assert info == SubscriptionInfo(
        version=10,
        latest_supported_version=11,
        process_id=PROCESS_ID,
        endpoint="h:1",
        task_offset_sums={TaskId(0, 1, "orders"): -2, TaskId(1, 0): 57, TaskId(2, 3): 8},
        unique_field=-5,
        error_code=4,  # SHUTDOWN_REQUESTED
        client_tags={},
    )
    assert str(next(iter(info.task_offset_sums))) == "orders__0_1"


def test_client_tags_keep_every_pair() -> None:
    sub_v11 = vector("SUB", 11).data
    tags = i32(2) + bytes32(b"az") + bytes32(b"a") + bytes32(b"zone") + bytes32(b"")
    without_tags = sub_v11[: -len(i32(1) + bytes32(b"az") + bytes32(b"a"))]

    assert decoded(without_tags + tags).client_tags == {"az": "a", "zone": ""}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(
            i32(1) + UUID + i32(0x7FFFFFFF) + b"\x00" * 16,
            "count 2147483647",
            id="v1 prevTasks count",
        ),
        pytest.param(
            i32(7) + i32(11) + UUID + bytes32(b"") + i32(0x7FFFFFFF),
            "count 2147483647",
            id="v7 subtopology count",
        ),
        pytest.param(
            i32(7) + i32(11) + UUID + bytes32(b"") + i32(1) + i32(0) + i32(200_000_000),
            "count 200000000",
            id="v7 partition count",
        ),
        pytest.param(
            i32(10) + i32(11) + UUID + bytes32(b"") + i32(-7),
            "negative count -7",
            id="v10 negative task count",
        ),
        pytest.param(
            i32(11) + i32(11) + UUID + bytes32(b"") + i32(0) + i8(0) + i32(0) + i32(-1),
            "negative count -1",
            id="v11 client tags are not nullable",
        ),
        pytest.param(
            i32(2) + UUID + i32(0) + i32(0) + i32(-2) + b"h:1",
            "negative bytes length -2",
            id="v2 endpoint length",
        ),
    ],
)
def test_bad_counts_are_refused_without_looping(data: bytes, reason: str) -> None:
    started = time.perf_counter()
    result = decode_subscription_info(data)

    assert isinstance(result, DecodeError)
    assert reason in result.reason
    # A loop over two billion claimed elements would take minutes, not microseconds.
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize("version", range(1, 12))
def test_trailing_bytes_after_a_known_version_are_an_error(version: int) -> None:
    # Kafka's generated reader would drop them; for a version we read completely
    # they can only mean the bytes are not what their version says.
    result = decode_subscription_info(vector("SUB", version).data + b"\x00")

    assert result == DecodeError(
        "SubscriptionInfo", "1 trailing bytes", len(vector("SUB", version).data), version
    )
