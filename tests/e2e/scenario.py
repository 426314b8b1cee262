"""The live scenario the end-to-end tests look at.

Real components only: the session's Kafka broker, two Kafka Streams fixture
apps, the real agent (``python -m agent agent``) and a real Prometheus that
scrapes the agent every second and evaluates the shipped rule files every
second. The rules are the real ones, with every ``for:`` divided by 60
(5m -> 5s, see ``rules_with_shorter_for``) so an alert goes from pending to
firing within the test's patience; expressions and windows are untouched.

Two faults are injected, neither disturbing other tests on the shared broker:

- the ``faulty`` app consumes, commits, then stops while records keep
  arriving: no live consumers and growing lag (KafkaStreamsNoLiveConsumers);
- the agent also watches a cluster named ``unreachable`` whose bootstrap
  address has no broker: its polls fail (KsmonKafkaDown).

The ``healthy`` app runs under steady load throughout; the application
dashboard is rendered for it.

A sidecar agent (``agent.mode: sidecar``) runs next to the healthy app's
instance and is scraped as ``ksmon-sidecar``. Components on their way (see
``tests/support/metric_sources.py``): when the aggregation job lands, start it
here and add its scrape target to ``targets`` as ``ksmon-aggregation``.
"""

import sys
import textwrap
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import KeyedLoad
from agent.embedded.ports import LOOPBACK, free_port
from agent.embedded.process import JvmProcess, wait_until
from agent.embedded.streams_app import StreamsAppBuild, StreamsAppConfig, StreamsAppInstance
from agent.embedded.topics import create_topics
from tests.support.prometheus import RULE_FILES, PrometheusServer, rules_with_shorter_for
from tests.support.streams import StreamsApps, unique_name

ROOT = Path(__file__).resolve().parents[2]
FOR_DIVISOR = 60
UNREACHABLE_CLUSTER = "unreachable"
LOCAL_CLUSTER = "local"
AGENT_JOB = "ksmon-agent"
SIDECAR_JOB = "ksmon-sidecar"


@dataclass
class Scenario:
    prometheus: PrometheusServer
    healthy_app: str
    faulty_app: str
    started_at: float
    # Prometheus job name -> host:port of every ksmon component scraped.
    targets: dict[str, str] = field(default_factory=dict)

    def target(self, job: str) -> str:
        if job not in self.targets:
            raise AssertionError(
                f"the e2e scenario starts no {job}: start it in tests/e2e/scenario.py and add "
                "its scrape target"
            )
        return self.targets[job]

    def metrics_text(self, job: str) -> str:
        with urllib.request.urlopen(f"http://{self.target(job)}/metrics", timeout=10) as r:
            return str(r.read().decode())


def _agent_config(path: Path, kafka: EmbeddedKafka, port: int, groups: list[str]) -> None:
    nowhere = f"{LOOPBACK}:{free_port()}"
    allow = ", ".join(f'"{g}"' for g in groups)
    path.write_text(
        textwrap.dedent(
            f"""\
            agent: {{id: e2e-agent}}
            http: {{listen: "{LOOPBACK}:{port}"}}
            logging: {{format: json, level: info}}
            clusters:
              - name: {LOCAL_CLUSTER}
                bootstrap_servers: ["{kafka.bootstrap_servers}"]
                groups: {{allow: [{allow}]}}
                poll: {{offsets_interval: 1s, metadata_interval: 5s, request_timeout: 5s}}
              - name: {UNREACHABLE_CLUSTER}
                bootstrap_servers: ["{nowhere}"]
                poll: {{offsets_interval: 2s, metadata_interval: 10s, request_timeout: 2s}}
            sink:
              type: kafka
              kafka:
                cluster: {LOCAL_CLUSTER}
                topic: {unique_name("ksmon-e2e-snapshots")}
                partitions: 1
                replication_factor: 1
            """
        )
    )


def _sidecar_config(
    path: Path, kafka: EmbeddedKafka, port: int, app: StreamsAppInstance, threads: int
) -> None:
    path.write_text(
        textwrap.dedent(
            f"""\
            agent: {{id: e2e-sidecar, mode: sidecar}}
            http: {{listen: "{LOOPBACK}:{port}"}}
            logging: {{format: json, level: info}}
            clusters:
              - name: {LOCAL_CLUSTER}
                bootstrap_servers: ["{kafka.bootstrap_servers}"]
                poll: {{offsets_interval: 1s, metadata_interval: 5s, request_timeout: 5s}}
            sidecar:
              application_id: {app.config.application_id}
              app_metrics_url: "{app.metrics_url}"
              state_dir: "{app.state_dir}"
              expected_stream_threads: {threads}
            sink: {{type: none}}
            """
        )
    )


