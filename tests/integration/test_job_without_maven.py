"""``ksmon aggregate`` needs a Java runtime and no Maven: Spark fetches its Kafka source.

The job runs as a process whose PATH has every command of this machine but
``mvn``; it reads the snapshot topic of the session broker and serves the
findings on /metrics, with the Kafka source resolved by Spark's own package
fetch (Ivy, into ksmon's cache).
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agent.aggregation.spark.kafka_package import KAFKA_SOURCE, ivy_dir, pyspark_version
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import produce
from agent.embedded.process import wait_until
from agent.embedded.topics import create_topics
from tests.support.aggregation import active_findings, job_config, scrape
from tests.support.streams import unique_name
from tests.unit.aggregation.cases import rebalance_loop

pytestmark = pytest.mark.integration

LOOP = rebalance_loop.CASES[0]
MAVEN = ("mvn", "mvnDebug", "mvnyjp")


def path_without(bin_dir: Path, hidden: tuple[str, ...]) -> str:
    """A directory of links to every command on PATH but ``hidden``, as the only PATH."""
    bin_dir.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not Path(directory).is_dir():
            continue
        for command in Path(directory).iterdir():
            link = bin_dir / command.name
            if command.name in hidden or link.exists() or not os.access(command, os.X_OK):
                continue
            link.symlink_to(command.resolve())
    return str(bin_dir)


def test_the_job_reads_the_topic_with_a_kafka_source_spark_fetched_and_no_maven(
    kafka: EmbeddedKafka, tmp_path: Path
) -> None:
    topic = unique_name("snapshots")
    create_topics(kafka.bootstrap_servers, {topic: 2})
    produce(
        kafka.bootstrap_servers,
        topic,
        [(f"local/{s.group.group_id}", s.to_json().decode()) for s in LOOP.snapshots],
    )
    config = job_config(
        kafka, tmp_path, findings_topic=unique_name("findings"), snapshot_topic=topic
    )
    path = path_without(tmp_path / "bin", MAVEN)
    assert subprocess.run(["which", "mvn"], env={"PATH": path}, check=False).returncode != 0
    assert subprocess.run(["which", "java"], env={"PATH": path}, check=False).returncode == 0
    env = {key: value for key, value in os.environ.items() if key not in ("M2_HOME", "MAVEN_HOME")}
    log_path = tmp_path / "job.log"
    with log_path.open("w") as log:
        job = subprocess.Popen(
            [sys.executable, "-m", "agent", "aggregate", "--config", str(tmp_path / "ksmon.yaml")],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**env, "PATH": path},
            start_new_session=True,  # SIGTERM to the group stops its JVM too
        )
    port = config.aggregation.listen.port

    def processed() -> str | None:
        try:
            metrics = scrape(port)
        except OSError:
            return None
        done = f"ksmon_job_snapshots_processed_total {len(LOOP.snapshots)}.0" in metrics
        return metrics if done else None

    def exited() -> str | None:
        code = job.poll()
        return None if code is None else f"exited with {code}: {log_path.read_text()[-3000:]}"

    try:
        wait_until(
            lambda: processed() is not None,
            timeout=300,
            what="the job's /metrics counting every snapshot of the topic",
            abort=exited,
        )
        metrics = processed()
        assert metrics is not None
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGTERM)
            job.wait(timeout=60)

    assert [(f["kind"], f["group"]) for f in active_findings(metrics)] == [
        ("rebalance_loop", "loop-poll-timeouts")
    ]
    output = log_path.read_text()
    # Spark's own resolver put the package on the classpath, from ksmon's Ivy directory.
    assert f"{KAFKA_SOURCE.replace(':', '#')} added as a dependency" in output, output[-3000:]
    assert f"The jars for the packages stored in: {ivy_dir() / 'jars'}" in output
    artifact = KAFKA_SOURCE.replace(":", "_")
    assert (ivy_dir() / "jars" / f"{artifact}-{pyspark_version()}.jar").is_file()
    assert "Maven" not in output


def test_without_a_java_runtime_the_job_ends_with_one_line_saying_what_it_needs(
    tmp_path: Path,
) -> None:
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        "clusters:\n  - name: local\n    bootstrap_servers: ['127.0.0.1:9']\n"
        f"aggregation:\n  checkpoint_dir: {tmp_path / 'checkpoint'}\n"
    )
    path = path_without(tmp_path / "bin", (*MAVEN, "java"))
    env = {key: value for key, value in os.environ.items() if key != "JAVA_HOME"}

    result = subprocess.run(
        [sys.executable, "-m", "agent", "aggregate", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "PATH": path},
        check=False,
    )

    assert result.returncode == 1
    last = result.stderr.splitlines()[-1]
    assert last.startswith("ksmon: error: Spark's JVM did not start ("), result.stderr
    assert "it needs a Java runtime (java on PATH or JAVA_HOME)" in last
    assert f"could not fetch {KAFKA_SOURCE}:{pyspark_version()} from Maven Central" in last
    assert "Traceback" not in result.stderr
