"""The Kafka Streams fixture app (Java, ``tests/fixtures/streams-app``) as real JVM processes.

Built with Maven against the same Kafka version as the embedded broker, into
the cache directory; each instance runs with the Prometheus JMX exporter java
agent and serves its own view of its threads and tasks as JSON (the oracle).
"""

import hashlib
import json
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent.embedded.cache import cache_dir, ensure_built
from agent.embedded.java import JavaRuntime, find_java
from agent.embedded.kafka import KAFKA_VERSION, resource_path
from agent.embedded.maven import run_maven
from agent.embedded.ports import LOOPBACK, free_port
from agent.embedded.process import JvmProcess, wait_until
from agent.errors import SetupError

FIXTURE_SOURCES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "streams-app"
MAIN_CLASS = "dev.ksmon.fixture.FixtureApp"

# A Kafka Streams 3.x for the fixture app, where a test needs 3.x behaviour: metric
# names without client-state and thread-state, and tasks that keep .checkpoint
# files (4.3 moved RocksDB stores' changelog offsets into the stores, KIP-1035).
KAFKA_STREAMS_3X_VERSION = "3.9.1"

Topology = Literal["count", "join", "windowed"]
OnError = Literal["replace_thread", "shutdown_client", "shutdown_application"]
MetricsExporter = Literal["jmx-exporter", "micrometer"]


@dataclass(frozen=True)
class StreamsAppBuild:
    jar: Path
    lib: Path
    javaagent: Path
    java: JavaRuntime

    @property
    def classpath(self) -> str:
        return f"{self.jar}:{self.lib}/*"


def build_streams_app(
    sources: Path = FIXTURE_SOURCES, kafka_version: str = KAFKA_VERSION
) -> StreamsAppBuild:
    """Compile the fixture app (once per change of its sources) into the cache."""
    if not (sources / "pom.xml").is_file():
        raise SetupError(
            f"the Kafka Streams fixture app is not at {sources}; run ksmon from a checkout "
            "of its repository to use the demo app"
        )
    java = find_java()
    digest = hashlib.sha256(kafka_version.encode())
    for path in sorted(p for p in sources.rglob("*") if p.is_file() and "target" not in p.parts):
        digest.update(str(path.relative_to(sources)).encode())
        digest.update(path.read_bytes())

    def build(scratch: Path) -> None:
        target = scratch / "target"
        run_maven(
            sources / "pom.xml",
            ["package"],
            {"kafka.version": kafka_version, "ksmon.build.dir": str(target)},
            purpose=f"building the Kafka Streams fixture app against Kafka {kafka_version}",
        )
        (target / "streams-fixture.jar").rename(scratch / "streams-fixture.jar")
        (target / "lib").rename(scratch / "lib")
        (target / "agent").rename(scratch / "agent")
        shutil.rmtree(target)

    home = ensure_built(cache_dir() / "streams-app" / digest.hexdigest()[:16], build)
    return StreamsAppBuild(
        jar=home / "streams-fixture.jar",
        lib=home / "lib",
        javaagent=home / "agent" / "jmx_prometheus_javaagent.jar",
        java=java,
    )


@dataclass(frozen=True)
class StreamsAppConfig:
    """One fixture app deployment; every field maps to a switch of the Java app."""

    application_id: str
    topology: Topology = "count"
    input_topic: str = "input"
    table_topic: str = "table"
    output_topic: str = "output"
    threads: int = 1
    standbys: int = 0
    # Advertise ``application.server`` (the instance's oracle address), which
    # puts host maps into every member's assignment.
    application_server: bool = False
    # Static membership: group.instance.id = the instance's name.
    static_membership: bool = False
    processing_delay_ms: int = 0
    # When set, the processing delay applies only while this file exists.
    processing_delay_marker: Path | None = None
    # Records whose key starts with this prefix throw in the processor.
    poison_key_prefix: str | None = None
    on_error: OnError = "replace_thread"
    # State restoration blocks while this file exists.
    restore_marker: Path | None = None
    # RocksDB memtables of this size (SmallMemtables): a store's files grow gradually.
    rocksdb_write_buffer_bytes: int | None = None
    streams_config: Mapping[str, str] = field(default_factory=dict)
    # Jars added to the app's classpath (a task assignor, say).
    extra_classpath: tuple[Path, ...] = ()
    # Who serves the metrics port: the JMX exporter java agent (default naming), or the
    # app itself through Micrometer's KafkaStreamsMetrics on a Prometheus registry.
    metrics: MetricsExporter = "jmx-exporter"


