"""Picking the watched app out of a scrape, and inferring a closed client from vanished metrics."""

from dataclasses import replace
from pathlib import Path

import pytest

from agent.streams.app_instance import InstanceMemory, InstanceView, observe_instance
from agent.streams.app_metrics import (
    AppMetrics,
    CoordinatorMetrics,
    StreamsClientMetrics,
    StreamThreadMetrics,
    TaskRestoreMetrics,
    parse_app_metrics,
)

CAPTURES = Path(__file__).resolve().parents[2] / "data" / "jmx-exporter"
PID = "5118960c-55bf-46ff-b9f2-ad95ee6584c5"
CLIENT = f"dumpapp-{PID}"
JVM = 1_700_000_000.0


def running(jvm: float | None = JVM) -> AppMetrics:
    return AppMetrics(
        jvm_started_at=jvm,
        clients=(StreamsClientMetrics(CLIENT, PID, "dumpapp", "RUNNING", 2, 0.0, "INFO"),),
        threads=(
            StreamThreadMetrics(f"{CLIENT}-StreamThread-2", "RUNNING"),
            StreamThreadMetrics(f"{CLIENT}-StreamThread-1", "RUNNING"),
        ),
    )


def gone(jvm: float | None = JVM) -> AppMetrics:
    return AppMetrics(jvm_started_at=jvm)


def in_state(state: str | None, alive: int = 2) -> AppMetrics:
    """The client in ``state`` (None: a 3.x client, which has no client-state metric)."""
    client = StreamsClientMetrics(CLIENT, PID, "dumpapp", state, alive, 0.0, "INFO")
    return replace(running(), clients=(client,))


def sequence(*scrapes: AppMetrics) -> InstanceView:
    memory = InstanceMemory()
    view = InstanceView()
    for scrape in scrapes:
        view, memory = observe_instance(scrape, "dumpapp", memory)
    return view


def test_a_running_instance() -> None:
    view = sequence(running())

    assert (view.client_state, view.alive_stream_threads, view.process_id) == ("RUNNING", 2, PID)
    assert [(t.index, t.state) for t in view.threads] == [(1, "RUNNING"), (2, "RUNNING")]
    assert not view.closed


@pytest.mark.parametrize(
    ("scrapes", "closed", "alive"),
    [
        pytest.param(
            (running(), gone()),
            True,
            0,
            id="seen, then gone in the same JVM: closed, no thread alive",
        ),
        pytest.param(
            (running(), gone(), gone()),
            True,
            0,
            id="stays closed while the JVM stays",
        ),
        pytest.param((gone(),), False, None, id="never seen: still starting, or filtered: unknown"),
        pytest.param(
            (running(), gone(jvm=JVM + 60)),
            False,
            None,
            id="a new JVM (the container restarted) has not created its client yet: unknown",
        ),
        pytest.param(
            (running(jvm=None), gone(jvm=None)),
            False,
            None,
            id="without the JVM's start time a restart cannot be told apart: unknown",
        ),
        pytest.param(
            (running(), gone(), running()),
            False,
            2,
            id="metrics back (a new client in the same JVM): not closed",
        ),
    ],
)
def test_vanished_metrics(scrapes: tuple[AppMetrics, ...], closed: bool, alive: int | None) -> None:
    view = sequence(*scrapes)

    assert view.closed is closed
    assert view.alive_stream_threads == alive


def test_a_closed_client_reports_its_last_threads_dead_and_its_process_id() -> None:
    view = sequence(running(), gone())

    assert [(t.index, t.state) for t in view.threads] == [(1, "DEAD"), (2, "DEAD")]
    assert view.process_id == PID
    assert view.client_state == "ERROR", "closed with no sign of close(): by itself"


