"""YAML file -> ``Config``: each section read in schema order, then the rules that span keys.

The first problem found ends the load with one ``ConfigFileError`` naming the
key's path: a person fixes one thing at a time. Within a mapping, misspelt
keys are reported before values, so a typo is not mistaken for a default.
"""

import ipaddress
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from agent.config.location import ConfigFileError, Place
from agent.config.reader import INT32_MAX, SecretReference, Section
from agent.config.schema import (
    AGENT_MODES,
    APP_METRICS_DIALECTS,
    COMPRESSIONS,
    INPUT_TYPES,
    LAG_GRANULARITIES,
    LOG_FORMATS,
    LOG_LEVELS,
    PASSWORD_MECHANISMS,
    SASL_MECHANISMS,
    SASL_PROTOCOLS,
    SECURITY_PROTOCOLS,
    SINK_TYPES,
    STARTING_OFFSETS,
    STATUS_SEVERITIES,
    TLS_PROTOCOLS,
    AgentConfig,
    AggregationConfig,
    AwsIamConfig,
    ClusterConfig,
    Config,
    DetectorsConfig,
    ExpositionConfig,
    FindingsConfig,
    GroupsConfig,
    HttpConfig,
    InputConfig,
    InputType,
    KafkaInputConfig,
    KafkaSinkConfig,
    KerberosConfig,
    LoggingConfig,
    OAuthConfig,
    OffsetsTopicConfig,
    OutputTopicConfig,
    PollConfig,
    SaslConfig,
    SaslMechanism,
    SecurityConfig,
    SidecarConfig,
    SinkConfig,
    SparkConfig,
    SpoolInputConfig,
    SpoolSinkConfig,
    TaskLoadsConfig,
    TlsConfig,
    TopologyConfig,
)
from agent.config.values import format_duration, format_size, parse_size, shown
from agent.config.yaml_source import YamlMap, load_yaml
from agent.streams.topology import TopologyParseError, parse_topology

OutputTopic = TypeVar("OutputTopic", bound=OutputTopicConfig)

_CLUSTER_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")
_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
# StreamsConfig's application.id validator: a legal topic-name prefix.
_APPLICATION_ID = re.compile(r"[A-Za-z0-9._-]+")
_HTTP_URL = re.compile(r"https?://[^/\s?#]+(/\S*)?")
INT16_MAX = 2**15 - 1


