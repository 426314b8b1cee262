"""ListOffsets and OffsetFetch written and read by ksmon (``wire``): the same bytes as
kafka-python writes for every version the edge asks for, the same values as it reads,
and byte vectors written out by hand (tagged fields, nulls, errors, truncation)."""

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.consumer import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kafka.protocol.parser import KafkaProtocol

from agent.collect import protocol, wire
from agent.collect.raw import CommittedOffset, GroupOffsets
from tests.support.kafka_protocol import as_row, their_group_offsets, their_listed_offsets

LIST_OFFSETS = range(wire.LIST_OFFSETS_VERSIONS[0], wire.LIST_OFFSETS_VERSIONS[1] + 1)
OFFSET_FETCH = range(wire.OFFSET_FETCH_VERSIONS[0], wire.OFFSET_FETCH_VERSIONS[1] + 1)

ASKED = [
    ("orders", [(0, -1), (1, -1), (7, -1)]),
    ("ünïcode-topic", [(2, -2)]),
    ("payments", [(0, 1_795_000_000_000)]),
]


def theirs_list_offsets_request(topics: list[tuple[str, list[tuple[int, int]]]]) -> Any:
    topic = ListOffsetsRequest.ListOffsetsTopic
    partition = topic.ListOffsetsPartition
    return ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[
            topic(name=t, partitions=[partition(partition_index=p, timestamp=at) for p, at in ps])
            for t, ps in topics
        ],
    )


def theirs_list_offsets_response(
    throttle: int, rows: list[tuple[str, list[tuple[int, int, int, int, int]]]]
) -> Any:
    topic = ListOffsetsResponse.ListOffsetsTopicResponse
    partition = topic.ListOffsetsPartitionResponse
    return ListOffsetsResponse(
        throttle_time_ms=throttle,
        topics=[
            topic(
                name=name,
                partitions=[
                    partition(
                        partition_index=p,
                        error_code=error,
                        timestamp=at,
                        offset=offset,
                        leader_epoch=epoch,
                    )
                    for p, error, at, offset, epoch in partitions
                ],
            )
            for name, partitions in rows
        ],
    )


def theirs_offset_fetch_response(throttle: int, groups: list[GroupOffsets]) -> Any:
    group = OffsetFetchResponse.OffsetFetchResponseGroup
    topic = group.OffsetFetchResponseTopics
    partition = topic.OffsetFetchResponsePartitions
    encoded = []
    for g in groups:
        by_topic: dict[str, list[CommittedOffset]] = {}
        for c in g.offsets:
            by_topic.setdefault(c.topic, []).append(c)
        encoded.append(
            group(
                group_id=g.group_id,
                error_code=g.error_code,
                topics=[
                    topic(
                        name=name,
                        partitions=[
                            partition(
                                partition_index=c.partition,
                                committed_offset=c.offset,
                                committed_leader_epoch=5,
                                metadata=c.metadata,
                                error_code=c.error_code,
                            )
                            for c in committed
                        ],
                    )
                    for name, committed in by_topic.items()
                ],
            )
        )
    return OffsetFetchResponse(throttle_time_ms=throttle, groups=encoded)


# -- requests: the bytes kafka-python writes --------------------------------------------


@pytest.mark.parametrize("version", LIST_OFFSETS)
def test_a_list_offsets_request_is_the_bytes_kafka_python_writes(version: int) -> None:
    theirs = theirs_list_offsets_request(ASKED).encode(version=version)

    assert wire.list_offsets_request(version, ASKED) == theirs


@pytest.mark.parametrize("version", OFFSET_FETCH)
def test_an_offset_fetch_request_is_the_bytes_kafka_python_writes(version: int) -> None:
    groups = ["orders-app", "ünïcode-group", "g"]
    theirs = OffsetFetchRequest(
        groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(group_id=g, topics=None) for g in groups
        ],
        require_stable=False,
    ).encode(version=version)

    assert wire.offset_fetch_request(version, groups, require_stable=False) == theirs


@pytest.mark.parametrize("version", [1, 5, 6, 11])
def test_a_framed_request_with_its_header_is_the_bytes_kafka_python_sends(version: int) -> None:
    theirs = theirs_list_offsets_request(ASKED)
    theirs.API_VERSION = version
    ours = protocol.ListOffsetsRequest(ASKED, as_row)
    ours.API_VERSION = version

    sent = [KafkaProtocol(client_id="ksmon-test") for _ in range(2)]
    sent[0].send_request(theirs, correlation_id=41)
    sent[1].send_request(ours, correlation_id=41)

    assert sent[1].send_bytes() == sent[0].send_bytes()


