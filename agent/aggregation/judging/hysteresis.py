"""Open and close findings from the detectors' candidates, without flapping (no Spark).

A finding opens the first time its rule holds. It stays open while the rule
keeps holding, and closes at the first evaluation, by any agent's series of
its group that could judge its kind, that comes a full ``close_after``
(the evaluation window) after the rule last held. A rule that cannot judge
(a group mid-rebalance, say) neither holds nor fails, so it never closes a
finding by itself. A rule that sees its finding positively over (an instance
back with all its threads, a group whose members commit again) says so with a
``Clearance``: the finding closes at that evaluation, without waiting the
window, unless another series held it within the window.

While open, a finding follows the newest evaluation: its severity, text,
evidence and ``last_seen`` are the latest the rule gave, except that a
series (one agent's view) never overrides another that held it more
severely within the window (a central agent's warning does not undo a
sidecar's critical view at the next poll: the alert would flap). An ``update`` event
tells the findings topic so when the severity changed, or when the text
changed and the last event of that finding is at least ``close_after`` old
(one event a window at most: the text of a growing lag changes at every poll,
the person on call needs the newest, not every one).

Evaluations are processed in event-time order; an evaluation no later than
what a series was already evaluated at (late data, a replayed batch) is
skipped, so feeding the same batch twice changes nothing. Everything here is
pure: the job persists ``HysteresisState`` per micro-batch.
"""

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from agent.model.findings import SEVERITIES, Finding, FindingEvent, FindingSubject
from agent.model.records import JsonObject, from_plain, to_plain

_RANK = {severity: i for i, severity in enumerate(SEVERITIES)}  # critical first


@dataclass(frozen=True, slots=True)
class Candidate:
    """A detector's "the rule holds now" for one subject, at event time ``t``."""

    cluster: str
    group: str
    agent: str
    t: float
    kind: str
    severity: str
    subject: FindingSubject
    since: float
    explanation: str
    evidence: JsonObject = field(default_factory=dict)

    def key(self) -> str:
        return f"{self.cluster}/{self.group}/{self.kind}/{self.subject.key}"


@dataclass(frozen=True, slots=True)
class Coverage:
    """At ``t`` the ``kind`` rule could judge ``agent``'s view of the group."""

    cluster: str
    group: str
    agent: str
    t: float
    kind: str


@dataclass(frozen=True, slots=True)
class Clearance:
    """At ``t`` the ``kind`` rule saw, on ``agent``'s view, that its finding for ``subject``
    is over: not merely not holding (which closes only after the evaluation window), but
    positively resolved (an instance back with its threads, members committing again)."""

    cluster: str
    group: str
    agent: str
    t: float
    kind: str
    subject: FindingSubject

    def key(self) -> str:
        return f"{self.cluster}/{self.group}/{self.kind}/{self.subject.key}"


