"""The aggregation job under faults and hostile input, on the real broker (issue 8):

- over SASL_SSL with SCRAM-SHA-512 (``ksmon aggregate`` as a process): it reads the
  snapshot topic and writes the findings topic through the secure listener, and its
  password is in none of its output, its /metrics, its checkpoint files or its records;
- a snapshot of a newer schema version in the snapshot topic is set aside as
  ``future_version`` while the good snapshots around it are evaluated;
- the broker down for 30 s in the middle of a micro-batch (after evaluating, before
  publishing): the job restarts its query by itself and neither loses nor repeats a
  finding (compared with a replay of the same snapshots).

The agent-side versions are in ``test_security.py`` and ``test_faults.py``; spool
quarantine and a job killed with SIGKILL are in ``test_aggregation_job.py``.
"""

import json
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
import yaml
from pyspark.sql import SparkSession

from agent.aggregation.commands import keep_running
from agent.aggregation.job import AggregationJob
from agent.aggregation.outputs.findings_topic import read_events
from agent.aggregation.replay import replay
from agent.config import kafka_client_settings
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import produce
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from agent.embedded.topics import create_topics
from agent.model import Snapshot
from agent.model.findings import FindingEvent
from agent.model.snapshot import SCHEMA_VERSION
from tests.support.agent_process import run_cli, running_agent, scrape
from tests.support.aggregation import active_findings, in_chunks, job_config, write_spool
from tests.support.broker import restore
from tests.support.kafka_io import read_all
from tests.support.secure import SUPER_PASSWORD, SecureListener
from tests.support.streams import unique_name
from tests.unit.aggregation.cases import hot_partitions, rebalance_loop

pytestmark = pytest.mark.integration

HOT = hot_partitions.CASES[0]  # two hot tasks on instance pA's only thread
LOOP = rebalance_loop.CASES[0]  # a rebalance loop from poll timeouts
CLUSTER = HOT.snapshots[0].cluster  # the cases' cluster name, in their snapshots
PASSWORD_ENV = "KSMON_TEST_PASSWORD"  # noqa: S105 - the variable's name
OUTAGE_SECONDS = 30.0
# Generous: a micro-batch takes seconds, but the machine may be busy.
BATCH_TIMEOUT = 900.0


def _records(snapshots: Sequence[Snapshot]) -> list[tuple[str, str]]:
    return [(f"{s.cluster}/{s.group.group_id}", s.to_json().decode()) for s in snapshots]


def _by_time(*cases: Sequence[Snapshot]) -> list[Snapshot]:
    return sorted((s for case in cases for s in case), key=lambda s: s.poll.started_at)


# --- SASL_SSL ------------------------------------------------------------------------------------


def _finds(port: int, kind: str) -> bool:
    """Whether the job's /metrics shows a finding of ``kind`` (False while it starts)."""
    try:
        return any(f["kind"] == kind for f in active_findings(scrape(port)))
    except OSError:
        return False


def test_the_job_over_sasl_ssl_reads_and_publishes_and_leaks_no_secret(
    kafka: EmbeddedKafka, secure_listener: SecureListener, tmp_path: Path
) -> None:
    topic, findings_topic = unique_name("snapshots-secure"), unique_name("findings-secure")
    create_topics(kafka.bootstrap_servers, {topic: 1})
    produce(kafka.bootstrap_servers, topic, _records(LOOP.snapshots))
    port = free_port()
    checkpoint = tmp_path / "checkpoint"
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        "clusters:\n"
        + secure_listener.cluster_yaml("secure", env_var=PASSWORD_ENV)
        + yaml.safe_dump(
            {
                # DEBUG: the Kafka clients log their configuration, password field included.
                "logging": {"format": "json", "level": "debug"},
                "sink": {"type": "none"},
                "aggregation": {
                    "listen": f"127.0.0.1:{port}",
                    "checkpoint_dir": str(checkpoint),
                    "trigger_interval": "1s",
                    "input": {
                        "type": "kafka",
                        "kafka": {
                            "cluster": "secure",
                            "topic": topic,
                            "starting_offsets": "earliest",
                        },
                    },
                    "findings": {"topic": findings_topic, "partitions": 1},
                    "spark": {"master": "local[2]", "shuffle_partitions": 2},
                },
            },
            sort_keys=False,
        )
    )
    env = {PASSWORD_ENV: SUPER_PASSWORD}
    log = tmp_path / "job.log"
    with running_agent(config, port, log, env, command="aggregate") as job:
        wait_until(
            partial(_finds, port, "rebalance_loop"),
            # A Spark of its own: minutes to start and plan on a busy machine.
            timeout=600,
            what="the rebalance_loop finding on the job's /metrics",
            abort=job.exited,
            interval=2,
        )
        metrics_text = scrape(port)
        findings = run_cli("findings", "--config", str(config), "--json", env=env)
        assert job.stop() == 0

    # Read through the secure listener, written through it.
    assert findings.returncode == 0, findings.stderr
    assert [(f["kind"], f["group"]) for f in json.loads(findings.stdout)] == [
        ("rebalance_loop", "loop-poll-timeouts")
    ]
    assert f"ksmon_job_snapshots_processed_total {len(LOOP.snapshots)}.0" in metrics_text
    output = log.read_text()
    stored = b"".join(p.read_bytes() for p in checkpoint.rglob("*") if p.is_file())
    records = b"".join(v for _, v in read_all(kafka.bootstrap_servers, findings_topic))
    for where, text in {
        "the job's output": output,
        "its /metrics": metrics_text,
        "ksmon findings": findings.stdout + findings.stderr,
    }.items():
        assert SUPER_PASSWORD not in text, f"the password is in {where}"
    assert SUPER_PASSWORD.encode() not in stored, "the password is in the checkpoint directory"
    assert SUPER_PASSWORD.encode() not in records, "the password is in the findings topic"
    # The publisher's Kafka client logged its configuration: redacted, not absent.
    configured = [
        json.loads(line)["message"]
        for line in output.splitlines()
        if line.startswith("{") and "with configuration" in line
    ]
    assert configured
    assert all("'sasl_plain_password': '***'" in line for line in configured)
    assert "Traceback" not in output


