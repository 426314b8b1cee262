"""Every vector Kafka's own encoders produced decodes to exactly the input it was made from.

Two independent checks per line: the full decoded value equals the known
encoder input (tests/data/README.md), and for SUB/ASG lines it also equals
what Kafka's own ``toString`` printed after ``decoded=``.
"""

import re
from collections.abc import Callable

import pytest

from agent.streams.assignment_info import (
    NO_REBALANCE_SCHEDULED,
    AssignmentInfo,
    decode_assignment_info,
)
from agent.streams.codec import DecodeError
from agent.streams.consumer_protocol import (
    ConsumerAssignment,
    ConsumerSubscription,
    decode_consumer_assignment,
    decode_consumer_subscription,
)
from agent.streams.member import decode_streams_member
from agent.streams.offsets_topic import (
    GroupMember,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_group_metadata_value,
    decode_offset_commit_value,
    decode_offsets_key,
)
from agent.streams.subscription_info import SubscriptionInfo, decode_subscription_info
from agent.streams.types import HostInfo, TaskId, TopicPartition
from tests.unit.streams.vectors import PROCESS_ID, VECTORS, Vector, vector

T0_0 = TaskId(0, 0)
T1_2 = TaskId(1, 2)
T1_0 = TopicPartition("t1", 0)
T2_2 = TopicPartition("t2", 2)
HOST = HostInfo("h", 1)


def _id(v: Vector) -> str:
    return v.name.replace(" ", "-")


def expected_subscription_info(version: int) -> SubscriptionInfo:
    """The SUB vectors' encoder input, as each version can carry it (section 2.4)."""
    task_lists = version <= 6  # v1-6 carry prev/standby lists, no sums
    return SubscriptionInfo(
        version=version,
        latest_supported_version=11 if version >= 3 else -1,
        process_id=PROCESS_ID,
        endpoint="h:1" if version >= 2 else None,
        # v1-6 lists convert as Kafka does: previous active -2, standby -3.
        task_offset_sums={T0_0: -2, T1_2: -3} if task_lists else {T0_0: -2, T1_2: 100},
        unique_field=1 if version >= 8 else None,
        error_code=0 if version >= 9 else None,
        client_tags={"az": "a"} if version >= 11 else {},
        prev_tasks=(T0_0,) if task_lists else (),
        standby_tasks=(T1_2,) if task_lists else (),
    )


def expected_assignment_info(version: int) -> AssignmentInfo:
    """The ASG vectors' encoder input, as each version can carry it (section 3.2)."""
    if version >= 6:  # dictionary covers active and standby host maps
        dictionary = {0: "t2", 1: "t1"}
    elif version == 5:  # dictionary covers the active host map only
        dictionary = {0: "t1"}
    else:
        dictionary = {}
    return AssignmentInfo(
        version=version,
        commonly_supported_version=11 if version >= 3 else -1,
        active_tasks=[T0_0],
        standby_tasks={T1_2: [T2_2]},
        partitions_by_host={HOST: [T1_0]} if version >= 2 else {},
        standby_partitions_by_host={HOST: [T2_2]} if version >= 6 else {},
        error_code=0,
        next_rebalance_ms=NO_REBALANCE_SCHEDULED,
        topic_dictionary=dictionary,
    )


def expected_offset_commit_value(version: int) -> OffsetCommitValue:
    return OffsetCommitValue(
        version=version,
        offset=42,
        leader_epoch=7 if version >= 3 else None,
        metadata="m",
        commit_timestamp=1000,
        expire_timestamp=2000 if version == 1 else None,
        topic_id=None,
    )


def expected_group_metadata_value(version: int) -> GroupMetadataValue:
    member = GroupMember(
        member_id="m1",
        group_instance_id=None,
        client_id="c",
        client_host="/1.2.3.4",
        rebalance_timeout_ms=300000 if version >= 1 else None,
        session_timeout_ms=45000,
        subscription=b"\x01\x02",
        assignment=b"\x03",
    )
    return GroupMetadataValue(
        version=version,
        protocol_type="consumer",
        generation=3,
        protocol="stream",
        leader="m1",
        current_state_timestamp=1000 if version >= 2 else None,
        members=[member],
    )


