"""The task loads the job publishes for the load-aware task assignor: which rates a group's
record carries, the record's shape, and a publisher whose cluster is away."""

import logging

import pytest

from agent.aggregation.judging.board import Board, GroupTaskRates
from agent.aggregation.judging.bucket import SeriesGauges
from agent.aggregation.judging.results import TASK_RATE, THREAD_LOAD
from agent.aggregation.judging.rules.base import Gauge
from agent.aggregation.outputs.task_loads_topic import RETRY_AFTER, TaskLoadsPublisher
from agent.aggregation.outputs.topics import TopicToCreate
from agent.embedded.ports import free_port
from agent.model.records import NewerSchemaError, RecordError
from agent.model.task_loads import TaskLoads


def _series(agent: str, t: float, **rates: float) -> SeriesGauges:
    gauges = tuple(Gauge(TASK_RATE, rate, task=task) for task, rate in rates.items())
    return SeriesGauges(agent, t, (*gauges, Gauge(THREAD_LOAD, 1.0, process="p", thread=1)))


def test_a_group_s_task_rates_come_from_its_newest_series_that_has_them() -> None:
    board = Board()
    board.gauges[("local", "app")] = {
        "central": _series("central", 100.0, **{"0_0": 1.0}),
        "sidecar": _series("sidecar", 110.0, **{"0_0": 2.0, "0_1": 4.0}),
    }
    # The newest series has no task rates (a plain consumer's view, say): the next one's.
    board.gauges[("local", "other")] = {
        "a": _series("a", 50.0, **{"1_0": 3.0}),
        "b": _series("b", 60.0),
    }
    board.gauges[("local", "plain-consumer")] = {"a": _series("a", 70.0)}
    assert board.task_rates() == [
        GroupTaskRates("local", "app", 110.0, {"0_0": 2.0, "0_1": 4.0}),
        GroupTaskRates("local", "other", 50.0, {"1_0": 3.0}),
    ]


def test_the_record_is_versioned_keyed_by_cluster_and_application_and_reads_back() -> None:
    record = TaskLoads.of("orders", 1_767_225_600.25, {"1_0": 3.0, "0_1": 12.5})
    assert record.to_json() == (
        b'{"schema_version":1,"application_id":"orders",'
        b'"measured_at":"2026-01-01T00:00:00.250Z","tasks":{"0_1":12.5,"1_0":3.0}}'
    )
    assert TaskLoads.key_of("prod", "orders") == b"prod/orders"
    assert TaskLoads.from_json(record.to_json()) == record


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (
            b'{"schema_version":1,"application_id":"a","measured_at":"x","tasks":{"0_1":"fast"}}',
            r"\$\.tasks\[\.\.\.\]: expected `float`, got `str`",
        ),
        (
            b'{"schema_version":1,"measured_at":"x"}',
            r"\$: object missing required field `application_id`",
        ),
        (b'{"application_id":"a"}', r"\$\.schema_version: expected a positive integer"),
    ],
    ids=["load-not-a-number", "no-application", "no-version"],
)
def test_a_malformed_record_names_its_field(value: bytes, error: str) -> None:
    with pytest.raises(RecordError, match=error):
        TaskLoads.from_json(value)


def test_a_record_of_a_newer_version_is_not_guessed_at() -> None:
    with pytest.raises(NewerSchemaError):
        TaskLoads.from_json(b'{"schema_version":2,"application_id":"a","measured_at":"x"}')


def test_a_publisher_whose_cluster_is_away_says_so_once_and_never_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Nothing listens on the port: the publish fails, is said once, and is not tried
    again (holding a batch up for the client's timeouts) until RETRY_AFTER has passed."""
    settings = {"bootstrap_servers": f"127.0.0.1:{free_port()}", "request_timeout_ms": 1000}
    now = [0.0]
    publisher = TaskLoadsPublisher(
        settings, "ksmon.task-loads", TopicToCreate(1, -1), clock=lambda: now[0]
    )
    loads = [GroupTaskRates("local", "app", 10.0, {"0_0": 1.0})]
    with caplog.at_level(logging.WARNING):
        assert publisher.publish(loads) == 0
        tried = len(caplog.records)
        now[0] = RETRY_AFTER - 1
        assert publisher.publish([GroupTaskRates("local", "app", 20.0, {"0_0": 1.0})]) == 0
        assert len(caplog.records) == tried, "not tried again before RETRY_AFTER"
        now[0] = RETRY_AFTER
        assert publisher.publish([GroupTaskRates("local", "app", 30.0, {"0_0": 1.0})]) == 0
        assert len(caplog.records) > tried, "tried again (the client logs its attempts)"
    publisher.close()
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.name.startswith("agent.")
    ]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("cannot publish task loads to ksmon.task-loads")


class _Recorded:
    """Stands in for the topic writer: keeps what would have been sent."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def ensure_topic(self) -> None:
        pass

    def send_all(self, records: list[tuple[bytes, bytes]], timeout: float) -> None:
        self.sent += [key for key, _ in records]

    def close(self) -> None:
        pass


def test_loads_already_published_are_not_sent_again_and_a_group_gone_is_forgotten() -> None:
    publisher = TaskLoadsPublisher({"bootstrap_servers": "127.0.0.1:1"}, "ksmon.task-loads")
    publisher.writer.close()
    recorded = _Recorded()
    publisher.writer = recorded  # type: ignore[assignment]
    a, b = (GroupTaskRates("local", g, 10.0, {"0_0": 1.0}) for g in ("a", "b"))
    assert publisher.publish([a, b]) == 2
    assert publisher.publish([a, b]) == 0, "nothing newer"
    assert publisher.publish([a]) == 0, "b left the board"
    assert publisher.publish([a, b]) == 1, "b is back: published again, a is not"
    assert recorded.sent == [b"local/a", b"local/b", b"local/b"]
