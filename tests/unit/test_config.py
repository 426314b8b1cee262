import dataclasses
import re
import textwrap
from pathlib import Path

import pytest

import agent.config as module
from agent.config import (
    Config,
    Secret,
    kafka_client_settings,
    load_config,
    parse_config,
)
from agent.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
MINIMAL = "clusters:\n  - name: local\n    bootstrap_servers: [127.0.0.1:9092]\n"


def parse(text: str, env: dict[str, str] | None = None) -> Config:
    return parse_config(textwrap.dedent(text), "test.yaml", env or {})


def test_a_minimal_config_gets_every_default() -> None:
    config = parse(MINIMAL, {"POD_NAME": "pod-7"})

    (cluster,) = config.clusters
    assert config.agent.id == "pod-7", "in Kubernetes the agent is named after its pod"
    assert config.agent.mode == "central"
    assert (config.http.host, config.http.port) == ("0.0.0.0", 8479)  # noqa: S104
    assert (config.logging.format, config.logging.level) == ("json", "info")
    assert cluster.client_id == "ksmon"
    assert cluster.security.protocol == "PLAINTEXT"
    assert (cluster.security.tls, cluster.security.sasl) == (None, None)
    assert [p.pattern for p in cluster.groups.allow] == [".*"]
    assert cluster.groups.deny == ()
    assert (cluster.poll.offsets_interval, cluster.poll.metadata_interval) == (10.0, 60.0)
    assert cluster.offsets_topic.read
    assert config.sink.type == "kafka"
    assert config.sink.kafka is not None
    assert (config.sink.kafka.cluster, config.sink.kafka.topic) == ("local", "ksmon.snapshots")
    assert config.sink.kafka.max_message_bytes == 8 * 1024 * 1024
    assert config.exposition.lag_granularity == "partition"


def test_durations_sizes_and_comma_separated_servers_are_understood() -> None:
    config = parse(
        """
        clusters:
          - name: a
            bootstrap_servers: "k1:9092, k2:9092"
            poll: {offsets_interval: 500ms, metadata_interval: 2m, request_timeout: 5}
        sink:
          type: spool
          spool: {directory: /tmp/s, rotate_bytes: 500KB, rotate_interval: 1h, max_bytes: 2GiB}
        """
    )
    (cluster,) = config.clusters
    assert cluster.bootstrap_servers == ("k1:9092", "k2:9092")
    assert (cluster.poll.offsets_interval, cluster.poll.metadata_interval) == (0.5, 120.0)
    assert cluster.poll.request_timeout == 5.0
    assert config.sink.spool is not None
    assert config.sink.spool.rotate_bytes == 500_000
    assert config.sink.spool.rotate_interval == 3600.0
    assert config.sink.spool.max_bytes == 2 * 1024**3


