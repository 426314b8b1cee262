"""Benchmark: what a sidecar agent costs (RSS, CPU) next to an app with 64 input partitions.

Everything is real: a local broker, the Kafka Streams fixture app (count
topology: 64 input partitions, so 128 tasks and 64 RocksDB stores, 2 stream
threads, the JMX exporter java agent attached) under a steady keyed load, and
``ksmon agent`` in sidecar mode as its own process, polling every 10 s,
scraping the app's endpoint, reading its state directory and shipping
snapshots to a topic on the broker. After a warm-up, the agent process is
watched through /proc for ``--seconds``: CPU = (utime + stime) / wall time,
RSS sampled every second, and VmHWM (the kernel's peak RSS) at the end.

    .venv/bin/python bench/sidecar_footprint.py                 # 300 s, prints a JSON report
    .venv/bin/python bench/sidecar_footprint.py --seconds 60    # quicker
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

INPUT_PARTITIONS = 64
POLL_SECONDS = 10


def proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def proc_status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def agent_metric(port: int, name: str, by: str | None = None) -> dict[str, float]:
    """The agent's samples of ``name``, keyed by the value of label ``by``."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {
        sample.labels.get(by, "") if by else "": sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    }


def main() -> None:  # noqa: PLR0915 - one linear script: set up, measure, report
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=300, help="how long to measure")
    parser.add_argument("--rate", type=int, default=200, help="input records per second")
    args = parser.parse_args()

    from agent.embedded.kafka import EmbeddedKafka, fetch_kafka
    from agent.embedded.load import KeyedLoad, KeySkew
    from agent.embedded.ports import free_port
    from agent.embedded.process import wait_until
    from agent.embedded.streams_app import (
        StreamsAppConfig,
        StreamsAppInstance,
        build_streams_app,
    )
    from agent.embedded.topics import create_topics

    report: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="ksmon-sidecar-bench-") as scratch:
        work = Path(scratch)
        distribution = fetch_kafka()
        kafka = EmbeddedKafka(distribution, work / "kafka")
        kafka.start()
        app = None
        agent = None
        try:
            create_topics(kafka.bootstrap_servers, {"bench-input": INPUT_PARTITIONS})
            build = build_streams_app(kafka_version=distribution.version)
            config = StreamsAppConfig(
                application_id="bench-app",
                input_topic="bench-input",
                output_topic="bench-output",
                threads=2,
            )
            app = StreamsAppInstance(
                build, kafka.bootstrap_servers, config, "bench-app-0", work / "app", heap_mb=512
            )
            app.start()
            app.wait_until_running(timeout=300)
            spread = KeySkew({}, cold_keys=10_000)  # every input partition gets records
            load = KeyedLoad(kafka.bootstrap_servers, "bench-input", args.rate, spread).start()

            port = free_port()
            agent_config = work / "sidecar.yaml"
            agent_config.write_text(
                textwrap.dedent(
                    f"""\
                    agent: {{id: bench-app-0, mode: sidecar}}
                    http: {{listen: "127.0.0.1:{port}"}}
                    logging: {{level: warning}}
                    clusters:
                      - name: bench
                        bootstrap_servers: ["{kafka.bootstrap_servers}"]
                        poll: {{offsets_interval: {POLL_SECONDS}s, metadata_interval: 60s}}
                    sink: {{type: kafka, kafka: {{topic: ksmon.snapshots}}}}
                    sidecar:
                      application_id: bench-app
                      app_metrics_url: "{app.metrics_url}"
                      state_dir: {app.state_dir}
                      expected_stream_threads: 2
                    """
                )
            )
            log = (work / "agent.log").open("w")
            agent = subprocess.Popen(
                [sys.executable, "-m", "agent", "agent", "--config", str(agent_config)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

            def sees_the_app() -> bool:
                try:
                    return agent_metric(port, "ksmon_sidecar_stream_threads_alive") == {"": 2.0}
                except OSError:
                    return False

            wait_until(sees_the_app, timeout=120, what="the sidecar's first view of the app")
            # Warm-up: the first polls refresh metadata and create the snapshot topic.
            time.sleep(3 * POLL_SECONDS)

            asked = time.monotonic()
            scrape = app.metrics_text()
            report["app_metrics_endpoint"] = {
                "bytes": len(scrape.encode()),
                "lines": scrape.count("\n"),
                "answer_seconds": round(time.monotonic() - asked, 2),
            }
            cpu_start, wall_start = proc_cpu_seconds(agent.pid), time.monotonic()
            rss_kb = []
            while time.monotonic() - wall_start < args.seconds:
                rss_kb.append(proc_status_kb(agent.pid, "VmRSS"))
                time.sleep(1)
            cpu = proc_cpu_seconds(agent.pid) - cpu_start
            wall = time.monotonic() - wall_start
            report["agent"] = {
                "measured_seconds": round(wall, 1),
                "polls_in_window": round(wall / POLL_SECONDS),
                "cpu_seconds": round(cpu, 2),
                "cpu_percent_of_one_core": round(100 * cpu / wall, 2),
                "rss_mb_median": round(statistics.median(rss_kb) / 1024, 1),
                "rss_mb_max_sampled": round(max(rss_kb) / 1024, 1),
                "peak_rss_mb_vmhwm": round(proc_status_kb(agent.pid, "VmHWM") / 1024, 1),
                "last_poll_seconds": agent_metric(port, "ksmon_poll_duration_seconds")[""],
                "kafka_requests_total": agent_metric(port, "ksmon_kafka_requests_total", "api"),
                "snapshots_sent_total": agent_metric(port, "ksmon_snapshots_sent_total")[""],
            }
            report["app_rss_mb"] = round(proc_status_kb(app.process.pid or 0, "VmRSS") / 1024)
            report["input_records_sent"] = load.stop()
        finally:
            if agent is not None and agent.poll() is None:
                agent.terminate()
                agent.wait(timeout=30)
            if app is not None:
                app.stop()
            kafka.stop()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
