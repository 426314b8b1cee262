"""The four problems, live: the real fixture app driven into each on the real broker, the
real agent polling it and the real job finding it, with the right subject. And three
healthy runs (steady load, a rolling restart, a scale-out) that must find nothing. The
hot partitions and the healthy runs also run with the app on ``group.protocol=streams``
(KIP-1071), where the broker assigns the tasks: same findings, same silence.

All scenarios run side by side under one agent and one job (short windows, 2 s polls),
so their waits overlap: the module fixture starts every app, injects every fault and
runs every healthy run's churn; each test then waits for its own outcome.

Two recoveries run together under their own agent and job: an app stopped whole for
longer than the look-back while input arrives, then started again, and one instance
of two stopped past the thread-death grace, then started again on its state. What
each fault opens must open, and on the return nothing may open and what was open must
close soon (``recovery_problems``).

One runs alone, first, under its own agent and job (so it can be run by itself):
``restore-wiped``, issue 25 #5 and #6, an instance of a two-instance app restarted on
an empty state directory (a pod rescheduled without its volume: no static membership,
a new process id, no offset sums), its restore held while the other instance keeps
up. It must be found as ``restore_stalled`` from the broker alone, although each
task's state is under ``acceptable_recovery_lag``, and no ``threads_fewer_than_tasks``
may open on the lag of the held tasks.

With ``KSMON_RECORD_DIR`` set, the run also saves what the agent saw of each scenario
whose test passed (``tests/recordings/README.md``): the replay tests judge those
recordings by the same expectations (``tests/support/live_scenarios.py``).
"""

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from pyspark.sql import SparkSession

from agent.aggregation.job import AggregationJob
from agent.aggregation.outputs.findings_topic import read_events
from agent.config import Config, kafka_client_settings, parse_config
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import KeyedLoad, KeySkew, key_for_partition, partition_of, produce
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppBuild, StreamsAppConfig, StreamsAppInstance
from agent.embedded.topics import create_topics, end_offsets
from agent.model.findings import FindingEvent
from agent.runner import AgentRunner
from tests.support.live_scenarios import (
    CHURN,
    EXPECTED,
    HEALTHY,
    REPLAY_CONFIG,
    Expected,
    Facts,
    describe,
    first_open,
    opened_never,
    opened_unexpected,
    recovery_problems,
    replay_config_text,
    save_recording,
)
from tests.support.streams import StreamsApps, unique_name

# The module fixture (every JVM, every fault) runs inside the first test's time limit.
pytestmark = [pytest.mark.integration, pytest.mark.live_detectors, pytest.mark.timeout(1500)]

PARTITIONS = 8  # with two hot partitions, the median partition stays cold
# Few tasks, so one round of slow processing (a record per task) takes a few seconds
# and the loop turns quickly.
LOOP_PARTITIONS = 2
RESTORE_KEYS = 2000  # about 250 changelog records per task, well above the recovery lag
WIPED = "restore-wiped"
# About 50 changelog records per task: under the recovery lag (100 here, 10000 by
# default), which kept a wiped instance's restore from ever being found (issue 25 #5).
WIPED_KEYS = 400
WIPED_THREADS = 2  # 16 tasks, 4 a thread: enough for threads_fewer_than_tasks to judge
# Judged this long after the restart: past threads_fewer_than_tasks' lag window (300 s by
# default), where it blamed the held tasks' lag on too few threads (issue 25 #6).
WIPED_JUDGED_FOR = 330.0
# The whole app away for longer than loop_window and evaluation_window together.
OUTAGE = 180.0
# One instance away for longer than thread_death_grace.
INSTANCE_AWAY = 100.0
BASELINE = 60.0  # of steady load before a recovery's fault
# After a return: the loop window and a margin, in which re-forming must not look like
# a loop and the backlog drain like hot tasks.
RECOVERY_JUDGED_FOR = 150.0
FAST_SESSION = {"session.timeout.ms": "10000", "heartbeat.interval.ms": "1000"}
DETECTORS = {
    # The default: over a shorter window, the catch-up after an instance of the rolling
    # run restarts (its backlog, processed by the other instance in seconds) makes two
    # repartition partitions look hot.
    "evaluation_window": "60s",
    "acceptable_recovery_lag": 100,
    "progress_stall_after": "60s",  # an instance joining the scale-out restores in less
    "restore_stall_after": "20s",
    "thread_history": "10m",  # the default; also keeps a slow job's batches from going late
    # The default: an instance restarting in the rolling run is gone for tens of
    # seconds on a busy machine, and must not look dead.
    "thread_death_grace": "60s",
    "loop_events": 3,
    "loop_window": "90s",
}
# The job's micro-batches take a minute or more on the shared 2-core machine; findings
# arrive that much after the snapshots that show them.
FINDING_TIMEOUT = 900.0
# After a healthy run's churn, its rebalances stay in the loop window a while.
LOOK_BACK_AFTER = 100.0
RECORD_MARGIN = 2.0  # seconds of snapshots kept after the evaluation that decided
RECORD_DIR = os.environ.get("KSMON_RECORD_DIR")