CLUSTER = "clusters:\n  - name: a\n    bootstrap_servers: [k:9092]\n"
# A SASL section missing only its password.
SEC = (
    CLUSTER
    + "    security:\n      protocol: SASL_PLAINTEXT\n      sasl:\n        mechanism: PLAIN\n"
    + "        username: u\n"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "clusters:\n  - name: a\n    bootstrap: [k:9092]\n",
            "clusters[0].bootstrap: unknown key; did you mean 'bootstrap_servers'?",
            id="unknown key with a suggestion",
        ),
        pytest.param(
            CLUSTER + "    security:\n      protocl: SSL\n",
            "clusters[0].security.protocl: unknown key; did you mean 'protocol'?",
            id="unknown key three levels deep",
        ),
        pytest.param(
            MINIMAL + "colour: blue\n",
            "colour: unknown key; (allowed: ",
            id="unknown top-level key",
        ),
        pytest.param(
            MINIMAL + "http:\n  listen: [a, b]\n",
            "http.listen: expected host:port text, got a list",
            id="wrong type",
        ),
        pytest.param(
            MINIMAL + "http:\n  listen: localhost\n",
            "http.listen: expected host:port (the port is missing), got 'localhost'",
            id="listen without a port",
        ),
        pytest.param(
            CLUSTER + "    security:\n      protocol: SASL_SSL\n      sasl:\n"
            "        mechanism: SCRAM\n        username: u\n        password: p\n",
            "clusters[0].security.sasl.mechanism: must be one of PLAIN, SCRAM-SHA-256, "
            "SCRAM-SHA-512, OAUTHBEARER, AWS_MSK_IAM, GSSAPI, got 'SCRAM'",
            id="bad choice",
        ),
        pytest.param(
            CLUSTER + "    groups:\n      allow: ['orders-(']\n",
            "clusters[0].groups.allow[0]: invalid regular expression 'orders-('",
            id="bad regex",
        ),
        pytest.param(
            CLUSTER + "    poll:\n      offsets_interval: 10 minutes\n",
            "clusters[0].poll.offsets_interval: expected a duration such as 500ms, 10s, 5m, 1h "
            "or a number of seconds, got '10 minutes'",
            id="bad duration",
        ),
        pytest.param(
            CLUSTER + "    poll:\n      offsets_interval: 0\n",
            "clusters[0].poll.offsets_interval: must be more than zero, got 0",
            id="zero interval",
        ),
        pytest.param(
            CLUSTER + "    poll:\n      offsets_interval: 1m\n      metadata_interval: 30s\n",
            "clusters[0].poll.metadata_interval: must be at least offsets_interval (1m), got 30s",
            id="metadata polled more often than offsets",
        ),
        pytest.param(
            MINIMAL + "sink:\n  kafka:\n    max_message_bytes: lots\n",
            "sink.kafka.max_message_bytes: expected a size such as 500KB, 64MiB, 1GiB or a "
            "number of bytes",
            id="bad size",
        ),
        pytest.param(
            "agent:\n  mode: central\n",
            "clusters: required key missing; list at least one cluster",
            id="no clusters",
        ),
        pytest.param("clusters: []\n", "clusters: must list at least one cluster", id="empty"),
        pytest.param(
            "clusters:\n  - name: a\n",
            "clusters[0].bootstrap_servers: required key missing; list the brokers as host:port",
            id="no servers",
        ),
        pytest.param(
            "clusters:\n  - name: a\n    bootstrap_servers: [kafka]\n",
            "clusters[0].bootstrap_servers[0]: expected host:port (the port is missing), "
            "got 'kafka'",
            id="server without port",
        ),
        pytest.param(
            "clusters:\n  - name: Prod EU\n    bootstrap_servers: [k:1]\n",
            "clusters[0].name: must be lowercase letters, digits, '_', '.' or '-', starting with a "
            "letter or digit (it becomes the kafka_cluster label), got 'Prod EU'",
            id="cluster name unfit for a label",
        ),
        pytest.param(
            CLUSTER + "  - name: a\n    bootstrap_servers: [k:9092]\n",
            "clusters[1].name: duplicate cluster name 'a' (also clusters[0].name)",
            id="duplicate cluster names",
        ),
        pytest.param(
            "clusters:\n  - name: a\n    name: b\n    bootstrap_servers: [k:1]\n",
            "test.yaml:3: clusters[0].name: duplicate key (first on line 2)",
            id="duplicate YAML key",
        ),
        pytest.param(
            "clusters: [\n",
            "test.yaml:2:1: invalid YAML: expected the node content",
            id="broken YAML names the line",
        ),
        pytest.param(
            CLUSTER + "    security:\n      sasl:\n        mechanism: PLAIN\n",
            "clusters[0].security.sasl: only used with protocol SASL_PLAINTEXT or SASL_SSL, "
            "but protocol is PLAINTEXT (the default)",
            id="SASL settings without a SASL protocol",
        ),
        pytest.param(
            CLUSTER + "    security:\n      protocol: SASL_SSL\n",
            "clusters[0].security.sasl: required with protocol SASL_SSL",
            id="SASL protocol without SASL settings",
        ),
        pytest.param(
            CLUSTER + "    security:\n      protocol: SSL\n      tls:\n        cert_file: c.pem\n",
            "clusters[0].security.tls.cert_file: needs key_file too",
            id="certificate without key",
        ),
        pytest.param(
            MINIMAL + "sink:\n  type: spool\n",
            "sink.spool.directory: required key missing when sink.type is spool",
            id="spool without directory",
        ),
        pytest.param(
            MINIMAL + "sink:\n  kafka:\n    cluster: prod\n",
            "sink.kafka.cluster: must name a configured cluster (local), got 'prod'",
            id="sink on an unknown cluster",
        ),
        pytest.param(
            MINIMAL + "sink:\n  kafka:\n    replication_factor: 0\n",
            "sink.kafka.replication_factor: must be -1 (the broker's default) or at least 1, got 0",
            id="replication factor zero",
        ),
        pytest.param(
            CLUSTER + "    security:\n      protocol: SASL_PLAINTEXT\n      sasl:\n"
            "        mechanism: PLAIN\n        username: u\n        password: {env: NOPE}\n",
            "clusters[0].security.sasl.password: environment variable NOPE is not set",
            id="secret from a missing env var",
        ),
        pytest.param(
            CLUSTER + "    security:\n      protocol: SASL_PLAINTEXT\n      sasl:\n"
            "        mechanism: PLAIN\n        username: u\n        password: {file: /no/such}\n",
            "clusters[0].security.sasl.password: cannot read secret file /no/such",
            id="secret from a missing file",
        ),
        pytest.param(
            CLUSTER + "    offsets_topic:\n      read: yes please\n",
            "clusters[0].offsets_topic.read: expected true or false, got 'yes please'",
            id="not a boolean",
        ),
        pytest.param(
            "agent:\n  mode: sidecar\n" + MINIMAL,
            "sidecar.application_id: required key missing when agent.mode is sidecar; expected "
            "the Kafka Streams application.id",
            id="sidecar mode without saying which app",
        ),
        pytest.param(
            MINIMAL + "sidecar:\n  application_id: app\n  app_metrics_url: localhost:9404\n",
            "sidecar.app_metrics_url: expected an http:// or https:// URL such as "
            "http://127.0.0.1:9404/metrics, got 'localhost:9404'",
            id="a metrics URL without a scheme",
        ),
        pytest.param(
            MINIMAL + "sidecar:\n  application_id: app\n  cluster: prod\n",
            "sidecar.cluster: must name a configured cluster (local), got 'prod'",
            id="a sidecar on an unknown cluster",
        ),
        pytest.param(
            MINIMAL + "sidecar:\n  application_id: app\n  expected_stream_threads: 0\n",
            "sidecar.expected_stream_threads: must be at least 1, got 0",
            id="no stream threads expected",
        ),
        pytest.param(
            MINIMAL + "sidecar:\n  application_id: my app\n",
            "sidecar.application_id: must be a Kafka Streams application.id",
            id="an application id Kafka Streams refuses",
        ),
        pytest.param(
            MINIMAL + "sidecar:\n  application_id: app\n  state_directory: /x\n",
            "sidecar.state_directory: unknown key; did you mean 'state_dir'?",
            id="a misspelt sidecar key, even in central mode",
        ),
        pytest.param(
            MINIMAL + "sidecar:\n  application_id: app\n  app_memory_limit: {env: LIMIT}\n",
            "sidecar.app_memory_limit.env: environment variable LIMIT is not set or empty; "
            "expected the app container's limits.memory in bytes",
            id="a memory limit from an unset variable",
        ),
        pytest.param(
            MINIMAL + "sidecar:\n  application_id: app\n  app_memory_limit: {env: A, file: /b}\n",
            "sidecar.app_memory_limit: expected a size, {env: VAR} or {file: PATH}",
            id="a memory limit from two places",
        ),
        pytest.param(
            MINIMAL + "sidecar:\n  application_id: app\n  app_memory_limit: 2Gi\n",
            "sidecar.app_memory_limit: expected a size such as 500KB, 64MiB, 1GiB",
            id="a Kubernetes quantity is not a size",
        ),
        pytest.param(
            MINIMAL + "sidecar:\n  scrape_timeout: 5s\n",
            "sidecar.application_id: required key missing in a sidecar section",
            id="a sidecar section without an application",
        ),
        pytest.param(
            "- just\n- a list\n",
            "test.yaml:1: expected a mapping with keys agent, aggregation, clusters",
            id="not a mapping",
        ),
        # --- every other rule, one case each ---------------------------------------------
        pytest.param(MINIMAL + "agent:\n  id: ''\n", "agent.id: must not be empty", id="empty id"),
        pytest.param(
            MINIMAL + "agent:\n  id: 5\n",
            "agent.id: expected text, got 5 (quote it to make it text)",
            id="number for text",
        ),
        pytest.param(
            MINIMAL + "agent:\n  mode: side\n",
            "agent.mode: must be one of central, sidecar, got 'side'",
            id="agent mode",
        ),
        pytest.param(
            MINIMAL + "logging:\n  level: verbose\n",
            "logging.level: must be one of debug, info, warning, error, got 'verbose'",
            id="log level",
        ),
        pytest.param(
            MINIMAL + "logging:\n  format: xml\n",
            "logging.format: must be one of json, text, got 'xml'",
            id="log format",
        ),
        pytest.param(
            MINIMAL + "http:\n  listen: ':70000'\n",
            "http.listen: expected host:port with a host name or address, got ':70000'",
            id="listen without host",
        ),
        pytest.param(
            MINIMAL + "http:\n  listen: '0.0.0.0:70000'\n",
            "http.listen: expected host:port with a port from 1 to 65535, got '0.0.0.0:70000'",
            id="port out of range",
        ),
        pytest.param(
            MINIMAL + "http:\n  listen: 'http://0.0.0.0:8479'\n",
            "http.listen: expected host:port without a scheme",
            id="listen with a scheme",
        ),
        pytest.param(
            MINIMAL + "http:\n  listen: '::1:8479'\n",
            "http.listen: put an IPv6 address in brackets ([::1]:9092)",
            id="IPv6 without brackets",
        ),
        pytest.param(
            # Regression: str.isdigit() took "²" and int() then failed with Python's words.
            "clusters:\n  - name: a\n    bootstrap_servers: ['k:²']\n",
            "clusters[0].bootstrap_servers[0]: expected host:port with a port from 1 to 65535",
            id="non-ASCII digits in a port",
        ),
        pytest.param(
            "clusters: {name: a}\n",
            "clusters: expected a list of clusters, got a mapping",
            id="clusters not a list",
        ),
        pytest.param(
            "clusters: [a]\n",
            "clusters[0]: expected a mapping with keys bootstrap_servers",
            id="cluster not a mapping",
        ),
        pytest.param(
            "clusters:\n  - bootstrap_servers: [k:1]\n",
            "clusters[0].name: required key missing; expected a cluster name such as prod-eu",
            id="cluster without name",
        ),
        pytest.param(
            "clusters:\n  - name: a\n    bootstrap_servers: []\n",
            "clusters[0].bootstrap_servers: must list at least one broker as host:port",
            id="no brokers",
        ),
        pytest.param(
            "clusters:\n  - name: a\n    bootstrap_servers: 'k:1,,k:2'\n",
            "clusters[0].bootstrap_servers: expected host:port, got an empty entry in 'k:1,,k:2'",
            id="empty entry in a comma list",
        ),
        pytest.param(
            CLUSTER + "    client_id: ' '\n",
            "clusters[0].client_id: must not be empty",
            id="blank client id",
        ),
        pytest.param(
            CLUSTER + "    security:\n      tls:\n        ca_file: /ca.pem\n",
            "clusters[0].security.tls: only used with protocol SSL or SASL_SSL, "
            "but protocol is PLAINTEXT (the default)",
            id="TLS settings without a TLS protocol",
        ),
        pytest.param(
            CLUSTER + "    security:\n      protocol: SSL\n      tls:\n        key_file: k.pem\n",
            "clusters[0].security.tls.key_file: needs cert_file too",
            id="key without certificate",
        ),
        pytest.param(
            CLUSTER + "    security:\n      protocol: SSL\n      tls:\n        key_password: x\n",
            "clusters[0].security.tls.key_password: only used with key_file",
            id="key password without key",
        ),
        pytest.param(
            CLUSTER + "    security:\n      protocol: SSL\n      tls:\n        ca_file: ''\n",
            "clusters[0].security.tls.ca_file: expected a file path, got ''",
            id="empty path",
        ),
        pytest.param(
            CLUSTER
            + "    security:\n      protocol: SSL\n      tls:\n        check_hostname: maybe\n",
            "clusters[0].security.tls.check_hostname: expected true or false, got 'maybe'",
            id="check_hostname not a boolean",
        ),
        pytest.param(
            CLUSTER
            + "    security:\n      protocol: SASL_SSL\n      sasl:\n        mechanism: PLAIN\n"
            "        password: p\n",
            "clusters[0].security.sasl.username: required key missing",
            id="SASL without username",
        ),
        pytest.param(
            SEC,
            "clusters[0].security.sasl.password: required key missing; "
            "expected text, {env: VAR} or {file: PATH}",
            id="SASL without password",
        ),
        pytest.param(
            SEC + "        password: {env: A, file: /b}\n",
            "clusters[0].security.sasl.password: expected exactly one of {env: VAR} or "
            "{file: PATH}",
            id="secret with both forms",
        ),
        pytest.param(
            SEC + "        password: {}\n",
            "clusters[0].security.sasl.password: expected exactly one of {env: VAR} or "
            "{file: PATH}",
            id="secret with neither form",
        ),
        pytest.param(
            SEC + "        password: 123456\n",
            "clusters[0].security.sasl.password: expected text, {env: VAR} or {file: PATH}, "
            "got a number",
            id="secret as a number, not shown",
        ),
        pytest.param(
            SEC + "        password: {env: EMPTY}\n",
            "clusters[0].security.sasl.password: environment variable EMPTY is empty",
            id="secret from an empty env var",
        ),
        pytest.param(
            CLUSTER + "    groups:\n      allow: []\n",
            "clusters[0].groups.allow: must list at least one regular expression",
            id="no allow regex",
        ),
        pytest.param(
            CLUSTER + "    groups:\n      deny: 'connect-.*'\n",
            "clusters[0].groups.deny: expected a list of regular expressions, got 'connect-.*'",
            id="regex not in a list",
        ),
        pytest.param(
            # Regression: re.compile raised OverflowError, which escaped as a traceback.
            CLUSTER + "    groups:\n      allow: ['a{4294967296}']\n",
            "clusters[0].groups.allow[0]: invalid regular expression 'a{4294967296}': "
            "the repetition number is too large",
            id="regex repetition too large",
        ),
        pytest.param(
            # Regression: thousands of nested groups made re.compile raise RecursionError.
            CLUSTER + "    groups:\n      allow: ['" + "(" * 3000 + "a" + ")" * 3000 + "']\n",
            "clusters[0].groups.allow[0]: invalid regular expression '((((",
            id="regex nested too deeply",
        ),
        pytest.param(
            CLUSTER + "    poll:\n      offsets_interval: 2m\n",
            "clusters[0].poll.offsets_interval: must be at most metadata_interval "
            "(1m, the default), got 2m",
            id="offsets polled less often than the default metadata interval",
        ),
        pytest.param(
            CLUSTER + "    poll:\n      request_timeout: -1s\n",
            "clusters[0].poll.request_timeout: expected a duration",
            id="negative duration",
        ),
        pytest.param(
            # Regression: accepted, then APScheduler's timedelta overflowed at start.
            CLUSTER + "    poll:\n      offsets_interval: 99999999999h\n"
            "      metadata_interval: 99999999999h\n",
            "clusters[0].poll.offsets_interval: must be at most 8760h (a year), got '99999999999h'",
            id="duration beyond a year",
        ),
        pytest.param(
            MINIMAL + "sink:\n  type: s3\n",
            "sink.type: must be one of kafka, spool, none, got 's3'",
            id="sink type",
        ),
        pytest.param(
            MINIMAL + "sink:\n  kafka:\n    topic: 'ksmon snapshots'\n",
            "sink.kafka.topic: must be a Kafka topic name",
            id="topic name with a space",
        ),
        pytest.param(
            MINIMAL + "sink:\n  kafka:\n    topic: '..'\n",
            "sink.kafka.topic: must be a Kafka topic name",
            id="topic name ..",
        ),
        pytest.param(
            MINIMAL + "sink:\n  kafka:\n    partitions: 0\n",
            "sink.kafka.partitions: must be at least 1, got 0",
            id="zero partitions",
        ),
        pytest.param(
            # Regression: accepted, then CreateTopics failed on every delivery attempt.
            MINIMAL + "sink:\n  kafka:\n    partitions: 99999999999\n",
            "sink.kafka.partitions: must be at most 2147483647, got 99999999999",
            id="partitions beyond int32",
        ),
        pytest.param(
            MINIMAL + "sink:\n  kafka:\n    replication_factor: 40000\n",
            "sink.kafka.replication_factor: must be at most 32767, got 40000",
            id="replication factor beyond int16",
        ),
        pytest.param(
            MINIMAL + "sink:\n  kafka:\n    replication_factor: -2\n",
            "sink.kafka.replication_factor: must be -1 (the broker's default) or at least 1, "
            "got -2",
            id="replication factor -2",
        ),
        pytest.param(
            MINIMAL + "sink:\n  kafka:\n    compression: snappy\n",
            "sink.kafka.compression: must be one of none, gzip, got 'snappy'",
            id="compression",
        ),
        pytest.param(
            MINIMAL + "sink:\n  kafka:\n    buffer_max_snapshots: 0\n",
            "sink.kafka.buffer_max_snapshots: must be at least 1, got 0",
            id="no buffer",
        ),
        pytest.param(
            MINIMAL + "sink:\n  kafka:\n    create_topic: nope\n",
            "sink.kafka.create_topic: expected true or false, got 'nope'",
            id="create_topic not a boolean",
        ),
        pytest.param(
            MINIMAL + "sink:\n  kafka:\n    max_message_bytes: 5TiB\n",
            "sink.kafka.max_message_bytes: must be at most 2147483647 bytes, got 5TiB",
            id="message size beyond int32",
        ),
        pytest.param(
            MINIMAL + "sink:\n  kafka:\n    max_message_bytes: 1.5B\n",
            "sink.kafka.max_message_bytes: must be a whole number of bytes, got '1.5B'",
            id="fractional bytes",
        ),
        pytest.param(
            MINIMAL + "sink:\n  spool:\n    directory: /s\n    rotate_bytes: 2GiB\n",
            "sink.spool.rotate_bytes: max_bytes (1GiB) must be at least rotate_bytes (2GiB)",
            id="spool file bigger than the spool",
        ),
        pytest.param(
            MINIMAL + "sink:\n  spool:\n    directory: /s\n    rotate_interval: soon\n",
            "sink.spool.rotate_interval: expected a duration",
            id="spool rotate interval",
        ),
        pytest.param(
            MINIMAL + "exposition:\n  lag_granularity: group\n",
            "exposition.lag_granularity: must be one of partition, topic, got 'group'",
            id="lag granularity",
        ),
        pytest.param(
            MINIMAL + "exposition:\n  lag_history: 30m\n",
            "exposition.lag_history: no longer a setting: lag in seconds covers any age now",
            id="lag history retired",
        ),
        pytest.param(
            MINIMAL + "1: one\n",
            "test.yaml:4: keys must be text, got 1",
            id="a number as a key",
        ),
        pytest.param(
            MINIMAL + "aggregation:\n  detectors:\n    tasks_per_thread_threshold: 1\n",
            "aggregation.detectors.tasks_per_thread_threshold: must be at least 2 (a stream "
            "thread with one task cannot share it), got 1",
            id="one task per thread",
        ),
        pytest.param(
            MINIMAL + "aggregation:\n  judged_polls_per_batch: 3\n",
            "aggregation.judged_polls_per_batch: no longer a setting: the job keeps each "
            "group's look-back in its state and judges only the polls that arrive",
            id="a retired key names why it is gone",
        ),
        pytest.param(
            MINIMAL + "aggregation:\n  buckets: 0\n",
            "aggregation.buckets: must be at least 1, got 0",
            id="no bucket to keep groups in",
        ),
        pytest.param(
            MINIMAL + "aggregation:\n  checkpoint_dir: s3a://bucket/ksmon\n",
            "aggregation.checkpoint_dir: must be a filesystem path (a volume mounted on the "
            "driver and on every executor), got a s3a:// URI: object storage is not supported "
            "(docs/deploy.md)",
            id="object storage would become a relative local directory",
        ),
        pytest.param(
            # Regression: the message had no line, only a character position.
            MINIMAL + "agent:\n  id: 'a\x00b'\n",
            "test.yaml:5:9: invalid YAML: character U+0000 is not allowed",
            id="NUL character names line and column",
        ),
    ],
)
def test_bad_configs_give_one_line_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse(text, {"EMPTY": ""})

    text_of_error = str(raised.value)
    assert message in text_of_error
    assert re.match(r"test\.yaml:\d+(:\d+)?: ", text_of_error), "file and line come first"
    assert "\n" not in text_of_error


