"""``ksmon agent`` as a real process against the real broker: it polls, ships
snapshots and serves /metrics; it survives a broker outage and recovers by
itself; and a wrong password is one clear line, not a traceback."""

import json
import signal
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from agent.embedded.topics import create_topics
from agent.model import Snapshot
from agent.transport.spool import read_spool
from tests.conftest import SASL_PASSWORD, SASL_USER
from tests.support.agent_process import RunningAgent, metric_values, run_cli, running_agent
from tests.support.kafka_io import commit_group_offset
from tests.support.streams import unique_name

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def kafka_up(port: int) -> float | None:
    try:
        return metric_values(port)["ksmon_kafka_up"][(("kafka_cluster", "local"),)]
    except (OSError, KeyError):
        return None


def spooled(tmp_path: Path) -> list[Snapshot]:
    return [Snapshot.from_json(line) for line in read_spool(tmp_path / "spool")]


def write_config(tmp_path: Path, servers: str, port: int, extra: str = "") -> Path:
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            agent: {{id: test-agent}}
            http: {{listen: "127.0.0.1:{port}"}}
            logging: {{format: json, level: info}}
            clusters:
              - name: local
                bootstrap_servers: ["{servers}"]
                poll: {{offsets_interval: 1s, metadata_interval: 5s, request_timeout: 5s}}
            {extra}
            sink:
              type: spool
              spool: {{directory: {tmp_path / "spool"}, rotate_interval: 1s}}
            """
        )
    )
    return config


@pytest.fixture
def agent_process(kafka: EmbeddedKafka, tmp_path: Path) -> Iterator[RunningAgent]:
    port = free_port()
    config = write_config(tmp_path, kafka.bootstrap_servers, port)
    with running_agent(config, port, tmp_path / "agent.log") as agent:
        wait_until(
            lambda: kafka_up(port) == 1.0,
            timeout=60,
            what="the agent's first successful poll",
            abort=agent.exited,
        )
        yield agent


def test_the_daemon_ships_snapshots_and_stops_cleanly_on_sigterm(
    kafka: EmbeddedKafka, agent_process: RunningAgent, tmp_path: Path
) -> None:
    group = unique_name("daemon-group")
    topic = f"{group}-in"
    create_topics(kafka.bootstrap_servers, {topic: 2})
    # A group with a committed offset, so the agent has something to ship. Committed
    # without a member: a consumer joining the session's first group on a fresh broker
    # once stopped heartbeating after its second generation and never saw its assignment
    # (kafka-python 3.0.12, seen in CI), which is not what this test is about.
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        commit_group_offset(admin, group, topic, 0)
    finally:
        admin.close()
    wait_until(
        lambda: any(s.group.group_id == group for s in spooled(tmp_path)),
        timeout=60,
        what="a spooled snapshot of the group",
    )
    values = metric_values(agent_process.port)
    assert values["ksmon_snapshots_sent_total"][(("sink", "spool"),)] > 0
    assert (("kafka_cluster", "local"), ("result", "ok")) in values["ksmon_polls_total"]

    agent_process.process.send_signal(signal.SIGTERM)
    assert agent_process.process.wait(timeout=30) == 0
    assert "Traceback" not in agent_process.log.read_text()


def test_a_broker_down_for_30s_leaves_the_agent_up_and_it_recovers_by_itself(
    kafka: EmbeddedKafka, agent_process: RunningAgent
) -> None:
    port = agent_process.port
    kafka.stop()
    try:
        wait_until(lambda: kafka_up(port) == 0.0, timeout=60, what="ksmon_kafka_up to drop to 0")
        down_since = time.monotonic()
        # The outage the issue names lasts 30 s; meanwhile the agent must keep
        # answering scrapes quickly (a scrape never waits on Kafka).
        while time.monotonic() - down_since < 30:
            started = time.monotonic()
            values = metric_values(port)
            assert time.monotonic() - started < 2.0, "a scrape waited on the dead broker"
            assert values["ksmon_kafka_up"][(("kafka_cluster", "local"),)] == 0.0
            assert agent_process.process.poll() is None, "the agent died with the broker"
            time.sleep(2)
        failed = values["ksmon_polls_total"][(("kafka_cluster", "local"), ("result", "failed"))]
        assert failed >= 2, "the agent kept trying"
    finally:
        kafka.start()
    wait_until(lambda: kafka_up(port) == 1.0, timeout=90, what="the agent to recover by itself")
    assert agent_process.process.poll() is None
    log = agent_process.log.read_text()
    assert "Traceback" not in log
    # The outage is in the daemon's JSON log, once per failed poll, as a warning.
    warnings = [
        json.loads(line)
        for line in log.splitlines()
        if line.startswith("{") and "poll of cluster local failed" in line
    ]
    assert warnings, log[-2000:]
    assert {w["level"] for w in warnings} == {"warning"}
    # ... and only there: no flood of client-library reconnect errors (~35 polls failed).
    assert len(log.splitlines()) < 4 * len(warnings) + 20, "the outage flooded the log"


SASL_CLUSTER = """\
clusters:
  - name: local
    bootstrap_servers: ["{servers}"]
    poll: {{request_timeout: 5s}}
    security:
      protocol: SASL_PLAINTEXT
      sasl: {{mechanism: PLAIN, username: {user}, password: {{env: TEST_KSMON_PASSWORD}}}}
"""


def test_sasl_with_the_right_password_polls_and_a_wrong_one_is_one_clear_line(
    kafka: EmbeddedKafka, tmp_path: Path
) -> None:
    assert kafka.sasl_bootstrap_servers is not None
    config = tmp_path / "sasl.yaml"
    config.write_text(SASL_CLUSTER.format(servers=kafka.sasl_bootstrap_servers, user=SASL_USER))
    group = unique_name("sasl-group")

    right = run_cli(
        "snapshot",
        "--config",
        str(config),
        "--group",
        group,
        env={"TEST_KSMON_PASSWORD": SASL_PASSWORD},
    )
    # The login worked: the only complaint is that no such group exists.
    assert right.returncode == 1
    assert f"group {group!r} not found" in right.stderr

    wrong_password = "not-the-password-7f3a"  # noqa: S105
    wrong = run_cli(
        "snapshot",
        "--config",
        str(config),
        "--group",
        group,
        env={"TEST_KSMON_PASSWORD": wrong_password},
    )
    assert wrong.returncode == 1
    lines = wrong.stderr.strip().splitlines()
    assert len(lines) == 1, wrong.stderr
    assert lines[0].startswith("ksmon: error: cannot poll cluster local")
    # The broker's own answer, not a bare "socket disconnected": kafka-python drops
    # it when it arrives with the close, unless agent/kafka_python_fixes is applied.
    assert "authentication failed (SaslAuthenticationFailedError: " in lines[0]
    assert lines[0].endswith("check the SASL mechanism and its credentials")
    assert wrong_password not in wrong.stderr + wrong.stdout