@dataclass
class Live:
    prefix: str
    config: Config
    job: AggregationJob
    apps: StreamsApps
    spool: Path
    loads: list[KeyedLoad] = field(default_factory=list)
    facts: dict[str, Facts] = field(default_factory=dict)
    healthy_done: dict[str, float] = field(default_factory=dict)
    # Per scenario whose test passed: the event time its recording must reach.
    decided: dict[str, float] = field(default_factory=dict)

    def events(self, group: str) -> list[FindingEvent]:
        findings = self.config.aggregation.findings
        assert findings is not None
        settings = kafka_client_settings(self.config.cluster("local"))
        return [e for e in read_events(settings, findings.topic) if e.finding.group == group]

    def expect(self, scenario: str) -> None:
        """Wait for every finding ``scenario`` must open; check each one's subject."""
        facts = self.facts[scenario]
        decided = 0.0
        for expected in EXPECTED[scenario]:
            event = self._wait_for_open(facts.group, expected)
            expected.check(event.finding, facts)
            decided = max(decided, event.at)
        self.decided[scenario] = decided

    def _wait_for_open(self, group: str, expected: Expected) -> FindingEvent:
        found: list[FindingEvent] = []

        def opened() -> bool:
            event = first_open(self.events(group), expected)
            found[:] = [event] if event is not None else []
            return bool(found)

        try:
            wait_until(
                opened, timeout=FINDING_TIMEOUT, what=f"{group}: {expected.what}", interval=3
            )
        except TimeoutError as e:
            raise AssertionError(f"{e}\n  events: {describe(self.events(group))}") from None
        return found[0]

    def load(self, topic: str, rate: float, skew: KeySkew | None = None) -> None:
        self.loads.append(KeyedLoad(self.apps.kafka.bootstrap_servers, topic, rate, skew).start())


def _config(kafka: EmbeddedKafka, work: Path, prefix: str) -> Config:
    document = {
        "agent": {"id": "live-agent"},
        "http": {"listen": f"127.0.0.1:{free_port()}"},
        "logging": {"format": "text"},
        "clusters": [
            {
                "name": "local",
                "bootstrap_servers": [kafka.bootstrap_servers],
                "groups": {"allow": [f"{prefix}.*"]},
                "poll": {"offsets_interval": "2s", "metadata_interval": "4s"},
            }
        ],
        "sink": {
            "type": "spool",
            "spool": {"directory": str(work / "spool"), "rotate_interval": "4s"},
        },
        "aggregation": {
            "listen": f"127.0.0.1:{free_port()}",
            "checkpoint_dir": str(work / "checkpoint"),
            "trigger_interval": "2s",
            # A micro-batch takes a minute or more here: each one takes all there is.
            "input": {
                "type": "spool",
                "spool": {"directory": str(work / "spool"), "max_files_per_batch": 10000},
            },
            "findings": {"topic": f"{prefix}-findings", "partitions": 1},
            "spark": {"master": "local[2]", "shuffle_partitions": 2},
            "detectors": DETECTORS,
        },
    }
    text = yaml.safe_dump(document, sort_keys=False)
    (work / "ksmon.yaml").write_text(text)
    return parse_config(text, str(work / "ksmon.yaml"), {})


def _app(prefix: str, name: str, **kwargs: Any) -> StreamsAppConfig:
    app = f"{prefix}-{name}"
    return StreamsAppConfig(
        application_id=app,
        input_topic=f"{app}-in",
        table_topic=f"{app}-table",
        output_topic=f"{app}-out",
        streams_config={**FAST_SESSION, **kwargs.pop("streams_config", {})},
        **kwargs,
    )