def test_a_sidecar_config_gets_its_defaults() -> None:
    config = parse(
        "agent: {mode: sidecar}\n"
        "clusters:\n"
        "  - {name: apps, bootstrap_servers: 'k:9092'}\n"
        "  - {name: monitoring, bootstrap_servers: 'm:9092'}\n"
        "sink: {kafka: {cluster: monitoring}}\n"
        "sidecar: {application_id: orders-app}\n"
    )

    sidecar = config.sidecar
    assert sidecar is not None
    assert sidecar.application_id == "orders-app"
    assert sidecar.cluster == "apps", "the first cluster; the sink may be on another"
    assert sidecar.app_metrics_url == "http://127.0.0.1:9404/metrics"
    assert sidecar.scrape_timeout == 5.0
    assert (sidecar.state_dir, sidecar.expected_stream_threads) == (None, None)
    assert sidecar.app_memory_limit is None, "unknown: nothing is judged against it"
    described = config.describe()
    assert "sidecar of Kafka Streams application orders-app on cluster apps" in described
    assert "groups orders-app only" in described
    assert "does not read __consumer_offsets" in described
    assert "cluster monitoring: m:9092; not polled" in described


def test_a_sidecar_section_is_kept_only_in_sidecar_mode() -> None:
    text = MINIMAL + "sidecar:\n  application_id: app\n  state_dir: /state\n"

    assert parse(text).sidecar is None
    sidecar = parse("agent: {mode: sidecar}\n" + text).sidecar
    assert sidecar is not None
    assert sidecar.state_dir == Path("/state")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "test.yaml: the file is empty", id="empty file"),
        pytest.param(
            # Regression: PyYAML's composer recursed into a RecursionError.
            "clusters: " + "[" * 800,
            "test.yaml: invalid YAML: nested too deeply",
            id="YAML nested too deeply",
        ),
    ],
)
def test_whole_file_problems_name_the_file(text: str, message: str) -> None:
    # No single line is to blame: the file is named on its own.
    with pytest.raises(ConfigError) as raised:
        parse(text)

    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(MINIMAL.encode() + b"agent: {id: caf\xe9}\n")

    with pytest.raises(ConfigError, match=r"latin1\.yaml: the config file is not UTF-8 text"):
        load_config(path)


