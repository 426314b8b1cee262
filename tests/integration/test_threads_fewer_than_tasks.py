"""threads_fewer_than_tasks on the real broker with the real fixture app: an application
whose one stream thread carries all its tasks and falls behind is found, with the tasks
its own instance reports and the lag the agent measured; the same application keeping up
is not.

The ``count`` topology groups by key, so it repartitions: an input of 4 partitions makes
4 tasks reading the input (sub-topology 0) and 4 reading the repartition topic
(sub-topology 1), 8 tasks on the one thread. The threshold is 8, so the repartition's
tasks are what reaches it (seed 001). Both applications get the same input rate; the
slow one sleeps per record (``--processing-delay-ms``) and processes fewer records a
second than arrive, so its lag grows; the other keeps up. The agent's own poller
collects the snapshots and the job's replay path judges them, with a window short
enough for a test (the fixture commits every second, so each quarter spans commits).
"""

import math
from pathlib import Path

import pytest

from agent.aggregation.replay import replay
from agent.collect.kafka_edge import KafkaEdge
from agent.config.schema import DetectorsConfig
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import KeyedLoad
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppConfig, StreamsAppInstance
from agent.embedded.topics import create_topics
from agent.model import Snapshot
from tests.support.recording import group_poller, poll_into
from tests.support.streams import StreamsApps, app_view, unique_name

pytestmark = pytest.mark.integration

PARTITIONS = 4
TASKS = 2 * PARTITIONS  # the input's sub-topology and the repartition topic's
RATE = 60.0  # records/s into each application
DELAY_MS = 40  # the slow one: 25 records/s at most, so its lag grows by about 35/s
WINDOW = 30.0
MIN_GROWTH = 200
PARAMS = DetectorsConfig(
    tasks_per_thread_threshold=TASKS,
    tasks_per_thread_lag_window=WINDOW,
    tasks_per_thread_min_lag_growth=MIN_GROWTH,
)


def _config(app: str, delay_ms: int) -> StreamsAppConfig:
    return StreamsAppConfig(
        application_id=app,
        topology="count",
        input_topic=f"{app}-in",
        output_topic=f"{app}-out",
        threads=1,
        processing_delay_ms=delay_ms,
    )


def _lag(snapshot: Snapshot) -> int:
    return sum(p.lag or 0 for p in snapshot.partitions)


class Recorder:
    """Polls the groups with the agent's poller, writes every snapshot to a recording, and
    keeps each group's snapshots since it has been Stable with its one thread decoded and
    holding every task."""

    def __init__(self, edge: KafkaEdge, groups: list[str], path: Path) -> None:
        self.path = path
        self.poller = group_poller(edge, groups)
        self.groups = groups
        self.settled: dict[str, list[Snapshot]] = {g: [] for g in groups}
        self.all: dict[str, list[Snapshot]] = {g: [] for g in groups}

    def poll(self) -> None:
        for snapshot in poll_into(self.poller, self.path):
            group = snapshot.group.group_id
            self.all[group].append(snapshot)
            members = snapshot.members
            settled = (
                snapshot.group.state == "Stable"
                and len(members) == 1
                and members[0].streams is not None
                and len(members[0].streams.active_tasks) == TASKS
            )
            if settled:
                self.settled[group].append(snapshot)
            else:
                self.settled[group] = []

    def settled_for(self, group: str) -> float:
        runs = self.settled[group]
        return runs[-1].poll.started_at - runs[0].poll.started_at if runs else 0.0

    def ready(self, slow: str) -> bool:
        """Every group settled for more than the window with polls in each of its quarters,
        and the slow one's lag grew by well over the minimum while it was."""
        self.poll()
        if not all(
            self.settled_for(g) > WINDOW and _quarters_polled(self.settled[g]) for g in self.groups
        ):
            return False
        run = self.settled[slow]
        return _lag(run[-1]) - _lag(run[0]) >= 3 * MIN_GROWTH


