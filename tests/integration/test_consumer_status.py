"""consumer_status on the real broker: plain consumer groups driven by the test into each
status, recorded with the agent's own poller and judged by the job's replay path.

* paused: a consumer that stays in the group (it keeps polling) with its partitions
  paused, while records arrive: stalled, the critical finding, naming its partitions.
* stopped: a consumer that consumed, committed and closed, while records keep arriving:
  stopped in the metric, and no_live_consumers' finding, not this rule's.
* slow: a consumer that reads fewer records than arrive and commits every third round,
  so several polls in a row see the same committed offset (what made Burrow call such a
  consumer stalled): lagging, never stalled at any poll.
* idle: a group without members whose commits are old and at the log end: ok.
* reset: a group without members reset to the earliest offsets, as
  ``kafka-consumer-groups --reset-offsets --to-earliest`` does (it needs an inactive
  group): rewound, the info finding.
* abandoned: a group without members that never read its 10 records: stopped, a finding
  only when stopped findings are turned on.

The consumers are kafka-python's, driven round by round by the test (Kafka itself is
the real broker). The window is seconds, not minutes (``WINDOW``), so the recording
takes seconds: the rule's judgement does not depend on the poll interval, only on what
the polls saw within the window.
"""

from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from agent.aggregation.judging.results import GROUP_STATUS
from agent.aggregation.replay import ReplayResult, replay
from agent.collect.kafka_edge import KafkaEdge
from agent.config.schema import DetectorsConfig
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.process import wait_until
from agent.embedded.topics import create_topics, end_offsets
from agent.model import Snapshot
from agent.model.findings import Finding
from tests.support.kafka_io import commit_offsets
from tests.support.recording import group_poller, poll_into
from tests.support.streams import unique_name

pytestmark = pytest.mark.integration

KIND = "consumer_status"
# consumer_status_window: seconds, not minutes, for a test; long enough that each quarter
# of it (what lagging compares) holds a few polls on a busy machine.
WINDOW = 8.0
PARAMS = DetectorsConfig(
    consumer_status_window=WINDOW,
    # Hysteresis and no_live_consumers' lag growth over a couple of polls, and its grace
    # short enough that the stopped group is its finding within the recording.
    evaluation_window=2.0,
    thread_death_grace=1.0,
)
PER_ROUND = 6  # records produced to each busy partition every round
SLOW_READS = 2  # records the slow consumer reads a round (fewer than arrive)
SLOW_COMMITS_EVERY = 3  # rounds between its commits