def test_a_directory_is_no_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r": cannot read the config file: Is a directory"):
        load_config(tmp_path)


def test_a_missing_file_is_named() -> None:
    with pytest.raises(
        ConfigError, match=r"nowhere\.yaml: cannot read the config file: No such file"
    ):
        load_config(Path("/nowhere.yaml"))


SASL = CLUSTER + (
    "    security:\n      protocol: SASL_SSL\n      tls:\n        cert_file: /c.pem\n"
    "        key_file: /k.pem\n        key_password: {env: KEYPW}\n"
    "      sasl:\n        mechanism: SCRAM-SHA-256\n        username: ksmon\n"
    "        password: {file: PWFILE}\n"
)


def test_secrets_never_leak_into_repr_describe_or_errors(tmp_path: Path) -> None:
    password_file = tmp_path / "pw"
    password_file.write_text("hunter2-from-file\n")
    config = parse(SASL.replace("PWFILE", str(password_file)), {"KEYPW": "key-secret-42"})

    sasl = config.clusters[0].security.sasl
    assert sasl is not None
    assert sasl.password is not None
    assert sasl.password.reveal() == "hunter2-from-file", "trailing newline stripped"
    for text in (repr(config), str(config), config.describe(), repr(sasl.password)):
        assert "hunter2" not in text
        assert "key-secret-42" not in text
    with pytest.raises(ConfigError) as raised:
        parse(
            SASL.replace("PWFILE", str(password_file)).replace("SCRAM-SHA-256", "MD5"),
            {"KEYPW": "key-secret-42"},
        )
    assert "key-secret-42" not in str(raised.value)
    assert "hunter2" not in str(raised.value)


