"""``ksmon agent`` stops within seconds on SIGTERM while a broker is down, and says
what it could not ship (issue 26 #4: it took 20-25 s, waiting on the dead broker)."""

import json
import signal
import textwrap
import time
from pathlib import Path

import pytest

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from agent.embedded.topics import create_topics
from tests.support.agent_process import metric, running_agent
from tests.support.kafka_io import commit_group_offset
from tests.support.streams import unique_name

pytestmark = pytest.mark.integration

STOP_WITHIN_SECONDS = 5.0


def commit_offset(kafka: EmbeddedKafka, group: str, topic: str, offset: int) -> None:
    from kafka.admin import KafkaAdminClient  # noqa: PLC0415 - slow import

    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        commit_group_offset(admin, group, topic, offset)
    finally:
        admin.close()


def test_sigterm_with_the_broker_down_exits_in_seconds_saying_what_was_not_shipped(
    kafka: EmbeddedKafka, tmp_path: Path
) -> None:
    """Two clusters: ``live`` (the session broker) is polled and its snapshots buffer for a
    sink on ``down``, whose broker does not answer; ``down`` is polled too, from the
    start, so its first poll is still in its bootstrap (30 s request timeout) when
    the signal comes."""
    group = unique_name("shutdown")
    create_topics(kafka.bootstrap_servers, {group: 1})
    commit_offset(kafka, group, group, 0)  # something for the live cluster's snapshots
    port = free_port()
    dead = f"127.0.0.1:{free_port()}"
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            agent: {{id: shutdown-test}}
            http: {{listen: "127.0.0.1:{port}"}}
            logging: {{format: json, level: info}}
            clusters:
              - name: live
                bootstrap_servers: ["{kafka.bootstrap_servers}"]
                poll: {{offsets_interval: 1s}}
                offsets_topic: {{read: false}}
              - name: down
                bootstrap_servers: ["{dead}"]
                poll: {{offsets_interval: 1s, request_timeout: 30s}}
            sink:
              type: kafka
              kafka: {{cluster: down}}
            """
        )
    )
    log = tmp_path / "agent.log"
    with running_agent(config, port, log) as agent:
        wait_until(
            lambda: (metric(port, "ksmon_snapshot_buffer_records", sink="kafka") or 0) > 0,
            timeout=60,
            what="snapshots of the live cluster waiting for the dead sink",
            abort=agent.exited,
        )
        buffered = metric(port, "ksmon_snapshot_buffer_records", sink="kafka")
        started = time.monotonic()
        agent.process.send_signal(signal.SIGTERM)
        code = agent.process.wait(timeout=60)
        took = time.monotonic() - started

    text = log.read_text()
    assert code == 0, text[-2000:]
    assert took < STOP_WITHIN_SECONDS, f"took {took:.1f} s to stop"
    assert "Traceback" not in text
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    (unshipped,) = [line for line in lines if "not shipped" in line["message"]]
    assert unshipped["level"] == "warning"
    assert buffered is not None
    assert buffered > 0
    assert "snapshots not shipped" in unshipped["message"]
    assert "ksmon.snapshots" in unshipped["message"]
