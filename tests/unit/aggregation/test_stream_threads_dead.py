import pytest

from agent.aggregation.facts import decode
from agent.aggregation.rules import stream_threads_dead
from agent.aggregation.rules.base import Evaluation
from agent.aggregation.window import SeriesWindow
from agent.config.schema import DetectorsConfig
from agent.model import MemberInfo
from tests.support.snapshots import partition, snapshot, streams_member
from tests.unit.aggregation.cases import T0, Case, times
from tests.unit.aggregation.cases.stream_threads_dead import CASES
from tests.unit.aggregation.conftest import DetectorResults
from tests.unit.aggregation.detector_checks import verify


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_stream_threads_dead(case: Case, detector_results: DetectorResults) -> None:
    verify(case, detector_results)


@pytest.mark.parametrize("group", ["threads-poll-timeout-loop", "threads-out-for-long-in-a-loop"])
def test_the_loop_that_keeps_threads_out_is_the_finding(
    detector_results: DetectorResults, group: str
) -> None:
    # Issue 27 #2: what the person on call is sent to instead of a thread death.
    at = T0 + 300
    loops = [
        c for c in detector_results.by_group[group] if c.kind == "rebalance_loop" and c.t == at
    ]
    assert [c.severity for c in loops] == ["warning"]
    assert "max.poll.interval.ms" in loops[0].evidence["likely_cause"], loops[0].evidence


def _judged_alone(listed_between: bool) -> list[tuple[str, str | None]]:
    """stream_threads_dead alone (no rebalance_loop beside it) on pA, whose thread 2 is
    absent from every Stable poll from 100 s; with ``listed_between`` it is in the group
    at a rebalancing poll every 30 s in between, under its own member id."""
    polls = []
    for t in times(0, 300, 10):
        s = t - T0
        members: list[MemberInfo] = [streams_member("pA", 1), streams_member("pB", 1)]
        state = "Stable"
        if s < 100:
            members.append(streams_member("pA", 2))
        elif s % 30 == 20 and listed_between:
            state = "PreparingRebalance"
            members = [
                MemberInfo(m.member_id, m.client_id, "h")
                for m in [*members, streams_member("pA", 2)]
            ]
        snap = snapshot(
            "alone", t, members=members, partitions=[partition("in", 0, 9)], state=state
        )
        polls.append(decode(snap.to_json())[1])
    ev = Evaluation(SeriesWindow(polls), DetectorsConfig(), "alone")
    judgement = stream_threads_dead.judge(ev)
    return [(f.severity, f.subject.process) for f in judgement.found]


def test_a_thread_in_the_group_between_stable_polls_is_not_dead() -> None:
    # A death is a thread that does not come back: thread 2 of pA is missing at every
    # Stable poll for 200 s, but its client id names it among the members listed
    # mid-rebalance in between (without Streams data), 30 s ago at most.
    assert _judged_alone(listed_between=True) == []


def test_a_thread_never_seen_again_is_dead() -> None:
    assert _judged_alone(listed_between=False) == [("warning", "pA")]
