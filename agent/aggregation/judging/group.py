"""One group's state in the job, and one step of it: new polls in; findings, events and
gauges out. Pure: the streaming job runs ``step`` inside Spark's stateful operator,
replay runs it over recorded files, tests call it directly.

A group's state is, per series (one agent's view of the group), the window of
its recent polls (``facts.Poll``), and the hysteresis of the group's open
findings. A step takes the group's new polls in event-time order; each one
joins its series' window (shared parts with the poll before it, older polls
aged, the window trimmed to ``DetectorsConfig.history_retention``) and is
judged by every rule over that window; hysteresis then turns the rules'
judgements into open, update and close events (a rule's ``cleared`` subjects
close at once). A poll of a series that was
already judged at a later time (late data, a re-delivered record) joins the
window for the look-backs but is not judged; one the window already holds is
dropped.
"""

from bisect import bisect_left, insort
from collections.abc import Iterable
from dataclasses import dataclass, field

from agent.aggregation.judging.facts import Poll
from agent.aggregation.judging.hysteresis import (
    Candidate,
    Clearance,
    Coverage,
    HysteresisState,
    advance,
)
from agent.aggregation.judging.rules import GROUP_RULES, Verdict, judge_poll
from agent.aggregation.judging.rules.base import Rule
from agent.aggregation.judging.tuples import Thawed
from agent.aggregation.judging.window import SeriesWindow
from agent.config.schema import DetectorsConfig
from agent.model.findings import Finding, FindingEvent


def partition_look_back(params: DetectorsConfig) -> float:
    """How long polls keep their partitions: rates look back over the evaluation window,
    restore_stalled's commit progress over the stall time plus one window, consumer_status
    over its window and the poll before it (one evaluation window covers a poll's gap)."""
    return max(
        params.evaluation_window,
        params.progress_stall_after + params.evaluation_window,
        params.consumer_status_window + params.evaluation_window,
    )


@dataclass
class GroupState:
    """Per series (agent id), its window of polls, oldest first; and the hysteresis."""

    series: dict[str, list[Poll]] = field(default_factory=dict)
    hysteresis: HysteresisState = field(default_factory=HysteresisState)
    # Per series, what its polls were read from the state store as (``stored_bucket``):
    # writing them back reuses it. Not part of the state's value.
    thawed: dict[str, Thawed] = field(default_factory=dict, compare=False, repr=False)

    @property
    def newest(self) -> float | None:
        """The newest poll time of any series."""
        return max((polls[-1].t for polls in self.series.values() if polls), default=None)


@dataclass(frozen=True)
class StepOutcome:
    events: list[FindingEvent]
    open_findings: tuple[Finding, ...]
    verdicts: list[tuple[str, Verdict]]  # (agent, verdict) of every judged poll, in order
    candidates: list[Candidate]
    coverage: list[Coverage]
    judged: int
    late: int  # not judged: a newer poll of its series was judged already
    duplicates: int


def step(
    state: GroupState,
    polls: Iterable[tuple[str, Poll]],
    params: DetectorsConfig,
    *,
    cluster: str,
    group: str,
    rules: tuple[Rule, ...] = GROUP_RULES,
) -> StepOutcome:
    """Judge ``polls`` ((agent, poll) pairs, any order) of one group; ``state`` changes."""
    retention = params.history_retention
    keep_partitions = partition_look_back(params)
    candidates: list[Candidate] = []
    coverage: list[Coverage] = []
    verdicts: list[tuple[str, Verdict]] = []
    events: list[FindingEvent] = []
    late = duplicates = 0
    for agent, poll in sorted(polls, key=lambda ap: (ap[1].t, ap[0])):
        window = state.series.setdefault(agent, [])
        # The window is in time order: a poll at the same time is where this one would go.
        at = bisect_left(window, poll.t, key=_time)
        if at < len(window) and window[at].t == poll.t:
            duplicates += 1
            continue
        if window and poll.t < window[-1].t:
            late += 1
            if poll.t >= window[-1].t - retention:
                insort(window, poll.aged(keep_partitions=False), key=lambda p: p.t)
            continue
        previous = window[-1] if window else None
        if previous is not None:
            window[-1] = previous.aged(keep_partitions=True)
        window.append(poll.sharing(previous))
        _trim(window, poll.t, retention, keep_partitions)
        verdict = judge_poll(SeriesWindow(window), params, group, rules, state.hysteresis.open)
        verdicts.append((agent, verdict))
        held: list[Candidate] = []
        judged: list[Coverage] = []
        cleared: list[Clearance] = []
        for judgement in verdict.judgements:
            if judgement.judged:
                judged.append(Coverage(cluster, group, agent, poll.t, judgement.kind))
            cleared += [
                Clearance(cluster, group, agent, poll.t, judgement.kind, subject)
                for subject in judgement.cleared
            ]
            for f in judgement.found:
                held.append(
                    Candidate(
                        cluster=cluster,
                        group=group,
                        agent=agent,
                        t=poll.t,
                        kind=f.kind,
                        severity=f.severity,
                        subject=f.subject,
                        since=f.since if f.since is not None else poll.t,
                        explanation=f.explanation,
                        evidence=f.evidence,
                    )
                )
        # Poll by poll, so the next poll's rules see what this one opened.
        state.hysteresis, opened = advance(
            state.hysteresis, held, judged, close_after=params.evaluation_window, cleared=cleared
        )
        events += opened
        candidates += held
        coverage += judged
    return StepOutcome(
        events=events,
        open_findings=state.hysteresis.open,
        verdicts=verdicts,
        candidates=candidates,
        coverage=coverage,
        judged=len(verdicts),
        late=late,
        duplicates=duplicates,
    )


def _time(poll: Poll) -> float:
    return poll.t


def _trim(window: list[Poll], now: float, retention: float, keep_partitions: float) -> None:
    """Drop polls older than the retention; take the partitions off those older than
    their look-back (the window is oldest first, so both stop at the first young one)."""
    cut = 0
    while cut < len(window) and window[cut].t < now - retention:
        cut += 1
    if cut:
        del window[:cut]
    for i, poll in enumerate(window):
        if poll.t >= now - keep_partitions:
            break
        if poll.partitions is not None:
            window[i] = poll.aged(keep_partitions=False)