def test_versions_ksmon_does_not_read_are_refused() -> None:
    with pytest.raises(ValueError, match="ListOffsets v12"):
        wire.list_offsets_request(12, ASKED)
    with pytest.raises(ValueError, match="OffsetFetch v10"):
        wire.offset_fetch_request(10, ["g"], require_stable=False)


# -- responses: the values kafka-python reads -------------------------------------------


ANSWERED = [
    ("orders", [(0, 0, -1, 1_234_567, 3), (1, 6, -1, -1, -1), (7, 0, 1_795_000_000_123, 0, 0)]),
    ("ünïcode-topic", [(2, 0, -1, 2**40, 12)]),
    ("empty", []),
]


@pytest.mark.parametrize("version", LIST_OFFSETS)
def test_a_list_offsets_response_reads_as_kafka_python_reads_it(version: int) -> None:
    body = theirs_list_offsets_response(7, ANSWERED).encode(version=version)
    theirs = ListOffsetsResponse.decode(body, version=version)

    throttle, rows = wire.read_list_offsets_response(memoryview(body), version, as_row)

    assert rows == their_listed_offsets(theirs)
    assert throttle == (7 if version >= 2 else 0)


@pytest.mark.parametrize("version", OFFSET_FETCH)
def test_an_offset_fetch_response_reads_as_kafka_python_reads_it(version: int) -> None:
    groups = [
        GroupOffsets(
            "orders-app",
            0,
            (
                CommittedOffset("orders", 0, 17, "", 0),
                CommittedOffset("orders", 1, -1, None, 0),
                CommittedOffset("ünïcode-topic", 3, 2**40, "AQAAAZ2x3/8=", 0),
                CommittedOffset("ünïcode-topic", 4, 5, "m" * 300, 0),  # a 2-byte length
            ),
        ),
        GroupOffsets("coordinator-moved", 16, ()),
        GroupOffsets("partition-error", 0, (CommittedOffset("orders", 4, -1, None, 3),)),
    ]
    body = theirs_offset_fetch_response(9, groups).encode(version=version)
    theirs = OffsetFetchResponse.decode(body, version=version)

    throttle, read = wire.read_offset_fetch_response(body, version)

    assert throttle == 9
    assert read == groups
    assert read == their_group_offsets(theirs)


names = st.text(min_size=1, max_size=20)
partition_rows = st.lists(
    st.tuples(
        st.integers(0, 2**31 - 1),
        st.integers(-(2**15), 2**15 - 1),
        st.integers(-1, 2**63 - 1),
        st.integers(-1, 2**63 - 1),
        st.integers(-1, 2**31 - 1),
    ),
    max_size=30,
)


@given(
    version=st.sampled_from(LIST_OFFSETS),
    throttle=st.integers(0, 2**31 - 1),
    rows=st.lists(st.tuples(names, partition_rows), max_size=5),
)
def test_any_list_offsets_response_reads_as_kafka_python_reads_it(
    version: int, throttle: int, rows: list[tuple[str, list[tuple[int, int, int, int, int]]]]
) -> None:
    body = theirs_list_offsets_response(throttle, rows).encode(version=version)

    _, read = wire.read_list_offsets_response(body, version, as_row)

    assert read == their_listed_offsets(ListOffsetsResponse.decode(body, version=version))


committed_offsets = st.builds(
    CommittedOffset,
    topic=names,
    partition=st.integers(0, 2**31 - 1),
    offset=st.integers(-1, 2**63 - 1),
    metadata=st.none() | st.text(max_size=300),
    error_code=st.integers(-(2**15), 2**15 - 1),
)


