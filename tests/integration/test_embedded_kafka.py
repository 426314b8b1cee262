"""The embedded broker is a real Apache Kafka from Maven Central, it starts and
stops cleanly, and every way it can fail says what is wrong."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient

from agent.embedded.cache import cache_dir
from agent.embedded.kafka import KAFKA_VERSION, EmbeddedKafka, KafkaDistribution, fetch_kafka
from agent.embedded.process import wait_until
from agent.embedded.topics import create_topics
from agent.errors import SetupError, UnreachableError
from tests.support.streams import unique_name

pytestmark = pytest.mark.integration

KSMON = [sys.executable, "-m", "agent"]


def pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


def test_broker_runs_from_the_cached_official_jars(kafka: EmbeddedKafka) -> None:
    libs = kafka.distribution.libs
    assert libs.is_relative_to(cache_dir()), "jars live in the cache, not the repository"
    for artifact in ("kafka_2.13", "kafka-tools", "kafka-streams", "kafka-clients"):
        assert (libs / f"{artifact}-{KAFKA_VERSION}.jar").is_file()
    assert kafka.distribution.classpath in kafka.process.argv

    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        cluster = admin.describe_cluster()
    finally:
        admin.close()
    assert cluster["cluster_id"] == kafka.cluster_id
    assert [(b["host"], b["port"]) for b in cluster["brokers"]] == [("127.0.0.1", kafka.port)]


def test_broker_restart_keeps_its_address_and_its_topics(kafka: EmbeddedKafka) -> None:
    topic = unique_name("survives-restart")
    create_topics(kafka.bootstrap_servers, {topic: 3})
    address, old_pid = kafka.bootstrap_servers, kafka.process.pid
    assert old_pid is not None

    kafka.stop()
    assert not pid_alive(old_pid)
    kafka.start()

    assert kafka.bootstrap_servers == address
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        assert topic in admin.list_topics()
    finally:
        admin.close()


def ksmon(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KSMON, *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


def test_broker_dies_with_a_parent_that_was_killed(tmp_path: Path) -> None:
    """A test runner killed with SIGKILL must not leave a broker JVM behind."""
    pid_file = tmp_path / "broker.pid"
    script = textwrap.dedent(
        f"""
        import pathlib, time
        from agent.embedded.kafka import EmbeddedKafka, fetch_kafka
        kafka = EmbeddedKafka(fetch_kafka(), pathlib.Path({str(tmp_path / "data")!r}))
        kafka.launch()
        pathlib.Path({str(pid_file)!r}).write_text(str(kafka.process.pid))
        time.sleep(600)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        wait_until(pid_file.exists, timeout=60, what="the child to launch a broker")
        broker_pid = int(pid_file.read_text())
        assert pid_alive(broker_pid)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()

    wait_until(lambda: not pid_alive(broker_pid), timeout=30, what="the orphaned broker to die")


def test_port_taken_is_reported_with_the_port(
    kafka_distribution: KafkaDistribution, tmp_path: Path
) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        broker = EmbeddedKafka(kafka_distribution, tmp_path, port=port)

        with pytest.raises(SetupError, match=rf"port {port} on 127.0.0.1 is already in use"):
            broker.start()
    assert not broker.process.alive


def test_unreachable_maven_repository_is_reported_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead_url = f"http://127.0.0.1:{closed.getsockname()[1]}/maven2"
    monkeypatch.setenv("KSMON_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("KSMON_MAVEN_MIRROR", dead_url)

    with pytest.raises(UnreachableError, match=rf"cannot download from {dead_url}") as raised:
        fetch_kafka()

    assert "KSMON_MAVEN_MIRROR" in str(raised.value)
    assert not (tmp_path / "empty-cache" / "kafka" / KAFKA_VERSION / ".complete").exists()


def test_missing_java_is_reported_with_how_to_fix_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))

    with pytest.raises(SetupError, match=r"Java not found: put java 17\+ on PATH"):
        fetch_kafka()


def test_too_old_java_is_reported_with_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_home = tmp_path / "jdk8"
    (fake_home / "bin").mkdir(parents=True)
    java = fake_home / "bin" / "java"
    java.write_text("#!/bin/sh\necho 'java version \"1.8.0_292\"' >&2\n")
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(fake_home))

    with pytest.raises(SetupError, match=r"is Java 8; Kafka 4.x needs Java 17\+"):
        fetch_kafka()


def test_cli_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "nowhere")}

    result = ksmon("kafka", "start", "--data-dir", str(tmp_path / "d"), env=env)

    assert result.returncode == 1
    assert result.stderr.startswith("ksmon: error: JAVA_HOME=")
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
