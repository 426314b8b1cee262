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
    assert config.exposition.lag_history == 1800.0


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
            "SCRAM-SHA-512, got 'SCRAM'",
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
            "- just\n- a list\n",
            "test.yaml:1: expected a mapping with keys agent, aggregation, clusters",
            id="not a mapping",
        ),
    ],
)
def test_bad_configs_give_one_line_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse(text)

    text_of_error = str(raised.value)
    assert message in text_of_error
    assert re.match(r"test\.yaml:\d+(:\d+)?: ", text_of_error), "file and line come first"
    assert "\n" not in text_of_error


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
    config = load_config(reference, {"KSMON_TLS_KEY_PASSWORD": "a", "KSMON_PROD_EU_PASSWORD": "b"})
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