@dataclass(frozen=True, slots=True)
class HysteresisState:
    open: tuple[Finding, ...] = ()
    # (cluster, group, agent, the latest event time evaluated) per series.
    evaluated_until: tuple[tuple[str, str, str, float], ...] = ()
    # Per open finding: (key, time of its last event, the text that event carried).
    reported: tuple[tuple[str, float, str], ...] = ()
    # Per open finding and series that held it lately: (key, agent, time, severity).
    holders: tuple[tuple[str, str, float, str], ...] = ()

    def to_json(self) -> str:
        return json.dumps(to_plain(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "HysteresisState":
        plain = json.loads(text)
        return cls(
            open=tuple(from_plain(Finding, f) for f in plain.get("open", [])),
            evaluated_until=tuple(
                (str(c), str(g), str(a), float(t))
                for c, g, a, t in plain.get("evaluated_until", [])
            ),
            reported=tuple(
                (str(k), float(t), str(text)) for k, t, text in plain.get("reported", [])
            ),
            holders=tuple(
                (str(k), str(a), float(t), str(sev)) for k, a, t, sev in plain.get("holders", [])
            ),
        )

    def last_evaluated(self) -> dict[tuple[str, str, str], float]:
        return {(c, g, a): t for c, g, a, t in self.evaluated_until}


@dataclass(frozen=True, slots=True)
class _Instant:
    t: float
    cluster: str
    group: str
    agent: str


def advance(
    state: HysteresisState,
    candidates: Iterable[Candidate],
    coverage: Iterable[Coverage],
    *,
    close_after: float,
    cleared: Iterable[Clearance] = (),
) -> tuple[HysteresisState, list[FindingEvent]]:
    """Apply one batch of evaluations; return the new state and the events, in time order.

    A finding closes at the first judged instant a full ``close_after`` after it last
    held; or at once at a ``cleared`` instant that does not hold it, unless another series
    held it within ``close_after`` (its view has not said it is over).

    (A group no longer polled at all is forgotten by the job, ``bucket.expire``.)
    """
    until = state.last_evaluated()
    kinds_at: dict[_Instant, set[str]] = defaultdict(set)
    for c in coverage:
        if c.t > until.get((c.cluster, c.group, c.agent), float("-inf")):
            kinds_at[_Instant(c.t, c.cluster, c.group, c.agent)].add(c.kind)
    held_at: dict[_Instant, dict[str, Candidate]] = defaultdict(dict)
    for candidate in candidates:
        if candidate.t <= until.get((candidate.cluster, candidate.group, candidate.agent), -1e300):
            continue  # that series was already evaluated at or after this time
        instant = _Instant(candidate.t, candidate.cluster, candidate.group, candidate.agent)
        kinds_at[instant].add(candidate.kind)
        merged = held_at[instant]
        merged[candidate.key()] = _merge(merged.get(candidate.key()), candidate)
    cleared_at: dict[_Instant, set[str]] = defaultdict(set)
    for clearance in cleared:
        if clearance.t > until.get((clearance.cluster, clearance.group, clearance.agent), -1e300):
            instant = _Instant(clearance.t, clearance.cluster, clearance.group, clearance.agent)
            kinds_at.setdefault(instant, set())
            cleared_at[instant].add(clearance.key())

    open_now = {f.key: f for f in state.open}
    # A finding opened before ``reported`` was kept: its opening is its last event.
    reported = {f.key: (f.since, f.explanation) for f in state.open}
    reported.update({key: (t, text) for key, t, text in state.reported})
    holders: dict[str, dict[str, tuple[float, str]]] = defaultdict(dict)
    for key, agent, t, severity in state.holders:
        holders[key][agent] = (t, severity)
    events: list[FindingEvent] = []
    for instant in sorted(kinds_at, key=lambda i: (i.t, i.cluster, i.group, i.agent)):
        held = held_at.get(instant, {})
        for key, candidate in sorted(held.items()):
            holders[key][candidate.agent] = (candidate.t, candidate.severity)
            outranked = _outranked(holders[key], candidate, close_after)
            for event in _hold(
                open_now, key, candidate, reported.get(key), close_after, outranked=outranked
            ):
                reported[key] = (event.at, event.finding.explanation)
                events.append(event)
        judged = kinds_at[instant]
        over = cleared_at.get(instant, set())
        for key, finding in sorted(open_now.items()):
            if (
                finding.cluster == instant.cluster
                and finding.group == instant.group
                and key not in held
                and (
                    (finding.kind in judged and instant.t - finding.last_seen >= close_after)
                    or (key in over and not _held_elsewhere(holders[key], instant, close_after))
                )
            ):
                events.append(FindingEvent.of("close", instant.t, finding))
                del open_now[key]
                reported.pop(key, None)
                holders.pop(key, None)
        series = (instant.cluster, instant.group, instant.agent)
        until[series] = max(until.get(series, instant.t), instant.t)

    new_state = HysteresisState(
        open=tuple(sorted(open_now.values(), key=lambda f: f.key)),
        evaluated_until=tuple(sorted((*series, t) for series, t in until.items())),
        reported=tuple(sorted((k, *reported[k]) for k in open_now if k in reported)),
        holders=tuple(
            sorted(
                (k, agent, t, severity)
                for k in open_now
                for agent, (t, severity) in holders.get(k, {}).items()
                if t >= open_now[k].last_seen - close_after
            )
        ),
    )
    return new_state, events


def _merge(current: Candidate | None, new: Candidate) -> Candidate:
    """Two series holding the same finding at one instant: the more severe one speaks."""
    if current is None:
        return new
    if _RANK.get(new.severity, 99) < _RANK.get(current.severity, 99):
        return replace(new, since=min(new.since, current.since))
    return replace(current, since=min(new.since, current.since))


def _held_elsewhere(
    holders: dict[str, tuple[float, str]], instant: _Instant, window: float
) -> bool:
    """Whether a series other than the one that cleared the finding held it lately."""
    return any(
        agent != instant.agent and instant.t - t < window for agent, (t, _) in holders.items()
    )


def _outranked(holders: dict[str, tuple[float, str]], candidate: Candidate, window: float) -> bool:
    """Whether another series held the finding, more severely, within the window: a
    sidecar's critical view is not undone by a central agent's warning at the next poll."""
    rank = _RANK.get(candidate.severity, 99)
    return any(
        agent != candidate.agent and candidate.t - t < window and _RANK.get(severity, 99) < rank
        for agent, (t, severity) in holders.items()
    )


def _hold(
    open_now: dict[str, Finding],
    key: str,
    candidate: Candidate,
    reported: tuple[float, str] | None,
    every: float,
    *,
    outranked: bool = False,
) -> list[FindingEvent]:
    existing = open_now.get(key)
    if existing is None:
        finding = Finding(
            kind=candidate.kind,
            severity=candidate.severity,
            cluster=candidate.cluster,
            group=candidate.group,
            subject=candidate.subject,
            since=min(candidate.since, candidate.t),
            last_seen=candidate.t,
            explanation=candidate.explanation,
            evidence=candidate.evidence,
        )
        open_now[key] = finding
        return [FindingEvent.of("open", candidate.t, finding)]
    if candidate.t < existing.last_seen:
        return []
    if outranked:
        # The more severe series speaks while it holds: only the finding's time moves on.
        open_now[key] = replace(existing, last_seen=candidate.t)
        return []
    updated = replace(
        existing,
        severity=candidate.severity,
        last_seen=candidate.t,
        explanation=candidate.explanation,
        evidence=candidate.evidence,
    )
    open_now[key] = updated
    last_at, last_text = reported if reported is not None else (existing.since, "")
    if updated.severity != existing.severity or (
        updated.explanation != last_text and candidate.t - last_at >= every
    ):
        return [FindingEvent.of("update", candidate.t, updated)]
    return []


def open_findings(state: HysteresisState) -> Sequence[Finding]:
    return state.open
