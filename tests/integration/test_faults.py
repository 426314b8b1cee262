"""The agent under faults on the real broker: it stays up, says so in its metrics, loses
nothing it need not lose, and recovers by itself.

- the broker restarted in the middle of a poll (stopped between two requests);
- a poll stuck on a frozen broker (SIGSTOP) while Prometheus scrapes;
- the snapshot topic deleted while the daemon ships to it;
- a broker down for two minutes: the daemon polls another cluster meanwhile,
  its Kafka sink buffers boundedly and counts what it drops, memory stays put.

The session broker is shared: every test that stops or freezes it restores it
in ``finally``. The two-minute outage uses a broker of its own, launched when
this module starts so it boots while the other tests run.
"""

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent.collect.kafka_edge import KafkaEdge
from agent.collect.poller import ClusterPoller
from agent.collect.raw import FailedRequest, GroupOffsets
from agent.config import parse_config
from agent.embedded.kafka import EmbeddedKafka, KafkaDistribution
from agent.embedded.load import produce
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from agent.embedded.topics import end_offsets
from agent.model import Snapshot
from agent.model.poll_result import PollResult
from agent.runner import AgentRunner
from tests.support.agent_process import metric, metric_values, running_agent, scrape
from tests.support.broker import restore
from tests.support.kafka_io import commit_offsets, read_all
from tests.support.streams import unique_name

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", autouse=True)
def outage_broker(
    kafka_distribution: KafkaDistribution, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmbeddedKafka]:
    """A second broker, only for the two-minute outage: stopping it blocks nobody else.

    Launched (not awaited) as the module starts, so its JVM boots in parallel.
    """
    broker = EmbeddedKafka(kafka_distribution, tmp_path_factory.mktemp("outage-kafka"), heap_mb=384)
    broker.launch()
    yield broker
    broker.stop()


@pytest.fixture
def group(kafka: EmbeddedKafka) -> str:
    """A group with committed offsets on the session broker."""
    name = unique_name("fault-group")
    commit_offsets(kafka.bootstrap_servers, name, f"{name}-in", {0: 0, 1: 0})
    produce(kafka.bootstrap_servers, f"{name}-in", [(f"k{n}", "v") for n in range(6)])
    return name


def evidence(text: str) -> None:
    """Measured numbers, for the record: ``pytest -rP`` shows them for passing tests."""
    print(text)  # noqa: T201 - the only output of these tests meant for a person


# --- in-process agent: the real runner, with a hook and an observer -------------------------------


class HookedEdge(KafkaEdge):
    """The real Admin edge with one test hook, run once just before OffsetFetch.

    By then the poll has listed, located and described the groups: a fault
    injected there lands in the middle of the poll. Every request still goes
    to the real broker.
    """

    def __init__(self, settings: dict[str, object]) -> None:
        super().__init__(settings)
        self.before_offset_fetch: Callable[[], None] | None = None

    def offset_fetch(
        self, by_coordinator: Mapping[int, Sequence[str]]
    ) -> tuple[list[GroupOffsets], list[FailedRequest]]:
        hook, self.before_offset_fetch = self.before_offset_fetch, None
        if hook is not None:
            hook()
        return super().offset_fetch(by_coordinator)


class PollWatch:
    """Wraps a poller's ``poll`` to see when a poll is in flight and how many finished."""

    def __init__(self, poller: ClusterPoller) -> None:
        self.in_flight_since: float | None = None
        self.finished = 0
        poll = poller.poll

        def watched() -> PollResult:
            self.in_flight_since = time.monotonic()
            try:
                return poll()
            finally:
                self.in_flight_since = None
                self.finished += 1

        poller.poll = watched  # type: ignore[method-assign]


@contextmanager
def in_process_agent(config_text: str) -> Iterator[tuple[AgentRunner, HookedEdge, PollWatch, int]]:
    """The agent's runner in this process (real scheduler, sink, HTTP server), one cluster."""
    port = free_port()
    config = parse_config(config_text.replace("@PORT@", str(port)), "fault-test", {})
    edges: list[HookedEdge] = []

    def make_edge(settings: dict[str, object]) -> KafkaEdge:
        edges.append(HookedEdge(settings))
        return edges[-1]

    runner = AgentRunner(config, edge_factory=make_edge)
    (poller,) = runner.pollers.values()
    watch = PollWatch(poller)
    runner.start()
    try:
        yield runner, edges[0], watch, port
    finally:
        runner.stop()


def agent_config(bootstrap: str, group: str, spool: Path, request_timeout: str = "5s") -> str:
    return f"""
agent: {{id: fault-agent}}
http: {{listen: "127.0.0.1:@PORT@"}}
clusters:
  - name: local
    bootstrap_servers: ["{bootstrap}"]
    groups: {{allow: ["{group}"]}}
    poll: {{offsets_interval: 1s, metadata_interval: 5s, request_timeout: {request_timeout}}}
sink: {{type: spool, spool: {{directory: "{spool}", rotate_interval: 1s}}}}
"""


