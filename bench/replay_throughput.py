"""Benchmark: replay throughput of the aggregation job through all six detectors on local[2].

A recording of a synthetic fleet of Kafka Streams apps (``fleet.py``: by
default 100 apps, each 4 instances x 2 threads with 64 tasks over 64
partitions, polled every 10 s for 30 minutes; every app but the healthy ones
carries one of the problems the detectors look for) is written as JSON-lines
files, the model's own snapshots serialised as the agent does. Then, in a
fresh child process (so its peak RSS and the Spark driver's are the
replay's own), the job's replay path (``agent.aggregation.replay.replay``,
what ``ksmon aggregate --replay`` runs) reads the files: parse, tables,
rates, the six detectors at every recorded poll, hysteresis.

A *partition row* is one partition of one snapshot (one entry of a
snapshot's ``partitions``: one consumed partition as one poll saw it).
Throughput = partition rows / wall time of one replay call, files to events,
in a session that already ran one replay (the first run's time is reported
too: it includes Spark's code generation for the plans).

    .venv/bin/python bench/replay_throughput.py                 # prints a JSON report
    .venv/bin/python bench/replay_throughput.py --groups 20     # smaller
    .venv/bin/python bench/replay_throughput.py --data /tmp/rec # keep the recording for reruns
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from fleet import FleetShape, write_recording
from procfs import proc_status_kb

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def measure(data: Path, master: str, shuffle_partitions: int, runs: int) -> dict[str, object]:
    """Runs in a child process: one Spark session, ``runs`` replays of the recording."""
    from agent.aggregation.replay import replay
    from agent.aggregation.session import spark_session
    from agent.config.schema import DetectorsConfig

    started = time.monotonic()
    spark = spark_session(
        "ksmon-replay-bench",
        master=master,
        shuffle_partitions=shuffle_partitions,
        driver_memory="1g",
    )
    session_seconds = time.monotonic() - started
    # spark-submit execs the JVM: the gateway's process is the Spark driver.
    gateway = spark.sparkContext._gateway
    assert gateway is not None
    driver_pid = gateway.proc.pid
    files = sorted(data.glob("*.jsonl"))
    replays = []
    result = None
    for _ in range(runs):
        started = time.monotonic()
        result = replay(spark, files, DetectorsConfig())
        replays.append(round(time.monotonic() - started, 2))
    assert result is not None
    report: dict[str, object] = {
        "session_start_seconds": round(session_seconds, 2),
        "replay_seconds": replays,
        "snapshots_replayed": result.snapshots,
        "events": dict(Counter(f"{e.event} {e.finding.kind}" for e in result.events)),
        "open_at_end": dict(Counter(f.kind for f in result.open_findings)),
        "driver_jvm_peak_rss_mb": round(proc_status_kb(driver_pid, "VmHWM") / 1024),
        "python_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    spark.stop()
    return report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=100, help="Kafka Streams apps")
    parser.add_argument(
        "--partitions", type=int, default=32, help="input partitions per app (it consumes 2x)"
    )
    parser.add_argument("--minutes", type=int, default=30, help="recorded time, 10 s polls")
    parser.add_argument("--runs", type=int, default=2, help="replays in one session")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--shuffle-partitions", type=int, default=4, help="aggregation.spark.shuffle_partitions"
    )
    parser.add_argument("--data", type=Path, help="where the recording is kept (reused if there)")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # child mode
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.master, args.shuffle_partitions, args.runs)))
        return

    shape = FleetShape(groups=args.groups, input_partitions=args.partitions)
    polls = args.minutes * 6
    with tempfile.TemporaryDirectory(prefix="ksmon-replay-bench-") as scratch:
        data = args.data or Path(scratch) / "recording"
        manifest = data / "manifest.json"
        wanted = {"shape": shape.__dict__, "polls": polls, "t0": T0}
        if manifest.is_file() and json.loads(manifest.read_text())["wanted"] == wanted:
            written = json.loads(manifest.read_text())["written"]
        else:
            started = time.monotonic()
            snapshots, rows, size = write_recording(data, shape, T0, polls)
            written = {
                "snapshots": snapshots,
                "partition_rows": rows,
                "json_mb": round(size / 2**20, 1),
                "files": len(list(data.glob("*.jsonl"))),
                "write_seconds": round(time.monotonic() - started, 1),
            }
            manifest.write_text(json.dumps({"wanted": wanted, "written": written}))
        child = subprocess.run(
            [
                sys.executable,
                __file__,
                "--measure",
                str(data),
                "--master",
                args.master,
                "--shuffle-partitions",
                str(args.shuffle_partitions),
                "--runs",
                str(args.runs),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if child.returncode != 0:
            sys.exit(f"the replay failed:\n{child.stderr[-3000:]}")
        measured = json.loads(child.stdout.strip().splitlines()[-1])
    rows = written["partition_rows"]
    replays = measured["replay_seconds"]
    report = {
        "recording": {
            "apps": shape.groups,
            "partitions_per_snapshot": shape.partitions_per_snapshot,
            "members_per_group": shape.instances * shape.threads,
            "polls": polls,
            **written,
        },
        "master": args.master,
        "shuffle_partitions": args.shuffle_partitions,
        **measured,
        "partition_rows_per_second": [round(rows / s) for s in replays],
        "load_average": os.getloadavg(),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
