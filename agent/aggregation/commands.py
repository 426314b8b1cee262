"""The aggregation job's CLI commands as functions that return data; cli.py prints.

``ksmon findings`` reads the findings topic and needs no Spark; ``ksmon
aggregate`` starts one; ``--replay`` over recorded files needs none.
"""

import logging
import os
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from agent.aggregation.outputs.findings_topic import FindingsTopicError, read_events
from agent.config import Config, kafka_client_settings
from agent.errors import ConfigError, KsmonError, first_line
from agent.model.findings import Finding, current_findings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from agent.aggregation.job import AggregationJob
    from agent.aggregation.replay import ReplayResult

log = logging.getLogger(__name__)

_RESTART_BACKOFF = (5.0, 10.0, 30.0, 60.0)
_STOP_SIGNAL_GRACE = 1.0  # seconds a failed query waits for a stop signal under way


def open_findings(config: Config) -> list[Finding]:
    """The findings open now, folded from the findings topic's events."""
    findings = config.aggregation.findings
    if findings is None:
        raise ConfigError("aggregation.findings: not configured")
    settings = kafka_client_settings(config.cluster(findings.cluster))
    try:
        return current_findings(read_events(settings, findings.topic))
    except FindingsTopicError:
        raise
    except Exception as e:
        raise FindingsTopicError(
            f"cannot read findings topic {findings.topic} on cluster {findings.cluster}: "
            f"{type(e).__name__}: {e}"
        ) from e


def replay_recordings(config: Config, paths: list[Path]) -> "ReplayResult":
    """The rules over recorded files, in this process (no Spark: replay is plain Python)."""
    from agent.aggregation.replay import replay  # noqa: PLC0415
    from agent.aggregation.spark.checkpoint import checkpoint_dir  # noqa: PLC0415

    return replay(
        paths,
        config.aggregation.detectors,
        quarantine_dir=checkpoint_dir(config.aggregation) / "quarantine",
        workers=os.cpu_count() or 1,
    )


def run_aggregate(config: Config, *, master: str | None = None) -> None:
    """Run the streaming job until SIGINT or SIGTERM; restart its query after a failure."""
    from agent.aggregation.job import AggregationJob, job_session  # noqa: PLC0415 - Spark

    spark = job_session(config, master=master)
    # py4j reports its callback connection closing at shutdown as an error with a traceback.
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    _quiet_accumulator_server(spark)
    job = AggregationJob(config, spark)
    done = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda *_: done.set()) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    started = False
    try:
        started = job.start(until=done)
        if started:
            keep_running(job, done)
    finally:
        job.stop()
        stop_spark(spark)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if done.is_set() and started:
        log.info("ksmon aggregate stopped: a micro-batch under way runs again at the next start")
    elif done.is_set():
        log.info("ksmon aggregate stopped before its input appeared")


def _quiet_accumulator_server(spark: "SparkSession") -> None:
    """PySpark's accumulator server prints a traceback to stderr when the JVM's connection
    to it breaks, as it does when a stop signal reaches the JVM first (a supervisor signals
    the whole process group): a debug line is enough."""
    server = getattr(spark.sparkContext, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, address: log.debug(
            "Spark's accumulator connection from %s closed", address
        )


def stop_spark(spark: "SparkSession") -> None:
    """Stop Spark, unless its JVM went first (a signal to the whole process group)."""
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]  # noqa: PLC0415

    try:
        spark.stop()
    except (Py4JError, OSError) as e:
        log.info("Spark had already stopped: %s", first_line(e))


def keep_running(job: "AggregationJob", done: threading.Event) -> None:
    """Until ``done`` is set: whenever the started job's query fails (a micro-batch
    raised, Kafka was unreachable), start it again from its checkpoint after a back-off."""
    from py4j.protocol import Py4JError  # noqa: PLC0415

    failures = 0
    while not done.is_set():
        try:
            if not job.await_termination(1.0):
                continue
            reason = job.failure()
        except (Py4JError, OSError) as e:
            # Asking the query how it ended needs the JVM, which a stop signal to the
            # whole process group may have ended first: a normal stop.
            if done.wait(1.0):
                break
            raise KsmonError(
                f"Spark's JVM stopped under the job ({first_line(e, 200)}); its log says why"
            ) from e
        if reason is None:
            break
        # A supervisor's stop signal to the whole process group also kills what Spark's
        # JVM runs at that moment (Hadoop's chmod of a checkpoint file: exit code 143),
        # which fails the query an instant before this process's handler sees the signal:
        # a stop, not a failure to report.
        if done.wait(_STOP_SIGNAL_GRACE):
            break
        wait = _RESTART_BACKOFF[min(failures, len(_RESTART_BACKOFF) - 1)]
        failures += 1
        log.error("the streaming query failed (%s); restarting in %.0fs", reason, wait)
        if done.wait(wait):
            break
        # A topic deleted, a cluster away: said once, and the query restarts when it is back.
        if not job.wait_for_input(done):
            break
        job.start_query()
