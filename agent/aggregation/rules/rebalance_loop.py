"""rebalance_loop (warning): the group rebalances again and again, or is mostly rebalancing.

Events: exact generation (or KIP-848 epoch) changes where the snapshots carry
them, else inferred from consecutive snapshots (the group entered a
rebalancing state, or its members or assignment changed in between).
Generations that happened before the agent first polled the group (listed by
its first snapshot, or later with a time before that poll) are not counted.
It fires on at least ``loop_events`` unexplained events within
``loop_window`` (counted when the group is Stable: mid-rebalance, a newcomer
that explains it is not visible yet), or the group in a rebalancing state
(``facts.REBALANCING_STATES``) for at least ``loop_unstable_ratio`` of the
window, unless that is legitimate churn. An Empty group is not rebalancing:
a group whose offsets are committed with no member (a batch job, a stopped
app) is Empty all along, and that is ``no_live_consumers``' business, not a
loop (the 200-group soak, bench/soak.py, found 180 such groups flagged).
But an Empty group whose exact generation rose between two polls that both
saw it Empty had members join and leave again in between, unseen: a lone
stream thread overrunning ``max.poll.interval.ms`` (seen live in
bench/detection_latency.py: out of the group within seconds of each re-join,
so no 10 s poll ever saw it Stable) or a crash loop. Such a group is judged
at its Empty polls too: the events count there when the window holds at
least one rebalance between Empty polls, and a group that stays Empty with
its generation still closes the finding once its window is quiet.
Legitimate churn:

* KIP-441 probing rebalances: the assignment before announced a next
  rebalance and the members are the same after it;
* rolling restarts and scale-out/in that settle: every member identity (a
  Streams process and thread index, else a client id) was replaced at most
  once, and no newcomer came and went again within the window (members as
  the Stable polls show them, and every poll of a KIP-848 or KIP-1071 group,
  whose broker describes its members in every state). Each member
  that joined or left explains up to ``EVENTS_PER_MEMBER_CHANGE`` events
  (the join or leave itself, the follow-up rebalance of cooperative
  assignment, and one more for the task movements that follow), but never
  one between two Empty polls (members came and went unseen there: so a
  loop brought in by a restart is not hidden behind that restart);
* a group forming as the agent first sees it (its first snapshot is not
  Stable: in a rebalance, or Empty before its first member joined): while it
  forms the rule does not hold, and the rebalances until its first Stable
  snapshot are explained, within ``loop_window``.

Root-cause hints in the evidence: the same clients re-joining under new
member ids (processing longer than ``max.poll.interval.ms``), identities that
left and came back while their old member lingered (a crash loop), and the
group's metadata against ``__consumer_offsets`` ``max.message.bytes``
(KAFKA-7149).

Judged when the group is Stable, or Empty at this poll and the one before
(no member can be hiding mid-join then), and wherever it holds; a long
rebalance neither opens nor closes a finding by itself. The rebalances in the
window and the share of it spent rebalancing go to /metrics at every poll.
"""

from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from agent.aggregation.facts import Member, Poll
from agent.aggregation.results import REBALANCES, UNSTABLE_RATIO
from agent.aggregation.rules.base import Evaluation, Found, Gauge, Judgement, rounded
from agent.model.findings import FindingSubject
from agent.model.records import JsonObject

KIND = "rebalance_loop"
EVENTS_PER_MEMBER_CHANGE = 3
_MIN_REJOINS = 3  # member ids of one identity within the window that make a loop, not a restart

_METADATA_CAUSE = "group metadata near __consumer_offsets max.message.bytes (KAFKA-7149)"
_REJOIN_CAUSE = "members re-join under new ids: processing exceeds max.poll.interval.ms"
_CRASH_CAUSE = "members leave and come back: a crash loop"
_UNSEEN_CAUSE = (
    "members join and leave again between polls: processing longer than "
    "max.poll.interval.ms, or instances crash-looping"
)


