"""A Kafka Streams app's own metrics, as the Prometheus JMX exporter prints them by default.

With no rules, the exporter names a metric ``<domain>_<type>_<attribute>`` (dashes
and dots to underscores) and turns the other MBean key properties into labels
(``streams-internals.md`` section 10)::

    kafka_streams_stream_metrics_alive_stream_threads{client_id="app-<uuid>"} 2.0
    kafka_streams_stream_thread_metrics_thread_state{process_id=...,thread_id=...} 4.0
    kafka_consumer_consumer_coordinator_metrics_rebalance_total{client_id=...-consumer} 3.0

Exporter 1.x drops a trailing ``_total`` from these untyped names
(``..._rebalance``, ``..._restore_remaining_records``) where 0.x keeps it, so
names are compared with any ``_total`` removed. Kafka Streams 4.0 added
``client-state``, ``thread-state``, ``recording-level`` and the ``process_id``
label; a 3.x app has none of them, and a name that is missing or renamed
simply leaves its field None (unknown), never zero.

Micrometer's naming is read by the same code, through a table
(``DIALECTS``) from its metric names to the names above: its
``KafkaStreamsMetrics`` binder on a ``PrometheusMeterRegistry`` (Spring Boot's
``/actuator/prometheus``) names a meter ``kafka.<group without -metrics>.<name>``,
so ``kafka_stream_alive_stream_threads`` and ``kafka_stream_thread_thread_state``;
tags keep Kafka's (``client_id``, ``thread_id``, ``task_id``) and add
``kafka_version`` (and Spring's ``spring_id``), which are ignored. A name ending
in ``total`` is a counter and keeps one ``_total``.

Confluent's jmx-monitoring-stacks rules (``kafka_streams.yml``) keep the default names
for most metrics but reshape the client's: alive and failed thread counts become
``kafka_streams_stream_metrics{client_id=...,alive_stream_threads="2"} 2.0`` (the
field a label, the value beside it), the String ``state`` a label of a sample worth 1,
and on 4.x, whose MBeans also carry ``process-id``, their greedy patterns fold that tag
into the name: ``kafka_streams_stream_thread_metrics_process_id_<uuid>_thread_state``
(the uuid's dashes become underscores). ``_stacks_sample`` reads them back.

``detect_dialect`` tells the namings apart by the names present.
``relevant_line`` picks the few sample lines either naming reads out of the
thousands an app exports (JVM, RocksDB, per-partition fetch metrics), so a
scrape can drop the rest while reading. ``parse_app_metrics`` never raises.
"""

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypeVar, get_args

T = TypeVar("T")
Samples = Mapping[str, list[tuple[Mapping[str, str], float]]]

_CLIENT: Final = "kafka_streams_stream_metrics_"
_ALIVE: Final = _CLIENT + "alive_stream_threads"
_FAILED: Final = _CLIENT + "failed_stream_threads"
_CLIENT_STATE: Final = _CLIENT + "client_state"
_RECORDING_LEVEL: Final = _CLIENT + "recording_level"
_APPLICATION_ID: Final = _CLIENT + "application_id"  # a label of client_state on 4.x
_THREAD_STATE: Final = "kafka_streams_stream_thread_metrics_thread_state"
_TASK: Final = "kafka_streams_stream_task_metrics_"
_REMAINING: Final = _TASK + "restore_remaining_records"
_RESTORED: Final = _TASK + "restore"  # restore-total, recorded at DEBUG level only
_UPDATER: Final = "kafka_streams_stream_state_updater_metrics_"
_UPDATER_FIELDS: Final = (
    "active_restoring_tasks",
    "standby_updating_tasks",
    "active_paused_tasks",
    "restore_records_rate",
)
_STORE_PROBE: Final = "kafka_streams_stream_state_metrics_put_rate"  # every store type has it
_COORDINATOR: Final = "kafka_consumer_consumer_coordinator_metrics_"
_COORDINATOR_FIELDS: Final = ("rebalance", "failed_rebalance", "last_rebalance_seconds_ago")
_JVM_START: Final = "process_start_time_seconds"

