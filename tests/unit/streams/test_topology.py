"""``Topology#describe()`` text, parsed. Real Kafka Streams output is checked in
tests/integration/test_topology_describe.py; here, the shapes it takes once a person
has copied it somewhere (logs, books, chat), and what must be refused."""

import pytest

from agent.streams.topology import TopologyParseError, parse_topology

# As an article prints a groupBy().reduce(): a repartition between two sub-topologies,
# indented unevenly (seed 000). REPARTITION stands for the long internal topic name.
REPARTITION = "KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition"
REPARTITIONED = """
Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [sourceTopic])
      --> KSTREAM-KEY-SELECT-0000000001
    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])
      --> KSTREAM-FILTER-0000000005
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000005 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-KEY-SELECT-0000000001
    Sink: KSTREAM-SINK-0000000004 (topic: REPARTITION)
      <-- KSTREAM-FILTER-0000000005

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000006 (topics: [REPARTITION])
      --> KSTREAM-AGGREGATE-0000000003
    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])
      --> KTABLE-TOSTREAM-0000000007
      <-- KSTREAM-SOURCE-0000000006
    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])
      --> KSTREAM-SINK-0000000008
      <-- KSTREAM-AGGREGATE-0000000003
    Sink: KSTREAM-SINK-0000000008 (topic: targetTopic)
      <-- KTABLE-TOSTREAM-0000000007
""".replace("REPARTITION", REPARTITION)

# As a book prints it: a header, footnote numbers after lines and on their own, then
# prose (seed 003).
WITH_FOOTNOTES = """Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [users]) 1
      --> KSTREAM-KEY-SELECT-0000000001
    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-SOURCE-0000000000
    Sink: KSTREAM-SINK-0000000004 (topic: users-by-country-repartition) 2
      <-- KSTREAM-KEY-SELECT-0000000001

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000006 (topics: [users-by-country-repartition]) 3
      --> KSTREAM-AGGREGATE-0000000003
    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])
      --> none
      <-- KSTREAM-SOURCE-0000000006

1

The topic users is the source processor of the first sub-topology.
"""

# From a log: each line prefixed, a pattern source, a global store, a sink by extractor.
FROM_A_LOG = """2026-11-23 10:00:00 INFO  App - Topologies:
   Sub-topology: 0
    Source: orders-source (topics: orders-.*)
      --> route
    Processor: route (stores: [seen, totals])
      --> dynamic-sink
      <-- orders-source
    Sink: dynamic-sink (extractor class: com.example.ByRegion@6d06d69c)
      <-- route
  Sub-topology: 1 for global store (will not generate tasks)
    Source: KSTREAM-SOURCE-0000000001 (topics: [currencies])
      --> KTABLE-SOURCE-0000000002
    Processor: KTABLE-SOURCE-0000000002 (stores: [currency-store])
      --> none
      <-- KSTREAM-SOURCE-0000000001
2026-11-23 10:00:01 INFO  App - State transition from CREATED to REBALANCING
"""


def test_sub_topologies_read_write_and_store_what_the_text_says() -> None:
    topology = parse_topology(REPARTITIONED)
    first, second = topology.subtopologies
    repartition = REPARTITION
    assert (first.source_topics, first.sink_topics, first.stores) == (
        ("sourceTopic",),
        (repartition,),
        (),
    )
    assert (second.source_topics, second.sink_topics) == ((repartition,), ("targetTopic",))
    assert second.stores == ("KSTREAM-AGGREGATE-STATE-STORE-0000000002",)
    assert first.processors == ("KSTREAM-KEY-SELECT-0000000001", "KSTREAM-FILTER-0000000005")
    source = first.nodes[0]
    assert (source.kind, source.successors, source.predecessors) == (
        "source",
        ("KSTREAM-KEY-SELECT-0000000001",),
        (),
    ), "a source has only successors"


def test_footnotes_and_the_prose_after_a_description_are_not_part_of_it() -> None:
    topology = parse_topology(WITH_FOOTNOTES)
    assert [s.subtopology_id for s in topology.subtopologies] == [0, 1]
    assert topology.subtopologies[0].source_topics == ("users",), "not 'users]) 1'"
    assert topology.subtopologies[0].sink_topics == ("users-by-country-repartition",)
    assert topology.subtopologies[1].nodes[-1].successors == (), "'none' is no node"


def test_patterns_global_stores_and_extractor_sinks_from_a_log() -> None:
    topology = parse_topology(FROM_A_LOG)
    routed, global_store = topology.subtopologies
    source = routed.nodes[0]
    assert (source.topics, source.topic_pattern) == ((), "orders-.*")
    assert routed.stores == ("seen", "totals")
    assert routed.nodes[-1].extractor == "com.example.ByRegion@6d06d69c"
    assert routed.sink_topics == (), "an extractor's topics are decided per record"
    assert global_store.is_global
    assert [s.subtopology_id for s in topology.task_subtopologies] == [0], "globals make no tasks"


def test_a_named_topology_keeps_its_name() -> None:
    text = "Topology: orders:\n  Sub-topology: 0\n    Source: s (topics: [a])\n      --> none\n"
    assert parse_topology(text).named_topology == "orders"


@pytest.mark.parametrize(
    ("text", "line", "says", "why"),
    [
        ("just some words\n", 0, "no 'Sub-topology:' line", "not a describe() output at all"),
        (
            "    Source: s (topics: [a])\n      --> none\n",
            1,
            "a node before any 'Sub-topology:' line",
            "the header was not copied",
        ),
        (
            "Sub-topology: 0\n      --> p\n",
            2,
            "an edge ('-->', '<--') without its node",
            "an arrow must follow its node",
        ),
        (
            "Sub-topology: 0\n    Source: s (topics: [a])\n      --> p\n",
            3,
            "s is linked to p, which this sub-topology does not list",
            "a paste cut short names nodes it no longer has",
        ),
        (
            "Sub-topology: 0\nSub-topology: 1\n    Source: s (topics: [a])\n      --> none\n",
            2,
            "a sub-topology with no nodes",
            "an empty sub-topology cannot be printed by Kafka Streams",
        ),
        (
            "Sub-topology: 0\n  Source: s (topics: [a])\n    --> none\n"
            "Sub-topology: 0\n  Source: t (topics: [b])\n    --> none\n",
            0,
            "sub-topology ids repeat: [0, 0]",
            "two pastes run together",
        ),
    ],
)
def test_text_that_cannot_be_a_whole_description_is_refused_naming_the_line(
    text: str, line: int, says: str, why: str
) -> None:
    with pytest.raises(TopologyParseError) as refused:
        parse_topology(text)
    assert refused.value.line_number == line, why
    assert says in str(refused.value), why


def test_internal_topics_get_the_application_id_they_carry_on_the_broker() -> None:
    topology = parse_topology(REPARTITIONED).for_application("orders-app")
    first, second = topology.subtopologies
    assert first.sink_topics == (f"orders-app-{REPARTITION}",), "written and read: internal"
    assert second.source_topics == (f"orders-app-{REPARTITION}",)
    assert first.source_topics == ("sourceTopic",), "a user topic keeps its name"
    assert second.sink_topics == ("targetTopic",)


def test_a_user_topic_written_and_read_back_keeps_its_name() -> None:
    text = (
        "Sub-topology: 0\n  Source: a (topics: [in])\n    --> b\n"
        "  Sink: b (topic: mirror)\n    <-- a\n"
        "Sub-topology: 1\n  Source: c (topics: [mirror])\n    --> none\n"
    )
    topology = parse_topology(text).for_application("app")
    assert topology.subtopologies[1].source_topics == ("mirror",), "no internal topic suffix"