# -- per poll ----------------------------------------------------------------------------


class PollRebalances(NamedTuple):
    """One poll's rebalances since the previous poll of its series, and what explains them."""

    events: int
    exact: bool  # counted from generations (or epochs), not inferred from the polls
    unseen: int  # between two Empty polls: members that came and went unseen
    probing: int  # KIP-441 probing rebalances
    formation: int  # the group forming as the agent first saw it
    unstable_seconds: float  # time spent rebalancing since the previous poll
    formation_unstable_seconds: float


def rebalance_events(polls: Sequence[Poll], first: int, forming_until: int) -> list[PollRebalances]:
    """Per poll of ``polls[first:]``: its rebalance events since the previous poll of the
    series (which may lie before ``first``), whether they were probing rebalances
    (KIP-441) or the group forming (up to ``polls[forming_until]``, see
    ``formation_end``), and the time the group spent rebalancing.

    ``polls`` is the series' whole stored history: the first poll's time and the last
    Stable poll before ``first`` are read from all of it."""
    series_start = polls[0].t
    next_stable = _next_stable(polls, first)
    last_stable = _last_stable_before(polls, first)
    out = []
    for i in range(first, len(polls)):
        poll = polls[i]
        previous = polls[i - 1] if i > 0 else None
        exact = _exact_events(poll, previous, series_start)
        events = exact if exact is not None else _inferred_events(poll, previous)
        # Members that joined and left between two polls that saw none: only the exact
        # generations tell of them.
        unseen = (exact or 0) if _stayed_empty(poll, previous) else 0
        probing = events if events and _probing(last_stable, next_stable[i - first]) else 0
        unstable = poll.t - previous.t if previous is not None and previous.rebalancing else 0.0
        forming = i <= forming_until
        out.append(
            PollRebalances(
                events,
                exact is not None,
                unseen,
                probing,
                events if forming else 0,
                unstable,
                unstable if forming else 0.0,
            )
        )
        if poll.stable:
            last_stable = poll
    return out


def _exact_events(poll: Poll, previous: Poll | None, series_start: float) -> int | None:
    """Generation (else epoch) changes since the previous poll, else the exact rebalances
    the snapshot lists; None when neither is known."""
    if previous is None:
        # A series' first snapshot: the generations it lists happened before the agent
        # watched (the group being created, say).
        return None
    if poll.generation is not None and previous.generation is not None:
        return max(poll.generation - previous.generation, 0)
    if poll.group_epoch is not None and previous.group_epoch is not None:
        return max(poll.group_epoch - previous.group_epoch, 0)
    if poll.rebalances:
        # So did those a later snapshot lists with a time before the series' first poll:
        # the agent may learn a group's generations a poll or two after its members (seen
        # live: a group created just before, Stable with no generation for two polls,
        # then generations 0-2 at once, two of them from before the first poll).
        return sum(1 for _, at in poll.rebalances if at >= series_start)
    return None


def _inferred_events(poll: Poll, previous: Poll | None) -> int:
    """1 when the group entered a rebalancing state, or its members or assignment changed
    between two polls that saw it settled; else 0."""
    if previous is None:
        return 0
    if poll.rebalancing and not previous.rebalancing:
        return 1
    if poll.rebalancing or previous.rebalancing:
        return 0
    # Equal members mean equal member ids and assignment (polls share an unchanged
    # members tuple, so this is mostly an identity check).
    if poll.members == previous.members:
        return 0
    changed = poll.member_ids != previous.member_ids or poll.assignment != previous.assignment
    return 1 if changed else 0


def _stayed_empty(poll: Poll, previous: Poll | None) -> bool:
    return poll.state == "Empty" and previous is not None and previous.state == "Empty"


