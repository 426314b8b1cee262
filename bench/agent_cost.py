"""Benchmark: what the agent costs at 1,000 groups x 20 partitions.

Two parts, on a cluster set up as ``bench/poll_scale.py`` does (one committed
offset per group and partition; ``--bootstrap`` reuses a cluster set up before,
otherwise a local broker is started and set up, after checking its open-file
limit):

* ``--profile``: in this process, polls as the agent does and times each step
  of a poll with the CPU clock (the Kafka requests and their decoding, the
  snapshots, their JSON for the sink and its gzip in the producer's batches,
  the /metrics exposition built from them), then prints the functions that
  took the most CPU (cProfile).
  ``--offsets-from N`` gives the snapshots offsets like a real cluster's (from N
  to 10 N, varied, some consumers behind) before the JSON, gzip and /metrics
  steps: the bench's partitions hold no records, every offset is 0, and
  /metrics writes large numbers differently, and varied text compresses less.
* otherwise: the real daemon (``ksmon agent``, default settings: 10 s polls,
  ``__consumer_offsets`` read, snapshots shipped to a topic on the same
  cluster) for ``--minutes``, scraped every 15 s like Prometheus (alternately
  with and without ``Accept-Encoding: gzip``). Reports its CPU seconds (user +
  system, from /proc, after a warm-up), each scrape's time and size, and its
  peak RSS (VmHWM).

    .venv/bin/python bench/agent_cost.py --topics 95 --minutes 5
    .venv/bin/python bench/agent_cost.py --bootstrap 127.0.0.1:9092 --profile

``--source DIR`` runs the daemon (not ``--profile``) from another checkout (``git archive <commit> |
tar -x -C DIR``), to measure an earlier version on the same cluster.
"""

import argparse
import contextlib
import cProfile
import gzip
import io
import json
import os
import pstats
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from poll_scale import PARTITIONS_PER_TOPIC, check_open_files, setup
from procfs import proc_status_kb

if TYPE_CHECKING:
    from agent.model import PartitionInfo, Snapshot

ROOT = Path(__file__).resolve().parents[1]
SCRAPE_SECONDS = 15.0
WARM_UP_SECONDS = 60.0
FULL_EXPOSITION_BYTES = 1_000_000  # /metrics once the groups are in it


def as_on_a_real_cluster(snapshot: "Snapshot", base: int) -> "Snapshot":
    """The snapshot with offsets like a real cluster's: the bench's partitions hold no
    records (every offset 0), a real cluster's offsets run to millions, differ from
    one partition to the next and trail each other. Numbers that large are written
    differently (and more slowly) in /metrics, and varied text compresses less, in
    /metrics and in the snapshot batches. Each partition's log end is drawn between
    ``base`` and ten times it; its consumer is caught up (two in three) or up to
    5,000 records behind; its log starts up to a million records before the end.
    The draws depend only on the partition, so every poll writes the same numbers."""
    import random
    from dataclasses import replace

    def real(p: "PartitionInfo") -> "PartitionInfo":
        # Not for secrets: a repeatable draw per partition.
        draw = random.Random(f"{snapshot.group.group_id}/{p.topic}/{p.partition}")  # noqa: S311
        end = draw.randint(base, 10 * base)
        lag = draw.choice((0, 0, draw.randint(1, 5000)))
        return replace(
            p,
            log_end_offset=end,
            log_start_offset=max(0, end - draw.randint(0, 1_000_000)),
            committed_offset=None if p.committed_offset is None else end - lag,
            lag=None if p.committed_offset is None else lag,
        )

    return replace(snapshot, partitions=tuple(real(p) for p in snapshot.partitions))


def in_batches(payloads: list[bytes], size: int) -> list[bytes]:
    """The payloads joined into batches of about ``size`` bytes, as the producer sends them."""
    batches, batch, length = [], [], 0
    for payload in payloads:
        batch.append(payload)
        length += len(payload)
        if length >= size:
            batches.append(b"".join(batch))
            batch, length = [], 0
    return [*batches, b"".join(batch)] if batch else batches


