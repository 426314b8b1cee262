"""``ksmon aggregate``: the streaming job, its micro-batches, and restarts that lose nothing.

A Structured Streaming query reads snapshots (the snapshot topic or a spool
directory) and hands each micro-batch to ``foreachBatch``. There, per batch id:

1. the batch's snapshots are parsed; bad ones are counted and set aside;
2. the good ones join the recent history as the tables the detectors read
   (Parquet under the checkpoint directory, written under the batch id: a
   re-run overwrites itself);
3. every detector runs over the history at the batch's new poll times
   (``evaluate``, the path replay uses too, through the plan the job built
   once at start: ``template``), or at the newest few of each group's when
   ``judged_polls_per_batch`` says so (``judging``);
4. hysteresis turns candidates into open/update/close events, and the new
   state and the events are written to ``state/batch-<id>.json`` (atomic);
5. the events go to the findings topic, then ``published.json`` records it;
6. /metrics shows the batch's findings and gauges.

Spark re-runs a batch whose commit it did not record. If its state file
exists, the batch was evaluated: the job only publishes what is not on the
topic yet (event ids are deterministic) and moves on, so a job killed at any
point and restarted neither loses nor repeats a finding. Detectors see
event time only; the horizon (the newest poll time seen minus the look-back)
trims the history, and snapshots older than it are counted as late.
"""

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry
from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

from agent.aggregation.evaluate import evaluate, partition_look_back, stored_tables
from agent.aggregation.exposition import JobCollector
from agent.aggregation.findings_topic import (
    FindingsPublisher,
    FindingsTopicError,
    TopicToCreate,
)
from agent.aggregation.history import History
from agent.aggregation.hysteresis import HysteresisState, advance
from agent.aggregation.judging import snapshots_to_judge
from agent.aggregation.kafka_package import kafka_source_jars
from agent.aggregation.parse import KEY_COLUMNS, Inventory, parse_snapshots, take_inventory
from agent.aggregation.quarantine import write_quarantined
from agent.aggregation.session import spark_session
from agent.aggregation.source import kafka_stream, spool_stream
from agent.aggregation.state import JobState
from agent.aggregation.tables import AT_EVALUATIONS, RECENT, build_tables
from agent.aggregation.template import (
    EvaluationTemplate,
    evaluation_template,
    evaluation_times,
)
from agent.config import Config, kafka_client_settings
from agent.config.schema import AggregationConfig
from agent.embedded.cache import state_dir
from agent.errors import ConfigError, first_line
from agent.exposition.http import MetricsServer
from agent.model.findings import FindingEvent
from agent.model.records import from_plain, to_plain

log = logging.getLogger(__name__)


_STATES_KEPT = 20


def checkpoint_dir(aggregation: AggregationConfig) -> Path:
    return aggregation.checkpoint_dir or state_dir() / "aggregate"


