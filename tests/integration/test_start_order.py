"""Started in any order, ksmon says what happens: the job before its snapshot topic
waits with one line and starts when the topic appears (and a topic deleted under it is
one line, then the same wait); the agent before its broker warns, and says so again
when each part works. No Java stack trace, no traceback."""

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient

from agent.aggregation.spark.input_wait import InputStatus, topic_probe
from agent.config import kafka_client_settings
from agent.embedded.kafka import EmbeddedKafka, KafkaDistribution
from agent.embedded.load import produce
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from agent.embedded.topics import create_topics
from agent.errors import KsmonError
from tests.support.agent_process import ROOT, metric, metric_values, running_agent
from tests.support.aggregation import job_config
from tests.support.environment import unavailable
from tests.support.kafka_io import commit_group_offset
from tests.support.streams import unique_name
from tests.unit.aggregation.cases import rebalance_loop

pytestmark = pytest.mark.integration

LOOP = rebalance_loop.CASES[0]  # a rebalance loop from poll timeouts
# What a Java stack trace or a Python traceback leaves in a log.
TRACE_MARKS = ("Traceback", "Exception in thread", "\tat ", "Caused by:")


def messages(log: Path) -> list[dict[str, str]]:
    """The JSON log lines of a ksmon process (Spark's own lines are not JSON)."""
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


def traces(text: str) -> list[str]:
    return [line for line in text.splitlines() if any(mark in line for mark in TRACE_MARKS)]


def streaks(lines: list[str], failed: str, works: str) -> bool:
    """Whether each line saying ``works`` follows one or more saying ``failed``: the part
    failed and recovered, and said so once per recovery (never once per success)."""
    marks = "".join("F" if failed in m else "W" for m in lines if failed in m or works in m)
    return re.fullmatch(r"(F+W)+F*", marks) is not None


def finding_active(port: int, group: str, kind: str) -> bool:
    try:
        active = metric_values(port).get("ksmon_finding_active", {})
    except OSError:
        return False
    return any(
        dict(labels).get("group") == group and dict(labels).get("kind") == kind and value == 1
        for labels, value in active.items()
    )


def test_the_topic_probe_tells_missing_from_there_from_a_cluster_away(
    kafka: EmbeddedKafka, tmp_path: Path
) -> None:
    topic = unique_name("snapshots-probe")
    config = job_config(kafka, tmp_path, findings_topic="unused", snapshot_topic=topic)
    settings = kafka_client_settings(config.cluster("local"))
    assert topic_probe(settings, topic).status is InputStatus.MISSING
    create_topics(kafka.bootstrap_servers, {topic: 2})
    assert topic_probe(settings, topic).status is InputStatus.READY
    away = {
        **settings,
        "bootstrap_servers": [f"127.0.0.1:{free_port()}"],
        "request_timeout_ms": 2000,
    }
    probe = topic_probe(away, topic)
    assert probe.status is InputStatus.UNREACHABLE
    assert "Unable to bootstrap" in probe.detail, probe.detail


def test_a_job_waits_for_its_topic_with_one_line_starts_when_it_appears_and_again_after(
    kafka: EmbeddedKafka, tmp_path: Path
) -> None:
    topic = unique_name("snapshots-later")
    config = job_config(
        kafka, tmp_path, findings_topic=unique_name("findings"), snapshot_topic=topic
    )
    port = config.aggregation.listen.port
    log = tmp_path / "job.log"
    with log.open("wb") as out:
        job = subprocess.Popen(
            [sys.executable, "-m", "agent", "aggregate", "--config", str(tmp_path / "ksmon.yaml")],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            start_new_session=True,  # stopped as a supervisor stops it: with its JVM
        )

    def exited() -> str | None:
        code = job.poll()
        return None if code is None else f"ksmon aggregate exited with {code}: {log.read_text()}"

    try:
        wait_until(
            lambda: metric(port, "ksmon_job_waiting_for_input") == 1.0,
            timeout=300,
            what="the job to say on /metrics that it waits for its topic",
            abort=exited,
        )
        create_topics(kafka.bootstrap_servers, {topic: 1})
        produce(
            kafka.bootstrap_servers,
            topic,
            [(f"local/{s.group.group_id}", s.to_json().decode()) for s in LOOP.snapshots],
        )
        wait_until(
            lambda: finding_active(port, LOOP.snapshots[0].group.group_id, "rebalance_loop"),
            timeout=300,
            what="the job to start on the new topic and judge the group",
            abort=exited,
        )
        assert metric(port, "ksmon_job_waiting_for_input") == 0.0
        started = messages(log)
        # The topic deleted under the running query: its failure is one line, and the
        # job waits for the topic again.
        admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
        try:
            admin.delete_topics([topic])
        finally:
            admin.close()
        wait_until(
            lambda: metric(port, "ksmon_job_waiting_for_input") == 1.0,
            timeout=120,
            what="the job to wait for the deleted topic",
            abort=exited,
        )
        before_stop = log.read_text()
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGTERM)
            job.wait(timeout=60)

    waiting = (
        f"waiting for snapshot topic {topic} on cluster local to exist "
        "(the agent creates it with its first snapshot)"
    )
    said = [m["message"] for m in started]
    assert [m for m in said if "waiting for" in m] == [waiting]
    assert (
        f"snapshot topic {topic} on cluster local exists now; starting the streaming query" in said
    )
    assert not [m for m in said if "failed" in m], said
    after = [m["message"] for m in messages(log)][len(started) :]
    (failed,) = [m for m in after if "failed" in m]
    assert failed.startswith("the streaming query failed ("), failed
    assert "UnknownTopicOrPartition" in failed, failed
    assert [m for m in after if "waiting for" in m] == [waiting]
    assert traces(before_stop) == [], before_stop[-3000:]