def profile(
    bootstrap: str, groups: int, polls: int, *, tune_gc: bool, offsets_from: int = 0
) -> dict[str, object]:
    from agent.collect.kafka_edge import KafkaEdge
    from agent.collect.poller import ClusterPoller, GroupFilter
    from agent.commands import tune_garbage_collection
    from agent.exposition.agent_state import AgentState
    from agent.exposition.metrics_cache import MetricsExposition
    from agent.kafka_python_fixes import gzip_batch
    from agent.model import AgentInfo
    from agent.transport.kafka_sink import PRODUCER_BATCH_BYTES
    from agent.transport.sink import SinkStats

    allow = re.compile(r"bench-group-0*(\d+)")

    class FirstN(GroupFilter):
        def wants(self, group_id: str) -> bool:
            match = allow.fullmatch(group_id)
            return match is not None and int(match.group(1)) < groups

    edge = KafkaEdge({"bootstrap_servers": bootstrap, "client_id": "ksmon-bench"})
    poller = ClusterPoller("bench", AgentInfo("bench", "0", "central"), edge, group_filter=FirstN())
    state = AgentState(["bench"], sink_stats=lambda: [SinkStats("kafka")])
    exposition = MetricsExposition(state, agent_id="bench", mode="central")
    poller.poll()  # the first poll refreshes metadata; steady polls are what repeats
    if tune_gc:
        tune_garbage_collection()  # as ksmon agent does once it is set up
    steps: dict[str, list[float]] = {
        "poll": [],
        "json": [],
        "batch_gzip": [],
        "exposition": [],
        "scrape": [],
    }
    profiler = cProfile.Profile()
    for n in range(2 * polls):
        # The first half times the steps; the second half runs under cProfile.
        if n >= polls:
            profiler.enable()
        started = time.process_time()
        result = poller.poll()
        steps["poll"].append(time.process_time() - started)
        if offsets_from:
            result.snapshots = [as_on_a_real_cluster(s, offsets_from) for s in result.snapshots]
        started = time.process_time()
        payloads = [s.to_json() for s in result.snapshots]
        steps["json"].append(time.process_time() - started)
        batches = in_batches(payloads, PRODUCER_BATCH_BYTES)
        started = time.process_time()
        packed = [gzip_batch(b) for b in batches]  # what the producer's batches cost to gzip
        steps["batch_gzip"].append(time.process_time() - started)
        started = time.process_time()
        state.record(result)
        exposition.update()
        steps["exposition"].append(time.process_time() - started)
        started = time.process_time()
        body = b"".join(exposition.render(gzipped=False).chunks)
        steps["scrape"].append(time.process_time() - started)
        profiler.disable()
    edge.close()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(25)
    return {
        "groups": len(result.snapshots),
        "partitions": sum(len(s.partitions) for s in result.snapshots),
        "snapshot_json_bytes": sum(len(p) for p in payloads),
        "snapshot_gzip_bytes": sum(len(p) for p in packed),
        "exposition_bytes": len(body),
        "cpu_seconds_per_poll": {k: round(sum(v[:polls]) / polls, 4) for k, v in steps.items()},
        "top_functions": out.getvalue(),
    }


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime


def scrape(port: int, *, gzipped: bool) -> tuple[float, int, int]:
    """(seconds, bytes on the wire, bytes of text)."""
    headers = {"Accept": "text/plain;version=0.0.4"}
    if gzipped:
        headers["Accept-Encoding"] = "gzip"
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=headers)
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - http, ours
        wire = response.read()
        encoding = response.headers.get("Content-Encoding")
    took = time.monotonic() - started
    text = gzip.decompress(wire) if encoding == "gzip" else wire
    return took, len(wire), len(text)