def job_session(config: Config, *, master: str | None = None) -> SparkSession:
    """The Spark session for the job: the Kafka source's jars when it reads a topic."""
    spark = config.aggregation.spark
    jars = kafka_source_jars() if config.aggregation.input.type == "kafka" else []
    return spark_session(
        "ksmon-aggregate",
        master=master or spark.master,
        shuffle_partitions=spark.shuffle_partitions,
        driver_memory=f"{max(1, spark.driver_memory // 2**20)}m",
        extra={
            **({"spark.jars": ",".join(str(j) for j in jars)} if jars else {}),
            # Local checkpoints of old batches go once their DataFrames are gone.
            "spark.cleaner.periodicGC.interval": "5min",
            # Interpreted expressions. A micro-batch is a few polls against a short history:
            # its tasks spent most of their time generating Java source for hundreds of
            # operators' projections and orderings, for a few thousand rows. Measured
            # (docs/benchmarks.md) on 10 apps x 30 min of history: the run of one batch's
            # evaluation from 11.2 s to 6.2 s, its first (cold) run from 22.5 s to 11.8 s.
            # Replay keeps code generation: over every poll of a recording it pays off.
            "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        },
    )


@dataclass(frozen=True)
class BatchRecord:
    """What ``state/batch-<id>.json`` holds: the state after the batch, and its events."""

    batch_id: int
    state: HysteresisState
    events: list[FindingEvent]
    newest: dict[str, float]  # per cluster, the newest poll time seen so far

    def to_json(self) -> str:
        return json.dumps(
            {
                "batch_id": self.batch_id,
                "state": json.loads(self.state.to_json()),
                "events": [to_plain(e) for e in self.events],
                "newest": self.newest,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> "BatchRecord":
        plain = json.loads(text)
        return cls(
            batch_id=int(plain["batch_id"]),
            state=HysteresisState.from_json(json.dumps(plain["state"])),
            events=[from_plain(FindingEvent, e) for e in plain["events"]],
            newest={str(k): float(v) for k, v in plain["newest"].items()},
        )


class BatchLedger:
    """The per-batch state files and the publishing mark, under the checkpoint directory."""

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
        for old in self._ids()[:-_STATES_KEPT]:
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
        self.history = History(spark, self.directory / "history")
        self.ledger = BatchLedger(self.directory / "state")
        self.quarantine_dir = self.directory / "quarantine"
        self.state = JobState()
        self.publisher = self._publisher()
        self._query: object | None = None
        self._template: EvaluationTemplate | None = None
        self._lock = threading.Lock()
        self.server: MetricsServer | None = None
        if serve_http:
            registry = CollectorRegistry()
            registry.register(JobCollector(self.state))
            listen = self.aggregation.listen
            self.server = MetricsServer(
                registry, listen.host, listen.port, ready=lambda: self.state.view().started
            )

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        if self.server is not None:
            self.server.start()
        restored = self.ledger.latest_before(2**62)
        if restored is not None:
            self.state.restored(restored.state.open, restored.newest)
        self.build_plan()
        if self.publisher is not None:
            # Now, so `ksmon findings` finds the topic before the first finding; a cluster
            # away at start is no reason to stop: each batch tries again before publishing.
            try:
                self.publisher.ensure_topic()
            except FindingsTopicError as e:
                log.warning("%s; trying again with the first micro-batch", e)
        self.start_query()
        self.state.started()
        log.info(
            "ksmon aggregate: reading %s, checkpoints in %s, metrics on %s",
            self._describe_input(),
            self.directory,
            self.aggregation.listen,
        )

    def build_plan(self) -> None:
        """Build the evaluation's plan once (``template``): before the first batch, so no
        batch pays for it."""
        with self._lock:
            self._template = evaluation_template(self.spark, self.params)

    def start_query(self) -> None:
        """(Re)start the streaming query from its checkpoint: after a failed micro-batch,
        Spark re-runs that batch, which the ledger makes idempotent."""
        self._query = (
            self._source()
            .writeStream.foreachBatch(self._on_batch)
            .option("checkpointLocation", str(self.directory / "spark"))
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
        return None if error is None else first_line(error, 500)

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
        if self.server is not None:
            self.server.stop()

    # -- one micro-batch ----------------------------------------------------------------

    def process_batch(self, batch: DataFrame, batch_id: int) -> None:
        """One micro-batch (``value``, ``origin`` rows), as the streaming query hands it
        over; public for benchmarks that feed batches without a query."""
        self._on_batch(batch, batch_id)

    def _on_batch(self, batch: DataFrame, batch_id: int) -> None:
        with self._lock:
            started = self.clock()
            try:
                self._process(batch, batch_id, started)
            except Exception:
                self.state.batch_failed()
                log.exception("micro-batch %d failed; the job carries on", batch_id)
                raise

    def _process(self, batch: DataFrame, batch_id: int, started: float) -> None:
        done = self.ledger.load(batch_id)
        if done is not None:
            log.info(
                "micro-batch %d was evaluated before a restart; publishing what is missing",
                batch_id,
            )
            self._publish(done)
            self.state.restored(done.state.open, done.newest)
            return
        previous = self.ledger.latest_before(batch_id)
        state = previous.state if previous is not None else HysteresisState()
        newest = dict(previous.newest) if previous is not None else {}

        batch = batch.persist()
        try:
            parsed = parse_snapshots(batch)
            inventory = take_inventory(parsed)
            if inventory.quarantined:
                write_quarantined(parsed.quarantined, self.quarantine_dir, f"batch-{batch_id:012d}")
                log.warning("micro-batch %d: quarantined %s", batch_id, inventory.quarantined)
            for cluster, _group, _agent, t in inventory.snapshots:
                newest[cluster] = max(newest.get(cluster, t), t)
            newest_t = max(newest.values(), default=0.0)
            horizon = newest_t - self.params.history_retention
            self._store(parsed.parsed, inventory, batch_id)
        finally:
            batch.unpersist()

        read = self.clock()
        judging = snapshots_to_judge(
            inventory.snapshots,
            horizon=horizon,
            evaluated_until=state.last_evaluated(),
            newest_per_series=self.aggregation.judged_polls_per_batch,
        )
        to_evaluate = judging.judged
        result = None
        if to_evaluate:
            # Each evaluation looks back from its own time: a batch spanning more event
            # time than the retention's margin (a slow or catching-up job) must still
            # see the full look-back of its oldest evaluation.
            oldest = min(key[3] for key in to_evaluate)
            read_from = min(horizon, oldest - self.params.history_retention)
            since = dict.fromkeys(AT_EVALUATIONS, oldest)
            since.update(dict.fromkeys(RECENT, oldest - partition_look_back(self.params)))
            evaluations = evaluation_times(self.spark, to_evaluate)
            stored = self.history.read(batch_id, read_from, since)
            tables = stored_tables(stored, evaluations, self.params)
            if self._template is not None:
                result = self._template.evaluate(tables, evaluations)
            else:
                result = evaluate(tables, evaluations, self.params)
            state, events = advance(
                state,
                result.candidates,
                result.coverage,
                close_after=self.params.evaluation_window,
                forget_after=self.params.history_retention,
            )
        else:
            events = []
        evaluated = self.clock()
        record = BatchRecord(batch_id, state, events, newest)
        self.ledger.save(record)
        self._publish(record)
        self.history.trim(horizon)
        finished = self.clock()
        self.state.batch_done(
            at=finished,
            seconds=finished - started,
            open_findings=state.open,
            gauges=result.gauges if result is not None else None,
            events=events,
            processed=inventory.accepted,
            quarantined=inventory.quarantined,
            late=judging.late,
            not_judged=judging.skipped,
            newest=newest,
        )
        _log_batch(
            batch_id,
            events,
            (read - started, evaluated - read, finished - evaluated),
            snapshots=inventory.accepted,
            evaluated=len(to_evaluate),
            skipped=judging.skipped,
        )

    def _store(self, parsed: DataFrame, inventory: Inventory, batch_id: int) -> None:
        """The batch's snapshots into the history as tables, each snapshot once: a
        snapshot delivered twice (in this batch, or stored by an earlier one) is not
        stored again."""
        earlier = self.history.stored_before(batch_id)
        fresh = [key for key in inventory.snapshots if key not in earlier]
        if not fresh:
            return
        if len(fresh) < len(inventory.snapshots):
            keys = evaluation_times(self.spark, fresh)
            parsed = parsed.join(keys, list(KEY_COLUMNS), "left_semi")
        if inventory.accepted > len(inventory.snapshots):
            parsed = parsed.dropDuplicates(list(KEY_COLUMNS))
        self.history.append(build_tables(parsed), batch_id, fresh)

    def _publish(self, record: BatchRecord) -> None:
        if self.publisher is None or record.batch_id <= self.ledger.published_through():
            return
        self.publisher.ensure_topic()
        events = record.events
        if events:
            sent = self.publisher.already_published(events)
            self.publisher.publish(e for e in events if e.event_id not in sent)
        self.ledger.mark_published(record.batch_id)

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

    def _describe_input(self) -> str:
        job_input = self.aggregation.input
        if job_input.spool is not None:
            return f"spool directory {job_input.spool.directory}"
        if job_input.kafka is not None:
            return f"topic {job_input.kafka.topic} on cluster {job_input.kafka.cluster}"
        return "nothing"

    def _publisher(self) -> FindingsPublisher | None:
        findings = self.aggregation.findings
        if findings is None or not findings.publish:
            return None
        settings = kafka_client_settings(self.config.cluster(findings.cluster))
        create = (
            TopicToCreate(findings.partitions, findings.replication_factor)
            if findings.create_topic
            else None
        )
        return FindingsPublisher(settings, findings.topic, create)


def _log_batch(
    batch_id: int,
    events: list[FindingEvent],
    phases: tuple[float, float, float],
    *,
    snapshots: int,
    evaluated: int,
    skipped: int,
) -> None:
    for event in events:
        f = event.finding
        log.info(
            "finding %s: %s %s %s/%s %s: %s",
            event.event,
            f.severity,
            f.kind,
            f.cluster,
            f.group,
            f.subject.describe(),
            f.explanation,
        )
    log.info(
        "micro-batch %d: %d snapshots, %d evaluated, %d events, %.1fs "
        "(reading %.1fs, evaluating %.1fs, publishing %.1fs)%s",
        batch_id,
        snapshots,
        evaluated,
        len(events),
        sum(phases),
        *phases,
        f"; {skipped} older polls not judged (judged_polls_per_batch)" if skipped else "",
    )
