"""Partition replicas per broker from the all-topics Metadata, and what a snapshot carries
of them and of each topic's replication factor. The real broker's answer is checked in
tests/integration/test_internal_topic_budget.py."""

from agent.collect.build import PollObservation, build_snapshot
from agent.collect.lag_time import OffsetHistory
from agent.collect.raw import (
    BrokerReplicas,
    ClusterMetadataCache,
    ListedGroup,
    TopicMetadata,
    cluster_load,
)
from agent.model import AgentInfo, BrokerLoad

TOPICS = [
    # 2 partitions, RF 3 on brokers 1-3
    TopicMetadata("orders", 0, False, (1, 2), ((1, 2, 3), (2, 3, 1))),
    # a Streams changelog nobody reads: RF 2
    TopicMetadata("app-counts-changelog", 0, False, (3, -1), ((3, 1), (1, 2))),
    # an error answer counts nothing
    TopicMetadata("gone", 3, False, (), ()),
]


def test_every_replica_counts_on_its_broker_and_leaders_apart() -> None:
    load = cluster_load(TOPICS, [1, 2, 3, 4], {"app-counts-changelog"})
    assert (load.topics, load.partitions, load.replicas) == (2, 4, 10)
    assert load.brokers == (
        BrokerReplicas(1, replicas=4, leaders=1, streams_internal_replicas=2),
        BrokerReplicas(2, replicas=3, leaders=1, streams_internal_replicas=1),
        BrokerReplicas(3, replicas=3, leaders=1, streams_internal_replicas=1),
        # a broker hosting nothing is there, with 0 (the leaderless partition counts for none)
        BrokerReplicas(4),
    )


def test_a_replica_on_a_broker_metadata_does_not_list_still_counts() -> None:
    load = cluster_load(TOPICS[:1], [1, 2], set())
    assert [b.broker_id for b in load.brokers] == [1, 2, 3]


def test_replication_factor_is_the_most_replicas_of_any_partition() -> None:
    assert TOPICS[0].replication_factor == 3
    assert TopicMetadata("t", 0, False, (1, 1), ((1,), (1, 2))).replication_factor == 2
    assert TopicMetadata("t", 0, False, (1,)).replication_factor is None  # not known


def test_a_snapshot_carries_the_cluster_load_and_each_topics_replication_factor() -> None:
    cache = ClusterMetadataCache(
        all_topics=("app-counts-changelog", "orders"),
        load=cluster_load(TOPICS, [1, 2, 3], {"app-counts-changelog"}),
    )
    observation = PollObservation(
        cluster="c",
        agent=AgentInfo("a", "0", "central"),
        sequence=1,
        started_at=100.0,
        duration_seconds=0.1,
        groups=[ListedGroup("app", "streams", "Stable", "streams")],
        topics={t.name: t for t in TOPICS[:2]},
        metadata=cache,
    )
    snapshot = build_snapshot(observation, observation.groups[0], OffsetHistory(), 100.0)
    changelog = next(t for t in snapshot.topics if t.name == "app-counts-changelog")
    assert (changelog.internal_kind, changelog.consumed) == ("changelog", False)
    assert (changelog.partitions, changelog.replication_factor) == (2, 2)
    facts = snapshot.cluster_facts
    assert (facts.total_topics, facts.total_partitions, facts.total_replicas) == (2, 4, 10)
    assert facts.brokers[0] == BrokerLoad(1, 4, 1, 2)


def test_without_the_all_topics_view_the_cluster_load_is_unknown() -> None:
    observation = PollObservation(
        cluster="c",
        agent=AgentInfo("a", "0", "sidecar"),
        sequence=1,
        started_at=100.0,
        duration_seconds=0.1,
        groups=[ListedGroup("app", "consumer", "", "")],
    )
    facts = build_snapshot(observation, observation.groups[0], OffsetHistory(), 100.0).cluster_facts
    assert (facts.total_topics, facts.total_replicas, facts.brokers) == (None, None, ())
