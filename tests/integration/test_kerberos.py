"""SASL/GSSAPI (Kerberos) with a keytab, against a real MIT KDC and a real broker.

The module runs its own KDC (``tests/support/kerberos.py``, realm KSMON.TEST on
127.0.0.1) and its own broker with a KERBEROS listener (SASL_PLAINTEXT, GSSAPI,
``kafka/localhost@KSMON.TEST`` from a keytab, Java's Krb5LoginModule). The agent logs
in as ``ksmon/agent@KSMON.TEST`` from the principal, keytab and krb5_conf of its
config alone: no kinit, no KRB5_* variables in its environment.
"""

import json
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.embedded.kafka import KafkaDistribution
from agent.embedded.load import produce
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from agent.embedded.topics import create_topics
from agent.errors import KsmonError
from agent.model import Snapshot
from tests.support.agent_process import metric, run_cli, running_agent, scrape
from tests.support.aggregation import active_findings, kafka_job_settings
from tests.support.environment import unavailable
from tests.support.kafka_io import commit_offsets, read_all
from tests.support.kerberos import (
    AGENT_PRINCIPAL,
    BROKER_PRINCIPAL,
    REALM,
    STALE_PRINCIPAL,
    KerberizedKafka,
    KerberosRealm,
)
from tests.support.streams import unique_name
from tests.unit.aggregation.cases import rebalance_loop

pytestmark = pytest.mark.integration

GHOST_PRINCIPAL = f"ksmon/ghost@{REALM}"  # in the KDC, but in no keytab the tests use
LOOP = rebalance_loop.CASES[0]
# The agents must log in from their config alone.
CLEAN_ENV = {"KRB5_CONFIG": "/nonexistent/krb5.conf", "KRB5CCNAME": "FILE:/nonexistent/ccache"}


@pytest.fixture(scope="module")
def realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KerberosRealm]:
    directory = tmp_path_factory.mktemp("kdc")
    kdc = KerberosRealm(directory)
    try:
        kdc.start()
        for principal in (BROKER_PRINCIPAL, AGENT_PRINCIPAL, STALE_PRINCIPAL, GHOST_PRINCIPAL):
            kdc.add_principal(principal)
    except KsmonError as e:
        kdc.stop()
        unavailable("the MIT Kerberos KDC", e)
    yield kdc
    kdc.stop()


@pytest.fixture(scope="module")
def keytabs(realm: KerberosRealm) -> dict[str, Path]:
    d = realm.directory
    stale = realm.keytab(STALE_PRINCIPAL, d / "stale.keytab")
    return {
        "broker": realm.keytab(BROKER_PRINCIPAL, d / "broker.keytab"),
        "agent": realm.keytab(AGENT_PRINCIPAL, d / "agent.keytab"),
        "stale": stale,
        # Rotates ksmon/stale's keys: the keytab above no longer matches the KDC's.
        "fresh": realm.keytab(STALE_PRINCIPAL, d / "fresh.keytab", new_keys=True),
    }


