"""Open and close findings from the detectors' candidates, without flapping (no Spark).

A finding opens the first time its rule holds. It stays open while the rule
keeps holding, and closes at the first evaluation, by any agent's series of
its group that could judge its kind, that comes a full ``close_after``
(the evaluation window) after the rule last held. A rule that cannot judge
(a group mid-rebalance, say) neither holds nor fails, so it never closes a
finding by itself. A severity change while open is an ``update`` event.

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
class HysteresisState:
    open: tuple[Finding, ...] = ()
    # (cluster, group, agent, the latest event time evaluated) per series.
    evaluated_until: tuple[tuple[str, str, str, float], ...] = ()

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
    forget_after: float | None = None,
) -> tuple[HysteresisState, list[FindingEvent]]:
    """Apply one batch of evaluations; return the new state and the events, in time order.

    ``forget_after``: close findings of a group none of whose series was
    evaluated for that long (event time) while its cluster kept reporting: a
    deleted group or a retired agent must not leave findings open for ever.
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

    open_now = {f.key: f for f in state.open}
    events: list[FindingEvent] = []
    for instant in sorted(kinds_at, key=lambda i: (i.t, i.cluster, i.group, i.agent)):
        held = held_at.get(instant, {})
        for key, candidate in sorted(held.items()):
            events += _hold(open_now, key, candidate)
        judged = kinds_at[instant]
        for key, finding in sorted(open_now.items()):
            if (
                finding.cluster == instant.cluster
                and finding.group == instant.group
                and finding.kind in judged
                and key not in held
                and instant.t - finding.last_seen >= close_after
            ):
                events.append(FindingEvent.of("close", instant.t, finding))
                del open_now[key]
        series = (instant.cluster, instant.group, instant.agent)
        until[series] = max(until.get(series, instant.t), instant.t)

    if forget_after is not None:
        events += _forget_silent_groups(open_now, until, forget_after)
    new_state = HysteresisState(
        open=tuple(sorted(open_now.values(), key=lambda f: f.key)),
        evaluated_until=tuple(sorted((*series, t) for series, t in until.items())),
    )
    return new_state, events


def _merge(current: Candidate | None, new: Candidate) -> Candidate:
    """Two series holding the same finding at one instant: the more severe one speaks."""
    if current is None:
        return new
    if _RANK.get(new.severity, 99) < _RANK.get(current.severity, 99):
        return replace(new, since=min(new.since, current.since))
    return replace(current, since=min(new.since, current.since))


def _hold(open_now: dict[str, Finding], key: str, candidate: Candidate) -> list[FindingEvent]:
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
    updated = replace(
        existing,
        severity=candidate.severity,
        last_seen=candidate.t,
        explanation=candidate.explanation,
        evidence=candidate.evidence,
    )
    open_now[key] = updated
    if updated.severity != existing.severity:
        return [FindingEvent.of("update", candidate.t, updated)]
    return []


def _forget_silent_groups(
    open_now: dict[str, Finding], until: dict[tuple[str, str, str], float], forget_after: float
) -> list[FindingEvent]:
    newest_of_cluster: dict[str, float] = {}
    newest_of_group: dict[tuple[str, str], float] = {}
    for (cluster, group, _agent), t in until.items():
        newest_of_cluster[cluster] = max(newest_of_cluster.get(cluster, t), t)
        newest_of_group[(cluster, group)] = max(newest_of_group.get((cluster, group), t), t)
    events = []
    for key, finding in sorted(open_now.items()):
        cluster_now = newest_of_cluster.get(finding.cluster)
        group_seen = newest_of_group.get((finding.cluster, finding.group), finding.last_seen)
        if cluster_now is not None and cluster_now - group_seen >= forget_after:
            events.append(FindingEvent.of("close", cluster_now, finding))
            del open_now[key]
    return events


def open_findings(state: HysteresisState) -> Sequence[Finding]:
    return state.open
