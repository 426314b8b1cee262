"""The agent's Prometheus metrics, from ``AgentState``.

Names and labels are a contract (``docs/metrics.md``, frozen by golden tests).
Member ids, client ids and hosts change with every rebalance, so they appear
only on ``*_assignment_info`` series, never on lag series.

Every family is made through a ``FamilyMaker``: ``AgentCollector`` makes
prometheus_client's (a registry's collector: the golden tests), and
``metrics_cache`` makes ones that write the text exposition directly, once per
poll (a scrape then serves bytes). Both walk the same code below, so the
names, labels and HELP texts are defined once; only the per-partition families
(nine samples in ten) are written apart, in bulk, by ``bulk_families`` from the
same ``FamilySpec``s, and tests compare its bytes with what this code makes.
"""

import platform
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from agent import __version__
from agent.exposition.agent_state import AgentState, ClusterStatus, StateView
from agent.model import PartitionInfo, SidecarInfo, Snapshot
from agent.transport.sink import SinkStats

LagGranularity = Literal["partition", "topic"]


class Family(Protocol):
    def add_metric(self, labels: Sequence[str], value: float) -> None: ...


class FamilyMaker(Protocol):
    def gauge(self, name: str, documentation: str, labels: list[str]) -> Family: ...

    def counter(self, name: str, documentation: str, labels: list[str]) -> Family: ...


class PrometheusFamilies:
    """prometheus_client's metric families (for a registry)."""

    def gauge(self, name: str, documentation: str, labels: list[str]) -> Family:
        return GaugeMetricFamily(name, documentation, labels=labels)

    def counter(self, name: str, documentation: str, labels: list[str]) -> Family:
        return CounterMetricFamily(name, documentation, labels=labels)


class AgentMetrics:
    """Which families the agent exposes, in order, from one view of its state."""

    def __init__(
        self,
        make: FamilyMaker,
        *,
        agent_id: str,
        mode: str,
        lag_granularity: LagGranularity = "partition",
    ) -> None:
        self.make = make
        self.agent_id = agent_id
        self.mode = mode
        self.lag_granularity = lag_granularity

    def head(self, view: StateView) -> Iterator[Family]:
        """What changes between polls too (delivery, readers): built at every scrape."""
        yield from self._self_health(view.clusters)
        yield from _offsets_readers(self.make, view.offsets_readers)
        yield from self._sinks(view.sinks)

    def body(self, view: StateView) -> Iterator[Family]:
        """What only a poll changes: groups, partitions, Streams, the sidecar's view."""
        snapshots = [s for c in view.clusters for s in c.snapshots]
        yield from _groups(self.make, snapshots)
        yield from self.partitions(snapshots)
        yield from _streams(self.make, snapshots)
        if self.mode == "sidecar":
            yield from _sidecar(self.make, view.clusters)

    def partitions(self, snapshots: list[Snapshot]) -> Iterator[Family]:
        """The series per group and partition, then per partition (``BulkTextMetrics``
        writes the same text faster)."""
        return _partitions(self.make, snapshots, self.lag_granularity)

    def _self_health(self, clusters: Iterable[ClusterStatus]) -> Iterator[Family]:
        make = self.make
        build = make.gauge(
            "ksmon_build_info", "ksmon's version, always 1.", ["version", "python_version"]
        )
        build.add_metric([__version__, platform.python_version()], 1)
        yield build
        agent = make.gauge(
            "ksmon_agent_info",
            "This agent's identity and mode, always 1.",
            ["agent_id", "mode"],
        )
        agent.add_metric([self.agent_id, self.mode], 1)
        yield agent

        up = make.gauge(
            "ksmon_kafka_up",
            "1 if the last poll of the cluster reached it, else 0.",
            ["kafka_cluster"],
        )
        last = make.gauge(
            "ksmon_poll_last_success_timestamp_seconds",
            "When the last successful poll of the cluster started (Unix time).",
            ["kafka_cluster"],
        )
        duration = make.gauge(
            "ksmon_poll_duration_seconds",
            "How long the last poll of the cluster took.",
            ["kafka_cluster"],
        )
        polls = make.counter(
            "ksmon_polls",
            "Polls of the cluster, by result (ok, failed).",
            ["kafka_cluster", "result"],
        )
        requests = make.counter(
            "ksmon_kafka_requests",
            "Kafka protocol requests the agent sent, by API.",
            ["kafka_cluster", "api"],
        )
        errors = make.counter(
            "ksmon_poll_errors",
            "Errors met while polling, by stage and error type (one per affected group and poll).",
            ["kafka_cluster", "stage", "error"],
        )
        groups = make.gauge("ksmon_groups", "Groups watched in the last poll.", ["kafka_cluster"])
        for c in clusters:
            up.add_metric([c.cluster], 1 if c.up else 0)
            if c.last_success_at is not None:
                last.add_metric([c.cluster], c.last_success_at)
            if c.last_duration_seconds is not None:
                duration.add_metric([c.cluster], c.last_duration_seconds)
            polls.add_metric([c.cluster, "ok"], c.polls_ok)
            polls.add_metric([c.cluster, "failed"], c.polls_failed)
            for api, count in sorted(c.requests_total.items()):
                requests.add_metric([c.cluster, api], count)
            for (stage, error), count in sorted(c.poll_errors_total.items()):
                errors.add_metric([c.cluster, stage, error], count)
            groups.add_metric([c.cluster], c.groups)
        yield from (up, last, duration, polls, requests, errors, groups)

    def _sinks(self, sinks: Iterable[SinkStats]) -> Iterator[Family]:
        make = self.make
        sent = make.counter(
            "ksmon_snapshots_sent",
            "Snapshots delivered by the sink.",
            ["sink"],
        )
        dropped = make.counter(
            "ksmon_snapshots_dropped",
            "Snapshots given up on (buffer overflow while the sink is down, spool retention).",
            ["sink"],
        )
        errors = make.counter(
            "ksmon_snapshot_sink_errors",
            "Errors while delivering snapshots.",
            ["sink"],
        )
        buffered = make.gauge(
            "ksmon_snapshot_buffer_records", "Snapshots accepted but not yet delivered.", ["sink"]
        )
        last = make.gauge(
            "ksmon_snapshot_sink_last_success_timestamp_seconds",
            "When the sink last delivered a snapshot (Unix time).",
            ["sink"],
        )
        for s in sinks:
            sent.add_metric([s.kind], s.sent)
            dropped.add_metric([s.kind], s.dropped)
            errors.add_metric([s.kind], s.errors)
            buffered.add_metric([s.kind], s.buffered)
            if s.last_success_timestamp is not None:
                last.add_metric([s.kind], s.last_success_timestamp)
        yield from (sent, dropped, errors, buffered, last)


