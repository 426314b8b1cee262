"""SASL_SSL with SCRAM-SHA-512 on the real broker: it works, it fails clearly, it leaks nothing,
and the agent needs no more than the ACLs ``docs/security.md`` lists.

The session broker's SASL_SSL listener has a certificate for 127.0.0.1 only,
signed by a CA made for the session (``tests/support/tls.py``); an ACL
authorizer restricts every SCRAM principal but the super user.
"""

import json
import textwrap
from pathlib import Path

import pytest

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import produce
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from agent.model import Snapshot
from tests.support.agent_process import metric, run_cli, running_agent, scrape
from tests.support.kafka_io import commit_offsets, read_all
from tests.support.secure import (
    AGENT_PASSWORD,
    AGENT_USER,
    NO_READ_PASSWORD,
    NO_READ_USER,
    SUPER_PASSWORD,
    SecureListener,
)
from tests.support.streams import unique_name

pytestmark = pytest.mark.integration

PASSWORD_ENV = "KSMON_TEST_PASSWORD"  # noqa: S105 - the variable's name


@pytest.fixture(scope="module")
def group(kafka: EmbeddedKafka) -> str:
    """A consumer group with committed offsets behind some records: something to poll."""
    name = unique_name("secure-group")
    topic = f"{name}-in"
    commit_offsets(kafka.bootstrap_servers, name, topic, {0: 0, 1: 0})
    produce(kafka.bootstrap_servers, topic, [(f"k{n}", f"v{n}") for n in range(10)])
    commit_offsets(kafka.bootstrap_servers, name, topic, {0: 2, 1: 1})
    return name


def write_config(tmp_path: Path, clusters: str, rest: str = "") -> Path:
    config = tmp_path / "ksmon.yaml"
    config.write_text("clusters:\n" + clusters + textwrap.dedent(rest))
    return config


@pytest.fixture(scope="module")
def plaintext_view(kafka: EmbeddedKafka, group: str) -> Snapshot:
    """What an unrestricted PLAINTEXT client sees of the group: the reference."""
    result = run_cli("snapshot", "--bootstrap", kafka.bootstrap_servers, "--group", group, "--json")
    assert result.returncode == 0, result.stderr
    return Snapshot.from_json(result.stdout)


def offsets_of(snapshot: Snapshot) -> list[tuple[str, int, int | None, int | None]]:
    return sorted(
        (p.topic, p.partition, p.committed_offset, p.log_end_offset) for p in snapshot.partitions
    )


def test_the_agent_polls_over_sasl_ssl_with_scram_and_the_ca(
    secure_listener: SecureListener, tmp_path: Path, group: str, plaintext_view: Snapshot
) -> None:
    config = write_config(tmp_path, secure_listener.cluster_yaml("secure"))

    result = run_cli(
        "snapshot",
        "--config",
        str(config),
        "--group",
        group,
        "--json",
        env={PASSWORD_ENV: SUPER_PASSWORD},
    )

    assert result.returncode == 0, result.stderr
    snapshot = Snapshot.from_json(result.stdout)
    assert snapshot.errors == ()
    assert offsets_of(snapshot) == offsets_of(plaintext_view)
    assert SUPER_PASSWORD not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("cluster", "password", "expected"),
    [
        pytest.param(
            {},
            "not-the-password-7f3a",
            # The broker's own answer (agent/kafka_python_fixes keeps kafka-python
            # from dropping it when it arrives together with the close).
            "authentication failed (SaslAuthenticationFailedError: ",
            id="wrong password",
        ),
        pytest.param(
            {"ca_file": "other"},
            SUPER_PASSWORD,
            "TLS handshake failed: the broker's certificate is not trusted (",
            id="certificate of an untrusted CA",
        ),
        pytest.param(
            # The certificate names 127.0.0.1 only; "localhost" is the same broker.
            {"host": "localhost"},
            SUPER_PASSWORD,
            "TLS handshake failed: the broker's certificate does not name the host connected to",
            id="host name mismatch",
        ),
    ],
)
def test_a_refused_login_or_certificate_is_one_clear_line(
    secure_listener: SecureListener,
    tmp_path: Path,
    cluster: dict[str, str],
    password: str,
    expected: str,
) -> None:
    ca_file = secure_listener.other_ca_file if cluster.get("ca_file") else None
    host = cluster.get("host", "127.0.0.1")
    config = write_config(
        tmp_path, secure_listener.cluster_yaml("secure", ca_file=ca_file, host=host)
    )
    env = {PASSWORD_ENV: password}

    quiet = run_cli("snapshot", "--config", str(config), "--group", "g", env=env)
    # -v prints kafka-python's DEBUG lines, which include the client configuration.
    verbose = run_cli("-v", "snapshot", "--config", str(config), "--group", "g", env=env)

    assert quiet.returncode == verbose.returncode == 1
    (line,) = quiet.stderr.strip().splitlines()
    assert line.startswith(f"ksmon: error: cannot poll cluster secure ({host}:")
    assert expected in line
    (verbose_line,) = [x for x in verbose.stderr.splitlines() if x.startswith("ksmon: error:")]
    assert expected in verbose_line, "verbose or not, one error line saying the same"
    for output in (quiet.stdout, quiet.stderr, verbose.stdout, verbose.stderr):
        assert password not in output
        assert "Traceback" not in output
    assert "***" in verbose.stderr, "the client configuration was logged, with the password blanked"


