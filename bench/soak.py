"""Benchmark: a 30-minute soak of the agent and the job with 200 groups, some always rebalancing.

On a local broker, for ``--minutes``:

* ``--groups`` consumer groups read 20 topics (6 partitions each) that a
  producer fills at ``--rate`` records/s. ``--live`` of them have a real
  member (a kafka-python consumer that consumes and commits); in
  ``--churning`` of those a second consumer joins, holds its partitions for a
  while and leaves, over and over, so each of those groups rebalances every
  ~15 s for the whole run. The other groups have no member: their offsets are
  committed for them once a minute (as a batch job or a stopped app leaves
  them), so their lag saws up and down.
* one real Kafka Streams app (the fixture app, 2 instances x 2 threads, a
  count topology) runs under load, so the agent decodes Streams assignments
  all along.
* ``ksmon agent`` polls every 10 s and ships to the snapshot topic;
  ``ksmon aggregate`` (local[2], trigger 10 s, default windows) reads it.

Every 10 s the bench samples both processes' RSS and /metrics. The report
(JSON on stdout) says whether the agent's RSS stays flat after the warm-up
(its least-squares slope), whether every snapshot the agent built reached the
topic (the agent's sent and dropped counters against the topic's record count)
and the job processed them all, and whether the job keeps up (its micro-batch
durations, and the staleness of its newest snapshot, which must not grow).

    .venv/bin/python bench/soak.py                                 # 30 minutes, 200 groups
    .venv/bin/python bench/soak.py --minutes 4 --warmup 2 --groups 40 --live 8 --churning 2
"""

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import textwrap
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka import KafkaConsumer

TOPICS = 20
PARTITIONS_PER_TOPIC = 6
SAMPLE_SECONDS = 10.0
COMMIT_EVERY_SECONDS = 60.0
CHURN_HOLD_SECONDS = 15.0  # a churning group's second member stays this long ...
CHURN_PAUSE_SECONDS = 10.0  # ... and comes back after this long
SNAPSHOT_TOPIC = "ksmon.snapshots"
MIN_POINTS_FOR_SLOPE = 3
STREAMS_APP = "soak-streams"
BATCH_LINE = re.compile(r"micro-batch (\d+): (\d+) snapshots, \d+ evaluated, \d+ events, ([\d.]+)s")


def topic_of(group: int) -> str:
    return f"soak-topic-{group % TOPICS:02d}"


def group_name(group: int) -> str:
    return f"soak-group-{group:03d}"


def rss_mb(pids: list[int]) -> float:
    """Resident memory of these processes together, in MiB (0 for any already gone)."""
    total_kb = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total_kb += int(line.split()[1])
    return round(total_kb / 1024, 1)


def with_descendants(pid: int) -> list[int]:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return [pid]
    return [pid] + [d for c in children for d in with_descendants(int(c))]


def scrape(port: int) -> list[tuple[str, dict[str, str], float]]:
    """Every sample of a /metrics endpoint; empty when it does not answer."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return []
    return [
        (s.name, s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def total(samples: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    return sum(
        v
        for n, sample_labels, v in samples
        if n == name and all(sample_labels.get(k) == want for k, want in labels.items())
    )


def summary(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    return {
        "p50": round(ordered[len(ordered) // 2], 2),
        "p95": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 2),
        "max": round(ordered[-1], 2),
    }


def slope_per_hour(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, value) points, per hour."""
    if len(points) < MIN_POINTS_FOR_SLOPE:
        return None
    fit = statistics.linear_regression([t for t, _ in points], [v for _, v in points])
    return round(fit.slope * 3600, 2)


