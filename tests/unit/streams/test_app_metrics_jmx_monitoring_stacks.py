"""Reading a Kafka Streams app's metrics as the JMX exporter prints them under the rules
of Confluent's jmx-monitoring-stacks (``kafka_streams.yml``): real captures of the
fixture app, which naming a page is in, and the samples those rules reshape."""

from pathlib import Path
from typing import Final

import pytest

from agent.streams.app_metrics import (
    CoordinatorMetrics,
    StateUpdaterMetrics,
    StreamsClientMetrics,
    StreamThreadMetrics,
    detect_dialect,
    parse_app_metrics,
    relevant_line,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "jmx-monitoring-stacks"
RUNNING = (DATA / "streams-4.3.1-running.txt").read_text()
PROCESS = "e60c4c0c-5e5d-4c18-8150-a215d3435096"
CLIENT = f"stacks-a7f2d2-{PROCESS}"


def test_the_stacks_page_gives_the_fields_the_default_naming_gives() -> None:
    metrics = parse_app_metrics(RUNNING)

    assert metrics.dialect == "jmx-monitoring-stacks"
    assert metrics.clients == (
        StreamsClientMetrics(
            client_id=CLIENT,
            process_id=PROCESS,  # folded into the name, its dashes turned to underscores
            application_id="stacks-a7f2d2",
            state="RUNNING",
            alive_stream_threads=2,  # a label and the sample's value
            failed_stream_threads=0.0,
            recording_level="INFO",
        ),
    )
    assert metrics.threads == (
        StreamThreadMetrics(f"{CLIENT}-StreamThread-1", "RUNNING"),
        StreamThreadMetrics(f"{CLIENT}-StreamThread-2", "RUNNING"),
    )
    assert metrics.coordinators[0] == CoordinatorMetrics(
        f"{CLIENT}-StreamThread-1-consumer",
        rebalance_total=2.0,
        failed_rebalance_total=9.0,
        last_rebalance_seconds_ago=2.0,
    ), "the rules' extra client_type label is no part of the identity"
    assert len(metrics.tasks) == 4, "two sub-topologies x two partitions"
    updater = StateUpdaterMetrics(f"{CLIENT}-StateUpdater-1", 0, 0, 0, 0.0)
    assert metrics.state_updaters[0] == updater
    assert {s.store for s in metrics.stores} == {"counts"}
    assert metrics.jvm_started_at == 1796298671.849
    assert (metrics.missing, metrics.unparsed_lines) == ((), 0)


def test_a_held_restore_shows_in_the_state_updater_as_with_the_default_naming() -> None:
    metrics = parse_app_metrics((DATA / "streams-4.3.1-restoring.txt").read_text())

    (client,) = metrics.clients
    assert (client.state, client.recording_level) == ("REBALANCING", "DEBUG")
    assert [u.active_restoring_tasks for u in metrics.state_updaters] == [1]
    assert [t.restored_records_total for t in metrics.tasks] == [0.0] * 4, "held: none yet"
    assert [t.state for t in metrics.threads] == ["PARTITIONS_ASSIGNED"]


def test_a_client_shutting_down_after_a_thread_death_shows_its_failed_thread() -> None:
    metrics = parse_app_metrics((DATA / "streams-4.3.1-pending-error.txt").read_text())

    (client,) = metrics.clients
    assert (client.state, client.alive_stream_threads, client.failed_stream_threads) == (
        "PENDING_ERROR",
        0,
        1.0,
    )
    assert {t.state for t in metrics.threads} == {"PENDING_SHUTDOWN"}


def test_a_3x_app_has_its_client_state_from_the_state_label_and_lacks_what_4x_added() -> None:
    metrics = parse_app_metrics((DATA / "streams-3.9.1-running.txt").read_text())

    (client,) = metrics.clients
    assert (client.state, client.process_id, client.alive_stream_threads) == ("RUNNING", None, 2)
    assert metrics.threads == (), "no thread-state before 4.0"
    assert metrics.missing == ("recording_level", "thread state")


STACKS: Final = "jmx-monitoring-stacks"


@pytest.mark.parametrize(
    ("line", "field", "why"),
    [
        (
            'kafka_streams_stream_metrics{alive_stream_threads="3",client_id="c"} 3.0',
            ("alive_stream_threads", 3),
            "the count is the sample's value",
        ),
        (
            'kafka_streams_stream_metrics{client_id="c",state="NOT_RUNNING"} 1.0',
            ("state", "NOT_RUNNING"),
            "the String attribute is a label; the sample is worth 1",
        ),
        (
            'kafka_streams_stream_metrics{client_id="c",state="SOMETHING_NEW"} 1.0',
            ("state", None),
            "a state this reader does not know stays unknown",
        ),
        (
            'kafka_streams_stream_metrics{client_id="c",version="4.3.1"} 1.0',
            ("state", None),
            "another attribute of the client is not read",
        ),
        (
            'kafka_streams_stream_metrics{alive_stream_threads="2",client_id="c",x="y"} 2.0',
            ("alive_stream_threads", None),
            "two labels beside client_id: not a shape these rules make",
        ),
        (
            "kafka_streams_stream_metrics_process_id_0a1b2c3d_0000_4000_8000_00000000000f"
            '_application_id_my_app_client_state{client_id="c"} 2.0',
            ("process_id", "0a1b2c3d-0000-4000-8000-00000000000f"),
            "the process id folded into the name comes back with its dashes",
        ),
        (
            'kafka_streams_stream_metrics_process_id_not_a_uuid_client_state{client_id="c"} 2.0',
            ("process_id", None),
            "a name that does not hold a uuid is not read",
        ),
    ],
)
def test_each_reshaped_client_sample_is_read_back(
    line: str, field: tuple[str, object], why: str
) -> None:
    assert relevant_line(line), why
    # Tells the page apart even where the line read is not itself one of the fields.
    page = 'kafka_streams_stream_metrics{client_id="c",commit_id="x"} 1.0\n' + line + "\n"
    metrics = parse_app_metrics(page, STACKS)
    name, expected = field
    (client,) = metrics.clients or (StreamsClientMetrics("c"),)
    assert getattr(client, name) == expected, why


@pytest.mark.parametrize(
    ("names", "dialect", "why"),
    [
        (["kafka_streams_stream_metrics"], STACKS, "the client's name bare, fields in labels"),
        (
            ["kafka_streams_stream_metrics", "kafka_streams_stream_task_metrics_restore"],
            STACKS,
            "its other names are the default ones: the bare client name decides",
        ),
        (
            ["kafka_streams_stream_metrics_alive_stream_threads"],
            "jmx-exporter",
            "the default naming has no bare client name",
        ),
        (
            ["kafka_streams_stream_metrics", "kafka_stream_alive_stream_threads"],
            "micrometer",
            "a page with Micrometer's names is Micrometer's",
        ),
    ],
)
def test_the_stacks_naming_is_told_by_its_bare_client_name(
    names: list[str], dialect: str, why: str
) -> None:
    assert detect_dialect(names) == dialect, why


def test_a_stacks_page_read_as_the_default_naming_has_no_client_fields() -> None:
    told = parse_app_metrics(RUNNING, "jmx-exporter")

    assert [c.alive_stream_threads for c in told.clients] == [], "no default client name there"
    assert told.threads == (), "thread state is under the folded name"
    assert len(told.tasks) == 4, "the names the two share are still read"


@pytest.mark.parametrize("capture", sorted(p.name for p in DATA.glob("*.txt")))
def test_the_lines_a_scrape_keeps_are_all_the_reader_needs(capture: str) -> None:
    page = (DATA / capture).read_text()
    kept = "".join(line for line in page.splitlines(keepends=True) if relevant_line(line))

    assert parse_app_metrics(kept) == parse_app_metrics(page)
