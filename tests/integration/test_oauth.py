"""SASL/OAUTHBEARER with OIDC client credentials, on the real broker.

The session broker's OAUTH listener (SASL_PLAINTEXT) validates tokens with Kafka's own
broker-side OIDC validator (``OAuthBearerValidatorCallbackHandler``) against the JWKS
of ``tests/support/oidc.py``'s provider on 127.0.0.1, which issues RS256 JWTs for the
client credentials grant. The token's ``sub`` is the broker's super user.
"""

import json
import textwrap
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import produce
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from agent.embedded.topics import create_topics
from agent.model import Snapshot
from tests.support.agent_process import metric, run_cli, running_agent, scrape
from tests.support.aggregation import active_findings, kafka_job_settings
from tests.support.kafka_io import commit_offsets, read_all
from tests.support.oidc import OAUTH_CLIENT, OidcProvider
from tests.support.streams import unique_name
from tests.unit.aggregation.cases import rebalance_loop

pytestmark = pytest.mark.integration

SECRET_ENV = "KSMON_TEST_OAUTH_SECRET"  # noqa: S105 - the variable's name
ENV = {SECRET_ENV: OAUTH_CLIENT.client_secret}
LOOP = rebalance_loop.CASES[0]


def oauth_cluster(kafka: EmbeddedKafka, oidc: OidcProvider, name: str = "oauth") -> str:
    assert kafka.oauth_bootstrap_servers is not None
    return textwrap.indent(
        textwrap.dedent(
            f"""\
            - name: {name}
              bootstrap_servers: ["{kafka.oauth_bootstrap_servers}"]
              poll: {{offsets_interval: 1s, metadata_interval: 5s, request_timeout: 5s}}
              security:
                protocol: SASL_PLAINTEXT
                sasl:
                  mechanism: OAUTHBEARER
                  oauth:
                    token_endpoint_url: {oidc.token_url}
                    client_id: {OAUTH_CLIENT.client_id}
                    client_secret: {{env: {SECRET_ENV}}}
                    scope: kafka
            """
        ),
        "  ",
    )


@pytest.fixture
def provider(oidc: OidcProvider) -> Iterator[OidcProvider]:
    """The session provider, handing out good tokens again after the test."""
    oidc.issue("good", lifetime=3600)
    yield oidc
    oidc.issue("good", lifetime=3600)


@pytest.fixture(scope="module")
def group(kafka: EmbeddedKafka) -> str:
    name = unique_name("oauth-group")
    topic = f"{name}-in"
    commit_offsets(kafka.bootstrap_servers, name, topic, {0: 0})
    produce(kafka.bootstrap_servers, topic, [(f"k{n}", f"v{n}") for n in range(5)])
    commit_offsets(kafka.bootstrap_servers, name, topic, {0: 3})
    return name


def test_the_agent_ships_snapshots_and_explain_works_over_oauthbearer(
    kafka: EmbeddedKafka, provider: OidcProvider, tmp_path: Path, group: str
) -> None:
    port = free_port()
    sink_topic = unique_name("ksmon.snapshots.oauth")
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        "clusters:\n"
        + oauth_cluster(kafka, provider)
        + f"    groups: {{allow: ['{group}']}}\n"
        + textwrap.dedent(
            f"""\
            agent: {{id: oauth-agent}}
            http: {{listen: "127.0.0.1:{port}"}}
            logging: {{format: json, level: debug}}
            sink: {{type: kafka, kafka: {{topic: {sink_topic}, partitions: 1}}}}
            """
        )
    )
    requests_before = provider.token_requests
    with running_agent(config, port, tmp_path / "agent.log", ENV) as agent:

        def shipped() -> list[Snapshot]:
            return [Snapshot.from_json(v) for _, v in read_all(kafka.bootstrap_servers, sink_topic)]

        wait_until(
            lambda: any(s.group.group_id == group for s in shipped()),
            timeout=120,
            what="a snapshot of the group shipped over OAUTHBEARER",
            abort=agent.exited,
            interval=1,
        )
        assert metric(port, "ksmon_kafka_up", kafka_cluster="oauth") == 1
    assert agent.process.returncode == 0
    (snapshot, *_) = [s for s in shipped() if s.group.group_id == group]
    assert snapshot.errors == ()
    assert [(p.committed_offset, p.log_end_offset) for p in snapshot.partitions] == [(3, 5)]
    # One provider per cluster: the admin client, the offsets reader and the producer
    # share its token.
    assert provider.token_requests - requests_before == 1
    log = agent.log.read_text()
    assert OAUTH_CLIENT.client_secret not in log

    explained = run_cli("explain", group, "--config", str(config), "--sample", "1", env=ENV)
    assert explained.returncode == 0, explained.stderr
    assert group in explained.stdout
    assert OAUTH_CLIENT.client_secret not in explained.stdout + explained.stderr


