"""Findings naming the sub-topologies of the tasks they mention
(agent.aggregation.judging.rules.topology_names).

Cases of other detectors, re-run with the group's topology in its snapshots: the
finding must be the same one, now naming what its tasks' sub-topologies read and
store; and only those sub-topologies. Without a topology nothing changes (every
other detector case checks that by its own evidence).
"""

import dataclasses
from collections.abc import Sequence

from agent.aggregation.judging.hysteresis import Candidate
from agent.model import Snapshot, SubtopologyInfo
from tests.unit.aggregation.cases import hot_partitions as hot
from tests.unit.aggregation.cases import restore_stalled as restore


def _configured(app: str) -> tuple[SubtopologyInfo, ...]:
    """A groupBy-count app's topology (as the agent ships a configured one), plus an
    unrelated sub-topology no finding's task belongs to."""
    return (
        SubtopologyInfo(
            "0",
            source_topics=("input",),
            repartition_sink_topics=(f"{app}-counts-repartition",),
            origin="configured",
            processors=("KSTREAM-KEY-SELECT-0000000001",),
        ),
        SubtopologyInfo(
            "1",
            repartition_source_topics=(f"{app}-counts-repartition",),
            changelog_topics=(f"{app}-counts-changelog",),
            origin="configured",
            state_stores=("counts",),
            processors=("KSTREAM-AGGREGATE-0000000003",),
        ),
        SubtopologyInfo("7", source_topics=("unrelated",), origin="configured"),
    )


def _with_topology(snapshots: Sequence[Snapshot], group: str) -> list[Snapshot]:
    """``snapshots`` as group ``group``'s, each carrying its configured topology."""
    return [
        dataclasses.replace(
            s, group=dataclasses.replace(s.group, group_id=group), subtopologies=_configured(group)
        )
        for s in snapshots
    ]


def _named(candidate: Candidate) -> dict[str, dict[str, object]]:
    named = candidate.evidence["subtopology_names"]
    assert isinstance(named, list)
    return {str(s["id"]): s for s in named if isinstance(s, dict)}


def _check_restore(candidates: list[Candidate]) -> None:
    """The stalled task 1_0 is named by sub-topology 1: what it reads, its store."""
    (found,) = candidates
    assert _named(found) == {
        "1": {
            "id": "1",
            "origin": "configured",
            "reads": ["names-restore-stalled-counts-repartition"],
            "stores": ["counts"],
            "processors": ["KSTREAM-AGGREGATE-0000000003"],
        }
    }
    assert found.explanation.endswith(
        "(sub-topology 1 reads names-restore-stalled-counts-repartition, stores counts)"
    ), found.explanation
    assert "50000 changelog records behind" in found.explanation, "the detector's own words stay"
    assert found.evidence["backlog_records"] == 50_000, "the detector's own evidence stays"


def _check_hot(candidates: list[Candidate]) -> None:
    """Hot tasks 0_0 and 0_1 (in the evidence, not the subject) name sub-topology 0 only."""
    assert len(candidates) == 2, "the member and the instance finding, as without a topology"
    for found in candidates:
        assert list(_named(found)) == ["0"], found.evidence
        assert "(sub-topology 0 reads input)" in found.explanation, found.explanation
        assert [u["unit"] for u in found.evidence["hot_units"]] == ["0_0", "0_1"]


_RESTORE = next(c for c in restore.CASES if c.name == "restore-broker-stalled")
_HOT = next(c for c in hot.CASES if c.name == "hot-two-on-one-thread")

CASES = [
    dataclasses.replace(
        _RESTORE,
        name="names-restore-stalled",
        # Rebuilt for the new group: its internal topics carry the application id.
        snapshots=_with_topology(
            restore.count_app("names-restore-stalled"), "names-restore-stalled"
        ),
        why="the stalled task's sub-topology is known from the configured topology",
        check=_check_restore,
    ),
    dataclasses.replace(
        _HOT,
        name="names-hot-two-on-one-thread",
        snapshots=_with_topology(_HOT.snapshots, "names-hot-two-on-one-thread"),
        why="the hot tasks' sub-topology is known: named once, the unrelated ones not at all",
        check=_check_hot,
    ),
]
