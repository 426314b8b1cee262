"""Benchmark: from a fault injected into a real Kafka Streams app to its finding on /metrics.

Everything is real and runs as its own process: a local broker; the fixture
app (Kafka Streams 4.3.1, JMX exporter attached) as four apps of 8 input
partitions; ``ksmon agent`` polling every 10 s and shipping snapshots to the
snapshot topic; ``ksmon aggregate`` (local[2], trigger 10 s) reading it and
serving /metrics. The bench scrapes the job's /metrics every second.

The four apps run side by side under steady load; once the job has judged
each of them healthy for a while, the faults are injected one after
another, each when the previous one's finding has appeared (so each
latency is one fault's, with the other apps and the earlier faults still
running):

* ``hot``: two hot keys aimed at two partitions held by one of the two
  instances (join topology, one thread each), 45 % of 200 records/s each;
  finding ``hot_partitions_colocated``
* ``poison``: a poison pill on a partition of one of two instances running
  ``--on-error=shutdown_client``; ``stream_threads_dead`` for that instance
* ``loop``: a 4 s per-record delay switched on, beyond the app's
  ``max.poll.interval.ms`` of 3 s; ``rebalance_loop``
* ``restore``: an instance restarted with no local state and its restore held
  by the fixture's throttle marker, 100,000 keys in its changelog (12,500 per
  task, above ``acceptable_recovery_lag``, which is per task) and 30 records/s
  still arriving; ``restore_stalled``

Latency = the first scrape showing ``ksmon_finding_active{kind=...}`` for
the app's group minus the moment of injection (the skewed load started, the
pill sent, the delay switched on, the instance stopped). Also reported:
``since`` (when the job says the condition began, event time) minus the
injection, which separates what the rule waits for from the pipeline.

    .venv/bin/python bench/detection_latency.py                   # default thresholds
    .venv/bin/python bench/detection_latency.py --tuned           # the tuned thresholds below
    .venv/bin/python bench/detection_latency.py --tuned --faults hot,restore   # some faults
    .venv/bin/python bench/detection_latency.py --tuned --faults poison --sidecars

With ``--sidecars`` a sidecar agent (``agent.mode: sidecar``, its own process, 10 s
polls) runs next to each instance of the poison and restore apps, reading its metrics
endpoint, as on Kubernetes; the central agent polls as before. The poisoned instance's
sidecar says its stream threads are gone without waiting for the broker's session
timeout; the restoring instance's sees its restore stand still (``restore_stall_after``)
where the broker alone waits ``progress_stall_after``.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

PREFIX = "bench"  # the apps' names; the agent polls only these groups
PARTITIONS = 8
POLL_SECONDS = 10
# With the defaults some rules cannot hold within 60 s (progress_stall_after 5 min,
# thread_death_grace 60 s); these are the windows the tuned run uses.
TUNED = {
    "evaluation_window": "30s",
    "progress_stall_after": "30s",
    "thread_death_grace": "15s",
}
SKEWED_RATE = 200.0
STEADY_RATE = 30.0
# acceptable_recovery_lag (10,000) is per task, like Kafka Streams' own: over 8 partitions
# each task's changelog must hold more than that, or a held restore is no stalled one.
RESTORE_KEYS = 100_000
FINDING_TIMEOUT = 900.0
FAULTS = ("hot", "poison", "loop", "restore")
ACTIVE = re.compile(r"^ksmon_finding_active\{([^}]*)\} 1\.0$", re.MULTILINE)
SINCE = re.compile(r"^ksmon_finding_since_timestamp_seconds\{([^}]*)\} ([0-9.e+]+)$", re.MULTILINE)
LABEL = re.compile(r'([a-z_]+)="([^"]*)"')


def findings(port: int) -> list[dict[str, str]]:
    """The job's open findings: the labels of each ``ksmon_finding_active`` series, with
    ``since`` from ``ksmon_finding_since_timestamp_seconds``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    since = {m.group(1): m.group(2) for m in SINCE.finditer(text)}
    return [
        {**dict(LABEL.findall(m.group(1))), "since": since.get(m.group(1), "")}
        for m in ACTIVE.finditer(text)
    ]


