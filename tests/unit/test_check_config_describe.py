"""``ksmon check-config FILE`` describes what the file runs, nothing else: a sidecar's
file its sidecar and the clusters it uses, an agent's file without an aggregation
section no job, a job's file the job and its clusters, a file with both both."""

import textwrap
from pathlib import Path

from agent.commands import check_config, sections_written

CLUSTERS = """\
clusters:
  - name: apps
    bootstrap_servers: "apps-kafka:9092"
  - name: monitoring
    bootstrap_servers: "mon-kafka:9092"
  - name: elsewhere
    bootstrap_servers: "other-kafka:9092"
"""

AGENT_LINE = (
    "agent central-1 (central): metrics on 0.0.0.0:8479, lag per partition, logs json at info"
)
APPS_POLLED = (
    "cluster apps: apps-kafka:9092 over PLAINTEXT; groups .*; offsets every 10s, "
    "metadata every 1m; reads __consumer_offsets"
)
JOB_ON_APPS = (
    "aggregation job: metrics on 0.0.0.0:8480, reads Kafka topic ksmon.snapshots on cluster "
    "apps every 10s, findings to Kafka topic ksmon.findings on cluster apps; Spark local[*], "
    "checkpoints in /var/lib/ksmon/job; evaluation window 1m"
)


def described(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "ksmon.yaml"
    path.write_text(textwrap.dedent(text))
    return check_config(path).splitlines()


def test_a_sidecar_file_describes_the_sidecar_and_the_clusters_it_uses_and_no_job(
    tmp_path: Path,
) -> None:
    lines = described(
        tmp_path,
        "agent: {id: orders-0, mode: sidecar}\n"
        + CLUSTERS
        + "sink: {kafka: {cluster: monitoring, create_topic: false}}\n"
        "sidecar: {application_id: orders-app, cluster: apps}\n",
    )
    assert lines == [
        "agent orders-0 (sidecar): metrics on 0.0.0.0:8479, lag per partition, logs json at info",
        "cluster apps: apps-kafka:9092 over PLAINTEXT; groups orders-app only; offsets every "
        "10s, metadata every 1m; does not read __consumer_offsets",
        "cluster monitoring: mon-kafka:9092; not polled (snapshots are shipped there)",
        "snapshots: Kafka topic ksmon.snapshots on cluster monitoring (gzip, up to 10000 buffered)",
        "sidecar of Kafka Streams application orders-app on cluster apps: metrics from "
        "http://127.0.0.1:9404/metrics (timeout 5s), no state directory",
    ]


def test_an_agent_file_without_an_aggregation_section_describes_no_job(tmp_path: Path) -> None:
    lines = described(
        tmp_path,
        "agent: {id: central-1}\n"
        "clusters: [{name: apps, bootstrap_servers: 'apps-kafka:9092'}]\n"
        "sink: {type: kafka}\n",
    )
    assert lines == [
        AGENT_LINE,
        APPS_POLLED,
        "snapshots: Kafka topic ksmon.snapshots on cluster apps (gzip, up to 10000 buffered)",
    ]


def test_a_clusters_only_file_runs_the_agent_with_its_defaults(tmp_path: Path) -> None:
    lines = described(tmp_path, "clusters: [{name: apps, bootstrap_servers: 'apps-kafka:9092'}]\n")
    assert lines[1:] == [
        APPS_POLLED,
        "snapshots: Kafka topic ksmon.snapshots on cluster apps (gzip, up to 10000 buffered)",
    ]
    assert lines[0].endswith(
        "(central): metrics on 0.0.0.0:8479, lag per partition, logs json at info"
    )


def test_a_job_file_describes_the_job_and_the_clusters_it_reads_and_writes(
    tmp_path: Path,
) -> None:
    lines = described(
        tmp_path,
        CLUSTERS + "logging: {format: text}\n"
        "aggregation:\n"
        "  checkpoint_dir: /var/lib/ksmon/job\n"
        "  input: {kafka: {cluster: monitoring}}\n",
    )
    assert lines == [
        "cluster monitoring: mon-kafka:9092 over PLAINTEXT",
        "aggregation job: metrics on 0.0.0.0:8480, reads Kafka topic ksmon.snapshots on "
        "cluster monitoring every 10s, findings to Kafka topic ksmon.findings on cluster "
        "monitoring; Spark local[*], checkpoints in /var/lib/ksmon/job; evaluation window 1m; "
        "logs text at info",
    ]


def test_a_job_file_whose_sink_section_names_its_input_is_still_the_job_alone(
    tmp_path: Path,
) -> None:
    lines = described(
        tmp_path,
        "clusters: [{name: apps, bootstrap_servers: 'apps-kafka:9092'}]\n"
        "sink: {kafka: {topic: fleet.snapshots}}\n"
        "aggregation: {checkpoint_dir: /var/lib/ksmon/job, findings: {publish: false}}\n",
    )
    assert lines == [
        "cluster apps: apps-kafka:9092 over PLAINTEXT",
        "aggregation job: metrics on 0.0.0.0:8480, reads Kafka topic fleet.snapshots on "
        "cluster apps every 10s, findings not published to a topic; Spark local[*], "
        "checkpoints in /var/lib/ksmon/job; evaluation window 1m; logs json at info",
    ]


def test_a_file_with_the_agent_and_the_job_describes_both(tmp_path: Path) -> None:
    lines = described(
        tmp_path,
        "agent: {id: central-1}\n"
        "clusters: [{name: apps, bootstrap_servers: 'apps-kafka:9092'}]\n"
        "aggregation: {checkpoint_dir: /var/lib/ksmon/job}\n",
    )
    assert lines == [
        AGENT_LINE,
        APPS_POLLED,
        "snapshots: Kafka topic ksmon.snapshots on cluster apps (gzip, up to 10000 buffered)",
        JOB_ON_APPS,
    ]


def test_the_sections_written_are_the_files_top_level_keys(tmp_path: Path) -> None:
    path = tmp_path / "ksmon.yaml"
    path.write_text(CLUSTERS + "sidecar: {application_id: x}\nagent: {mode: sidecar}\n")
    assert sections_written(path) == {"clusters", "sidecar", "agent"}