def load_config(path: Path, env: Mapping[str, str] = os.environ) -> Config:
    """Read and validate the config file at ``path``; ``ConfigError`` names what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigFileError(str(path), f"cannot read the config file: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigFileError(str(path), "the config file is not UTF-8 text") from None
    return parse_config(text, str(path), env)


def parse_config(text: str, source: str, env: Mapping[str, str] = os.environ) -> Config:
    """Validate config ``text``; ``source`` names it in errors, ``env`` serves ``{env: VAR}``.

    >>> config = parse_config("clusters: [{name: dev, bootstrap_servers: 'k:9092'}]", "x", {})
    >>> config.clusters[0].bootstrap_servers, config.clusters[0].poll.offsets_interval
    (('k:9092',), 10.0)
    """
    document = load_yaml(text, source)
    if document is None:
        raise ConfigFileError(source, "the file is empty; it needs at least a clusters: list")
    return _read_config(Section(Place(source, line=1), document, Config, env))


def _read_config(top: Section) -> Config:
    agent = _read_agent(top.section("agent", AgentConfig))
    http = HttpConfig(listen=top.section("http", HttpConfig).host_port("listen"))
    logging = _read_logging(top.section("logging", LoggingConfig))
    clusters = _read_clusters(top)
    sink = _read_sink(top.section("sink", SinkConfig), clusters)
    return Config(
        agent=agent,
        http=http,
        logging=logging,
        clusters=clusters,
        sink=sink,
        exposition=_read_exposition(top.section("exposition", ExpositionConfig)),
        sidecar=_read_sidecar(top.section("sidecar", SidecarConfig), clusters, agent.mode),
        aggregation=_read_aggregation(
            top.section("aggregation", AggregationConfig), clusters, sink
        ),
        topologies=_read_topologies(top, clusters),
    )


def _read_topologies(
    top: Section, clusters: tuple[ClusterConfig, ...]
) -> tuple[TopologyConfig, ...]:
    if not top.has("topologies"):
        return ()
    topologies: list[TopologyConfig] = []
    first_of: dict[tuple[str, str | None], str] = {}
    for s in top.sections("topologies", TopologyConfig, what="topology"):
        group = s.text("group", expected="the application.id")
        cluster = _cluster_name(s, clusters, "") if s.has("cluster") else None
        if s.has("file") == s.has("text"):
            raise s.fail(
                "file",
                "give the Topology#describe() output in exactly one of file: (a path) "
                "or text: (inline)",
            )
        topology = TopologyConfig(
            group=group,
            cluster=cluster,
            file=s.optional_path("file"),
            text=s.text("text") if s.has("text") else None,
        )
        key = "file" if topology.file is not None else "text"
        try:
            parse_topology(topology.describe_text())
        except OSError as e:
            raise s.fail("file", f"cannot read the topology file: {e.strerror}") from None
        except UnicodeDecodeError:
            raise s.fail("file", "the topology file is not UTF-8 text") from None
        except TopologyParseError as e:
            raise s.fail(key, f"not a Topology#describe() output: {e}") from None
        if (group, cluster) in first_of:
            raise s.fail(
                "group", f"a second topology for {group!r} (first at {first_of[(group, cluster)]})"
            )
        first_of[(group, cluster)] = s.at("group").path
        topologies.append(topology)
    return tuple(topologies)


def _read_agent(s: Section) -> AgentConfig:
    # In Kubernetes the Downward API's POD_NAME names the agent; elsewhere the host does.
    default_id = s.env.get("POD_NAME") or AgentConfig().id
    return AgentConfig(id=s.text("id", default=default_id), mode=s.choice("mode", AGENT_MODES))


def _read_logging(s: Section) -> LoggingConfig:
    return LoggingConfig(
        format=s.choice("format", LOG_FORMATS), level=s.choice("level", LOG_LEVELS)
    )


def _read_clusters(top: Section) -> tuple[ClusterConfig, ...]:
    clusters: list[ClusterConfig] = []
    first_of: dict[str, str] = {}
    for s in top.sections("clusters", ClusterConfig, what="cluster"):
        cluster = _read_cluster(s)
        if cluster.name in first_of:
            raise s.fail(
                "name", f"duplicate cluster name {cluster.name!r} (also {first_of[cluster.name]})"
            )
        first_of[cluster.name] = s.at("name").path
        clusters.append(cluster)
    return tuple(clusters)


def _read_cluster(s: Section) -> ClusterConfig:
    name = s.text("name", expected="a cluster name such as prod-eu")
    if not _CLUSTER_NAME.fullmatch(name):
        raise s.fail(
            "name",
            "must be lowercase letters, digits, '_', '.' or '-', starting with a letter "
            f"or digit (it becomes the kafka_cluster label), got {name!r}",
        )
    return ClusterConfig(
        name=name,
        bootstrap_servers=tuple(str(server) for server in s.host_ports("bootstrap_servers")),
        client_id=s.text("client_id"),
        security=_read_security(s.section("security", SecurityConfig)),
        groups=_read_groups(s.section("groups", GroupsConfig)),
        poll=_read_poll(s.section("poll", PollConfig)),
        offsets_topic=OffsetsTopicConfig(
            read=s.section("offsets_topic", OffsetsTopicConfig).boolean("read")
        ),
    )


def _read_security(s: Section) -> SecurityConfig:
    protocol = s.choice("protocol", SECURITY_PROTOCOLS)
    named = f"protocol is {protocol}" + ("" if s.has("protocol") else " (the default)")
    if s.has("tls") and protocol not in TLS_PROTOCOLS:
        raise s.fail("tls", f"only used with protocol SSL or SASL_SSL, but {named}")
    if s.has("sasl") and protocol not in SASL_PROTOCOLS:
        raise s.fail("sasl", f"only used with protocol SASL_PLAINTEXT or SASL_SSL, but {named}")
    if protocol in SASL_PROTOCOLS and not s.has("sasl"):
        raise s.fail(
            "sasl", f"required with protocol {protocol} (mechanism and its login settings)"
        )
    return SecurityConfig(
        protocol=protocol,
        tls=_read_tls(s.section("tls", TlsConfig)) if protocol in TLS_PROTOCOLS else None,
        sasl=(
            _read_sasl(s.section("sasl", SaslConfig), protocol)
            if protocol in SASL_PROTOCOLS
            else None
        ),
    )


def _read_tls(s: Section) -> TlsConfig:
    tls = TlsConfig(
        ca_file=s.optional_path("ca_file"),
        cert_file=s.optional_path("cert_file"),
        key_file=s.optional_path("key_file"),
        key_password=s.secret("key_password"),
        check_hostname=s.boolean("check_hostname"),
    )
    if tls.cert_file is not None and tls.key_file is None:
        raise s.fail("cert_file", "needs key_file too (the client certificate's private key)")
    if tls.key_file is not None and tls.cert_file is None:
        raise s.fail("key_file", "needs cert_file too (the client certificate)")
    if tls.key_password is not None and tls.key_file is None:
        raise s.fail("key_password", "only used with key_file (it decrypts that key)")
    return tls


# Each mechanism's own keys under sasl; any other one written is an error naming it.
_SASL_KEYS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(PASSWORD_MECHANISMS, ("username", "password")),
    "OAUTHBEARER": ("oauth",),
    "AWS_MSK_IAM": ("aws",),
    "GSSAPI": ("kerberos",),
}
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
# RFC 7628 section 3.1: an extension's name is letters, its value visible characters,
# spaces and tabs; "auth" carries the token itself.
_EXTENSION_NAME = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7E \t\r\n]+")


def _read_sasl(s: Section, protocol: str) -> SaslConfig:
    mechanism = s.choice("mechanism", SASL_MECHANISMS)
    if mechanism == "AWS_MSK_IAM" and protocol != "SASL_SSL":
        raise s.fail(
            "mechanism",
            f"AWS_MSK_IAM needs protocol SASL_SSL (MSK's IAM listeners are TLS), "
            f"but protocol is {protocol}",
        )
    own = _SASL_KEYS[mechanism]
    for key in ("username", "password", "oauth", "aws", "kerberos"):
        if s.has(key) and key not in own:
            users = sorted(m for m, keys in _SASL_KEYS.items() if key in keys)
            raise s.fail(
                key,
                f"only used with mechanism {' or '.join(users)}, but mechanism is {mechanism}",
            )
    if mechanism == "OAUTHBEARER":
        _require_section(s, "oauth", mechanism, "token_endpoint_url, client_id, client_secret")
        return SaslConfig(mechanism=mechanism, oauth=_read_oauth(s.section("oauth", OAuthConfig)))
    if mechanism == "GSSAPI":
        _require_section(s, "kerberos", mechanism, "principal, keytab")
        return SaslConfig(
            mechanism=mechanism, kerberos=_read_kerberos(s.section("kerberos", KerberosConfig))
        )
    if mechanism == "AWS_MSK_IAM":
        # Every key is optional: the AWS chain finds the credentials and the region.
        return SaslConfig(mechanism=mechanism, aws=_read_aws(s.section("aws", AwsIamConfig)))
    return _read_password_login(s, mechanism)


def _require_section(s: Section, key: str, mechanism: SaslMechanism, keys: str) -> None:
    if not s.has(key):
        raise s.fail(key, f"required with mechanism {mechanism} ({keys})")


def _read_password_login(s: Section, mechanism: SaslMechanism) -> SaslConfig:
    if not s.has("username"):
        raise s.fail("username", f"required key missing with mechanism {mechanism}; expected text")
    username = s.text("username")
    password = s.secret("password")
    if password is None:
        raise s.fail("password", "required key missing; expected text, {env: VAR} or {file: PATH}")
    return SaslConfig(mechanism=mechanism, username=username, password=password)


def _read_oauth(s: Section) -> OAuthConfig:
    url = _token_endpoint_url(s)
    client_id = s.text("client_id", expected="the client id the identity provider issued")
    client_secret = s.secret("client_secret")
    if client_secret is None:
        raise s.fail(
            "client_secret", "required key missing; expected text, {env: VAR} or {file: PATH}"
        )
    return OAuthConfig(
        token_endpoint_url=url,
        client_id=client_id,
        client_secret=client_secret,
        scope=s.text("scope") if s.has("scope") else None,
        extensions=_sasl_extensions(s),
        ca_file=s.optional_path("ca_file"),
    )


def _token_endpoint_url(s: Section) -> str:
    """An https URL; plain http only to this machine (a test's or a local proxy's IdP),
    since the client secret travels in it."""
    key = "token_endpoint_url"
    url = s.text(key, expected="the identity provider's https:// token endpoint URL")
    expected = f"expected an https:// URL such as https://idp.example.com/oauth2/token, got {url!r}"
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        raise s.fail(key, expected) from None
    if parts.username is not None or parts.password is not None:
        # Not quoted: what precedes the @ may be a secret.
        raise s.fail(key, "must not hold credentials (user:password@); use client_secret")
    if parts.scheme not in ("https", "http") or not host or re.search(r"\s", url):
        raise s.fail(key, expected)
    if parts.scheme == "http" and not _is_loopback(host):
        raise s.fail(
            key,
            f"must be https:// (the client secret is sent to it); http:// is allowed only "
            f"for 127.0.0.1, localhost or ::1, got {url!r}",
        )
    return url


def _is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _sasl_extensions(s: Section) -> tuple[tuple[str, str], ...]:
    raw = s.raw.get("extensions")
    if raw is None:
        return ()
    if not isinstance(raw, YamlMap):
        raise s.fail(
            "extensions", f"expected a mapping of extension names to text, got {shown(raw)}"
        )
    place = s.at("extensions")
    extensions = []
    for name, value in raw.items():
        at = place.key(str(name), raw.key_lines.get(name))
        if not isinstance(name, str) or not _EXTENSION_NAME.fullmatch(name) or name == "auth":
            raise at.error(
                f"an extension name must be letters only and not 'auth', got {shown(name)}"
            )
        if not isinstance(value, str) or not _EXTENSION_VALUE.fullmatch(value):
            raise at.error(
                f"expected text of visible ASCII characters and spaces, got {shown(value)}"
                + (" (quote it to make it text)" if isinstance(value, int | float) else "")
            )
        extensions.append((name, value))
    return tuple(extensions)


def _read_aws(s: Section) -> AwsIamConfig:
    region = s.text("region") if s.has("region") else None
    if region is not None and not re.fullmatch(r"[a-z]{2}(-[a-z0-9]+)+", region):
        raise s.fail("region", f"expected an AWS region such as eu-west-1, got {region!r}")
    return AwsIamConfig(region=region, profile=s.text("profile") if s.has("profile") else None)


def _read_kerberos(s: Section) -> KerberosConfig:
    service_name = s.text("service_name")
    if "/" in service_name or "@" in service_name:
        raise s.fail(
            "service_name",
            "expected the first part of the brokers' principal only (kafka for "
            f"kafka/broker-1.example.com@EXAMPLE.COM), got {service_name!r}",
        )
    principal = s.text(
        "principal", expected="the client's Kerberos principal such as ksmon/agent@EXAMPLE.COM"
    )
    keytab = s.optional_path("keytab")
    if keytab is None:
        raise s.fail("keytab", f"required key missing; expected the keytab file of {principal}")
    return KerberosConfig(
        service_name=service_name,
        principal=principal,
        keytab=keytab,
        krb5_conf=s.optional_path("krb5_conf"),
    )


def _read_groups(s: Section) -> GroupsConfig:
    groups = GroupsConfig(allow=s.patterns("allow"), deny=s.patterns("deny"))
    if not groups.allow:
        raise s.fail("allow", "must list at least one regular expression ('.*' for every group)")
    return groups


def _read_poll(s: Section) -> PollConfig:
    poll = PollConfig(
        offsets_interval=s.duration("offsets_interval"),
        metadata_interval=s.duration("metadata_interval"),
        request_timeout=s.duration("request_timeout"),
    )
    if poll.metadata_interval < poll.offsets_interval:
        metadata, offsets = (
            format_duration(poll.metadata_interval),
            format_duration(poll.offsets_interval),
        )
        if s.has("metadata_interval"):
            raise s.fail(
                "metadata_interval",
                f"must be at least offsets_interval ({offsets}), got {metadata}",
            )
        raise s.fail(
            "offsets_interval",
            f"must be at most metadata_interval ({metadata}, the default), got {offsets}",
        )
    return poll


def _read_sink(s: Section, clusters: tuple[ClusterConfig, ...]) -> SinkConfig:
    kind = s.choice("type", SINK_TYPES)
    # A section for another type is still checked, so switching type later holds no surprise.
    kafka = _read_kafka_sink(s.section("kafka", KafkaSinkConfig), clusters)
    spool = _read_spool_sink(s.section("spool", SpoolSinkConfig), needed=kind == "spool")
    return SinkConfig(
        type=kind,
        kafka=kafka if kind == "kafka" else None,
        spool=spool if kind == "spool" else None,
    )


def _cluster_name(s: Section, clusters: tuple[ClusterConfig, ...], default: str) -> str:
    names = [c.name for c in clusters]
    cluster = s.text("cluster", default=default)
    if cluster not in names:
        raise s.fail(
            "cluster", f"must name a configured cluster ({', '.join(names)}), got {cluster!r}"
        )
    return cluster


def _topic_name(s: Section, default: str | None = None) -> str:
    topic = s.text("topic", default=default)
    if not _TOPIC_NAME.fullmatch(topic) or topic in {".", ".."}:
        raise s.fail(
            "topic",
            f"must be a Kafka topic name (up to 249 letters, digits, '.', '_', '-'), got {topic!r}",
        )
    return topic


def _read_kafka_sink(s: Section, clusters: tuple[ClusterConfig, ...]) -> KafkaSinkConfig:
    return KafkaSinkConfig(
        cluster=_cluster_name(s, clusters, clusters[0].name),
        topic=_topic_name(s),
        create_topic=s.boolean("create_topic"),
        partitions=s.integer("partitions", minimum=1),
        replication_factor=_replication_factor(s),
        compression=s.choice("compression", COMPRESSIONS),
        buffer_max_snapshots=s.integer("buffer_max_snapshots", minimum=1),
        # The topic's max.message.bytes is an int32 on the broker.
        max_message_bytes=s.size("max_message_bytes", maximum=INT32_MAX),
    )


def _configured_cluster(s: Section, clusters: tuple[ClusterConfig, ...]) -> str:
    """The ``cluster`` key: a configured cluster's name, the first one by default."""
    return _cluster_name(s, clusters, clusters[0].name)