Dialect = Literal["jmx-exporter", "micrometer", "jmx-monitoring-stacks"]
DIALECT_NAMES: Final[tuple[Dialect, ...]] = get_args(Dialect)

Sample = tuple[str, Mapping[str, str], float]


@dataclass(frozen=True, slots=True)
class DialectTable:
    """One naming of the same metrics: each of its names and the default name it stands for."""

    name: Dialect
    names: Mapping[str, str]  # metric name (any ``_total`` removed) -> default name
    # For a naming that puts a field in a label or folds a label into the name: the
    # sample under its default name (None: not one the sidecar reads), and the first part
    # of the lines it reads that way.
    reshape: Callable[[Sample], Sample | None] | None = None
    reshaped_prefixes: tuple[str, ...] = ()


_DEFAULT_NAMES: Final = (
    _ALIVE,
    _FAILED,
    _CLIENT_STATE,
    _RECORDING_LEVEL,
    _THREAD_STATE,
    _REMAINING,
    _RESTORED,
    *(_UPDATER + f for f in _UPDATER_FIELDS),
    _STORE_PROBE,
    *(_COORDINATOR + f for f in _COORDINATOR_FIELDS),
    _JVM_START,
)

_MICROMETER_NAMES: Final = {
    "kafka_stream_alive_stream_threads": _ALIVE,
    "kafka_stream_failed_stream_threads": _FAILED,
    "kafka_stream_client_state": _CLIENT_STATE,
    "kafka_stream_recording_level": _RECORDING_LEVEL,
    "kafka_stream_thread_thread_state": _THREAD_STATE,
    "kafka_stream_task_restore_remaining_records": _REMAINING,
    "kafka_stream_task_restore": _RESTORED,
    **{"kafka_stream_state_updater_" + f: _UPDATER + f for f in _UPDATER_FIELDS},
    "kafka_stream_state_put_rate": _STORE_PROBE,
    **{"kafka_consumer_coordinator_" + f: _COORDINATOR + f for f in _COORDINATOR_FIELDS},
    _JVM_START: _JVM_START,  # Micrometer's UptimeMetrics, which Spring Boot binds
}

# KafkaStreams.State, StreamThread.State and Sensor.RecordingLevel, by ordinal (Kafka 4.x):
# client-state is the Integer gauge ``state.ordinal()`` (the String gauge ``state`` beside
# it the exporter skips). PENDING_ERROR (5) shows while a client shuts down to ERROR; ERROR
# (6) never does, as the client's metrics are gone by then (``app_instance`` infers it).
CLIENT_STATES: Final = (
    "CREATED",
    "REBALANCING",
    "RUNNING",
    "PENDING_SHUTDOWN",
    "NOT_RUNNING",
    "PENDING_ERROR",
    "ERROR",
)
THREAD_STATES: Final = (
    "CREATED",
    "STARTING",
    "PARTITIONS_REVOKED",
    "PARTITIONS_ASSIGNED",
    "RUNNING",
    "PENDING_SHUTDOWN",
    "DEAD",
)
RECORDING_LEVELS: Final = ("INFO", "DEBUG", "TRACE")

_STACKS_CLIENT: Final = "kafka_streams_stream_metrics"
_STACKS_CLIENT_LABELS: Final = {
    "alive_stream_threads": _ALIVE,
    "failed_stream_threads": _FAILED,
}
_UUID_IN_NAME: Final = r"(?P<process>[0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12})"
_STACKS_PROCESS_NAMES: Final = (
    (
        re.compile(f"{_CLIENT}process_id_{_UUID_IN_NAME}(?:_application_id_.+)?_client_state"),
        _CLIENT_STATE,
    ),
    (re.compile(f"{_CLIENT}process_id_{_UUID_IN_NAME}_recording_level"), _RECORDING_LEVEL),
    (
        re.compile(f"kafka_streams_stream_thread_metrics_process_id_{_UUID_IN_NAME}_thread_state"),
        _THREAD_STATE,
    ),
)


