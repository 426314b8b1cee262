"""Reading a Kafka Streams app's metrics as Micrometer's ``KafkaStreamsMetrics`` binder
prints them on a Prometheus registry (what a Spring Boot app serves at
``/actuator/prometheus``): a real capture of the fixture app, which naming a page is in,
and the fields a page lacks."""

from pathlib import Path

import pytest

from agent.config.schema import APP_METRICS_DIALECTS
from agent.streams.app_metrics import (
    DIALECT_NAMES,
    CoordinatorMetrics,
    StateUpdaterMetrics,
    StreamsClientMetrics,
    StreamThreadMetrics,
    TaskRestoreMetrics,
    detect_dialect,
    parse_app_metrics,
    relevant_line,
)

DATA = Path(__file__).resolve().parents[2] / "data"
PAGE = (DATA / "micrometer" / "streams-4.3.1-running.txt").read_text()
PROCESS = "43a675e2-0e38-4006-880d-648cc1c00857"
CLIENT = f"dumpapp-{PROCESS}"


def test_the_micrometer_page_gives_the_fields_the_jmx_exporter_page_gives() -> None:
    metrics = parse_app_metrics(PAGE)

    assert metrics.dialect == "micrometer"
    assert metrics.clients == (
        StreamsClientMetrics(
            client_id=CLIENT,
            process_id=PROCESS,
            application_id="dumpapp",
            state="RUNNING",
            alive_stream_threads=2,
            failed_stream_threads=0.0,  # ..._failed_stream_threads_total: a counter
            recording_level="DEBUG",
        ),
    )
    assert metrics.threads == (
        StreamThreadMetrics(f"{CLIENT}-StreamThread-1", "RUNNING"),
        StreamThreadMetrics(f"{CLIENT}-StreamThread-2", "RUNNING"),
    )
    assert metrics.coordinators[0] == CoordinatorMetrics(
        f"{CLIENT}-StreamThread-1-consumer",
        rebalance_total=2.0,
        failed_rebalance_total=4.0,
        last_rebalance_seconds_ago=4.0,
    )
    assert len(metrics.tasks) == 4, "two sub-topologies x two partitions"
    assert metrics.tasks[0] == TaskRestoreMetrics(f"{CLIENT}-StreamThread-1", "0_0", 0, 0.0)
    updater = StateUpdaterMetrics(f"{CLIENT}-StateUpdater-1", 0, 0, 0, 0.0)
    assert metrics.state_updaters[0] == updater
    assert {s.store for s in metrics.stores} == {"counts"}
    assert metrics.jvm_started_at == 1796249682.772, "UptimeMetrics' process_start_time_seconds"
    assert (metrics.missing, metrics.unparsed_lines) == ((), 0)


def test_the_tags_micrometer_and_spring_add_are_not_part_of_any_identity() -> None:
    metrics = parse_app_metrics(PAGE)

    assert "kafka_version" in PAGE, "the capture has Micrometer's tag"
    assert "spring_id" in PAGE, "and Spring's"
    assert {t.thread_id for t in metrics.tasks} == {
        f"{CLIENT}-StreamThread-1",
        f"{CLIENT}-StreamThread-2",
    }
    assert {c.client_id for c in metrics.clients} == {CLIENT}


JMX_PAGE = (DATA / "jmx-exporter" / "streams-4.3.1-running.txt").read_text()


@pytest.mark.parametrize(
    ("names", "dialect", "why"),
    [
        (["kafka_stream_alive_stream_threads"], "micrometer", "a Micrometer name"),
        (
            ["kafka_streams_stream_metrics_alive_stream_threads"],
            "jmx-exporter",
            "a default JMX exporter name",
        ),
        (
            ["kafka_consumer_coordinator_rebalance", "process_start_time_seconds"],
            "micrometer",
            "a client that has only its consumers bound so far is still Micrometer's",
        ),
        (["process_start_time_seconds"], None, "both namings have it: it says nothing"),
        ([], None, "an empty page (an app starting, or not a Kafka Streams app)"),
        (["jvm_memory_used_bytes"], None, "no Kafka Streams name at all"),
    ],
)
def test_the_naming_is_told_by_the_names_only_it_has(
    names: list[str], dialect: str | None, why: str
) -> None:
    assert detect_dialect(names) == dialect, why


def test_a_naming_set_in_the_config_is_read_even_where_the_page_is_in_another() -> None:
    told = parse_app_metrics(PAGE, "jmx-exporter")

    assert told.dialect == "jmx-exporter"
    assert told.clients == (), "no default name on a Micrometer page: nothing is read"
    assert told.missing == (), "without a client there is nothing a client should have shown"
    default = parse_app_metrics(JMX_PAGE, "jmx-exporter")
    assert default.clients == parse_app_metrics(JMX_PAGE).clients


def test_a_page_without_the_consumers_metrics_names_them_as_missing() -> None:
    page = "".join(
        line
        for line in PAGE.splitlines(True)
        if not line.startswith("kafka_consumer_coordinator_") and "process_start" not in line
    )

    metrics = parse_app_metrics(page)

    assert metrics.clients, "the client is still there"
    assert metrics.missing == (
        "failed_rebalance_total",
        "last_rebalance_seconds_ago",
        "process_start_time_seconds (JVM restarts)",
        "rebalance_total",
    )
    assert metrics.coordinators == ()
    assert metrics.jvm_started_at is None, "unknown, never zero"


@pytest.mark.parametrize(
    ("line", "kept", "why"),
    [
        ('kafka_stream_thread_thread_state{thread_id="a-StreamThread-1"} 4.0', True, "read"),
        ('kafka_stream_task_restore_total{task_id="0_0"} 1.0', True, "restored records"),
        ('kafka_consumer_coordinator_rebalance_total{client_id="c"} 2.0', True, "rebalances"),
        ('kafka_stream_thread_poll_rate{thread_id="t"} 1.8', False, "a thread metric not read"),
        ('kafka_consumer_fetch_manager_records_lag{client_id="c"} 0.0', False, "fetch metrics"),
        ("# HELP kafka_stream_alive_stream_threads The current number", False, "a comment"),
    ],
)
def test_the_line_filter_keeps_micrometer_lines_that_are_read(
    line: str, kept: bool, why: str
) -> None:
    assert relevant_line(line) is kept, why


def test_the_config_offers_exactly_the_namings_the_reader_has() -> None:
    assert set(APP_METRICS_DIALECTS) == {"auto", *DIALECT_NAMES}