def _replication_factor(s: Section) -> int:
    rule = "must be -1 (the broker's default) or at least 1"
    # CreateTopics carries the replication factor as an int16.
    factor = s.integer("replication_factor", minimum=-1, maximum=INT16_MAX, rule=rule)
    if factor == 0:
        raise s.fail("replication_factor", f"{rule}, got 0")
    return factor


def _read_spool_sink(s: Section, *, needed: bool) -> SpoolSinkConfig | None:
    directory = s.optional_path("directory")
    rotate_bytes = s.size("rotate_bytes")
    rotate_interval = s.duration("rotate_interval")
    max_bytes = s.size("max_bytes")
    if max_bytes < rotate_bytes:
        raise s.fail(
            "max_bytes" if s.has("max_bytes") else "rotate_bytes",
            f"max_bytes ({format_size(max_bytes)}) must be at least rotate_bytes "
            f"({format_size(rotate_bytes)}): a full file must fit",
        )
    if directory is None:
        if needed:
            raise s.fail("directory", "required key missing when sink.type is spool")
        return None
    return SpoolSinkConfig(
        directory=directory,
        rotate_bytes=rotate_bytes,
        rotate_interval=rotate_interval,
        max_bytes=max_bytes,
    )


def _read_sidecar(
    s: Section, clusters: tuple[ClusterConfig, ...], mode: str
) -> SidecarConfig | None:
    """The sidecar section: checked whenever written, kept only in sidecar mode."""
    if mode != "sidecar" and not s.raw:
        return None
    if not s.has("application_id"):
        why = "when agent.mode is sidecar" if mode == "sidecar" else "in a sidecar section"
        raise s.fail(
            "application_id",
            f"required key missing {why}; expected the Kafka Streams application.id "
            "(the group the sidecar watches)",
        )
    application_id = s.text("application_id")
    if not _APPLICATION_ID.fullmatch(application_id):
        raise s.fail(
            "application_id",
            "must be a Kafka Streams application.id (letters, digits, '.', '_', '-'), "
            f"got {application_id!r}",
        )
    cluster = _configured_cluster(s, clusters)
    url = s.text("app_metrics_url")
    if not _HTTP_URL.fullmatch(url):
        raise s.fail(
            "app_metrics_url",
            "expected an http:// or https:// URL such as http://127.0.0.1:9404/metrics, "
            f"got {url!r}",
        )
    sidecar = SidecarConfig(
        application_id=application_id,
        cluster=cluster,
        app_metrics_url=url,
        app_metrics_dialect=s.choice("app_metrics_dialect", APP_METRICS_DIALECTS),
        scrape_timeout=s.duration("scrape_timeout"),
        state_dir=s.optional_path("state_dir"),
        expected_stream_threads=s.optional_integer("expected_stream_threads", minimum=1),
        app_memory_limit=_app_memory_limit(s),
    )
    return sidecar if mode == "sidecar" else None


