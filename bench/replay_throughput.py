"""Benchmark: replay throughput, every rule at every recorded poll, without Spark.

A recording of a synthetic fleet of Kafka Streams apps (``fleet.py``: by
default 100 apps, each 4 instances x 2 threads with 64 tasks over 64
partitions, polled every 10 s for 30 minutes; every app but the healthy ones
carries one of the problems the rules look for) is written as JSON-lines
files, the model's own snapshots serialised as the agent does. Then, in a
fresh child process (so its peak RSS is the replay's own), the job's replay
path (``agent.aggregation.replay.replay``, what ``ksmon aggregate --replay``
runs: decode, windows, every rule at every poll, hysteresis, the cluster
rules) reads the files, with ``--workers`` processes sharing the groups out.

A *partition row* is one partition of one snapshot (one entry of a
snapshot's ``partitions``: one consumed partition as one poll saw it).
Throughput = partition rows / wall time of one replay call, files to events.

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

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def measure(data: Path, workers: int, runs: int) -> dict[str, object]:
    """Runs in a child process: ``runs`` replays of the recording."""
    from agent.aggregation.replay import replay
    from agent.config.schema import DetectorsConfig

    files = sorted(data.glob("*.jsonl"))
    replays = []
    cpu = []
    result = None
    for _ in range(runs):
        started, used = time.monotonic(), _cpu_seconds()
        result = replay(files, DetectorsConfig(), workers=workers)
        replays.append(round(time.monotonic() - started, 2))
        cpu.append(round(_cpu_seconds() - used, 2))
    assert result is not None
    return {
        "replay_seconds": replays,
        # This process's and its workers' CPU time (the workers' once they have ended): on
        # a shared machine, what the wall time would be at best with every core free is
        # about this over the workers.
        "replay_cpu_seconds": cpu,
        "snapshots_replayed": result.snapshots,
        "events": dict(Counter(f"{e.event} {e.finding.kind}" for e in result.events)),
        "open_at_end": dict(Counter(f.kind for f in result.open_findings)),
        # The workers' peaks (spawned children) and the parent's own.
        "children_peak_rss_mb": round(
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        ),
        "python_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def _cpu_seconds() -> float:
    own, ended = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=100, help="Kafka Streams apps")
    parser.add_argument(
        "--partitions", type=int, default=32, help="input partitions per app (it consumes 2x)"
    )
    parser.add_argument("--minutes", type=int, default=30, help="recorded time, 10 s polls")
    parser.add_argument("--runs", type=int, default=2, help="replays in one session")
    parser.add_argument("--workers", type=int, default=2, help="processes sharing the groups")
    parser.add_argument("--data", type=Path, help="where the recording is kept (reused if there)")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # child mode
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.workers, args.runs)))
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
                "--workers",
                str(args.workers),
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
        "workers": args.workers,
        **measured,
        "partition_rows_per_second": [round(rows / s) for s in replays],
        "load_average": os.getloadavg(),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
