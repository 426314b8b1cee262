"""``ksmon explain`` against the live fixture app, and its error paths: each a
single clear line and a non-zero exit."""

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer
from kafka.coordinator.assignors.abstract import ConsumerProtocolSubscription
from kafka.coordinator.assignors.range import RangePartitionAssignor

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import KeyedLoad, KeySkew, partition_of
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppConfig, StreamsAppInstance
from agent.embedded.topics import create_topics
from tests.support.streams import StreamsApps, unique_name
from tests.unit.streams.vectors import vector

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 4
PROCESS = "00112233-4455-6677-8899-aabbccddeeff"  # in SubscriptionInfo v11 of the vectors


def ksmon(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=dict(os.environ),
        check=False,
    )


def active_tasks_by_thread(instance: StreamsAppInstance) -> dict[int, set[str]]:
    state: dict[str, Any] | None = instance.oracle()
    assert state is not None
    return {
        int(t["name"].rsplit("-", 1)[1]): {task["taskId"] for task in t["activeTasks"]}
        for t in state["threads"]
    }


def test_explain_names_the_instance_threads_and_tasks_the_app_itself_reports(
    kafka: EmbeddedKafka, streams_apps: StreamsApps
) -> None:
    app = unique_name("explain")
    topic = f"{app}-input"
    create_topics(kafka.bootstrap_servers, {topic: PARTITIONS})
    instances = streams_apps.start(
        StreamsAppConfig(
            application_id=app, input_topic=topic, output_topic=f"{app}-out", threads=2
        ),
        instances=2,
    )
    hot = partition_of("hot", PARTITIONS)
    with KeyedLoad(kafka.bootstrap_servers, topic, rate=300, skew=KeySkew({"hot": 0.9})):
        report: dict[str, Any] = {}

        def settled() -> bool:
            # A fresh group may still be rebalancing; explain once it is Stable
            # and agrees with what both instances say about themselves.
            result = ksmon(
                "explain", app, "--bootstrap", kafka.bootstrap_servers, "--sample", "2", "--json"
            )
            assert result.returncode == 0, result.stderr
            report.update(json.loads(result.stdout))
            ours = {
                (i["process_id"], t["thread"]): {
                    x["task"] for x in t["tasks"] if x["kind"] == "active"
                }
                for i in report["instances"]
                for t in i["threads"]
            }
            theirs = {
                (str((inst.oracle() or {}).get("processId")), thread): tasks
                for inst in instances
                for thread, tasks in active_tasks_by_thread(inst).items()
            }
            return report["state"] == "Stable" and ours == theirs

        wait_until(settled, timeout=90, what="explain to agree with the app's own view")

    assert report["is_streams"]
    assert report["group"] == app
    assert len(report["instances"]) == 2
    assert sum(len(i["threads"]) for i in report["instances"]) == 4
    # The hot key's tasks (its input partition, then the same repartition
    # partition) make their instance the busiest: it is listed first.
    heaviest = report["instances"][0]
    hot_tasks = {f"0_{hot}", f"1_{hot}"}
    holders = {
        x["task"]
        for t in heaviest["threads"]
        for x in t["tasks"]
        if x["kind"] == "active" and x["task"] in hot_tasks
    }
    assert holders, f"the heaviest instance holds none of the hot tasks {hot_tasks}: {heaviest}"
    hot_rate = next(
        p["records_per_second"]
        for p in report["partitions"]
        if p["topic"] == topic and p["partition"] == hot
    )
    assert hot_rate is not None
    assert hot_rate > 100, "about 270 rec/s go to the hot partition"

    # The group formed through a few generations; the coordinator stored each in
    # __consumer_offsets, where explain reads them (issue 27 #4: "generation": null).
    assert report["generation"] is not None
    assert report["rebalances"], report["rebalances_note"]
    assert report["rebalances"][-1]["generation"] == report["generation"]
    assert report["rebalances"][-1]["protocol"] == "stream"
    assert report["rebalances_note"].startswith("the generations stored in the last 15 min")

    text = ksmon("explain", app, "--bootstrap", kafka.bootstrap_servers, "--sample", "1")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"{app} on cluster cli: Kafka Streams application")
    for instance in report["instances"]:
        assert instance["process_id"] in text.stdout
    assert "RECENT REBALANCES (the generations stored in the last 15 min" in text.stdout
    assert " lag ?" not in text.stdout, "partitions without traffic read 0 or idle"


