"""The live scenario the end-to-end tests look at.

Real components only: the session's Kafka broker, three Kafka Streams fixture
apps, the real agent (``python -m agent agent``), a sidecar agent, the real
aggregation job (``AggregationJob`` on the session's Spark) and a real
Prometheus that scrapes all three every second and evaluates the shipped rule
files every second. The rules are the real ones, with every ``for:`` divided
by 60 (5m -> 5s, see ``rules_with_shorter_for``) so an alert goes from pending
to firing within the test's patience; expressions and windows are untouched.
The job's detector windows are short (``JOB_DETECTORS``) for the same reason.

Faults, none disturbing other tests on the shared broker:

- the ``faulty`` app consumes, commits, then stops while records keep
  arriving: no live consumers and growing lag (KafkaStreamsNoLiveConsumers,
  from the agent's metrics and from the job's finding);
- the ``drill`` app (the one the application dashboard is rendered for) has
  two hot keys on two input partitions whose tasks (source and repartition)
  one stream thread holds (KafkaStreamsHotPartitionsColocated, from the job's
  finding), and restores its count store slowly from the start, which the
  sidecar next to it sees (the job's restore remaining/rate/estimated time);
  its stateless sub-topology processes and commits meanwhile;
- the agent also watches a cluster named ``unreachable`` whose bootstrap
  address has no broker: its polls fail (KsmonKafkaDown).

The ``healthy`` app runs under steady load throughout and must raise nothing.
The agent and the sidecar ship their snapshots to one topic, which the job
reads from its start, as in a deployment. The job's /metrics is scraped from
the beginning; its query starts once the agent's view shows the faults, so its
first micro-batch (minutes long on a busy machine) finds them all.
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
from typing import TYPE_CHECKING

from prometheus_client.parser import text_string_to_metric_families

from agent.config import Config
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import KeyedLoad, KeySkew, key_for_partition
from agent.embedded.ports import LOOPBACK, free_port
from agent.embedded.process import JvmProcess, wait_until
from agent.embedded.streams_app import StreamsAppBuild, StreamsAppConfig, StreamsAppInstance
from agent.embedded.topics import create_topics
from tests.support.aggregation import job_config
from tests.support.prometheus import RULE_FILES, PrometheusServer, rules_with_shorter_for
from tests.support.streams import StreamsApps, unique_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[2]
FOR_DIVISOR = 60
UNREACHABLE_CLUSTER = "unreachable"
LOCAL_CLUSTER = "local"
AGENT_JOB = "ksmon-agent"
SIDECAR_JOB = "ksmon-sidecar"
AGGREGATION_JOB = "ksmon-aggregation"

# The job's windows (defaults in docs/reference-config.yaml), shortened like the rules'
# ``for:``: rates over 10 s, an empty group judged after 10 s. Not thread_history: a
# group empty for longer than that is "abandoned" and its no_live_consumers finding
# closes, and the module must see it open until its last test.
JOB_DETECTORS: dict[str, object] = {
    "evaluation_window": "10s",
    "thread_death_grace": "10s",
    "thread_history": "30m",
    "loop_window": "60s",
}
# The agents poll every 2 s: each poll of a group is a snapshot the job evaluates.
POLL = "{offsets_interval: 2s, metadata_interval: 6s, request_timeout: 5s}"

# The drill app: with two hot partitions out of eight, the median partition stays cold.
DRILL_PARTITIONS = 8
DRILL_THREADS = 2
DRILL_RATE = 100.0
HOT_SHARE = 0.4  # of DRILL_RATE, for each of the two hot keys
# Records of state the drill app restores when it starts (one record per batch) ...
RESTORE_RECORDS = 300
# ... slowly: each fetch of a restore consumer (one per stream thread) returns one record
# batch (a batch is returned whole, however small max.partition.fetch.bytes is) after
# waiting fetch.max.wait.ms for a fetch.min.bytes that never comes. About 0.4 records/s
# (measured): the restore outlasts the module, so the job's first micro-batch (minutes,
# on a cold and busy machine) and every later one see it in progress.
SLOW_RESTORE = {
    "restore.consumer.max.partition.fetch.bytes": "1",
    "restore.consumer.fetch.min.bytes": "100000000",
    "restore.consumer.fetch.max.wait.ms": "5000",
}
# A finding of the job takes a micro-batch or two after its cause (each a minute or more
# on a busy machine, several the first time in a cold Spark): waits are this patient.
ALERT_TIMEOUT = 600.0


@dataclass
class Scenario:
    prometheus: PrometheusServer
    healthy_app: str
    faulty_app: str
    drill_app: str
    started_at: float
    job_config: Config
    # Prometheus job name -> host:port of every ksmon component scraped.
    targets: dict[str, str] = field(default_factory=dict)
    # The drill app's member holding both hot partitions: process id, thread index.
    hot_member: tuple[str, str] = ("", "")

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


def _kafka_sink(topic: str) -> str:
    return f"{{type: kafka, kafka: {{cluster: {LOCAL_CLUSTER}, topic: {topic}, partitions: 1}}}}"


def _agent_config(
    path: Path, kafka: EmbeddedKafka, port: int, groups: list[str], snapshot_topic: str
) -> None:
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
                poll: {POLL}
              - name: {UNREACHABLE_CLUSTER}
                bootstrap_servers: ["{nowhere}"]
                poll: {{offsets_interval: 2s, metadata_interval: 10s, request_timeout: 2s}}
            sink: {_kafka_sink(snapshot_topic)}
            """
        )
    )