class AgentCollector(Collector):
    """The agent's metrics for a prometheus_client registry, built at every collect."""

    def __init__(
        self,
        state: AgentState,
        *,
        agent_id: str,
        mode: str,
        lag_granularity: LagGranularity = "partition",
    ) -> None:
        self.state = state
        self.metrics = AgentMetrics(
            PrometheusFamilies(), agent_id=agent_id, mode=mode, lag_granularity=lag_granularity
        )

    def collect(self) -> Iterator[Metric]:
        view = self.state.view()
        for family in (*self.metrics.head(view), *self.metrics.body(view)):
            assert isinstance(family, Metric)  # noqa: S101 - PrometheusFamilies makes only these
            yield family


def _offsets_readers(make: FamilyMaker, readers: dict[str, bool]) -> Iterator[Family]:
    up = make.gauge(
        "ksmon_offsets_topic_reader_up",
        "1 while the agent tails __consumer_offsets for exact rebalance facts, 0 when it cannot "
        "(no READ permission, or the cluster is down); only clusters configured to read it.",
        ["kafka_cluster"],
    )
    for cluster, running in sorted(readers.items()):
        up.add_metric([cluster], 1 if running else 0)
    yield up


def _groups(make: FamilyMaker, snapshots: list[Snapshot]) -> Iterator[Family]:
    info = make.gauge(
        "ksmon_group_info",
        "A watched consumer group and its kind, always 1.",
        ["kafka_cluster", "group", "group_type", "protocol_type", "protocol", "streams"],
    )
    state = make.gauge(
        "ksmon_group_state",
        "The group's current state (Stable, PreparingRebalance, Empty, ...), always 1.",
        ["kafka_cluster", "group", "state"],
    )
    members = make.gauge("ksmon_group_members", "Members in the group.", ["kafka_cluster", "group"])
    lag = make.gauge(
        "ksmon_group_lag",
        "Records not yet consumed, summed over the group's partitions with a committed offset.",
        ["kafka_cluster", "group"],
    )
    lag_seconds = make.gauge(
        "ksmon_group_lag_seconds",
        "The largest lag in seconds over the group's partitions.",
        ["kafka_cluster", "group"],
    )
    generation = make.gauge(
        "ksmon_group_generation",
        "The classic group's generation, from __consumer_offsets (when the agent may read it).",
        ["kafka_cluster", "group"],
    )
    epoch = make.gauge(
        "ksmon_group_epoch",
        "The group epoch of a KIP-848 consumer group or a KIP-1071 streams group (it grows "
        "with every membership or topology change).",
        ["kafka_cluster", "group"],
    )
    metadata_bytes = make.gauge(
        "ksmon_group_metadata_bytes",
        "Bytes of member subscriptions and assignments the coordinator stores for the group.",
        ["kafka_cluster", "group"],
    )
    # Per cluster, not per group: every group's record must fit the same topic's limit,
    # and one series per cluster joins every group's (many-to-one, on the rest).
    metadata_limit = make.gauge(
        "ksmon_group_metadata_limit_bytes",
        "The size a group's metadata record must fit in, per cluster: __consumer_offsets' "
        "max.message.bytes (KAFKA-7149). The share a group uses: ksmon_group_metadata_bytes "
        "/ ignoring (group) group_left ksmon_group_metadata_limit_bytes.",
        ["kafka_cluster"],
    )
    decode_errors = make.gauge(
        "ksmon_group_decode_errors",
        "Member metadata blobs in the last poll that did not decode.",
        ["kafka_cluster", "group"],
    )
    limits: dict[str, int] = {}
    for s in snapshots:
        g = s.group
        key = [s.cluster, g.group_id]
        info.add_metric(
            [
                *key,
                g.group_type,
                g.protocol_type,
                g.protocol or "",
                "true" if g.is_streams else "false",
            ],
            1,
        )
        state.add_metric([*key, g.state], 1)
        members.add_metric(key, len(s.members))
        lags = [p.lag for p in s.partitions if p.lag is not None]
        if lags:
            lag.add_metric(key, sum(lags))
        seconds = [p.lag_seconds for p in s.partitions if p.lag_seconds is not None]
        if seconds:
            lag_seconds.add_metric(key, max(seconds))
        if g.generation is not None:
            generation.add_metric(key, g.generation)
        if g.group_epoch is not None:
            epoch.add_metric(key, g.group_epoch)
        metadata_bytes.add_metric(
            key, sum(m.subscription_bytes + m.assignment_bytes for m in s.members)
        )
        limit = s.cluster_facts.offsets_topic_max_message_bytes
        if limit is not None:
            limits.setdefault(s.cluster, limit)  # one poll's snapshots share the cluster's
        decode_errors.add_metric(key, sum(len(m.decode_errors) for m in s.members))
    for cluster, limit in limits.items():
        metadata_limit.add_metric([cluster], limit)
    yield from (info, state, members, lag, lag_seconds, generation, epoch)
    yield from (metadata_bytes, metadata_limit, decode_errors)


