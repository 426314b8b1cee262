"""A classic group's configured Topology#describe() text, shipped in its snapshots as the
sub-topologies a KIP-1071 broker would hold (so the job can name them in findings)."""

import logging
from pathlib import Path

import pytest

from agent.collect.build import PollObservation, build_snapshot
from agent.collect.lag_time import OffsetHistory
from agent.collect.raw import (
    ClusterMetadataCache,
    ListedGroup,
    StreamsGroupDescription,
    Subtopology,
)
from agent.config import parse_config
from agent.config.topologies import configured_topologies
from agent.model import AgentInfo, Snapshot, SubtopologyInfo
from agent.streams.topology import TopologyDescription, parse_topology

# A groupBy-count that also reads a user topic and has an unlogged store, plus a global
# store (no tasks), printed as Kafka Streams prints it: internal topics without the
# application id.
DESCRIBED = parse_topology(
    """Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [orders])
      --> KSTREAM-KEY-SELECT-0000000001
    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])
      --> KSTREAM-SINK-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Sink: KSTREAM-SINK-0000000002 (topic: counts-repartition)
      <-- KSTREAM-KEY-SELECT-0000000001
  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000003 (topics: [counts-repartition, customers])
      --> KSTREAM-AGGREGATE-0000000004
    Processor: KSTREAM-AGGREGATE-0000000004 (stores: [counts, scratch])
      --> none
      <-- KSTREAM-SOURCE-0000000003
  Sub-topology: 2 for global store (will not generate tasks)
    Source: KSTREAM-SOURCE-0000000005 (topics: [rates])
      --> KTABLE-SOURCE-0000000006
    Processor: KTABLE-SOURCE-0000000006 (stores: [rates-store])
      --> none
      <-- KSTREAM-SOURCE-0000000005
"""
)
TOPICS = ("orders", "app-counts-repartition", "app-counts-changelog", "rates")


def snapshot_of(
    topologies: dict[str, TopologyDescription],
    *,
    streams_group: StreamsGroupDescription | None = None,
) -> Snapshot:
    observation = PollObservation(
        cluster="dev",
        agent=AgentInfo("test", "0", "central"),
        sequence=1,
        started_at=100.0,
        duration_seconds=0.1,
        groups=[ListedGroup("app", "consumer", "Stable", "classic")],
        metadata=ClusterMetadataCache(all_topics=TOPICS),
        topologies=topologies,
        streams_groups={"app": streams_group} if streams_group is not None else {},
    )
    return build_snapshot(observation, observation.groups[0], OffsetHistory(), 100.0)


def test_a_configured_topology_becomes_the_groups_subtopologies() -> None:
    assert snapshot_of({"app": DESCRIBED}).subtopologies == (
        SubtopologyInfo(
            "0",
            source_topics=("orders",),
            repartition_sink_topics=("app-counts-repartition",),
            origin="configured",
            processors=("KSTREAM-KEY-SELECT-0000000001",),
        ),
        SubtopologyInfo(
            "1",
            source_topics=("customers",),
            repartition_source_topics=("app-counts-repartition",),
            # "scratch" logs nowhere the cluster has: a store without logging.
            changelog_topics=("app-counts-changelog",),
            origin="configured",
            state_stores=("counts", "scratch"),
            processors=("KSTREAM-AGGREGATE-0000000004",),
        ),
    ), "the global store's sub-topology makes no tasks, so it is left out"


def test_only_the_configured_groups_topology_is_used() -> None:
    assert snapshot_of({"other-app": DESCRIBED}).subtopologies == ()
    assert snapshot_of({}).subtopologies == ()


def test_a_kip1071_brokers_topology_wins_over_a_configured_one() -> None:
    broker = StreamsGroupDescription(
        group_id="app",
        error_code=0,
        error_message=None,
        state="Stable",
        group_epoch=3,
        assignment_epoch=3,
        topology_epoch=0,
        subtopologies=(Subtopology("0", ("orders",), (), (), ("app-totals-changelog",)),),
        members=(),
    )
    (only,) = snapshot_of({"app": DESCRIBED}, streams_group=broker).subtopologies
    assert only == SubtopologyInfo(
        "0",
        source_topics=("orders",),
        changelog_topics=("app-totals-changelog",),
        origin="broker",
        state_stores=("totals",),
    ), "the broker's is the topology running now; its stores named from their changelogs"


CONFIG = """
clusters:
  - {{name: dev, bootstrap_servers: "k:9092"}}
  - {{name: prod, bootstrap_servers: "p:9092"}}
topologies:
  - {{group: app, file: {anywhere}}}
  - {{group: app, cluster: prod, text: "{prod_text}"}}
  - {{group: gone, file: {gone}}}
"""


def test_configured_topologies_per_cluster_and_a_file_gone_since_loading(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    anywhere = tmp_path / "app.txt"
    anywhere.write_text("Sub-topology: 0\n Source: s (topics: [dev-orders])\n --> none\n")
    gone = tmp_path / "gone.txt"
    gone.write_text("Sub-topology: 0\n Source: s (topics: [x])\n --> none\n")
    config = parse_config(
        CONFIG.format(
            anywhere=anywhere,
            gone=gone,
            prod_text="Sub-topology: 0\\n Source: s (topics: [prod-orders])\\n --> none\\n",
        ),
        "test",
        {},
    )
    gone.unlink()
    with caplog.at_level(logging.WARNING, logger="agent.config.topologies"):
        dev = configured_topologies(config, "dev")
    assert {g: t.subtopologies[0].source_topics for g, t in dev.items()} == {
        "app": ("dev-orders",)
    }, "the group's topology for every cluster; the unreadable one left out"
    assert "group gone on cluster dev" in caplog.text
    assert "gone.txt" in caplog.text
    prod = configured_topologies(config, "prod")
    assert prod["app"].subtopologies[0].source_topics == ("prod-orders",), "the cluster's own"