EXPECTED_SUBSCRIPTION = ConsumerSubscription(
    version=3,
    topics=["t1", "t2"],
    user_data=vector("SUB", 11).data,
    owned_partitions=[T1_0],
    generation_id=5,
    rack_id="r1",
)
EXPECTED_ASSIGNMENT = ConsumerAssignment(
    version=3, partitions=[T1_0], user_data=vector("ASG", 11).data
)


# Per vector kind: (decoder, expected value for a version).
_CASES: dict[str, tuple[Callable[[bytes], object], Callable[[int], object]]] = {
    "SUB": (decode_subscription_info, expected_subscription_info),
    "ASG": (decode_assignment_info, expected_assignment_info),
    "CONSUMER_SUB": (decode_consumer_subscription, lambda _: EXPECTED_SUBSCRIPTION),
    "CONSUMER_ASG": (decode_consumer_assignment, lambda _: EXPECTED_ASSIGNMENT),
    "OFFSETKEY": (decode_offsets_key, lambda _: OffsetCommitKey(1, "g", "t1", 0)),
    "GROUPKEY": (decode_offsets_key, lambda _: GroupMetadataKey("g")),
    "OFFSETVAL": (decode_offset_commit_value, expected_offset_commit_value),
    "GROUPVAL": (decode_group_metadata_value, expected_group_metadata_value),
}


@pytest.mark.parametrize("v", VECTORS, ids=_id)
def test_vector_decodes_to_the_encoder_input(v: Vector) -> None:
    decode, expected = _CASES[v.kind]

    assert decode(v.data) == expected(v.version)


def test_every_kind_and_version_in_the_file_is_covered() -> None:
    # A new line in the vector file must not pass unnoticed through a default branch.
    kinds = {(v.kind, v.version) for v in VECTORS}
    assert {("SUB", n) for n in range(1, 12)} <= kinds
    assert {("ASG", n) for n in range(1, 12)} <= kinds
    assert {("OFFSETVAL", n) for n in range(5)} <= kinds
    assert {("GROUPVAL", n) for n in range(5)} <= kinds
    assert {v.kind for v in VECTORS} == set(_CASES)
    assert len(VECTORS) == 36


# --- Kafka's toString after "decoded=" ---------------------------------------------------------

_SUB_TEXT = re.compile(r"\{(?P<sums>[^}]*)\} ep=(?P<ep>\S+) tags=\{(?P<tags>[^}]*)\}")
_HOST_ENTRY = r"HostInfo\{host='[^']*', port=\d+\}=\[[^\]]*\]"
_ASG_TEXT = re.compile(
    r"\[version=(?P<version>-?\d+), supported version=(?P<supported>-?\d+), "
    r"active tasks=\[(?P<active>[^\]]*)\], "
    r"standby tasks=\{(?P<standby>(?:[^=]+=\[[^\]]*\](?:, )?)*)\}, "
    rf"partitions by host=\{{(?P<hosts>(?:{_HOST_ENTRY}(?:, )?)*)\}}, "
    rf"standbyPartitions by host=\{{(?P<standby_hosts>(?:{_HOST_ENTRY}(?:, )?)*)\}}\]"
)


def _java_task(text: str) -> TaskId:
    subtopology, partition = text.split("_")
    return TaskId(int(subtopology), int(partition))


def _java_partitions(text: str) -> list[TopicPartition]:
    return [
        TopicPartition(topic, int(partition))
        for topic, partition in (p.rsplit("-", 1) for p in text.split(", ") if p)
    ]


def _java_map(text: str) -> dict[str, str]:
    return dict(entry.split("=", 1) for entry in text.split(", ") if entry)