def _kip1071_app(prefix: str, name: str, **kwargs: Any) -> StreamsAppConfig:
    """The same app under ``group.protocol=streams`` (KIP-1071): the broker assigns its
    tasks, and session timeouts are the broker's group settings, not the client's."""
    app = f"{prefix}-{name}"
    return StreamsAppConfig(
        application_id=app,
        input_topic=f"{app}-in",
        table_topic=f"{app}-table",
        output_topic=f"{app}-out",
        streams_config={"group.protocol": "streams"},
        **kwargs,
    )


def _tasks(instance: StreamsAppInstance) -> list[str]:
    state = instance.oracle() or {}
    return sorted(t["taskId"] for th in state.get("threads", []) for t in th["activeTasks"])


def _process(instance: StreamsAppInstance) -> str:
    state = instance.oracle()
    assert state is not None, f"{instance.name} does not answer"
    return str(state["processId"])


def _settled(instances: list[StreamsAppInstance], tasks: int) -> None:
    """Wait until the instances, all RUNNING, split ``tasks`` tasks between them with
    none idle: the assignment a scenario aims its keys at."""

    def split() -> bool:
        views = [i.oracle() for i in instances]
        if any(v is None or v["state"] != "RUNNING" for v in views):
            return False
        held = [_tasks(i) for i in instances]
        every = [t for h in held for t in h]
        return all(held) and len(every) == len(set(every)) == tasks

    names = ", ".join(i.name for i in instances)
    wait_until(split, timeout=240, what=f"{names} sharing {tasks} tasks", interval=1)


@contextlib.contextmanager
def _monitored(
    kafka: EmbeddedKafka,
    streams_app_build: StreamsAppBuild,
    spark: SparkSession,
    work: Path,
    prefix: str,
) -> Iterator[Live]:
    """The agent and the job running on the groups named with ``prefix``, the apps
    started through ``state.apps``; what ran is recorded when the block ends without an
    error (and KSMON_RECORD_DIR asks), and everything is stopped whatever happened."""
    config = _config(kafka, work, prefix)
    apps = StreamsApps(kafka, streams_app_build, work / "apps")
    agent_runner = AgentRunner(config)
    job = AggregationJob(config, spark)
    state = Live(prefix, config, job, apps, work / "spool")
    try:
        agent_runner.start()
        job.start()
        yield state
        if RECORD_DIR:
            _record(state, Path(RECORD_DIR))
    finally:
        for load in state.loads:
            load.stop()
        with contextlib.suppress(Exception):
            job.stop()
        agent_runner.stop()
        apps.stop_all()