def _stacks_sample(sample: Sample) -> Sample | None:
    """A jmx-monitoring-stacks sample that is not under a default name, under its own."""
    name, labels, value = sample
    if name == _STACKS_CLIENT:
        return _stacks_client_sample(labels, value)
    for pattern, default_name in _STACKS_PROCESS_NAMES:
        match = pattern.fullmatch(name)
        if match is not None:
            return default_name, {**labels, "process_id": match["process"].replace("_", "-")}, value
    return None


def _stacks_client_sample(labels: Mapping[str, str], value: float) -> Sample | None:
    """One sample per attribute of the client: client_id and a label named after it."""
    client = labels.get("client_id")
    fields = [key for key in labels if key != "client_id"]
    if client is None or len(fields) != 1:
        return None
    (field,) = fields
    if field in _STACKS_CLIENT_LABELS:
        return _STACKS_CLIENT_LABELS[field], {"client_id": client}, value
    if field == "state" and labels[field] in CLIENT_STATES:
        return _CLIENT_STATE, {"client_id": client}, float(CLIENT_STATES.index(labels[field]))
    if field == "application_id":
        return _APPLICATION_ID, dict(labels), value
    return None


DIALECTS: Final[Mapping[Dialect, DialectTable]] = {
    "jmx-exporter": DialectTable("jmx-exporter", {n: n for n in _DEFAULT_NAMES}),
    "micrometer": DialectTable("micrometer", _MICROMETER_NAMES),
    "jmx-monitoring-stacks": DialectTable(
        "jmx-monitoring-stacks",
        {n: n for n in _DEFAULT_NAMES},
        reshape=_stacks_sample,
        reshaped_prefixes=(
            _STACKS_CLIENT + "{",
            _CLIENT + "process_id_",
            "kafka_streams_stream_thread_metrics_process_id_",
        ),
    ),
}
# Names only Micrometer's page has, which tell it apart (``detect_dialect``).
_MICROMETER_MARKERS: Final = frozenset(_MICROMETER_NAMES) - {_JVM_START}

# The fields that every running instance shows in a dialect that has them, whatever it is
# doing (tasks, restores and state updaters come and go): what ``missing_fields`` checks.
_ALWAYS_THERE: Final = frozenset(
    {_ALIVE, _FAILED, _CLIENT_STATE, _RECORDING_LEVEL, _THREAD_STATE, _JVM_START}
    | {_COORDINATOR + f for f in _COORDINATOR_FIELDS}
)
# Field names as the snapshot calls them, for the one line that says what is missing.
FIELD_NAMES: Final = {
    _ALIVE: "alive_stream_threads",
    _FAILED: "failed_stream_threads",
    _CLIENT_STATE: "client_state",
    _RECORDING_LEVEL: "recording_level",
    _THREAD_STATE: "thread state",
    _JVM_START: "process_start_time_seconds (JVM restarts)",
    _COORDINATOR + "rebalance": "rebalance_total",
    _COORDINATOR + "failed_rebalance": "failed_rebalance_total",
    _COORDINATOR + "last_rebalance_seconds_ago": "last_rebalance_seconds_ago",
}

# The first part of every sample line worth reading in any dialect (comments are never
# needed). A bare name is followed by its labels or its value.
_RELEVANT_PREFIXES: Final = tuple(
    sorted(
        {name for table in DIALECTS.values() for name in table.names}
        | {prefix for table in DIALECTS.values() for prefix in table.reshaped_prefixes}
    )
)
_RELEVANT_RAW_PREFIXES: Final = tuple(p.encode() for p in _RELEVANT_PREFIXES)

