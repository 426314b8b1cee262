"""Two rebalance loops live whose stream threads all live: the real fixture app on the real
broker, the real agent polling it and the real job judging it (issues 25 #3 and 27 #2).

* ``loop-two-instances``: two instances of two stream threads, each record taking 3 s
  against ``max.poll.interval.ms`` 2 s. Every thread is put out of the group within
  seconds of re-joining and re-joins under a new member id; no thread dies
  (TaskMigratedException, CommitFailedException, no uncaught exception). Found as a
  ``rebalance_loop`` naming ``max.poll.interval.ms``, and no ``stream_threads_dead``
  opens, judged until well past ``thread_death_grace`` (seen before: "runs 1 of its 2
  stream threads ... look for the uncaught exception" and "all its stream threads died").
* ``loop-sync-fails``: the group's assignment record is over ``__consumer_offsets``'
  ``max.message.bytes``, lowered for the test (KAFKA-7149). After a restart every
  SyncGroup fails, the stream threads die and REPLACE_THREAD replaces them again and
  again, the group never Stable and its stored generation still. Found within 2 minutes
  of the restart as a ``rebalance_loop`` with the record's size against the limit. Its
  instances keep Kafka's default session timeout (45 s), which sets how long a turn of
  the loop takes: a dead thread's member lingers that long.

Both run side by side under one agent and one job, with the thresholds of
``test_detectors_live.py`` (one ``ksmon.yaml`` replays every recording). The offsets
topic's limit is lowered between the two groups' record sizes, so the poll-timeout group
is not touched, and set back whatever happens. Apart from the other live scenarios (own
module): lowering the limit must not reach their groups.

With ``KSMON_RECORD_DIR`` set, each scenario whose test passed is saved for the replay
tests (``tests/recordings/README.md``).
"""

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from agent.aggregation.job import AggregationJob
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import produce
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppBuild, StreamsAppInstance
from agent.embedded.topics import create_topics
from agent.runner import AgentRunner
from tests.integration.test_assignment_size_risk import _offsets_topic_limit
from tests.integration.test_detectors_live import (
    FINDING_TIMEOUT,
    RECORD_DIR,
    Live,
    _app,
    _config,
    _record,
)
from tests.support.live_scenarios import Facts, describe, opened_never
from tests.support.streams import StreamsApps, unique_name

pytestmark = [pytest.mark.integration, pytest.mark.live_detectors, pytest.mark.timeout(1500)]

POLL_TIMEOUT = "loop-two-instances"
SYNC_FAILS = "loop-sync-fails"
THREADS = 2
INSTANCES = 2
POLL_TIMEOUT_PARTITIONS = 4  # a task per thread
# Every assignment of an app with application.server carries every instance's partitions:
# this many make its record several times the poll-timeout group's.
SYNC_FAILS_PARTITIONS = 64
POLL_TIMEOUT_RECORDS = 600  # 3 s each on four threads: more than the run lasts
# The poll-timeout group is judged this long after its loop began: past
# thread_death_grace (60 s) twice over (seen live: "thread 1 gone for 120 s").
JUDGED_PAST_FAULT = 180.0
# Kafka's own defaults, over the FAST_SESSION every other live app runs with.
DEFAULT_SESSION = {"session.timeout.ms": "45000", "heartbeat.interval.ms": "3000"}


@dataclass
class Loops:
    live: Live
    faults: dict[str, float] = field(default_factory=dict)


