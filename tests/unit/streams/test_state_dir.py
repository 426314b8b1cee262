"""State-directory layout knowledge: task directory names, the process-id file, changelog names."""

import pytest

from agent.streams.codec import DecodeError
from agent.streams.state_dir import (
    changelog_topic,
    named_topology_of_directory,
    parse_process_metadata,
    process_id_from_client_id,
    task_of_directory,
)

UUID = "5118960c-55bf-46ff-b9f2-ad95ee6584c5"


@pytest.mark.parametrize(
    ("name", "topology", "task"),
    [
        pytest.param("0_3", None, "0_3", id="a task directory"),
        pytest.param("12_0", "orders", "orders__12_0", id="a task of a named topology"),
        pytest.param("global", None, None, id="global stores are not a task"),
        pytest.param(".lock", None, None, id="the lock file's name"),
        pytest.param("kafka-streams-process-metadata", None, None, id="the metadata file"),
        pytest.param("x__0_3", None, None, id="named topologies live one level down"),
        pytest.param("0_3.tmp", None, None, id="not exactly sub_partition"),
    ],
)
def test_task_directories(name: str, topology: str | None, task: str | None) -> None:
    assert task_of_directory(name, topology) == task


def test_named_topology_directories() -> None:
    assert named_topology_of_directory("__orders__") == "orders"
    assert named_topology_of_directory("orders") is None


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(f'{{"processId":"{UUID}"}}'.encode(), UUID, id="as Kafka Streams writes it"),
        pytest.param(
            f'{{ "processId" : "{UUID.upper()}", "extra": 1 }}'.encode(),
            UUID,
            id="spacing, case and extra fields (a newer writer)",
        ),
        pytest.param(b'{"processId":"', None, id="torn: written at this moment"),
        pytest.param(b'{"processId":"not-a-uuid"}', None, id="not a UUID"),
        pytest.param(b"[]", None, id="not an object"),
        pytest.param(b"\xff", None, id="not text"),
    ],
)
def test_process_metadata(data: bytes, expected: str | None) -> None:
    parsed = parse_process_metadata(data)

    if expected is None:
        assert isinstance(parsed, DecodeError)
    else:
        assert parsed == expected


def test_process_id_inside_a_default_client_id() -> None:
    assert process_id_from_client_id(f"app-{UUID}", "app") == UUID
    assert process_id_from_client_id("my-custom-client", "app") is None, "client.id was set"
    assert process_id_from_client_id(f"other-{UUID}", "app") is None


def test_changelog_topic_name() -> None:
    assert changelog_topic("app", "counts") == "app-counts-changelog"