@pytest.mark.parametrize(
    ("security", "expected"),
    [
        pytest.param("", {"security_protocol": "PLAINTEXT"}, id="plaintext"),
        pytest.param(
            "    security:\n      protocol: SSL\n      tls:\n        ca_file: /ca.pem\n"
            "        cert_file: /c.pem\n        key_file: /k.pem\n        check_hostname: false\n",
            {
                "security_protocol": "SSL",
                "ssl_cafile": "/ca.pem",
                "ssl_certfile": "/c.pem",
                "ssl_keyfile": "/k.pem",
                "ssl_check_hostname": False,
            },
            id="mutual TLS",
        ),
        pytest.param(
            "    security:\n      protocol: SASL_PLAINTEXT\n      sasl:\n        mechanism: PLAIN\n"
            "        username: u\n        password: pw\n",
            {
                "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "PLAIN",
                "sasl_plain_username": "u",
                "sasl_plain_password": "pw",
            },
            id="SASL PLAIN",
        ),
    ],
)
def test_kafka_client_settings_per_security_mode(
    security: str, expected: dict[str, object]
) -> None:
    config = parse(CLUSTER + security)

    settings = kafka_client_settings(config.clusters[0])

    assert settings["bootstrap_servers"] == ["k:9092"]
    assert settings["request_timeout_ms"] == 30_000
    assert {k: settings[k] for k in expected} == expected
    assert set(settings) == {"bootstrap_servers", "client_id", "request_timeout_ms"} | set(expected)


