"""Findings that name tasks also name their sub-topologies: not ported yet (identity)."""

from agent.aggregation.facts import Subtopology
from agent.aggregation.rules.base import Found


def with_subtopology_names(found: Found, subtopologies: tuple[Subtopology, ...]) -> Found:
    return found
