"""kafka-python's own decoding of ListOffsets and OffsetFetch answers, in the shapes
``agent.collect.wire`` reads them into: what ksmon's reading is compared with."""

from typing import Any

from agent.collect.raw import CommittedOffset, GroupOffsets

# One partition's ListOffsets answer: topic, partition, error code, timestamp, offset.
ListedOffset = tuple[str, int, int, int, int]


def as_row(topic: str, partition: int, error: int, timestamp: int, offset: int) -> ListedOffset:
    """What ``wire.read_list_offsets_response`` makes of each answer, kept as is."""
    return topic, partition, error, timestamp, offset


def their_listed_offsets(response: Any) -> list[ListedOffset]:
    """A decoded ListOffsetsResponse as (topic, partition, error, timestamp, offset)."""
    return [
        (t.name, p.partition_index, p.error_code, p.timestamp, p.offset)
        for t in response.topics
        for p in t.partitions
    ]


def their_group_offsets(response: Any) -> list[GroupOffsets]:
    """A decoded OffsetFetchResponse (v8+) as each group's committed offsets."""
    return [
        GroupOffsets(
            g.group_id,
            g.error_code,
            tuple(
                CommittedOffset(
                    t.name, p.partition_index, p.committed_offset, p.metadata, p.error_code
                )
                for t in g.topics
                for p in t.partitions
            ),
        )
        for g in response.groups
    ]
