"""Reading a Kafka Streams app's metrics as the JMX exporter prints them by default:
real captures of the fixture app on Kafka Streams 4.3.1 and 3.9.1 (exporter 1.0.1),
exporter 0.x spellings, and names that are missing, renamed or malformed."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.streams.app_metrics import (
    AppMetrics,
    CoordinatorMetrics,
    StateUpdaterMetrics,
    StreamsClientMetrics,
    TaskRestoreMetrics,
    parse_app_metrics,
    relevant_line,
    relevant_raw_line,
    stream_thread_of_consumer,
    thread_index,
)

CAPTURES = Path(__file__).resolve().parents[2] / "data" / "jmx-exporter"
APP43 = "dumpapp-5118960c-55bf-46ff-b9f2-ad95ee6584c5"
APP39 = "app4-06ad48b3-2bdd-44eb-9dae-6a5f86915076"


def capture(name: str) -> AppMetrics:
    return parse_app_metrics((CAPTURES / name).read_text())


def test_kafka_streams_4_3_exports_client_and_thread_state_and_the_process_id() -> None:
    metrics = capture("streams-4.3.1-running.txt")

    assert metrics.clients == (
        StreamsClientMetrics(
            client_id=APP43,
            process_id="5118960c-55bf-46ff-b9f2-ad95ee6584c5",
            application_id="dumpapp",
            state="RUNNING",
            alive_stream_threads=2,
            failed_stream_threads=0.0,
            recording_level="INFO",
        ),
    )
    assert [(t.thread_id, t.state) for t in metrics.threads] == [
        (f"{APP43}-StreamThread-1", "RUNNING"),
        (f"{APP43}-StreamThread-2", "RUNNING"),
    ]
    assert metrics.jvm_started_at == 1795388444.217
    assert metrics.unparsed_lines == 0


def test_exporter_1x_names_without_total_are_read_like_the_kafka_names_with_it() -> None:
    metrics = capture("streams-4.3.1-running.txt")

    # rebalance-total -> ..._rebalance,
    # restore-remaining-records-total -> ..._restore_remaining_records
    assert metrics.coordinators[0] == CoordinatorMetrics(
        f"{APP43}-StreamThread-1-consumer",
        rebalance_total=1.0,
        failed_rebalance_total=13.0,
        last_rebalance_seconds_ago=9.0,
    )
    assert len(metrics.tasks) == 8, "two sub-topologies x four partitions"
    assert metrics.tasks[0] == TaskRestoreMetrics(f"{APP43}-StreamThread-1", "0_0", 0, 0.0)
    assert metrics.state_updaters[0] == StateUpdaterMetrics(f"{APP43}-StateUpdater-1", 0, 0, 0, 0.0)
    assert {s.store for s in metrics.stores} == {"counts"}


def test_kafka_streams_3_9_has_no_state_metrics_and_they_stay_unknown() -> None:
    metrics = capture("streams-3.9.1-running.txt")

    (client,) = metrics.clients
    assert client == StreamsClientMetrics(APP39, alive_stream_threads=2, failed_stream_threads=0.0)
    assert (client.state, client.process_id, client.recording_level) == (None, None, None)
    assert metrics.threads == (), "no thread-state metric before 4.0"
    assert [c.client_id for c in metrics.coordinators] == [
        f"{APP39}-StreamThread-1-consumer",
        f"{APP39}-StreamThread-2-consumer",
    ]
    assert len(metrics.tasks) == 4
    assert len(metrics.state_updaters) == 2, "3.8+ restores in state-updater threads"


def test_a_client_closed_by_shutdown_client_leaves_only_the_jvm() -> None:
    metrics = capture("streams-4.3.1-shutdown-client.txt")

    assert metrics.jvm_started_at is not None
    assert metrics.clients == ()
    assert metrics.threads == ()
    assert metrics.coordinators == ()
    assert metrics.tasks == ()


def test_exporter_0x_spellings_with_total_and_trailing_commas() -> None:
    metrics = parse_app_metrics((CAPTURES / "exporter-0.x-style.txt").read_text())

    assert metrics.clients == (StreamsClientMetrics("app-1", alive_stream_threads=1),)
    assert metrics.coordinators == (
        CoordinatorMetrics(
            "app-1-StreamThread-1-consumer",
            rebalance_total=5.0,
            failed_rebalance_total=1.0,
            last_rebalance_seconds_ago=None,  # -1: never rebalanced
        ),
    )
    assert metrics.tasks == (TaskRestoreMetrics("app-1-StreamThread-1", "1_0", 1200, 300.0),), (
        "restore-rate is another metric, not restore-total"
    )


@pytest.mark.parametrize(
    ("value", "state"),
    [
        pytest.param("0.0", "CREATED", id="0 CREATED: built, not started"),
        pytest.param("1.0", "REBALANCING", id="1 REBALANCING: joining or restoring"),
        pytest.param("2.0", "RUNNING", id="2 RUNNING"),
        pytest.param("3.0", "PENDING_SHUTDOWN", id="3 PENDING_SHUTDOWN: close() was called"),
        pytest.param(
            "4.0", "NOT_RUNNING", id="4 NOT_RUNNING: named, though the metrics are gone by then"
        ),
        pytest.param(
            "5.0",
            "PENDING_ERROR",
            id="5 PENDING_ERROR: a fatal error; shown while the threads stop, so it must parse",
        ),
        pytest.param(
            "6.0",
            "ERROR",
            id="6 ERROR: Kafka Streams 4.3 never exports it, but an exporter that does is read",
        ),
        pytest.param("7.0", None, id="7: past the last state (a newer Kafka's): unknown"),
        pytest.param("-1.0", None, id="negative: no ordinal"),
        pytest.param("5.5", None, id="fractional: no ordinal, not rounded to a state"),
        pytest.param("NaN", None, id="NaN: unknown"),
    ],
)
def test_client_state_is_the_ordinal_of_kafka_streams_state(value: str, state: str | None) -> None:
    text = f'kafka_streams_stream_metrics_client_state{{client_id="c",process_id="P"}} {value}\n'

    (client,) = parse_app_metrics(text).clients

    assert client.state == state


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            'kafka_streams_stream_metrics_client_state{client_id="c",process_id="P"} 9.0\n',
            StreamsClientMetrics("c", process_id="p", state=None),
            id="an ordinal no Kafka version has is unknown, not a state",
        ),
        pytest.param(
            'kafka_streams_stream_metrics_alive_stream_threads{client_id="c"} NaN\n',
            StreamsClientMetrics("c", alive_stream_threads=None),
            id="NaN is unknown, not zero",
        ),
        pytest.param(
            'kafka_streams_stream_metrics_alive_stream_threads{client_id="c"} 1.5\n',
            StreamsClientMetrics("c", alive_stream_threads=None),
            id="a fractional thread count is not a count",
        ),
        pytest.param(
            'kafka_streams_stream_metrics_alive_threads{client_id="c"} 2.0\n',
            None,
            id="a renamed metric is not guessed at",
        ),
        pytest.param(
            "kafka_streams_stream_metrics_alive_stream_threads 2.0\n",
            None,
            id="without the client_id label it cannot be attributed",
        ),
    ],
)
def test_unknown_values_and_names_degrade_to_none(
    text: str, expected: StreamsClientMetrics | None
) -> None:
    clients = parse_app_metrics(text).clients

    assert clients == ((expected,) if expected is not None else ())


def test_a_malformed_line_costs_only_itself() -> None:
    text = (
        'kafka_streams_stream_metrics_alive_stream_threads{client_id="c"} 2.0\n'
        'kafka_streams_stream_metrics_failed_stream_threads{client_id="c" 1.0\n'
        'kafka_streams_stream_thread_metrics_thread_state{thread_id="c-StreamThread-1"} 6.0\n'
    )

    metrics = parse_app_metrics(text)

    assert metrics.unparsed_lines == 1
    assert metrics.clients == (StreamsClientMetrics("c", alive_stream_threads=2),)
    assert [t.state for t in metrics.threads] == ["DEAD"]


@given(st.text(max_size=300))
def test_never_raises_on_any_text(text: str) -> None:
    assert isinstance(parse_app_metrics("kafka_streams_stream_metrics_" + text), AppMetrics)


def test_the_line_filter_keeps_what_is_read_and_drops_the_rest() -> None:
    keep = 'kafka_streams_stream_metrics_alive_stream_threads{client_id="c"} 2.0'
    drop = 'kafka_consumer_consumer_fetch_manager_metrics_records_lag{partition="0"} 5.0'

    assert relevant_line(keep)
    assert relevant_raw_line(keep.encode())
    assert not relevant_line(drop)
    assert not relevant_line("# HELP kafka_streams_stream_metrics_alive_stream_threads ...")


@pytest.mark.parametrize(
    ("name", "index", "thread"),
    [
        ("app-1-StreamThread-3", 3, None),
        ("app-1-StreamThread-3-consumer", None, "app-1-StreamThread-3"),
        ("app-1-StreamThread-3-restore-consumer", None, None),
        ("app-1-StateUpdater-1", None, None),
        ("app-1-StreamThread-03", None, None),
    ],
)
def test_thread_names(name: str, index: int | None, thread: str | None) -> None:
    assert thread_index(name) == index
    assert stream_thread_of_consumer(name) == thread