def _snapshots(spool: Path, group: str) -> list[dict[str, Any]]:
    """The agent's snapshots of ``group`` in its complete spool files, in poll order."""
    found: list[dict[str, Any]] = []
    for path in sorted(spool.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                snapshot = json.loads(line)
                if snapshot["group"]["group_id"] == group:
                    found.append(snapshot)
    return sorted(found, key=lambda s: s["poll"]["started_at"])


def _record_bytes(snapshot: dict[str, Any]) -> int:
    """What the agent exports as ``ksmon_group_metadata_bytes``."""
    members = snapshot["members"]
    return sum(m.get("subscription_bytes", 0) + m.get("assignment_bytes", 0) for m in members)


def _described(snapshot: dict[str, Any], members: int) -> bool:
    """Stable, with every member and its metadata: the record can be measured."""
    listed = snapshot["members"]
    return (
        snapshot["group"]["state"] == "Stable"
        and len(listed) == members
        and all(m.get("assignment_bytes") for m in listed)
    )


def _newest_described(spool: Path, group: str, members: int) -> dict[str, Any] | None:
    described = [s for s in _snapshots(spool, group) if _described(s, members)]
    return described[-1] if described else None


def _limit_seen(spool: Path, group: str, limit: int, after: float) -> bool:
    return any(
        s["poll"]["started_at"] > after
        and s["cluster_facts"]["offsets_topic_max_message_bytes"] == limit
        for s in _snapshots(spool, group)
    )


@pytest.fixture(scope="module")
def loops(
    kafka: EmbeddedKafka,
    streams_app_build: StreamsAppBuild,
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Loops]:
    work = tmp_path_factory.mktemp("loops")
    prefix = unique_name("loops")
    config = _config(kafka, work, prefix)
    apps = StreamsApps(kafka, streams_app_build, work / "apps")
    slow_marker = work / "slow"
    poll_timeout = _app(
        prefix,
        POLL_TIMEOUT,
        threads=THREADS,
        processing_delay_ms=3000,
        processing_delay_marker=slow_marker,
        streams_config={"max.poll.interval.ms": "2000"},
    )
    sync_fails = _app(
        prefix,
        SYNC_FAILS,
        topology="windowed",
        threads=THREADS,
        application_server=True,
        streams_config=DEFAULT_SESSION,
    )
    create_topics(
        kafka.bootstrap_servers,
        {
            poll_timeout.input_topic: POLL_TIMEOUT_PARTITIONS,
            sync_fails.input_topic: SYNC_FAILS_PARTITIONS,
        },
    )
    agent_runner = AgentRunner(config)
    job = AggregationJob(config, spark)
    state = Loops(Live(prefix, config, job, apps, work / "spool"))
    try:
        with contextlib.ExitStack() as restore:
            agent_runner.start()
            job.start()
            slow = apps.start(poll_timeout, INSTANCES, wait=False)
            syncing = apps.start(sync_fails, INSTANCES, wait=False)
            for instance in (*slow, *syncing):
                instance.wait_until_running(timeout=300)

            # Issue 27 #2: slower per record than max.poll.interval.ms, from now on.
            slow_marker.touch()
            records = [(f"k{n}", "v") for n in range(POLL_TIMEOUT_RECORDS)]
            produce(kafka.bootstrap_servers, poll_timeout.input_topic, records)
            state.faults[POLL_TIMEOUT] = time.time()
            state.live.facts[POLL_TIMEOUT] = Facts(
                POLL_TIMEOUT, poll_timeout.application_id, fault_at=state.faults[POLL_TIMEOUT]
            )

            # Issue 25 #3: the record over the offsets topic's limit, then a rebalance.
            _sync_fails(state, kafka, poll_timeout.application_id, syncing, restore)
            yield state
        if RECORD_DIR:
            _record(state.live, Path(RECORD_DIR))
    finally:
        with contextlib.suppress(Exception):
            job.stop()
        agent_runner.stop()
        apps.stop_all()


def _sync_fails(
    state: Loops,
    kafka: EmbeddedKafka,
    other_group: str,
    instances: list[StreamsAppInstance],
    restore: contextlib.ExitStack,
) -> None:
    """Measure the group's record as the agent does, lower the offsets topic's limit
    below it (above the other group's), wait until the agent reports the new limit, then
    restart one instance: its SyncGroup cannot be stored."""
    live = state.live
    group = instances[0].config.application_id
    members = INSTANCES * THREADS
    wait_until(
        lambda: (
            _newest_described(live.spool, group, members) is not None
            and _newest_described(live.spool, other_group, members) is not None
        ),
        timeout=120,
        what=f"{group} and {other_group} Stable with every member's metadata in the spool",
        interval=1,
    )
    described = _newest_described(live.spool, group, members)
    other = _newest_described(live.spool, other_group, members)
    assert described is not None
    assert other is not None
    size, other_size = _record_bytes(described), _record_bytes(other)
    limit = (size + other_size) // 2
    assert other_size * 1.3 < limit < size, (size, other_size, "the records must differ enough")
    lowered_at = time.time()
    restore.enter_context(_offsets_topic_limit(kafka.bootstrap_servers, limit))
    wait_until(
        lambda: _limit_seen(live.spool, group, limit, lowered_at),
        timeout=60,
        what=f"the agent reporting max.message.bytes {limit} for {group}",
        interval=1,
    )
    # The record the job last measures: the newest Stable poll before the loop.
    final = _newest_described(live.spool, group, members)
    assert final is not None
    assert _record_bytes(final) == size, "no rebalance in between"
    instances[1].restart()
    state.faults[SYNC_FAILS] = time.time()
    live.facts[SYNC_FAILS] = replace(
        Facts(SYNC_FAILS, group),
        fault_at=state.faults[SYNC_FAILS],
        group_record_bytes=size,
        offsets_topic_limit=limit,
    )


def test_a_poll_timeout_loop_of_two_instances_is_a_loop_and_no_thread_death(
    loops: Loops,
) -> None:
    live = loops.live
    live.expect(POLL_TIMEOUT)
    judged_until = loops.faults[POLL_TIMEOUT] + JUDGED_PAST_FAULT

    def judged() -> bool:
        newest = dict(live.job.latest.view().newest_snapshot).get("local", 0.0)
        return newest >= judged_until

    wait_until(
        judged, timeout=FINDING_TIMEOUT, what="the job past the loop's first 3 min", interval=3
    )
    events = live.events(live.facts[POLL_TIMEOUT].group)
    assert opened_never(events, POLL_TIMEOUT) == [], describe(events)
    live.decided[POLL_TIMEOUT] = max(live.decided[POLL_TIMEOUT], judged_until)


def test_an_assignment_record_over_the_offsets_topic_limit_is_found_with_its_size(
    loops: Loops,
) -> None:
    live = loops.live
    live.expect(SYNC_FAILS)  # within 2 minutes of the restart (live_scenarios)
    events = live.events(live.facts[SYNC_FAILS].group)
    assert opened_never(events, SYNC_FAILS) == [], describe(events)