def _probing(stable_before: Poll | None, stable_after: Poll | None) -> bool:
    """KIP-441: the last Stable assignment before announced a next rebalance, and the
    first Stable poll since (this one included) has the same members."""
    return (
        stable_before is not None
        and stable_before.next_rebalance_scheduled
        and stable_after is not None
        and stable_before.member_ids == stable_after.member_ids
    )


def _next_stable(polls: Sequence[Poll], first: int) -> list[Poll | None]:
    """Per poll of ``polls[first:]``: the first Stable poll at or after it (up to now)."""
    out: list[Poll | None] = [None] * (len(polls) - first)
    following = None
    for i in range(len(polls) - 1, first - 1, -1):
        if polls[i].stable:
            following = polls[i]
        out[i - first] = following
    return out


def _last_stable_before(polls: Sequence[Poll], first: int) -> Poll | None:
    for i in range(first - 1, -1, -1):
        if polls[i].stable:
            return polls[i]
    return None


def formation_end(polls: Sequence[Poll], window: float) -> int:
    """The index of the last poll of the group forming as the agent first saw it (-1:
    none). Forming: the series began with the group not Stable, and this poll is before
    its first Stable one, or that one (the last step of forming), within ``window`` of
    the series' start (a group that takes longer to form is looping). A series that
    began Stable saw the group formed already.

    A history cut mid-rebalance looks like a series beginning: the job keeps twice the
    loop window (``DetectorsConfig.history_retention``), so a cut is always more than a
    window before any evaluation's window."""
    if not polls or polls[0].stable:
        return -1
    start = polls[0].t
    end = -1
    for i, poll in enumerate(polls):
        if poll.t - start > window:
            break
        end = i
        if poll.stable:
            break
    return end


# -- per evaluation: who came and went ---------------------------------------------------


class Rejoining(NamedTuple):
    """An identity seen under ``_MIN_REJOINS`` member ids or more within the window."""

    client_id: str
    member_ids: int
    old_member_lingered: bool


class Churn(NamedTuple):
    member_changes: int  # member ids that joined or left within the window
    rejoining: list[Rejoining]  # sorted
    came_and_went: list[str]  # identities that joined and left again, sorted


class _Presence:
    """One member id of one identity within the window."""

    __slots__ = ("client_id", "first", "last", "simultaneous")

    def __init__(self, client_id: str, first: float, last: float, simultaneous: int) -> None:
        self.client_id = client_id
        self.first = first
        self.last = last
        self.simultaneous = simultaneous  # most members of its identity in one poll


def membership_churn(polls: Sequence[Poll]) -> Churn:
    """How the group's members changed over ``polls`` (the loop window, newest last).

    Who the members are is known at Stable polls, and at every poll of a group whose
    broker assigns (KIP-848, KIP-1071): such a group is Stable again right after a
    member leaves, so its Stable polls alone can miss the change that explains the
    epochs that follow (seen in a rolling restart of a streams group)."""
    presence: dict[tuple[str, str], _Presence] = {}
    first_sample = last_sample = 0.0
    sampled = False
    for run_first, run_last, described in _described_runs(polls):
        if not described:
            continue
        if not sampled:
            first_sample, sampled = run_first, True
        last_sample = run_last
        # Members of one identity in the same poll: an old member id lingering beside
        # its replacement.
        identities = [m.identity for m in described]
        simultaneous = Counter(identities)
        for m, identity in zip(described, identities, strict=True):
            seen = presence.get((identity, m.member_id))
            if seen is None:
                presence[(identity, m.member_id)] = _Presence(
                    m.client_id, run_first, run_last, simultaneous[identity]
                )
            else:
                seen.last = run_last
                seen.simultaneous = max(seen.simultaneous, simultaneous[identity])
    if not sampled:
        return Churn(0, [], [])
    return Churn(
        _member_changes(presence, first_sample, last_sample),
        *_identity_churn(presence, first_sample, last_sample),
    )


