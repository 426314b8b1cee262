"""Table-driven detector cases: each one a group's short history and what must (not) fire.

Every case is its own consumer group (its name), so all cases of all
detectors run through the job's real evaluation path in one Spark job
(``conftest.detector_results``) and each test looks at its own group.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agent.aggregation.judging.facts import decode
from agent.aggregation.judging.group import GroupState, step
from agent.aggregation.judging.hysteresis import Candidate
from agent.config.schema import DetectorsConfig
from agent.model import Snapshot

T0 = 1_700_000_000.0


@dataclass(frozen=True)
class Expect:
    """A candidate that must be there: its severity and subject."""

    severity: str
    process: str | None = None
    thread: int | None = None
    task: str | None = None
    topic: str | None = None
    partition: int | None = None


@dataclass(frozen=True)
class Case:
    name: str  # also the consumer group's id
    why: str
    kind: str
    snapshots: Sequence[Snapshot]
    expect: Sequence[Expect] = ()  # exactly these candidates of ``kind`` at ``at``
    at: float | None = None  # default: the last snapshot's time
    check: Callable[[list[Candidate]], None] | None = field(default=None, compare=False)

    @property
    def when(self) -> float:
        return self.at if self.at is not None else max(s.poll.started_at for s in self.snapshots)


@dataclass(frozen=True)
class Closing:
    """When a finding of ``kind`` for ``process`` opens and closes: the events of
    ``snapshots`` judged through ``group.step`` (rules and hysteresis, one series each
    agent). ``events``: exactly these opens and closes, (event, seconds after T0)."""

    name: str  # also the consumer group's id
    why: str
    kind: str
    snapshots: Sequence[Snapshot]
    events: Sequence[tuple[str, float]]
    process: str | None = None


def open_close_events(case: Closing) -> list[tuple[str, float]]:
    """(event, seconds after T0) of the case's findings of its kind and subject."""
    polls = []
    for snapshot in case.snapshots:
        key, poll = decode(snapshot.to_json())
        polls.append((key.agent, poll))
    outcome = step(GroupState(), polls, DetectorsConfig(), cluster="c", group=case.name)
    return [
        (e.event, e.at - T0)
        for e in outcome.events
        if e.finding.kind == case.kind
        and e.finding.subject.process == case.process
        and e.event != "update"
    ]


def times(start: float, stop: float, step: float) -> list[float]:
    """``start``, ``start + step``, ... up to and including ``stop`` (seconds after T0)."""
    count = round((stop - start) / step)
    return [T0 + start + i * step for i in range(count + 1)]


def found(candidates: list[Candidate], case: Case) -> set[Expect]:
    return {
        Expect(
            c.severity,
            c.subject.process,
            c.subject.thread,
            c.subject.task,
            c.subject.topic,
            c.subject.partition,
        )
        for c in candidates
        if c.kind == case.kind and c.group == case.name and c.t == case.when
    }


Check = Callable[[list[Candidate]], None]


def explains(*expected: str, absent: str = "") -> Check:
    """A check: the one candidate's explanation says every ``expected`` text, not ``absent``."""

    def check(candidates: list[Candidate]) -> None:
        (found,) = candidates
        for text in expected:
            assert text in found.explanation, found.explanation
        assert not absent or absent not in found.explanation, found.explanation

    return check


def evidence(**expected: object) -> Check:
    """A check: the one candidate's evidence has each of these values."""

    def check(candidates: list[Candidate]) -> None:
        (found,) = candidates
        for key, value in expected.items():
            assert found.evidence[key] == value, (key, found.evidence)

    return check


def all_of(*checks: Check) -> Check:
    """A check made of several, all of which must pass."""

    def check(candidates: list[Candidate]) -> None:
        for one in checks:
            one(candidates)

    return check
