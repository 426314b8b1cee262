"""TaskId text form, parsing and Kafka's ordering; TopicPartition and HostInfo text."""

import pytest

from agent.streams.types import HostInfo, TaskId, TopicPartition


@pytest.mark.parametrize(
    ("task", "text"),
    [
        (TaskId(0, 2), "0_2"),
        (TaskId(12, 345), "12_345"),
        (TaskId(1, 3, "orders"), "orders__1_3"),
        (TaskId(1, 3, "my_topo"), "my_topo__1_3"),
        (TaskId(0, 0, "x_"), "x___0_0"),
    ],
)
def test_task_id_text_round_trips(task: TaskId, text: str) -> None:
    assert str(task) == text
    assert TaskId.parse(text) == task


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("0", id="no partition"),
        pytest.param("0_", id="empty partition"),
        pytest.param("_1", id="empty subtopology"),
        pytest.param("a_1", id="non-numeric subtopology"),
        pytest.param("0_1_2", id="three parts"),
        pytest.param("-1_2", id="negative"),
        pytest.param("__0_1", id="empty topology name"),
        pytest.param("0_2147483648", id="beyond a Java int"),
        pytest.param("0_" + "9" * 5000, id="huge number"),
        pytest.param("\u0661_1", id="non-ASCII digit"),
    ],
)
def test_task_id_parse_refuses_other_text(text: str) -> None:
    assert TaskId.parse(text) is None


def test_an_empty_topology_name_is_no_name() -> None:
    # Kafka's TaskId downgrades "" to null, and AssignmentInfo writes "no name" as 0 chars.
    assert TaskId(0, 1, "") == TaskId(0, 1)
    assert hash(TaskId(0, 1, "")) == hash(TaskId(0, 1))
    assert str(TaskId(0, 1, "")) == "0_1"


def test_task_ids_sort_by_topology_then_subtopology_then_partition() -> None:
    tasks = [TaskId(0, 1, "b"), TaskId(1, 0), TaskId(0, 10), TaskId(0, 2), TaskId(0, 0, "a")]

    assert sorted(tasks) == [
        TaskId(0, 2),
        TaskId(0, 10),
        TaskId(1, 0),
        TaskId(0, 0, "a"),
        TaskId(0, 1, "b"),
    ]
    assert TaskId(0, 0) <= TaskId(0, 0) < TaskId(0, 0, "a")
    assert TaskId(0, 0, "a") > TaskId(9, 9) >= TaskId(9, 9)


def test_topic_partitions_sort_by_topic_then_partition_and_print_like_kafka() -> None:
    parts = [TopicPartition("t2", 0), TopicPartition("t1", 10), TopicPartition("t1", 9)]

    assert sorted(parts) == [
        TopicPartition("t1", 9),
        TopicPartition("t1", 10),
        TopicPartition("t2", 0),
    ]
    assert str(TopicPartition("t1", 0)) == "t1-0"
    assert str(HostInfo("h", 1)) == "h:1"