class StreamsAppInstance:
    """One JVM of the fixture app, with its state directory, oracle and metrics ports."""

    def __init__(
        self,
        build: StreamsAppBuild,
        bootstrap_servers: str,
        config: StreamsAppConfig,
        name: str,
        work_dir: Path,
        *,
        heap_mb: int = 256,
        die_with_parent: bool = True,
    ) -> None:
        self.build = build
        self.bootstrap_servers = bootstrap_servers
        self.config = config
        self.name = name
        self.work_dir = work_dir
        self.state_dir = work_dir / "state"
        self.oracle_port = free_port()
        self.metrics_port = free_port()
        self.heap_mb = heap_mb
        self.process = JvmProcess(
            f"streams app {name}",
            self._argv(),
            work_dir / "app.log",
            die_with_parent=die_with_parent,
        )

    @property
    def metrics_url(self) -> str:
        return f"http://{LOOPBACK}:{self.metrics_port}/metrics"

    @property
    def oracle_url(self) -> str:
        return f"http://{LOOPBACK}:{self.oracle_port}/state"

    def start(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.process.start()

    def stop(self, timeout: float = 30.0) -> None:
        self.process.stop(timeout)

    def kill(self) -> None:
        self.process.kill()

    def restart(self, *, wipe_state: bool = False) -> None:
        self.stop()
        if wipe_state:
            shutil.rmtree(self.state_dir, ignore_errors=True)
        self.start()

    def oracle(self) -> dict[str, Any] | None:
        """The app's own view of itself (state, threads, tasks), or None if it does not answer."""
        try:
            with urllib.request.urlopen(self.oracle_url, timeout=2) as response:  # noqa: S310
                state = json.loads(response.read())
        except (OSError, urllib.error.URLError, ValueError):
            return None
        return state if isinstance(state, dict) else None

    def topology_text(self) -> str:
        """``Topology#describe()`` as the app printed it (its oracle's /topology)."""
        url = f"http://{LOOPBACK}:{self.oracle_port}/topology"
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode())

    def metrics_text(self) -> str:
        """The Prometheus text of this JVM's metrics port (JMX exporter or Micrometer)."""
        with urllib.request.urlopen(self.metrics_url, timeout=5) as response:  # noqa: S310
            return str(response.read().decode())

    def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], *, timeout: float, what: str
    ) -> dict[str, Any]:
        """Wait until the oracle's state satisfies ``predicate``; return that state."""
        seen: dict[str, Any] = {}

        def holds() -> bool:
            state = self.oracle()
            if state is None or not predicate(state):
                return False
            seen.update(state)
            return True

        wait_until(holds, timeout=timeout, what=f"{self.name}: {what}", abort=self.died)
        return seen

    def wait_until_running(self, timeout: float = 90.0) -> dict[str, Any]:
        return self.wait_for(
            self._runs_every_thread,
            timeout=timeout,
            what=f"state RUNNING with {self.config.threads} alive stream threads",
        )

    def is_running(self) -> bool:
        """RUNNING with every configured stream thread alive, right now."""
        state = self.oracle()
        return state is not None and self._runs_every_thread(state)

    def _runs_every_thread(self, state: dict[str, Any]) -> bool:
        return state.get("state") == "RUNNING" and state.get("aliveThreads") == self.config.threads

    def died(self) -> str | None:
        """Why the JVM is gone (exit code and its log's last lines), or None while it runs."""
        if self.process.alive:
            return None
        return (
            f"the JVM exited with code {self.process.returncode}; last lines of "
            f"{self.process.log_path}:\n{self.process.log_tail()}"
        )

    def _argv(self) -> list[str]:
        c = self.config
        args = [
            f"--bootstrap={self.bootstrap_servers}",
            f"--application-id={c.application_id}",
            f"--topology={c.topology}",
            f"--input-topic={c.input_topic}",
            f"--table-topic={c.table_topic}",
            f"--output-topic={c.output_topic}",
            f"--threads={c.threads}",
            f"--standbys={c.standbys}",
            f"--state-dir={self.state_dir}",
            f"--oracle-port={self.oracle_port}",
            f"--on-error={c.on_error}",
            f"--processing-delay-ms={c.processing_delay_ms}",
        ]
        if c.application_server:
            args.append(f"--application-server={LOOPBACK}:{self.oracle_port}")
        if c.static_membership:
            args.append(f"--instance-id={self.name}")
        if c.processing_delay_marker is not None:
            args.append(f"--processing-delay-marker={c.processing_delay_marker}")
        if c.poison_key_prefix is not None:
            args.append(f"--poison-key-prefix={c.poison_key_prefix}")
        if c.restore_marker is not None:
            args.append(f"--restore-marker={c.restore_marker}")
        if c.rocksdb_write_buffer_bytes is not None:
            args += [
                "--config=rocksdb.config.setter=dev.ksmon.fixture.SmallMemtables",
                f"--config=fixture.rocksdb.write.buffer.bytes={c.rocksdb_write_buffer_bytes}",
            ]
        args += [f"--config={key}={value}" for key, value in c.streams_config.items()]
        exporter = f"{self.build.javaagent}={LOOPBACK}:{self.metrics_port}:" + str(
            resource_path("jmx-exporter.yaml")
        )
        if c.metrics == "micrometer":
            args += ["--metrics=micrometer", f"--metrics-port={self.metrics_port}"]
        agent = [f"-javaagent:{exporter}"] if c.metrics == "jmx-exporter" else []
        return [
            str(self.build.java.executable),
            f"-Xmx{self.heap_mb}m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            *agent,
            "-cp",
            ":".join([self.build.classpath, *map(str, c.extra_classpath)]),
            MAIN_CLASS,
            *args,
        ]
