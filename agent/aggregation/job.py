"""``ksmon aggregate``: the streaming job, its micro-batches, and restarts that lose nothing.

A Structured Streaming query reads snapshots (the snapshot topic or a spool
directory), keys them by a bucket of groups and judges them in the stateful
operator (``operator``): each group's windows and hysteresis live in Spark's
state store, only groups with a new poll are judged, and each bucket reports
what changed. ``foreachBatch`` hands the reports to the driver, per batch id:

1. the reports are collected (once: the operator's state is committed with
   the batch);
2. the board folds them in (``board``): open findings, gauges, the cluster
   rules over what every group of a cluster shares;
3. the batch's events and the board's lasting part go to
   ``ledger/batch-<id>.json`` (atomic);
4. the events go to the findings topic, then ``published.json`` records it;
5. /metrics shows the board.

Spark re-runs a batch whose commit it did not record, from the state of the
batch before, so the operator reports the same again (the rules are
deterministic). If the batch's ledger file exists, the batch was folded in:
the job only publishes what is not on the topic yet (event ids are
deterministic) and moves on. So a job killed at any point and restarted
neither loses nor repeats a finding.
"""

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark.errors import PySparkRuntimeError, StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

from agent.aggregation.judging.board import BatchTally, Board
from agent.aggregation.outputs.api import JobApi
from agent.aggregation.outputs.findings_topic import FindingsPublisher, FindingsTopicError
from agent.aggregation.outputs.job_metrics import JobExposition
from agent.aggregation.outputs.latest import LatestView
from agent.aggregation.outputs.quarantine import write_rejected
from agent.aggregation.outputs.task_loads_topic import TaskLoadsPublisher
from agent.aggregation.outputs.topics import TopicToCreate
from agent.aggregation.spark.checkpoint import Checkpoint, checkpoint_dir
from agent.aggregation.spark.input_wait import (
    InputWatch,
    JobInput,
    Probe,
    directory_probe,
    kafka_input,
    spool_input,
    topic_probe,
    wait_for_input,
)
from agent.aggregation.spark.kafka_package import kafka_source_conf
from agent.aggregation.spark.operator import judged, outputs
from agent.aggregation.spark.session import spark_session
from agent.aggregation.spark.source import (
    java_options_conf,
    jvm_system_properties,
    kafka_stream,
    spool_stream,
)
from agent.config import Config, kafka_client_settings
from agent.config.schema import OutputTopicConfig
from agent.errors import ConfigError, SetupError, described, first_line
from agent.exposition.http import MetricsServer
from agent.model.findings import FindingEvent
from agent.model.records import from_plain, to_plain

log = logging.getLogger(__name__)

_BATCHES_KEPT = 20


def job_session(config: Config, *, master: str | None = None) -> SparkSession:
    """The Spark session for the job: with the Kafka source when it reads a topic (Spark
    fetches it, or takes it from ``aggregation.spark.jars_dir``)."""
    spark = config.aggregation.spark
    job_input = config.aggregation.input
    source_cluster = config.cluster(job_input.kafka.cluster) if job_input.kafka else None
    sasl = source_cluster.security.sasl if source_cluster else None
    msk_iam = sasl is not None and sasl.mechanism == "AWS_MSK_IAM"
    extra = kafka_source_conf(spark, msk_iam=msk_iam) if job_input.type == "kafka" else None
    if source_cluster is not None:
        # The Kafka source's Java clients: token endpoints they may use, Kerberos.
        extra = {**(extra or {}), **java_options_conf(jvm_system_properties([source_cluster]))}
    try:
        return spark_session(
            "ksmon-aggregate",
            master=master or spark.master,
            shuffle_partitions=spark.shuffle_partitions,
            driver_memory=f"{max(1, spark.driver_memory // 2**20)}m",
            extra=extra,
        )
    except PySparkRuntimeError as e:
        fetching = ""
        if extra and "spark.jars.packages" in extra:
            mirror = extra.get("spark.jars.repositories")
            fetching = (
                f"; or it could not fetch {extra['spark.jars.packages']} from Maven Central"
                + (f" or {mirror}" if mirror else "")
                + " (set aggregation.spark.packages_repository to a reachable Maven mirror, "
                "or aggregation.spark.jars_dir to a directory holding its jars)"
            )
        raise SetupError(
            f"Spark's JVM did not start ({first_line(e, 200)}): its output above says why; "
            f"it needs a Java runtime (java on PATH or JAVA_HOME){fetching}"
        ) from e