def _described_runs(polls: Sequence[Poll]) -> list[tuple[float, float, Sequence[Member]]]:
    """The members each poll describes, as runs of consecutive polls describing the same
    ones: (first poll's time, last poll's time, members). Unchanged members are one
    shared tuple from poll to poll, so a quiet window is one run."""
    runs: list[tuple[float, float, Sequence[Member]]] = []
    members: tuple[Member, ...] | None = None
    stable = False
    for poll in polls:
        if runs and poll.members is members and poll.stable == stable:
            runs[-1] = (runs[-1][0], poll.t, runs[-1][2])
            continue
        members, stable = poll.members, poll.stable
        described = members if stable else [m for m in members if m.broker_assigned]
        runs.append((poll.t, poll.t, described))
    return runs


def _member_changes(
    presence: dict[tuple[str, str], _Presence], first_sample: float, last_sample: float
) -> int:
    """Member ids that were not there from the window's first description to its last."""
    spans: dict[str, tuple[float, float]] = {}
    for (_, member_id), p in presence.items():
        span = spans.get(member_id)
        spans[member_id] = (
            (p.first, p.last) if span is None else (min(span[0], p.first), max(span[1], p.last))
        )
    return sum(1 for f, la in spans.values() if f > first_sample or la < last_sample)


def _identity_churn(
    presence: dict[tuple[str, str], _Presence], first_sample: float, last_sample: float
) -> tuple[list[Rejoining], list[str]]:
    """Identities that re-joined under many member ids, and those that came and went."""
    by_identity: dict[str, list[tuple[str, _Presence]]] = {}
    for (identity, member_id), p in presence.items():
        by_identity.setdefault(identity, []).append((member_id, p))
    rejoining = []
    came_and_went = []
    for identity, members in by_identity.items():
        if len(members) >= _MIN_REJOINS:
            # The client id its member ids first showed (they share one in practice).
            _, earliest = min(members, key=lambda mp: (mp[1].first, mp[0]))
            lingered = max(p.simultaneous for _, p in members) > 1
            rejoining.append(Rejoining(earliest.client_id, len(members), lingered))
        first_seen = min(p.first for _, p in members)
        last_seen = max(p.last for _, p in members)
        if first_seen > first_sample and last_seen < last_sample:
            came_and_went.append(identity)
    return sorted(rejoining), sorted(came_and_went)


# -- the judgement -----------------------------------------------------------------------


