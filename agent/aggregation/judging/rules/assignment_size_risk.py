"""assignment_size_risk (warning): a classic group's metadata record is near the offsets
topic's ``max.message.bytes``, or grows fast enough to reach it soon.

Past that limit the coordinator cannot store the group and it rebalances for ever
(KAFKA-7149); ``rebalance_loop`` names that cause once the loop runs, this rule warns
while there is still time. Judged at Stable polls of classic groups with metadata
and a known limit.

The spec is docs/rules/assignment_size_risk.md.
"""

from collections.abc import Sequence
from typing import NamedTuple

from agent.aggregation.judging.facts import Member, Poll
from agent.aggregation.judging.rules.base import Evaluation, Found, Judgement, rounded
from agent.config.schema import DetectorsConfig
from agent.model.findings import FindingSubject
from agent.model.records import JsonObject

KIND = "assignment_size_risk"

_LARGEST_MEMBERS = 3
# Kafka Streams 2.4 (assignment version 5) names each topic once per assignment.
_TOPIC_DICTIONARY_VERSION = 5
# KIP-848, KIP-1071 (and share) groups keep no group-wide record.
_NO_GROUP_RECORD = frozenset(("consumer", "streams", "share"))
_TWO_DAYS = 2 * 86400


class _Size(NamedTuple):
    """A judged poll's metadata record against its limit."""

    t: float
    bytes: int
    limit: int

    @property
    def ratio(self) -> float:
        return self.bytes / self.limit


class _Growth(NamedTuple):
    """The least-squares line through a judged poll's growth look-back."""

    slope: float | None  # bytes per second; None: one poll, nothing to fit
    fitted_over: float  # seconds from the look-back's first judged poll to this one
    seconds_to_limit: float | None  # None: not growing, or already at the limit


def judge(ev: Evaluation) -> Judgement:
    p, now = ev.params, ev.now
    size = _size(now)
    if size is None:
        return Judgement(KIND, judged=False)
    # Most groups are far below both shares: judged from the newest poll alone.
    trend_on = p.assignment_growth_window > 0
    if size.ratio < p.assignment_size_ratio and (
        not trend_on or size.ratio < p.assignment_growth_min_ratio
    ):
        return Judgement(KIND, judged=True)
    sizes = _sizes(ev.window.polls)
    fit = _Fit(sizes, p.assignment_growth_window) if trend_on else None
    last = len(sizes) - 1
    if not _at_risk(last, sizes[last], fit, p):
        return Judgement(KIND, judged=True)
    run_since = _run_since(sizes, fit, p)
    if now.t - run_since < p.evaluation_window:
        return Judgement(KIND, judged=True)
    growth = fit.growth(len(sizes) - 1) if fit is not None else None
    found = _found(ev, size, growth, run_since)
    return Judgement(KIND, judged=True, found=(found,))


def _size(poll: Poll, record: int | None = None) -> _Size | None:
    """The poll's record and limit, when the poll can be judged: a Stable classic group
    (a type the broker did not report, ListGroups before v5, is a classic group) with
    metadata and a known limit. ``record``: its size when already known."""
    if not poll.stable or poll.group_type in _NO_GROUP_RECORD:
        return None
    limit = poll.max_message_bytes
    if limit is None or limit <= 0:
        return None
    if record is None:
        record = poll.metadata_bytes
    return _Size(poll.t, record, limit) if record > 0 else None


def _sizes(polls: Sequence[Poll]) -> list[_Size]:
    """The judged polls' sizes, oldest first. A poll shares its members with the one
    before when they are equal: their record is summed once."""
    sizes = []
    members: tuple[Member, ...] | None = None
    record = 0
    for poll in polls:
        if poll.members is not members:
            members, record = poll.members, poll.metadata_bytes
        size = _size(poll, record)
        if size is not None:
            sizes.append(size)
    return sizes


def _run_since(sizes: Sequence[_Size], fit: "_Fit | None", p: DetectorsConfig) -> float:
    """When the run of judged polls at risk that the newest one ends began (polls not
    judged neither count nor break it)."""
    since = sizes[-1].t
    for i in range(len(sizes) - 2, -1, -1):
        if not _at_risk(i, sizes[i], fit, p):
            break
        since = sizes[i].t
    return since


def _at_risk(i: int, size: _Size, fit: "_Fit | None", p: DetectorsConfig) -> bool:
    ratio = size.ratio
    if ratio >= p.assignment_size_ratio:
        return True
    if fit is None or ratio < p.assignment_growth_min_ratio:
        return False
    growth = fit.growth(i)
    return (
        growth.fitted_over >= p.assignment_growth_window / 2
        and growth.seconds_to_limit is not None
        and growth.seconds_to_limit <= p.assignment_growth_horizon
    )


