"""internal_topic_budget and broker_partition_budget on the real broker with the real
fixture app, counted against what Kafka's own kafka-topics tool says.

The ``count`` topology (groupBy + count) creates ``<app>-counts-repartition``, which its
members read, and ``<app>-counts-changelog``, which no member reads (only a restore
does): both must be counted. The agent's poller (the all-topics Metadata refreshed at
every poll here) records the snapshots once the app runs and its internal topics exist
as kafka-topics describes them; the job's replay path judges the recording twice: with
budgets one below what the app and the broker have (found, with those counts), and one
above (nothing). ``budget_approach_ratio`` 1 makes "above" a sharp edge.
"""

from pathlib import Path

import pytest

from agent.aggregation.replay import replay
from agent.collect.kafka_edge import KafkaEdge
from agent.config.schema import DetectorsConfig
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppConfig
from agent.embedded.topics import create_topics
from agent.model import Snapshot
from tests.support.kafka_tools import TopicDescription, describe_topics
from tests.support.recording import group_poller, poll_into
from tests.support.streams import StreamsApps, unique_name

pytestmark = pytest.mark.integration

PARTITIONS = 3
HOLD = 4.0


def _params(app_topics: int, app_replicas: int, broker_replicas: int) -> DetectorsConfig:
    return DetectorsConfig(
        internal_topics_per_application=app_topics,
        internal_replicas_per_application=app_replicas,
        partition_replicas_per_broker=broker_replicas,
        budget_approach_ratio=1.0,
        budget_hold=HOLD,
    )


def _internal(snapshot: Snapshot) -> dict[str, tuple[str | None, int, int | None]]:
    return {
        t.name: (t.internal_kind, t.partitions, t.replication_factor)
        for t in snapshot.topics
        if t.internal_kind is not None
    }


def _the_broker(oracle: dict[str, TopicDescription]) -> tuple[int, int, int]:
    """The one broker's id, the partition replicas it hosts and the partitions it leads."""
    (broker,) = {b for t in oracle.values() for r in t.replicas for b in r}
    replicas = sum(broker in r for t in oracle.values() for r in t.replicas)
    leaders = sum(leader == broker for t in oracle.values() for leader in t.leaders)
    return broker, replicas, leaders


def test_budgets_below_what_the_app_and_broker_have_are_found_and_above_are_not(
    kafka: EmbeddedKafka,
    streams_apps: StreamsApps,
    edge: KafkaEdge,
    tmp_path: Path,
) -> None:
    app = unique_name("budget-count")
    create_topics(kafka.bootstrap_servers, {f"{app}-in": PARTITIONS})
    (instance,) = streams_apps.start(
        StreamsAppConfig(
            application_id=app,
            topology="count",
            input_topic=f"{app}-in",
            output_topic=f"{app}-out",
            threads=1,
        ),
        1,
        wait=False,
    )
    expected_internal = {f"{app}-counts-repartition", f"{app}-counts-changelog"}
    recording = tmp_path / "snapshots.jsonl"
    poller = group_poller(edge, [app], metadata_interval=0.0)
    steady_since: list[float] = []
    last: list[Snapshot] = []

    def steady() -> bool:
        """The app's group Stable with both internal topics in the snapshots, for longer
        than the hold (kafka-topics, a JVM of its own, is asked once after)."""
        polled = poll_into(poller, recording)
        if not polled:  # the group does not exist before the app joins
            return False
        (snapshot,) = polled
        last[:] = [snapshot]
        if snapshot.group.state != "Stable" or set(_internal(snapshot)) != expected_internal:
            steady_since.clear()
            return False
        steady_since[:1] = steady_since[:1] or [snapshot.poll.started_at]
        return snapshot.poll.started_at - steady_since[0] >= HOLD + 2

    wait_until(
        steady,
        timeout=180,
        interval=1.0,
        what="the app Stable, its internal topics in the snapshots",
        abort=instance.died,
    )
    # Nothing else creates topics meanwhile (the app gets no input, so writes no output).
    oracle = describe_topics(kafka)
    (snapshot,) = last
    internal_seen = _internal(snapshot)
    assert {
        name: (kind, oracle[name].partitions, oracle[name].replication_factor)
        for name, (kind, _, _) in internal_seen.items()
    } == internal_seen, "the snapshot's internal topics as kafka-topics has them"
    assert snapshot.cluster_facts.total_topics == len(oracle)
    changelog = next(t for t in snapshot.topics if t.name == f"{app}-counts-changelog")
    assert not changelog.consumed, "no member reads the changelog, and it is counted"

    # The oracle's counts: the app's internal topics and the one broker's replicas.
    internal = [oracle[name] for name in sorted(expected_internal)]
    topics = len(internal)
    partitions = sum(t.partitions for t in internal)
    replicas = sum(t.partitions * t.replication_factor for t in internal)
    broker, broker_replicas, broker_leaders = _the_broker(oracle)
    assert (topics, partitions) == (2, 2 * PARTITIONS), oracle

    below = replay([recording], _params(topics - 1, replicas - 1, broker_replicas - 1))
    found = {
        f.kind: f
        for f in below.open_findings
        if f.kind in ("internal_topic_budget", "broker_partition_budget")
    }
    assert set(found) == {"internal_topic_budget", "broker_partition_budget"}, [
        (f.kind, f.group) for f in below.open_findings
    ]
    app_finding = found["internal_topic_budget"]
    assert (app_finding.group, app_finding.severity) == (app, "warning")
    evidence = app_finding.evidence
    assert (
        evidence["internal_topics"],
        evidence["internal_partitions"],
        evidence["internal_replicas"],
        evidence["repartition_topics"],
        evidence["changelog_topics"],
    ) == (topics, partitions, replicas, 1, 1)
    assert evidence["over"] == ["topics", "replicas"]
    assert {b["topic"] for b in evidence["biggest"]} == expected_internal
    assert f"application {app} has {topics} internal topics" in app_finding.explanation

    broker_finding = found["broker_partition_budget"]
    assert (broker_finding.group, broker_finding.severity) == ("", "warning")
    (reported,) = broker_finding.evidence["brokers"]
    assert (reported["broker"], reported["replicas"], reported["leaders"]) == (
        broker,
        broker_replicas,
        broker_leaders,
    )
    # The only Streams application watched: its internal topics are the broker's share.
    assert reported["streams_internal_replicas"] == replicas
    assert broker_finding.evidence["total_topics"] == len(oracle)

    above = replay([recording], _params(topics + 1, replicas + 1, broker_replicas + 1))
    assert not [
        (e.event, e.finding.kind, e.finding.group)
        for e in above.events
        if e.finding.kind in ("internal_topic_budget", "broker_partition_budget")
    ]
