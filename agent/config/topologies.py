"""The applications' configured ``Topology#describe()`` texts, parsed for use.

The loader checked every text once; a file can still change or vanish later, so
reading one here reports why it could not rather than raising.
"""

import logging

from agent.config.schema import Config
from agent.streams.topology import TopologyDescription, TopologyParseError, parse_topology

log = logging.getLogger(__name__)


def configured_topology(
    config: Config, cluster: str, group: str
) -> tuple[TopologyDescription | None, str | None]:
    """The group's configured describe() text, parsed; or why it could not be read now."""
    configured = config.topology(cluster, group)
    if configured is None:
        return None, None
    try:
        return parse_topology(configured.describe_text()), None
    except (OSError, UnicodeDecodeError, TopologyParseError) as e:
        return None, f"topology: the configured Topology#describe() text: {e}"


def configured_topologies(config: Config, cluster: str) -> dict[str, TopologyDescription]:
    """Every group's topology that applies on ``cluster``, by group id; one that cannot be
    read is logged and left out (the agent polls on without it)."""
    parsed = {}
    for group in sorted({t.group for t in config.topologies}):
        topology, problem = configured_topology(config, cluster, group)
        if problem is not None:
            log.warning("group %s on cluster %s: %s", group, cluster, problem)
        if topology is not None:
            parsed[group] = topology
    return parsed
