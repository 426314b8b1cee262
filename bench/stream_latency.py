"""Benchmark: the streaming job in real time: batch durations, ship-to-/metrics latency, CPU.

A synthetic fleet (``fleet.py``: by default 1,000 Kafka Streams apps, each
with 10 input and 10 repartition partitions, so 20,000 partitions, 4
instances x 2 threads) is serialised once, poll by poll. Then, in real
time, one poll of the whole fleet is shipped every 10 s through the agent's
own sink (``agent.transport``: the snapshot topic on a local broker, or a
spool directory) while ``ksmon aggregate`` (its own process, local[2], the
default trigger of 10 s and default detector windows) reads it.

The job's look-back is the longest detector window plus one evaluation
window (21 minutes with the defaults since ``loop_window`` is read twice
over): the batches after the fill (``--fill-minutes``, 21 by default) judge
polls against full windows. Per micro-batch the job logs its duration; the
bench also scrapes the job's /metrics every half second (gzip, as Prometheus
asks; only the job's own samples are read) and reports, per poll, the time
from shipping it to the job's /metrics showing it
(``ksmon_job_newest_snapshot_timestamp_seconds``), the CPU the job's
processes used while measuring (utime + stime over wall time), their peak
RSS, and the checkpoint directory's size at the end.

Event time is the recording's (it starts 2026-01-01): the job never reads
the clock to judge, so shipping pre-serialised polls at 10 s intervals is
what an agent does, minus its polling.

    .venv/bin/python bench/stream_latency.py                  # 20,000 partitions, 30 min measured
    .venv/bin/python bench/stream_latency.py --input spool    # the same through a spool directory
    .venv/bin/python bench/stream_latency.py --groups 1 --partitions 6 --instances 3 --threads 1 \
        --fill-minutes 2 --measure-minutes 10          # one app of 3 instances: the job's CPU

``--shuffle-partitions`` sets the job's ``aggregation.spark.shuffle_partitions``
(default 4): 1 for a job that watches a few apps (docs/deploy.md).
"""

import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import NamedTuple

import yaml
from fleet import POLL_SECONDS, FleetShape, write_recording
from procfs import proc_status_kb

T0 = 1_767_225_600.0  # event time of the first poll: 2026-01-01T00:00:00Z
GROUP_ID = re.compile(rb'"group_id":"([^"]+)"')
BATCH_LINE = re.compile(
    r"micro-batch (\d+): (\d+) snapshots, (\d+) judged, (\d+) events, ([\d.]+)s"
)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class Batch(NamedTuple):
    """One micro-batch, from the job's log line."""

    batch_id: int
    snapshots: int
    seconds: float


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def peak_kb(pid: int) -> tuple[str, int | None]:
    """A process's name and peak RSS; None for one that has exited meanwhile (a zombie
    keeps its name but no memory figures)."""
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
        return name, proc_status_kb(pid, "VmHWM")
    except (OSError, KeyError):
        return str(pid), None


def descendants(pid: int) -> list[int]:
    # A process's children are listed per thread that started them: Spark's JVM starts
    # its Python workers' daemon from a thread of its own, not from its main thread.
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    for child in list(found):
        found += descendants(child)
    return found


# The job's own samples (its page also holds every group's gauges); a name with several
# label sets keeps the last one's value.
_JOB_SAMPLE = re.compile(rb"^(ksmon_job_[a-z_]+)(?:\{[^}\n]*\})? (\S+)$", re.MULTILINE)