class Groups:
    """The six groups, their topics, and the consumers the test drives."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        names = ("paused", "stopped", "slow", "idle", "reset", "abandoned")
        self.group = {n: unique_name(f"cs-{n}") for n in names}
        self.topic = {n: f"{g}-in" for n, g in self.group.items()}
        create_topics(bootstrap, {t: 2 if n == "paused" else 1 for n, t in self.topic.items()})
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
        self.consumers: list[KafkaConsumer] = []
        self.rounds = 0
        self.reset_at: float | None = None  # the poll time of the first poll after it

    def produce(self, name: str, count: int) -> None:
        partitions = 2 if name == "paused" else 1
        for p in range(partitions):
            for _ in range(count):
                self.producer.send(self.topic[name], b"x", partition=p)
        self.producer.flush()

    def consumer(self, name: str) -> KafkaConsumer:
        consumer = KafkaConsumer(
            self.topic[name],
            bootstrap_servers=self.bootstrap,
            group_id=self.group[name],
            client_id=f"{self.group[name]}-client",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        self.consumers.append(consumer)
        return consumer

    def read_to_the_end(self, consumer: KafkaConsumer, name: str) -> None:
        """Join, read every record there is, commit."""
        ends = end_offsets(self.bootstrap, self.topic[name])
        wanted = {TopicPartition(self.topic[name], p): end for p, end in ends.items()}

        def caught_up() -> bool:
            consumer.poll(timeout_ms=200)
            assigned = consumer.assignment()
            return set(assigned) == set(wanted) and all(
                consumer.position(tp) >= end for tp, end in wanted.items()
            )

        wait_until(caught_up, timeout=60, what=f"the {name} consumer to read its records")
        consumer.commit()

    def close(self) -> None:
        for consumer in self.consumers:
            consumer.close()
        self.producer.close()


def _committed(snapshot: Snapshot) -> tuple[int | None, ...]:
    return tuple(p.committed_offset for p in snapshot.partitions)


class Recorder:
    """Polls the groups with the agent's poller into a recording, and keeps, per group,
    since when its view has been what its scenario needs (for the rule's window)."""

    def __init__(self, edge: KafkaEdge, groups: Groups, path: Path) -> None:
        self.groups = groups
        self.path = path
        self.poller = group_poller(edge, groups.group.values())
        self.name = {g: n for n, g in groups.group.items()}
        self.last: dict[str, Snapshot] = {}
        self.holding_since: dict[str, float] = {}
        self.t = 0.0

    def poll(self) -> None:
        for snapshot in poll_into(self.poller, self.path):
            name = self.name[snapshot.group.group_id]
            before = self.last.get(name)
            self.last[name] = snapshot
            self.t = max(self.t, snapshot.poll.started_at)
            if self._holds(name, snapshot, before):
                self.holding_since.setdefault(name, snapshot.poll.started_at)
            else:
                self.holding_since.pop(name, None)

    def _holds(self, name: str, now: Snapshot, before: Snapshot | None) -> bool:
        """Paused: members, records waiting, the same committed offsets as the poll
        before. Stopped: the same without members."""
        waiting = sum(p.lag or 0 for p in now.partitions) > 0
        unchanged = before is not None and _committed(before) == _committed(now)
        if name == "paused":
            return bool(now.members) and waiting and unchanged
        if name == "stopped":
            return not now.members and waiting and unchanged
        return True

    def held_for(self, name: str, seconds: float) -> bool:
        since = self.holding_since.get(name)
        return since is not None and self.t - since >= seconds


def _round(groups: Groups, paused: KafkaConsumer, slow: KafkaConsumer) -> None:
    """One round: records arrive; the paused consumer polls (it stays in the group,
    reading nothing); the slow one reads a few and commits every third round."""
    for name in ("paused", "stopped", "slow"):
        groups.produce(name, PER_ROUND)
    paused.poll(timeout_ms=0)
    slow.poll(timeout_ms=100, max_records=SLOW_READS)
    groups.rounds += 1
    if groups.rounds % SLOW_COMMITS_EVERY == 0:
        slow.commit()


def _status(result: ReplayResult, group: str) -> str:
    """The group's status at its last poll (exactly one of its status gauges is 1)."""
    (status,) = [
        g.status
        for g in result.gauges
        if g.group == group and g.metric == GROUP_STATUS and g.value == 1
    ]
    assert status is not None
    return status


def _finding(result: ReplayResult, group: str, kind: str = KIND) -> Finding | None:
    found = [f for f in result.open_findings if f.group == group and f.kind == kind]
    return found[0] if found else None


@dataclass(frozen=True)
class Scenario:
    group: dict[str, str]  # scenario name -> group id
    result: ReplayResult  # the recording replayed with PARAMS
    with_stopped: ReplayResult  # ... and with stopped findings turned on


@pytest.fixture(scope="module")
def scenario(kafka: EmbeddedKafka, tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    """Recorded once for the module's tests (the ``edge`` fixture is per test)."""
    groups = Groups(kafka.bootstrap_servers)
    edge = KafkaEdge({"bootstrap_servers": kafka.bootstrap_servers, "client_id": "ksmon-test"})
    try:
        recording = tmp_path_factory.mktemp("consumer-status") / "snapshots.jsonl"
        _record(groups, edge, recording)
    finally:
        edge.close()
        groups.close()
    return Scenario(
        groups.group,
        replay([recording], PARAMS),
        replay([recording], replace(PARAMS, consumer_stopped_severity="warning")),
    )


def _record(groups: Groups, edge: KafkaEdge, recording: Path) -> None:
    """Every group into its status, polled all along."""
    bootstrap = groups.bootstrap
    for name in ("paused", "stopped", "slow", "idle", "reset", "abandoned"):
        groups.produce(name, 10 if name == "abandoned" else 20)
    paused, stopped, slow = (groups.consumer(n) for n in ("paused", "stopped", "slow"))
    for consumer, name in ((paused, "paused"), (stopped, "stopped")):
        groups.read_to_the_end(consumer, name)
    wait_until(
        lambda: bool(slow.poll(timeout_ms=200, max_records=1)) or bool(slow.assignment()),
        timeout=60,
        what="the slow consumer to join",
    )
    slow.commit()
    # Groups without members, made of their commits alone (as a stopped application's).
    commit_offsets(bootstrap, groups.group["idle"], groups.topic["idle"], {0: 20})
    commit_offsets(bootstrap, groups.group["reset"], groups.topic["reset"], {0: 20})
    commit_offsets(bootstrap, groups.group["abandoned"], groups.topic["abandoned"], {0: 0})
    recorder = Recorder(edge, groups, recording)

    def every_group_seen_with_its_members() -> bool:
        recorder.poll()
        return len(recorder.last) == len(groups.group) and all(
            recorder.last[n].members for n in ("paused", "stopped", "slow")
        )

    # The recording sees the stopped consumer as a member first: a group that lost its
    # members, not one abandoned before the agent came.
    wait_until(every_group_seen_with_its_members, timeout=60, what="a poll of every group")
    paused.pause(*paused.assignment())
    stopped.close()  # leaves the group: Empty at once

    def stalled_and_stopped_for_a_window() -> bool:
        _round(groups, paused, slow)
        recorder.poll()
        # A margin over the window: the statuses hold at a few polls, not only the last.
        return recorder.held_for("paused", WINDOW + 1) and recorder.held_for("stopped", WINDOW + 1)

    wait_until(
        stalled_and_stopped_for_a_window,
        timeout=90,
        interval=0.1,
        what="the paused and the stopped group to stand still for a window",
    )
    # The reset, and two polls that see it (well within a window: still rewound).
    reset_from = recorder.t
    commit_offsets(bootstrap, groups.group["reset"], groups.topic["reset"], {0: 0})
    seen: list[float] = []

    def reset_seen_twice() -> bool:
        _round(groups, paused, slow)
        recorder.poll()
        if _committed(recorder.last["reset"]) == (0,):
            seen.append(recorder.t)
        return len(seen) >= 2

    wait_until(reset_seen_twice, timeout=30, interval=0.1, what="two polls after the reset")
    assert recorder.t - reset_from < WINDOW, "the polls after the reset took a whole window"


def test_a_paused_consumer_still_in_its_group_is_stalled(scenario: Scenario) -> None:
    group = scenario.group["paused"]
    assert _status(scenario.result, group) == "stalled"
    finding = _finding(scenario.result, group)
    assert finding is not None
    assert finding.severity == "critical"
    stalled = finding.evidence["stalled"]
    assert sorted(p["partition"] for p in stalled) == [0, 1]
    assert {p["owner"] for p in stalled} == {f"member {group}-client"}
    assert all(p["lag"] > 0 and p["seconds_without_commit"] >= WINDOW for p in stalled)
    assert f"group {group} has 1 member yet committed nothing" in finding.explanation


def test_a_consumer_gone_is_stopped_and_no_live_consumers_finding(scenario: Scenario) -> None:
    group = scenario.group["stopped"]
    assert _status(scenario.result, group) == "stopped"
    assert _finding(scenario.result, group) is None
    left = _finding(scenario.result, group, "no_live_consumers")
    assert left is not None
    assert left.severity == "critical"
    # Even with stopped findings turned on: it lost its member within thread_history.
    assert _finding(scenario.with_stopped, group) is None


def test_a_slow_consumer_that_moves_is_lagging_and_never_stalled(scenario: Scenario) -> None:
    group = scenario.group["slow"]
    assert _status(scenario.result, group) == "lagging"
    assert not [e for e in scenario.result.events if e.finding.group == group]


def test_old_commits_and_nothing_to_read_is_ok(scenario: Scenario) -> None:
    group = scenario.group["idle"]
    assert _status(scenario.result, group) == "ok"
    assert not [e for e in scenario.result.events if e.finding.group == group]


def test_a_reset_to_earliest_is_rewound(scenario: Scenario) -> None:
    group = scenario.group["reset"]
    assert _status(scenario.result, group) == "rewound"
    reset = _finding(scenario.result, group)
    assert reset is not None
    assert reset.severity == "info"
    (rewound,) = reset.evidence["rewound"]
    assert (rewound["from_offset"], rewound["to_offset"], rewound["rewound_records"]) == (
        20,
        0,
        20,
    )


def test_an_abandoned_backlog_is_stopped_a_finding_only_when_asked(scenario: Scenario) -> None:
    group = scenario.group["abandoned"]
    assert _status(scenario.result, group) == "stopped"
    assert _finding(scenario.result, group) is None
    abandoned = _finding(scenario.with_stopped, group)
    assert abandoned is not None
    assert abandoned.severity == "warning"
