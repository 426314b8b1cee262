"""Which groups are Kafka Streams applications, even when no member is left to say so."""

import base64
import struct

import pytest

from agent.collect.build import commits_like_streams, is_streams_group
from agent.collect.raw import CommittedOffset, DescribedGroup, GroupOffsets, ListedGroup


def stream_time(ms: int, magic: int = 1) -> str:
    """Kafka Streams' commit metadata: Base64 of a magic byte and the partition time."""
    return base64.b64encode(struct.pack(">bq", magic, ms)).decode()


def offsets(*metadata: str, offset: int = 10) -> GroupOffsets:
    return GroupOffsets(
        "app", 0, tuple(CommittedOffset("in", p, offset, m) for p, m in enumerate(metadata))
    )


def described(protocol: str, state: str = "Stable") -> DescribedGroup:
    return DescribedGroup("app", 0, None, state, "consumer", protocol, ())


CLASSIC = ListedGroup("app", "consumer", "Stable", "classic")
EMPTY = ListedGroup("app", "consumer", "Empty", "classic")


@pytest.mark.parametrize(
    ("listed", "description", "committed", "expected", "why"),
    [
        (CLASSIC, described("stream"), None, True, "members chose the Streams assignor"),
        (
            ListedGroup("app", "streams", "Stable", "streams"),
            None,
            None,
            True,
            "a KIP-1071 streams group says so itself",
        ),
        (CLASSIC, described("range"), offsets(""), False, "a plain consumer group"),
        (
            EMPTY,
            described("", state="Empty"),
            offsets(stream_time(1000), stream_time(2000, magic=2)),
            True,
            "every instance is down, but the commits carry Streams' stream time",
        ),
        (
            EMPTY,
            described("", state="Empty"),
            offsets("", ""),
            False,
            "an empty group whose commits say nothing is not assumed to be Streams",
        ),
        (
            EMPTY,
            described("", state="Empty"),
            offsets(stream_time(1000), "checkpoint-42"),
            False,
            "one commit that is not Streams' own means a plain consumer wrote it",
        ),
        (
            EMPTY,
            described("", state="Empty"),
            offsets("AQ=="),
            False,
            "Base64 that is too short for a stream time is not Streams metadata",
        ),
    ],
)
def test_is_streams_group(
    listed: ListedGroup,
    description: DescribedGroup | None,
    committed: GroupOffsets | None,
    expected: bool,
    why: str,
) -> None:
    assert is_streams_group(listed, description, committed) is expected, why


def test_offsets_without_a_committed_position_do_not_count() -> None:
    # OffsetFetch lists partitions with offset -1 (nothing committed) and no metadata.
    assert not commits_like_streams(offsets(stream_time(5), offset=-1))