@contextlib.contextmanager
def daemon(
    bootstrap: str, work: Path, source: Path
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    from agent.embedded.ports import free_port

    port = free_port()
    config = work / "ksmon.yaml"
    config.write_text(
        f"agent: {{id: bench}}\n"
        f'http: {{listen: "127.0.0.1:{port}"}}\n'
        f"logging: {{format: json, level: warning}}\n"
        f'clusters:\n  - name: bench\n    bootstrap_servers: ["{bootstrap}"]\n'
        f"sink:\n  type: kafka\n  kafka: {{cluster: bench, topic: ksmon-bench-snapshots}}\n"
    )
    log = (work / "agent.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "agent", "agent", "--config", str(config)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=source,  # python -m agent imports the agent package found there first
    )
    try:
        yield process, port
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        log.close()


def run_daemon(bootstrap: str, minutes: float, source: Path) -> dict[str, object]:
    from agent.embedded.process import wait_until

    with (
        tempfile.TemporaryDirectory(prefix="ksmon-cost-") as work,
        daemon(bootstrap, Path(work), source) as (process, port),
    ):

        def polled() -> bool:
            try:
                _, _, size = scrape(port, gzipped=False)
            except OSError:
                return False
            return size > FULL_EXPOSITION_BYTES

        wait_until(polled, timeout=180, what="the agent's first full poll")
        time.sleep(WARM_UP_SECONDS)  # the __consumer_offsets tail's first read, caches
        cpu_start, wall_start = cpu_seconds(process.pid), time.monotonic()
        scrapes = []
        n = 0
        while time.monotonic() - wall_start < minutes * 60:
            took, wire, text = scrape(port, gzipped=n % 2 == 1)
            scrapes.append({"gzip": n % 2 == 1, "seconds": took, "wire": wire, "text": text})
            n += 1
            time.sleep(max(0.0, SCRAPE_SECONDS - took))
        wall = time.monotonic() - wall_start
        cpu = cpu_seconds(process.pid) - cpu_start
        hwm = proc_status_kb(process.pid, "VmHWM")

    def summary(rows: list[dict[str, object]]) -> dict[str, object]:
        seconds = sorted(float(r["seconds"]) for r in rows)  # type: ignore[arg-type]
        return {
            "scrapes": len(rows),
            "seconds_p50": round(seconds[len(seconds) // 2], 4),
            "seconds_max": round(seconds[-1], 4),
            "wire_bytes": rows[-1]["wire"],
            "text_bytes": rows[-1]["text"],
        }

    return {
        "measured_seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 2),
        "cpu_share_of_a_core": round(cpu / wall, 4),
        "cpu_seconds_per_5_minutes": round(cpu / wall * 300, 2),
        "scrape_plain": summary([r for r in scrapes if not r["gzip"]]),
        "scrape_gzip": summary([r for r in scrapes if r["gzip"]]),
        "peak_rss_mb": round(hwm / 1024, 1),
        "load_average": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", help="a cluster set up before (poll_scale's setup)")
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--polls", type=int, default=5, help="polls to profile")
    parser.add_argument(
        "--offsets-from",
        type=int,
        default=0,
        help="profile: give the snapshots offsets from N to 10 N, varied from partition "
        "to partition, some consumers behind (a real cluster's are millions, the bench's 0)",
    )
    parser.add_argument(
        "--default-gc", action="store_true", help="profile with Python's default GC thresholds"
    )
    parser.add_argument("--source", type=Path, default=ROOT, help="the checkout to run")
    args = parser.parse_args()
    if args.profile and args.source.resolve() != ROOT:
        # The profile polls in this process, with the agent package it imports.
        parser.error(
            "--source applies to the daemon; --profile runs this checkout's code in this "
            "process: run the other checkout's bench/agent_cost.py (or set PYTHONPATH to it)"
        )

    def measure(bootstrap: str) -> dict[str, object]:
        report: dict[str, object] = {"load_average_before": os.getloadavg()}
        if args.profile:
            report["profile"] = profile(
                bootstrap,
                args.groups,
                args.polls,
                tune_gc=not args.default_gc,
                offsets_from=args.offsets_from,
            )
        else:
            report["daemon"] = run_daemon(bootstrap, args.minutes, args.source)
        return report

    if args.bootstrap:
        report = measure(args.bootstrap)
    else:
        from agent.embedded.kafka import EmbeddedKafka, fetch_kafka

        check_open_files(args.topics * PARTITIONS_PER_TOPIC)
        with tempfile.TemporaryDirectory(prefix="ksmon-bench-") as work:
            kafka = EmbeddedKafka(fetch_kafka(), Path(work) / "kafka", heap_mb=2048)
            kafka.start()
            try:
                setup(kafka.bootstrap_servers, args.groups, args.topics)
                report = measure(kafka.bootstrap_servers)
            finally:
                kafka.stop()
    top = report.get("profile", {}).pop("top_functions", None)  # type: ignore[union-attr]
    print(json.dumps(report, indent=2))
    if top:
        print(top)


if __name__ == "__main__":
    main()