def test_host_names_are_not_checked_when_check_hostname_is_off(
    secure_listener: SecureListener, tmp_path: Path, group: str
) -> None:
    config = write_config(
        tmp_path, secure_listener.cluster_yaml("secure", host="localhost", check_hostname=False)
    )

    result = run_cli(
        "snapshot", "--config", str(config), "--group", group, env={PASSWORD_ENV: SUPER_PASSWORD}
    )

    assert result.returncode == 0, result.stderr


# --- least privilege -----------------------------------------------------------------------------

# The ACLs the agent needs, as docs/security.md lists them: (operation, resource type,
# resource name). READ on __consumer_offsets is optional; "{topic}" is the snapshot topic.
AGENT_ACLS = [
    ("DESCRIBE", "CLUSTER", "kafka-cluster"),  # ListGroups, DescribeLogDirs
    ("DESCRIBE_CONFIGS", "CLUSTER", "kafka-cluster"),  # the broker's message.max.bytes
    ("DESCRIBE", "GROUP", "*"),  # FindCoordinator, DescribeGroups, OffsetFetch
    ("DESCRIBE", "TOPIC", "*"),  # Metadata, ListOffsets, OffsetFetch's topics
    ("DESCRIBE_CONFIGS", "TOPIC", "*"),  # cleanup.policy, retention.ms, max.message.bytes
    ("WRITE", "TOPIC", "{topic}"),  # snapshots (idempotent producer included)
    ("CREATE", "TOPIC", "{topic}"),  # create the snapshot topic when missing
]
OPTIONAL_READ = ("READ", "TOPIC", "__consumer_offsets")  # exact rebalance times


def grant(bootstrap_servers: str, principal: str, acls: list[tuple[str, str, str]]) -> None:
    from kafka.admin import (  # noqa: PLC0415 - slow import
        ACL,
        ACLOperation,
        ACLPermissionType,
        KafkaAdminClient,
        ResourcePattern,
        ResourceType,
    )

    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers)
    try:
        result = admin.create_acls(
            [
                ACL(
                    principal=f"User:{principal}",
                    host="*",
                    operation=ACLOperation[operation],
                    permission_type=ACLPermissionType.ALLOW,
                    resource_pattern=ResourcePattern(ResourceType[kind], name),
                )
                for operation, kind, name in acls
            ]
        )
        assert not result["failed"], result["failed"]
    finally:
        admin.close()


@pytest.fixture
def sink_topic() -> str:
    return unique_name("ksmon.snapshots.secure")


@pytest.fixture
def restricted_principals(kafka: EmbeddedKafka, sink_topic: str) -> None:
    """The listed ACLs for both principals; READ on __consumer_offsets for one only.

    ACLs persist on the session broker; they name only these principals (which
    no other test uses) and this test's own topic.
    """
    listed = [(op, kind, name.format(topic=sink_topic)) for op, kind, name in AGENT_ACLS]
    grant(kafka.bootstrap_servers, AGENT_USER, [*listed, OPTIONAL_READ])
    grant(kafka.bootstrap_servers, NO_READ_USER, listed)


