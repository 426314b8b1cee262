"""Benchmark: the streaming job's steady micro-batch at the target's size, without a stream.

Issue 3's target is a micro-batch of at most 5 s with 20,000 partitions
snapshotted every 10 s. ``stream_latency.py`` measures it end to end through
a real topic, but its history fills in real time (21 minutes with the
default windows) before a batch is steady. This bench fills the job's
history directly, as the job stores it (each poll's snapshots taken apart
into the detectors' tables, six polls per stored batch unless told), then hands the job
one poll per micro-batch through the code the streaming query calls
(``AggregationJob.process_batch``: parse, store, evaluate through the plan
built once, hysteresis, the batch's state file). Same fleet as the other
benches (``fleet.py``), the job's own Spark session (``local[2]``), default
detector windows, no findings topic.

    .venv/bin/python bench/micro_batch.py                  # 100 apps x 200 partitions
    .venv/bin/python bench/micro_batch.py --polls-per-batch 4 --batches 4  # a job 4 polls behind
    .venv/bin/python bench/micro_batch.py --groups 10 --batches 5
"""

import argparse
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path

import yaml
from fleet import POLL_SECONDS, FleetShape, write_recording
from procfs import proc_status_kb

T0 = 1_767_225_600.0  # event time of the first poll: 2026-01-01T00:00:00Z
FILL_POLLS_PER_BATCH = 6


class BatchLog(logging.Handler):
    """The job's own account of each micro-batch: (total, reading, evaluating, publishing)."""

    def __init__(self) -> None:
        super().__init__()
        self.phases: dict[int, tuple[float, float, float, float]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args
        if str(record.msg).startswith("micro-batch %d: %d snapshots") and isinstance(args, tuple):
            total, reading, evaluating, publishing = (float(a) for a in args[4:8])  # type: ignore[arg-type]
            self.phases[int(args[0])] = (total, reading, evaluating, publishing)  # type: ignore[call-overload]


def main() -> None:  # noqa: PLR0915 - one linear script: prepare, fill, measure, report
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=100, help="Kafka Streams apps")
    parser.add_argument(
        "--partitions", type=int, default=100, help="input partitions per app (it consumes 2x)"
    )
    parser.add_argument("--batches", type=int, default=10, help="micro-batches measured")
    parser.add_argument(
        "--polls-per-batch",
        type=int,
        default=1,
        help="polls each measured batch carries (a job behind by k polls reads k at once)",
    )
    parser.add_argument(
        "--fill-polls-per-batch",
        type=int,
        default=FILL_POLLS_PER_BATCH,
        help="polls per stored batch of the history (a job that keeps up stores one or two)",
    )
    parser.add_argument(
        "--judged-polls-per-batch",
        type=int,
        default=0,
        help="the job's aggregation.judged_polls_per_batch (0: every poll)",
    )
    parser.add_argument("--data", type=Path, help="where the serialised polls are kept (reused)")
    args = parser.parse_args()

    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    from agent.aggregation.job import AggregationJob, job_session
    from agent.aggregation.parse import parse_snapshots, take_inventory
    from agent.aggregation.tables import build_tables
    from agent.config import parse_config

    shape = FleetShape(groups=args.groups, input_partitions=args.partitions)
    with tempfile.TemporaryDirectory(prefix="ksmon-batch-bench-") as scratch:
        work = Path(scratch)
        document = {
            "agent": {"id": "bench-agent"},
            "logging": {"format": "text"},
            "clusters": [{"name": "bench", "bootstrap_servers": ["127.0.0.1:9"]}],
            "sink": {"type": "spool", "spool": {"directory": str(work / "spool")}},
            "aggregation": {
                "checkpoint_dir": str(work / "checkpoint"),
                "judged_polls_per_batch": args.judged_polls_per_batch,
                "input": {"spool": {"directory": str(work / "spool")}},
                "findings": {"publish": False},
                "spark": {"master": "local[2]"},
            },
        }
        config = parse_config(yaml.safe_dump(document), str(work / "ksmon.yaml"), {})
        params = config.aggregation.detectors
        fill = int(params.history_retention // POLL_SECONDS) + 1
        polls = fill + args.batches * args.polls_per_batch
        data = args.data or work / "polls"
        manifest = data / "manifest.json"
        wanted = {"shape": shape.__dict__, "t0": T0}
        written = json.loads(manifest.read_text()) if manifest.is_file() else {}
        if {k: written.get(k) for k in wanted} != wanted or written.get("polls", 0) < polls:
            write_recording(data, shape, T0, polls, polls_per_file=1)
            manifest.write_text(json.dumps({**wanted, "polls": polls}))
        files = sorted(data.glob("snapshots-*.jsonl"))[:polls]

        spark = job_session(config)
        job = AggregationJob(config, spark, serve_http=False)
        log = BatchLog()
        logging.getLogger("agent.aggregation.job").addHandler(log)
        logging.getLogger("agent.aggregation.job").setLevel(logging.INFO)

        started = time.monotonic()
        job.build_plan()
        plan_s = time.monotonic() - started

        def poll_frame(paths: list[Path]) -> DataFrame:
            return spark.read.text([str(p) for p in paths]).select(
                "value", F.lit("bench").alias("origin")
            )

        started = time.monotonic()
        batch_id = 0
        for first in range(0, fill, args.fill_polls_per_batch):
            parsed = parse_snapshots(
                poll_frame(files[first : min(fill, first + args.fill_polls_per_batch)])
            )
            keys = take_inventory(parsed).snapshots
            job.history.append(build_tables(parsed.parsed), batch_id, keys)
            batch_id += 1
        fill_s = time.monotonic() - started

        durations = []
        for first in range(fill, polls, args.polls_per_batch):
            started = time.monotonic()
            job.process_batch(poll_frame(files[first : first + args.polls_per_batch]), batch_id)
            durations.append(time.monotonic() - started)
            _total, reading, evaluating, publishing = log.phases[batch_id]
            print(
                f"batch {batch_id}: {durations[-1]:.1f} s (reading and storing {reading:.1f} s, "
                f"evaluating {evaluating:.1f} s, publishing {publishing:.1f} s)",
                flush=True,
            )
            batch_id += 1
        # spark-submit execs the JVM: the gateway's process is the Spark driver.
        gateway = spark.sparkContext._gateway
        assert gateway is not None
        jvm_peak_mb = proc_status_kb(gateway.proc.pid, "VmHWM") // 1024
        steady = durations[1:] or durations
        print(
            json.dumps(
                {
                    "partitions_per_poll": shape.groups * shape.partitions_per_snapshot,
                    "history_polls": fill,
                    "polls_per_batch": args.polls_per_batch,
                    "judged_polls_per_batch": args.judged_polls_per_batch,
                    "history_batches": batch_id - len(durations),
                    "plan_built_s": round(plan_s, 1),
                    "history_filled_s": round(fill_s, 1),
                    "first_batch_s": round(durations[0], 1),
                    "steady_p50_s": round(statistics.median(steady), 1),
                    "steady_max_s": round(max(steady), 1),
                    "open_findings": len(job.state.view().open_findings),
                    "jvm_peak_rss_mb": jvm_peak_mb,
                }
            )
        )
        spark.stop()


if __name__ == "__main__":
    main()