def _app_memory_limit(s: Section) -> int | Path | None:
    """``sidecar.app_memory_limit``: a size, ``{env: VAR}`` (resolved now) or ``{file: PATH}``
    (a cgroup file, read at every poll)."""
    key = "app_memory_limit"
    if not s.has(key):
        return None
    if not isinstance(s.raw.get(key), YamlMap):
        return s.size(key)
    reference = s.section(key, SecretReference)
    if reference.has("env") == reference.has("file"):
        raise s.fail(key, "expected a size, {env: VAR} or {file: PATH} (exactly one of env, file)")
    if reference.has("file"):
        return Path(reference.text("file"))
    variable = reference.text("env")
    value = s.env.get(variable, "").strip()
    if not value:
        raise reference.fail(
            "env",
            f"environment variable {variable} is not set or empty; expected the app "
            "container's limits.memory in bytes (Downward API resourceFieldRef)",
        )
    try:
        # The Downward API writes bare bytes ("1073741824"); a size text works too.
        return parse_size(int(value) if value.isdigit() else value)
    except ValueError as e:
        raise reference.fail("env", f"environment variable {variable}: {e}") from None


def _read_exposition(s: Section) -> ExpositionConfig:
    return ExpositionConfig(
        lag_granularity=s.choice("lag_granularity", LAG_GRANULARITIES),
    )


