"""``ksmon demo``: a local Kafka, a Kafka Streams app with a hot key, the agent and the job.

Everything runs on 127.0.0.1 in a temporary directory that is removed on exit.
Every process is a child of ksmon that dies with it (``PR_SET_PDEATHSIG``) and
is stopped in reverse order on Ctrl-C or SIGTERM, so nothing is left running
or listening and a second run starts from scratch.

The trouble in the demo app is real: one key carries most of the traffic, and
Kafka Streams places both tasks that key makes hot on the same instance (see
``hot_key.py``); the aggregation job reports it as ``hot_partitions_colocated``.
"""

import shutil
import sys
import tempfile
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TextIO

from prometheus_client.parser import text_string_to_metric_families

from agent.demo.hot_key import HotKeyPlan, plan_hot_key
from agent.embedded.kafka import EmbeddedKafka, fetch_kafka
from agent.embedded.load import KeyedLoad, KeySkew
from agent.embedded.ports import LOOPBACK, free_port, is_listening
from agent.embedded.process import JvmProcess, wait_until
from agent.embedded.streams_app import (
    StreamsAppBuild,
    StreamsAppConfig,
    StreamsAppInstance,
    build_streams_app,
)
from agent.embedded.topics import create_topics
from agent.errors import SetupError

APP = "ksmon-demo-orders"
INPUT_TOPIC = f"{APP}-input"
PARTITIONS = 6
INSTANCES = 2
RECORDS_PER_SECOND = 200.0
HOT_SHARE = 0.8
AGENT_PORT = 8479
JOB_PORT = 8480
REFRESH_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class ActiveFinding:
    kind: str
    severity: str
    subject: str
    since: float | None


def run_demo(out: TextIO = sys.stdout, work_dir: Path | None = None) -> None:
    """Run the demo until interrupted (KeyboardInterrupt); everything stops on the way out."""
    owned = work_dir is None
    work = Path(tempfile.mkdtemp(prefix="ksmon-demo-")) if work_dir is None else work_dir
    try:
        with ExitStack() as stack:
            _Demo(work, out, stack).run()
    finally:
        if owned:
            shutil.rmtree(work, ignore_errors=True)


class _Demo:
    def __init__(self, work: Path, out: TextIO, stack: ExitStack) -> None:
        self.work = work
        self.out = out
        self.stack = stack
        self.step = 0

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def stage(self, text: str) -> None:
        self.step += 1
        self.say(f"[{self.step}/5] {text}")

    def run(self) -> None:
        self.say(
            "ksmon demo: a local Kafka, a Kafka Streams app with a hot key, the ksmon agent "
            "and the aggregation job, all on 127.0.0.1. Ctrl-C stops everything."
        )
        self.stage(
            "Apache Kafka, the demo app and Spark's Kafka source "
            "(fetched from Maven Central on first run)"
        )
        kafka = EmbeddedKafka(fetch_kafka(), self.work / "kafka")
        kafka.launch()
        self.stack.callback(kafka.stop)
        config = self.work / "ksmon.yaml"
        agent_port, job_port = _port_or_free(AGENT_PORT), _port_or_free(JOB_PORT)
        config.write_text(_config(kafka.bootstrap_servers, agent_port, job_port, self.work))
        # The job first: its Spark JVM (which fetches Spark's Kafka source on first run) and
        # its plan take longest to start, need neither broker nor app, and it reaches the
        # broker only after both. The app builds meanwhile, while the broker boots.
        job = self._child("aggregate", ["aggregate", "--config", str(config)])
        build = build_streams_app(kafka_version=kafka.distribution.version)
        kafka.wait_ready()
        self.stage(f"Kafka {kafka.distribution.version} broker on {kafka.bootstrap_servers}")

        instances, plan = self._start_app(kafka, build_dir=self.work / "app", build=build)
        self.stage(
            f"demo app {APP}: {INSTANCES} instances; hot key {plan.key!r} -> partition "
            f"{plan.partition}, so tasks {' and '.join(plan.tasks)} are both hot and both on "
            f"instance {plan.instance}"
        )
        load = KeyedLoad(
            kafka.bootstrap_servers,
            INPUT_TOPIC,
            rate=RECORDS_PER_SECOND,
            skew=KeySkew({plan.key: HOT_SHARE}),
        ).start()
        self.stack.callback(load.stop)
        self.say(
            f"      load: {RECORDS_PER_SECOND:.0f} records/s, {HOT_SHARE:.0%} of them with key "
            f"{plan.key!r}"
        )

        agent = self._child("agent", ["agent", "--config", str(config)])
        self.stage(f"ksmon agent: metrics on http://{LOOPBACK}:{agent_port}/metrics")
        self.stage(
            f"aggregation job (Spark local[*]): metrics on http://{LOOPBACK}:{job_port}/metrics"
        )
        for process, port in ((agent, agent_port), (job, job_port)):
            wait_until(
                partial(is_listening, port),
                timeout=180,
                what=f"{process.name} to serve its metrics",
                abort=partial(_exited, process),
            )
        self.say(
            "\nFindings (the aggregation job's, refreshed every "
            f"{REFRESH_SECONDS:.0f} s; the first ones need about a minute of traffic):"
        )
        self._watch(job_port, [agent, job, *(i.process for i in instances), kafka.process])

    def _start_app(
        self, kafka: EmbeddedKafka, build_dir: Path, build: StreamsAppBuild
    ) -> tuple[list[StreamsAppInstance], HotKeyPlan]:
        create_topics(kafka.bootstrap_servers, {INPUT_TOPIC: PARTITIONS})
        config = StreamsAppConfig(
            application_id=APP, input_topic=INPUT_TOPIC, output_topic=f"{APP}-counts"
        )
        instances = [
            StreamsAppInstance(
                build,
                kafka.bootstrap_servers,
                config,
                f"{APP}-{n}",
                build_dir / f"instance-{n}",
            )
            for n in range(INSTANCES)
        ]
        for instance in instances:
            instance.start()
            self.stack.callback(instance.stop)
        for instance in instances:
            instance.wait_until_running(timeout=120)
        plan = _plan_from(instances)
        if plan is None:
            raise SetupError(
                "the demo app's assignment puts no hot key's two tasks on one instance; "
                "run ksmon demo again"
            )
        return instances, plan

    def _child(self, name: str, args: list[str]) -> JvmProcess:
        process = JvmProcess(
            f"ksmon {name}",
            [sys.executable, "-m", "agent", *args],
            self.work / "logs" / f"{name}.log",
        )
        process.start()
        self.stack.callback(process.stop, 30)
        return process

    def _watch(self, job_port: int, processes: list[JvmProcess]) -> None:
        shown: tuple[ActiveFinding, ...] | None = None
        while True:
            for process in processes:
                if not process.alive:
                    raise SetupError(
                        f"{process.name} exited unexpectedly; its log ends:\n{process.log_tail()}"
                    )
            findings = tuple(active_findings(job_port))
            if findings != shown:
                self.say(f"  {time.strftime('%H:%M:%S')}  {len(findings)} active")
                for f in findings:
                    self.say(f"    {f.severity.upper():8} {f.kind}: {f.subject}")
                shown = findings
            time.sleep(REFRESH_SECONDS)