_STREAM_THREAD: Final = re.compile(r"(?P<base>.+)-StreamThread-(?P<n>0|[1-9][0-9]{0,9})")


@dataclass(frozen=True, slots=True)
class StreamsClientMetrics:
    """One KafkaStreams client (instance) in the JVM."""

    client_id: str
    process_id: str | None = None  # 4.0+
    application_id: str | None = None  # 4.0+
    state: str | None = None  # 4.0+
    alive_stream_threads: int | None = None
    failed_stream_threads: float | None = None
    recording_level: str | None = None  # 4.0+


@dataclass(frozen=True, slots=True)
class StreamThreadMetrics:
    thread_id: str  # "<client id>-StreamThread-<n>"
    state: str | None = None  # 4.0+


@dataclass(frozen=True, slots=True)
class CoordinatorMetrics:
    """A consumer's group-coordinator metrics; for a stream thread, its main consumer's."""

    client_id: str
    rebalance_total: float | None = None
    failed_rebalance_total: float | None = None
    last_rebalance_seconds_ago: float | None = None  # None: never (Kafka says -1) or unknown


@dataclass(frozen=True, slots=True)
class TaskRestoreMetrics:
    thread_id: str
    task_id: str
    remaining_records: int | None = None
    restored_records_total: float | None = None  # only counted at DEBUG recording level


@dataclass(frozen=True, slots=True)
class StateUpdaterMetrics:
    thread_id: str  # "<client id>-StateUpdater-<n>"
    active_restoring_tasks: int | None = None
    standby_updating_tasks: int | None = None
    active_paused_tasks: int | None = None
    restore_records_rate: float | None = None


@dataclass(frozen=True, slots=True)
class StoreMetrics:
    thread_id: str
    task_id: str
    store: str


@dataclass(frozen=True, slots=True)
class AppMetrics:
    """Everything read from one scrape, before deciding which client is the watched app's."""

    jvm_started_at: float | None = None  # identifies the JVM across scrapes
    clients: tuple[StreamsClientMetrics, ...] = ()
    threads: tuple[StreamThreadMetrics, ...] = ()
    coordinators: tuple[CoordinatorMetrics, ...] = ()
    tasks: tuple[TaskRestoreMetrics, ...] = ()
    state_updaters: tuple[StateUpdaterMetrics, ...] = ()
    stores: tuple[StoreMetrics, ...] = ()
    unparsed_lines: int = 0  # relevant-looking lines the Prometheus parser refused
    dialect: Dialect | None = None  # the naming read; None: no Kafka Streams name on the page
    # With a client on the page: the fields every running client shows that this page
    # lacks (``FIELD_NAMES``), sorted; they stay None.
    missing: tuple[str, ...] = ()


def relevant_line(line: str) -> bool:
    """Whether a line of exporter text is a sample ``parse_app_metrics`` reads."""
    return line.startswith(_RELEVANT_PREFIXES)


def relevant_raw_line(line: bytes) -> bool:
    """``relevant_line`` for undecoded bytes, as a scrape streams them in."""
    return line.startswith(_RELEVANT_RAW_PREFIXES)


def detect_dialect(names: Iterable[str]) -> Dialect | None:
    """The naming a page's metric names (any ``_total`` removed) are in: Micrometer's if
    any of its own names is there, jmx-monitoring-stacks' if its client name is, else the
    default if any of its names is; None for a page with no Kafka Streams name (an app
    still starting, or not a Kafka Streams app)."""
    present = set(names)
    if not present.isdisjoint(_MICROMETER_MARKERS):
        return "micrometer"
    if _STACKS_CLIENT in present:
        return "jmx-monitoring-stacks"
    default = DIALECTS["jmx-exporter"].names
    return "jmx-exporter" if any(n in default and n != _JVM_START for n in present) else None


