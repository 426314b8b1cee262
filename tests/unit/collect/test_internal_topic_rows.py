"""A Streams group's topics in its snapshot are named internal from what the group reads,
not only from the cluster's list of topics: that list is refreshed once a minute, and a
repartition topic an application has just created is read before it is listed."""

from agent.collect.build import PollObservation, build_snapshot
from agent.collect.lag_time import OffsetHistory
from agent.collect.raw import (
    ClusterMetadataCache,
    CommittedOffset,
    GroupOffsets,
    ListedGroup,
    TopicMetadata,
)
from agent.model import AgentInfo, TopicInfo

REPARTITION = "app-counts-repartition"


def topic_rows(*, listed: tuple[str, ...], group_type: str) -> dict[str, TopicInfo]:
    observation = PollObservation(
        cluster="c",
        agent=AgentInfo("a", "0", "central"),
        sequence=1,
        started_at=100.0,
        duration_seconds=0.1,
        groups=[ListedGroup("app", group_type, "Stable", group_type)],
        offsets={
            "app": GroupOffsets(
                "app",
                0,
                (
                    CommittedOffset("orders", 0, 5, ""),
                    CommittedOffset(REPARTITION, 0, 7, ""),
                ),
            )
        },
        topics={
            "orders": TopicMetadata("orders", 0, False, (1,)),
            REPARTITION: TopicMetadata(REPARTITION, 0, False, (1,)),
        },
        metadata=ClusterMetadataCache(all_topics=listed),
    )
    snapshot = build_snapshot(observation, observation.groups[0], OffsetHistory(), 100.0)
    return {t.name: t for t in snapshot.topics}


def test_a_repartition_topic_read_before_the_topic_list_has_it_is_internal() -> None:
    rows = topic_rows(listed=("orders",), group_type="streams")

    assert (rows[REPARTITION].internal_kind, rows[REPARTITION].consumed) == ("repartition", True)
    assert rows["orders"].internal_kind is None, "an input topic stays an input topic"


def test_once_listed_it_is_the_same_row() -> None:
    assert topic_rows(listed=("orders", REPARTITION), group_type="streams") == topic_rows(
        listed=("orders",), group_type="streams"
    )


def test_a_plain_consumer_group_has_no_internal_topics_whatever_their_names() -> None:
    rows = topic_rows(listed=("orders",), group_type="consumer")

    assert rows[REPARTITION].internal_kind is None
