"""Findings that name tasks also name their sub-topologies: what each reads, its stores.

A task id says only ``<sub-topology>_<partition>``; a person on call needs the
topics and stores behind it. Where the judged poll carries the group's
sub-topologies (a KIP-1071 broker's topology, or the application's configured
``Topology#describe()`` text), every finding that mentions a task, as its
subject or anywhere in its evidence (a quoted ``"<n>_<p>"`` value), gets them:
in the evidence as ``subtopology_names`` (id, origin, topics read, stores,
processors) and, shortly, at the end of the explanation. Findings of groups
without a known topology, or whose tasks belong to none of it, stay exactly as
they were.
"""

import json
import re
from dataclasses import replace
from typing import Any

from agent.aggregation.judging.facts import Subtopology
from agent.aggregation.judging.rules.base import Found

# A task id's sub-topology: the digits before its "_" (ASCII digits, as Java's \d).
_TASK_SUBTOPOLOGY = re.compile(r"^([0-9]+)_", re.ASCII)
# Task ids inside the evidence JSON: a quoted "<sub-topology>_<partition>" value (or key).
_TASK_IN_EVIDENCE = re.compile(r'"([0-9]+)_[0-9]+"', re.ASCII)
# Ids are read as Spark's int: a longer number is no sub-topology's.
_INT_MAX = 2**31 - 1


def with_subtopology_names(found: Found, subtopologies: tuple[Subtopology, ...]) -> Found:
    """``found`` with its tasks' sub-topologies named (itself when it names none known)."""
    by_id = {s.id: s for s in subtopologies}
    named = [by_id[i] for i in _mentioned(found) if i in by_id]
    if not named:
        return found
    return replace(
        found,
        explanation=f"{found.explanation} ({'; '.join(map(_in_words, named))})",
        evidence={**found.evidence, "subtopology_names": [_as_evidence(s) for s in named]},
    )


def _mentioned(found: Found) -> list[str]:
    """The sub-topology ids of the tasks ``found`` mentions, in numeric order ("10" after
    "2"), as numbers written back ("01_3" is sub-topology "1")."""
    ids = set(_TASK_IN_EVIDENCE.findall(_evidence_text(found.evidence)))
    task = found.subject.task
    if task is not None:
        subject = _TASK_SUBTOPOLOGY.match(task)
        if subject is not None:
            ids.add(subject.group(1))
    # Distinct as written, then read as numbers: "1" and "01" both name sub-topology 1,
    # twice, as the old rule did.
    numbers = sorted(int(i) for i in ids)
    return [str(n) for n in numbers if n <= _INT_MAX]


def _evidence_text(evidence: dict[str, Any]) -> str:
    """The evidence as the findings' JSON writes it (what task ids are looked for in)."""
    return json.dumps(evidence, separators=(",", ":"))


def _as_evidence(s: Subtopology) -> dict[str, Any]:
    return {
        "id": s.id,
        "origin": s.origin,
        "reads": list(s.reads),
        "stores": list(s.stores),
        "processors": list(s.processors),
    }


def _in_words(s: Subtopology) -> str:
    """``sub-topology 1 reads app-x-repartition, stores counts``."""
    reads = f" reads {', '.join(s.reads)}" if s.reads else ""
    stores = f", stores {', '.join(s.stores)}" if s.stores else ""
    return f"sub-topology {s.id}{reads}{stores}"
