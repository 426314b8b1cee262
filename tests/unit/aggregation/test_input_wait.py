"""The job's wait for its input: what it says (each change once), how often it checks,
and when it gives up (a stop). The probes' Kafka side runs in
tests/integration/test_start_order.py."""

import itertools
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.aggregation.spark.input_wait import (
    InputStatus,
    InputWatch,
    Probe,
    backoff_delays,
    directory_probe,
    kafka_input,
    spool_input,
    wait_for_input,
)

READY = Probe(InputStatus.READY)
MISSING = Probe(InputStatus.MISSING)
AWAY = Probe(InputStatus.UNREACHABLE, "KafkaTimeoutError: Unable to bootstrap")
TOPIC = kafka_input("ksmon.snapshots", "main", ("k1:9092", "k2:9092"))

WAITING = (
    logging.INFO,
    "waiting for snapshot topic ksmon.snapshots on cluster main to exist "
    "(the agent creates it with its first snapshot)",
)
CANNOT_REACH = (
    logging.WARNING,
    "cannot check for snapshot topic ksmon.snapshots on cluster main at bootstrap servers "
    "k1:9092,k2:9092: KafkaTimeoutError: Unable to bootstrap; trying again",
)
ANSWERS = (logging.INFO, "cluster main answers at bootstrap servers k1:9092,k2:9092")
APPEARED = (
    logging.INFO,
    "snapshot topic ksmon.snapshots on cluster main exists now; starting the streaming query",
)


def said(watch: InputWatch, *probes: Probe) -> list[tuple[int, str]]:
    return [line for probe in probes for line in watch.observe(probe)]


def test_an_input_there_at_the_first_check_is_not_mentioned() -> None:
    assert said(InputWatch(TOPIC), READY) == []


def test_a_missing_topic_is_said_once_however_often_it_is_checked_and_again_when_it_appears() -> (
    None
):
    assert said(InputWatch(TOPIC), MISSING, MISSING, MISSING, READY) == [WAITING, APPEARED]


def test_a_cluster_away_is_one_warning_naming_its_servers_and_one_line_when_it_answers() -> None:
    assert said(InputWatch(TOPIC), AWAY, AWAY, READY) == [CANNOT_REACH, ANSWERS]
    assert said(InputWatch(TOPIC), AWAY, AWAY, MISSING, MISSING, READY) == [
        CANNOT_REACH,
        ANSWERS,
        WAITING,
        APPEARED,
    ]
    # Away again while waiting for the topic: said again, once.
    assert said(InputWatch(TOPIC), MISSING, AWAY, AWAY, MISSING) == [
        WAITING,
        CANNOT_REACH,
        ANSWERS,
        WAITING,
    ]


def test_a_spool_directory_names_the_directory_and_who_creates_it() -> None:
    watch = InputWatch(spool_input(Path("/var/spool/ksmon")))
    assert said(watch, MISSING, READY) == [
        (
            logging.INFO,
            "waiting for spool directory /var/spool/ksmon to exist "
            "(the agent creates it when it starts)",
        ),
        (
            logging.INFO,
            "spool directory /var/spool/ksmon exists now; starting the streaming query",
        ),
    ]


def test_checks_back_off_doubling_up_to_a_bound() -> None:
    assert list(itertools.islice(backoff_delays(1.0, 10.0), 7)) == [1, 2, 4, 8, 10, 10, 10]
    assert list(itertools.islice(backoff_delays(0.5, 3.0), 5)) == [0.5, 1, 2, 3, 3]


def _probes(*results: Probe) -> Iterator[Probe]:
    yield from results
    raise AssertionError("checked again after the input was there")


def test_the_wait_ends_when_the_input_appears_and_says_so_in_the_log_and_the_metrics(
    caplog: pytest.LogCaptureFixture,
) -> None:
    probes = _probes(AWAY, MISSING, MISSING, READY)
    waiting: list[bool] = []
    with caplog.at_level(logging.INFO, logger="agent.aggregation.spark.input_wait"):
        ready = wait_for_input(
            lambda: next(probes),
            InputWatch(TOPIC),
            threading.Event(),
            waiting=waiting.append,
            delays=itertools.repeat(0.0),
        )
    assert ready
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        CANNOT_REACH,
        ANSWERS,
        WAITING,
        APPEARED,
    ]
    assert waiting == [True, True, True, False]


def test_a_stop_while_waiting_ends_the_wait_without_the_input() -> None:
    stop = threading.Event()
    checks = 0

    def probe() -> Probe:
        nonlocal checks
        checks += 1
        if checks == 3:
            stop.set()
        return MISSING

    assert not wait_for_input(probe, InputWatch(TOPIC), stop, delays=itertools.repeat(0.0))
    assert checks == 3


def test_a_directory_is_there_once_it_exists(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    assert directory_probe(spool) == MISSING
    (tmp_path / "file").write_text("")
    assert directory_probe(tmp_path / "file") == MISSING, "a file is no spool directory"
    spool.mkdir()
    assert directory_probe(spool) == READY