def _read_aggregation(
    s: Section, clusters: tuple[ClusterConfig, ...], sink: SinkConfig
) -> AggregationConfig:
    job_input = _read_input(s.section("input", InputConfig), clusters, sink)
    input_cluster = job_input.kafka.cluster if job_input.kafka else clusters[0].name
    detectors = _read_detectors(s.section("detectors", DetectorsConfig))
    trigger_interval = s.duration("trigger_interval")
    if trigger_interval > detectors.evaluation_window:
        raise s.fail(
            "trigger_interval",
            f"must be at most detectors.evaluation_window "
            f"({format_duration(detectors.evaluation_window)}), got "
            f"{format_duration(trigger_interval)}",
        )
    return AggregationConfig(
        listen=s.host_port("listen"),
        checkpoint_dir=_checkpoint_dir(s),
        trigger_interval=trigger_interval,
        buckets=s.integer("buckets", minimum=1, maximum=65_536),
        input=job_input,
        findings=_read_output_topic(
            s.section("findings", FindingsConfig), FindingsConfig, clusters, input_cluster
        ),
        task_loads=_read_output_topic(
            s.section("task_loads", TaskLoadsConfig), TaskLoadsConfig, clusters, input_cluster
        ),
        spark=_read_spark(s.section("spark", SparkConfig)),
        detectors=detectors,
    )


