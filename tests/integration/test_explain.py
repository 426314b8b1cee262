"""``ksmon explain`` against the live fixture app, and its error paths: each a
single clear line and a non-zero exit."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import KeyedLoad, KeySkew, partition_of
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppConfig, StreamsAppInstance
from agent.embedded.topics import create_topics
from tests.support.streams import StreamsApps, unique_name

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 4


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

    text = ksmon("explain", app, "--bootstrap", kafka.bootstrap_servers, "--sample", "1")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"{app} on cluster cli: Kafka Streams application")
    for instance in report["instances"]:
        assert instance["process_id"] in text.stdout


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