class FamilySpec(NamedTuple):
    """A family's name, HELP text and label names, for a family written two ways."""

    name: str
    documentation: str
    labels: list[str]


_PARTITION_KEY = ["kafka_cluster", "group", "topic", "partition"]
PARTITION_LAG = FamilySpec(
    "ksmon_partition_lag", "Records not yet consumed by the group on the partition.", _PARTITION_KEY
)
PARTITION_LAG_SECONDS = FamilySpec(
    "ksmon_partition_lag_seconds",
    "How long ago the group's first unconsumed record on the partition was appended "
    "(interpolated from log-end offsets; 0 when caught up).",
    _PARTITION_KEY,
)
PARTITION_COMMITTED_OFFSET = FamilySpec(
    "ksmon_partition_committed_offset", "The group's committed offset.", _PARTITION_KEY
)
PARTITION_ASSIGNMENT_INFO = FamilySpec(
    "ksmon_partition_assignment_info",
    "Which member holds the partition, always 1.",
    [*_PARTITION_KEY, "member_id", "client_id", "host"],
)
TOPIC_PARTITION_KEY = ["kafka_cluster", "topic", "partition"]
PARTITION_LOG_END_OFFSET = FamilySpec(
    "ksmon_partition_log_end_offset",
    "The partition's log-end offset (the offset the next record will get).",
    TOPIC_PARTITION_KEY,
)
PARTITION_LOG_START_OFFSET = FamilySpec(
    "ksmon_partition_log_start_offset",
    "The partition's earliest available offset.",
    TOPIC_PARTITION_KEY,
)


