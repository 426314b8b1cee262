"""The settings, as frozen dataclasses: one class per YAML section, one field per key.

Field names are the YAML keys and field defaults are the documented defaults;
the reader rejects any key that is not a field. Durations are float seconds,
sizes int bytes. To add a section (``sidecar:`` for instance): a dataclass
here, a field on ``Config``, one reading function in ``load.py``, and its keys
in ``docs/reference-config.yaml`` (a test walks this tree and insists).
"""

import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal, get_args

from agent.config.values import HostPort, Secret, format_duration, format_size

AgentMode = Literal["central", "sidecar"]
LogFormat = Literal["json", "text"]
LogLevel = Literal["debug", "info", "warning", "error"]
SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal[
    "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "AWS_MSK_IAM", "GSSAPI"
]
SinkType = Literal["kafka", "spool", "none"]
Compression = Literal["none", "gzip"]  # the codecs kafka-python needs no extra package for
LagGranularity = Literal["partition", "topic"]
InputType = Literal["kafka", "spool"]
StartingOffsets = Literal["earliest", "latest"]
# A consumer status's finding: its severity, or "none" for the metric only.
StatusSeverity = Literal["critical", "warning", "info", "none"]

AGENT_MODES: tuple[AgentMode, ...] = get_args(AgentMode)
LOG_FORMATS: tuple[LogFormat, ...] = get_args(LogFormat)
LOG_LEVELS: tuple[LogLevel, ...] = get_args(LogLevel)
SECURITY_PROTOCOLS: tuple[SecurityProtocol, ...] = get_args(SecurityProtocol)
SASL_MECHANISMS: tuple[SaslMechanism, ...] = get_args(SaslMechanism)
SINK_TYPES: tuple[SinkType, ...] = get_args(SinkType)
COMPRESSIONS: tuple[Compression, ...] = get_args(Compression)
LAG_GRANULARITIES: tuple[LagGranularity, ...] = get_args(LagGranularity)
INPUT_TYPES: tuple[InputType, ...] = get_args(InputType)
STATUS_SEVERITIES: tuple[StatusSeverity, ...] = get_args(StatusSeverity)
STARTING_OFFSETS: tuple[StartingOffsets, ...] = get_args(StartingOffsets)