# --- a newer schema version in the stream --------------------------------------------------------


def _newer(snapshot: Snapshot, after: float) -> str:
    """``snapshot`` as a newer agent would write it: the next schema version, a field this
    job does not know, and a poll time after every good snapshot."""
    plain = json.loads(replace(snapshot, poll=replace(snapshot.poll, started_at=after)).to_json())
    plain["schema_version"] = SCHEMA_VERSION + 1
    plain["capabilities"] = {"kip_1071": True}
    return json.dumps(plain)


def test_a_newer_snapshot_in_the_topic_is_quarantined_and_the_stream_goes_on(
    kafka: EmbeddedKafka, spark: SparkSession, tmp_path: Path
) -> None:
    topic = unique_name("snapshots-newer")
    create_topics(kafka.bootstrap_servers, {topic: 1})
    good = list(HOT.snapshots)
    newest_good = max(s.poll.started_at for s in good)
    newer = _newer(good[5], after=newest_good + 60)
    # The newer one arrives in the middle of the good ones, from the same group and agent.
    records = [*_records(good[:6]), (f"{CLUSTER}/{HOT.name}", newer), *_records(good[6:])]
    produce(kafka.bootstrap_servers, topic, records)
    config = job_config(
        kafka, tmp_path, findings_topic=unique_name("findings"), snapshot_topic=topic
    )
    job = AggregationJob(config, spark)
    job.start()
    try:
        job.process_available()
        assert job.server is not None
        metrics_text = scrape(job.server.port)
        view = job.latest.view()
    finally:
        job.stop()

    assert view.snapshots_quarantined == {"future_version": 1}
    assert view.snapshots_processed == len(good)
    # It did not enter the evaluation: the job's newest poll time is the good ones'.
    assert dict(view.newest_snapshot) == {CLUSTER: newest_good}
    assert 'ksmon_job_snapshots_quarantined_total{reason="future_version"} 1.0' in metrics_text
    assert {(f["kind"], f["process"], f["thread"]) for f in active_findings(metrics_text)} == {
        ("hot_partitions_colocated", "pA", "1"),
        ("hot_partitions_colocated", "pA", ""),
    }
    (sample,) = (tmp_path / "checkpoint" / "quarantine").glob("*.jsonl")
    (quarantined,) = [json.loads(line) for line in sample.read_text().splitlines()]
    assert quarantined["reason"] == "future_version"
    assert quarantined["origin"] == f"{topic}/0@6", "where to find it: topic/partition@offset"
    assert quarantined["error"] == (
        f"$.schema_version: {SCHEMA_VERSION + 1} is newer than this job's {SCHEMA_VERSION}"
    )
    assert quarantined["value"] == newer


# --- a broker outage mid-batch -------------------------------------------------------------------


@pytest.fixture
def broker_restored(kafka: EmbeddedKafka) -> Iterator[None]:
    yield
    restore(kafka)


class BrokerStopOnPublish:
    """Stops the broker from inside the second micro-batch that has findings to publish:
    after evaluating and saving the batch's state, before sending its events, with the
    publisher's producer already connected (it published the first batch's)."""

    def __init__(self, job: AggregationJob, kafka: EmbeddedKafka) -> None:
        assert job.publisher is not None
        self.kafka = kafka
        self.stopped = threading.Event()
        self.published: list[list[FindingEvent]] = []
        publish = job.publisher.publish

        def publish_the_second_time_with_the_broker_stopped(
            events: Iterable[FindingEvent],
        ) -> int:
            events = list(events)
            if events and not self.stopped.is_set():
                self.published.append(events)
                if len(self.published) == 2:
                    # The JVM is launched again from the test's thread (its die-with-parent
                    # signal is tied to the launching thread).
                    self.kafka.stop()
                    self.stopped.set()
            return publish(events)

        job.publisher.publish = publish_the_second_time_with_the_broker_stopped  # type: ignore[method-assign]

    @property
    def interrupted(self) -> list[FindingEvent]:
        """The events of the batch the broker went away in."""
        return self.published[1] if self.stopped.is_set() else []