def _partitions(
    make: FamilyMaker, snapshots: list[Snapshot], granularity: LagGranularity
) -> Iterator[Family]:
    if granularity == "topic":
        yield from topic_lag(make, snapshots)
    else:
        yield from _partition_lag(make, snapshots)
    end = make.gauge(*PARTITION_LOG_END_OFFSET)
    start = make.gauge(*PARTITION_LOG_START_OFFSET)
    seen: set[tuple[str, str, int]] = set()
    for s in snapshots:
        for p in s.partitions:
            key = (s.cluster, p.topic, p.partition)
            if key in seen:
                continue
            seen.add(key)
            labels = [s.cluster, p.topic, str(p.partition)]
            if p.log_end_offset is not None:
                end.add_metric(labels, p.log_end_offset)
            if p.log_start_offset is not None:
                start.add_metric(labels, p.log_start_offset)
    yield from (end, start)


def _partition_lag(make: FamilyMaker, snapshots: list[Snapshot]) -> Iterator[Family]:
    lag = make.gauge(*PARTITION_LAG)
    seconds = make.gauge(*PARTITION_LAG_SECONDS)
    committed = make.gauge(*PARTITION_COMMITTED_OFFSET)
    owner = make.gauge(*PARTITION_ASSIGNMENT_INFO)
    for s in snapshots:
        members = {m.member_id: m for m in s.members}
        for p in s.partitions:
            key = [s.cluster, s.group.group_id, p.topic, str(p.partition)]
            _add_partition(lag, seconds, committed, key, p)
            member = members.get(p.owner_member_id or "")
            if member is not None:
                owner.add_metric([*key, member.member_id, member.client_id, member.client_host], 1)
    yield from (lag, seconds, committed, owner)


def _add_partition(
    lag: Family,
    seconds: Family,
    committed: Family,
    key: list[str],
    p: PartitionInfo,
) -> None:
    if p.lag is not None:
        lag.add_metric(key, p.lag)
    if p.lag_seconds is not None:
        seconds.add_metric(key, p.lag_seconds)
    if p.committed_offset is not None:
        committed.add_metric(key, p.committed_offset)


def topic_lag(make: FamilyMaker, snapshots: list[Snapshot]) -> Iterator[Family]:
    labels = ["kafka_cluster", "group", "topic"]
    lag = make.gauge(
        "ksmon_topic_lag", "Records not yet consumed by the group, summed over the topic.", labels
    )
    seconds = make.gauge(
        "ksmon_topic_lag_seconds", "The largest lag in seconds over the topic's partitions.", labels
    )
    for s in snapshots:
        sums: dict[str, int] = defaultdict(int)
        maxima: dict[str, float] = {}
        for p in s.partitions:
            if p.lag is not None:
                sums[p.topic] += p.lag
            if p.lag_seconds is not None:
                maxima[p.topic] = max(maxima.get(p.topic, 0.0), p.lag_seconds)
        for topic, total in sorted(sums.items()):
            lag.add_metric([s.cluster, s.group.group_id, topic], total)
        for topic, worst in sorted(maxima.items()):
            seconds.add_metric([s.cluster, s.group.group_id, topic], worst)
    yield from (lag, seconds)


SHUTDOWN_REQUESTED = 4  # Kafka Streams' AssignorError code


@dataclass(frozen=True, slots=True)
class _StreamsFamilies:
    instances: Family
    threads: Family
    instance_info: Family
    tasks: Family
    assignment: Family
    shutdown: Family
    probing: Family
    topic_partitions: Family
    topic_size: Family