@given(
    version=st.sampled_from(OFFSET_FETCH),
    groups=st.lists(
        st.builds(
            GroupOffsets,
            group_id=names,
            error_code=st.integers(-(2**15), 2**15 - 1),
            offsets=st.lists(committed_offsets, max_size=20).map(tuple),
        ),
        max_size=5,
    ),
)
def test_any_offset_fetch_response_reads_as_kafka_python_reads_it(
    version: int, groups: list[GroupOffsets]
) -> None:
    body = theirs_offset_fetch_response(0, groups).encode(version=version)

    _, read = wire.read_offset_fetch_response(body, version)

    # kafka-python's response keeps a group's partitions by topic, in first-seen order.
    assert read == [
        replace(g, offsets=tuple(sorted(g.offsets, key=lambda c: first_seen(g, c.topic))))
        for g in groups
    ]


def first_seen(group: GroupOffsets, topic: str) -> int:
    return next(i for i, c in enumerate(group.offsets) if c.topic == topic)


# -- byte vectors written out by hand ----------------------------------------------------


def test_a_list_offsets_v9_answer_written_by_hand() -> None:
    body = bytes.fromhex(
        "00000000"  # throttle time
        "02"  # 1 topic
        "02 74"  # its name, "t"
        "03"  # 2 partitions: index, error, timestamp, offset, leader epoch, tags
        "00000004 0000 ffffffffffffffff 000000000000002a 00000002 00"
        "00000005 0006 ffffffffffffffff ffffffffffffffff ffffffff"
        "01 03 02 abcd"  # one tagged field (tag 3, 2 bytes), skipped
        "00"  # the topic's tags
        "00"  # the response's tags
    )

    assert wire.read_list_offsets_response(body, 9, as_row) == (
        0,
        [("t", 4, 0, -1, 42), ("t", 5, 6, -1, -1)],
    )


def test_an_offset_fetch_v8_answer_written_by_hand() -> None:
    body = bytes.fromhex(
        "00000003"  # throttle time
        "02"  # 1 group
        "02 67"  # its id, "g"
        "02"  # 1 topic
        "02 74"  # its name, "t"
        "03"  # 2 partitions: index, offset, leader epoch, metadata, error, tags
        "00000000 0000000000000011 ffffffff 03 6d64 0000 00"
        "00000001 ffffffffffffffff ffffffff 00 0000 00"  # metadata null
        "00"  # the topic's tags
        "0000"  # the group's error code
        "01 00 01 ff"  # the group's tags: one (tag 0, 1 byte), skipped
        "00"  # the response's tags
    )

    assert wire.read_offset_fetch_response(body, 8) == (
        3,
        [
            GroupOffsets(
                "g", 0, (CommittedOffset("t", 0, 17, "md", 0), CommittedOffset("t", 1, -1, None, 0))
            )
        ],
    )


@pytest.mark.parametrize("cut", [1, 5, 12, 30])
def test_a_truncated_answer_is_a_value_error(cut: int) -> None:
    body = theirs_list_offsets_response(0, ANSWERED).encode(version=9)

    with pytest.raises(ValueError, match="malformed ListOffsets"):
        wire.read_list_offsets_response(body[:cut], 9, as_row)


def test_a_string_running_past_the_end_is_a_value_error() -> None:
    # One group whose id says 8 bytes, of which 5 follow.
    body = bytes.fromhex("00000000 02 09 73686f7274")

    with pytest.raises(ValueError, match="past the end"):
        wire.read_offset_fetch_response(body, 8)


# -- kafka-python's parser reads ksmon's answers ------------------------------------------


@pytest.mark.parametrize(
    ("version", "header_tags"),
    [(9, b"\x00"), (4, b"")],
    ids=["flexible header", "header v0"],
)
def test_kafka_pythons_parser_hands_over_the_answer_read_by_ksmon(
    version: int, header_tags: bytes
) -> None:
    parser = KafkaProtocol(client_id="ksmon-test")
    request = protocol.ListOffsetsRequest(ASKED, as_row)
    request.API_VERSION = version
    correlation_id = parser.send_request(request)
    body = theirs_list_offsets_response(250, ANSWERED).encode(version=version)
    # The response header: the correlation id, then (flexible versions) an empty tag section.
    frame = correlation_id.to_bytes(4, "big") + header_tags + body

    ((answered_id, answer),) = parser.receive_bytes(len(frame).to_bytes(4, "big") + frame)

    assert answered_id == correlation_id
    assert isinstance(answer, protocol.ListOffsetsAnswer)
    assert answer.throttle_time_ms == 250  # kafka-python's connection backs off by it
    theirs = ListOffsetsResponse.decode(body, version=version)
    assert answer.partitions == their_listed_offsets(theirs)