def _lines(log: Path, text: str) -> list[str]:
    return [line for line in log.read_text().splitlines() if text in line]


def test_refused_tokens_and_a_down_endpoint_are_clear_and_the_daemon_recovers(
    kafka: EmbeddedKafka, provider: OidcProvider, tmp_path: Path, group: str
) -> None:
    port = free_port()
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        "clusters:\n"
        + oauth_cluster(kafka, provider)
        + f"    groups: {{allow: ['{group}']}}\n"
        + f'http: {{listen: "127.0.0.1:{port}"}}\nlogging: {{format: json}}\nsink: {{type: none}}\n'
    )
    log = tmp_path / "agent.log"
    # Short lifetimes: each switch reaches the agent at its next refresh.
    provider.issue("expired", lifetime=2)
    with running_agent(config, port, log, ENV) as agent:
        refused = "authentication failed (SaslAuthenticationFailedError"
        wait_until(
            lambda: len(_lines(log, refused)) >= 2,
            timeout=60,
            what="the broker refusing the expired token, twice",
            abort=agent.exited,
        )
        assert metric(port, "ksmon_kafka_up", kafka_cluster="oauth") == 0
        seen = len(_lines(log, refused))
        provider.issue("wrong_audience", lifetime=2)
        wait_until(
            lambda: len(_lines(log, refused)) > seen + 1,
            timeout=60,
            what="the broker refusing tokens for another audience",
            abort=agent.exited,
        )
        provider.issue("down", lifetime=2)
        down = f"OAuth token endpoint {provider.token_url} answered HTTP 503"
        wait_until(
            lambda: bool(_lines(log, down)),
            timeout=60,
            what="one line naming the token endpoint and its status",
            abort=agent.exited,
        )
        provider.issue("good", lifetime=3600)
        wait_until(
            lambda: metric(port, "ksmon_kafka_up", kafka_cluster="oauth") == 1,
            timeout=90,
            what="the agent polling again once the endpoint issues good tokens",
            abort=agent.exited,
        )
    assert agent.process.returncode == 0, "the daemon never died"
    text = log.read_text()
    assert "Traceback" not in text
    assert OAUTH_CLIENT.client_secret not in text
    for line in _lines(log, down):
        assert "\\n" not in json.loads(line)["message"]


def _finds(port: int, kind: str) -> bool:
    try:
        return any(f["kind"] == kind for f in active_findings(scrape(port)))
    except OSError:
        return False


def test_the_job_reads_and_publishes_over_oauthbearer(
    kafka: EmbeddedKafka, provider: OidcProvider, tmp_path: Path
) -> None:
    """``ksmon aggregate`` as a process: Spark's Kafka source logs in with Kafka's own
    OAuthBearerLoginCallbackHandler (the token URL allowed by the job's JVM options),
    the findings publisher with the agent's token provider."""
    topic, findings_topic = unique_name("snapshots-oauth"), unique_name("findings-oauth")
    create_topics(kafka.bootstrap_servers, {topic: 1})
    produce(
        kafka.bootstrap_servers,
        topic,
        [(f"{s.cluster}/{s.group.group_id}", s.to_json().decode()) for s in LOOP.snapshots],
    )
    port = free_port()
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        "clusters:\n"
        + oauth_cluster(kafka, provider)
        + kafka_job_settings(port, tmp_path / "checkpoint", topic, findings_topic)
    )
    log = tmp_path / "job.log"
    with running_agent(config, port, log, ENV, command="aggregate") as job:
        wait_until(
            partial(_finds, port, "rebalance_loop"),
            timeout=600,
            what="the rebalance_loop finding on the job's /metrics",
            abort=job.exited,
            interval=2,
        )
        findings = run_cli("findings", "--config", str(config), "--json", env=ENV)
        assert job.stop() == 0

    assert findings.returncode == 0, findings.stderr
    assert [(f["kind"], f["group"]) for f in json.loads(findings.stdout)] == [
        ("rebalance_loop", "loop-poll-timeouts")
    ]
    assert read_all(kafka.bootstrap_servers, findings_topic), "published over OAUTHBEARER"
    assert OAUTH_CLIENT.client_secret not in log.read_text()