def parse_app_metrics(text: str, dialect: Dialect | Literal["auto"] = "auto") -> AppMetrics:
    """The Kafka Streams view in exporter text; unknown or missing names leave fields None.

    ``dialect`` ``auto`` reads the naming the page has (``detect_dialect``)."""
    samples, unparsed = _samples(line for line in text.splitlines() if relevant_line(line))
    read = (
        dialect
        if dialect != "auto"
        else detect_dialect(n.removesuffix("_total") for n, _, _ in samples)
    )
    table = DIALECTS[read or "jmx-exporter"]
    by_name = _by_default_name(samples, table)
    jvm_start = next((value for _, value in by_name.get(_JVM_START, ()) if _finite(value)), None)
    clients = _clients(by_name)
    return AppMetrics(
        jvm_started_at=jvm_start,
        clients=clients,
        threads=tuple(
            StreamThreadMetrics(labels["thread_id"], _ordinal(value, THREAD_STATES))
            for labels, value in by_name.get(_THREAD_STATE, ())
            if "thread_id" in labels
        ),
        coordinators=_coordinators(by_name),
        tasks=_tasks(by_name),
        state_updaters=_state_updaters(by_name),
        stores=tuple(
            StoreMetrics(labels["thread_id"], labels["task_id"], store)
            for labels, _ in by_name.get(_STORE_PROBE, ())
            if "thread_id" in labels and "task_id" in labels
            for key, store in labels.items()
            if key.endswith("_state_id")
        ),
        unparsed_lines=unparsed,
        dialect=read,
        missing=tuple(sorted(FIELD_NAMES[f] for f in _ALWAYS_THERE if f not in by_name))
        if clients
        else (),
    )


def _by_default_name(
    samples: Iterable[Sample], table: DialectTable
) -> dict[str, list[tuple[Mapping[str, str], float]]]:
    """The samples a dialect names, under the default names (any ``_total`` removed)."""
    by_name: dict[str, list[tuple[Mapping[str, str], float]]] = defaultdict(list)
    for name, labels, value in samples:
        bare = name.removesuffix("_total")
        if bare in table.names:
            by_name[table.names[bare]].append((labels, value))
        elif table.reshape is not None and (reshaped := table.reshape((bare, labels, value))):
            by_name[reshaped[0]].append((reshaped[1], reshaped[2]))
    return by_name


def thread_index(thread_id: str) -> int | None:
    """n of ``<client>-StreamThread-<n>``, or None for another name."""
    match = _STREAM_THREAD.fullmatch(thread_id)
    return int(match["n"]) if match else None


def stream_thread_of_consumer(client_id: str) -> str | None:
    """The stream thread whose main consumer is ``client_id`` (``<thread>-consumer``)."""
    thread = client_id.removesuffix("-consumer")
    if thread == client_id or _STREAM_THREAD.fullmatch(thread) is None:
        return None
    return thread


def _samples(lines: Iterable[str]) -> tuple[list[Sample], int]:
    """(name, labels, value) of every sample; a text the parser refuses is retried line by line."""
    from prometheus_client.parser import text_string_to_metric_families  # noqa: PLC0415 - only a sidecar needs it

    kept = list(lines)

    def parse(text: str) -> list[Sample]:
        return [
            (s.name, s.labels, s.value)
            for family in text_string_to_metric_families(text)
            for s in family.samples
        ]

    try:
        return parse("\n".join(kept) + "\n"), 0
    except (ValueError, TypeError, IndexError):
        pass
    samples: list[Sample] = []
    unparsed = 0
    for line in kept:
        try:
            samples += parse(line + "\n")
        except (ValueError, TypeError, IndexError):
            unparsed += 1
    return samples, unparsed


def _finite(value: float) -> bool:
    return math.isfinite(value)


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _count(value: float) -> int | None:
    return int(value) if math.isfinite(value) and value >= 0 and value == int(value) else None


