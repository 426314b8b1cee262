"""Kafka Streams' ``Topology#describe()`` text, parsed: sub-topologies, their processors,
the topics they read and write and the stores they use.

Users log this text at start-up (the seeds show it), so it is what a person can hand
ksmon for an application whose group does not carry its topology (classic groups). The
format, as Kafka Streams 2.x to 4.x prints it::

    Topologies:
       Sub-topology: 0
        Source: KSTREAM-SOURCE-0000000000 (topics: [orders])
          --> KSTREAM-KEY-SELECT-0000000001
        Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])
          --> KSTREAM-SINK-0000000002
          <-- KSTREAM-SOURCE-0000000000
        Sink: KSTREAM-SINK-0000000002 (topic: app-by-customer-repartition)
          <-- KSTREAM-KEY-SELECT-0000000001
      Sub-topology: 1 for global store (will not generate tasks)
        ...

A source reads a topic list (``[a, b]``) or a pattern (printed bare); a sink writes a
topic or names a ``TopicNameExtractor`` (``extractor class: ...``). Internal topics are
printed without the ``<application.id>-`` prefix they carry on the broker
(``counts-repartition`` for ``orders-app-counts-repartition``):
``TopologyDescription.for_application`` puts it back. Indentation varies
(copied from logs, books, chat), so lines are recognised by their words, not their
margins; text around the description (a log prefix, the ``Topologies:`` header, a
footnote number after a line, the next log line) is tolerated. What cannot be a whole
description is an error naming the line: a node before any sub-topology, an edge
without its node, an edge to a node the sub-topology does not have (a paste cut short
or mangled), a sub-topology without nodes, an id twice.
"""

import re
from dataclasses import dataclass, field, replace

_SUBTOPOLOGY = re.compile(r"Sub-topology:\s*(\d+)(\s+for global store)?")
_NODE = re.compile(
    r"(Source|Processor|Sink):\s*(\S+)\s*\((topics|stores|topic|extractor class):\s*(.*)\)"
)
_EDGE = re.compile(r"(-->|<--)\s*(.*)$")
_NAMED_TOPOLOGY = re.compile(r"Topology:\s*(\S+):\s*$")
_INTERNAL_SUFFIXES = (
    "-repartition",
    "-subscription-registration-topic",
    "-subscription-response-topic",
)


class TopologyParseError(ValueError):
    """The text is not a ``Topology#describe()`` output; says which line and why."""

    def __init__(self, line_number: int, line: str, problem: str) -> None:
        """``line_number`` 0: about the whole text, not one line of it."""
        where = f"line {line_number}: " if line_number else ""
        super().__init__(f"{where}{problem}: {line.strip()!r}")
        self.line_number = line_number


@dataclass(frozen=True, slots=True)
class TopologyNode:
    kind: str  # source | processor | sink
    name: str
    topics: tuple[str, ...] = ()  # a source's topics, a sink's topic
    topic_pattern: str | None = None  # a source subscribed by pattern
    stores: tuple[str, ...] = ()  # a processor's state stores
    extractor: str | None = None  # a sink that picks its topic per record
    successors: tuple[str, ...] = ()
    predecessors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SubtopologyDescription:
    subtopology_id: int
    is_global: bool = False  # a global store's: it generates no tasks
    nodes: tuple[TopologyNode, ...] = ()

    @property
    def source_topics(self) -> tuple[str, ...]:
        return tuple(t for n in self.nodes if n.kind == "source" for t in n.topics)

    @property
    def sink_topics(self) -> tuple[str, ...]:
        return tuple(t for n in self.nodes if n.kind == "sink" for t in n.topics)

    @property
    def stores(self) -> tuple[str, ...]:
        return tuple(sorted({s for n in self.nodes for s in n.stores}))

    @property
    def processors(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes if n.kind == "processor")