def judge(ev: Evaluation) -> Judgement:
    p, w, now = ev.params, ev.window, ev.now
    polls = w.polls
    window = w.looking_back(p.loop_window)
    forming_until = formation_end(polls, p.loop_window)
    per_poll = rebalance_events(polls, len(polls) - len(window), forming_until)
    events_of, exact_of, unseen_of, probing_of, formation_of, unstable_of, formation_unstable_of = (
        zip(*per_poll, strict=True)
    )
    events = sum(events_of)
    probing = sum(probing_of)
    unseen = sum(unseen_of)
    formation = sum(formation_of)
    unstable = sum(unstable_of)
    unstable_ratio = min(unstable / p.loop_window, 1.0)
    unstable_beyond_formation = min((unstable - sum(formation_unstable_of)) / p.loop_window, 1.0)
    gauges = (Gauge(REBALANCES, float(events)), Gauge(UNSTABLE_RATIO, unstable_ratio))
    stayed_empty = _stayed_empty(now, w.previous)
    judged = now.stable or stayed_empty
    # A group the agent sees forming is not looping (yet): see ``formation_end``.
    if forming_until == len(polls) - 1 and not now.stable:
        return Judgement(KIND, judged=judged, gauges=gauges)

    # The rebalances of a group forming (as the agent saw it form) are no loop either.
    beyond_probing = events - probing - formation
    # Mid-rebalance the members that explain it are not visible yet (a newcomer comes
    # undecoded): the rebalances are counted when the group is Stable again, or while it
    # stays Empty once members were seen to come and go between its Empty polls.
    counted = now.stable or (stayed_empty and unseen > 0)
    # Membership changes only explain rebalances away: a count below the threshold before
    # them stays below after, so the window's members (most of the work) are not read.
    if not (
        (counted and beyond_probing >= p.loop_events)
        or unstable_beyond_formation >= p.loop_unstable_ratio
    ):
        return Judgement(KIND, judged=judged, gauges=gauges)

    churn = membership_churn(w.strictly_after(p.loop_window))
    legitimate = not churn.rejoining and not churn.came_and_went and churn.member_changes > 0
    # Rebalances between two Empty polls are members that joined and left again unseen:
    # no member change the Stable polls show explains them. Without this, the restart
    # that brought a looping version in (a deploy) explained the loop's first six
    # rebalances, and the loop was found only once the restart left the window (bench/
    # detection_latency.py: 611 s after the fault).
    explainable = max(beyond_probing - unseen, 0)
    churn_explained = (
        min(explainable, churn.member_changes * EVENTS_PER_MEMBER_CHANGE) if legitimate else 0
    )
    unexplained = beyond_probing - churn_explained
    too_many = counted and unexplained >= p.loop_events
    too_unstable = unstable_beyond_formation >= p.loop_unstable_ratio and not legitimate
    if not (too_many or too_unstable):
        return Judgement(KIND, judged=judged, gauges=gauges)

    metadata_bytes = _largest_metadata(window)
    max_message_bytes = max(
        (q.max_message_bytes for q in window if q.max_message_bytes is not None), default=None
    )
    metadata_ratio = metadata_bytes / max_message_bytes if max_message_bytes else None
    cause = _likely_cause(churn, unseen, metadata_ratio, p.metadata_size_ratio)
    explanation = (
        f"group {ev.group} rebalanced {events} times in {p.loop_window:.0f} s "
        f"({probing + formation + churn_explained} explained by probing, the group forming "
        f"or membership changes) and was rebalancing {unstable_ratio * 100:.0f}% of the "
        f"time; likely cause: {cause}"
    )
    evidence: JsonObject = {
        "rebalances": events,
        "probing_rebalances": probing,
        "group_forming_rebalances": formation,
        "explained_by_membership_changes": churn_explained,
        "unexplained_rebalances": unexplained,
        "rebalances_between_empty_polls": unseen,
        "member_changes": churn.member_changes,
        "unstable_ratio": rounded(unstable_ratio),
        "window_seconds": float(p.loop_window),
        "events_from": "exact" if any(exact_of) else "inferred",
        "likely_cause": cause,
        "members_rejoining": [r._asdict() for r in churn.rejoining],
        "members_came_and_went": churn.came_and_went,
        "group_metadata_bytes": metadata_bytes,
        "offsets_topic_max_message_bytes": max_message_bytes,
        "metadata_ratio": rounded(metadata_ratio),
    }
    found = Found(KIND, "warning", FindingSubject(), explanation, evidence)
    return Judgement(KIND, judged=True, found=(found,), gauges=gauges)


def _largest_metadata(polls: Sequence[Poll]) -> int:
    """The largest group metadata of the window: members come without it mid-rebalance."""
    largest = 0
    members: tuple[Member, ...] | None = None
    for poll in polls:
        if poll.members is not members:  # unchanged members are one shared tuple
            members = poll.members
            largest = max(largest, poll.metadata_bytes)
    return largest


def _likely_cause(
    churn: Churn, unseen: int, metadata_ratio: float | None, metadata_size_ratio: float
) -> str:
    if metadata_ratio is not None and metadata_ratio >= metadata_size_ratio:
        return _METADATA_CAUSE
    if any(not r.old_member_lingered for r in churn.rejoining):
        return _REJOIN_CAUSE
    if any(r.old_member_lingered for r in churn.rejoining) or churn.came_and_went:
        return _CRASH_CAUSE
    if unseen > 0:
        return _UNSEEN_CAUSE
    return "unknown"