@dataclass(frozen=True)
class BatchRecord:
    """What ``ledger/batch-<id>.json`` holds: the batch's events and the board after it."""

    batch_id: int
    events: list[FindingEvent]
    board: dict[str, object]

    def to_json(self) -> str:
        return json.dumps(
            {
                "batch_id": self.batch_id,
                "events": [to_plain(e) for e in self.events],
                "board": self.board,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> "BatchRecord":
        plain = json.loads(text)
        return cls(
            batch_id=int(plain["batch_id"]),
            events=[from_plain(FindingEvent, e) for e in plain["events"]],
            board=dict(plain["board"]),
        )


class BatchLedger:
    """The per-batch records and the publishing mark, under the checkpoint directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._published = directory / "published.json"

    def path(self, batch_id: int) -> Path:
        return self.directory / f"batch-{batch_id:012d}.json"

    def load(self, batch_id: int) -> BatchRecord | None:
        path = self.path(batch_id)
        return BatchRecord.from_json(path.read_text()) if path.is_file() else None

    def latest_before(self, batch_id: int) -> BatchRecord | None:
        ids = [i for i in self._ids() if i < batch_id]
        return self.load(ids[-1]) if ids else None

    def save(self, record: BatchRecord) -> None:
        path = self.path(record.batch_id)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(record.to_json())
        tmp.replace(path)
        for old in self._ids()[:-_BATCHES_KEPT]:
            self.path(old).unlink(missing_ok=True)

    def published_through(self) -> int:
        try:
            return int(json.loads(self._published.read_text())["through"])
        except (OSError, ValueError, KeyError, TypeError):
            return -1

    def mark_published(self, batch_id: int) -> None:
        tmp = self._published.with_suffix(".tmp")
        tmp.write_text(json.dumps({"through": batch_id}))
        tmp.replace(self._published)

    def _ids(self) -> list[int]:
        ids = []
        for path in self.directory.glob("batch-*.json"):
            try:
                ids.append(int(path.stem.removeprefix("batch-")))
            except ValueError:
                continue
        return sorted(ids)


class AggregationJob:
    """The streaming job. ``start`` serves /metrics and starts the query; ``stop`` stops both."""

    def __init__(
        self,
        config: Config,
        spark: SparkSession,
        *,
        clock: Callable[[], float] = time.time,
        serve_http: bool = True,
    ) -> None:
        self.config = config
        self.aggregation = config.aggregation
        self.params = config.aggregation.detectors
        self.spark = spark
        self.clock = clock
        self.directory = checkpoint_dir(self.aggregation)
        self.checkpoint = Checkpoint(
            self.directory,
            buckets=self.aggregation.buckets,
            partitions=int(spark.conf.get("spark.sql.shuffle.partitions") or "1"),
        )
        self.ledger = BatchLedger(self.checkpoint.ledger)
        quiet_query_failures(spark)
        self.latest = LatestView()
        self.board = Board()
        self._board_batch: int | None = None  # the batch the board reflects
        self._late_counted_through = -1  # the last batch whose watermark drops are counted
        self._stopping = threading.Event()
        self.publisher = self._publisher()
        self.task_loads = self._task_loads_publisher()
        self._findings_topic_failed = False  # said so at start: say when it works
        self._batch_failure: str | None = None  # why the last micro-batch failed, one line
        self._query: object | None = None
        self._lock = threading.Lock()
        self.server: MetricsServer | None = None
        if serve_http:
            listen = self.aggregation.listen
            self.server = MetricsServer(
                None,
                listen.host,
                listen.port,
                ready=lambda: self.latest.view().started,
                exposition=JobExposition(self.latest),
                api=JobApi(self.latest),
            )

    # -- lifecycle -----------------------------------------------------------------------

    def start(self, until: threading.Event | None = None) -> bool:
        """Serve /metrics, wait for the input to exist, start the query. False: ``until``
        (or ``stop``) came first, and the query was not started."""
        if self.server is not None:
            self.server.start()
        self.checkpoint.prepare()
        latest = self.ledger.latest_before(2**62)
        if latest is not None:
            self.board = Board.restored(latest.board)
            self._board_batch = latest.batch_id
            self.latest.restored(self.board.open_findings(), self.board.newest)
        if self.publisher is not None:
            # Now, so `ksmon findings` finds the topic before the first finding; a cluster
            # away at start is no reason to stop: each batch tries again before publishing.
            try:
                self.publisher.ensure_topic()
                self._close_earlier_layout()
            except FindingsTopicError as e:
                log.warning("%s; trying again with the first micro-batch", e)
                self._findings_topic_failed = True
        if not self.wait_for_input(until):
            return False
        self.start_query()
        self.latest.started()
        log.info(
            "ksmon aggregate: reading %s, checkpoints in %s, metrics on %s",
            self._describe_input(),
            self.directory,
            self.aggregation.listen,
        )
        return True

    def wait_for_input(self, until: threading.Event | None = None) -> bool:
        """Until the snapshot topic or spool directory exists (True), or ``until`` or
        ``stop`` (False); what it waits for is said once, and /metrics says it waits."""
        job_input, probe = self._input_probe()
        return wait_for_input(
            probe, InputWatch(job_input), until or self._stopping, waiting=self.latest.waiting
        )

    def start_query(self) -> None:
        """(Re)start the streaming query from its checkpoint: after a failed micro-batch,
        Spark re-runs that batch, which the ledger makes idempotent."""
        self._batch_failure = None
        self._query = (
            judged(self._source(), self.checkpoint.keys, self.params)
            .writeStream.foreachBatch(self._on_batch)
            .option("checkpointLocation", str(self.checkpoint.stream))
            .trigger(processingTime=f"{self.aggregation.trigger_interval} seconds")
            .queryName("ksmon-aggregate")
            .start()
        )

    def failure(self) -> str | None:
        """Why the streaming query stopped, if it failed."""
        query = self._query
        if query is None or query.isActive:  # type: ignore[attr-defined]
            return None
        error = query.exception()  # type: ignore[attr-defined]
        if error is None:
            return None
        log.debug("the streaming query's failure in full: %s", error)
        # A failed micro-batch reaches Spark as a Python traceback: its own line says why.
        return self._batch_failure or first_line(error, 500)

    def await_termination(self, timeout: float | None = None) -> bool:
        """Whether the query has stopped within ``timeout``, failed or not: a failure is
        for ``failure`` to tell (pyspark raises it here, which would end the caller)."""
        query = self._query
        if query is None:
            return True
        try:
            return bool(query.awaitTermination(timeout))  # type: ignore[attr-defined]
        except StreamingQueryException:
            return True

    def process_available(self) -> None:
        """Block until every snapshot available now has been processed (tests, demos)."""
        if self._query is not None:
            self._query.processAllAvailable()  # type: ignore[attr-defined]

    def stop(self) -> None:
        self._stopping.set()
        query, self._query = self._query, None
        if query is not None:
            try:
                query.stop()  # type: ignore[attr-defined]
            except (Py4JError, OSError) as e:
                # A signal to the whole process group (systemd's default, a supervisor's
                # stop) reaches Spark's JVM too, whose shutdown hook may have stopped
                # everything, or the JVM exited: nothing is left to stop.
                log.info("the streaming query was already stopped with Spark: %s", first_line(e))
        if self.publisher is not None:
            self.publisher.close()
        if self.task_loads is not None:
            self.task_loads.close()
        if self.server is not None:
            self.server.stop()

    # -- one micro-batch ----------------------------------------------------------------

    def _on_batch(self, batch: DataFrame, batch_id: int) -> None:
        with self._lock:
            started = self.clock()
            try:
                self._process(batch, batch_id, started)
            except Exception as e:
                self._board_batch = None  # folded half-way, perhaps: read it back next time
                if self._stopping.is_set():
                    # Stopping interrupts the batch under way: not a failure to report.
                    log.info(
                        "micro-batch %d stopped half-way; it runs again at the next start", batch_id
                    )
                    raise
                self.latest.batch_failed()
                self._batch_failure = f"micro-batch {batch_id}: {described(e)}"
                if isinstance(e, FindingsTopicError):
                    # Expected (the findings cluster away): one line; the batch runs again.
                    log.warning("micro-batch %d failed: %s", batch_id, described(e))
                else:
                    log.exception("micro-batch %d failed; the job carries on", batch_id)
                raise

    def _process(self, batch: DataFrame, batch_id: int, started: float) -> None:
        done = self.ledger.load(batch_id)
        if done is not None:
            log.info(
                "micro-batch %d was folded in before a restart; publishing what is missing",
                batch_id,
            )
            # Still computed: the stateful operator commits its state with the batch (Spark
            # checks every state store did), and from the same state it reports the same.
            batch.collect()
            self._publish(done)
            self.board = Board.restored(done.board)
            self._board_batch = batch_id
            self.latest.restored(self.board.open_findings(), self.board.newest)
            return
        if self._board_batch != batch_id - 1:
            previous = self.ledger.latest_before(batch_id)
            self.board = Board.restored(previous.board) if previous is not None else Board()
        # One action: the operator's state is committed with the batch it computes.
        reports = outputs(batch.collect())
        judged_at = self.clock()
        events, tally = self.board.apply(reports, self.params)
        rejected = [r for out in reports for r in out.rejected]
        if rejected:
            write_rejected(rejected, self.checkpoint.quarantine, f"batch-{batch_id:012d}")
            log.warning("micro-batch %d: set aside %s", batch_id, dict(tally.rejected))
        if tally.windows_dropped:
            log.warning(
                "micro-batch %d: the look-back of %d groups was kept by another ksmon version "
                "and is refilled from new polls (open findings carry on)",
                batch_id,
                tally.windows_dropped,
            )
        record = BatchRecord(batch_id, events, self.board.saved())
        self.ledger.save(record)
        self._board_batch = batch_id
        self._publish(record)
        if self.task_loads is not None:
            self.task_loads.publish(self.board.task_rates())
        finished = self.clock()
        self.latest.batch_done(
            at=finished,
            seconds=finished - started,
            open_findings=self.board.open_findings(),
            gauges=self.board.gauge_rows(),
            events=events,
            processed=tally.accepted,
            quarantined=dict(tally.rejected),
            late=tally.late + self._dropped_by_watermark(),
            not_judged=tally.duplicates,
            newest=self.board.newest,
        )
        _log_batch(batch_id, events, tally, (judged_at - started, finished - judged_at))

    def _dropped_by_watermark(self) -> int:
        """Snapshots Spark dropped as older than the watermark, in batches not yet counted
        (its progress report of a batch is ready by the next one)."""
        query = self._query
        progress = None if query is None else query.lastProgress  # type: ignore[attr-defined]
        if not progress or int(progress["batchId"]) <= self._late_counted_through:
            return 0
        self._late_counted_through = int(progress["batchId"])
        return sum(
            int(op.get("numRowsDroppedByWatermark", 0)) for op in progress.get("stateOperators", [])
        )

    def _publish(self, record: BatchRecord) -> None:
        if self.publisher is None or record.batch_id <= self.ledger.published_through():
            return
        self.publisher.ensure_topic()
        if self._findings_topic_failed:
            self._findings_topic_failed = False
            log.info("findings topic %s is ready; publishing findings", self.publisher.topic)
        events = record.events
        if events:
            sent = self.publisher.already_published(events)
            self.publisher.publish(e for e in events if e.event_id not in sent)
        self.ledger.mark_published(record.batch_id)

    def _close_earlier_layout(self) -> None:
        """Findings an earlier ksmon's job left open (its checkpoint layout had no state
        store): closed on the topic once, since this job cannot carry their hysteresis."""
        if self.publisher is None:
            return
        closing = self.checkpoint.earlier_open_findings()
        if closing:
            at = self.clock()
            self.publisher.publish(FindingEvent.of("close", at, f) for f in closing)
            log.warning(
                "closed the %d findings the earlier job left open; those still true open "
                "again within their rules' look-back",
                len(closing),
            )
        self.checkpoint.earlier_handled()

    # -- edges ---------------------------------------------------------------------------

    def _source(self) -> DataFrame:
        job_input = self.aggregation.input
        if job_input.type == "spool" and job_input.spool is not None:
            return spool_stream(self.spark, job_input.spool)
        if job_input.kafka is not None:
            return kafka_stream(
                self.spark, self.config.cluster(job_input.kafka.cluster), job_input.kafka
            )
        raise ConfigError("aggregation.input: no kafka or spool input configured")

    def _input_probe(self) -> tuple[JobInput, Callable[[], Probe]]:
        job_input = self.aggregation.input
        if job_input.type == "spool" and job_input.spool is not None:
            directory = job_input.spool.directory
            return spool_input(directory), partial(directory_probe, directory)
        if job_input.kafka is not None:
            cluster = self.config.cluster(job_input.kafka.cluster)
            topic = job_input.kafka.topic
            return (
                kafka_input(topic, cluster.name, cluster.bootstrap_servers),
                partial(topic_probe, kafka_client_settings(cluster), topic),
            )
        raise ConfigError("aggregation.input: no kafka or spool input configured")

    def _describe_input(self) -> str:
        job_input = self.aggregation.input
        if job_input.spool is not None:
            return f"spool directory {job_input.spool.directory}"
        if job_input.kafka is not None:
            return f"topic {job_input.kafka.topic} on cluster {job_input.kafka.cluster}"
        return "nothing"

    def _publisher(self) -> FindingsPublisher | None:
        output = self._output_topic(self.aggregation.findings)
        return FindingsPublisher(*output) if output is not None else None

    def _task_loads_publisher(self) -> TaskLoadsPublisher | None:
        output = self._output_topic(self.aggregation.task_loads)
        return TaskLoadsPublisher(*output) if output is not None else None

    def _output_topic(
        self, output: OutputTopicConfig | None
    ) -> tuple[dict[str, object], str, TopicToCreate | None] | None:
        """A publisher's client settings, topic and what to create; None: not published."""
        if output is None or not output.publish:
            return None
        settings = kafka_client_settings(self.config.cluster(output.cluster))
        create = (
            TopicToCreate(output.partitions, output.replication_factor)
            if output.create_topic
            else None
        )
        return settings, output.topic, create


# Where Spark logs a failed query with its whole Java stack trace (the class moved
# between Spark versions). The job says why in one line (``keep_running``), and in full
# at debug level.
_QUERY_FAILURE_LOGGERS = (
    "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution",
    "org.apache.spark.sql.execution.streaming.MicroBatchExecution",
)


def quiet_query_failures(spark: SparkSession) -> None:
    """Turn off Spark's own report of a failed query: the job reports it once, itself."""
    jvm = spark.sparkContext._jvm
    if jvm is None:
        return
    try:
        off = jvm.org.apache.logging.log4j.Level.OFF
        for name in _QUERY_FAILURE_LOGGERS:
            jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, off)
    except Py4JError as e:
        log.debug("cannot quieten Spark's report of failed queries: %s", first_line(e))


def _log_batch(
    batch_id: int, events: list[FindingEvent], tally: BatchTally, phases: tuple[float, float]
) -> None:
    for event in events:
        f = event.finding
        log.info(
            "finding %s%s: %s %s %s/%s %s: %s",
            event.event,
            f" ({event.reason})" if event.reason else "",
            f.severity,
            f.kind,
            f.cluster,
            f.group,
            f.subject.describe(),
            f.explanation,
        )
    log.info(
        "micro-batch %d: %d snapshots, %d judged, %d events, %.1fs "
        "(judging %.1fs, publishing %.1fs)%s%s",
        batch_id,
        tally.accepted,
        tally.judged,
        len(events),
        sum(phases),
        *phases,
        f"; {tally.late} late" if tally.late else "",
        f"; {tally.gone} groups no longer polled forgotten" if tally.gone else "",
    )