@pytest.fixture(scope="module")
def live(
    kafka: EmbeddedKafka,
    streams_app_build: StreamsAppBuild,
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Live]:
    work = tmp_path_factory.mktemp("live")
    prefix = unique_name("live")
    hot = _app(prefix, "hot", topology="join")
    hot_kip1071 = _kip1071_app(prefix, "hot-kip1071", topology="join")
    restore = _app(prefix, "restore", static_membership=True, restore_marker=work / "hold-restore")
    # The pill kills the instance that runs the processor that throws on it (a canary of
    # a bad build, say); the other instance handles it, so the group keeps one instance.
    poison = _app(prefix, "poison", poison_key_prefix="poison", on_error="shutdown_client")
    poison_bystander = _app(prefix, "poison", on_error="shutdown_client")
    loop = _app(
        prefix,
        "loop",
        processing_delay_ms=2000,
        processing_delay_marker=work / "slow",
        streams_config={"max.poll.interval.ms": "1500"},
    )
    steady, rolling, scale = (_app(prefix, n) for n in ("steady", "rolling", "scale"))
    healthy_kip1071 = tuple(_kip1071_app(prefix, f"{n}-kip1071") for n in CHURN)
    steady_kip1071, rolling_kip1071, scale_kip1071 = healthy_kip1071
    everything = (
        hot,
        hot_kip1071,
        restore,
        poison,
        loop,
        steady,
        rolling,
        scale,
        *healthy_kip1071,
    )
    topics = {c.input_topic: PARTITIONS for c in everything} | {
        c.table_topic: PARTITIONS for c in (hot, hot_kip1071)
    }
    create_topics(kafka.bootstrap_servers, topics | {loop.input_topic: LOOP_PARTITIONS})

    with _monitored(kafka, streams_app_build, spark, work, prefix) as state:
        # Every JVM at once: they boot in parallel.
        counts = (
            (hot, 2),
            (hot_kip1071, 2),
            (restore, 1),
            (loop, 1),
            (steady, 2),
            (rolling, 2),
            (scale, 2),
            *((app, 2) for app in healthy_kip1071),
        )
        started = {app.application_id: state.apps.start(app, n, wait=False) for app, n in counts}
        started[poison.application_id] = [
            *state.apps.start(poison, 1, wait=False),
            *state.apps.start(poison_bystander, 1, wait=False),
        ]
        for instances in started.values():
            for instance in instances:
                instance.wait_until_running(timeout=300)
        for app, tasks in ((hot, PARTITIONS), (hot_kip1071, PARTITIONS), (poison, 2 * PARTITIONS)):
            _settled(started[app.application_id], tasks)

        # Healthy runs start with steady load everywhere.
        for app in (steady, rolling, scale, poison, *healthy_kip1071):
            state.load(app.input_topic, 30)
        for app in (steady, steady_kip1071):
            state.healthy_done[app.application_id] = time.time() + 60
        state.facts.update({name: Facts(name, f"{prefix}-{name}") for name in HEALTHY})
        _inject_faults(state, kafka, started, hot, restore, poison, loop, work)
        _inject_hot(state, started[hot_kip1071.application_id], hot_kip1071, "hot-kip1071")
        _healthy_churn(
            state,
            [started[rolling.application_id], started[rolling_kip1071.application_id]],
            (scale, scale_kip1071),
        )
        yield state


def _healthy_churn(
    state: Live, rolling: list[list[StreamsAppInstance]], scale: tuple[StreamsAppConfig, ...]
) -> None:
    """The scale-outs from 2 to 3 instances, and meanwhile the rolling restarts: each
    instance in turn stopped (SIGTERM, a clean close) and started again on its state.

    From this (the main) thread: a JVM dies with the thread that spawned it."""
    thirds = [third for app in scale for third in state.apps.start(app, 1, wait=False)]
    for instances in rolling:
        for instance in instances:
            instance.restart()
            instance.wait_until_running(timeout=300)
        state.healthy_done[instances[0].config.application_id] = time.time()
    for third in thirds:
        third.wait_until_running(timeout=300)
        state.healthy_done[third.config.application_id] = time.time()


def _inject_faults(
    state: Live,
    kafka: EmbeddedKafka,
    started: dict[str, list[StreamsAppInstance]],
    hot: StreamsAppConfig,
    restore: StreamsAppConfig,
    poison: StreamsAppConfig,
    loop: StreamsAppConfig,
    work: Path,
) -> None:
    restore_marker = work / "hold-restore"
    slow_marker = work / "slow"
    _inject_hot(state, started[hot.application_id], hot, "hot")

    # 2. Restore: keys of state, then a restart with no local state and the restore
    # held by the throttle marker, while input keeps arriving.
    (restoring,) = started[restore.application_id]
    keys = [(f"k{n}", "v") for n in range(RESTORE_KEYS)]
    produce(kafka.bootstrap_servers, restore.input_topic, keys)
    changelog = f"{restore.application_id}-counts-changelog"
    wait_until(
        lambda: sum(end_offsets(kafka.bootstrap_servers, changelog).values()) >= RESTORE_KEYS,
        timeout=180,
        what=f"{RESTORE_KEYS} keys in {changelog}",
    )
    restore_marker.touch()
    restoring.restart(wipe_state=True)
    restoring.wait_for(lambda s: s["activeRestores"] >= 1, timeout=180, what="restore held")
    state.load(restore.input_topic, 30)
    state.facts["restore"] = Facts("restore", restore.application_id, _process(restoring))

    # 3. Poison pill on a partition the poisonable instance holds: that instance shuts down.
    victim, _bystander = started[poison.application_id]
    partition = int(_tasks(victim)[0].split("_")[1])
    pill = key_for_partition(partition, PARTITIONS, prefix="poison")
    assert partition_of(pill, PARTITIONS) == partition
    state.facts["poison"] = Facts("poison", poison.application_id, _process(victim))
    produce(kafka.bootstrap_servers, poison.input_topic, [(pill, "boom")])

    # 4. Processing slower than max.poll.interval.ms: the thread re-joins again and again.
    slow_marker.touch()
    produce(kafka.bootstrap_servers, loop.input_topic, [(f"k{n}", "v") for n in range(200)])
    state.facts["loop"] = Facts("loop", loop.application_id)


