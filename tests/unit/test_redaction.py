"""Secrets never leave the process in logs, tracebacks or error lines."""

import io
import json
import logging
import threading
from collections.abc import Iterator

import pytest

from agent import redaction
from agent.config import Secret
from agent.logs import JsonFormatter, RedactSecrets, log_thread_exception

PASSWORD = "redaction-test-password-8d1e"  # noqa: S105 - a throwaway value


@pytest.fixture
def json_log() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    Secret(PASSWORD)  # a configured secret registers itself
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RedactSecrets())
    logger = logging.getLogger("ksmon.test.redaction")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield logger, stream
    logger.removeHandler(handler)


def entries(stream: io.StringIO) -> list[dict[str, str]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_secret_in_a_message_or_its_arguments_is_blanked(
    json_log: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = json_log

    # What kafka-python does at DEBUG level.
    logger.debug("Starting client with configuration: %s", {"sasl_plain_password": PASSWORD})
    logger.info(f"inline {PASSWORD} text")

    text = stream.getvalue()
    assert PASSWORD not in text
    assert [e["message"] for e in entries(stream)] == [
        "Starting client with configuration: {'sasl_plain_password': '***'}",
        "inline *** text",
    ]


def login() -> None:
    raise ValueError(f"login failed for password {PASSWORD}")


def connect() -> None:
    try:
        login()
    except ValueError as cause:
        raise RuntimeError("connecting failed") from cause


def test_a_secret_in_a_traceback_and_its_cause_is_blanked(
    json_log: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = json_log
    try:
        connect()
    except RuntimeError:
        logger.exception("poll failed")

    (entry,) = entries(stream)
    assert PASSWORD not in stream.getvalue()
    assert "login failed for password ***" in entry["exception"], "the cause is kept, blanked"
    assert "RuntimeError: connecting failed" in entry["exception"]


def test_a_secret_in_a_stack_dump_is_blanked(
    json_log: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = json_log

    def deep(password: str) -> None:
        logger.warning("here %s", password, stack_info=True)

    deep(PASSWORD)

    assert PASSWORD not in stream.getvalue()
    assert "stack" in entries(stream)[0]


def open_secret_file() -> None:
    raise OSError(f"could not open {PASSWORD}")


def test_a_dying_threads_traceback_is_logged_blanked(
    json_log: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = json_log
    ksmon = logging.getLogger("ksmon")
    handler = logger.handlers[0]
    ksmon.addHandler(handler)
    try:
        thread = threading.Thread(target=lambda: None, name="sink-thread")
        try:
            open_secret_file()
        except OSError as e:
            log_thread_exception(threading.ExceptHookArgs([type(e), e, e.__traceback__, thread]))
    finally:
        ksmon.removeHandler(handler)

    (entry,) = entries(stream)
    assert entry["message"] == "thread sink-thread died"
    assert "could not open ***" in entry["exception"]
    assert PASSWORD not in stream.getvalue()


def test_short_values_are_not_redacted_and_longer_secrets_go_whole() -> None:
    redaction.remember("ab")
    redaction.remember("secret-part")
    redaction.remember("secret-part-and-more")

    assert redaction.redact("ab secret-part-and-more") == "ab ***"
    assert redaction.redact("x secret-part y") == "x *** y"