class _Fit:
    """Least-squares lines through each judged poll's look-back, from prefix sums taken
    once: each line then costs a few operations, not a pass over its look-back.

    Exact: times in whole microseconds since the first poll and sizes in bytes are
    integers, so the sums are too (no cancellation between large sums, and a size
    that does not change has a slope of exactly 0)."""

    def __init__(self, sizes: Sequence[_Size], look_back: float) -> None:
        self.sizes = sizes
        self.starts = _look_back_starts([s.t for s in sizes], look_back)
        origin = sizes[0].t
        sx = sy = sxx = sxy = 0
        self.sums = [(0, 0, 0, 0)]
        for s in sizes:
            x = round((s.t - origin) * 1_000_000)
            sx, sy, sxx, sxy = sx + x, sy + s.bytes, sxx + x * x, sxy + x * s.bytes
            self.sums.append((sx, sy, sxx, sxy))

    def growth(self, i: int) -> _Growth:
        j = self.starts[i]
        n = i + 1 - j
        sx, sy, sxx, sxy = (a - b for a, b in zip(self.sums[i + 1], self.sums[j], strict=True))
        # Covariance over variance, both scaled by n squared (which cancels).
        covariance = n * sxy - sx * sy
        variance = n * sxx - sx * sx
        slope = covariance * 1_000_000 / variance if variance else None
        size = self.sizes[i]
        seconds_to_limit = None
        if slope is not None and slope > 0 and size.bytes < size.limit:
            seconds_to_limit = (size.limit - size.bytes) / slope
        return _Growth(slope, size.t - self.sizes[j].t, seconds_to_limit)


def _look_back_starts(times: Sequence[float], seconds: float) -> list[int]:
    """For each poll, the first one in its look-back (``SeriesWindow.looking_back``'s
    frame: whole milliseconds, both ends included)."""
    span = round(seconds * 1000)
    starts = []
    j = 0
    for t in times:
        while int(times[j] * 1000) < int(t * 1000) - span:
            j += 1
        starts.append(j)
    return starts


def _found(ev: Evaluation, size: _Size, growth: _Growth | None, run_since: float) -> Found:
    p, now = ev.params, ev.now
    members = now.members
    slope = growth.slope if growth is not None else None
    seconds_to_limit = growth.seconds_to_limit if growth is not None else None
    variant = "threshold" if size.ratio >= p.assignment_size_ratio else "trend"
    application_server = any(m.endpoint is not None for m in members)
    versions = [m.assignment_version for m in members if m.assignment_version is not None]
    oldest_version = min(versions, default=None)
    evidence: JsonObject = {
        "variant": variant,
        "metadata_bytes": size.bytes,
        "max_message_bytes": size.limit,
        "ratio": rounded(size.ratio),
        "warning_ratio": p.assignment_size_ratio,
        "members": len(members),
        "bytes_per_member": size.bytes // len(members),
        "largest_members": _largest(members),
        # Members without a process id (plain consumers, undecoded) count as their own.
        "instances": len({m.process if m.process is not None else m.member_id for m in members}),
        "partitions": len({tp for m in members for tp in m.assigned}),
        "growth_bytes_per_hour": rounded(slope * 3600, 1) if slope is not None else None,
        "projected_seconds_to_limit": rounded(seconds_to_limit, 0),
        "growth_fitted_over_seconds": growth.fitted_over if growth is not None else None,
        "application_server": application_server,
        "oldest_assignment_version": oldest_version,
        "is_streams": now.is_streams,
        "group_type": now.group_type,
        "at_risk_for_seconds": now.t - run_since,
    }
    explanation = (
        f"group {ev.group}'s metadata record (subscriptions and assignments of {len(members)} "
        f"members, one __consumer_offsets record) is {size.bytes} bytes, "
        f"{size.ratio * 100:.0f}% of the offsets topic's max.message.bytes {size.limit}"
        + (f" (warning at {p.assignment_size_ratio * 100:.0f}%)" if variant == "threshold" else "")
        + (
            f", growing {slope * 3600:.0f} bytes/h: at that pace it reaches the limit in "
            f"{_duration(seconds_to_limit)}"
            if slope is not None and seconds_to_limit is not None
            else ""
        )
        + "; past the limit every rebalance fails (KAFKA-7149) and the group rebalances "
        "in a loop: raise max.message.bytes on __consumer_offsets, or "
        + (
            _streams_fixes(application_server, oldest_version)
            if now.is_streams
            else "run fewer members or subscribe to fewer or shorter-named topics"
        )
    )
    return Found(KIND, "warning", FindingSubject(), explanation, evidence, since=run_since)


def _largest(members: Sequence[Member]) -> list[JsonObject]:
    """The members with the most bytes, biggest first (ties: by member id, descending)."""
    largest = sorted(
        members,
        key=lambda m: (m.subscription_bytes + m.assignment_bytes, m.member_id),
        reverse=True,
    )[:_LARGEST_MEMBERS]
    return [
        {
            "bytes": m.subscription_bytes + m.assignment_bytes,
            "member_id": m.member_id,
            "client_id": m.client_id,
            "process": m.process,
            "thread": m.thread,
            "subscription_bytes": m.subscription_bytes,
            "assignment_bytes": m.assignment_bytes,
        }
        for m in largest
    ]


def _streams_fixes(application_server: bool, oldest_version: int | None) -> str:
    fixes = (
        "run fewer instances or stream threads, read fewer or shorter-named topics "
        "and partitions, or split the application"
    )
    if application_server:
        fixes += (
            ", or leave application.server unset (it puts every instance's partitions "
            "into each assignment)"
        )
    if oldest_version is not None and oldest_version < _TOPIC_DICTIONARY_VERSION:
        fixes += ", or upgrade Kafka Streams to 2.4+ (its assignments name each topic once)"
    return fixes


def _duration(seconds: float) -> str:
    """``9.5 h`` under two days, else ``3.2 days``."""
    if seconds < _TWO_DAYS:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