def _sidecar_config(
    path: Path,
    kafka: EmbeddedKafka,
    port: int,
    app: StreamsAppInstance,
    snapshot_topic: str,
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
                poll: {POLL}
            sidecar:
              application_id: {app.config.application_id}
              app_metrics_url: "{app.metrics_url}"
              state_dir: "{app.state_dir}"
              expected_stream_threads: {app.config.threads}
            sink: {_kafka_sink(snapshot_topic)}
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


# The alerts the scenario's faults raise, by a name for test ids.
FAULTS = ("no-live-consumers", "no-live-consumers-job", "kafka-down", "hot-partitions")


def injected_faults(scenario: Scenario) -> dict[str, tuple[str, dict[str, str]]]:
    """The alerts the scenario's faults must raise, with the labels that name the subject."""
    faulty = {"kafka_cluster": LOCAL_CLUSTER, "group": scenario.faulty_app}
    process, thread = scenario.hot_member
    return {
        "no-live-consumers": ("KafkaStreamsNoLiveConsumers", {**faulty, "source": "agent"}),
        "no-live-consumers-job": (
            "KafkaStreamsNoLiveConsumers",
            {**faulty, "source": "aggregation-job"},
        ),
        "kafka-down": ("KsmonKafkaDown", {"kafka_cluster": UNREACHABLE_CLUSTER, "job": AGENT_JOB}),
        "hot-partitions": (
            "KafkaStreamsHotPartitionsColocated",
            {
                "kafka_cluster": LOCAL_CLUSTER,
                "group": scenario.drill_app,
                "process": process,
                "thread": thread,
            },
        ),
    }


def _fill_changelog_in_small_batches(kafka: EmbeddedKafka, topic: str, records: int) -> None:
    """A count store's changelog, written before its app first starts: the app restores it.
    One record per batch, so the throttled restore consumer gets one record per fetch.
    Keys ``t<n>`` never come in the load, so these counts are never read."""
    from kafka import KafkaProducer  # noqa: PLC0415 - slow import

    producer = KafkaProducer(
        bootstrap_servers=kafka.bootstrap_servers,
        batch_size=1,
        linger_ms=0,
        client_id="ksmon-e2e-changelog",
    )
    try:
        futures = [
            producer.send(
                topic,
                key=f"t{n}".encode(),
                value=(1).to_bytes(8, "big"),  # a count of 1, as Serdes.Long writes it
                partition=n % DRILL_PARTITIONS,
            )
            for n in range(records)
        ]
        producer.flush(timeout=60)
        for future in futures:
            future.get(timeout=30)
    finally:
        producer.close(timeout=10)


def _drill_app(kafka: EmbeddedKafka, name: str) -> StreamsAppConfig:
    """The app the application dashboard shows: groupBy + count (sub-topology 0 reads the
    input, 1 the repartition topic and restores the count store), its changelog full
    before it first starts."""
    config = StreamsAppConfig(
        name,
        input_topic=f"{name}-in",
        output_topic=f"{name}-out",
        threads=DRILL_THREADS,
        streams_config=SLOW_RESTORE,
    )
    changelog = f"{name}-counts-changelog"
    create_topics(kafka.bootstrap_servers, {config.input_topic: DRILL_PARTITIONS})
    create_topics(
        kafka.bootstrap_servers,
        {changelog: DRILL_PARTITIONS},
        configs={changelog: {"cleanup.policy": "compact"}},
    )
    _fill_changelog_in_small_batches(kafka, changelog, RESTORE_RECORDS)
    return config


def _hot_member(prometheus: PrometheusServer, group: str) -> tuple[str, str, list[int]]:
    """A stream thread of ``group`` holding both tasks (``0_p`` reads input partition p,
    ``1_p`` repartition partition p) of two partitions, from the agent's view of the
    group's assignment in Prometheus: (process, thread, the two partitions)."""
    found: list[tuple[str, str, list[int]]] = []

    def assigned() -> bool:
        held: dict[tuple[str, str], set[str]] = {}
        expr = f'ksmon_streams_task_assignment_info{{group="{group}", kind="active"}}'
        for series in prometheus.query(expr):
            labels = series["metric"]
            if not {"process", "thread"} <= labels.keys():
                # A member not decoded yet (Prometheus drops empty labels): not settled.
                return False
            held.setdefault((labels["process"], labels["thread"]), set()).add(labels["task"])
        if sum(len(tasks) for tasks in held.values()) < 2 * DRILL_PARTITIONS:
            return False  # not the whole assignment yet
        for (process, thread), tasks in sorted(held.items()):
            both = [p for p in range(DRILL_PARTITIONS) if {f"0_{p}", f"1_{p}"} <= tasks]
            if len(both) >= 2:
                found.append((process, thread, both[:2]))
                return True
        raise AssertionError(
            f"no stream thread of {group} holds both tasks of two partitions: {held}"
        )

    wait_until(assigned, timeout=120, what=f"the assignment of {group} in Prometheus")
    return found[0]


def _seen(prometheus: PrometheusServer, expr: str) -> bool:
    """Whether ``expr`` had a sample at any time in the last 30 minutes."""
    return bool(prometheus.query(f"count_over_time(({expr})[30m:1s])"))


def _rule_files(work_dir: Path) -> list[Path]:
    """The shipped rule files with shorter ``for:``."""
    rules_dir = work_dir / "rules"
    rules_dir.mkdir()
    copies = []
    for path in RULE_FILES:
        copy = rules_dir / path.name
        copy.write_text(rules_with_shorter_for(path, FOR_DIVISOR))
        copies.append(copy)
    return copies


def _inject_faults(
    scenario: Scenario,
    kafka: EmbeddedKafka,
    stack: ExitStack,
    faulty_instance: StreamsAppInstance,
    drill_input: str,
) -> None:
    """Start the faults, and wait until the agent's view (in Prometheus) holds what the
    job's detectors need to see them: hot traffic for more than an evaluation window, a
    group empty for longer than the grace period."""
    prometheus = scenario.prometheus
    # Two hot keys on two partitions whose tasks one stream thread of the drill app holds.
    process, thread, partitions = _hot_member(prometheus, scenario.drill_app)
    scenario.hot_member = (process, thread)
    hot_keys = {key_for_partition(p, DRILL_PARTITIONS, prefix="hot"): HOT_SHARE for p in partitions}
    skew = KeySkew(hot_keys, cold_keys=64)
    load = KeyedLoad(kafka.bootstrap_servers, drill_input, rate=DRILL_RATE, skew=skew).start()
    stack.callback(load.stop)

    # The faulty app must have committed before it stops, or it has no lag to grow.
    committed = f'ksmon_partition_committed_offset{{group="{scenario.faulty_app}"}} > 0'
    wait_until(
        lambda: bool(prometheus.query(committed)),
        timeout=90,
        what=f"committed offsets of {scenario.faulty_app} in Prometheus",
    )
    faulty_instance.stop()

    # max by: the agent and the sidecar (next to the drill app) both report these.
    hot = "|".join(str(p) for p in partitions)
    hot_for_a_while = (
        "max by (partition) (min_over_time(rate(ksmon_partition_log_end_offset{"
        f'topic="{drill_input}", partition=~"{hot}"}}[10s])[20s:2s])) '
        f"> {HOT_SHARE * DRILL_RATE / 2}"
    )
    empty_for_a_while = (
        f'max by (group) (max_over_time(ksmon_group_members{{group="{scenario.faulty_app}"}}'
        "[20s])) == 0"
    )
    for expr, series, what in (
        (hot_for_a_while, len(partitions), "both hot partitions busy for 20 s"),
        (empty_for_a_while, 1, f"{scenario.faulty_app} empty for 20 s"),
    ):
        wait_until(
            partial(_has_series, prometheus, expr, series),
            timeout=120,
            what=f"{what} in Prometheus",
            interval=1.0,
        )


def _has_series(prometheus: PrometheusServer, expr: str, count: int) -> bool:
    return len(prometheus.query(expr)) == count


def _wait_for_the_outcome(scenario: Scenario) -> None:
    prometheus = scenario.prometheus
    for alertname, labels in injected_faults(scenario).values():
        wait_until(
            partial(_is_firing, prometheus, alertname, labels),
            timeout=ALERT_TIMEOUT,
            what=f"{alertname} {labels} to fire in Prometheus",
            interval=1.0,
        )
    # The drill app's restore, as the job estimates it from the sidecar's view.
    restore_eta = (
        f'ksmon_restore_estimated_remaining_seconds{{group="{scenario.drill_app}", '
        'source="sidecar"}'
    )
    wait_until(
        partial(_seen, prometheus, restore_eta),
        timeout=ALERT_TIMEOUT,
        what=f"the job's estimate of {scenario.drill_app}'s restore in Prometheus",
        interval=1.0,
    )


@contextmanager
def running_scenario(
    kafka: EmbeddedKafka,
    build: StreamsAppBuild,
    spark: "SparkSession",
    work_dir: Path,
) -> Iterator[Scenario]:
    from agent.aggregation.job import AggregationJob  # noqa: PLC0415 - Spark

    healthy, faulty, drill = (unique_name(f"e2e-{n}") for n in ("healthy", "faulty", "drill"))
    snapshot_topic = unique_name("ksmon-e2e-snapshots")
    create_topics(kafka.bootstrap_servers, {f"{healthy}-in": 4, f"{faulty}-in": 2})
    drill_config = _drill_app(kafka, drill)
    with ExitStack() as stack:
        apps = StreamsApps(kafka, build, work_dir / "apps")
        stack.callback(apps.stop_all)
        # Every JVM spawns before any is waited for: they boot in parallel.
        (healthy_instance,) = apps.start(
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
        (drill_instance,) = apps.start(drill_config, wait=False)
        agent, agent_port = _start_agent(
            work_dir,
            "agent",
            lambda path, port: _agent_config(
                path, kafka, port, [healthy, faulty, drill], snapshot_topic
            ),
        )
        stack.callback(agent.stop, 20)
        # A sidecar agent next to the drill app's instance, as in its pod.
        sidecar, sidecar_port = _start_agent(
            work_dir,
            "sidecar",
            lambda path, port: _sidecar_config(path, kafka, port, drill_instance, snapshot_topic),
        )
        stack.callback(sidecar.stop, 20)
        # The aggregation job reads what both agents ship.
        config = job_config(
            kafka,
            work_dir,
            findings_topic=unique_name("ksmon-e2e-findings"),
            snapshot_topic=snapshot_topic,
            detectors=JOB_DETECTORS,
            trigger="2s",
        )
        job = AggregationJob(config, spark)
        assert job.server is not None
        job.server.start()  # scraped from the start; its query starts below
        stack.callback(job.stop)

        targets = {
            AGENT_JOB: f"{LOOPBACK}:{agent_port}",
            SIDECAR_JOB: f"{LOOPBACK}:{sidecar_port}",
            AGGREGATION_JOB: f"{LOOPBACK}:{job.server.port}",
        }
        prometheus = PrometheusServer(
            work_dir / "prometheus",
            {name: [t] for name, t in targets.items()},
            _rule_files(work_dir),
        )
        prometheus.start()
        stack.callback(prometheus.stop)
        scenario = Scenario(prometheus, healthy, faulty, drill, time.time(), config, targets)

        for process, port in ((agent, agent_port), (sidecar, sidecar_port)):
            wait_until(
                partial(_kafka_up, port),
                timeout=90,
                what=f"{process.name}'s first successful poll",
                abort=partial(_exited, process),
            )
        for instance in (healthy_instance, faulty_instance):
            instance.wait_until_running()
        # The drill app restores (slowly) while its stateless sub-topology runs.
        drill_instance.wait_for(
            lambda s: s.get("activeRestores", 0) > 0, timeout=90, what="restoring its store"
        )
        for app in (healthy, faulty):
            load = KeyedLoad(kafka.bootstrap_servers, f"{app}-in", rate=20).start()
            stack.callback(load.stop)
        _inject_faults(scenario, kafka, stack, faulty_instance, drill_config.input_topic)
        # The job's query reads the snapshot topic from its start: its first micro-batch
        # evaluates every poll since, faults included. (Started earlier it would need two
        # or three micro-batches, each minutes long on a busy 2-core machine.)
        job.start_query()
        job.latest.started()
        _wait_for_the_outcome(scenario)
        yield scenario