def test_the_shipped_example_loads() -> None:
    config = load_config(ROOT / "config.example.yaml", {"KSMON_PROD_PASSWORD": "x"})
    assert [c.name for c in config.clusters] == ["prod", "staging"]


def _field_paths(cls: type, prefix: str = "") -> list[str]:
    paths = []
    for f in dataclasses.fields(cls):
        if f.name == "source":
            continue
        path = f"{prefix}.{f.name}" if prefix else f.name
        kind = f.type if isinstance(f.type, type) else None
        nested = next(
            (t for t in _dataclasses_in(str(f.type)) if t is not None),
            kind if kind is not None and dataclasses.is_dataclass(kind) else None,
        )
        if nested is not None:
            paths += _field_paths(nested, path)
        else:
            paths.append(path)
    return paths


def _dataclasses_in(annotation: str) -> list[type | None]:
    names = re.findall(r"[A-Z][A-Za-z]+", annotation)
    found = [getattr(module, n, None) for n in names]
    return [t for t in found if isinstance(t, type) and dataclasses.is_dataclass(t)]


def test_every_option_is_documented_in_the_reference_and_the_reference_loads() -> None:
    reference = ROOT / "docs" / "reference-config.yaml"
    env = {
        "KSMON_TLS_KEY_PASSWORD": "a",
        "KSMON_PROD_EU_PASSWORD": "b",
        "KSMON_OAUTH_CLIENT_SECRET": "c",
    }
    config = load_config(reference, env)
    text = reference.read_text()
    # A host:port value is one key in the file, two fields in the dataclass.
    documented_as = {
        "http.listen.host": "listen",
        "http.listen.port": "listen",
        "aggregation.listen.host": "listen",
        "aggregation.listen.port": "listen",
    }

    paths = _field_paths(Config)
    assert "clusters.security.sasl.password" in paths, "the walk reaches nested sections"
    for path in paths:
        key = documented_as.get(path, path.rsplit(".", 1)[-1])
        assert re.search(rf"^\s*-?\s*{re.escape(key)}:", text, flags=re.MULTILINE), path
    assert config.clusters[0].security.sasl is not None
    assert isinstance(config.clusters[0].security.sasl.password, Secret)