def _read_input(s: Section, clusters: tuple[ClusterConfig, ...], sink: SinkConfig) -> InputConfig:
    """Where the job reads snapshots; by default, where this file's agent writes them."""
    kind = s.choice("type", INPUT_TYPES) if s.has("type") else _input_type_of(sink)
    k = s.section("kafka", KafkaInputConfig)
    kafka = KafkaInputConfig(
        cluster=_cluster_name(k, clusters, sink.kafka.cluster if sink.kafka else clusters[0].name),
        topic=_topic_name(k, sink.kafka.topic if sink.kafka else None),
        starting_offsets=k.choice("starting_offsets", STARTING_OFFSETS),
        max_snapshots_per_batch=k.integer("max_snapshots_per_batch", minimum=1),
    )
    p = s.section("spool", SpoolInputConfig)
    directory = p.optional_path("directory") or (sink.spool.directory if sink.spool else None)
    max_files = p.integer("max_files_per_batch", minimum=1)
    if directory is None and kind == "spool":
        raise p.fail("directory", "required key missing when aggregation.input.type is spool")
    spool = (
        SpoolInputConfig(directory=directory, max_files_per_batch=max_files)
        if directory is not None
        else None
    )
    if sink.type == "none" and not any(s.has(key) for key in ("type", "kafka", "spool")):
        # This file's agent ships nothing: there is no topic or directory to default to.
        return InputConfig(type=kind, kafka=None, spool=None)
    return InputConfig(
        type=kind,
        kafka=kafka if kind == "kafka" else None,
        spool=spool if kind == "spool" else None,
    )


