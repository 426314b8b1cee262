"""The agent's own poller pointed at a few test groups, its snapshots kept in a recording
the job's replay path reads."""

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from agent.collect.kafka_edge import KafkaEdge
from agent.collect.poller import ClusterPoller, GroupFilter
from agent.model import AgentInfo, Snapshot
from agent.streams.topology import TopologyDescription


def group_poller(
    edge: KafkaEdge,
    groups: Iterable[str],
    *,
    metadata_interval: float = 60.0,
    topologies: Mapping[str, TopologyDescription] | None = None,
) -> ClusterPoller:
    """A central agent's poller of cluster ``local`` that sees only ``groups``."""
    return ClusterPoller(
        "local",
        AgentInfo("test", "0", "central"),
        edge,
        group_filter=GroupFilter(allow=tuple(re.compile(re.escape(g)) for g in groups)),
        metadata_interval=metadata_interval,
        topologies=topologies,
    )


def poll_into(poller: ClusterPoller, recording: Path) -> list[Snapshot]:
    """One poll, which must succeed; its snapshots appended to ``recording`` (JSON lines)."""
    result = poller.poll()
    assert result.ok, result.error
    with recording.open("ab") as out:
        for snapshot in result.snapshots:
            out.write(snapshot.to_json() + b"\n")
    return list(result.snapshots)