def test_check_config_describes_the_aggregation_job_where_it_reads_and_writes() -> None:
    spool = parse(
        MINIMAL + "aggregation:\n  checkpoint_dir: /var/lib/ksmon/job\n"
        "  input: {type: spool, spool: {directory: /spool}}\n"
        "  findings: {publish: false}\n"
    ).describe()
    assert (
        "aggregation job: metrics on 0.0.0.0:8480, reads spool directory /spool every 10s, "
        "findings not published to a topic; Spark local[*], checkpoints in /var/lib/ksmon/job"
    ) in spool
    kafka = parse(MINIMAL).describe()
    assert "reads Kafka topic ksmon.snapshots on cluster" in kafka
    assert "findings to Kafka topic ksmon.findings on cluster" in kafka


def test_check_config_with_sink_none_describes_no_job_reading_a_topic_nobody_fills() -> None:
    """Issue 26 #4: the job line used to read "reads Kafka topic ksmon.snapshots"."""
    config = parse(MINIMAL + "sink:\n  type: none\n")
    described = config.describe()

    assert "snapshots: not shipped (sink type none)" in described
    assert "ksmon.snapshots" not in described
    assert (
        "aggregation job: none fed by this file's agent (sink type none ships no snapshots); "
        "set aggregation.input"
    ) in described
    assert (config.aggregation.input.kafka, config.aggregation.input.spool) == (None, None)
    written = parse(
        MINIMAL + "sink:\n  type: none\naggregation:\n  input:\n    kafka: {topic: fleet}\n"
    )
    assert "reads Kafka topic fleet on cluster" in written.describe()


