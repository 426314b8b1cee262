"""idle_members on the real broker with the real fixture app: an application with more
stream threads than tasks is found, naming exactly the threads its own instances report
without an active task, and one whose threads all have work is not.

The ``windowed`` topology has one sub-topology (a groupByKey keeps the key: no
repartition), so an input topic of 2 partitions makes 2 tasks. Two instances of 2
threads are 4 members for them: 2 threads idle. One instance of 2 threads fits.
The agent's own poller collects the snapshots and the job's replay path judges them,
with ``idle_members_after`` short enough for a test.
"""

from pathlib import Path

import pytest

from agent.aggregation.replay import replay
from agent.collect.kafka_edge import KafkaEdge
from agent.config.schema import DetectorsConfig
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppConfig, StreamsAppInstance
from agent.embedded.topics import create_topics
from tests.support.recording import group_poller, poll_into
from tests.support.streams import StreamsApps, app_view, ksmon_view, unique_name

pytestmark = pytest.mark.integration

PARTITIONS = 2
IDLE_AFTER = 6.0
PARAMS = DetectorsConfig(idle_members_after=IDLE_AFTER)

ThreadView = dict[tuple[str, int], tuple[set[str], set[str]]]


def _config(app: str, threads: int, standbys: int = 0) -> StreamsAppConfig:
    return StreamsAppConfig(
        application_id=app,
        topology="windowed",
        input_topic=f"{app}-in",
        output_topic=f"{app}-out",
        threads=threads,
        standbys=standbys,
    )


class Recorder:
    """Polls the groups with the agent's poller, writes every snapshot to a recording,
    and keeps, per group, since when ksmon's view has agreed with the app's own (Stable,
    every thread a member, the same tasks per thread) and the app's view at the last poll."""

    def __init__(
        self, edge: KafkaEdge, apps: dict[str, list[StreamsAppInstance]], path: Path
    ) -> None:
        self.apps = apps
        self.path = path
        self.poller = group_poller(edge, apps)
        self.agreeing_since: dict[str, float] = {}
        self.last_poll: dict[str, float] = {}
        self.app_view: dict[str, ThreadView] = {}

    def poll(self) -> None:
        for snapshot in poll_into(self.poller, self.path):
            group = snapshot.group.group_id
            threads = sum(i.config.threads for i in self.apps[group])
            agrees = snapshot.group.state == "Stable" and len(snapshot.members) == threads
            if agrees:
                app = app_view(self.apps[group])
                agrees = ksmon_view(snapshot) == app
                self.app_view[group] = app
            if agrees:
                self.agreeing_since.setdefault(group, snapshot.poll.started_at)
            else:
                self.agreeing_since.pop(group, None)
            self.last_poll[group] = snapshot.poll.started_at

    def settled_for(self, seconds: float) -> bool:
        """Every group agreed with its app at every poll of the last ``seconds``."""
        self.poll()
        return all(
            group in self.agreeing_since
            and self.last_poll[group] - self.agreeing_since[group] >= seconds
            for group in self.apps
        )


def test_threads_beyond_the_task_count_are_found_idle_and_a_fitting_app_is_not(
    kafka: EmbeddedKafka,
    streams_apps: StreamsApps,
    edge: KafkaEdge,
    tmp_path: Path,
) -> None:
    oversized, fitting = unique_name("idle-oversized"), unique_name("idle-fitting")
    create_topics(
        kafka.bootstrap_servers, {f"{oversized}-in": PARTITIONS, f"{fitting}-in": PARTITIONS}
    )
    # Every JVM spawns before any is waited for: they boot in parallel.
    apps = {
        oversized: streams_apps.start(_config(oversized, threads=2, standbys=1), 2, wait=False),
        fitting: streams_apps.start(_config(fitting, threads=2), 1, wait=False),
    }
    recording = tmp_path / "snapshots.jsonl"
    recorder = Recorder(edge, apps, recording)
    # A little longer than the rule needs, so the last poll is well past the threshold.
    wait_until(
        lambda: recorder.settled_for(IDLE_AFTER + 2),
        timeout=120,
        interval=1.0,
        what="both groups Stable with the tasks their apps report, for the rule's duration",
        abort=lambda: next(filter(None, (i.died() for i in streams_apps.instances)), None),
    )

    result = replay([recording], PARAMS)

    idle_by_app = {
        thread for thread, (active, _standby) in recorder.app_view[oversized].items() if not active
    }
    assert len(idle_by_app) == 2, f"4 threads for 2 tasks: {recorder.app_view[oversized]}"
    found = [f for f in result.open_findings if f.kind == "idle_members"]
    assert [f.group for f in found] == [oversized], [(f.group, f.explanation) for f in found]
    (finding,) = found
    evidence = finding.evidence
    assert finding.severity == "info"
    assert {(m["process"], m["thread"]) for m in evidence["idle_members"]} == idle_by_app
    assert (evidence["members"], evidence["active_tasks"], evidence["instances"]) == (4, 2, 2)
    assert evidence["idle_standby_tasks"] == sum(
        len(recorder.app_view[oversized][thread][1]) for thread in idle_by_app
    )
    for process, thread in idle_by_app:
        assert f"thread {thread} of instance {process}" in finding.explanation
    assert "run at most 1 stream thread per instance" in finding.explanation
    assert not [e for e in result.events if e.finding.group == fitting]