@pytest.mark.usefixtures("restricted_principals")
def test_the_daemon_works_with_exactly_the_listed_acls_and_leaks_no_secret(
    kafka: EmbeddedKafka,
    secure_listener: SecureListener,
    tmp_path: Path,
    group: str,
    plaintext_view: Snapshot,
    sink_topic: str,
) -> None:
    port = free_port()
    allow = f"groups: {{allow: ['{group}']}}\n"
    clusters = secure_listener.cluster_yaml(
        "granted",
        user=AGENT_USER,
        env_var="PW_GRANTED",
        extra=allow,
    ) + secure_listener.cluster_yaml(
        "no-read",
        user=NO_READ_USER,
        env_var="PW_NO_READ",
        extra=allow,
    )
    config = write_config(
        tmp_path,
        clusters,
        f"""\
        agent: {{id: secure-agent}}
        http: {{listen: "127.0.0.1:{port}"}}
        logging: {{format: json, level: debug}}
        sink: {{type: kafka, kafka: {{cluster: granted, topic: {sink_topic}, partitions: 2}}}}
        """,
    )
    env = {"PW_GRANTED": AGENT_PASSWORD, "PW_NO_READ": NO_READ_PASSWORD}
    with running_agent(config, port, tmp_path / "agent.log", env) as agent:

        def shipped() -> list[Snapshot]:
            return [Snapshot.from_json(v) for _, v in read_all(kafka.bootstrap_servers, sink_topic)]

        wait_until(
            lambda: (
                {s.cluster for s in shipped() if s.group.group_id == group}
                == {"granted", "no-read"}
            ),
            timeout=120,
            what="snapshots of the group from both principals in the snapshot topic",
            abort=agent.exited,
            interval=1,
        )
        wait_until(
            lambda: metric(port, "ksmon_offsets_topic_reader_up", kafka_cluster="granted") == 1,
            timeout=60,
            what="the __consumer_offsets reader of the principal allowed to read it",
            abort=agent.exited,
        )
        metrics_text = scrape(port)
        assert metric(port, "ksmon_kafka_up", kafka_cluster="granted") == 1
        assert metric(port, "ksmon_kafka_up", kafka_cluster="no-read") == 1
        # Without READ on __consumer_offsets the agent degrades, it does not fail.
        assert metric(port, "ksmon_offsets_topic_reader_up", kafka_cluster="no-read") == 0
        assert metric(port, "ksmon_snapshot_sink_errors_total", sink="kafka") == 0
        assert "ksmon_poll_errors_total{" not in metrics_text, "every request was authorized"
    assert agent.process.returncode == 0

    snapshots = [s for s in shipped() if s.group.group_id == group]
    for snapshot in snapshots:
        assert snapshot.errors == (), snapshot.errors
        assert offsets_of(snapshot) == offsets_of(plaintext_view)

    log = agent.log.read_text()
    records = b"".join(v for _, v in read_all(kafka.bootstrap_servers, sink_topic))
    for secret in (AGENT_PASSWORD, NO_READ_PASSWORD):
        assert secret not in log
        assert secret not in metrics_text
        assert secret.encode() not in records
    # The DEBUG log did print the clients' configuration: redacted, not absent.
    config_lines = [
        json.loads(line)["message"]
        for line in log.splitlines()
        if line.startswith("{") and "with configuration" in line
    ]
    assert config_lines
    assert all("'sasl_plain_password': '***'" in line for line in config_lines)
    assert "no READ permission on __consumer_offsets" in log
    # kafka-python logs its own socket teardown at close (a cancelled metadata refresh, now
    # and then an SSL read racing the close, with tracebacks); at the default level those
    # loggers are silenced. Nothing of ksmon's own is an error or carries a traceback.
    entries = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    ours = [e for e in entries if not e["logger"].startswith("kafka")]
    assert ours
    assert not [e for e in ours if e["level"] != "debug" and "exception" in e]
    assert not [e for e in ours if e["level"] in ("error", "critical")]
