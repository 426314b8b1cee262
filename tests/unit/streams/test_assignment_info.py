"""AssignmentInfo beyond the vectors: named topologies, bad versions and counts, the zip."""

import time

import pytest

from agent.streams.assignment_info import (
    NO_REBALANCE_SCHEDULED,
    AssignmentInfo,
    active_tasks_by_partition,
    decode_assignment_info,
)
from agent.streams.codec import DecodeError
from agent.streams.types import HostInfo, TaskId, TopicPartition
from tests.unit.streams.vectors import i32, i64, vector, write_chars, write_utf


def task_v10(subtopology: int, partition: int, topology: str = "") -> bytes:
    """ConsumerProtocolUtils.writeTaskIdTo for v10+: the name as an int32 char count + chars."""
    return i32(subtopology) + i32(partition) + i32(len(topology)) + write_chars(topology)


def plain_partition(topic: str, partition: int) -> bytes:
    return write_utf(topic) + i32(partition)


def v7(body: bytes, error_code: int = 0, next_rebalance_ms: int = NO_REBALANCE_SCHEDULED) -> bytes:
    """A v7 AssignmentInfo around ``body`` (active, standby, dictionary and host maps)."""
    return i32(7) + i32(11) + body + i32(error_code) + i64(next_rebalance_ms)


EMPTY_HOST_MAPS = i32(0) + i32(0) + i32(0)  # dictionary, active hosts, standby hosts


def decoded(data: bytes) -> AssignmentInfo:
    result = decode_assignment_info(data)
    assert isinstance(result, AssignmentInfo), result
    return result


def test_v10_task_ids_carry_their_named_topology() -> None:
    data = (
        i32(10)
        + i32(11)
        + i32(2)
        + task_v10(0, 0, "orders")
        + task_v10(0, 1)  # no topology: Kafka still writes a zero char count
        + i32(1)
        + task_v10(1, 2, "orders")
        + i32(1)
        + plain_partition("t2", 2)
        + EMPTY_HOST_MAPS
        + i32(0)
        + i64(1_700_000_000_000)
    )

    info = decoded(data)

    assert info.active_tasks == [TaskId(0, 0, "orders"), TaskId(0, 1)]
    assert info.standby_tasks == {TaskId(1, 2, "orders"): [TopicPartition("t2", 2)]}
    assert info.next_rebalance_ms == 1_700_000_000_000
    assert info.rebalance_scheduled


def test_named_topology_chars_are_utf16() -> None:
    data = i32(11) + i32(11) + i32(1) + task_v10(3, 4, "zürich-€") + i32(0) + EMPTY_HOST_MAPS
    data += i32(0) + i64(NO_REBALANCE_SCHEDULED)

    assert decoded(data).active_tasks == [TaskId(3, 4, "zürich-€")]


def test_a_negative_named_topology_char_count_is_refused() -> None:
    # Kafka's loop would read nothing for -1, but no encoder writes it: corruption.
    data = i32(10) + i32(11) + i32(1) + i32(0) + i32(0) + i32(-1)

    result = decode_assignment_info(data)

    assert isinstance(result, DecodeError)
    assert "negative char count -1" in result.reason
    assert result.version == 10


def test_an_error_assignment_decodes_its_code() -> None:
    # errorAssignment: latest version, no tasks, the AssignorError code set.
    info = decoded(
        i32(11) + i32(11) + i32(0) + i32(0) + EMPTY_HOST_MAPS + i32(4) + i64(NO_REBALANCE_SCHEDULED)
    )

    assert info.error_code == 4
    assert info.active_tasks == []
    assert not info.rebalance_scheduled


def test_host_names_are_modified_utf8() -> None:
    # writeUTF turns U+0000 into C0 80; a decoder using plain UTF-8 would fail here.
    host = b"\x00\x04a\xc0\x80b"
    data = i32(4) + i32(11) + i32(0) + i32(0) + i32(1) + host + i32(9) + i32(0) + i32(0)

    assert decoded(data).partitions_by_host == {HostInfo("a\x00b", 9): []}


def test_topic_dictionary_is_read_by_index_not_position() -> None:
    dictionary = i32(2) + i32(1) + write_utf("t1") + i32(0) + write_utf("t2")
    hosts = i32(1) + write_utf("h") + i32(1) + i32(2) + i32(0) + i32(5) + i32(1) + i32(6)
    info = decoded(v7(i32(0) + i32(0) + dictionary + hosts + i32(0)))

    assert info.topic_dictionary == {0: "t2", 1: "t1"}
    assert info.partitions_by_host == {
        HostInfo("h", 1): [TopicPartition("t2", 5), TopicPartition("t1", 6)]
    }


