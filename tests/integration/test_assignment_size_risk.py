"""assignment_size_risk on the real broker with the real fixture app: a Streams group whose
metadata record is a large share of the offsets topic's ``max.message.bytes`` is found,
with the sizes the agent measured, and neither it (under the broker's default limit) nor
a small group beside it is.

The risk is real, not faked: the application advertises ``application.server``, so each
of its 4 stream threads' assignments carries every instance's partitions (the growth of
KAFKA-7149), and the test lowers ``max.message.bytes`` of ``__consumer_offsets`` on the
session broker until that record is 70% of it, still below it, so nothing breaks. The
broker is shared with the session's other tests: the topic's own setting is restored
whatever happens.
"""

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from agent.aggregation.replay import replay
from agent.collect.kafka_edge import KafkaEdge
from agent.config.schema import DetectorsConfig
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppConfig
from agent.embedded.topics import create_topics
from agent.model import Snapshot
from tests.support.recording import group_poller, poll_into
from tests.support.streams import StreamsApps, unique_name

pytestmark = pytest.mark.integration

OFFSETS_TOPIC = "__consumer_offsets"
LIMIT_KEY = "max.message.bytes"
SHARE = 0.7  # of the lowered limit that the large group's record takes
HELD = 4.0  # seconds the lowered limit must be seen at Stable polls: past the window
PARAMS = DetectorsConfig(evaluation_window=2.0)


def _config(app: str, threads: int, *, application_server: bool) -> StreamsAppConfig:
    return StreamsAppConfig(
        application_id=app,
        topology="windowed",
        input_topic=f"{app}-in",
        output_topic=f"{app}-out",
        threads=threads,
        application_server=application_server,
    )


def _metadata_bytes(snapshot: Snapshot) -> int:
    """What the agent exports as ``ksmon_group_metadata_bytes``."""
    return sum(m.subscription_bytes + m.assignment_bytes for m in snapshot.members)