def group_snapshot_ok(runner: AgentRunner, group: str) -> bool:
    (cluster,) = runner.state.view().clusters
    return cluster.up and any(
        s.group.group_id == group and not s.errors and s.partitions for s in cluster.snapshots
    )


def failed_polls(port: int) -> float:
    return metric(port, "ksmon_polls_total", kafka_cluster="local", result="failed") or 0


def test_a_broker_restarted_in_the_middle_of_a_poll(
    kafka: EmbeddedKafka, group: str, tmp_path: Path
) -> None:
    config = agent_config(kafka.bootstrap_servers, group, tmp_path / "spool")
    stopped, launched = threading.Event(), threading.Event()

    def stop_broker_mid_poll() -> None:
        # Runs on the poll's thread. The JVM is launched again from the main
        # thread (its die-with-parent signal is tied to the launching thread);
        # the poll waits for that, then sends its next requests to a broker
        # that is starting up.
        kafka.stop()
        stopped.set()
        launched.wait(timeout=120)

    try:
        with in_process_agent(config) as (runner, edge, watch, port):
            wait_until(
                lambda: group_snapshot_ok(runner, group), timeout=60, what="a first complete poll"
            )
            finished_before = watch.finished
            edge.before_offset_fetch = stop_broker_mid_poll
            wait_until(stopped.is_set, timeout=120, what="the broker to stop inside a poll")
            kafka.launch()
            launched.set()
            kafka.wait_ready(timeout=180)

            # The interrupted poll is reported, not raised; the agent heals by itself.
            wait_until(
                lambda: watch.finished > finished_before,
                timeout=60,
                what="the interrupted poll to end",
            )
            assert failed_polls(port) >= 1, "the interrupted poll counts as failed"
            wait_until(
                lambda: group_snapshot_ok(runner, group),
                timeout=120,
                what="a complete poll after the restart",
            )
            assert metric(port, "ksmon_kafka_up", kafka_cluster="local") == 1
            wait_until(
                lambda: metric(port, "ksmon_offsets_topic_reader_up", kafka_cluster="local") == 1,
                timeout=120,
                what="the __consumer_offsets reader to resume",
            )
    finally:
        launched.set()
        restore(kafka)


def test_a_scrape_never_waits_on_a_poll_stuck_on_a_frozen_broker(
    kafka: EmbeddedKafka, group: str, tmp_path: Path
) -> None:
    freeze_seconds = 20
    # Requests may wait 30 s: a frozen broker holds the poll for the whole freeze.
    config = agent_config(kafka.bootstrap_servers, group, tmp_path / "spool", "30s")
    latencies: list[float] = []
    pid = kafka.process.pid
    assert pid is not None
    try:
        with in_process_agent(config) as (runner, _edge, watch, port):
            wait_until(
                lambda: group_snapshot_ok(runner, group), timeout=60, what="a first complete poll"
            )
            os.killpg(pid, signal.SIGSTOP)  # connections are accepted, nothing is answered
            frozen_at = time.monotonic()
            wait_until(
                lambda: (
                    watch.in_flight_since is not None
                    and time.monotonic() - watch.in_flight_since > 1
                ),
                timeout=30,
                what="a poll stuck on the frozen broker",
            )
            stuck_since, finished = watch.in_flight_since, watch.finished
            while time.monotonic() - frozen_at < freeze_seconds:
                started = time.monotonic()
                text = scrape(port, timeout=10)
                latencies.append(time.monotonic() - started)
                assert "ksmon_kafka_up" in text
                time.sleep(0.5)
            # All those scrapes were answered while one poll was stuck on Kafka.
            assert (watch.in_flight_since, watch.finished) == (stuck_since, finished)
            os.killpg(pid, signal.SIGCONT)
            wait_until(
                lambda: watch.finished > finished,
                timeout=120,
                what="the stuck poll to end once the broker thaws",
            )
            wait_until(
                lambda: group_snapshot_ok(runner, group), timeout=120, what="complete polls again"
            )
    finally:
        restore(kafka)
    # Evidence, printed for the record; the bound is generous on purpose (a loaded CI box).
    evidence(
        f"scrapes while a poll was stuck on a frozen broker for {freeze_seconds}s: "
        f"{len(latencies)}, slowest {max(latencies) * 1000:.0f} ms, "
        f"median {sorted(latencies)[len(latencies) // 2] * 1000:.0f} ms"
    )
    assert len(latencies) >= 10
    assert max(latencies) < 2.0


# --- the daemon: a deleted snapshot topic --------------------------------------------------------


