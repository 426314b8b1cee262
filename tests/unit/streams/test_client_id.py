"""Recognising a StreamThread's main consumer among a group's client ids."""

import pytest

from agent.streams.client_id import (
    StreamThreadClientId,
    parse_stream_thread_client_id,
    thread_name,
)

PROCESS = "wordcount-8d2d0f5e-6e8a-4b7e-9a11-0c1c2f3e4d5a"


@pytest.mark.parametrize(
    ("client_id", "expected"),
    [
        pytest.param(
            f"{PROCESS}-StreamThread-1-consumer",
            StreamThreadClientId(PROCESS, 1),
            id="default client id: application id and process id",
        ),
        pytest.param(
            "my-client-StreamThread-12-consumer",
            StreamThreadClientId("my-client", 12),
            id="user client.id, two-digit thread",
        ),
        pytest.param(
            "odd-StreamThread-1-StreamThread-2-consumer",
            StreamThreadClientId("odd-StreamThread-1", 2),
            id="the last StreamThread marker is the thread's",
        ),
        pytest.param(
            f"{PROCESS}-StreamThread-1-restore-consumer", None, id="restore consumer is no member"
        ),
        pytest.param(f"{PROCESS}-StreamThread-1-producer", None, id="producer"),
        pytest.param(f"{PROCESS}-global-consumer", None, id="global consumer"),
        pytest.param(f"{PROCESS}-admin", None, id="admin client"),
        pytest.param("-StreamThread-1-consumer", None, id="no base client id"),
        pytest.param("app-StreamThread-01-consumer", None, id="Java never pads the index"),
        pytest.param("app-StreamThread--1-consumer", None, id="negative index"),
        pytest.param("app-StreamThread-\u0661-consumer", None, id="non-ASCII digit"),
        pytest.param("app-StreamThread-9999999999-consumer", None, id="beyond a Java int"),
        pytest.param("app-StreamThread-1-consumer\n", None, id="trailing newline"),
        pytest.param("consumer-1", None, id="a plain consumer"),
    ],
)
def test_parse_stream_thread_client_id(
    client_id: str, expected: StreamThreadClientId | None
) -> None:
    assert parse_stream_thread_client_id(client_id) == expected


def test_thread_name_is_the_client_id_without_the_consumer_suffix() -> None:
    parsed = parse_stream_thread_client_id("app-StreamThread-3-consumer")

    assert parsed is not None
    assert parsed.thread_name == thread_name("app", 3) == "app-StreamThread-3"