def active_findings(job_port: int) -> Iterator[ActiveFinding]:
    """The job's open findings, read from its /metrics (nothing while it does not answer)."""
    try:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{job_port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return
    since: dict[tuple[tuple[str, str], ...], float] = {}
    active = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = tuple(sorted(sample.labels.items()))
            if sample.name == "ksmon_finding_since_timestamp_seconds":
                since[key] = sample.value
            elif sample.name == "ksmon_finding_active" and sample.value == 1:
                active.append((key, sample.labels))
    for key, labels in sorted(active):
        yield ActiveFinding(labels["kind"], labels["severity"], _subject(labels), since.get(key))


def _subject(labels: dict[str, str]) -> str:
    parts = [f"group {labels.get('group', '?')}"]
    if labels.get("process"):
        parts.append(f"instance {labels['process']}")
    if labels.get("thread"):
        parts.append(f"thread {labels['thread']}")
    if labels.get("task"):
        parts.append(f"task {labels['task']}")
    if labels.get("topic"):
        parts.append(f"partition {labels['topic']}-{labels.get('partition', '?')}")
    return ", ".join(parts)


def _plan_from(instances: list[StreamsAppInstance]) -> HotKeyPlan | None:
    held: dict[str, set[str]] = {}
    for instance in instances:
        state = instance.oracle() or {}
        held[str(state.get("processId"))] = {
            task["taskId"] for thread in state.get("threads", ()) for task in thread["activeTasks"]
        }
    return plan_hot_key(held, PARTITIONS)


def _port_or_free(preferred: int) -> int:
    return free_port() if is_listening(preferred) else preferred


def _exited(process: JvmProcess) -> str | None:
    return None if process.alive else f"{process.name} exited: {process.log_tail()}"


def _config(bootstrap: str, agent_port: int, job_port: int, work: Path) -> str:
    return textwrap.dedent(
        f"""\
        # Written by `ksmon demo`; short intervals so findings show within a minute.
        agent: {{id: ksmon-demo}}
        http: {{listen: "{LOOPBACK}:{agent_port}"}}
        logging: {{format: text, level: warning}}
        clusters:
          - name: demo
            bootstrap_servers: ["{bootstrap}"]
            groups: {{allow: ["{APP}"]}}
            poll: {{offsets_interval: 2s, metadata_interval: 10s}}
        sink:
          type: kafka
          kafka: {{topic: ksmon.snapshots, partitions: 1, replication_factor: 1}}
        aggregation:
          listen: "{LOOPBACK}:{job_port}"
          checkpoint_dir: "{work / "checkpoint"}"
          trigger_interval: 5s
          # A new broker each run: every snapshot since the agent's first poll counts.
          input: {{type: kafka, kafka: {{starting_offsets: earliest}}}}
          detectors: {{evaluation_window: 30s}}
        """
    )


__all__ = ["ActiveFinding", "active_findings", "run_demo"]
