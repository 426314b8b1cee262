"""Benchmark: the streaming job's steady micro-batch, one poll of a fleet per batch.

The job (``AggregationJob``, its own Spark session, ``local[2]``, default
detector windows, no findings topic) reads a spool directory, one file per
micro-batch. Each file is one poll of a synthetic fleet (``fleet.py``: Kafka
Streams apps of 4 instances x 2 threads; ``--partitions`` input partitions
each, so twice that consumed, input and repartition). The bench first fills
every group's look-back (``history_retention`` / 10 s polls, 127 polls with
the defaults), then measures ``--batches`` more: the wall time from the poll's
file landing in the spool to the job having folded it in (Spark's
``processAllAvailable``: source, the stateful operator, the driver's sink),
the CPU the job's processes used per batch, their peak RSS (the driver JVM,
Spark's Python workers, the driver's Python) and the checkpoint directory's
size at the end.

    .venv/bin/python bench/micro_batch.py                              # 1,000 apps x 20 partitions
    .venv/bin/python bench/micro_batch.py --groups 1 --partitions 4    # the floor: one small app
    .venv/bin/python bench/micro_batch.py --groups 100 --batches 5 --data /tmp/polls
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import yaml
from fleet import POLL_SECONDS, FleetShape, write_recording
from procfs import proc_status_kb

T0 = 1_767_225_600.0  # event time of the first poll: 2026-01-01T00:00:00Z
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().split(") ")[1].split()[1]) == pid:
                    children.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return children + [d for c in children for d in descendants(c)]


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLOCK_TICKS


def peak_kb(pid: int) -> int:
    """A live process's peak RSS; 0 for one gone or a zombie (no memory left)."""
    try:
        return proc_status_kb(pid, "VmHWM")
    except (OSError, KeyError):
        return 0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:  # noqa: PLR0915 - one linear script: prepare, fill, measure, report
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=1000, help="Kafka Streams apps")
    parser.add_argument(
        "--partitions", type=int, default=10, help="input partitions per app (it consumes 2x)"
    )
    parser.add_argument("--batches", type=int, default=20, help="micro-batches measured")
    parser.add_argument("--fill", type=int, help="polls before measuring (default: a look-back)")
    parser.add_argument("--data", type=Path, help="where the serialised polls are kept (reused)")
    parser.add_argument("--shuffle-partitions", type=int, default=4)
    parser.add_argument("--buckets", type=int, default=32)
    parser.add_argument("--driver-memory", default="1GiB", help="aggregation.spark.driver_memory")
    parser.add_argument(
        "--driver-java-options", default="", help="extra JVM flags for the driver, e.g. a GC"
    )
    parser.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting on top of the job's (repeatable), e.g. RocksDB's memory",
    )
    args = parser.parse_args()

    from agent.aggregation.job import AggregationJob, job_session
    from agent.config import parse_config

    shape = FleetShape(groups=args.groups, input_partitions=args.partitions)
    with tempfile.TemporaryDirectory(prefix="ksmon-batch-bench-") as scratch:
        work = Path(scratch)
        spool = work / "spool"
        spool.mkdir()
        document = {
            "agent": {"id": "bench-agent"},
            "logging": {"format": "text"},
            "clusters": [{"name": "bench", "bootstrap_servers": ["127.0.0.1:9"]}],
            "sink": {"type": "spool", "spool": {"directory": str(spool)}},
            "aggregation": {
                "checkpoint_dir": str(work / "checkpoint"),
                "trigger_interval": "1s",
                "buckets": args.buckets,
                "input": {"spool": {"directory": str(spool), "max_files_per_batch": 1}},
                "findings": {"publish": False},
                "spark": {
                    "master": "local[2]",
                    "shuffle_partitions": args.shuffle_partitions,
                    "driver_memory": args.driver_memory,
                },
            },
        }
        config = parse_config(yaml.safe_dump(document), str(work / "ksmon.yaml"), {})
        params = config.aggregation.detectors
        fill = args.fill if args.fill is not None else int(params.history_retention // POLL_SECONDS)
        polls = fill + args.batches
        data = args.data or work / "polls"
        manifest = data / "manifest.json"
        wanted = {"shape": shape.__dict__, "t0": T0}
        written = json.loads(manifest.read_text()) if manifest.is_file() else {}
        if {k: written.get(k) for k in wanted} != wanted or written.get("polls", 0) < polls:
            write_recording(data, shape, T0, polls, polls_per_file=1)
            manifest.write_text(json.dumps({**wanted, "polls": polls}))
        files = sorted(data.glob("snapshots-*.jsonl"))[:polls]

        submit = [f"--conf {setting}" for setting in args.spark_conf]
        if args.driver_java_options:
            submit.append(f'--driver-java-options "{args.driver_java_options}"')
        if submit:
            # PySpark starts the driver JVM with these spark-submit arguments.
            os.environ["PYSPARK_SUBMIT_ARGS"] = " ".join([*submit, "pyspark-shell"])
        started = time.monotonic()
        spark = job_session(config)
        session_s = time.monotonic() - started
        # spark-submit execs the JVM: the gateway's process is the Spark driver.
        gateway = spark.sparkContext._gateway
        assert gateway is not None
        jvm = gateway.proc.pid
        job = AggregationJob(config, spark, serve_http=False)
        job.start()

        def split_cpu() -> dict[str, float]:
            """CPU seconds so far of the driver's Python, the JVM and Spark's Python
            workers (those alive now: a worker lives across batches)."""
            return {
                "driver_python": cpu_seconds([os.getpid()]),
                "jvm": cpu_seconds([jvm]),
                "python_workers": cpu_seconds(descendants(jvm)),
            }

        def one_poll(index: int) -> tuple[float, dict[str, float]]:
            """Wall and CPU seconds (per process kind) from the poll's file landing to the
            job done with it."""
            target = spool / f"{files[index].stem}.jsonl"
            cpu_before = split_cpu()
            begun = time.monotonic()
            shutil.copyfile(files[index], spool / f"{target.stem}.part")
            (spool / f"{target.stem}.part").replace(target)
            job.process_available()
            wall = time.monotonic() - begun
            cpu_after = split_cpu()
            return wall, {k: cpu_after[k] - cpu_before[k] for k in cpu_after}

        started = time.monotonic()
        fill_walls = [one_poll(i)[0] for i in range(fill)]
        fill_s = time.monotonic() - started
        measured = [one_poll(i) for i in range(fill, polls)]
        walls = [w for w, _cpu in measured]
        cpus = [sum(c.values()) for _w, c in measured]
        cpu_split = {k: statistics.median(c[k] for _w, c in measured) for k in measured[0][1]}
        peak = {
            "driver_jvm_mb": proc_status_kb(jvm, "VmHWM") // 1024,
            "python_workers_mb": sum(peak_kb(p) for p in descendants(jvm)) // 1024,
            "driver_python_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        }
        view = job.latest.view()
        progress = [
            (p["batchId"], p["numInputRows"], p["durationMs"])
            for p in job._query.recentProgress  # type: ignore[attr-defined]
        ]
        job.stop()
        checkpoint_mb = (
            sum(f.stat().st_size for f in (work / "checkpoint").rglob("*") if f.is_file()) / 2**20
        )
        spark.stop()
    print(
        json.dumps(
            {
                "partitions_per_poll": shape.groups * shape.partitions_per_snapshot,
                "driver_memory": args.driver_memory,
                "driver_java_options": args.driver_java_options,
                "spark_conf": args.spark_conf,
                "groups": shape.groups,
                "fill_polls": fill,
                "session_start_s": round(session_s, 1),
                "fill_s": round(fill_s, 1),
                "first_batches_s": [round(w, 2) for w in fill_walls[:3]],
                "fill_last_batches_s": [round(w, 2) for w in fill_walls[-3:]],
                "steady_s": [round(w, 2) for w in walls],
                "steady_p50_s": round(statistics.median(walls), 2),
                "steady_p95_s": round(percentile(walls, 0.95), 2),
                "steady_cpu_s_per_batch_p50": round(statistics.median(cpus), 2),
                "steady_cpu_s_per_batch_p50_by_process": {
                    k: round(v, 2) for k, v in cpu_split.items()
                },
                "peak_rss": {**peak, "total_mb": sum(peak.values())},
                "checkpoint_mb": round(checkpoint_mb, 1),
                "open_findings": len(view.open_findings),
                "snapshots_processed": view.snapshots_processed,
                "load_average": os.getloadavg(),
                "spark_progress_last": progress[-6:],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
