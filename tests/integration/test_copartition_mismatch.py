"""copartition_mismatch on the real broker with the real fixture app.

The ``join`` topology joins a stream (the input topic) with a table (the table
topic) in one sub-topology. With an input of 4 partitions and a table of 2:

- a classic group (Kafka Streams 4.3.1's own assignor) checks co-partitioning only
  for applications with repartition topics; this one has none, so it assigns 4
  tasks and tasks 0_2 and 0_3 read only the input: a silent mis-join. ksmon sees
  it from the decoded tasks: a warning;
- a KIP-1071 group (``group.protocol=streams``): the broker checks the join's
  topics, refuses (INCORRECTLY_PARTITIONED_TOPICS) and assigns nothing; ksmon
  sees it from the topology the broker holds and the members without a task:
  critical (the app's stream threads fail on the refusal; the fixture replaces
  them, so its members stay);
- the same classic join on 2 and 2 partitions: nothing.

The agent's own poller records the snapshots; the job's replay path judges them
with ``copartition_mismatch_after`` short enough for a test.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.aggregation.replay import replay
from agent.collect.kafka_edge import KafkaEdge
from agent.config.schema import DetectorsConfig
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppConfig, StreamsAppInstance
from agent.embedded.topics import create_topics
from agent.model import Snapshot
from tests.support.recording import group_poller, poll_into
from tests.support.streams import StreamsApps, unique_name

pytestmark = pytest.mark.integration

HOLD = 5.0
PARAMS = DetectorsConfig(copartition_mismatch_after=HOLD)


def _join(app: str, **streams_config: str) -> StreamsAppConfig:
    return StreamsAppConfig(
        application_id=app,
        topology="join",
        input_topic=f"{app}-in",
        table_topic=f"{app}-table",
        output_topic=f"{app}-out",
        threads=2,
        streams_config=streams_config,
    )


def _tasks(snapshot: Snapshot) -> dict[str, set[str]]:
    """Active task -> the topics it reads, as ksmon decoded them."""
    return {
        task.task: {p.topic for p in task.partitions}
        for m in snapshot.members
        if m.streams is not None
        for task in m.streams.active_tasks
    }


def _app_tasks(instances: list[StreamsAppInstance]) -> dict[str, set[str]]:
    """The same, from the app's own view of its threads."""
    tasks: dict[str, set[str]] = {}
    for instance in instances:
        state: dict[str, Any] | None = instance.oracle()
        assert state is not None, f"{instance.name} does not answer"
        for thread in state["threads"]:
            for task in thread["activeTasks"]:
                tasks[task["taskId"]] = {p.rsplit("-", 1)[0] for p in task["partitions"]}
    return tasks


class Recorder:
    """Polls the groups into a recording; per group, since when its snapshots have shown
    ``ready`` at every poll."""

    def __init__(
        self, edge: KafkaEdge, ready: dict[str, Callable[[Snapshot], bool]], path: Path
    ) -> None:
        self.ready = ready
        self.path = path
        self.poller = group_poller(edge, ready)
        self.ready_since: dict[str, float] = {}
        self.last: dict[str, Snapshot] = {}

    def settled_for(self, seconds: float) -> bool:
        for snapshot in poll_into(self.poller, self.path):
            group = snapshot.group.group_id
            self.last[group] = snapshot
            if self.ready[group](snapshot):
                self.ready_since.setdefault(group, snapshot.poll.started_at)
            else:
                self.ready_since.pop(group, None)
        return all(
            group in self.ready_since
            and self.last[group].poll.started_at - self.ready_since[group] >= seconds
            for group in self.ready
        )


def _counts(snapshot: Snapshot) -> dict[str, int]:
    return {t.name: t.partitions for t in snapshot.topics}


