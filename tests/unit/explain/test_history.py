"""The group's generations as explain reads them from its ``__consumer_offsets`` records,
and when there is nothing to read (issue 27 #4)."""

import json
from dataclasses import replace

import pytest

from agent.config import ClusterConfig, parse_config
from agent.explain.history import GroupMetadataFold, history_unreadable
from agent.model import SCHEMA_VERSION, AgentInfo, ClusterFacts, GroupInfo, PollInfo, Snapshot
from agent.streams.consumer_protocol import ConsumerSubscription
from agent.streams.offsets_topic import (
    GroupMember,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)
from agent.streams.subscription_info import SubscriptionInfo
from tests.unit.fuzz import wire

GROUP = "orders-app"
PROCESS_A = "00112233-4455-6677-8899-aabbccddeeff"
PROCESS_B = "ffeeddcc-bbaa-9988-7766-554433221100"


def streams_member(process: str, thread: int) -> GroupMember:
    info = SubscriptionInfo(
        version=11,
        latest_supported_version=11,
        process_id=process,
        endpoint=None,
        task_offset_sums={},
        unique_field=0,
        error_code=0,
        client_tags={},
    )
    subscription = ConsumerSubscription(
        version=3,
        topics=["orders"],
        user_data=wire.subscription_info(info),
        owned_partitions=[],
        generation_id=-1,
        rack_id=None,
    )
    return GroupMember(
        member_id=f"{GROUP}-{process}-StreamThread-{thread}-consumer-{thread}",
        group_instance_id=None,
        client_id=f"{GROUP}-{process}-StreamThread-{thread}-consumer",
        client_host="/10.0.0.1",
        rebalance_timeout_ms=300_000,
        session_timeout_ms=45_000,
        subscription=wire.consumer_subscription(subscription),
        assignment=b"",
    )


def plain_member(name: str) -> GroupMember:
    subscription = ConsumerSubscription(3, ["orders"], None, [], -1, None)
    return GroupMember(
        name, None, f"client-{name}", "/10.0.0.9", 300_000, 45_000,
        wire.consumer_subscription(subscription), b"",
    )  # fmt: skip


def metadata(
    generation: int, members: list[GroupMember], protocol: str | None = "stream", group: str = GROUP
) -> tuple[bytes, bytes]:
    value = GroupMetadataValue(
        version=3,
        protocol_type="consumer",
        generation=generation,
        protocol=protocol if members else None,
        leader=members[0].member_id if members else None,
        current_state_timestamp=-1,
        members=members,
    )
    return wire.offsets_key(GroupMetadataKey(group)), wire.group_metadata_value(value)


def commit(offset: int) -> tuple[bytes, bytes]:
    key = OffsetCommitKey(1, GROUP, "orders", 0)
    return wire.offsets_key(key), wire.offset_commit_value(
        OffsetCommitValue(3, offset, 0, "", 1000, None, None)
    )


def test_one_line_per_generation_from_the_groups_own_records() -> None:
    fold = GroupMetadataFold(GROUP)
    records = [
        (*commit(5), 999_000),  # an offset commit of the same group: not a generation
        (*metadata(7, [streams_member(PROCESS_A, 1), streams_member(PROCESS_B, 1)]), 1_000_000),
        (*metadata(3, [plain_member("x")], "range", group="another-group"), 1_001_000),
        (*metadata(8, []), 1_002_000),  # the members left: a new generation, Empty
        (*metadata(9, [streams_member(PROCESS_A, 2)]), 1_003_000),
        # The same generation stored again (a static member replaced): still one line,
        # stored when it was first, with its members as they are now.
        (*metadata(9, [streams_member(PROCESS_A, 2), streams_member(PROCESS_B, 2)]), 1_004_000),
        (b"\xff", b"not a record of any known layout", 1_005_000),
    ]
    for key, value, at in records:
        fold.apply(key, value, at)

    assert [(g.generation, g.at, g.members, g.protocol) for g in fold.generations] == [
        (7, 1000.0, 2, "stream"),
        (8, 1002.0, 0, None),
        (9, 1003.0, 2, "stream"),
    ]
    seven, eight, nine = fold.generations
    assert seven.streams_processes == tuple(sorted((PROCESS_A, PROCESS_B)))
    assert (seven.stream_threads, seven.is_streams) == (2, True)
    assert (eight.stream_threads, eight.is_streams) == (0, False), "nobody to tell by"
    assert len(nine.streams_processes) == 2


@pytest.mark.parametrize(
    ("members", "protocol", "is_streams", "why"),
    [
        ([plain_member("a")], "range", False, "a plain consumer group"),
        ([plain_member("a")], "stream", True, "StreamsPartitionAssignor's protocol name"),
        ([streams_member(PROCESS_A, 1)], "custom", True, "SubscriptionInfo in the userData"),
    ],
)
def test_kafka_streams_members_are_told_by_their_assignor_or_their_subscription(
    members: list[GroupMember], protocol: str, is_streams: bool, why: str
) -> None:
    fold = GroupMetadataFold(GROUP)
    fold.apply(*metadata(4, members, protocol), 1_000)

    assert fold.generations[0].is_streams is is_streams, why


def test_a_tombstone_says_the_group_was_deleted() -> None:
    fold = GroupMetadataFold(GROUP)
    fold.apply(*metadata(4, [plain_member("a")], "range"), 1_000)
    fold.apply(wire.offsets_key(GroupMetadataKey(GROUP)), None, 2_000)

    assert fold.deleted_at == 2.0
    assert [g.generation for g in fold.generations] == [4]


def cluster(read_offsets_topic: bool = True) -> ClusterConfig:
    text = json.dumps(
        {
            "clusters": [
                {
                    "name": "prod",
                    "bootstrap_servers": "k:9092",
                    "offsets_topic": {"read": read_offsets_topic},
                }
            ]
        }
    )
    return parse_config(text, "test").clusters[0]


def snapshot(group: GroupInfo, offsets_partitions: int | None = 50) -> Snapshot:
    return Snapshot(
        SCHEMA_VERSION,
        "prod",
        AgentInfo("a", "0", "central"),
        PollInfo(1, 0.0, 0.1),
        group,
        cluster_facts=ClusterFacts(offsets_topic_partitions=offsets_partitions),
    )


CLASSIC = GroupInfo(GROUP, "classic", "Empty", "consumer")


@pytest.mark.parametrize(
    ("config", "poll", "expected"),
    [
        pytest.param(cluster(), snapshot(CLASSIC), None, id="classic-group-readable"),
        pytest.param(
            cluster(read_offsets_topic=False),
            snapshot(CLASSIC),
            "not read: offsets_topic.read is false for cluster prod",
            id="reading-switched-off",
        ),
        pytest.param(
            cluster(),
            snapshot(CLASSIC, offsets_partitions=None),
            "unknown: the number of __consumer_offsets partitions is unknown",
            id="partition-count-unknown",
        ),
        pytest.param(
            cluster(),
            snapshot(replace(CLASSIC, group_type="consumer", group_epoch=12)),
            "a KIP-848 consumer group: its group epoch stands for the generation",
            id="kip848",
        ),
        pytest.param(
            cluster(),
            snapshot(replace(CLASSIC, group_type="streams", group_epoch=3)),
            "a KIP-1071 streams group: its group epoch stands for the generation",
            id="kip1071",
        ),
    ],
)
def test_when_there_is_nothing_to_read_the_reason_is_given(
    config: ClusterConfig, poll: Snapshot, expected: str | None
) -> None:
    why = history_unreadable(config, poll)

    if expected is None:
        assert why is None
    else:
        assert why is not None
        assert why.startswith(expected)