def _quarters_polled(run: list[Snapshot]) -> bool:
    """Each quarter of the window up to the last poll holds a poll (on a busy machine a
    poll can take seconds): the rule compares the quarters' least lags."""
    end = run[-1].poll.started_at
    quarter = WINDOW / 4
    return {int((end - s.poll.started_at) // quarter) for s in run} >= {0, 1, 2, 3}


def test_one_thread_behind_on_its_tasks_is_found_and_one_keeping_up_is_not(
    kafka: EmbeddedKafka,
    streams_apps: StreamsApps,
    edge: KafkaEdge,
    tmp_path: Path,
) -> None:
    slow, keeping_up = unique_name("tft-slow"), unique_name("tft-keeping-up")
    create_topics(
        kafka.bootstrap_servers, {f"{slow}-in": PARTITIONS, f"{keeping_up}-in": PARTITIONS}
    )
    # Every JVM spawns before any is waited for: they boot in parallel.
    apps: dict[str, list[StreamsAppInstance]] = {
        slow: streams_apps.start(_config(slow, DELAY_MS), wait=False),
        keeping_up: streams_apps.start(_config(keeping_up, 0), wait=False),
    }
    recording = tmp_path / "snapshots.jsonl"
    recorder = Recorder(edge, [slow, keeping_up], recording)
    with (
        KeyedLoad(kafka.bootstrap_servers, f"{slow}-in", RATE),
        KeyedLoad(kafka.bootstrap_servers, f"{keeping_up}-in", RATE, seed=1),
    ):
        wait_until(
            lambda: recorder.ready(slow),
            timeout=150,
            interval=1.0,
            what=f"both groups Stable on one thread with {TASKS} tasks for over {WINDOW} s, "
            f"the slow one's lag growing",
            abort=lambda: next(filter(None, (i.died() for i in streams_apps.instances)), None),
        )
        (slow_thread,) = app_view(apps[slow]).items()

    result = replay([recording], PARAMS)

    found = [f for f in result.open_findings if f.kind == "threads_fewer_than_tasks"]
    assert [f.group for f in found] == [slow], [(f.group, f.explanation) for f in found]
    (finding,) = found
    evidence = finding.evidence
    assert finding.severity == "warning"
    (process, thread), (active, _standby) = slow_thread
    assert len(active) == TASKS, slow_thread
    busiest = evidence["busiest"]
    assert (busiest["process"], busiest["thread"], set(busiest["tasks"])) == (
        process,
        thread,
        active,
    )
    assert (evidence["max_tasks_per_thread"], evidence["mean_tasks_per_thread"]) == (TASKS, TASKS)
    assert (evidence["threads"], evidence["instances"], evidence["active_tasks"]) == (1, 1, TASKS)
    assert evidence["repartition_tasks"] == PARTITIONS
    assert evidence["subtopologies"] == [
        {
            "subtopology": "0",
            "tasks": PARTITIONS,
            "topics": [f"{slow}-in"],
            "reads_repartition": False,
        },
        {
            "subtopology": "1",
            "tasks": PARTITIONS,
            "topics": [f"{slow}-counts-repartition"],
            "reads_repartition": True,
        },
    ]
    # The lag the agent measured at the poll the evidence is from, and its growth.
    (at_poll,) = [s for s in recorder.all[slow] if s.poll.started_at == finding.last_seen]
    assert evidence["lag_records"] == _lag(at_poll)
    assert evidence["lag_growth_records"] >= MIN_GROWTH
    floors = evidence["lag_floor_per_quarter"]
    assert floors == sorted(set(floors)), "the low point rose in every quarter"
    assert evidence["lag_growth_per_second"] > 0
    # One more thread takes the busiest below the threshold of 8.
    needed = math.ceil(TASKS / (TASKS - 1))
    assert evidence["fix"] == {
        "threads": needed,
        "num_stream_threads": needed,
        "instances": needed,
        "max_useful_threads": TASKS,
    }
    assert f"{PARTITIONS} of the {TASKS} tasks read repartition topics" in finding.explanation
    assert f"run {needed} stream threads per instance" in finding.explanation
    # This rule's events only: the test polls about every second, and over so short a
    # span another rule can see what a real poll interval would not (partition_skew once
    # saw a repartition topic's first records, 53 % of them on one partition, in 1.02 s).
    assert not [
        e
        for e in result.events
        if e.finding.group == keeping_up and e.finding.kind == "threads_fewer_than_tasks"
    ]
    # The healthy one really kept up: its lag did not grow, and it ended a few seconds of
    # input behind at most (it may start its settled run catching up on what arrived while
    # it joined, on a busy machine several seconds' worth).
    lags = [_lag(s) for s in recorder.settled[keeping_up]]
    assert lags[-1] < 5 * RATE, lags
    assert lags[-1] - lags[0] < MIN_GROWTH, lags