def _add_streams_group(f: _StreamsFamilies, s: Snapshot) -> None:
    key = [s.cluster, s.group.group_id]
    per_process: dict[str, int] = defaultdict(int)
    hosts: dict[str, tuple[str, str]] = {}
    counts: dict[tuple[str, str], int] = defaultdict(int)
    requested = 0
    next_rebalance: list[int] = []
    for m in s.members:
        st = m.streams
        if st is None:
            continue
        per_process[st.process_id] += 1
        hosts.setdefault(st.process_id, (m.client_host, st.endpoint or ""))
        thread = str(st.thread_index) if st.thread_index is not None else ""
        for kind, task_list in (("active", st.active_tasks), ("standby", st.standby_tasks)):
            counts[(st.process_id, kind)] += len(task_list)
            for t in task_list:
                f.assignment.add_metric(
                    [
                        *key,
                        t.task,
                        kind,
                        st.process_id,
                        thread,
                        m.member_id,
                        m.client_id,
                        m.client_host,
                    ],
                    1,
                )
        if SHUTDOWN_REQUESTED in (st.subscription_error_code, st.assignment_error_code):
            requested = 1
        if st.next_rebalance_ms is not None and st.next_rebalance_ms > 0:
            next_rebalance.append(st.next_rebalance_ms)
    f.instances.add_metric(key, len(per_process))
    for process, thread_count in sorted(per_process.items()):
        f.threads.add_metric([*key, process], thread_count)
        host, endpoint = hosts[process]
        f.instance_info.add_metric([*key, process, host, endpoint], 1)
        for kind in ("active", "standby"):
            f.tasks.add_metric([*key, process, kind], counts[(process, kind)])
    f.shutdown.add_metric(key, requested)
    if next_rebalance:
        f.probing.add_metric(key, min(next_rebalance) / 1000)
    for topic in s.topics:
        if topic.internal_kind is None:
            continue
        topic_key = [*key, topic.name, topic.internal_kind]
        f.topic_partitions.add_metric(topic_key, topic.partitions)
        if topic.size_bytes is not None:
            f.topic_size.add_metric(topic_key, topic.size_bytes)


def _streams(make: FamilyMaker, snapshots: list[Snapshot]) -> Iterator[Family]:
    instances = make.gauge(
        "ksmon_streams_instances",
        "Kafka Streams instances (distinct process ids) in the application's group.",
        ["kafka_cluster", "group"],
    )
    threads = make.gauge(
        "ksmon_streams_instance_threads",
        "Stream threads (group members) of one Kafka Streams instance.",
        ["kafka_cluster", "group", "process"],
    )
    instance_info = make.gauge(
        "ksmon_streams_instance_info",
        "Where a Kafka Streams instance runs, always 1.",
        ["kafka_cluster", "group", "process", "host", "endpoint"],
    )
    tasks = make.gauge(
        "ksmon_streams_instance_tasks",
        "Tasks assigned to one Kafka Streams instance, by kind (active, standby).",
        ["kafka_cluster", "group", "process", "kind"],
    )
    assignment = make.gauge(
        "ksmon_streams_task_assignment_info",
        "Which stream thread of which instance holds a task, always 1.",
        [
            "kafka_cluster",
            "group",
            "task",
            "kind",
            "process",
            "thread",
            "member_id",
            "client_id",
            "host",
        ],
    )
    shutdown = make.gauge(
        "ksmon_streams_shutdown_requested",
        "1 if a member's Streams metadata carries a shutdown request (error code 4), else 0.",
        ["kafka_cluster", "group"],
    )
    probing = make.gauge(
        "ksmon_streams_next_rebalance_timestamp_seconds",
        "When the next scheduled (KIP-441 probing) rebalance is due, if one is scheduled.",
        ["kafka_cluster", "group"],
    )
    topic_partitions = make.gauge(
        "ksmon_streams_internal_topic_partitions",
        "Partitions of the application's internal topics (repartition, changelog, ...).",
        ["kafka_cluster", "group", "topic", "kind"],
    )
    topic_size = make.gauge(
        "ksmon_streams_internal_topic_size_bytes",
        "Bytes on disk of the application's internal topics, over all replicas.",
        ["kafka_cluster", "group", "topic", "kind"],
    )
    families = _StreamsFamilies(
        instances,
        threads,
        instance_info,
        tasks,
        assignment,
        shutdown,
        probing,
        topic_partitions,
        topic_size,
    )
    for s in snapshots:
        if s.group.is_streams:
            _add_streams_group(families, s)
    yield from (instances, threads, instance_info, tasks, assignment, shutdown, probing)
    yield from (topic_partitions, topic_size)