def scrape(port: int) -> dict[str, float]:
    """The job's ``ksmon_job_*`` samples by name, as Prometheus would fetch the
    page (gzip). Read by a regular expression: at 1,000 groups the page is 8 MB of text,
    which a full parse every half second would take a core (of the job's two) to do."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/metrics", headers={"Accept-Encoding": "gzip"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - http, local
        body = response.read()
        if response.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
    return {name.decode(): float(value) for name, value in _JOB_SAMPLE.findall(body)}


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLOCK_TICKS


def config_document(
    bootstrap: str,
    work: Path,
    port: int,
    input_type: str,
    partitions: int,
    *,
    shuffle_partitions: int = 4,
) -> dict[str, object]:
    sink: dict[str, object] = (
        {"type": "kafka", "kafka": {"topic": "bench.snapshots", "partitions": partitions}}
        if input_type == "kafka"
        else {"type": "spool", "spool": {"directory": str(work / "spool")}}
    )
    aggregation: dict[str, object] = {
        "listen": f"127.0.0.1:{port}",
        "checkpoint_dir": str(work / "checkpoint"),
        "findings": {"topic": "bench.findings", "partitions": 1},
        "spark": {"master": "local[2]", "shuffle_partitions": shuffle_partitions},
    }
    if input_type == "kafka":
        aggregation["input"] = {"kafka": {"starting_offsets": "earliest"}}
    return {
        "agent": {"id": "bench-agent"},
        "logging": {"format": "text"},
        "clusters": [{"name": "bench", "bootstrap_servers": [bootstrap]}],
        "sink": sink,
        "aggregation": aggregation,
    }


def main() -> None:  # noqa: PLR0912, PLR0915 - one linear script: prepare, run, report
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=1000, help="Kafka Streams apps")
    parser.add_argument(
        "--partitions", type=int, default=10, help="input partitions per app (it consumes 2x)"
    )
    parser.add_argument("--instances", type=int, default=4, help="instances per app")
    parser.add_argument("--threads", type=int, default=2, help="stream threads per instance")
    parser.add_argument("--input", choices=("kafka", "spool"), default="kafka")
    parser.add_argument(
        "--fill-minutes", type=float, default=21, help="run this long before measuring"
    )
    parser.add_argument("--measure-minutes", type=float, default=30)
    parser.add_argument("--data", type=Path, help="where the serialised polls are kept (reused)")
    parser.add_argument("--work", type=Path, help="keep the job's log and checkpoints here")
    parser.add_argument(
        "--shuffle-partitions", type=int, default=4, help="aggregation.spark.shuffle_partitions"
    )
    args = parser.parse_args()

    from agent.config import parse_config
    from agent.embedded.kafka import EmbeddedKafka, fetch_kafka
    from agent.embedded.ports import free_port
    from agent.embedded.process import wait_until
    from agent.transport.factory import open_sink

    shape = FleetShape(
        groups=args.groups,
        input_partitions=args.partitions,
        instances=args.instances,
        threads=args.threads,
    )
    polls = round((args.fill_minutes + args.measure_minutes) * 60 / POLL_SECONDS) + 1
    with tempfile.TemporaryDirectory(prefix="ksmon-stream-bench-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        data = args.data or work / "polls"
        manifest = data / "manifest.json"
        wanted = {"shape": shape.__dict__, "polls": polls, "t0": T0}
        if not (manifest.is_file() and json.loads(manifest.read_text()) == wanted):
            # One file per poll, serialised before the clock starts.
            write_recording(data, shape, T0, polls, polls_per_file=1)
            manifest.write_text(json.dumps(wanted))
        poll_files = sorted(data.glob("snapshots-*.jsonl"))[:polls]

        kafka = EmbeddedKafka(fetch_kafka(), work / "kafka")
        kafka.start()
        job: subprocess.Popen[str] | None = None
        try:
            port = free_port()
            document = config_document(
                kafka.bootstrap_servers,
                work,
                port,
                args.input,
                6,
                shuffle_partitions=args.shuffle_partitions,
            )
            text = yaml.safe_dump(document, sort_keys=False)
            (work / "ksmon.yaml").write_text(text)
            config = parse_config(text, str(work / "ksmon.yaml"), {})
            sink = open_sink(config)
            log_path = work / "job.log"
            with log_path.open("w") as log:
                job = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "agent",
                        "aggregate",
                        "--config",
                        str(work / "ksmon.yaml"),
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    text=True,
                )

            def ready() -> bool:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2):
                        return True
                except OSError:
                    return False

            wait_until(ready, timeout=300, what="the job's /readyz")
            shipped: dict[float, float] = {}  # poll event time -> wall time shipped
            seen: dict[float, float] = {}  # poll event time -> wall time on /metrics
            stop = threading.Event()

            def watch() -> None:
                newest = 0.0
                while not stop.is_set():
                    try:
                        metrics = scrape(port)
                    except OSError:
                        metrics = {}
                    now = time.time()
                    current = metrics.get("ksmon_job_newest_snapshot_timestamp_seconds", 0.0)
                    if current > newest:
                        for t in shipped:
                            if newest < t <= current:
                                seen.setdefault(t, now)
                        newest = current
                    stop.wait(0.5)

            # The polls' directory is gone by the time the report is written.
            poll_mb = round(poll_files[0].stat().st_size / 2**20, 1)
            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            started = time.monotonic()
            fill_polls = round(args.fill_minutes * 60 / POLL_SECONDS)
            cpu_from: tuple[float, float] | None = None
            for index, path in enumerate(poll_files):
                if index == fill_polls:
                    cpu_from = (time.monotonic(), cpu_seconds([job.pid, *descendants(job.pid)]))
                due = started + index * POLL_SECONDS
                time.sleep(max(0.0, due - time.monotonic()))
                lines = path.read_bytes().splitlines()
                for line in lines:
                    # The record key, as the agent's: <cluster>/<group>.
                    group = GROUP_ID.search(line)
                    assert group is not None
                    sink.send(b"bench/" + group.group(1), line)
                if args.input == "kafka":
                    sink.flush(60)
                else:
                    sink.rotate()  # type: ignore[attr-defined]
                shipped[T0 + index * POLL_SECONDS] = time.time()
            # Let the last polls through.
            wait_until(
                lambda: len(seen) >= len(shipped) - 1, timeout=1800, what="the last polls processed"
            )
            stop.set()
            watcher.join()
            assert job.poll() is None, "the job exited"
            processes = [job.pid, *descendants(job.pid)]
            cpu_share = None
            if cpu_from is not None:
                cpu_share = (cpu_seconds(processes) - cpu_from[1]) / (
                    time.monotonic() - cpu_from[0]
                )
            checkpoint_mb = (
                sum(f.stat().st_size for f in (work / "checkpoint").rglob("*") if f.is_file())
                / 2**20
            )
            # Summed by name: Spark's Python workers are several processes called python.
            peak_kb_by_name: dict[str, int] = {}
            for name, kb in (peak_kb(p) for p in processes):
                if kb is not None:
                    peak_kb_by_name[name] = peak_kb_by_name.get(name, 0) + kb
            peak_rss = {name: round(kb / 1024) for name, kb in peak_kb_by_name.items()}
        finally:
            if job is not None:
                job.terminate()
                try:
                    job.wait(60)
                except subprocess.TimeoutExpired:
                    job.kill()
            kafka.stop()
        batches = [
            Batch(int(m.group(1)), int(m.group(2)), float(m.group(5)))
            for m in BATCH_LINE.finditer(log_path.read_text())
        ]
        errors = [line for line in log_path.read_text().splitlines() if "failed" in line][:5]

    fill_until = T0 + args.fill_minutes * 60
    # The batches whose history was full: they evaluated polls after the fill.
    measured_polls = sorted(t for t in seen if t >= fill_until)
    delays = [seen[t] - shipped[t] for t in measured_polls]
    # Steady: the batches after the one that completed the fill (their history was full).
    fill_snapshots = args.fill_minutes * 60 / POLL_SECONDS * args.groups
    steady: list[float] = []
    read = 0
    for batch in batches:
        if read >= fill_snapshots and batch.snapshots > 0:
            steady.append(batch.seconds)
        read += batch.snapshots
    report = {
        "fleet": {
            "apps": shape.groups,
            "partitions": shape.groups * shape.partitions_per_snapshot,
            "members_per_app": shape.instances * shape.threads,
            "polls_shipped": len(shipped),
            "poll_mb": poll_mb,
        },
        "input": args.input,
        "batches": len(batches),
        "batch_seconds_all": [b.seconds for b in batches],
        "snapshots_per_batch": [b.snapshots for b in batches],
        "steady_batches": len(steady),
        "steady_batch_seconds": (
            {
                "p50": round(percentile(steady, 0.5), 1),
                "p95": round(percentile(steady, 0.95), 1),
                "max": round(max(steady), 1),
                "mean": round(statistics.fmean(steady), 1),
            }
            if steady
            else None
        ),
        "ship_to_metrics_seconds": (
            {
                "p50": round(percentile(delays, 0.5), 1),
                "p95": round(percentile(delays, 0.95), 1),
                "max": round(max(delays), 1),
            }
            if delays
            else None
        ),
        "peak_rss_mb": peak_rss,
        "peak_rss_total_mb": sum(peak_rss.values()),
        "cpu_cores_while_measuring": round(cpu_share, 3) if cpu_share is not None else None,
        "checkpoint_mb": round(checkpoint_mb, 1),
        "job_errors": errors,
        "load_average": os.getloadavg(),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
