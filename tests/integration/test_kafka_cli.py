"""``ksmon kafka``'s commands on real brokers: Kafka's own tools run from the cached jars,
and ``start``, ``status`` and ``stop`` finding a broker whatever its data dir.

Each ``ksmon kafka tool`` run is a JVM (1-3 s here), so only a few run; the name
mapping and the arguments are covered without a JVM in tests/unit/test_kafka_tools.py.
"""

import json
import zipfile
from pathlib import Path

import pytest

from agent.embedded.kafka import EmbeddedKafka, KafkaDistribution
from agent.embedded.kafka_tools import KAFKA_TOOLS
from tests.support.agent_process import run_cli
from tests.support.kafka_io import commit_offsets
from tests.support.streams import unique_name

pytestmark = pytest.mark.integration


def pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


def test_every_tools_main_class_is_in_the_cached_jars(
    kafka_distribution: KafkaDistribution,
) -> None:
    """Kafka moves its tools between packages across releases: the table must follow
    the pinned version (no JVM: the jars' listings)."""
    classes: set[str] = set()
    for jar in kafka_distribution.libs.glob("kafka*.jar"):
        with zipfile.ZipFile(jar) as archive:
            classes.update(
                name.removesuffix(".class").replace("/", ".")
                for name in archive.namelist()
                if name.endswith(".class")
            )

    missing = [f"{t.name}: {t.main_class}" for t in KAFKA_TOOLS if t.main_class not in classes]
    assert missing == []


def test_consumer_groups_and_topics_answer_about_the_session_broker(
    kafka: EmbeddedKafka, tmp_path: Path
) -> None:
    group, topic = unique_name("tool-group"), unique_name("tool-topic")
    commit_offsets(kafka.bootstrap_servers, group, topic, {0: 0, 1: 0, 2: 0})
    # An empty state dir: with --bootstrap-server given, no local broker is looked for.
    env = {"KSMON_STATE_DIR": str(tmp_path / "state")}

    groups = run_cli(
        "kafka", "tool", "consumer-groups", "--bootstrap-server", kafka.bootstrap_servers,
        "--list", env=env,
    )  # fmt: skip
    described = run_cli(
        "kafka", "tool", "topics", "--bootstrap-server", kafka.bootstrap_servers,
        "--describe", "--topic", topic, env=env,
    )  # fmt: skip

    assert groups.returncode == 0, groups.stderr
    assert group in groups.stdout.split()
    assert groups.stderr == ""
    assert described.returncode == 0, described.stderr
    head, *partitions = described.stdout.strip().splitlines()
    assert f"Topic: {topic}\t" in head
    assert "PartitionCount: 3\t" in head
    assert "ReplicationFactor: 1\t" in head
    assert [line.split("\t")[2] for line in partitions] == [
        "Partition: 0",
        "Partition: 1",
        "Partition: 2",
    ]


def test_the_tools_exit_code_is_ksmons(kafka: EmbeddedKafka, tmp_path: Path) -> None:
    missing = unique_name("no-such-topic")

    result = run_cli(
        "kafka", "tool", "topics", "--bootstrap-server", kafka.bootstrap_servers,
        "--describe", "--topic", missing, env={"KSMON_STATE_DIR": str(tmp_path / "state")},
    )  # fmt: skip

    assert result.returncode == 1
    assert f"Topic '{missing}' does not exist" in result.stderr


def test_start_status_tool_stop_find_a_broker_started_with_its_own_data_dir(
    kafka_distribution: KafkaDistribution, tmp_path: Path
) -> None:
    """Issue 25: `ksmon kafka status` without --data-dir said "Kafka is not running"
    while a broker started with --data-dir was up."""
    env = {"KSMON_STATE_DIR": str(tmp_path / "state")}
    data_dir = tmp_path.resolve() / "cli-broker"  # as ksmon prints it

    started = run_cli("kafka", "start", "--data-dir", str(data_dir), env=env)
    assert started.returncode == 0, started.stderr
    assert "is running at 127.0.0.1:" in started.stdout
    run = json.loads((data_dir / "run.json").read_text())
    pid, address = run["pid"], run["bootstrap_servers"]
    try:
        status = run_cli("kafka", "status", "--data-dir", str(data_dir), env=env)
        assert status.returncode == 0
        assert "answering" in status.stdout

        found = run_cli("kafka", "status", env=env)
        assert found.returncode == 0, found.stdout
        assert found.stdout.startswith(f"Kafka 4.3.1 is running at {address} (pid {pid}, ")
        assert f"data dir: {data_dir};" in found.stdout

        again = run_cli("kafka", "start", "--data-dir", str(data_dir), env=env)
        assert again.returncode == 0, "starting a running broker is not an error"
        assert json.loads((data_dir / "run.json").read_text())["pid"] == pid

        topic = unique_name("via-local-broker")
        created = run_cli("kafka", "tool", "topics", "--create", "--topic", topic, env=env)
        assert created.returncode == 0, created.stderr
        assert created.stdout.strip() == f"Created topic {topic}."
        assert f"using the local broker at {address}" in created.stderr
    finally:
        stopped = run_cli("kafka", "stop", env=env)
        if pid_alive(pid):  # a detached broker outlives the test run: never leave one
            run_cli("kafka", "stop", "--data-dir", str(data_dir), env=env)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.strip() == f"Kafka stopped (it ran at {address}, data dir {data_dir})"
    assert not pid_alive(pid)
    assert not list((tmp_path / "state" / "brokers").iterdir())
    after = run_cli("kafka", "status", env=env)
    assert after.returncode == 1
    assert after.stdout.startswith("Kafka is not running (looked in the default data dir ")