def _kafka_up(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{port}/metrics", timeout=2) as r:
            text = r.read().decode()
    except OSError:
        return False
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "ksmon_kafka_up" and sample.labels == {"kafka_cluster": "local"}:
                return sample.value == 1.0
    return False


def _start_agent(
    work_dir: Path, name: str, write_config: Callable[[Path, int], None]
) -> tuple[JvmProcess, int]:
    port = free_port()
    config = work_dir / f"{name}.yaml"
    write_config(config, port)
    agent = JvmProcess(
        f"ksmon {name}",
        [sys.executable, "-m", "agent", "agent", "--config", str(config)],
        work_dir / f"{name}.log",
        cwd=ROOT,
    )
    agent.start()
    return agent, port


def _exited(process: JvmProcess) -> str | None:
    return None if process.alive else f"{process.name} exited: {process.log_tail()}"


def _is_firing(prometheus: PrometheusServer, alertname: str, labels: dict[str, str]) -> bool:
    return any(
        alert["state"] == "firing"
        and alert["labels"].get("alertname") == alertname
        and all(alert["labels"].get(k) == v for k, v in labels.items())
        for alert in prometheus.alerts()
    )


def injected_faults(scenario: Scenario) -> list[tuple[str, dict[str, str]]]:
    """The alerts the scenario's faults must raise, with the labels that name the subject."""
    return [
        (
            "KafkaStreamsNoLiveConsumers",
            {"kafka_cluster": LOCAL_CLUSTER, "group": scenario.faulty_app, "source": "agent"},
        ),
        ("KsmonKafkaDown", {"kafka_cluster": UNREACHABLE_CLUSTER, "job": AGENT_JOB}),
    ]


@contextmanager
def running_scenario(
    kafka: EmbeddedKafka, build: StreamsAppBuild, work_dir: Path
) -> Iterator[Scenario]:
    healthy, faulty = unique_name("e2e-healthy"), unique_name("e2e-faulty")
    create_topics(kafka.bootstrap_servers, {f"{healthy}-in": 4, f"{faulty}-in": 2})
    with ExitStack() as stack:
        apps = StreamsApps(kafka, build, work_dir / "apps")
        stack.callback(apps.stop_all)
        # Every JVM spawns before any is waited for: they boot in parallel.
        started = apps.start(
            StreamsAppConfig(
                healthy, input_topic=f"{healthy}-in", output_topic=f"{healthy}-out", threads=2
            ),
            wait=False,
        )
        (faulty_instance,) = apps.start(
            StreamsAppConfig(
                faulty,
                input_topic=f"{faulty}-in",
                output_topic=f"{faulty}-out",
                # Streams never sends LeaveGroup on close: with the broker's minimum
                # session timeout the stopped member is gone in seconds, not 45.
                streams_config={"session.timeout.ms": "6000", "heartbeat.interval.ms": "1500"},
            ),
            wait=False,
        )
        agent, agent_port = _start_agent(
            work_dir,
            "agent",
            lambda path, port: _agent_config(path, kafka, port, [healthy, faulty]),
        )
        stack.callback(agent.stop, 20)
        # A sidecar agent next to the healthy app's instance, as in its pod.
        (healthy_instance,) = started
        sidecar, sidecar_port = _start_agent(
            work_dir,
            "sidecar",
            lambda path, port: _sidecar_config(
                path, kafka, port, healthy_instance, healthy_instance.config.threads
            ),
        )
        stack.callback(sidecar.stop, 20)

        rules_dir = work_dir / "rules"
        rules_dir.mkdir()
        rule_files = []
        for path in RULE_FILES:
            copy = rules_dir / path.name
            copy.write_text(rules_with_shorter_for(path, FOR_DIVISOR))
            rule_files.append(copy)
        targets = {
            AGENT_JOB: f"{LOOPBACK}:{agent_port}",
            SIDECAR_JOB: f"{LOOPBACK}:{sidecar_port}",
        }
        prometheus = PrometheusServer(
            work_dir / "prometheus", {job: [t] for job, t in targets.items()}, rule_files
        )
        prometheus.start()
        stack.callback(prometheus.stop)
        scenario = Scenario(prometheus, healthy, faulty, time.time(), targets)

        for process, port in ((agent, agent_port), (sidecar, sidecar_port)):
            wait_until(
                partial(_kafka_up, port),
                timeout=90,
                what=f"{process.name}'s first successful poll",
                abort=partial(_exited, process),
            )
        for instance in [*started, faulty_instance]:
            instance.wait_until_running()
        for app in (healthy, faulty):
            load = KeyedLoad(kafka.bootstrap_servers, f"{app}-in", rate=20).start()
            stack.callback(load.stop)

        # The faulty app must have committed before it stops, or it has no lag to grow.
        committed = f'ksmon_partition_committed_offset{{group="{faulty}"}} > 0'
        wait_until(
            lambda: bool(prometheus.query(committed)),
            timeout=90,
            what=f"committed offsets of {faulty} in Prometheus",
        )
        faulty_instance.stop()
        for alertname, labels in injected_faults(scenario):
            wait_until(
                partial(_is_firing, prometheus, alertname, labels),
                timeout=180,
                what=f"{alertname} {labels} to fire in Prometheus",
                interval=1.0,
            )
        yield scenario