TLS_PROTOCOLS: tuple[SecurityProtocol, ...] = ("SSL", "SASL_SSL")
SASL_PROTOCOLS: tuple[SecurityProtocol, ...] = ("SASL_PLAINTEXT", "SASL_SSL")
# The mechanisms that log in with a username and password.
PASSWORD_MECHANISMS: tuple[SaslMechanism, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


# Every interface: the endpoint is there to be scraped from outside the pod.
DEFAULT_LISTEN = HostPort("0.0.0.0", 8479)  # noqa: S104
DEFAULT_JOB_LISTEN = HostPort("0.0.0.0", 8480)  # noqa: S104 - the aggregation job's /metrics


def _host_name() -> str:
    return socket.gethostname() or "ksmon"


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentConfig:
    id: str = field(default_factory=_host_name)
    mode: AgentMode = "central"


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpConfig:
    listen: HostPort = DEFAULT_LISTEN

    @property
    def host(self) -> str:
        return self.listen.host

    @property
    def port(self) -> int:
        return self.listen.port


@dataclass(frozen=True, slots=True, kw_only=True)
class LoggingConfig:
    format: LogFormat = "json"
    level: LogLevel = "info"


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsConfig:
    ca_file: Path | None = None  # None: the system's CAs
    cert_file: Path | None = None
    key_file: Path | None = None
    key_password: Secret | None = None
    check_hostname: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class OAuthConfig:
    """OAUTHBEARER: an access token from an OIDC provider, by the client credentials grant."""

    token_endpoint_url: str  # https, or http on a loopback host only
    client_id: str
    client_secret: Secret
    scope: str | None = None  # None: the provider's default scope
    # SASL extensions sent with the token (RFC 7628), such as Confluent Cloud's logicalCluster.
    extensions: tuple[tuple[str, str], ...] = ()
    ca_file: Path | None = None  # the CA of the token endpoint; None: the system's CAs


@dataclass(frozen=True, slots=True, kw_only=True)
class AwsIamConfig:
    """AWS_MSK_IAM: credentials from the standard AWS chain (environment, profile, role)."""

    region: str | None = None  # None: from the chain, else the broker's host name
    profile: str | None = None  # None: the chain's default


@dataclass(frozen=True, slots=True, kw_only=True)
class KerberosConfig:
    """GSSAPI: a Kerberos principal logging in with its keytab."""

    service_name: str = "kafka"  # the brokers' principal is service_name/host@REALM
    principal: str
    keytab: Path
    krb5_conf: Path | None = None  # None: the system's (or KRB5_CONFIG's)


@dataclass(frozen=True, slots=True, kw_only=True)
class SaslConfig:
    """One mechanism and exactly its own settings: username and password for PLAIN and
    SCRAM, ``oauth`` for OAUTHBEARER, ``aws`` for AWS_MSK_IAM, ``kerberos`` for GSSAPI."""

    mechanism: SaslMechanism
    username: str | None = None
    password: Secret | None = None
    oauth: OAuthConfig | None = None
    aws: AwsIamConfig | None = None
    kerberos: KerberosConfig | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SecurityConfig:
    protocol: SecurityProtocol = "PLAINTEXT"
    tls: TlsConfig | None = None  # set exactly when the protocol is SSL or SASL_SSL
    sasl: SaslConfig | None = None  # set exactly when the protocol is SASL_*


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupsConfig:
    """Which consumer groups to watch: full matches; deny wins over allow."""

    allow: tuple[re.Pattern[str], ...] = (re.compile(".*"),)
    deny: tuple[re.Pattern[str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PollConfig:
    offsets_interval: float = 10.0
    metadata_interval: float = 60.0
    request_timeout: float = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetsTopicConfig:
    read: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterConfig:
    name: str  # the kafka_cluster label
    bootstrap_servers: tuple[str, ...]  # validated host:port, IPv6 hosts in brackets
    client_id: str = "ksmon"
    security: SecurityConfig = SecurityConfig()
    groups: GroupsConfig = GroupsConfig()
    poll: PollConfig = PollConfig()
    offsets_topic: OffsetsTopicConfig = OffsetsTopicConfig()


@dataclass(frozen=True, slots=True, kw_only=True)
class KafkaSinkConfig:
    cluster: str  # a configured cluster's name; the loader defaults it to the first one
    topic: str = "ksmon.snapshots"
    create_topic: bool = True
    partitions: int = 6
    replication_factor: int = -1  # -1: the broker's default
    compression: Compression = "gzip"
    buffer_max_snapshots: int = 10_000
    max_message_bytes: int = 8 * 2**20


@dataclass(frozen=True, slots=True, kw_only=True)
class SpoolSinkConfig:
    directory: Path
    rotate_bytes: int = 64 * 2**20
    rotate_interval: float = 300.0
    max_bytes: int = 2**30


@dataclass(frozen=True, slots=True, kw_only=True)
class SinkConfig:
    type: SinkType = "kafka"
    # Only the section of the chosen type is kept; the other, if written, was validated.
    kafka: KafkaSinkConfig | None = None
    spool: SpoolSinkConfig | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpositionConfig:
    # Keys of earlier versions, and why they are gone (the reader names them).
    RETIRED_KEYS: ClassVar[dict[str, str]] = {
        "lag_history": (
            "lag in seconds covers any age now: the agent keeps a bounded table of "
            "log-end offsets without an age limit and dates older backlogs from the "
            "broker's time index"
        ),
    }

    lag_granularity: LagGranularity = "partition"


# The JMX exporter's usual port in a Kafka Streams pod (conventions.md).
DEFAULT_APP_METRICS_URL = "http://127.0.0.1:9404/metrics"
# How the app's metrics are named (agent.streams.app_metrics.DIALECTS); auto: the page's.
AppMetricsDialect = Literal["auto", "jmx-exporter", "micrometer", "jmx-monitoring-stacks"]
APP_METRICS_DIALECTS: tuple[AppMetricsDialect, ...] = get_args(AppMetricsDialect)


@dataclass(frozen=True, slots=True, kw_only=True)
class SidecarConfig:
    """The one Kafka Streams instance a sidecar agent sits next to."""

    application_id: str  # its application.id, which is its group id
    cluster: str  # the configured cluster it runs on; the loader defaults it to the first one
    app_metrics_url: str = DEFAULT_APP_METRICS_URL
    app_metrics_dialect: AppMetricsDialect = "auto"
    scrape_timeout: float = 5.0
    state_dir: Path | None = None  # its state.dir, mounted read-only; None: not read
    expected_stream_threads: int | None = None  # its num.stream.threads; None: not known
    # The app container's memory limit (state_store_footprint judges against it): bytes
    # (written as a size, or {env: VAR} naming a variable that holds it, such as the
    # Downward API's resourceFieldRef limits.memory of the app container, resolved at
    # load), or a cgroup file holding the app's limit ({file: PATH}: v2 memory.max, v1
    # memory.limit_in_bytes), read at every poll. Never the sidecar's own cgroup: that is
    # the sidecar container's limit. None: unknown.
    app_memory_limit: int | Path | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class KafkaInputConfig:
    """The snapshot topic the aggregation job reads."""

    cluster: str  # a configured cluster's name; the loader defaults it to the first one
    topic: str = "ksmon.snapshots"
    # Where a job without a checkpoint starts: the detectors need minutes, not the topic's week.
    starting_offsets: StartingOffsets = "latest"
    max_snapshots_per_batch: int = 100_000


@dataclass(frozen=True, slots=True, kw_only=True)
class SpoolInputConfig:
    """A spool directory the agent writes (``sink.type: spool``) that the job reads."""

    directory: Path
    max_files_per_batch: int = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class InputConfig:
    type: InputType = "kafka"
    kafka: KafkaInputConfig | None = None
    spool: SpoolInputConfig | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputTopicConfig:
    """A topic the job publishes to: whether it does, on which cluster, and how the topic
    is created when missing."""

    publish: bool
    cluster: str  # a configured cluster's name; the loader defaults it to the input's
    topic: str
    create_topic: bool = True
    partitions: int
    replication_factor: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class FindingsConfig(OutputTopicConfig):
    """The findings topic: open, update and close events, keyed by finding."""

    publish: bool = True
    topic: str = "ksmon.findings"
    partitions: int = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskLoadsConfig(OutputTopicConfig):
    """The task loads topic: each Kafka Streams application's latest per-task loads, for
    the load-aware task assignor (assignor/), keyed by cluster and application id."""

    publish: bool = False
    topic: str = "ksmon.task-loads"
    partitions: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class SparkConfig:
    # Ignored under spark-submit, whose --master wins.
    master: str = "local[*]"
    driver_memory: int = 2**30
    shuffle_partitions: int = 4
    # The Kafka source's jars: Spark fetches them (spark.jars.packages) from Maven
    # Central, or from this repository too; or, with jars_dir, takes them from there.
    packages_repository: str | None = None
    jars_dir: Path | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DetectorsConfig:
    """The detectors' thresholds; defaults from docs/detectors.md (durations in seconds)."""

    # Rates are log-end offset growth over this window; a finding closes once
    # its rule has not held for this long (hysteresis).
    evaluation_window: float = 60.0
    # hot_partitions_colocated
    hot_factor: float = 3.0
    min_hot_rate: float = 10.0
    # partition_skew
    skew_min_share: float = 0.5
    skew_min_partitions: int = 4
    # restore_stalled
    acceptable_recovery_lag: int = 10_000
    progress_stall_after: float = 300.0
    restore_stall_after: float = 120.0
    # stream_threads_dead, no_live_consumers
    thread_history: float = 600.0
    thread_death_grace: float = 60.0
    # rebalance_loop
    loop_events: int = 4
    loop_window: float = 600.0
    loop_unstable_ratio: float = 0.5
    metadata_size_ratio: float = 0.5
    # idle_members: more stream threads than active tasks, at every judged poll this long
    idle_members_after: float = 300.0
    # assignment_size_risk: a classic group's metadata record against the offsets topic's
    # max.message.bytes. Its own share, not metadata_size_ratio: that one only names a
    # likely cause of a loop already running, and may stay generous while this warning
    # is tuned for noise.
    assignment_size_ratio: float = 0.5
    # ... or growing (least squares over this look-back) to reach the limit within the
    # horizon, once past the floor share.
    # 0: the trend variant is off. The job keeps history as long as this look-back, and a
    # micro-batch's cost grows with the history it reads (docs/benchmarks.md).
    assignment_growth_window: float = 0.0
    assignment_growth_horizon: float = 7 * 86400.0
    assignment_growth_min_ratio: float = 0.25
    # internal_topic_budget: a Kafka Streams application's internal topics and their
    # partition replicas (partitions x replication factor), and each broker's partition
    # replicas over the whole cluster, against budgets (0: that check is off). Warning
    # above a budget, info from budget_approach_ratio of it, held for budget_hold.
    internal_topics_per_application: int = 50
    internal_replicas_per_application: int = 2000
    partition_replicas_per_broker: int = 4000
    budget_approach_ratio: float = 0.8
    budget_hold: float = 300.0
    # copartition_mismatch: a sub-topology's topics of different partition counts, at every
    # judged poll this long (a count change is a discrete event: short)
    copartition_mismatch_after: float = 60.0
    # threads_fewer_than_tasks: the busiest stream thread holds at least this many active
    # tasks (2: from there another thread could take some of its work; seed 001's app fell
    # behind at 2)...
    tasks_per_thread_threshold: int = 2
    # ... while the group's lag grows across this look-back: its least value in each
    # quarter above the one before (each quarter spans several commits)...
    tasks_per_thread_lag_window: float = 300.0
    # ... by at least this many records from the first quarter to the last.
    tasks_per_thread_min_lag_growth: int = 1000
    # state_store_footprint: an instance's estimated RocksDB memory against its app
    # container's memory limit (from its sidecar). Per RocksDB instance (a key-value store,
    # or one segment of a window/session store), Kafka Streams' defaults without a
    # RocksDBConfigSetter: a 50 MiB block cache and 3 write buffers of 16 MiB.
    store_footprint_ratio: float = 0.8
    rocksdb_block_cache_bytes: int = 50 * 2**20
    rocksdb_write_buffer_bytes: int = 16 * 2**20
    rocksdb_write_buffers: int = 3
    # A RocksDBConfigSetter that bounds every store of an instance to one shared cache and
    # write buffer manager: that bound is the instance's total. None: per-store defaults.
    rocksdb_bounded_memory_bytes: int | None = None
    # ... and a compact-only changelog that grew at every sample over this look-back,
    # never shrinking, by at least both margins. 0: off (the job keeps history this long).
    changelog_growth_window: float = 0.0
    changelog_growth_min_ratio: float = 0.2
    changelog_growth_min_bytes: int = 64 * 2**20
    # consumer_status: each group's status over this sliding window of its commits. At
    # least max.poll.interval.ms (300 s by default): a consumer in the group polls at least
    # that often, and its commits follow its polls, so one slow but moving commits within
    # the window and is never stalled.
    consumer_status_window: float = 300.0
    # Which statuses are findings, and how severe ("none": the metric only). Stalled:
    # members present, nothing committed for the window while records wait. Stopped: only
    # a group without members for good (thread_history and a window), since one just left
    # with a growing lag is no_live_consumers'; "none" because groups abandoned with a
    # backlog are common and nobody's emergency. Rewound: a reset, reprocessing ahead.
    # Lagging: behind while moving, as every burst is; time lag says how much it matters.
    consumer_stalled_severity: StatusSeverity = "critical"
    consumer_stopped_severity: StatusSeverity = "none"
    consumer_rewound_severity: StatusSeverity = "info"
    consumer_lagging_severity: StatusSeverity = "none"

    @property
    def history_retention(self) -> float:
        """How much event time the job keeps: the longest look-back of any rule, plus a margin.

        The loop rule looks back two windows: one to count in, one more to tell a
        group that formed in it from a history cut short."""
        longest = max(
            self.evaluation_window,
            self.progress_stall_after,
            self.restore_stall_after,
            self.thread_history,
            self.thread_death_grace,
            2 * self.loop_window,
            self.idle_members_after,
            self.assignment_growth_window,
            self.budget_hold,
            self.copartition_mismatch_after,
            self.tasks_per_thread_lag_window,
            self.changelog_growth_window,
            self.consumer_status_window,
        )
        return longest + self.evaluation_window


@dataclass(frozen=True, slots=True, kw_only=True)
class AggregationConfig:
    """The aggregation job (``ksmon aggregate``)."""

    # Keys of earlier versions, and why they are gone (the reader names them).
    RETIRED_KEYS: ClassVar[dict[str, str]] = {
        "judged_polls_per_batch": (
            "the job keeps each group's look-back in its state and judges only the polls "
            "that arrive, every one of them, whatever the backlog"
        ),
    }

    listen: HostPort = DEFAULT_JOB_LISTEN
    # Spark's streaming checkpoint, the recent-history table, the findings state
    # and quarantined snapshots. None: ``<state dir>/aggregate``.
    checkpoint_dir: Path | None = None
    trigger_interval: float = 10.0
    # The stateful operator's keys: groups are spread over this many buckets, each
    # bucket's groups kept and judged together (a key costs a round trip between Spark
    # and Python). Fixed once the checkpoint directory exists.
    buckets: int = 32
    input: InputConfig = InputConfig()
    findings: FindingsConfig | None = None  # the loader always fills it
    task_loads: TaskLoadsConfig | None = None  # the loader always fills it
    spark: SparkConfig = SparkConfig()
    detectors: DetectorsConfig = DetectorsConfig()


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyConfig:
    """An application's ``Topology#describe()`` output, for a group whose broker does not
    hold its topology (classic groups): in ``file`` or inline in ``text``, one of them.
    Checked when the config loads."""

    group: str  # the application.id
    cluster: str | None = None  # None: the group of that name on every cluster
    file: Path | None = None
    text: str | None = None

    def describe_text(self) -> str:
        """The description's text; OSError when its file cannot be read (any more)."""
        if self.text is not None:
            return self.text
        assert self.file is not None  # noqa: S101 - the loader requires one of them
        return self.file.read_text(encoding="utf-8")


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    agent: AgentConfig = field(default_factory=AgentConfig)
    http: HttpConfig = HttpConfig()
    logging: LoggingConfig = LoggingConfig()
    clusters: tuple[ClusterConfig, ...]
    sink: SinkConfig = SinkConfig()
    exposition: ExpositionConfig = ExpositionConfig()
    sidecar: SidecarConfig | None = None  # set exactly when agent.mode is sidecar
    aggregation: AggregationConfig = AggregationConfig()
    topologies: tuple[TopologyConfig, ...] = ()

    def cluster(self, name: str) -> ClusterConfig:
        """The cluster called ``name``; KeyError if none is."""
        for cluster in self.clusters:
            if cluster.name == name:
                return cluster
        raise KeyError(name)

    def topology(self, cluster: str, group: str) -> TopologyConfig | None:
        """The configured topology of ``group`` on ``cluster`` (one naming the cluster
        first, then one for the group on every cluster)."""
        named = [t for t in self.topologies if t.group == group and t.cluster == cluster]
        anywhere = [t for t in self.topologies if t.group == group and t.cluster is None]
        return next(iter(named + anywhere), None)

    def describe(self, written: frozenset[str] | None = None) -> str:
        """A summary for a person of what the file runs, one line per cluster it uses; it
        never contains a secret. ``written``: the file's top-level sections (None: all)."""
        runs_job, runs_agent = _runs(written)
        lines = []
        if runs_agent:
            lines.append(
                f"agent {self.agent.id} ({self.agent.mode}): metrics on {self.http.listen}, "
                f"lag per {self.exposition.lag_granularity}, "
                f"logs {self.logging.format} at {self.logging.level}"
            )
            lines += [
                line
                for cluster in self.clusters
                if (line := _describe_cluster(cluster, self.sidecar, self.sink, runs_job))
            ]
            lines.append(f"snapshots: {_describe_sink(self.sink)}")
            if self.sidecar is not None:
                lines.append(_describe_sidecar(self.sidecar))
        else:
            job_clusters = _job_clusters(self.aggregation)
            lines += [
                f"cluster {cluster.name}: {_describe_connection(cluster)}"
                for cluster in self.clusters
                if cluster.name in job_clusters
            ]
        if runs_job:
            logs = "" if runs_agent else f"; logs {self.logging.format} at {self.logging.level}"
            lines.append(f"aggregation job: {_describe_aggregation(self.aggregation)}{logs}")
        if self.topologies:
            named = ", ".join(
                t.group if t.cluster is None else f"{t.group} on {t.cluster}"
                for t in self.topologies
            )
            lines.append(f"topologies (Topology#describe()) for: {named}")
        return "\n".join(lines)


# The sections only the agent (or sidecar) reads; a file with an aggregation section and
# none of these configures the job alone (a sink section there names the job's input).
_AGENT_SECTIONS = frozenset({"agent", "http", "sidecar", "exposition"})


def _runs(written: frozenset[str] | None) -> tuple[bool, bool]:
    """(the job, the agent): what a file with these top-level sections runs."""
    if written is None:
        return True, True
    job = "aggregation" in written
    return job, not job or bool(written & _AGENT_SECTIONS)


def _job_clusters(job: AggregationConfig) -> set[str]:
    used = set()
    if job.input.kafka is not None:
        used.add(job.input.kafka.cluster)
    if job.findings is not None and job.findings.publish:
        used.add(job.findings.cluster)
    if job.task_loads is not None and job.task_loads.publish:
        used.add(job.task_loads.cluster)
    return used


def _describe_connection(cluster: ClusterConfig) -> str:
    security = cluster.security
    connection: str = security.protocol
    if security.sasl is not None:
        connection += f" {_describe_sasl(security.sasl)}"
    if security.tls is not None:
        tls = security.tls
        connection += f", CA {tls.ca_file or 'system'}"
        if tls.cert_file is not None:
            connection += f", client certificate {tls.cert_file}"
        if not tls.check_hostname:
            connection += ", host names NOT checked"
    return f"{','.join(cluster.bootstrap_servers)} over {connection}"


def _describe_sasl(sasl: SaslConfig) -> str:
    """The mechanism and who logs in, naming where secrets come from, never their value."""
    if sasl.oauth is not None:
        oauth = sasl.oauth
        scope = f", scope {oauth.scope}" if oauth.scope else ""
        extensions = (
            f", extensions {','.join(name for name, _ in oauth.extensions)}"
            if oauth.extensions
            else ""
        )
        return (
            f"{sasl.mechanism} as client {oauth.client_id} of {oauth.token_endpoint_url} "
            f"(secret from {oauth.client_secret.origin}{scope}{extensions})"
        )
    if sasl.kerberos is not None:
        kerberos = sasl.kerberos
        krb5 = f", {kerberos.krb5_conf}" if kerberos.krb5_conf is not None else ""
        return (
            f"{sasl.mechanism} as {kerberos.principal} (keytab {kerberos.keytab}{krb5}) "
            f"to service {kerberos.service_name}"
        )
    if sasl.aws is not None:
        aws = sasl.aws
        chosen = [f"profile {aws.profile}"] if aws.profile else []
        chosen += [f"region {aws.region}"] if aws.region else []
        return f"{sasl.mechanism} (credentials from the AWS chain{'; ' if chosen else ''}" + (
            ", ".join(chosen) + ")"
        )
    password = sasl.password.origin if sasl.password is not None else "nowhere"
    return f"{sasl.mechanism} as {sasl.username} (password from {password})"


def _describe_cluster(
    cluster: ClusterConfig, sidecar: SidecarConfig | None, sink: SinkConfig, runs_job: bool
) -> str | None:
    """The cluster as the agent uses it; None for a cluster a sidecar file does not use."""
    groups = " ".join(p.pattern for p in cluster.groups.allow)
    if cluster.groups.deny:
        groups += " except " + " ".join(p.pattern for p in cluster.groups.deny)
    poll = cluster.poll
    offsets_topic = "reads" if cluster.offsets_topic.read else "does not read"
    if sidecar is not None:
        # A sidecar polls its own application's group on its app's cluster, nothing else.
        if cluster.name != sidecar.cluster:
            ships = sink.kafka is not None and sink.kafka.cluster == cluster.name
            if not ships and not runs_job:
                return None
            servers = ",".join(cluster.bootstrap_servers)
            return f"cluster {cluster.name}: {servers}; not polled" + (
                " (snapshots are shipped there)" if ships else ""
            )
        groups = f"{sidecar.application_id} only"
        offsets_topic = "does not read"
    return (
        f"cluster {cluster.name}: {_describe_connection(cluster)}; "
        f"groups {groups}; offsets every {format_duration(poll.offsets_interval)}, "
        f"metadata every {format_duration(poll.metadata_interval)}; "
        f"{offsets_topic} __consumer_offsets"
    )


def _describe_sidecar(sidecar: SidecarConfig) -> str:
    threads = (
        f", {sidecar.expected_stream_threads} stream threads expected"
        if sidecar.expected_stream_threads is not None
        else ""
    )
    state_dir = (
        f"state directory {sidecar.state_dir}" if sidecar.state_dir else "no state directory"
    )
    return (
        f"sidecar of Kafka Streams application {sidecar.application_id} on cluster "
        f"{sidecar.cluster}: metrics from {sidecar.app_metrics_url} "
        f"(timeout {format_duration(sidecar.scrape_timeout)}), {state_dir}{threads}"
    )


def _describe_aggregation(job: AggregationConfig) -> str:
    source = job.input
    if source.spool is not None:
        reads = f"reads spool directory {source.spool.directory}"
    elif source.kafka is not None:
        reads = f"reads Kafka topic {source.kafka.topic} on cluster {source.kafka.cluster}"
    else:
        # Only when the agent of this file ships nothing (sink type none) and no input
        # is written: the job would refuse to start.
        return (
            "none fed by this file's agent (sink type none ships no snapshots); set "
            "aggregation.input to the topic or spool directory other agents write to run one"
        )
    findings = job.findings
    publishes = (
        f"findings to Kafka topic {findings.topic} on cluster {findings.cluster}"
        if findings is not None and findings.publish
        else "findings not published to a topic"
    )
    loads = job.task_loads
    if loads is not None and loads.publish:
        publishes += f", task loads to Kafka topic {loads.topic} on cluster {loads.cluster}"
    # The job resolves None to <state dir>/aggregate (agent/aggregation/job.py).
    checkpoint = (
        job.checkpoint_dir or "<state dir>/aggregate (KSMON_STATE_DIR, else ~/.local/state/ksmon)"
    )
    return (
        f"metrics on {job.listen}, {reads} every {format_duration(job.trigger_interval)}, "
        f"{publishes}; Spark {job.spark.master}, checkpoints in {checkpoint}; evaluation "
        f"window {format_duration(job.detectors.evaluation_window)}"
    )


def _describe_sink(sink: SinkConfig) -> str:
    if sink.kafka is not None:
        kafka = sink.kafka
        return (
            f"Kafka topic {kafka.topic} on cluster {kafka.cluster} "
            f"({kafka.compression}, up to {kafka.buffer_max_snapshots} buffered)"
        )
    if sink.spool is not None:
        spool = sink.spool
        return (
            f"spool directory {spool.directory} (new file every "
            f"{format_size(spool.rotate_bytes)} or {format_duration(spool.rotate_interval)}, "
            f"{format_size(spool.max_bytes)} kept)"
        )
    return "not shipped (sink type none)"