def _caught_up(job: AggregationJob, through: float) -> bool:
    """The job evaluated every snapshot up to ``through`` and published every batch."""
    ledger = job.ledger
    ids = sorted(int(p.stem.removeprefix("batch-")) for p in ledger.directory.glob("batch-*"))
    newest = dict(job.latest.view().newest_snapshot).get(CLUSTER, 0.0)
    return newest >= through and bool(ids) and ledger.published_through() >= ids[-1]


def _outage(job: AggregationJob, kafka: EmbeddedKafka) -> float:
    """Keep the stopped broker down for ``OUTAGE_SECONDS``, then start it again."""
    stopped_at = time.monotonic()
    # The job fails the batch whose events it cannot send, and keeps failing to reach
    # the broker: the outage is felt, and the job stays up.
    wait_until(
        lambda: job.latest.view().batch_errors >= 1,
        timeout=120,
        what="the job to fail the batch it could not publish",
    )
    wait_until(
        lambda: time.monotonic() - stopped_at >= OUTAGE_SECONDS,
        timeout=OUTAGE_SECONDS + 5,
        what=f"{OUTAGE_SECONDS:.0f} s of outage",
        interval=1,
    )
    seconds = time.monotonic() - stopped_at
    kafka.launch()
    kafka.wait_ready(timeout=180)
    return seconds


# Three chunks, each a micro-batch or more (minutes each on a busy machine), the outage,
# the query's restarts, the re-run, and a replay.
@pytest.mark.timeout(1800)
def test_a_broker_outage_mid_batch_loses_and_repeats_no_finding(
    kafka: EmbeddedKafka, spark: SparkSession, tmp_path: Path, broker_restored: None
) -> None:
    topic = unique_name("snapshots-outage")
    create_topics(kafka.bootstrap_servers, {topic: 1})
    snapshots = _by_time(HOT.snapshots, LOOP.snapshots)
    config = job_config(
        kafka, tmp_path, findings_topic=unique_name("findings"), snapshot_topic=topic
    )
    job = AggregationJob(config, spark)
    hook = BrokerStopOnPublish(job, kafka)
    done = threading.Event()
    supervisor = threading.Thread(target=keep_running, args=(job, done), name="keep-running")
    job.start()
    supervisor.start()
    outage_seconds = 0.0
    try:
        for chunk in in_chunks(snapshots, 3):
            produce(kafka.bootstrap_servers, topic, _records(chunk))
            through = chunk[-1].poll.started_at
            # Every chunk is waited for: the one the broker went down in until the outage
            # starts (then caught up after it), each later one until it is processed.
            wait_until(
                lambda t=through, o=outage_seconds: (  # type: ignore[misc]
                    (hook.stopped.is_set() and not o) or _caught_up(job, t)
                ),
                timeout=BATCH_TIMEOUT,
                what="the job to process the chunk",
                interval=1,
            )
            if hook.stopped.is_set() and not outage_seconds:
                outage_seconds = _outage(job, kafka)
                wait_until(
                    lambda t=through: _caught_up(job, t),  # type: ignore[misc]
                    timeout=BATCH_TIMEOUT,
                    what="the job to process the chunk after the outage",
                    interval=1,
                )
        errors = job.latest.view().batch_errors
    finally:
        done.set()
        job.stop()
        supervisor.join(timeout=60)

    assert hook.interrupted, "the broker went down in a batch with events to publish"
    assert outage_seconds >= OUTAGE_SECONDS
    assert errors >= 1
    findings = config.aggregation.findings
    assert findings is not None
    published = read_events(kafka_client_settings(config.cluster("local")), findings.topic)
    ids = [e.event_id for e in published]
    assert len(ids) == len(set(ids)), "an event was published twice"
    assert {e.event_id for e in hook.interrupted} <= set(ids), "the interrupted batch's events"
    recorded = write_spool(tmp_path / "recorded", [snapshots])
    replayed = replay(recorded, config.aggregation.detectors)
    assert sorted((e.event, e.finding.key, e.at) for e in published) == sorted(
        (e.event, e.finding.key, e.at) for e in replayed.events
    ), "the job that lived through the outage disagrees with a replay"
    assert {e.finding.kind for e in published} == {"hot_partitions_colocated", "rebalance_loop"}