def _inject_hot(
    state: Live, instances: list[StreamsAppInstance], app: StreamsAppConfig, scenario: str
) -> None:
    """Two hot keys aimed at two partitions instance 0 holds."""
    first, _second = instances
    owned = sorted(int(t.split("_")[1]) for t in _tasks(first))[:2]
    hot_keys = {key_for_partition(p, PARTITIONS, prefix="hot"): 0.45 for p in owned}
    state.load(app.input_topic, 200, KeySkew(hot_keys, cold_keys=64))
    state.facts[scenario] = Facts(
        scenario, app.application_id, _process(first), tuple(f"0_{p}" for p in owned)
    )


def _record(state: Live, directory: Path) -> None:
    """Save each decided scenario's snapshots, from its group's first poll to the
    evaluation that decided its test, and the thresholds they were judged by."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / REPLAY_CONFIG).write_text(replay_config_text(DETECTORS))
    for scenario, until in state.decided.items():
        facts = state.facts[scenario]
        save_recording(state.spool, directory / scenario, facts, until=until + RECORD_MARGIN)


@pytest.fixture
def wiped(
    kafka: EmbeddedKafka,
    streams_app_build: StreamsAppBuild,
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Live]:
    """Two instances of the count app (2 stream threads each, no static membership); once
    they share the tasks and hold some state, the first is restarted on an empty state
    directory with its restore held (its own throttle marker: the other instance restores
    freely), and input keeps arriving."""
    work = tmp_path_factory.mktemp("wiped")
    prefix = unique_name("live")
    app = _app(prefix, WIPED, threads=WIPED_THREADS)
    marker = work / "hold-restore"
    create_topics(kafka.bootstrap_servers, {app.input_topic: PARTITIONS})
    with _monitored(kafka, streams_app_build, spark, work, prefix) as state:
        (restarted,) = state.apps.start(replace(app, restore_marker=marker), 1, wait=False)
        (other,) = state.apps.start(app, 1, wait=False)
        for instance in (restarted, other):
            instance.wait_until_running(timeout=300)
        _settled([restarted, other], 2 * PARTITIONS)
        produce(
            kafka.bootstrap_servers, app.input_topic, [(f"k{n}", "v") for n in range(WIPED_KEYS)]
        )
        changelog = f"{app.application_id}-counts-changelog"
        wait_until(
            lambda: sum(end_offsets(kafka.bootstrap_servers, changelog).values()) >= WIPED_KEYS,
            timeout=180,
            what=f"{WIPED_KEYS} keys in {changelog}",
        )
        marker.touch()
        restarted_at = time.time()
        restarted.restart(wipe_state=True)
        restarted.wait_for(lambda s: s["activeRestores"] >= 1, timeout=180, what="restore held")
        state.load(app.input_topic, 30)
        state.facts[WIPED] = replace(
            Facts(WIPED, app.application_id, _process(restarted)), fault_at=restarted_at
        )
        yield state


def test_a_restart_on_an_empty_state_directory_is_found_from_the_broker_alone(
    wiped: Live,
) -> None:
    wiped.expect(WIPED)  # restore_stalled, from the broker, soon enough (live_scenarios)
    facts = wiped.facts[WIPED]
    assert facts.fault_at is not None
    judged_until = facts.fault_at + WIPED_JUDGED_FOR

    def judged() -> bool:
        newest = dict(wiped.job.latest.view().newest_snapshot).get("local", 0.0)
        return newest >= judged_until

    wait_until(judged, timeout=FINDING_TIMEOUT, what="the job past the held restore", interval=3)
    events = wiped.events(facts.group)
    assert opened_never(events, WIPED) == [], describe(events)
    wiped.decided[WIPED] = max(wiped.decided[WIPED], judged_until)


def _job_reached(state: Live, until: float, what: str) -> None:
    """Wait until the job has judged the polls up to ``until`` (event time)."""

    def judged() -> bool:
        return dict(state.job.latest.view().newest_snapshot).get("local", 0.0) >= until

    wait_until(judged, timeout=FINDING_TIMEOUT, what=f"the job past {what}", interval=3)


@pytest.fixture
def recoveries(
    kafka: EmbeddedKafka,
    streams_app_build: StreamsAppBuild,
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Live]:
    """``return``: two instances of two stream threads, stopped (a clean close) for
    OUTAGE while input arrives, then started again. ``restart``: the first of two
    instances stopped for INSTANCE_AWAY, then started again on its state directory, so
    under the same process id. Each scenario's ``fault_at`` is its return."""
    work = tmp_path_factory.mktemp("recoveries")
    prefix = unique_name("live")
    whole = _app(prefix, "return", threads=2)
    one = _app(prefix, "restart")
    create_topics(kafka.bootstrap_servers, {c.input_topic: PARTITIONS for c in (whole, one)})
    with _monitored(kafka, streams_app_build, spark, work, prefix) as state:
        returning = state.apps.start(whole, 2, wait=False)
        restarting = state.apps.start(one, 2, wait=False)
        for instance in (*returning, *restarting):
            instance.wait_until_running(timeout=300)
        _settled(returning, 2 * PARTITIONS)
        _settled(restarting, 2 * PARTITIONS)
        for app in (whole, one):
            state.load(app.input_topic, 30)
        _job_reached(state, time.time() + BASELINE, "the steady baseline")

        stopped = restarting[0]
        process = _process(stopped)
        for instance in (*returning, stopped):
            instance.stop()
        fault = time.time()
        _job_reached(state, fault + INSTANCE_AWAY, "one instance away")
        stopped.start()
        stopped_back = time.time()
        _job_reached(state, fault + OUTAGE, "the whole app away")
        for instance in returning:
            instance.start()
        whole_back = time.time()
        for instance in (*returning, stopped):
            instance.wait_until_running(timeout=300)
        assert _process(stopped) == process, "started again on its state: the same process id"
        state.facts["return"] = Facts("return", whole.application_id, fault_at=whole_back)
        state.facts["restart"] = Facts(
            "restart", one.application_id, process, fault_at=stopped_back
        )
        _job_reached(state, whole_back + RECOVERY_JUDGED_FOR, "the returns")
        yield state


