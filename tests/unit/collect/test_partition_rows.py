"""A snapshot's partition rows carry what the poll read, each value in its own field
(``build`` makes them with positional arguments, for speed: a swapped pair would
still type-check)."""

import base64
import struct

from agent.collect.build import PollObservation, build_snapshot
from agent.collect.lag_time import OffsetHistory
from agent.collect.raw import (
    CommittedOffset,
    ConsumerGroupDescription,
    ConsumerGroupMember,
    GroupOffsets,
    ListedGroup,
    PartitionOffset,
    TopicMetadata,
)
from agent.model import AgentInfo, PartitionInfo

AGENT = AgentInfo("test", "0", "central")
GROUP = ListedGroup("app", "consumer", "Stable", "consumer")
NOW = 1_000.0


def stream_time(ms: int) -> str:
    """Kafka Streams' commit metadata: Base64 of a magic byte and the partition time."""
    return base64.b64encode(struct.pack(">bq", 1, ms)).decode()


def observation() -> PollObservation:
    member = ConsumerGroupMember(
        member_id="m-1",
        client_id="c-1",
        client_host="/10.0.0.1",
        group_instance_id=None,
        rack_id=None,
        member_epoch=3,
        subscribed_topics=("in",),
        assigned=(("in", 1),),
    )
    return PollObservation(
        cluster="c",
        agent=AGENT,
        sequence=1,
        started_at=NOW,
        duration_seconds=0.0,
        groups=(GROUP,),
        consumer_groups={
            "app": ConsumerGroupDescription(
                group_id="app",
                error_code=0,
                error_message=None,
                state="Stable",
                group_epoch=1,
                assignment_epoch=1,
                assignor="uniform",
                members=(member,),
            )
        },
        offsets={
            "app": GroupOffsets(
                "app",
                0,
                (
                    CommittedOffset("in", 0, 40, stream_time(123_456)),
                    CommittedOffset("in", 1, 70, None),
                ),
            )
        },
        topics={"in": TopicMetadata("in", 0, False, (7, 8))},
        log_end={("in", 0): PartitionOffset("in", 0, 100), ("in", 1): PartitionOffset("in", 1, 70)},
        log_start={("in", 0): PartitionOffset("in", 0, 5)},
        known_streams=frozenset(["app"]),
    )


def test_every_value_lands_in_its_field() -> None:
    history = OffsetHistory()
    history.record(("in", 0), NOW - 100.0, 0)
    history.record(("in", 0), NOW, 100)  # the record at 40: 41 % of the way, 59 s ago
    history.record(("in", 1), NOW, 70)

    rows = build_snapshot(observation(), GROUP, history, NOW).partitions

    assert rows == (
        PartitionInfo(
            topic="in",
            partition=0,
            log_end_offset=100,
            log_start_offset=5,
            committed_offset=40,
            lag=60,
            lag_seconds=59.0,
            owner_member_id=None,
            stream_time_ms=123_456,
            leader_id=7,
            lag_seconds_lower_bound=False,
        ),
        PartitionInfo(
            topic="in",
            partition=1,
            log_end_offset=70,
            log_start_offset=None,
            committed_offset=70,
            lag=0,
            lag_seconds=0.0,
            owner_member_id="m-1",
            stream_time_ms=None,
            leader_id=8,
            lag_seconds_lower_bound=False,
        ),
    )


def test_a_backlog_older_than_every_point_is_a_lower_bound() -> None:
    history = OffsetHistory()
    history.record(("in", 0), NOW - 30.0, 50)  # the agent first saw the log at 50; 40 is older
    history.record(("in", 0), NOW, 100)

    row = build_snapshot(observation(), GROUP, history, NOW).partitions[0]

    assert (row.lag_seconds, row.lag_seconds_lower_bound) == (30.0, True)