@pytest.fixture(scope="module")
def broker(
    kafka_distribution: KafkaDistribution,
    realm: KerberosRealm,
    keytabs: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[KerberizedKafka]:
    kafka = KerberizedKafka(
        kafka_distribution, tmp_path_factory.mktemp("kafka-kerberos"), realm, keytabs["broker"]
    )
    try:
        kafka.start()
    except KsmonError as e:
        unavailable("the embedded Kafka broker with a GSSAPI listener", e)
    yield kafka
    kafka.stop()


@pytest.fixture(scope="module")
def group(broker: KerberizedKafka) -> str:
    name = unique_name("kerberos-group")
    topic = f"{name}-in"
    commit_offsets(broker.bootstrap_servers, name, topic, {0: 0})
    produce(broker.bootstrap_servers, topic, [(f"k{n}", f"v{n}") for n in range(5)])
    commit_offsets(broker.bootstrap_servers, name, topic, {0: 3})
    return name


def kerberos_cluster(
    broker: KerberizedKafka, realm: KerberosRealm, principal: str, keytab: Path, group: str
) -> str:
    return textwrap.indent(
        textwrap.dedent(
            f"""\
            - name: kerberos
              bootstrap_servers: ["{broker.kerberos_bootstrap_servers}"]
              poll: {{offsets_interval: 1s, metadata_interval: 5s, request_timeout: 5s}}
              security:
                protocol: SASL_PLAINTEXT
                sasl:
                  mechanism: GSSAPI
                  kerberos:
                    principal: {principal}
                    keytab: {keytab}
                    krb5_conf: {realm.krb5_conf}
              groups: {{allow: ['{group}']}}
            """
        ),
        "  ",
    )


def test_the_agent_ships_snapshots_and_explain_works_over_gssapi(
    broker: KerberizedKafka,
    realm: KerberosRealm,
    keytabs: dict[str, Path],
    group: str,
    tmp_path: Path,
) -> None:
    port = free_port()
    sink_topic = unique_name("ksmon.snapshots.kerberos")
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        "clusters:\n"
        + kerberos_cluster(broker, realm, AGENT_PRINCIPAL, keytabs["agent"], group)
        + textwrap.dedent(
            f"""\
            agent: {{id: kerberos-agent}}
            http: {{listen: "127.0.0.1:{port}"}}
            logging: {{format: json, level: debug}}
            sink: {{type: kafka, kafka: {{topic: {sink_topic}, partitions: 1}}}}
            """
        )
    )
    with running_agent(config, port, tmp_path / "agent.log", CLEAN_ENV) as agent:

        def shipped() -> list[Snapshot]:
            records = read_all(broker.bootstrap_servers, sink_topic)
            return [Snapshot.from_json(value) for _, value in records]

        # The snapshots reach the topic through the agent's producer, over GSSAPI too.
        wait_until(
            lambda: any(s.group.group_id == group for s in shipped()),
            timeout=120,
            what="a snapshot of the group shipped over GSSAPI",
            abort=agent.exited,
            interval=1,
        )
        assert metric(port, "ksmon_kafka_up", kafka_cluster="kerberos") == 1
    assert agent.process.returncode == 0
    (snapshot, *_) = [s for s in shipped() if s.group.group_id == group]
    assert snapshot.errors == ()
    assert [(p.committed_offset, p.log_end_offset) for p in snapshot.partitions] == [(3, 5)]
    # The broker saw the agent's principal, not some default identity.
    assert f"ksmon/agent@{REALM} for kafka/localhost@{REALM}" in _kdc_events(realm)

    explained = run_cli("explain", group, "--config", str(config), "--sample", "1", env=CLEAN_ENV)
    assert explained.returncode == 0, explained.stderr
    assert group in explained.stdout


def _kdc_events(realm: KerberosRealm) -> str:
    return (realm.directory / "kdc-events.log").read_text()


def _lines(log: Path, text: str) -> list[str]:
    return [line for line in log.read_text().splitlines() if text in line]


