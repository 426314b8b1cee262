"""The stateful job distributed: a Spark standalone cluster on this machine (a master
and two one-core workers, started with pyspark's own launcher), the driver in a
subprocess (`ksmon aggregate --master spark://...`), as on Kubernetes where the
executors that keep the state store's partitions run in other pods. The job reads a
spool directory in two micro-batches and publishes to the session broker."""

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from agent.aggregation.outputs.findings_topic import read_events
from agent.aggregation.replay import replay
from agent.config import Config, kafka_client_settings
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.process import wait_until
from agent.model.findings import FindingEvent
from tests.support.aggregation import job_config, scrape, write_spool
from tests.support.environment import unavailable
from tests.support.spark_standalone import StandaloneCluster, stateful_tasks
from tests.support.streams import unique_name
from tests.unit.aggregation.cases import (
    T0,
    hot_partitions,
    no_live_consumers,
    rebalance_loop,
    stream_threads_dead,
)

pytestmark = pytest.mark.integration

# Four groups (each case is its own group), whose buckets (of the job's 32) fall in
# both of its 2 shuffle partitions (bucket b in partition b % 2: hot-no-room's is odd,
# the others' even): (b) below checks that each partition got state.
CASES = (
    hot_partitions.CASES[10],  # hot-no-room: opens at 10 s
    no_live_consumers.CASES[0],  # opens at 160 s
    stream_threads_dead.CASES[0],  # opens at 250 s: a thread the first batch's polls saw
    rebalance_loop.CASES[0],  # opens at 260 s: counting the first batch's rebalances
)
# The first batch gets the polls before this, the second those from here to 300 s:
# alone, the second batch's polls open nothing (checked below with a replay).
SPLIT = T0 + 200
END = T0 + 300
_PROCESSED = re.compile(r"^ksmon_job_snapshots_processed_total (\S+)$", re.MULTILINE)


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[StandaloneCluster]:
    cluster = StandaloneCluster(tmp_path / "cluster", workers=2, cores=1, memory="512m")
    try:
        cluster.start()
    except (TimeoutError, RuntimeError, OSError) as e:
        cluster.stop()
        unavailable(
            "a Spark standalone cluster (pyspark's spark-class)", f"{e}\n{cluster.describe()}"
        )
    yield cluster
    cluster.stop()


def test_the_job_on_a_standalone_cluster_keeps_its_state_on_both_workers_and_carries_it_on(
    kafka: EmbeddedKafka, standalone: StandaloneCluster, tmp_path: Path
) -> None:
    snapshots = sorted((s for c in CASES for s in c.snapshots), key=lambda s: s.poll.started_at)
    first = [s for s in snapshots if s.poll.started_at < SPLIT]
    second = [s for s in snapshots if SPLIT <= s.poll.started_at <= END]
    # Both files complete first; each moves into the spool when its batch is due.
    staged = write_spool(tmp_path / "staged", [first, second])
    spool = tmp_path / "spool"
    spool.mkdir()
    paths = [spool / p.name for p in staged]
    config = job_config(
        kafka, tmp_path, findings_topic=unique_name("findings"), spool=spool, max_files_per_batch=1
    )

    with Driver(config, tmp_path, standalone) as driver:
        staged[0].replace(paths[0])
        driver.wait_processed(len(first))
        after_first = published(config)
        staged[1].replace(paths[1])
        driver.wait_processed(len(first) + len(second))
    events = published(config)

    # (a) What the distributed job published is what a replay of the same files finds.
    replayed = replay(paths, config.aggregation.detectors)
    assert sorted((e.event, e.finding.key, e.at) for e in events) == sorted(
        (e.event, e.finding.key, e.at) for e in replayed.events
    )
    assert {e.finding.kind for e in events} == {c.kind for c in CASES}

    # (b) The state is split over the two workers: each shuffle partition's state store
    # was updated by tasks of the stateful operator, and those tasks ran in executors
    # of both workers (an executor's work directory is on the worker that started it).
    tasks = stateful_tasks(standalone.event_logs)
    updating = [t for t in tasks if t.app == driver.app and t.updated_state_rows > 0]
    assert {t.partition for t in updating} == {0, 1}, tasks
    holders = {
        worker.work_dir.name
        for t in updating
        for worker in standalone.started
        if t.executor in worker.executors_of(driver.app)
    }
    assert holders == {"worker-1", "worker-2"}, f"state kept by {holders} only: {updating}"

    # (c) The second batch carried the first one's state on: the thread loss and the loop
    # open only with it, from polls of both batches; its own polls alone open nothing.
    needs_both = {"stream_threads_dead", "rebalance_loop"}
    assert not needs_both & {e.finding.kind for e in after_first}
    assert needs_both <= {e.finding.kind for e in events if e.event == "open"}
    assert replay(paths[1:], config.aggregation.detectors).events == []


class Driver:
    """`ksmon aggregate --master <cluster>` in a subprocess, stopped as a pod is (SIGTERM
    to the driver, which stops Spark and so completes its event log)."""

    def __init__(self, config: Config, work: Path, cluster: StandaloneCluster) -> None:
        self.config = config
        self.cluster = cluster
        self.log_path = work / "driver.log"
        self.command = [
            sys.executable,
            *("-m", "agent", "aggregate"),
            *("--config", str(work / "ksmon.yaml")),
            *("--master", cluster.url),
        ]
        self.process: subprocess.Popen[bytes] | None = None
        self.app = ""  # its application id, once stopped

    def __enter__(self) -> "Driver":
        self._apps_before = _apps(self.cluster)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.cluster.driver_env(),
                start_new_session=True,
            )
        return self

    def wait_processed(self, snapshots: int) -> None:
        """Until the driver has processed (and published) ``snapshots`` snapshots."""
        wait_until(
            lambda: _processed(self.config) >= snapshots,
            timeout=300,
            interval=0.5,
            what=f"the driver on {self.cluster.url} to process {snapshots} snapshots",
            abort=self._exited,
        )

    def __exit__(self, *exc: object) -> None:
        process = self.process
        assert process is not None
        try:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=120)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        started = _apps(self.cluster) - self._apps_before
        self.app = started.pop() if len(started) == 1 else f"not one application: {started}"

    def _exited(self) -> str | None:
        """Why waiting is pointless: the driver exited, or its query failed (it would
        restart after a back-off and most likely fail the same way)."""
        assert self.process is not None
        code = self.process.poll()
        if code is not None:
            return f"ksmon aggregate exited with {code}; see {self.log_path}"
        log = self.log_path.read_text(errors="replace")
        failed = [line for line in log.splitlines() if "the streaming query failed" in line]
        return f"{failed[0]}; see {self.log_path}" if failed else None


def _apps(cluster: StandaloneCluster) -> set[str]:
    """The applications the workers started executors for (a work directory each)."""
    return {
        app.name
        for worker in cluster.started
        if worker.work_dir.is_dir()
        for app in worker.work_dir.iterdir()
    }


def _processed(config: Config) -> float:
    """ksmon_job_snapshots_processed_total of the running driver (it counts a batch once
    the batch's findings are published); 0 before it serves."""
    try:
        match = _PROCESSED.search(scrape(config.aggregation.listen.port))
    except OSError:
        return 0
    return float(match[1]) if match else 0


def published(config: Config) -> Sequence[FindingEvent]:
    findings = config.aggregation.findings
    assert findings is not None
    return read_events(kafka_client_settings(config.cluster("local")), findings.topic)