def _ordinal(value: float, names: tuple[str, ...]) -> str | None:
    index = _count(value)
    return names[index] if index is not None and index < len(names) else None


def _clients(by_name: Samples) -> tuple[StreamsClientMetrics, ...]:
    values: dict[str, dict[str, float]] = defaultdict(dict)
    labels_of: dict[str, dict[str, str]] = defaultdict(dict)
    for name in (_ALIVE, _FAILED, _CLIENT_STATE, _RECORDING_LEVEL, _APPLICATION_ID):
        for labels, value in by_name.get(name, ()):
            client = labels.get("client_id")
            if client is not None:
                values[client][name] = value
                labels_of[client].update(labels)
    return tuple(
        StreamsClientMetrics(
            client_id=client,
            process_id=_lower(labels_of[client].get("process_id")),
            application_id=labels_of[client].get("application_id"),
            state=_maybe(_client_state, v.get(_CLIENT_STATE)),
            alive_stream_threads=_maybe(_count, v.get(_ALIVE)),
            failed_stream_threads=_maybe(_number, v.get(_FAILED)),
            recording_level=_maybe(_recording_level, v.get(_RECORDING_LEVEL)),
        )
        for client, v in sorted(values.items())
    )


def _client_state(value: float) -> str | None:
    return _ordinal(value, CLIENT_STATES)


def _recording_level(value: float) -> str | None:
    return _ordinal(value, RECORDING_LEVELS)


def _lower(text: str | None) -> str | None:
    return text.lower() if text is not None else None


def _coordinators(by_name: Samples) -> tuple[CoordinatorMetrics, ...]:
    values: dict[str, dict[str, float | None]] = defaultdict(dict)
    for field in _COORDINATOR_FIELDS:
        for labels, value in by_name.get(_COORDINATOR + field, ()):
            client = labels.get("client_id")
            if client is not None:
                values[client][field] = _number(value)
    return tuple(
        CoordinatorMetrics(
            client_id=client,
            rebalance_total=v.get("rebalance"),
            failed_rebalance_total=v.get("failed_rebalance"),
            last_rebalance_seconds_ago=_seconds_ago(v.get("last_rebalance_seconds_ago")),
        )
        for client, v in sorted(values.items())
    )


def _seconds_ago(value: float | None) -> float | None:
    return value if value is not None and value >= 0 else None  # -1: never rebalanced


def _tasks(by_name: Samples) -> tuple[TaskRestoreMetrics, ...]:
    values: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for name in (_REMAINING, _RESTORED):
        for labels, value in by_name.get(name, ()):
            if "thread_id" in labels and "task_id" in labels:
                values[(labels["thread_id"], labels["task_id"])][name] = value
    return tuple(
        TaskRestoreMetrics(
            thread_id=thread,
            task_id=task,
            remaining_records=_maybe(_count, v.get(_REMAINING)),
            restored_records_total=_maybe(_number, v.get(_RESTORED)),
        )
        for (thread, task), v in sorted(values.items())
    )


def _state_updaters(by_name: Samples) -> tuple[StateUpdaterMetrics, ...]:
    values: dict[str, dict[str, float]] = defaultdict(dict)
    for field in _UPDATER_FIELDS:
        for labels, value in by_name.get(_UPDATER + field, ()):
            if "thread_id" in labels:
                values[labels["thread_id"]][field] = value
    return tuple(
        StateUpdaterMetrics(
            thread_id=thread,
            active_restoring_tasks=_maybe(_count, v.get("active_restoring_tasks")),
            standby_updating_tasks=_maybe(_count, v.get("standby_updating_tasks")),
            active_paused_tasks=_maybe(_count, v.get("active_paused_tasks")),
            restore_records_rate=_maybe(_number, v.get("restore_records_rate")),
        )
        for thread, v in sorted(values.items())
    )


def _maybe(convert: Callable[[float], T | None], value: float | None) -> T | None:
    return None if value is None else convert(value)