def test_a_stale_keytab_is_one_clear_line_and_the_daemon_retries_until_it_is_replaced(
    broker: KerberizedKafka,
    realm: KerberosRealm,
    keytabs: dict[str, Path],
    group: str,
    tmp_path: Path,
) -> None:
    port = free_port()
    keytab = tmp_path / "stale-copy.keytab"
    shutil.copyfile(keytabs["stale"], keytab)
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        "clusters:\n"
        + kerberos_cluster(broker, realm, STALE_PRINCIPAL, keytab, group)
        + f'http: {{listen: "127.0.0.1:{port}"}}\nlogging: {{format: json}}\nsink: {{type: none}}\n'
    )
    log = tmp_path / "agent.log"
    refused = f"Kerberos login as {STALE_PRINCIPAL} with keytab {keytab}"
    with running_agent(config, port, log, CLEAN_ENV) as agent:
        wait_until(
            lambda: len(_lines(log, refused)) >= 2,
            timeout=60,
            what="the stale keytab refused, twice (the daemon retries)",
            abort=agent.exited,
        )
        assert metric(port, "ksmon_kafka_up", kafka_cluster="kerberos") == 0
        shutil.copyfile(keytabs["fresh"], keytab)
        wait_until(
            lambda: metric(port, "ksmon_kafka_up", kafka_cluster="kerberos") == 1,
            timeout=90,
            what="the agent polling again once the keytab holds the current keys",
            abort=agent.exited,
        )
    assert agent.process.returncode == 0, "the daemon never died"
    text = log.read_text()
    assert "Traceback" not in text
    (first, *_) = _lines(log, refused)
    message = json.loads(first)["message"]
    assert message.startswith("poll of cluster kerberos failed: authentication failed"), message
    assert "the keytab's keys are not the principal's current ones" in message
    assert "\n" not in message


def test_explain_with_a_principal_the_keytab_lacks_fails_in_one_line(
    broker: KerberizedKafka,
    realm: KerberosRealm,
    keytabs: dict[str, Path],
    group: str,
    tmp_path: Path,
) -> None:
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        "clusters:\n"
        + kerberos_cluster(broker, realm, GHOST_PRINCIPAL, keytabs["agent"], group)
        + "sink: {type: none}\n"
    )
    explained = run_cli("explain", group, "--config", str(config), "--sample", "1", env=CLEAN_ENV)
    assert explained.returncode != 0
    assert "Traceback" not in explained.stderr
    (line,) = [line for line in explained.stderr.splitlines() if line.strip()]
    assert "kerberos" in line
    assert f"Kerberos login as {GHOST_PRINCIPAL} with keytab {keytabs['agent']}" in line
    assert "the keytab holds no key of this principal" in line


def test_the_job_reads_and_publishes_over_gssapi(
    broker: KerberizedKafka, realm: KerberosRealm, keytabs: dict[str, Path], tmp_path: Path
) -> None:
    """``ksmon aggregate`` as a process: Spark's Kafka source logs in with Java's
    Krb5LoginModule from the keytab (krb5_conf as the JVM's java.security.krb5.conf),
    the findings publisher with the agent's keytab login."""
    topic, findings_topic = unique_name("snapshots-krb"), unique_name("findings-krb")
    create_topics(broker.bootstrap_servers, {topic: 1})
    produce(
        broker.bootstrap_servers,
        topic,
        [(f"{s.cluster}/{s.group.group_id}", s.to_json().decode()) for s in LOOP.snapshots],
    )
    port = free_port()
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        "clusters:\n"
        + kerberos_cluster(broker, realm, AGENT_PRINCIPAL, keytabs["agent"], "none")
        + kafka_job_settings(port, tmp_path / "checkpoint", topic, findings_topic)
    )

    def finds_the_loop() -> bool:
        try:
            return any(f["kind"] == "rebalance_loop" for f in active_findings(scrape(port)))
        except OSError:
            return False

    ticket = f"{AGENT_PRINCIPAL} for {BROKER_PRINCIPAL}"
    tickets_before = _kdc_events(realm).count(ticket)
    with running_agent(config, port, tmp_path / "job.log", CLEAN_ENV, command="aggregate") as job:
        wait_until(
            finds_the_loop,
            timeout=600,
            what="the rebalance_loop finding on the job's /metrics",
            abort=job.exited,
            interval=2,
        )
        assert job.stop() == 0
    assert read_all(broker.bootstrap_servers, findings_topic), "published over GSSAPI"
    # Both of the job's clients (Spark's Java source, the Python publisher) logged in as
    # the agent's principal.
    assert _kdc_events(realm).count(ticket) >= tickets_before + 2
