"""One micro-batch of one bucket of groups: snapshot records in; per group a report out.

Pure (no Spark): ``operator`` runs it inside the stateful operator for each
bucket key that got records, ``replay`` over recorded files. Records that
cannot be used are set aside here, before any group's state sees them: a
malformed or future-version snapshot never poisons a window.
"""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from agent.aggregation.judging.facts import (
    BadSnapshotError,
    BrokerLoad,
    ClusterTotals,
    Poll,
    decode,
)
from agent.aggregation.judging.group import GroupState, step
from agent.aggregation.judging.rules import Verdict
from agent.aggregation.judging.rules.base import Gauge
from agent.aggregation.judging.stored_bucket import GroupKey
from agent.config.schema import DetectorsConfig
from agent.model.findings import Finding, FindingEvent


class SeriesGauges(NamedTuple):
    """The gauges of one series' newest judged poll."""

    agent: str
    t: float
    gauges: tuple[Gauge, ...]


@dataclass(frozen=True, slots=True)
class ClusterPoll:
    """What every group of a cluster's poll shares (each broker's replicas), for the
    rules that judge the cluster rather than a group."""

    cluster: str
    agent: str
    t: float
    brokers: tuple[BrokerLoad, ...]
    totals: ClusterTotals | None


@dataclass(frozen=True)
class GroupReport:
    """What one group's step tells the job's sink."""

    cluster: str
    group: str
    events: tuple[FindingEvent, ...]
    open_findings: tuple[Finding, ...]
    gauges: tuple[SeriesGauges, ...]
    newest: float | None  # the group's newest poll time seen
    judged: int
    late: int
    duplicates: int
    windows_dropped: bool = False
    # The group is gone from the job: its state dropped, its findings closed.
    gone: bool = False


@dataclass(frozen=True, slots=True)
class Rejected:
    value: str
    origin: str
    reason: str  # facts.QUARANTINE_REASONS
    error: str  # what was wrong, naming the field


# The group state a coordinator reports for a group it deleted (kafka-consumer-groups
# --delete, or its offsets expired); an agent ships one last snapshot saying so.
DEAD = "Dead"
DELETED = "group deleted"
NO_LONGER_POLLED = "group no longer polled"

# Rejected records kept per bucket and batch for a person to look at (all are counted).
REJECTED_SAMPLE = 20


@dataclass
class BucketOutput:
    reports: list[GroupReport] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)  # the first REJECTED_SAMPLE
    rejected_counts: dict[str, int] = field(default_factory=dict)  # reason -> records
    cluster_polls: list[ClusterPoll] = field(default_factory=list)
    accepted: int = 0


def judge_records(
    groups: dict[GroupKey, GroupState],
    records: Iterable[tuple[str, str]],
    params: DetectorsConfig,
    *,
    windows_dropped: bool = False,
) -> BucketOutput:
    """Judge ``records`` ((JSON value, origin) pairs) against the bucket's ``groups``,
    which change in place; groups that got no record are left alone."""
    out = BucketOutput()
    polls: dict[GroupKey, list[tuple[str, Poll]]] = defaultdict(list)
    cluster_polls: dict[tuple[str, str, float], ClusterPoll] = {}
    for value, origin in records:
        try:
            key, poll = decode(value)
        except BadSnapshotError as e:
            out.rejected_counts[e.reason] = out.rejected_counts.get(e.reason, 0) + 1
            if len(out.rejected) < REJECTED_SAMPLE:
                out.rejected.append(Rejected(value, origin, e.reason, str(e)))
            continue
        out.accepted += 1
        polls[(key.cluster, key.group)].append((key.agent, poll))
        if poll.brokers:
            cluster_polls.setdefault(
                (key.cluster, key.agent, key.t),
                ClusterPoll(key.cluster, key.agent, key.t, poll.brokers, poll.cluster_totals),
            )
    out.cluster_polls = [cluster_polls[k] for k in sorted(cluster_polls)]
    for cluster, group in sorted(polls):
        for span, deleted_at in _lifetimes(polls[(cluster, group)]):
            if span:
                state = groups.setdefault((cluster, group), GroupState())
                out.reports.append(
                    judge_group(
                        state, span, params, cluster, group, windows_dropped=windows_dropped
                    )
                )
            if deleted_at is not None:
                out.reports += _forget(groups, [(cluster, group)], deleted_at, DELETED)
    return out


def _lifetimes(
    polls: list[tuple[str, Poll]],
) -> list[tuple[list[tuple[str, Poll]], float | None]]:
    """A group's polls split where an agent saw it deleted (state Dead: gone from the
    coordinator): the polls before each deletion, and its time. A group of the same name
    created again afterwards starts afresh."""
    spans: list[tuple[list[tuple[str, Poll]], float | None]] = []
    current: list[tuple[str, Poll]] = []
    for agent, poll in sorted(polls, key=lambda ap: (ap[1].t, ap[0])):
        if poll.state == DEAD:
            spans.append((current, poll.t))
            current = []
        else:
            current.append((agent, poll))
    if current or not spans:
        spans.append((current, None))
    return spans


def judge_group(
    state: GroupState,
    polls: list[tuple[str, Poll]],
    params: DetectorsConfig,
    cluster: str,
    group: str,
    *,
    windows_dropped: bool = False,
) -> GroupReport:
    outcome = step(state, polls, params, cluster=cluster, group=group)
    newest: dict[str, Verdict] = {}
    for agent, verdict in outcome.verdicts:
        newest[agent] = verdict
    return GroupReport(
        cluster=cluster,
        group=group,
        events=tuple(outcome.events),
        open_findings=outcome.open_findings,
        gauges=tuple(SeriesGauges(a, newest[a].t, newest[a].gauges) for a in sorted(newest)),
        newest=state.newest,
        judged=outcome.judged,
        late=outcome.late,
        duplicates=outcome.duplicates,
        windows_dropped=windows_dropped,
    )


def expire(groups: dict[GroupKey, GroupState], polled_before: float) -> list[GroupReport]:
    """Groups none of whose series was polled after ``polled_before`` (event time):
    their open findings close, at that time, and their state goes."""
    silent = []
    for key, state in groups.items():
        newest = state.newest
        if newest is None:
            newest = max(state.hysteresis.last_evaluated().values(), default=None)
        if newest is None or newest <= polled_before:
            silent.append(key)
    return _forget(groups, silent, polled_before, NO_LONGER_POLLED)


def _forget(
    groups: dict[GroupKey, GroupState], keys: list[GroupKey], at: float, reason: str
) -> list[GroupReport]:
    """The groups' open findings closed at ``at`` for ``reason``, their state dropped."""
    reports = []
    for key in sorted(keys):
        state = groups.pop(key, None)
        if state is None:
            continue
        reports.append(
            GroupReport(
                cluster=key[0],
                group=key[1],
                events=tuple(
                    FindingEvent.of("close", at, finding, reason)
                    for finding in state.hysteresis.open
                ),
                open_findings=(),
                gauges=(),
                newest=state.newest,
                judged=0,
                late=0,
                duplicates=0,
                gone=True,
            )
        )
    return reports