AGENT_CONFIG = """\
agent: {{id: start-order-agent}}
http: {{listen: "127.0.0.1:{port}"}}
logging: {{format: json, level: info}}
clusters:
  - name: local
    bootstrap_servers: ["{local}"]
    groups: {{allow: ["{group}"]}}
    poll: {{offsets_interval: 1s, metadata_interval: 5s, request_timeout: 5s}}
    offsets_topic: {{read: false}}
  - name: later
    bootstrap_servers: ["{later}"]
    poll: {{offsets_interval: 1s, metadata_interval: 5s, request_timeout: 3s}}
sink:
  type: kafka
  kafka: {{cluster: later, topic: ksmon.snapshots, partitions: 1, replication_factor: 1}}
"""


@pytest.fixture
def later_broker(kafka_distribution: KafkaDistribution, tmp_path: Path) -> Iterator[EmbeddedKafka]:
    """A second, fresh broker whose port is chosen now and which starts when a test says:
    before it, nothing listens there; once started it has no __consumer_offsets yet."""
    broker = EmbeddedKafka(kafka_distribution, tmp_path / "later-broker", heap_mb=384)
    yield broker
    broker.stop()


def test_an_agent_started_before_its_broker_says_when_each_part_works(
    kafka: EmbeddedKafka, later_broker: EmbeddedKafka, tmp_path: Path
) -> None:
    # One group on the session broker, so there are snapshots for the sink on the other.
    group = unique_name("start-order-group")
    create_topics(kafka.bootstrap_servers, {f"{group}-in": 1})
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        commit_group_offset(admin, group, f"{group}-in", 0)
    finally:
        admin.close()
    port = free_port()
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        AGENT_CONFIG.format(
            port=port,
            local=kafka.bootstrap_servers,
            later=later_broker.bootstrap_servers,
            group=group,
        )
    )
    log = tmp_path / "agent.log"

    def said() -> list[str]:
        return [m["message"] for m in messages(log)]

    def said_containing(text: str) -> list[str]:
        return [m for m in said() if text in m]

    with running_agent(config, port, log) as agent:
        wait_until(
            lambda: (
                bool(said_containing("poll of cluster later failed"))
                and bool(said_containing("delivering snapshots to topic ksmon.snapshots failed"))
                and bool(said_containing("__consumer_offsets tail failed"))
            ),
            timeout=120,
            what="the agent to warn that the later broker does not answer",
            abort=agent.exited,
        )
        try:
            later_broker.start()
        except KsmonError as e:
            unavailable("a second embedded Kafka broker", e)
        wait_until(
            lambda: (
                metric(port, "ksmon_offsets_topic_reader_up", kafka_cluster="later") == 1.0
                and bool(said_containing("delivering snapshots to topic ksmon.snapshots again"))
                and bool(said_containing("poll of cluster later works again"))
            ),
            timeout=120,
            what="the agent to recover by itself and say so",
            abort=agent.exited,
        )
        assert agent.stop() == 0

    # One line per recovery, whatever the number of failed attempts before it (a busy
    # machine may fail a poll of the broker just started: then that recovery is said too).
    lines = said()
    assert streaks(lines, "poll of cluster later failed", "poll of cluster later works again")
    assert streaks(
        lines,
        "delivering snapshots to topic ksmon.snapshots failed",
        "delivering snapshots to topic ksmon.snapshots again, after ",
    )
    assert streaks(
        lines, "__consumer_offsets tail failed", "cluster later: reading __consumer_offsets now ("
    )
    # A fresh broker creates __consumer_offsets with its first group (none here): said once.
    assert len(said_containing("cluster later: __consumer_offsets does not exist yet")) == 1
    reading = said_containing("cluster later: reading __consumer_offsets now (")
    assert re.search(r"\) after \d+ failed attempts?$", reading[0]), reading
    assert traces(log.read_text()) == []