def _input_type_of(sink: SinkConfig) -> InputType:
    return "spool" if sink.type == "spool" else "kafka"


def _checkpoint_dir(s: Section) -> Path | None:
    """A filesystem path: the driver writes its ledger there with plain file operations,
    so an object-store URI would silently become a relative local directory."""
    path = s.optional_path("checkpoint_dir")
    uri = re.match(r"([A-Za-z][A-Za-z0-9+.-]+):/", str(path)) if path is not None else None
    if uri is not None:
        raise s.fail(
            "checkpoint_dir",
            f"must be a filesystem path (a volume mounted on the driver and on every "
            f"executor), got a {uri.group(1)}:// URI: object storage is not supported "
            f"(docs/deploy.md)",
        )
    return path


def _read_output_topic(
    s: Section, kind: type[OutputTopic], clusters: tuple[ClusterConfig, ...], input_cluster: str
) -> OutputTopic:
    return kind(
        publish=s.boolean("publish"),
        cluster=_cluster_name(s, clusters, input_cluster),
        topic=_topic_name(s),
        create_topic=s.boolean("create_topic"),
        partitions=s.integer("partitions", minimum=1),
        replication_factor=_replication_factor(s),
    )


def _read_spark(s: Section) -> SparkConfig:
    master = s.text("master")
    return SparkConfig(
        master=master,
        driver_memory=s.size("driver_memory"),
        shuffle_partitions=s.integer("shuffle_partitions", minimum=1),
        packages_repository=_repository_url(s, "packages_repository"),
        jars_dir=s.optional_path("jars_dir"),
    )


def _repository_url(s: Section, key: str) -> str | None:
    """A Maven repository's base URL: Spark's package fetch speaks HTTP(S) only."""
    if not s.has(key):
        return None
    url = s.text(key, expected="an http:// or https:// URL")
    if not re.fullmatch(r"https?://[^\s/?#]+(/\S*)?", url):
        raise s.fail(
            key,
            f"expected the http:// or https:// URL of a Maven repository "
            f"(e.g. https://repo1.maven.org/maven2), got {url!r}",
        )
    return url