@pytest.mark.parametrize(
    ("scrapes", "state"),
    [
        pytest.param(
            (running(), gone()),
            "ERROR",
            id="RUNNING then gone: no close() seen, and the JVM serves on: closed to ERROR",
        ),
        pytest.param(
            (running(), in_state("PENDING_ERROR", alive=0), gone()),
            "ERROR",
            id="PENDING_ERROR then gone: the metrics went before ERROR could show",
        ),
        pytest.param(
            (running(), in_state("PENDING_SHUTDOWN"), gone()),
            "NOT_RUNNING",
            id="PENDING_SHUTDOWN then gone: close() was called, it ends NOT_RUNNING",
        ),
        pytest.param(
            (running(), in_state("PENDING_SHUTDOWN"), gone(), gone()),
            "NOT_RUNNING",
            id="and stays NOT_RUNNING while the JVM stays",
        ),
        pytest.param(
            (in_state(None), gone()),
            "ERROR",
            id="a 3.x client (no client-state) gone while the JVM serves: ERROR too",
        ),
        pytest.param(
            (running(), in_state("PENDING_ERROR", alive=1)),
            "PENDING_ERROR",
            id="PENDING_ERROR while its threads stop: read, not inferred",
        ),
        pytest.param(
            (running(), in_state("PENDING_SHUTDOWN"), gone(), running(), gone()),
            "ERROR",
            id="a new client in the same JVM is judged by its own states, not the old one's",
        ),
        pytest.param(
            (running(), gone(jvm=JVM + 60)),
            None,
            id="a new JVM without its client yet: not closed, unknown",
        ),
    ],
)
def test_a_closed_clients_state_from_the_last_state_seen(
    scrapes: tuple[AppMetrics, ...], state: str | None
) -> None:
    assert sequence(*scrapes).client_state == state


def test_real_captures_running_then_shutdown_client_in_the_same_jvm() -> None:
    before = parse_app_metrics((CAPTURES / "streams-4.3.1-running.txt").read_text())
    after = parse_app_metrics((CAPTURES / "streams-4.3.1-shutdown-client.txt").read_text())
    # The two captures come from two runs; pretend they are one JVM (as in the
    # integration test, which does this for real).
    assert after.jvm_started_at is not None
    before = replace(before, jvm_started_at=after.jvm_started_at)

    view = sequence(before, after)

    assert view.closed
    assert view.alive_stream_threads == 0
    assert view.client_state == "ERROR"


def test_only_the_watched_application_is_kept() -> None:
    other = StreamsClientMetrics("billing-x", "p2", "billing", "RUNNING", 4, 0.0)
    scrape = AppMetrics(
        jvm_started_at=JVM,
        clients=(*running().clients, other),
        threads=(StreamThreadMetrics("billing-x-StreamThread-1", "DEAD"),),
        coordinators=(
            CoordinatorMetrics(f"{CLIENT}-StreamThread-1-consumer", 3.0),
            CoordinatorMetrics("billing-x-StreamThread-1-consumer", 9.0),
            CoordinatorMetrics(f"{CLIENT}-StreamThread-1-restore-consumer", 1.0),
        ),
        tasks=(TaskRestoreMetrics("billing-x-StreamThread-1", "0_0", 5),),
    )

    view = sequence(scrape)

    assert view.client_ids == (CLIENT,)
    assert view.alive_stream_threads == 2
    assert [(t.thread_id, t.coordinator) for t in view.threads] == [
        (f"{CLIENT}-StreamThread-1", CoordinatorMetrics(f"{CLIENT}-StreamThread-1-consumer", 3.0))
    ]
    assert view.tasks == ()


@pytest.mark.parametrize(
    ("client_id", "kept"),
    [
        pytest.param(f"dumpapp-{PID}", True, id="3.x default client id <app>-<process>"),
        pytest.param("custom", True, id="3.x custom client.id, the only Streams client"),
    ],
)
def test_3x_clients_without_an_application_label(client_id: str, kept: bool) -> None:
    client = StreamsClientMetrics(client_id, alive_stream_threads=1)
    scrape = AppMetrics(jvm_started_at=JVM, clients=(client,))

    view = sequence(scrape)

    assert (view.alive_stream_threads == 1) is kept
    assert view.process_id == (PID if client_id.endswith(PID) else None)


def test_two_3x_clients_of_which_none_is_named_after_the_app_are_not_guessed() -> None:
    scrape = AppMetrics(
        jvm_started_at=JVM,
        clients=(StreamsClientMetrics("a", alive_stream_threads=1), StreamsClientMetrics("b")),
    )

    assert sequence(scrape).alive_stream_threads is None


def test_threads_that_vanished_before_the_client_are_still_reported_dead() -> None:
    # Closing removes thread metrics one by one: a scrape may catch thread 2 gone already.
    last = AppMetrics(
        jvm_started_at=JVM,
        clients=(StreamsClientMetrics(CLIENT, PID, "dumpapp", "PENDING_ERROR", 0, 0.0),),
        threads=(StreamThreadMetrics(f"{CLIENT}-StreamThread-1", "PENDING_SHUTDOWN"),),
    )

    view = sequence(running(), last, gone())

    assert [(t.index, t.state) for t in view.threads] == [(1, "DEAD"), (2, "DEAD")]