def test_an_app_back_from_an_outage_and_a_restarted_instance_are_quiet_on_their_return(
    recoveries: Live,
) -> None:
    for scenario in ("return", "restart"):
        recoveries.expect(scenario)  # what the fault itself opens
        facts = recoveries.facts[scenario]
        assert facts.fault_at is not None
        events = recoveries.events(facts.group)
        assert recovery_problems(events, facts) == [], describe(events)
        assert opened_unexpected(events, scenario) == [], describe(events)
        recoveries.decided[scenario] = facts.fault_at + RECOVERY_JUDGED_FOR


def test_two_hot_partitions_on_one_instance_are_found_with_the_member_and_instance(
    live: Live,
) -> None:
    live.expect("hot")


def test_the_same_hot_partitions_are_found_when_the_app_runs_the_streams_protocol(
    live: Live,
) -> None:
    live.expect("hot-kip1071")


def test_a_restore_held_by_the_throttle_is_found_as_stalled(live: Live) -> None:
    live.expect("restore")


def test_a_poison_pill_under_shutdown_client_is_found_on_its_instance(live: Live) -> None:
    live.expect("poison")


def test_processing_beyond_max_poll_interval_is_found_as_a_rebalance_loop(live: Live) -> None:
    live.expect("loop")


@pytest.mark.parametrize("name", HEALTHY)
def test_healthy_runs_find_nothing(live: Live, name: str) -> None:
    group = live.facts[name].group
    wait_until(lambda: group in live.healthy_done, timeout=900, what=f"{name} run finished")
    # The job must have judged the run and every window that still holds some of it.
    judged_until = live.healthy_done[group] + LOOK_BACK_AFTER

    def judged() -> bool:
        newest = dict(live.job.latest.view().newest_snapshot).get("local", 0.0)
        return newest >= judged_until

    wait_until(judged, timeout=FINDING_TIMEOUT, what=f"the job past the {name} run", interval=3)
    events = live.events(group)
    assert events == [], describe(events)
    live.decided[name] = judged_until