def _read_detectors(s: Section) -> DetectorsConfig:
    return DetectorsConfig(
        evaluation_window=s.duration("evaluation_window"),
        hot_factor=s.number("hot_factor", minimum=1),
        min_hot_rate=s.number("min_hot_rate", minimum=0),
        skew_min_share=s.number("skew_min_share", minimum=0, maximum=1),
        skew_min_partitions=s.integer("skew_min_partitions", minimum=2),
        acceptable_recovery_lag=s.integer("acceptable_recovery_lag", minimum=0),
        progress_stall_after=s.duration("progress_stall_after"),
        restore_stall_after=s.duration("restore_stall_after"),
        thread_history=s.duration("thread_history"),
        thread_death_grace=s.duration("thread_death_grace"),
        loop_events=s.integer("loop_events", minimum=1),
        loop_window=s.duration("loop_window"),
        loop_unstable_ratio=s.number("loop_unstable_ratio", minimum=0, maximum=1),
        metadata_size_ratio=s.number("metadata_size_ratio", minimum=0, maximum=1),
        idle_members_after=s.duration("idle_members_after"),
        assignment_size_ratio=s.number("assignment_size_ratio", minimum=0, maximum=1),
        assignment_growth_window=s.duration("assignment_growth_window"),
        assignment_growth_horizon=s.duration("assignment_growth_horizon"),
        assignment_growth_min_ratio=s.number("assignment_growth_min_ratio", minimum=0, maximum=1),
        internal_topics_per_application=_budget(s, "internal_topics_per_application"),
        internal_replicas_per_application=_budget(s, "internal_replicas_per_application"),
        partition_replicas_per_broker=_budget(s, "partition_replicas_per_broker"),
        budget_approach_ratio=s.number("budget_approach_ratio", minimum=0.01, maximum=1),
        budget_hold=s.duration("budget_hold"),
        copartition_mismatch_after=s.duration("copartition_mismatch_after"),
        tasks_per_thread_threshold=s.integer(
            "tasks_per_thread_threshold",
            minimum=2,
            rule="must be at least 2 (a stream thread with one task cannot share it)",
        ),
        tasks_per_thread_lag_window=s.duration("tasks_per_thread_lag_window"),
        tasks_per_thread_min_lag_growth=s.integer("tasks_per_thread_min_lag_growth", minimum=0),
        store_footprint_ratio=s.number("store_footprint_ratio", minimum=0, maximum=1),
        rocksdb_block_cache_bytes=s.size("rocksdb_block_cache_bytes"),
        rocksdb_write_buffer_bytes=s.size("rocksdb_write_buffer_bytes"),
        rocksdb_write_buffers=s.integer("rocksdb_write_buffers", minimum=1),
        rocksdb_bounded_memory_bytes=(
            s.size("rocksdb_bounded_memory_bytes")
            if s.has("rocksdb_bounded_memory_bytes")
            else None
        ),
        changelog_growth_window=s.duration("changelog_growth_window"),
        changelog_growth_min_ratio=s.number("changelog_growth_min_ratio", minimum=0),
        changelog_growth_min_bytes=s.size("changelog_growth_min_bytes"),
        consumer_status_window=s.duration("consumer_status_window"),
        consumer_stalled_severity=s.choice("consumer_stalled_severity", STATUS_SEVERITIES),
        consumer_stopped_severity=s.choice("consumer_stopped_severity", STATUS_SEVERITIES),
        consumer_rewound_severity=s.choice("consumer_rewound_severity", STATUS_SEVERITIES),
        consumer_lagging_severity=s.choice("consumer_lagging_severity", STATUS_SEVERITIES),
    )


def _budget(s: Section, key: str) -> int:
    """A budget: a whole number, or 0 / ``none`` for no budget (that check is off)."""
    value = s.raw.get(key)
    if isinstance(value, str):
        if value.strip().lower() in ("none", "off"):
            return 0
        raise s.fail(key, f"expected a whole number, or 0 or none for no budget, got {value!r}")
    return s.integer(key, minimum=0, rule="must be a whole number, 0 or none (no budget)")