def daemon_config(path: Path, port: int, clusters: str, sink: str) -> Path:
    path.write_text(
        f"""\
agent: {{id: fault-daemon}}
http: {{listen: "127.0.0.1:{port}"}}
logging: {{format: json, level: info}}
clusters:
{clusters}
sink: {sink}
"""
    )
    return path


def cluster_yaml(name: str, bootstrap: str, group: str) -> str:
    return f"""\
  - name: {name}
    bootstrap_servers: ["{bootstrap}"]
    groups: {{allow: ["{group}"]}}
    poll: {{offsets_interval: 1s, metadata_interval: 5s, request_timeout: 5s}}
"""


def shipped(bootstrap: str, topic: str) -> list[Snapshot]:
    return [Snapshot.from_json(value) for _, value in read_all(bootstrap, topic)]


def sequences(snapshots: list[Snapshot], cluster: str) -> list[int]:
    return sorted({s.poll.sequence for s in snapshots if s.cluster == cluster})


def test_a_deleted_snapshot_topic_is_created_again_and_shipping_resumes(
    kafka: EmbeddedKafka, group: str, tmp_path: Path
) -> None:
    from kafka.admin import KafkaAdminClient  # noqa: PLC0415 - slow import

    port = free_port()
    topic = unique_name("ksmon.snapshots.deleted")
    config = daemon_config(
        tmp_path / "ksmon.yaml",
        port,
        cluster_yaml("local", kafka.bootstrap_servers, group),
        f"{{type: kafka, kafka: {{topic: {topic}, partitions: 2}}}}",
    )
    with running_agent(config, port, tmp_path / "agent.log") as agent:
        wait_until(
            lambda: len(sequences(shipped(kafka.bootstrap_servers, topic), "local")) >= 3,
            timeout=90,
            what="snapshots in the topic",
            abort=agent.exited,
            interval=1,
        )
        admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
        try:
            before = sequences(shipped(kafka.bootstrap_servers, topic), "local")
            admin.delete_topics([topic])
            wait_until(lambda: topic not in admin.list_topics(), timeout=60, what="the topic to go")
        finally:
            admin.close()
        sent_at_deletion = metric(port, "ksmon_snapshots_sent_total", sink="kafka") or 0
        wait_until(
            lambda: len(sequences(shipped(kafka.bootstrap_servers, topic), "local")) >= 5,
            timeout=120,
            what="snapshots in the re-created topic",
            abort=agent.exited,
            interval=1,
        )
        values = metric_values(port)
    assert agent.process.returncode == 0
    after = sequences(shipped(kafka.bootstrap_servers, topic), "local")
    # Re-created by ksmon with its settings, not auto-created with the broker's defaults.
    assert len(end_offsets(kafka.bootstrap_servers, topic)) == 2
    # From the first snapshot in the new topic on, nothing is missing.
    assert after == list(range(after[0], after[-1] + 1)), after
    # What went with the deleted topic: the ones the test read before deleting it,
    # and whatever was delivered to it (or in flight) between that read and the deletion.
    lost = list(range(before[-1] + 1, after[0]))
    evidence(
        f"snapshot topic deleted: {len(before)} snapshots read from it beforehand, then "
        f"{len(lost)} more polls ({lost}) went with it or with the deletion; shipping resumed "
        f"at poll {after[0]}; sent counter at deletion {sent_at_deletion:.0f}, "
        f"sink errors {values['ksmon_snapshot_sink_errors_total'][(('sink', 'kafka'),)]:.0f}"
    )
    assert "Traceback" not in agent.log.read_text()


# --- the daemon: a broker down for two minutes ----------------------------------------------------

OUTAGE_SECONDS = 120
BUFFER = 20