class StreamThreadStandIn(RangePartitionAssignor):  # type: ignore[misc]  # kafka-python: untyped
    """Joins like a Kafka Streams stream thread: StreamsPartitionAssignor's protocol
    name and Kafka's own SubscriptionInfo bytes in the userData."""

    name = "stream"

    @classmethod
    def metadata(cls, topics: Iterable[str]) -> ConsumerProtocolSubscription:
        return ConsumerProtocolSubscription(0, list(topics), vector("SUB", 11).data)


def test_an_empty_group_of_former_stream_threads_is_explained_as_a_kafka_streams_app(
    kafka: EmbeddedKafka,
) -> None:
    """Issue 27 #4: a looping app is Empty at most instants, and it never committed: the
    poll alone says 'classic group, Empty, 0 members'. A stand-in thread (no JVM: fast)
    joins twice and leaves without committing, as a looping stream thread does."""
    group = unique_name("explain-gone")
    topic = f"{group}-input"
    create_topics(kafka.bootstrap_servers, {topic: 2})
    for _ in range(2):
        thread = KafkaConsumer(
            topic,
            bootstrap_servers=kafka.bootstrap_servers,
            group_id=group,
            client_id=f"{group}-{PROCESS}-StreamThread-1-consumer",
            partition_assignment_strategy=[StreamThreadStandIn],
            enable_auto_commit=False,
        )

        def has_partitions(thread: KafkaConsumer = thread) -> bool:
            thread.poll(timeout_ms=200)
            return bool(thread.assignment())

        try:
            wait_until(
                has_partitions, timeout=60, what="the stand-in stream thread to get its partitions"
            )
        finally:
            thread.close(autocommit=False)

    result = ksmon(
        "explain", group, "--bootstrap", kafka.bootstrap_servers, "--sample", "0.5", "--json"
    )

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["state"], report["members"]) == ("Empty", 0)
    assert report["is_streams"], "its members were stream threads"
    assert report["streams_evidence"].startswith("its members at generation ")
    joined = [r for r in report["rebalances"] if r["member_count"]]
    emptied = [r for r in report["rebalances"] if not r["member_count"]]
    # Two joins at least (kafka-python re-joins once more when the topic's metadata comes).
    assert len(joined) >= 2, report["rebalances"]
    assert emptied, "leaving stores an Empty generation"
    assert {(r["protocol"], r["instances"]) for r in joined} == {("stream", 1)}
    assert report["generation"] == report["rebalances"][-1]["generation"]
    assert report["last_members"]["instances"] == 1
    assert report["condition"].endswith("; no members at this instant")

    text = ksmon("explain", group, "--bootstrap", kafka.bootstrap_servers, "--sample", "0.5")
    assert text.returncode == 0, text.stderr
    headline, condition = text.stdout.splitlines()[:2]
    assert headline.startswith(f"{group} on cluster cli: Kafka Streams application, Empty")
    assert "no members at this instant" in headline
    assert condition.startswith("Kafka Streams app, ")


def test_an_unknown_group_is_one_line(kafka: EmbeddedKafka) -> None:
    result = ksmon(
        "explain", "no-such-group-x1", "--bootstrap", kafka.bootstrap_servers, "--sample", "0.5"
    )

    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [result.stderr.strip()], "exactly one line"
    assert result.stderr.startswith(
        "ksmon: error: group 'no-such-group-x1' not found on cluster cli"
    )


def test_a_cluster_that_is_down_is_one_line() -> None:
    port = free_port()  # nothing listens there
    result = ksmon("explain", "g", "--bootstrap", f"127.0.0.1:{port}", "--sample", "0.5")

    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"ksmon: error: cannot poll cluster cli (127.0.0.1:{port})")


def test_a_bad_config_is_one_line_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("clusters:\n  - name: a\n    bootstrap_servers: [k:9092]\n    pol: {}\n")

    result = ksmon("explain", "g", "--config", str(config))

    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"ksmon: error: {config}:4: clusters[0].pol: unknown key; did you mean 'poll'? "
        "(allowed: bootstrap_servers, client_id, groups, name, offsets_topic, poll, security)"
    )