def _java_host_map(text: str) -> dict[HostInfo, list[TopicPartition]]:
    entries = re.finditer(r"HostInfo\{host='([^']*)', port=(\d+)\}=\[([^\]]*)\]", text)
    return {HostInfo(m[1], int(m[2])): _java_partitions(m[3]) for m in entries}


def _java_standby_map(text: str) -> dict[TaskId, list[TopicPartition]]:
    entries = re.finditer(r"(\d+_\d+)=\[([^\]]*)\]", text)
    return {_java_task(m[1]): _java_partitions(m[2]) for m in entries}


@pytest.mark.parametrize("v", [v for v in VECTORS if v.kind == "SUB"], ids=_id)
def test_subscription_info_matches_kafkas_to_string(v: Vector) -> None:
    decoded = decode_subscription_info(v.data)
    printed = _SUB_TEXT.fullmatch(v.decoded)
    assert printed is not None, v.decoded
    assert isinstance(decoded, SubscriptionInfo)

    sums = {_java_task(t): int(s) for t, s in _java_map(printed["sums"]).items()}
    assert decoded.task_offset_sums == sums
    assert decoded.endpoint == (None if printed["ep"] == "null" else printed["ep"])
    assert decoded.client_tags == _java_map(printed["tags"])


@pytest.mark.parametrize("v", [v for v in VECTORS if v.kind == "ASG"], ids=_id)
def test_assignment_info_matches_kafkas_to_string(v: Vector) -> None:
    decoded = decode_assignment_info(v.data)
    printed = _ASG_TEXT.fullmatch(v.decoded)
    assert printed is not None, v.decoded
    assert isinstance(decoded, AssignmentInfo)

    assert decoded.version == int(printed["version"]) == v.version
    assert decoded.commonly_supported_version == int(printed["supported"])
    assert decoded.active_tasks == [_java_task(t) for t in printed["active"].split(", ") if t]
    assert decoded.standby_tasks == _java_standby_map(printed["standby"])
    assert decoded.partitions_by_host == _java_host_map(printed["hosts"])
    assert decoded.standby_partitions_by_host == _java_host_map(printed["standby_hosts"])


# --- the consumer-protocol pair through the whole member pipeline ------------------------------


def test_consumer_protocol_v3_pair_decodes_through_the_member_pipeline() -> None:
    member = decode_streams_member(vector("CONSUMER_SUB", 3).data, vector("CONSUMER_ASG", 3).data)

    assert member.errors == ()
    assert member.subscription == EXPECTED_SUBSCRIPTION
    assert member.assignment == EXPECTED_ASSIGNMENT
    assert member.subscription_info == expected_subscription_info(11)
    assert member.assignment_info == expected_assignment_info(11)
    # The single assigned partition t1-0 zips with the single active entry 0_0.
    assert member.active_tasks == {T0_0: [T1_0]}


def test_group_metadata_members_carry_blobs_the_member_pipeline_accepts() -> None:
    # A GroupMetadata record stores the same blobs DescribeGroups returns.
    sub, asg = vector("CONSUMER_SUB", 3).data, vector("CONSUMER_ASG", 3).data
    v3 = vector("GROUPVAL", 3).data
    # Rebuild GROUPVAL v3 with the real blobs in place of its 0102 / 03 placeholders.
    placeholder_tail = bytes.fromhex("0000000201020000000103")
    assert v3.endswith(placeholder_tail)
    record = (
        v3[: -len(placeholder_tail)]
        + len(sub).to_bytes(4, "big")
        + sub
        + len(asg).to_bytes(4, "big")
        + asg
    )

    value = decode_group_metadata_value(record)
    assert not isinstance(value, DecodeError)
    member = decode_streams_member(value.members[0].subscription, value.members[0].assignment)

    assert member.errors == ()
    assert member.active_tasks == {T0_0: [T1_0]}