def _detectors(lines: str) -> Config:
    return parse(MINIMAL + "aggregation:\n  detectors:\n" + textwrap.indent(lines, "    "))


def test_a_budget_of_zero_or_none_turns_that_check_off() -> None:
    detectors = _detectors(
        "internal_topics_per_application: none\n"
        "internal_replicas_per_application: 0\n"
        "partition_replicas_per_broker: 12000\n"
    ).aggregation.detectors
    assert detectors.internal_topics_per_application == 0
    assert detectors.internal_replicas_per_application == 0
    assert detectors.partition_replicas_per_broker == 12000
    defaults = parse(MINIMAL).aggregation.detectors
    assert (defaults.partition_replicas_per_broker, defaults.budget_approach_ratio) == (4000, 0.8)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "partition_replicas_per_broker: lots",
            "partition_replicas_per_broker: expected a whole number, or 0 or none for no budget, "
            "got 'lots'",
        ),
        (
            "internal_topics_per_application: -1",
            "internal_topics_per_application: must be a whole number, 0 or none (no budget), "
            "got -1",
        ),
        (
            "internal_replicas_per_application: 1.5",
            "internal_replicas_per_application: expected a whole number, got 1.5",
        ),
        ("budget_approach_ratio: 0", "budget_approach_ratio: must be from 0.01 to 1, got 0"),
        ("budget_hold: soon", "budget_hold:"),
    ],
)
def test_a_bad_budget_is_named_with_what_would_be_right(line: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        _detectors(line + "\n")
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("written", "env", "limit"),
    [
        ("2GiB", {}, 2 * 2**30),
        ("{env: APP_MEMORY_LIMIT}", {"APP_MEMORY_LIMIT": "1073741824"}, 2**30),  # Downward API
        ("{file: /sys/fs/cgroup/app/memory.max}", {}, Path("/sys/fs/cgroup/app/memory.max")),
    ],
)
def test_the_app_memory_limit_is_a_size_a_variable_or_a_cgroup_file(
    written: str, env: dict[str, str], limit: object
) -> None:
    config = parse(
        "agent: {mode: sidecar}\n"
        + MINIMAL
        + f"sidecar: {{application_id: a, app_memory_limit: {written}}}\n",
        env,
    )
    assert config.sidecar is not None
    assert config.sidecar.app_memory_limit == limit