@contextmanager
def _offsets_topic_limit(bootstrap: str, limit: int) -> Iterator[None]:
    """``max.message.bytes`` of ``__consumer_offsets`` set to ``limit`` for the block; the
    topic's own setting (none, as the broker creates it) back afterwards."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="ksmon-test-limit")
    topic = ConfigResourceType.TOPIC
    try:
        described = admin.describe_configs(
            [ConfigResource(topic, OFFSETS_TOPIC, [LIMIT_KEY])], config_filter="modified"
        )
        override = described.get("TOPIC", {}).get(OFFSETS_TOPIC, {}).get(LIMIT_KEY)
        admin.alter_configs([ConfigResource(topic, OFFSETS_TOPIC, {LIMIT_KEY: str(limit)})])
        try:
            yield
        finally:
            restore = (
                {LIMIT_KEY: ("SET", override["value"])}
                if override
                else {LIMIT_KEY: ("DELETE", None)}
            )
            admin.alter_configs([ConfigResource(topic, OFFSETS_TOPIC, restore)])
    finally:
        admin.close()


class Recorder:
    """Polls with the agent's poller (configs re-read every poll), writes every snapshot
    to a recording, keeps each group's last snapshot and since when a group has been
    Stable, fully described, with the limit it reports now."""

    def __init__(self, edge: KafkaEdge, groups: dict[str, int], path: Path) -> None:
        self.groups = groups  # group -> its stream thread count
        self.path = path
        self.poller = group_poller(edge, groups, metadata_interval=0.0)
        self.last: dict[str, Snapshot] = {}
        self.settled_since: dict[str, float] = {}

    def poll(self) -> None:
        for snapshot in poll_into(self.poller, self.path):
            group = snapshot.group.group_id
            previous = self.last.get(group)
            settled = (
                snapshot.group.state == "Stable"
                and len(snapshot.members) == self.groups[group]
                and all(m.streams is not None and m.assignment_bytes for m in snapshot.members)
            )
            same_limit = previous is not None and (
                previous.cluster_facts.offsets_topic_max_message_bytes
                == snapshot.cluster_facts.offsets_topic_max_message_bytes
            )
            if not settled:
                self.settled_since.pop(group, None)
            elif not same_limit:
                self.settled_since[group] = snapshot.poll.started_at
            else:
                self.settled_since.setdefault(group, snapshot.poll.started_at)
            self.last[group] = snapshot

    def settled_for(self, seconds: float, limit: int | None = None) -> bool:
        """Every group Stable and fully described for ``seconds`` (with ``limit`` seen)."""
        self.poll()
        return all(
            group in self.settled_since
            and self.last[group].poll.started_at - self.settled_since[group] >= seconds
            and (
                limit is None
                or self.last[group].cluster_facts.offsets_topic_max_message_bytes == limit
            )
            for group in self.groups
        )


def test_a_group_record_near_the_offsets_topic_limit_is_found_and_a_small_one_is_not(
    kafka: EmbeddedKafka,
    streams_apps: StreamsApps,
    edge: KafkaEdge,
    tmp_path: Path,
) -> None:
    large, small = unique_name("asr-large"), unique_name("asr-small")
    create_topics(kafka.bootstrap_servers, {f"{large}-in": 8, f"{small}-in": 2})
    # Every JVM spawns before any is waited for: they boot in parallel.
    streams_apps.start(_config(large, threads=2, application_server=True), 2, wait=False)
    streams_apps.start(_config(small, threads=1, application_server=False), 1, wait=False)
    recording = tmp_path / "snapshots.jsonl"
    recorder = Recorder(edge, {large: 4, small: 1}, recording)
    abort = lambda: next(filter(None, (i.died() for i in streams_apps.instances)), None)  # noqa: E731
    # Healthy first, under the broker's own limit (about 1 MiB): long enough to be judged.
    wait_until(
        lambda: recorder.settled_for(HELD),
        timeout=120,
        interval=0.5,
        what="both groups Stable and fully described under the default limit",
        abort=abort,
    )
    default_limit = recorder.last[large].cluster_facts.offsets_topic_max_message_bytes
    assert default_limit is not None
    assert default_limit > 1_000_000, default_limit
    size = _metadata_bytes(recorder.last[large])
    small_size = _metadata_bytes(recorder.last[small])
    limit = math.ceil(size / SHARE)
    assert small_size < 0.25 * limit, (small_size, size, "the small group must stay small")
    changed_at = recorder.last[large].poll.started_at

    with _offsets_topic_limit(kafka.bootstrap_servers, limit):
        wait_until(
            lambda: recorder.settled_for(HELD, limit),
            timeout=60,
            interval=0.5,
            what=f"both groups Stable for {HELD} s with the lowered limit {limit} seen",
            abort=abort,
        )
    last = recorder.last[large]
    assert _metadata_bytes(last) == size, "no rebalance changed the record in between"

    result = replay([recording], PARAMS)

    found = [f for f in result.open_findings if f.kind == "assignment_size_risk"]
    assert [f.group for f in found] == [large], [(f.group, f.explanation) for f in found]
    (finding,) = found
    evidence = finding.evidence
    assert finding.severity == "warning"
    assert finding.since > changed_at, "nothing under the default limit"
    assert evidence["variant"] == "threshold"
    assert (evidence["metadata_bytes"], evidence["max_message_bytes"]) == (size, limit)
    assert abs(evidence["ratio"] - size / limit) <= 0.0005, evidence["ratio"]
    assert (evidence["members"], evidence["instances"], evidence["partitions"]) == (4, 2, 8)
    assert evidence["application_server"] is True
    biggest = max(m.subscription_bytes + m.assignment_bytes for m in last.members)
    assert evidence["largest_members"][0]["bytes"] == biggest
    assert f"is {size} bytes, 70% of the offsets topic's max.message.bytes {limit}" in (
        finding.explanation
    )
    assert "leave application.server unset" in finding.explanation
    assert not [e for e in result.events if e.finding.group == small]
    configs, _ = edge.describe_configs([OFFSETS_TOPIC], None)
    assert configs[OFFSETS_TOPIC].max_message_bytes == default_limit, "the limit is restored"
