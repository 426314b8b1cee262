import pytest

from agent.aggregation.judging.facts import decode
from agent.aggregation.judging.rules import stream_threads_dead
from agent.aggregation.judging.rules.base import Evaluation
from agent.aggregation.judging.window import SeriesWindow
from agent.config.schema import DetectorsConfig
from agent.model import MemberInfo
from agent.model.findings import Finding, FindingSubject
from tests.support.snapshots import partition, snapshot, streams_member
from tests.unit.aggregation.cases import T0, Case, Closing, open_close_events, times
from tests.unit.aggregation.cases.stream_threads_dead import CASES, CLOSING
from tests.unit.aggregation.conftest import DetectorResults
from tests.unit.aggregation.detector_checks import verify


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_stream_threads_dead(case: Case, detector_results: DetectorResults) -> None:
    verify(case, detector_results)


@pytest.mark.parametrize("case", CLOSING, ids=lambda c: c.name)
def test_stream_threads_dead_closes(case: Closing) -> None:
    assert open_close_events(case) == list(case.events), case.why


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
    ev = Evaluation(
        SeriesWindow(polls), DetectorsConfig(), "alone", judging=stream_threads_dead.KIND
    )
    judgement = stream_threads_dead.judge(ev)
    return [(f.severity, f.subject.process) for f in judgement.found]


def test_a_thread_in_the_group_between_stable_polls_is_not_dead() -> None:
    # A death is a thread that does not come back: thread 2 of pA is missing at every
    # Stable poll for 200 s, but its client id names it among the members listed
    # mid-rebalance in between (without Streams data), 30 s ago at most.
    assert _judged_alone(listed_between=True) == []


def test_a_thread_never_seen_again_is_dead() -> None:
    assert _judged_alone(listed_between=False) == [("warning", "pA")]


def _judged_while_looping(pb_threads: tuple[int, ...]) -> tuple[bool, list[str | None]]:
    """pB left at 100 s and re-joined at 250 s with ``pb_threads``, while a rebalance_loop
    finding is open on the group and pB's info from before is still open: whether the
    rule judged the last poll, and which instances it saw back."""
    polls = []
    for t in times(0, 300, 10):
        s = t - T0
        members = [streams_member("pA", 1), streams_member("pA", 2)]
        if s < 100 or s >= 250:
            members += [streams_member("pB", i) for i in (pb_threads if s >= 250 else (1, 2))]
        snap = snapshot("looping", t, members=members, partitions=[partition("in", 0, 9)])
        polls.append(decode(snap.to_json())[1])

    def finding(kind: str, severity: str, process: str | None) -> Finding:
        return Finding(
            kind=kind,
            severity=severity,
            cluster="c",
            group="looping",
            subject=FindingSubject(process=process),
            since=T0 + 150,
            last_seen=T0 + 240,
            explanation="",
            evidence={"source": "broker"},
        )

    open_findings = (
        finding("rebalance_loop", "warning", None),
        finding(stream_threads_dead.KIND, "info", "pB"),
    )
    ev = Evaluation(
        SeriesWindow(polls),
        DetectorsConfig(),
        "looping",
        open_findings=open_findings,
        judging=stream_threads_dead.KIND,
    )
    judgement = stream_threads_dead.judge(ev)
    return judgement.judged, [s.process for s in judgement.cleared]


def test_an_instance_back_closes_its_finding_while_the_group_loops() -> None:
    # The restart's rebalances may open a rebalance_loop; the broker's view is not judged
    # then (a thread out between re-joins looks dead), which kept the info open for as
    # long as the loop's finding. A Stable poll listing pB with both threads is no guess.
    assert _judged_while_looping((1, 2)) == (False, ["pB"])


def test_an_instance_back_short_of_threads_is_not_back() -> None:
    assert _judged_while_looping((1,)) == (False, [])