def _sidecar(make: FamilyMaker, clusters: Iterable[ClusterStatus]) -> Iterator[Family]:
    """The Kafka Streams instance a sidecar agent sits next to, as it saw it in the pod."""
    key = ["kafka_cluster", "group", "process"]
    up = make.gauge(
        "ksmon_sidecar_app_metrics_up",
        "1 if the last scrape of the Kafka Streams app's metrics endpoint worked, else 0.",
        key,
    )
    client_state = make.gauge(
        "ksmon_sidecar_client_state",
        "The app's current KafkaStreams state, always 1: its client-state (Kafka Streams "
        "4.0+), or, once the client closed and removed its metrics while the JVM runs on, "
        "ERROR (NOT_RUNNING if a scrape saw it shut down on request), which no metric says.",
        [*key, "state"],
    )
    alive = make.gauge(
        "ksmon_sidecar_stream_threads_alive",
        "The app's alive stream threads (alive-stream-threads; 0 once its client has closed).",
        key,
    )
    expected = make.gauge(
        "ksmon_sidecar_stream_threads_expected",
        "The app's configured num.stream.threads (sidecar.expected_stream_threads).",
        key,
    )
    failed = make.counter(
        "ksmon_sidecar_stream_threads_failed",
        "Stream threads that failed since the app started (failed-stream-threads).",
        key,
    )
    thread_state = make.gauge(
        "ksmon_sidecar_thread_state",
        "Each stream thread's current state (Kafka Streams 4.0+; DEAD for every thread "
        "of a closed client), always 1.",
        [*key, "thread", "state"],
    )
    restoring = make.gauge(
        "ksmon_sidecar_restoring_tasks",
        "Active tasks restoring now (the state updaters' active-restoring-tasks; 3.8+).",
        key,
    )
    remaining = make.gauge(
        "ksmon_sidecar_task_restore_remaining_records",
        "restore-remaining-records-total of a task: evidence of a restore, not of its "
        "progress (it may overshoot and stay above 0).",
        [*key, "task"],
    )
    state_dir_bytes = make.gauge(
        "ksmon_sidecar_state_dir_bytes", "Bytes in the app's state directory.", key
    )
    volume_size = make.gauge(
        "ksmon_sidecar_state_volume_size_bytes",
        "Size of the filesystem holding the app's state directory (statvfs f_blocks).",
        key,
    )
    volume_available = make.gauge(
        "ksmon_sidecar_state_volume_available_bytes",
        "Bytes the app may still write on the filesystem holding its state directory "
        "(statvfs f_bavail, df's Avail).",
        key,
    )
    for c in clusters:
        if c.sidecar is None:
            continue
        info = c.sidecar.info
        labels = [c.cluster, c.sidecar.group, info.process_id or ""]
        up.add_metric(labels, 1 if info.app_metrics_up else 0)
        if info.client_state is not None:
            client_state.add_metric([*labels, info.client_state], 1)
        if info.alive_stream_threads is not None:
            alive.add_metric(labels, info.alive_stream_threads)
        if info.expected_stream_threads is not None:
            expected.add_metric(labels, info.expected_stream_threads)
        if info.failed_stream_threads is not None:
            failed.add_metric(labels, info.failed_stream_threads)
        for t in info.threads:
            if t.state is not None:
                thread = str(t.thread_index) if t.thread_index is not None else t.thread_id
                thread_state.add_metric([*labels, thread, t.state], 1)
        restoring_now = _restoring_tasks(info)
        if restoring_now is not None:
            restoring.add_metric(labels, restoring_now)
        # A task moving between threads may briefly appear twice; one series per task.
        per_task = {
            t.task: t.restore_remaining_records
            for t in info.tasks
            if t.restore_remaining_records is not None
        }
        for task, records in sorted(per_task.items()):
            remaining.add_metric([*labels, task], records)
        on_disk = (
            (state_dir_bytes, info.state_dir_bytes),
            (volume_size, info.state_volume_size_bytes),
            (volume_available, info.state_volume_available_bytes),
        )
        for family, size in on_disk:
            if size is not None:
                family.add_metric(labels, size)
    yield from (up, client_state, alive, expected, failed, thread_state, restoring, remaining)
    yield from (state_dir_bytes, volume_size, volume_available)


def _restoring_tasks(info: SidecarInfo) -> int | None:
    counts = [u.active_restoring_tasks for u in info.state_updaters]
    if not counts or any(c is None for c in counts):
        return None
    return sum(c for c in counts if c is not None)