class Fleet:
    """The groups' members, their churn, the producer and the committer: threads until stop()."""

    def __init__(self, bootstrap: str, groups: int, live: int, churning: int, rate: float) -> None:
        self.bootstrap = bootstrap
        self.groups, self.live, self.churning, self.rate = groups, live, churning, rate
        self.stop_event = threading.Event()
        self.threads: list[threading.Thread] = []
        self.churn_cycles = Counter[str]()
        self.errors = Counter[str]()

    def start(self) -> None:
        self._spawn("producer", self._produce)
        for g in range(self.live):
            self._spawn(f"member-{g}", partial(self._member, g))
        for g in range(self.churning):
            self._spawn(f"churn-{g}", partial(self._churn, g))
        self._spawn("committer", self._commit_idle_groups)

    def stop(self) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        def guarded() -> None:
            while not self.stop_event.is_set():
                try:
                    target()
                except Exception as e:  # noqa: BLE001 - a soak counts errors and goes on
                    self.errors[f"{name.split('-', maxsplit=1)[0]}: {type(e).__name__}"] += 1
                    self.stop_event.wait(5)

        thread = threading.Thread(target=guarded, name=name, daemon=True)
        thread.start()
        self.threads.append(thread)

    def _consumer(self, group: int) -> "KafkaConsumer":
        from kafka import KafkaConsumer

        return KafkaConsumer(
            topic_of(group),
            bootstrap_servers=self.bootstrap,
            group_id=group_name(group),
            client_id=f"soak-{group:03d}",
            auto_offset_reset="earliest",
            session_timeout_ms=10_000,
            heartbeat_interval_ms=3_000,
            # Batched fetches: the members stand for apps on other hosts, so their
            # CPU here should stay small next to the agent's and the job's.
            fetch_min_bytes=64 * 1024,
            fetch_max_wait_ms=3_000,
        )

    def _member(self, group: int) -> None:
        consumer = self._consumer(group)
        try:
            while not self.stop_event.is_set():
                consumer.poll(timeout_ms=1_000)
        finally:
            consumer.close()

    def _churn(self, group: int) -> None:
        """Join, hold a share of the partitions, leave, come back: two rebalances a cycle."""
        consumer = self._consumer(group)
        try:
            held_until = None
            while not self.stop_event.is_set():
                consumer.poll(timeout_ms=1_000)
                if held_until is None and consumer.assignment():
                    held_until = time.monotonic() + CHURN_HOLD_SECONDS
                if held_until is not None and time.monotonic() >= held_until:
                    break
        finally:
            consumer.close()
        self.churn_cycles[group_name(group)] += 1
        self.stop_event.wait(CHURN_PAUSE_SECONDS)

    def _produce(self) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=20)
        rng = random.Random(8)  # noqa: S311 - load, not cryptography
        sent, started = 0, time.monotonic()
        try:
            while not self.stop_event.is_set():
                for _ in range(int((time.monotonic() - started) * self.rate) - sent):
                    key = f"key-{rng.randrange(10_000)}".encode()
                    producer.send(f"soak-topic-{rng.randrange(TOPICS):02d}", key=key, value=b"v")
                    sent += 1
                self.stop_event.wait(0.05)
        finally:
            producer.close(timeout=10)

    def _commit_idle_groups(self) -> None:
        """Once a minute, commit each member-less group up to its topic's end."""
        from kafka import TopicPartition
        from kafka.admin import KafkaAdminClient
        from kafka.protocol.consumer import OffsetSpec
        from kafka.structs import OffsetAndMetadata

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="soak-committer")
        try:
            while not self.stop_event.is_set():
                partitions = [
                    TopicPartition(f"soak-topic-{t:02d}", p)
                    for t in range(TOPICS)
                    for p in range(PARTITIONS_PER_TOPIC)
                ]
                ends = admin.list_partition_offsets(dict.fromkeys(partitions, OffsetSpec.LATEST))
                for g in range(self.live, self.groups):
                    admin.alter_group_offsets(
                        group_name(g),
                        {
                            tp: OffsetAndMetadata(int(o.offset), "", -1)
                            for tp, o in ends.items()
                            if tp.topic == topic_of(g)
                        },
                    )
                self.stop_event.wait(COMMIT_EVERY_SECONDS)
        finally:
            admin.close()


def ksmon_config(bootstrap: str, work: Path, agent_port: int, job_port: int) -> str:
    return textwrap.dedent(
        f"""\
        agent: {{id: soak-agent}}
        http: {{listen: "127.0.0.1:{agent_port}"}}
        logging: {{format: text, level: info}}
        clusters:
          - name: soak
            bootstrap_servers: ["{bootstrap}"]
            poll: {{offsets_interval: 10s, metadata_interval: 60s}}
            offsets_topic: {{read: true}}
        sink:
          type: kafka
          kafka: {{topic: {SNAPSHOT_TOPIC}, partitions: 3, replication_factor: 1}}
        aggregation:
          listen: "127.0.0.1:{job_port}"
          checkpoint_dir: "{work / "checkpoint"}"
          trigger_interval: 10s
          spark: {{master: "local[2]"}}
          input: {{kafka: {{starting_offsets: earliest}}}}
          findings: {{topic: ksmon.findings, partitions: 1, replication_factor: 1}}
        """
    )