def newest_snapshot(port: int) -> float:
    """The poll time of the newest snapshot the job processed (0 before any)."""
    try:
        text = scrape_text(port)
    except OSError:
        return 0.0
    found = re.search(r"^ksmon_job_newest_snapshot_timestamp_seconds\{[^}]*\} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def scrape_text(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return str(response.read().decode())


def config_text(
    bootstrap: str, work: Path, ports: tuple[int, int], detectors: dict[str, object]
) -> str:
    """The one YAML file the agent and the job read; ``ports``: the agent's and the job's."""
    agent_port, job_port = ports
    document = {
        "agent": {"id": "bench-agent"},
        "http": {"listen": f"127.0.0.1:{agent_port}"},
        "logging": {"format": "text"},
        "clusters": [
            {
                "name": "bench",
                "bootstrap_servers": [bootstrap],
                "groups": {"allow": [f"{PREFIX}-.*"]},
                "poll": {"offsets_interval": f"{POLL_SECONDS}s"},
            }
        ],
        "sink": {"type": "kafka", "kafka": {"topic": "bench.snapshots"}},
        "aggregation": {
            "listen": f"127.0.0.1:{job_port}",
            "checkpoint_dir": str(work / "checkpoint"),
            "input": {"kafka": {"starting_offsets": "earliest"}},
            "findings": {"topic": "bench.findings", "partitions": 1},
            "spark": {"master": "local[2]"},
            "detectors": detectors,
        },
    }
    return yaml.safe_dump(document, sort_keys=False)


def sidecar_config_text(
    bootstrap: str, application_id: str, metrics_url: str, port: int, name: str
) -> str:
    """A sidecar agent's config: its app's group only, the same snapshot topic."""
    document = {
        "agent": {"id": name, "mode": "sidecar"},
        "http": {"listen": f"127.0.0.1:{port}"},
        "logging": {"format": "text"},
        "clusters": [
            {
                "name": "bench",
                "bootstrap_servers": [bootstrap],
                "poll": {"offsets_interval": f"{POLL_SECONDS}s"},
            }
        ],
        "sink": {"type": "kafka", "kafka": {"topic": "bench.snapshots"}},
        "sidecar": {"application_id": application_id, "app_metrics_url": metrics_url},
    }
    return yaml.safe_dump(document, sort_keys=False)


def owned_partitions(instance: Any) -> list[int]:  # noqa: ANN401 - StreamsAppInstance
    state = instance.oracle() or {}
    return sorted(
        int(task["taskId"].split("_")[1])
        for thread in state.get("threads", [])
        for task in thread["activeTasks"]
    )


def main() -> None:  # noqa: PLR0915 - one linear script: set up, inject, report
    parser = argparse.ArgumentParser()
    parser.add_argument("--tuned", action="store_true", help=f"detector windows {TUNED}")
    parser.add_argument(
        "--settle", type=float, default=120, help="seconds every app is judged healthy first"
    )
    parser.add_argument("--work", type=Path, help="keep the logs and checkpoints here")
    parser.add_argument(
        "--faults",
        default=",".join(FAULTS),
        help=f"which faults to inject, in this order anyway: {','.join(FAULTS)}",
    )
    parser.add_argument(
        "--sidecars",
        action="store_true",
        help="a sidecar agent next to each instance of the poison and restore apps",
    )
    args = parser.parse_args()
    chosen = set(args.faults.split(","))
    if not chosen <= set(FAULTS):
        unknown = ", ".join(sorted(chosen - set(FAULTS)))
        parser.error(f"--faults: unknown {unknown}; choose from {', '.join(FAULTS)}")

    from agent.embedded.kafka import EmbeddedKafka, fetch_kafka
    from agent.embedded.load import KeyedLoad, KeySkew, key_for_partition, produce
    from agent.embedded.ports import free_port
    from agent.embedded.process import wait_until
    from agent.embedded.streams_app import (
        StreamsAppConfig,
        StreamsAppInstance,
        build_streams_app,
    )
    from agent.embedded.topics import create_topics, end_offsets

    detectors: dict[str, object] = dict(TUNED) if args.tuned else {}
    report: dict[str, Any] = {
        "detectors": detectors or "defaults",
        "sidecars": args.sidecars,
        "faults": {},
    }
    with tempfile.TemporaryDirectory(prefix="ksmon-detect-bench-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        distribution = fetch_kafka()
        kafka = EmbeddedKafka(distribution, work / "kafka")
        kafka.start()
        build = build_streams_app(kafka_version=distribution.version)
        bootstrap = kafka.bootstrap_servers
        instances: list[StreamsAppInstance] = []
        loads: list[KeyedLoad] = []
        daemons: list[subprocess.Popen[bytes]] = []

        def app(name: str, **kwargs: Any) -> StreamsAppConfig:  # noqa: ANN401
            application = f"{PREFIX}-{name}"
            return StreamsAppConfig(
                application_id=application,
                input_topic=f"{application}-in",
                table_topic=f"{application}-table",
                output_topic=f"{application}-out",
                **kwargs,
            )

        def start(config: StreamsAppConfig, count: int) -> list[StreamsAppInstance]:
            started = []
            for i in range(count):
                name = f"{config.application_id}-{i}"
                instance = StreamsAppInstance(build, bootstrap, config, name, work / name)
                instance.start()
                instances.append(instance)
                started.append(instance)
            return started

        def load(topic: str, rate: float, skew: KeySkew | None = None) -> KeyedLoad:
            started = KeyedLoad(bootstrap, topic, rate, skew).start()
            loads.append(started)
            return started

        try:
            hot = app("hot", topology="join")
            restore = app("restore", static_membership=True, restore_marker=work / "hold-restore")
            poison = app("poison", poison_key_prefix="poison", on_error="shutdown_client")
            loop = app(
                "loop",
                processing_delay_ms=4000,
                processing_delay_marker=work / "slow",
                streams_config={"max.poll.interval.ms": "3000"},
            )
            create_topics(
                bootstrap,
                {c.input_topic: PARTITIONS for c in (hot, restore, poison, loop)}
                | {hot.table_topic: PARTITIONS},
            )
            agent_port, job_port = free_port(), free_port()
            config = work / "ksmon.yaml"
            config.write_text(config_text(bootstrap, work, (agent_port, job_port), detectors))
            for command in ("agent", "aggregate"):
                daemons.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "agent", command, "--config", str(config)],
                        stdout=(work / f"{command}.log").open("w"),
                        stderr=subprocess.STDOUT,
                    )
                )
            apps = {
                "hot": start(hot, 2),
                "restore": start(restore, 1),
                "poison": start(poison, 2),
                "loop": start(loop, 1),
            }
            for instance in instances:
                instance.wait_until_running(timeout=300)
            if args.sidecars:
                beside = [(poison, i) for i in apps["poison"]] + [
                    (restore, i) for i in apps["restore"]
                ]
                for watched, instance in beside:
                    sidecar = work / f"sidecar-{instance.name}.yaml"
                    sidecar.write_text(
                        sidecar_config_text(
                            bootstrap,
                            watched.application_id,
                            instance.metrics_url,
                            free_port(),
                            f"sidecar-{instance.name}",
                        )
                    )
                    daemons.append(
                        subprocess.Popen(
                            [sys.executable, "-m", "agent", "agent", "--config", str(sidecar)],
                            stdout=(work / f"sidecar-{instance.name}.log").open("w"),
                            stderr=subprocess.STDOUT,
                        )
                    )

            uniform = load(hot.input_topic, SKEWED_RATE, KeySkew({}, cold_keys=1000))
            load(poison.input_topic, STEADY_RATE)
            load(loop.input_topic, 1.0)  # a record a second: fast while the delay is off
            produce(bootstrap, restore.input_topic, [(f"k{n}", "v") for n in range(RESTORE_KEYS)])
            changelog = f"{restore.application_id}-counts-changelog"
            wait_until(
                lambda: sum(end_offsets(bootstrap, changelog).values()) >= RESTORE_KEYS,
                timeout=300,
                what=f"{RESTORE_KEYS} keys in {changelog}",
            )
            load(restore.input_topic, STEADY_RATE)

            # Healthy first: every group evaluated for a while, nothing open.
            def judged_healthy() -> bool:
                try:
                    text = scrape_text(job_port)
                except OSError:
                    return False
                groups = {c.application_id for c in (hot, restore, poison, loop)}
                loaded = set(
                    re.findall(
                        r'ksmon_streams_instance_load_records_per_second\{[^}]*group="([^"]+)"',
                        text,
                    )
                )
                return groups <= loaded

            wait_until(judged_healthy, timeout=600, what="the job's first view of every app")
            # A stretch of healthy history (event time, as the job sees it) before any fault.
            healthy_until = time.time() + args.settle
            wait_until(
                lambda: newest_snapshot(job_port) >= healthy_until,
                timeout=args.settle + 600,
                what=f"the job past {args.settle:.0f} s of healthy polls",
            )
            report["open_before_faults"] = findings(job_port)

            def measure(
                name: str,
                group: str,
                kind: str,
                inject: Callable[[], None],
                subject: Callable[[dict[str, str]], bool] = lambda _: True,
            ) -> None:
                if name not in chosen:
                    return
                already = [f for f in findings(job_port) if f.get("group") == group]
                injected = time.time()
                inject()
                seen: list[dict[str, str]] = []

                def appeared() -> bool:
                    try:
                        open_now = findings(job_port)
                    except OSError:
                        return False
                    seen[:] = [
                        f
                        for f in open_now
                        if f.get("group") == group and f.get("kind") == kind and subject(f)
                    ]
                    return bool(seen)

                try:
                    wait_until(appeared, timeout=FINDING_TIMEOUT, what=f"{kind} for {group}")
                except TimeoutError:
                    report["faults"][name] = {"kind": kind, "latency_seconds": None}
                    return
                found = time.time()
                since = min(float(f["since"]) for f in seen if f["since"])
                report["faults"][name] = {
                    "kind": kind,
                    "open_for_the_group_before": already,
                    "latency_seconds": round(found - injected, 1),
                    "since_minus_injection_seconds": round(since - injected, 1),
                    "findings": [
                        {k: v for k, v in f.items() if v and k not in ("kafka_cluster", "since")}
                        for f in seen
                    ],
                }
                print(json.dumps({name: report["faults"][name]}), file=sys.stderr, flush=True)

            # 1. Two hot keys on two partitions of instance 0 (one thread: one member).
            first = apps["hot"][0]
            hot_keys = {
                key_for_partition(p, PARTITIONS, prefix="hot"): 0.45
                for p in owned_partitions(first)[:2]
            }

            def skew() -> None:
                uniform.stop()
                load(hot.input_topic, SKEWED_RATE, KeySkew(hot_keys, cold_keys=1000))

            measure("hot", hot.application_id, "hot_partitions_colocated", skew)

            # 2. A poison pill on a partition instance 0 of the poison app owns.
            victim = apps["poison"][0]
            victim_process = (victim.oracle() or {}).get("processId", "")
            pill = key_for_partition(owned_partitions(victim)[0], PARTITIONS, prefix="poison")

            def send_pill() -> None:
                produce(bootstrap, poison.input_topic, [(pill, "boom")])

            measure(
                "poison",
                poison.application_id,
                "stream_threads_dead",
                send_pill,
                lambda f: f.get("process") == victim_process,
            )

            # 3. Processing slower than max.poll.interval.ms.
            measure(
                "loop",
                loop.application_id,
                "rebalance_loop",
                (work / "slow").touch,
            )

            # 4. A restart with no local state, its restore held.
            (restoring,) = apps["restore"]

            def restart_held() -> None:
                (work / "hold-restore").touch()
                restoring.restart(wipe_state=True)

            measure("restore", restore.application_id, "restore_stalled", restart_held)
            report["open_at_end"] = findings(job_port)
            report["healthy_seconds_before_faults"] = args.settle
            report["load_average"] = os.getloadavg()
        finally:
            for started in loads:
                started.stop()
            for daemon in daemons:
                daemon.terminate()
            for daemon in daemons:
                try:
                    daemon.wait(60)
                except subprocess.TimeoutExpired:
                    daemon.kill()
            for instance in instances:
                instance.stop(timeout=15)
            kafka.stop()
            job_log = (work / "aggregate.log").read_text().splitlines()
            batch_seconds = [
                float(m.group(1))
                for line in job_log
                # The total in the job's batch line, before its "(reading ...)" breakdown.
                if (m := re.search(r"micro-batch \d+: .*?, ([\d.]+)s(?: \(|$)", line))
            ]
            report["job_batches"] = len(batch_seconds)
            report["job_batch_seconds_max"] = max(batch_seconds, default=None)
            report["job_batch_seconds_median"] = (
                sorted(batch_seconds)[len(batch_seconds) // 2] if batch_seconds else None
            )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
