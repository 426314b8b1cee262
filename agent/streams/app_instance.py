"""The watched Kafka Streams instance in one scrape of its JVM, and what vanished metrics mean.

A JVM may hold other Kafka clients (and, rarely, other KafkaStreams
instances); ``observe_instance`` keeps the parts that belong to the watched
``application.id``: its client(s), their stream threads (with each thread's
main-consumer coordinator metrics), state-updater threads, tasks and stores.

When a KafkaStreams client closes, cleanly or to ERROR after a fatal thread
failure (``SHUTDOWN_CLIENT``), it removes *all* its metrics while the JVM and
its exporter keep serving. Absence alone is ambiguous (an app still starting
has none yet either), so the previous scrapes are remembered: client metrics
seen earlier in the *same* JVM (same ``process_start_time_seconds``) and gone
now mean the client is closed, and a closed client runs no stream threads.
Without the JVM's start time nothing is inferred.

A closed client's state is inferred too, because ``client-state`` can never
say it: Kafka Streams removes the client's metrics *before* it enters
NOT_RUNNING or ERROR (``KafkaStreams.shutdownHelper``: ``metrics.close()``,
then ``setState``), so the metric reads at most PENDING_SHUTDOWN or
PENDING_ERROR, for as long as the threads take to stop. See
``closed_client_state``.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from agent.streams.app_metrics import (
    AppMetrics,
    CoordinatorMetrics,
    StateUpdaterMetrics,
    StreamsClientMetrics,
    TaskRestoreMetrics,
    stream_thread_of_consumer,
    thread_index,
)
from agent.streams.state_dir import process_id_from_client_id

DEAD = "DEAD"
N = TypeVar("N", int, float)

# The KafkaStreams states a client passes through only on its way to NOT_RUNNING, that
# is, after ``close()`` was called.
_CLOSING_ON_REQUEST = frozenset({"PENDING_SHUTDOWN", "NOT_RUNNING"})


@dataclass(frozen=True, slots=True)
class ThreadView:
    thread_id: str
    index: int | None = None
    state: str | None = None
    coordinator: CoordinatorMetrics | None = None


@dataclass(frozen=True, slots=True)
class InstanceView:
    """The watched instance as one scrape (and the memory of earlier ones) shows it."""

    client_ids: tuple[str, ...] = ()
    process_id: str | None = None
    # As the app reports it; for a closed client, inferred (``closed_client_state``).
    client_state: str | None = None
    alive_stream_threads: int | None = None
    failed_stream_threads: float | None = None
    recording_level: str | None = None
    # Its metrics were seen earlier in this JVM and are gone: the client is closed.
    closed: bool = False
    threads: tuple[ThreadView, ...] = ()
    tasks: tuple[TaskRestoreMetrics, ...] = ()
    state_updaters: tuple[StateUpdaterMetrics, ...] = ()
    stores: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True, slots=True)
class InstanceMemory:
    """What earlier scrapes of the same JVM showed; reset when the JVM changes."""

    jvm_started_at: float | None = None
    client_ids: tuple[str, ...] = ()
    # Every stream thread seen in this JVM: a client closing removes its threads'
    # metrics one by one, so the last scrape before it vanished may miss some.
    thread_ids: tuple[str, ...] = ()
    process_id: str | None = None
    # The client's state at the last scrape that showed one: which way it closed.
    last_client_state: str | None = None


def closed_client_state(last_seen: str | None) -> str:
    """The state a client ended in whose metrics vanished from a JVM still serving them.

    Only ``close()`` leads to NOT_RUNNING, through PENDING_SHUTDOWN; a scrape that
    saw either knows. Anything else, PENDING_ERROR or no sign of a close at all (the
    whole close fell between two scrapes, or a 3.x app has no ``client-state``),
    reads as ERROR: an app closes its client on purpose when its JVM is about to
    exit, which takes the metrics endpoint with it (the scrape then fails and
    nothing is inferred), whereas a client that closed itself (``SHUTDOWN_CLIENT``,
    a global thread's failure, another instance's ``SHUTDOWN_APPLICATION``) leaves
    its JVM serving. The one scrape that may land between a clean close and the
    JVM's exit reads ERROR too; the alert on it waits longer than that.
    """
    return "NOT_RUNNING" if last_seen in _CLOSING_ON_REQUEST else "ERROR"


def observe_instance(
    metrics: AppMetrics, application_id: str, memory: InstanceMemory
) -> tuple[InstanceView, InstanceMemory]:
    """The watched instance in ``metrics``, and the memory to pass to the next call."""
    started = metrics.jvm_started_at
    same_jvm = started is not None and started == memory.jvm_started_at
    if not same_jvm:
        memory = InstanceMemory(jvm_started_at=metrics.jvm_started_at)
    clients = _app_clients(metrics.clients, application_id)
    if not clients:
        if same_jvm and memory.client_ids:
            return _closed(memory), memory
        return InstanceView(), memory
    view = _view(metrics, clients, application_id)
    threads = set(memory.thread_ids) | {t.thread_id for t in view.threads}
    remembered = InstanceMemory(
        jvm_started_at=metrics.jvm_started_at,
        client_ids=view.client_ids,
        thread_ids=tuple(sorted(threads, key=lambda t: (thread_index(t) or 0, t))),
        process_id=view.process_id or memory.process_id,
        last_client_state=view.client_state or memory.last_client_state,
    )
    return view, remembered


def _app_clients(
    clients: Iterable[StreamsClientMetrics], application_id: str
) -> tuple[StreamsClientMetrics, ...]:
    clients = tuple(clients)
    labelled = [c for c in clients if c.application_id is not None]
    if labelled:  # 4.0+: the client says which application it runs
        return tuple(c for c in labelled if c.application_id == application_id)
    mine = tuple(c for c in clients if c.client_id.startswith(application_id + "-"))
    # A 3.x app with its own client.id: the only Streams client in the JVM is the one.
    return mine or (clients if len(clients) == 1 else ())


def _view(
    metrics: AppMetrics, clients: tuple[StreamsClientMetrics, ...], application_id: str
) -> InstanceView:
    client_ids = tuple(c.client_id for c in clients)
    thread_prefixes = tuple(f"{c}-StreamThread-" for c in client_ids)
    updater_prefixes = tuple(f"{c}-StateUpdater-" for c in client_ids)
    mine = [t for t in metrics.threads if t.thread_id.startswith(thread_prefixes)]
    states = {t.thread_id: t.state for t in mine}
    coordinators = {}
    for coordinator in metrics.coordinators:
        thread = stream_thread_of_consumer(coordinator.client_id)
        if thread is not None and thread.startswith(thread_prefixes):
            coordinators[thread] = coordinator
    tasks = tuple(t for t in metrics.tasks if t.thread_id.startswith(thread_prefixes))
    thread_ids = set(states) | set(coordinators) | {t.thread_id for t in tasks}
    threads = tuple(
        ThreadView(thread, thread_index(thread), states.get(thread), coordinators.get(thread))
        for thread in sorted(thread_ids, key=lambda t: (thread_index(t) or 0, t))
    )
    process_ids = {c.process_id for c in clients if c.process_id is not None} or {
        derived
        for c in clients
        if (derived := process_id_from_client_id(c.client_id, application_id)) is not None
    }
    single = clients[0] if len(clients) == 1 else None
    return InstanceView(
        client_ids=client_ids,
        process_id=process_ids.pop() if len(process_ids) == 1 else None,
        client_state=single.state if single is not None else None,
        alive_stream_threads=_sum(c.alive_stream_threads for c in clients),
        failed_stream_threads=_sum(c.failed_stream_threads for c in clients),
        recording_level=single.recording_level if single is not None else None,
        threads=threads,
        tasks=tasks,
        state_updaters=tuple(
            u for u in metrics.state_updaters if u.thread_id.startswith(updater_prefixes)
        ),
        stores=frozenset(
            s.store for s in metrics.stores if s.thread_id.startswith(thread_prefixes)
        ),
    )


def _closed(memory: InstanceMemory) -> InstanceView:
    return InstanceView(
        client_ids=memory.client_ids,
        process_id=memory.process_id,
        client_state=closed_client_state(memory.last_client_state),
        alive_stream_threads=0,
        closed=True,
        threads=tuple(ThreadView(t, thread_index(t), DEAD) for t in memory.thread_ids),
    )


def _sum(values: Iterable[N | None]) -> N | None:
    """The total, or None when any part is unknown (a partial sum would look exact)."""
    items = list(values)
    known = [v for v in items if v is not None]
    if not items or len(known) < len(items):
        return None
    total = known[0]
    for value in known[1:]:
        total += value
    return total