def test_a_broker_down_for_two_minutes_and_the_agent_recovers_by_itself(
    kafka: EmbeddedKafka, outage_broker: EmbeddedKafka, group: str, tmp_path: Path
) -> None:
    outage_broker.wait_ready(timeout=180)
    outage_group = unique_name("outage-group")
    commit_offsets(outage_broker.bootstrap_servers, outage_group, f"{outage_group}-in", {0: 0})
    port = free_port()
    topic = "ksmon.snapshots"
    # The daemon watches the session broker ("steady") and the one that goes down
    # ("outage"), and ships to the latter: while it is down the steady cluster's
    # snapshots pile up in the sink's buffer of 20.
    config = daemon_config(
        tmp_path / "ksmon.yaml",
        port,
        cluster_yaml("steady", kafka.bootstrap_servers, group)
        + cluster_yaml("outage", outage_broker.bootstrap_servers, outage_group),
        "{type: kafka, kafka: {cluster: outage, topic: "
        + f"{topic}, buffer_max_snapshots: {BUFFER}}}}}",
    )
    with running_agent(config, port, tmp_path / "agent.log") as agent:
        wait_until(
            lambda: (
                {"steady", "outage"}
                <= {s.cluster for s in shipped(outage_broker.bootstrap_servers, topic)}
            ),
            timeout=120,
            what="snapshots of both clusters shipped",
            abort=agent.exited,
            interval=1,
        )
        before = shipped(outage_broker.bootstrap_servers, topic)
        outage_broker.stop()
        down_at, down_wall = time.monotonic(), time.time()
        samples: list[dict[str, float]] = []
        try:
            while time.monotonic() - down_at < OUTAGE_SECONDS:
                started = time.monotonic()
                values = metric_values(port)
                samples.append(
                    {
                        "at": started - down_at,
                        "scrape_seconds": time.monotonic() - started,
                        "rss": agent.rss_bytes(),
                        "outage_up": values["ksmon_kafka_up"][(("kafka_cluster", "outage"),)],
                        "steady_up": values["ksmon_kafka_up"][(("kafka_cluster", "steady"),)],
                        "failed": values["ksmon_polls_total"][
                            (("kafka_cluster", "outage"), ("result", "failed"))
                        ],
                        "buffered": values["ksmon_snapshot_buffer_records"][(("sink", "kafka"),)],
                        "dropped": values["ksmon_snapshots_dropped_total"][(("sink", "kafka"),)],
                    }
                )
                assert agent.alive, agent.exited()
                time.sleep(5)
        finally:
            outage_broker.start(timeout=180)
        # Until now the sink's broker was down: what the steady cluster's polls
        # produced meanwhile waited in the buffer (the newest 20 of them).
        recovered_at = time.time()
        wait_until(
            lambda: (
                metric(port, "ksmon_kafka_up", kafka_cluster="outage") == 1
                and metric(port, "ksmon_snapshot_buffer_records", sink="kafka") == 0
            ),
            timeout=120,
            what="the agent to reconnect and drain its buffer by itself",
            abort=agent.exited,
        )
        wait_until(
            lambda: any(
                s.cluster == "outage" and s.poll.started_at > recovered_at
                for s in shipped(outage_broker.bootstrap_servers, topic)
            ),
            timeout=120,
            what="snapshots taken after the outage",
            abort=agent.exited,
            interval=1,
        )
        dropped = metric(port, "ksmon_snapshots_dropped_total", sink="kafka") or 0
        errors = metric(port, "ksmon_snapshot_sink_errors_total", sink="kafka") or 0
    assert agent.process.returncode == 0
    log = agent.log.read_text()
    assert "Traceback" not in log

    late = [s for s in samples if s["at"] > 30]
    second_minute = [s for s in samples if s["at"] > 60]
    first_minute_rss = max(s["rss"] for s in samples if s["at"] <= 60)
    last_minute_rss = max(s["rss"] for s in samples if s["at"] > 60)
    after = shipped(outage_broker.bootstrap_servers, topic)
    held = [
        s.poll.sequence
        for s in after
        if s.cluster == "steady" and down_wall < s.poll.started_at < recovered_at
    ]
    evidence(
        f"two-minute outage: {len(samples)} samples; failed polls of the down cluster "
        f"{late[0]['failed']:.0f} -> {late[-1]['failed']:.0f} (30 s to the end); buffer "
        f"{BUFFER} full, {dropped:.0f} dropped, {errors:.0f} sink errors, {len(held)} snapshots "
        f"taken while the sink's broker was down delivered after; RSS peak first minute "
        f"{first_minute_rss / 2**20:.1f} MiB, last minute {last_minute_rss / 2**20:.1f} MiB; "
        f"slowest scrape {max(s['scrape_seconds'] for s in samples) * 1000:.0f} ms"
    )

    # Degraded state, visible: the outage cluster is down, the other one is not,
    # and failed polls keep counting.
    assert all(s["outage_up"] == 0 and s["steady_up"] == 1 for s in late)
    assert late[-1]["failed"] > late[0]["failed"] + 5
    # The buffer holds what it may and counts the rest as dropped, still dropping at the end.
    assert max(s["buffered"] for s in samples) <= BUFFER
    assert late[-1]["buffered"] == BUFFER
    assert late[-1]["dropped"] > second_minute[0]["dropped"]
    assert max(s["scrape_seconds"] for s in samples) < 2.0
    # Memory stays put: the last minute is no bigger than the first minute's peak plus
    # slack for the allocator (a leak of one snapshot per poll would add megabytes).
    assert last_minute_rss <= first_minute_rss + 16 * 2**20
    # Before and after: what arrived before the outage is still there, and the
    # snapshots the buffer held through it arrived once the broker was back.
    assert set(sequences(before, "steady")) <= set(sequences(after, "steady"))
    assert held, "snapshots taken during the outage (the buffered ones) arrived"