@dataclass(frozen=True, slots=True)
class TopologyDescription:
    subtopologies: tuple[SubtopologyDescription, ...] = ()
    # A named topology's "Topology: <name>:" header (instead of "Topologies:").
    named_topology: str | None = None

    @property
    def task_subtopologies(self) -> tuple[SubtopologyDescription, ...]:
        """The sub-topologies that make tasks (global stores do not)."""
        return tuple(s for s in self.subtopologies if not s.is_global)

    def subtopology(self, subtopology_id: int) -> SubtopologyDescription | None:
        return next((s for s in self.subtopologies if s.subtopology_id == subtopology_id), None)

    def for_application(self, application_id: str) -> "TopologyDescription":
        """The same topology with its internal topics named as on the broker.

        Internal: a topic the topology both writes and reads whose name ends the way
        Kafka Streams names repartition and foreign-key join topics. A user topic
        written and read back (``to`` then ``stream``) keeps its name."""
        written = {t for s in self.subtopologies for t in s.sink_topics}
        read = {t for s in self.subtopologies for t in s.source_topics}
        internal = {t for t in written & read if t.endswith(_INTERNAL_SUFFIXES)}

        def named(topics: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(f"{application_id}-{t}" if t in internal else t for t in topics)

        return replace(
            self,
            subtopologies=tuple(
                replace(s, nodes=tuple(replace(n, topics=named(n.topics)) for n in s.nodes))
                for s in self.subtopologies
            ),
        )


@dataclass
class _Building:
    subtopology_id: int
    is_global: bool
    nodes: list[TopologyNode] = field(default_factory=list)


def parse_topology(text: str) -> TopologyDescription:
    """Parse ``Topology#describe()`` text; ``TopologyParseError`` names the line that is wrong.

    >>> t = parse_topology('''Topologies:
    ...    Sub-topology: 0
    ...     Source: KSTREAM-SOURCE-0000000000 (topics: [orders, refunds])
    ...       --> KSTREAM-AGGREGATE-0000000001
    ...     Processor: KSTREAM-AGGREGATE-0000000001 (stores: [totals])
    ...       --> none
    ...       <-- KSTREAM-SOURCE-0000000000''')
    >>> t.subtopologies[0].source_topics, t.subtopologies[0].stores
    (('orders', 'refunds'), ('totals',))
    """
    done: list[SubtopologyDescription] = []
    current: _Building | None = None
    named: str | None = None
    last: TopologyNode | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if (found := _SUBTOPOLOGY.search(line)) is not None:
            if current is not None:
                done.append(_finish(current, number))
            current, last = _Building(int(found.group(1)), bool(found.group(2))), None
            continue
        if (topology_name := _NAMED_TOPOLOGY.search(line)) is not None and current is None:
            named = topology_name.group(1)
            continue
        if (node := _NODE.search(line)) is not None:
            if current is None:
                raise TopologyParseError(number, line, "a node before any 'Sub-topology:' line")
            last = _node(node)
            current.nodes.append(last)
            continue
        if (edge := _EDGE.search(line)) is not None:
            if current is None or last is None:
                raise TopologyParseError(number, line, "an edge ('-->', '<--') without its node")
            names = _names(edge.group(2))
            last = _with_edge(last, edge.group(1), names)
            current.nodes[-1] = last
            continue
        if current is not None and current.nodes and line.strip() and not _footnote(line):
            # Something else (the next log line, prose): this description has ended.
            done.append(_finish(current, number))
            current, last = None, None
    if current is not None:
        done.append(_finish(current, len(text.splitlines())))
    if not done:
        raise TopologyParseError(0, text[:60], "no 'Sub-topology:' line: not a describe() output")
    ids = [s.subtopology_id for s in done]
    if len(ids) != len(set(ids)):
        raise TopologyParseError(0, text[:60], f"sub-topology ids repeat: {ids}")
    return TopologyDescription(tuple(sorted(done, key=lambda s: s.subtopology_id)), named)


def _node(found: re.Match[str]) -> TopologyNode:
    kind, name, label = found.group(1).lower(), found.group(2), found.group(3)
    value = found.group(4).strip()
    if label == "stores":
        return TopologyNode(kind, name, stores=_bracketed(value))
    if label == "extractor class":
        return TopologyNode(kind, name, extractor=value)
    if label == "topic":
        return TopologyNode(kind, name, topics=(value,))
    # A source: "[a, b]" is a topic list; anything else is the pattern it subscribes to.
    if value.startswith("[") and value.endswith("]"):
        return TopologyNode(kind, name, topics=_bracketed(value))
    return TopologyNode(kind, name, topic_pattern=value)


def _bracketed(value: str) -> tuple[str, ...]:
    inner = value.strip().removeprefix("[").removesuffix("]")
    return tuple(part.strip() for part in inner.split(",") if part.strip())


def _names(value: str) -> tuple[str, ...]:
    # "none" is how the text says there is no node on that side.
    names = tuple(part.strip() for part in value.split(",") if part.strip())
    return () if names == ("none",) else tuple(n.split()[0] for n in names)


def _with_edge(node: TopologyNode, arrow: str, names: tuple[str, ...]) -> TopologyNode:
    if arrow == "-->":
        return replace(node, successors=names)
    return replace(node, predecessors=names)


def _footnote(line: str) -> bool:
    """A bare number on its own line: a book's or article's footnote marker."""
    return line.strip().isdigit()


def _finish(building: _Building, line_number: int) -> SubtopologyDescription:
    header = f"Sub-topology: {building.subtopology_id}"
    if not building.nodes:
        raise TopologyParseError(line_number, header, "a sub-topology with no nodes")
    names = {n.name for n in building.nodes}
    for node in building.nodes:
        missing = [m for m in (*node.successors, *node.predecessors) if m not in names]
        if missing:
            raise TopologyParseError(
                line_number,
                header,
                f"{node.name} is linked to {', '.join(missing)}, which this sub-topology "
                "does not list (cut short?)",
            )
    return SubtopologyDescription(
        building.subtopology_id, building.is_global, tuple(building.nodes)
    )