def main() -> None:  # noqa: PLR0915 - one linear script: set up, run, sample, report
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--warmup", type=float, default=5, help="minutes left out of the slopes")
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--live", type=int, default=20, help="groups with a member")
    parser.add_argument("--churning", type=int, default=10, help="live groups that rebalance")
    parser.add_argument("--rate", type=float, default=200, help="records/s over all topics")
    parser.add_argument("--work", type=Path, help="keep logs and samples here")
    args = parser.parse_args()
    if not args.churning <= args.live <= args.groups:
        parser.error("need --churning <= --live <= --groups")

    from agent.embedded.kafka import EmbeddedKafka, fetch_kafka
    from agent.embedded.load import KeyedLoad
    from agent.embedded.ports import free_port, is_listening
    from agent.embedded.process import JvmProcess, wait_until
    from agent.embedded.streams_app import (
        StreamsAppConfig,
        StreamsAppInstance,
        build_streams_app,
    )
    from agent.embedded.topics import create_topics, end_offsets

    with tempfile.TemporaryDirectory(prefix="ksmon-soak-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        kafka = EmbeddedKafka(fetch_kafka(), work / "kafka", heap_mb=1024)
        kafka.start()
        cleanup: list[Callable[[], object]] = [kafka.stop]
        try:
            bootstrap = kafka.bootstrap_servers
            create_topics(
                bootstrap,
                {
                    **{f"soak-topic-{t:02d}": PARTITIONS_PER_TOPIC for t in range(TOPICS)},
                    f"{STREAMS_APP}-in": 6,
                },
            )
            build = build_streams_app(kafka_version=kafka.distribution.version)
            app = StreamsAppConfig(
                application_id=STREAMS_APP,
                input_topic=f"{STREAMS_APP}-in",
                output_topic=f"{STREAMS_APP}-out",
                threads=2,
            )
            instances = [
                StreamsAppInstance(build, bootstrap, app, f"{STREAMS_APP}-{n}", work / f"app-{n}")
                for n in range(2)
            ]
            for instance in instances:
                instance.start()
                cleanup.append(instance.stop)
            load = KeyedLoad(bootstrap, f"{STREAMS_APP}-in", rate=50).start()
            cleanup.append(load.stop)
            fleet = Fleet(bootstrap, args.groups, args.live, args.churning, args.rate)
            fleet.start()
            cleanup.append(fleet.stop)
            for instance in instances:
                instance.wait_until_running(timeout=180)

            agent_port, job_port = free_port(), free_port()
            config = work / "ksmon.yaml"
            config.write_text(ksmon_config(bootstrap, work, agent_port, job_port))
            agent, job = (
                JvmProcess(
                    f"ksmon {command}",
                    [sys.executable, "-m", "agent", command, "--config", str(config)],
                    work / f"{command}.log",
                )
                for command in ("agent", "aggregate")
            )
            for process in (agent, job):
                process.start()
                cleanup.append(partial(process.stop, 60))
            for process, port in ((agent, agent_port), (job, job_port)):
                wait_until(
                    partial(is_listening, port),
                    timeout=300,
                    what=f"{process.name}'s /metrics",
                )

            samples: list[dict[str, Any]] = []
            started = time.monotonic()
            with (work / "samples.jsonl").open("w") as out:
                while time.monotonic() - started < args.minutes * 60:
                    for process in (agent, job):
                        if not process.alive:
                            raise RuntimeError(f"{process.name} exited:\n{process.log_tail()}")
                    assert agent.pid is not None
                    assert job.pid is not None
                    sample = _sample(agent.pid, job.pid, agent_port, job_port, started)
                    samples.append(sample)
                    out.write(json.dumps(sample) + "\n")
                    out.flush()
                    time.sleep(
                        max(0.0, SAMPLE_SECONDS - (time.monotonic() - started) % SAMPLE_SECONDS)
                    )

            # Every snapshot the agent says it sent is on the topic: compare at a moment
            # between two polls, when nothing is in flight (both read twice to be sure).
            counted: dict[str, float] = {}

            def agent_and_topic_agree() -> bool:
                before = total(scrape(agent_port), "ksmon_snapshots_sent_total")
                on_topic = sum(end_offsets(bootstrap, SNAPSHOT_TOPIC).values())
                final = scrape(agent_port)
                counted.update(sent=before, on_topic=on_topic)
                if before == on_topic == total(final, "ksmon_snapshots_sent_total"):
                    agent_metrics_at_match.extend(final)
                    return True
                return False

            agent_metrics_at_match: list[tuple[str, dict[str, str], float]] = []
            wait_until(
                agent_and_topic_agree,
                timeout=120,
                interval=1,
                what="the agent's sent counter and the snapshot topic's record count to match",
            )
            final_agent = agent_metrics_at_match
            topic_records = int(counted["on_topic"])
            wait_until(
                lambda: (
                    total(scrape(job_port), "ksmon_job_snapshots_processed_total") >= topic_records
                ),
                timeout=300,
                what="the job to process every snapshot on the topic",
            )
            final_job = scrape(job_port)
            fleet.stop()
        finally:
            for stop in reversed(cleanup):
                stop()
        batches = [
            (int(m.group(1)), int(m.group(2)), float(m.group(3)))
            for m in BATCH_LINE.finditer((work / "aggregate.log").read_text())
        ]

    warm = [s for s in samples if s["t"] >= args.warmup * 60]
    report = {
        "setup": {
            "minutes": args.minutes,
            "groups": args.groups,
            "live_groups": args.live,
            "churning_groups": args.churning,
            "records_per_second": args.rate,
            "streams_app": "2 instances x 2 threads, count topology",
        },
        "agent": {
            "rss_mb_at_warmup_end": warm[0]["agent_rss_mb"] if warm else None,
            "rss_mb_at_end": samples[-1]["agent_rss_mb"],
            "rss_mb_max": max(s["agent_rss_mb"] for s in samples),
            "rss_slope_mb_per_hour_after_warmup": slope_per_hour(
                [(s["t"], s["agent_rss_mb"]) for s in warm]
            ),
            "groups_watched": samples[-1]["agent_groups"],
            "polls_ok": samples[-1]["agent_polls_ok"],
            "polls_failed": samples[-1]["agent_polls_failed"],
            "poll_seconds": summary([s["agent_poll_seconds"] for s in samples]),
            "snapshots_sent": total(final_agent, "ksmon_snapshots_sent_total"),
            "snapshots_dropped": total(final_agent, "ksmon_snapshots_dropped_total"),
            "sink_errors": total(final_agent, "ksmon_snapshot_sink_errors_total"),
        },
        "snapshot_topic_records": topic_records,
        "job": {
            "snapshots_processed": total(final_job, "ksmon_job_snapshots_processed_total"),
            "snapshots_quarantined": total(final_job, "ksmon_job_snapshots_quarantined_total"),
            "snapshots_late": total(final_job, "ksmon_job_snapshots_late_total"),
            "batches": len(batches),
            "batch_seconds_after_warmup": summary([b[2] for b in batches][len(batches) // 6 :]),
            "staleness_seconds_after_warmup": summary([s["job_staleness"] for s in warm]),
            "staleness_slope_seconds_per_hour": slope_per_hour(
                [(s["t"], s["job_staleness"]) for s in warm]
            ),
            "rss_mb_max_driver_and_jvm": max(s["job_rss_mb"] for s in samples),
            "findings_active_by_kind": dict(
                Counter(
                    labels["kind"]
                    for name, labels, value in final_job
                    if name == "ksmon_finding_active" and value == 1
                )
            ),
        },
        "rebalances": {
            "churn_cycles": sum(fleet.churn_cycles.values()),
            "fleet_errors": dict(fleet.errors),
        },
    }
    print(json.dumps(report, indent=2))


def _sample(
    agent_pid: int, job_pid: int, agent_port: int, job_port: int, started: float
) -> dict[str, float | None]:
    agent_metrics, job_metrics = scrape(agent_port), scrape(job_port)
    newest = max(
        (v for n, _, v in job_metrics if n == "ksmon_job_newest_snapshot_timestamp_seconds"),
        default=0.0,
    )
    return {
        "t": round(time.monotonic() - started, 1),
        "agent_rss_mb": rss_mb([agent_pid]),
        "job_rss_mb": rss_mb(with_descendants(job_pid)),
        "agent_groups": total(agent_metrics, "ksmon_groups"),
        "agent_polls_ok": total(agent_metrics, "ksmon_polls_total", result="ok"),
        "agent_polls_failed": total(agent_metrics, "ksmon_polls_total", result="failed"),
        "agent_poll_seconds": total(agent_metrics, "ksmon_poll_duration_seconds"),
        "agent_sent": total(agent_metrics, "ksmon_snapshots_sent_total"),
        "agent_dropped": total(agent_metrics, "ksmon_snapshots_dropped_total"),
        "job_batch_seconds": total(job_metrics, "ksmon_job_batch_duration_seconds"),
        "job_processed": total(job_metrics, "ksmon_job_snapshots_processed_total"),
        "job_staleness": round(time.time() - newest, 1) if newest else None,
    }


if __name__ == "__main__":
    main()