def test_a_join_of_topics_with_different_counts_is_found_and_an_equal_one_is_not(
    kafka: EmbeddedKafka,
    streams_apps: StreamsApps,
    edge: KafkaEdge,
    tmp_path: Path,
) -> None:
    classic = unique_name("cpm-classic")
    kip1071 = unique_name("cpm-kip1071")
    equal = unique_name("cpm-equal")
    create_topics(
        kafka.bootstrap_servers,
        {
            f"{classic}-in": 4,
            f"{classic}-table": 2,
            f"{kip1071}-in": 4,
            f"{kip1071}-table": 2,
            f"{equal}-in": 2,
            f"{equal}-table": 2,
        },
    )
    apps = {
        classic: streams_apps.start(_join(classic), wait=False),
        kip1071: streams_apps.start(_join(kip1071, **{"group.protocol": "streams"}), wait=False),
        equal: streams_apps.start(_join(equal), wait=False),
    }
    ready: dict[str, Callable[[Snapshot], bool]] = {
        # Stable, with the 4 tasks the larger topic makes.
        classic: lambda s: s.group.state == "Stable" and len(_tasks(s)) == 4,
        # The broker holds the topology and both counts are known; its members have joined.
        kip1071: lambda s: (
            bool(s.subtopologies)
            and len(s.members) == 2
            and _counts(s).get(f"{kip1071}-in") == 4
            and _counts(s).get(f"{kip1071}-table") == 2
        ),
        equal: lambda s: s.group.state == "Stable" and len(_tasks(s)) == 2,
    }
    recording = tmp_path / "snapshots.jsonl"
    recorder = Recorder(edge, ready, recording)
    wait_until(
        lambda: recorder.settled_for(HOLD + 2),
        timeout=240,
        interval=1.0,
        what="the classic groups Stable with their tasks, the KIP-1071 group with its topology",
        abort=lambda: next(filter(None, (i.died() for i in streams_apps.instances)), None),
    )
    # What the apps themselves say: the classic one runs 4 tasks, 0_2 and 0_3 without the
    # table; the KIP-1071 one runs no task at all.
    classic_tasks = _app_tasks(apps[classic])
    assert classic_tasks == _tasks(recorder.last[classic]), "ksmon decodes what the app runs"
    only_input = sorted(t for t, topics in classic_tasks.items() if topics == {f"{classic}-in"})
    assert only_input == ["0_2", "0_3"], classic_tasks
    # The broker refused the join: NotReady, no task, and the app's threads were told why.
    assert recorder.last[kip1071].group.state == "NotReady"
    assert _app_tasks(apps[kip1071]) == {}
    assert not _tasks(recorder.last[kip1071])
    (refused_app,) = apps[kip1071]
    log = refused_app.process.log_path.read_text(errors="replace")
    assert "do not have the same number of partitions" in log

    result = replay([recording], PARAMS)

    found = {f.group: f for f in result.open_findings if f.kind == "copartition_mismatch"}
    assert set(found) == {classic, kip1071}, [(f.group, f.explanation) for f in found.values()]
    topics = [
        {"topic": f"{classic}-in", "partitions": 4},
        {"topic": f"{classic}-table", "partitions": 2},
    ]

    silent = found[classic]
    assert silent.severity == "warning"
    assert silent.evidence["sources_from"] == "active tasks"
    (mismatch,) = silent.evidence["subtopologies"]
    assert mismatch["topics"] == topics
    (partial,) = mismatch["tasks_reading_some"]
    assert (partial["first_task"], partial["last_task"], partial["reads_only"]) == (
        only_input[0],
        only_input[-1],
        [f"{classic}-in"],
    )
    assert "tasks 0_2 to 0_3 read only" in silent.explanation

    refused = found[kip1071]
    assert refused.severity == "critical", refused.explanation
    assert refused.evidence["sources_from"] == "broker topology"
    assert refused.evidence["active_tasks"] == 0
    (mismatch,) = refused.evidence["subtopologies"]
    assert mismatch["topics"] == [
        {"topic": f"{kip1071}-in", "partitions": 4},
        {"topic": f"{kip1071}-table", "partitions": 2},
    ]
    assert "INCORRECTLY_PARTITIONED_TOPICS" in refused.explanation

    assert not [e for e in result.events if e.finding.group == equal]