def test_a_topic_index_missing_from_the_dictionary_is_an_error() -> None:
    dictionary = i32(1) + i32(0) + write_utf("t1")
    hosts = i32(1) + write_utf("h") + i32(1) + i32(1) + i32(3) + i32(0)

    result = decode_assignment_info(v7(i32(0) + i32(0) + dictionary + hosts + i32(0)))

    assert isinstance(result, DecodeError)
    assert "topic index 3 is not in the topic dictionary" in result.reason


@pytest.mark.parametrize(
    "version",
    [
        pytest.param(0, id="0 never existed"),
        pytest.param(-1, id="negative"),
        # Kafka throws for anything above 11 rather than reading a prefix of it.
        pytest.param(12, id="newer than we know"),
    ],
)
def test_unknown_versions_are_decode_errors(version: int) -> None:
    result = decode_assignment_info(i32(version) + i32(11) + b"\x00" * 40)

    assert result == DecodeError("AssignmentInfo", f"unknown version {version}", 0, version)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(i32(1) + i32(0x7FFFFFFF) + b"\x00" * 8, "count 2147483647", id="active"),
        pytest.param(i32(1) + i32(0) + i32(-3), "negative count -3", id="standby"),
        pytest.param(
            i32(1) + i32(0) + i32(1) + i32(0) + i32(0) + i32(100_000_000),
            "count 100000000",
            id="standby partitions",
        ),
        pytest.param(
            i32(2) + i32(0) + i32(0) + i32(50_000_000), "count 50000000", id="plain host map"
        ),
        pytest.param(
            v7(i32(0) + i32(0) + i32(0x7FFFFFFF)), "count 2147483647", id="topic dictionary"
        ),
        pytest.param(
            i32(10) + i32(11) + i32(3) + b"\x00" * 24, "count 3 needs at least 36", id="v10 tasks"
        ),
    ],
)
def test_bad_counts_are_refused_without_looping(data: bytes, reason: str) -> None:
    started = time.perf_counter()
    result = decode_assignment_info(data)

    assert isinstance(result, DecodeError)
    assert reason in result.reason
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize("version", range(1, 12))
def test_trailing_bytes_after_a_known_version_are_an_error(version: int) -> None:
    # Kafka's DataInputStream reader never looks past its last field; we do, as
    # leftovers after a complete known layout mean the bytes are misread.
    data = vector("ASG", version).data

    assert decode_assignment_info(data + b"\x00\x00") == DecodeError(
        "AssignmentInfo", "2 trailing bytes", len(data), version
    )


# --- active task -> partitions zip -------------------------------------------------------------


def info_with_active(tasks: list[TaskId]) -> AssignmentInfo:
    return AssignmentInfo(
        version=11,
        commonly_supported_version=11,
        active_tasks=tasks,
        standby_tasks={},
        partitions_by_host={},
        standby_partitions_by_host={},
        error_code=0,
        next_rebalance_ms=NO_REBALANCE_SCHEDULED,
        topic_dictionary={},
    )


@pytest.mark.parametrize(
    ("assigned", "active", "expected"),
    [
        pytest.param(
            [TopicPartition("t2", 0), TopicPartition("t1", 1), TopicPartition("t1", 0)],
            [TaskId(0, 0), TaskId(0, 1), TaskId(1, 0)],
            {
                TaskId(0, 0): [TopicPartition("t1", 0)],
                TaskId(0, 1): [TopicPartition("t1", 1)],
                TaskId(1, 0): [TopicPartition("t2", 0)],
            },
            id="assigned order does not matter, topic then partition does",
        ),
        pytest.param(
            [TopicPartition("right", 3), TopicPartition("left", 3)],
            [TaskId(0, 3), TaskId(0, 3)],
            {TaskId(0, 3): [TopicPartition("left", 3), TopicPartition("right", 3)]},
            id="a join task appears once per input partition",
        ),
        pytest.param(
            [TopicPartition("t", 10), TopicPartition("t", 9)],
            [TaskId(0, 9), TaskId(0, 10)],
            {TaskId(0, 9): [TopicPartition("t", 9)], TaskId(0, 10): [TopicPartition("t", 10)]},
            id="partitions sort as numbers, not text",
        ),
        pytest.param([], [], {}, id="nothing assigned"),
    ],
)
def test_active_tasks_zip_with_sorted_partitions(
    assigned: list[TopicPartition],
    active: list[TaskId],
    expected: dict[TaskId, list[TopicPartition]],
) -> None:
    assert active_tasks_by_partition(assigned, info_with_active(active)) == expected


def test_a_zip_length_mismatch_is_a_decode_error() -> None:
    result = active_tasks_by_partition(
        [TopicPartition("t", 0), TopicPartition("t", 1)], info_with_active([TaskId(0, 0)])
    )

    assert result == DecodeError(
        "ActiveTaskPartitions", "2 assigned partitions but 1 active task entries", version=11
    )
