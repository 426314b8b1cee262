"""rebalance_loop (warning): the group rebalances again and again, or is mostly rebalancing.

Events: the rounds the polls show (the group entered a rebalancing state, or
began another round within one: back from CompletingRebalance to
PreparingRebalance, or new member ids joined; or its members or assignment
changed between two settled polls), and exact generation (or KIP-848 epoch)
changes where the snapshots carry them: between two stored generations, the
more of the two counts. A stored generation completes the rounds before it;
rounds with none stored are rebalances that never completed (a SyncGroup the
coordinator could not store leaves no generation behind: seen live, a loop
whose generation stayed at 2 for minutes was counted as "0 rebalances").
Generations that happened before the agent first polled the group (listed by
its first snapshot, or later with a time before that poll) are not counted.
It fires on at least ``loop_events`` unexplained events within
``loop_window`` (counted when the group is Stable: mid-rebalance, a newcomer
that explains it is not visible yet), or the group in a rebalancing state
(``facts.REBALANCING_STATES``) for at least ``loop_unstable_ratio`` of the
window, unless that is legitimate churn. An Empty group is not rebalancing:
a group whose offsets are committed with no member (a batch job, a stopped
app) is Empty all along, and that is ``no_live_consumers``' business, not a
loop (a soak of many such groups flagged most of them before this rule).
But an Empty group whose exact generation rose between two polls that both
saw it Empty had members join and leave again in between, unseen: a lone
stream thread overrunning ``max.poll.interval.ms`` (seen live: out of the
group within seconds of each re-join, so no 10 s poll ever saw it Stable) or a
crash loop. Such a group is judged at its Empty polls too: the events count there
when the window holds at least one rebalance between Empty polls, and a group that
stays Empty with its generation still closes the finding once its window is quiet.
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
* a group re-forming after an outage longer than the window: the window begins
  with the group out of members, quietly, until members join again
  (``reformed_after_empty``); those polls count as the group's members then
  (none), so each member of the re-formed group is a member change, as in a
  scale-out;
* a group forming as the agent first sees it (its first snapshot is not
  Stable: in a rebalance, or Empty before its first member joined): while it
  forms the rule does not hold, and the rebalances until its first Stable
  snapshot are explained, within ``loop_window`` (so are those a later snapshot
  lists with a time within the forming).

A rebalance that never completes is a loop whatever the counts say: while the
group is rebalancing, an instance whose members were replaced twice over since
the rebalance began (member ids that joined beyond those it had then; a
restart or a scale-out replaces or adds each member once), with at least
``loop_events`` member ids joined in all. Mid-rebalance the broker lists
members without their Streams data; their client ids name the instance
(``instances.InstanceNames``), so a stream thread replaced under a new index
still counts for its instance. Seen live: the group's record over
the offsets topic's limit, every SyncGroup failed, REPLACE_THREAD replaced the
threads again and again, the group never Stable; found within two turns of
the loop (a turn lasts a session timeout: the dead threads' members linger).

Root-cause hints in the evidence: the group's metadata record against
``__consumer_offsets``' ``max.message.bytes`` (KAFKA-7149), its size as the
newest Stable poll of the series measured it (mid-rebalance members come
without metadata), against the limit the agent reports now (not the largest
in the window: a stale broker default outlived the topic's own limit once);
rounds with the exact generation known and none stored (the coordinator
cannot write the group's record); the same clients re-joining under new
member ids (processing longer than ``max.poll.interval.ms``); identities that
left and came back while their old member lingered (a crash loop); members
replaced before any rebalance completes. The explanation says how the window
went: rebalancing, and Empty between re-joins where the members were out of
the group between polls (never "rebalancing 0% of the time" for a group out
between re-joins nearly all the time).

Judged when the group is Stable, or Empty at this poll and the one before
(no member can be hiding mid-join then), and wherever it holds; a long
rebalance neither opens nor closes a finding by itself, unless its members are
replaced twice over. The rebalances in the window and the share of it spent
rebalancing go to /metrics at every poll.
"""

from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from agent.aggregation.judging.facts import Member, Poll
from agent.aggregation.judging.results import REBALANCES, UNSTABLE_RATIO
from agent.aggregation.judging.rules.base import Evaluation, Found, Gauge, Judgement, rounded
from agent.aggregation.judging.rules.instances import InstanceNames
from agent.model.findings import FindingSubject
from agent.model.records import JsonObject

KIND = "rebalance_loop"
EVENTS_PER_MEMBER_CHANGE = 3
_MIN_REJOINS = 3  # member ids of one identity within the window that make a loop, not a restart

_REJOIN_CAUSE = "members re-join under new ids: processing exceeds max.poll.interval.ms"
_CRASH_CAUSE = "members leave and come back: a crash loop"
_REPLACED_CAUSE = (
    "members are replaced again and again before a rebalance completes: instances "
    "crash-looping, or stream threads dying and replaced (REPLACE_THREAD)"
)
_UNSEEN_CAUSE = (
    "members join and leave again between polls: processing longer than "
    "max.poll.interval.ms, or instances crash-looping"
)


# -- per poll ----------------------------------------------------------------------------


class PollRebalances(NamedTuple):
    """One poll's rebalances since the previous poll of its series, and what explains them."""

    events: int
    exact: bool  # counted from generations (or epochs), not inferred from the polls
    stored: int  # generations (or epochs) stored since the previous poll, as far as known
    unseen: int  # between two Empty polls: members that came and went unseen
    probing: int  # KIP-441 probing rebalances
    formation: int  # the group forming as the agent first saw it
    unstable_seconds: float  # time spent rebalancing since the previous poll
    formation_unstable_seconds: float
    empty_seconds: float  # time spent Empty since the previous poll


def rebalance_events(polls: Sequence[Poll], first: int, forming_until: int) -> list[PollRebalances]:
    """Per poll of ``polls[first:]``: its rebalance events since the previous poll of the
    series (which may lie before ``first``), whether they were probing rebalances
    (KIP-441) or the group forming (up to ``polls[forming_until]``, see
    ``formation_end``), and the time the group spent rebalancing.

    ``polls`` is the series' whole stored history: the first poll's time and the last
    Stable poll before ``first`` are read from all of it."""
    steady = _steady(polls, first)
    if steady is not None:
        return steady
    series_start = polls[0].t
    formed_at = polls[forming_until].t if forming_until >= 0 else None
    next_stable = _next_stable(polls, first)
    last_stable = _last_stable_before(polls, first)
    out = []
    # Rounds seen since the last stored generation: the next one accounts for them.
    pending = 0
    for i in range(first, len(polls)):
        poll = polls[i]
        previous = polls[i - 1] if i > 0 else None
        exact = _exact_events(poll, previous, series_start)
        rounds = _rounds(poll, previous)
        if exact is None:
            events = rounds
        elif exact > 0:
            # A stored generation completes the rounds seen before it: a stretch between
            # two stored generations counts as the more of the two.
            events = rounds + max(exact - pending - rounds, 0)
            pending = 0
        else:
            # No generation stored, yet the group went round: a SyncGroup that failed
            # leaves no generation behind (KAFKA-7149), only the rounds tell.
            events = rounds
            pending += rounds
        # Members that joined and left between two polls that saw none: only the exact
        # generations tell of them.
        unseen = (exact or 0) if _stayed_empty(poll, previous) else 0
        probing = events if events and _probing(last_stable, next_stable[i - first]) else 0
        unstable = poll.t - previous.t if previous is not None and previous.rebalancing else 0.0
        empty = poll.t - previous.t if previous is not None and previous.state == "Empty" else 0.0
        if i <= forming_until:
            formation = events
        else:
            dated = _listed_while_forming(poll, previous, series_start, formed_at)
            formation = min(dated, events - probing)
        out.append(
            PollRebalances(
                events,
                exact is not None,
                exact or 0,
                unseen,
                probing,
                formation,
                unstable,
                unstable if i <= forming_until else 0.0,
                empty,
            )
        )
        if poll.stable:
            last_stable = poll
    return out


class _Columns(NamedTuple):
    """``PollRebalances`` of a window, field by field (one tuple per field)."""

    events: tuple[int, ...]
    exact: tuple[bool, ...]
    stored: tuple[int, ...]
    unseen: tuple[int, ...]
    probing: tuple[int, ...]
    formation: tuple[int, ...]
    unstable_seconds: tuple[float, ...]
    formation_unstable_seconds: tuple[float, ...]
    empty_seconds: tuple[float, ...]


_NO_POLL = _Columns((), (), (), (), (), (), (), (), ())


# A poll of a steady group: nothing happened since the previous poll, counted from the
# generations (or epochs, or the rebalances listed), or not countable (the series' first
# poll, nothing known).
_STILL = PollRebalances(0, True, 0, 0, 0, 0, 0.0, 0.0, 0.0)
_UNCOUNTED = PollRebalances(0, False, 0, 0, 0, 0, 0.0, 0.0, 0.0)


def _steady(polls: Sequence[Poll], first: int) -> list[PollRebalances] | None:
    """``rebalance_events`` of a window (and the poll before it) where the group stayed
    Stable with the same members (one shared tuple) and no generation went by, as most
    windows are: no event at any poll. None: not such a window."""
    start = max(first - 1, 0)
    members = polls[start].members
    for i in range(start, len(polls)):
        poll = polls[i]
        if poll.state != "Stable" or poll.members is not members:
            return None
    series_start = polls[0].t
    out = []
    for i in range(first, len(polls)):
        exact = _exact_events(polls[i], polls[i - 1], series_start) if i > 0 else None
        if exact:
            return None
        out.append(_UNCOUNTED if exact is None else _STILL)
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


def _listed_while_forming(
    poll: Poll, previous: Poll | None, series_start: float, formed_at: float | None
) -> int:
    """The rebalances a snapshot after the group formed lists with a time within its
    forming, when that list is what counts them (no generation or epoch to compare):
    the agent learns a new group's generations a poll or two late (seen live: two
    instances started together, the generations of their forming listed two polls after
    the group's first Stable one)."""
    if formed_at is None or previous is None or _counters_known(poll, previous):
        return 0
    return sum(1 for _, at in poll.rebalances if series_start <= at <= formed_at)


def _counters_known(poll: Poll, previous: Poll) -> bool:
    """Whether two polls' generations (or epochs) count the rebalances between them."""
    return (poll.generation is not None and previous.generation is not None) or (
        poll.group_epoch is not None and previous.group_epoch is not None
    )


def _rounds(poll: Poll, previous: Poll | None) -> int:
    """1 when the group went round between two polls, whatever its generation says: it
    entered a rebalancing state, or began another round within one (back from
    CompletingRebalance to PreparingRebalance: a SyncGroup failed; or new member ids
    joined), or its members or assignment changed between two polls that saw it
    settled; else 0."""
    if previous is None:
        return 0
    if poll.rebalancing:
        again = (
            not previous.rebalancing
            or (previous.state == "CompletingRebalance" and poll.state == "PreparingRebalance")
            or _joined(poll, previous)
        )
        return 1 if again else 0
    # Equal members mean equal member ids and assignment (polls share an unchanged
    # members tuple, so this is mostly an identity check).
    if previous.rebalancing or poll.members == previous.members:
        return 0  # the round completes, or nothing changed
    changed = poll.member_ids != previous.member_ids or poll.assignment != previous.assignment
    return 1 if changed else 0


def _joined(poll: Poll, previous: Poll) -> bool:
    """Whether a member id of ``poll`` was not in ``previous``."""
    if poll.members is previous.members:
        return False
    before = {m.member_id for m in previous.members}
    return any(m.member_id not in before for m in poll.members)


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


def _memberless(poll: Poll) -> bool:
    return poll.state == "Empty" or not poll.members


def reformed_after_empty(polls: Sequence[Poll]) -> bool:
    """Whether ``polls`` (the loop window) begin with the group out of members, quietly
    (no generation went by between those polls: nobody joined and left unseen), and
    then members joined: the group re-forming after an outage longer than the window.
    The window holds no poll of the members before, so without this nothing explained
    the generations of the group forming again (seen live: all instances back after a
    12-minute outage, flagged as looping)."""
    if not polls or not _memberless(polls[0]):
        return False
    for i in range(1, len(polls)):
        poll, previous = polls[i], polls[i - 1]
        if not _memberless(poll):
            return True
        if (
            poll.generation is not None
            and previous.generation is not None
            and poll.generation != previous.generation
        ):
            return False
    return False


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


def membership_churn(polls: Sequence[Poll], *, from_empty: bool = False) -> Churn:
    """How the group's members changed over ``polls`` (the loop window, newest last).

    ``from_empty``: the window begins with the group re-forming after it had no member
    (``reformed_after_empty``): its first poll describes the group truly (no member), so
    every member of the re-formed group joined within the window, as in a scale-out.

    Who the members are is known at Stable polls, and at every poll of a group whose
    broker assigns (KIP-848, KIP-1071): such a group is Stable again right after a
    member leaves, so its Stable polls alone can miss the change that explains the
    epochs that follow (seen in a rolling restart of a streams group)."""
    presence: dict[tuple[str, str], _Presence] = {}
    first_sample = last_sample = 0.0
    sampled = False
    if from_empty and polls:
        first_sample, sampled = polls[0].t, True
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


# -- a rebalance that never completes ---------------------------------------------------


class Unfinished(NamedTuple):
    """The rebalance the group is in at the newest poll, since its first rebalancing poll."""

    since: float
    members: int  # the member ids it began with (per instance, those first seen)
    replaced: int  # member ids that joined since, beyond those
    generation: int | None  # the exact generation, when known and unchanged all along
    # An instance whose members were replaced twice over: a restart or a scale-out
    # replaces or adds each member once, a loop again and again.
    twice_over: bool


def unfinished_rebalance(polls: Sequence[Poll]) -> Unfinished | None:
    """The rebalance the newest poll of ``polls`` is in (None: it is not rebalancing), and
    how its members were replaced meanwhile: per instance, the member ids that joined
    beyond those it had as the rebalance began (at the settled poll before it, or at its
    first poll in it for an instance that came later, a scale-out's newcomer).

    Members come without their Streams data mid-rebalance: an instance is named from
    their client ids (``InstanceNames``), so a thread replaced under a new index still
    counts for its instance (seen live: REPLACE_THREAD gives the replacement the next
    free index, threads 3 and 4 replacing 1 and 2, then 1 and 2 again)."""
    last = len(polls) - 1
    if not polls[last].rebalancing:
        return None
    start = last
    while start > 0 and polls[start - 1].rebalancing:
        start -= 1
    before = polls[start - 1] if start > 0 else None
    run = polls[start:]
    names = InstanceNames()
    if before is not None:
        names.learn(before.members)
    names.learn_all(q.members for q in run)
    first_ids: dict[str, set[str]] = {}
    joined: dict[str, set[str]] = {}
    for m in before.members if before is not None else ():
        first_ids.setdefault(names.instance(m), set()).add(m.member_id)
    members: tuple[Member, ...] | None = None
    for poll in run:
        if poll.members is members:
            continue
        members = poll.members
        arrived: set[str] = set()  # instances first seen at this poll
        for m in members:
            instance = names.instance(m)
            ids = first_ids.get(instance)
            if ids is None:
                first_ids[instance] = {m.member_id}
                arrived.add(instance)
            elif instance in arrived:
                ids.add(m.member_id)
            elif m.member_id not in ids:
                joined.setdefault(instance, set()).add(m.member_id)
    generation = before.generation if before is not None else None
    still = generation is not None and all(q.generation == generation for q in run)
    return Unfinished(
        run[0].t,
        sum(len(ids) for ids in first_ids.values()),
        sum(len(ids) for ids in joined.values()),
        generation if still else None,
        any(len(ids) >= 2 * len(first_ids[instance]) for instance, ids in joined.items()),
    )


def _replaced_over_and_over(unfinished: Unfinished | None, loop_events: int) -> bool:
    """Before the rebalance completed, an instance's members were replaced twice over,
    and ``loop_events`` members or more in all: a restart or a scale-out replaces or adds
    each member once; a loop (threads dying and replaced, instances crash-looping, a
    SyncGroup that always fails) again and again."""
    return unfinished is not None and unfinished.twice_over and unfinished.replaced >= loop_events


# -- the group's record against the offsets topic's limit --------------------------------


class Record(NamedTuple):
    """The group's metadata record as last measured, and the limit the agent reports now."""

    size: int | None  # bytes, at the newest Stable poll that has it
    measured_at: float | None
    limit: int | None  # the newest known max.message.bytes of __consumer_offsets

    @property
    def ratio(self) -> float | None:
        return self.size / self.limit if self.size and self.limit else None


def group_record(polls: Sequence[Poll]) -> Record:
    """Mid-rebalance members come without metadata, so the size is the newest Stable
    poll's, from all of the series' history (a loop that never completes has no Stable
    poll in its window). The limit is the newest the agent reported, not the largest:
    seen live, a stale broker default (1048588) in the window outlived the topic's own
    3500."""
    size = measured_at = limit = None
    members: tuple[Member, ...] | None = None
    for poll in reversed(polls):
        if limit is None:
            limit = poll.max_message_bytes
        if size is None and poll.stable and poll.members is not members:
            members = poll.members  # unchanged members are one shared tuple
            record = poll.metadata_bytes
            if record > 0:
                size, measured_at = record, poll.t
        if size is not None and limit is not None:
            break
    return Record(size, measured_at, limit)


# -- the judgement -----------------------------------------------------------------------


def judge(ev: Evaluation) -> Judgement:
    p, w, now = ev.params, ev.window, ev.now
    polls = w.polls
    window = w.looking_back(p.loop_window)
    forming_until = formation_end(polls, p.loop_window)
    per_poll = rebalance_events(polls, len(polls) - len(window), forming_until)
    # Column by column (summed in C): the same sums, in the same order.
    column = _Columns(*zip(*per_poll, strict=True)) if per_poll else _NO_POLL
    events = sum(column.events)
    probing = sum(column.probing)
    unseen = sum(column.unseen)
    formation = sum(column.formation)
    unstable = sum(column.unstable_seconds)
    unstable_ratio = min(unstable / p.loop_window, 1.0)
    formation_unstable = sum(column.formation_unstable_seconds)
    unstable_beyond_formation = min((unstable - formation_unstable) / p.loop_window, 1.0)
    gauges = (Gauge(REBALANCES, float(events)), Gauge(UNSTABLE_RATIO, unstable_ratio))
    stayed_empty = _stayed_empty(now, w.previous)
    judged = now.stable or stayed_empty
    # A group the agent sees forming is not looping (yet): see ``formation_end``.
    if forming_until == len(polls) - 1 and not now.stable:
        return Judgement(KIND, judged=judged, gauges=gauges)

    # A rebalance whose members were replaced again and again before it completed is a
    # loop whatever the counts say: seen live (KAFKA-7149), every SyncGroup failed, the
    # stream threads died and were replaced, the generation stayed at 2 for minutes and
    # the group was never Stable, so nothing was counted until the unstable share said
    # so 5.5 minutes later.
    unfinished = unfinished_rebalance(polls) if now.rebalancing else None
    stuck = _replaced_over_and_over(unfinished, p.loop_events)
    # The rebalances of a group forming (as the agent saw it form) are no loop either.
    beyond_probing = events - probing - formation
    # Mid-rebalance the members that explain it are not visible yet (a newcomer comes
    # undecoded): the rebalances are counted when the group is Stable again, or while it
    # stays Empty once members were seen to come and go between its Empty polls.
    counted = now.stable or (stayed_empty and unseen > 0)
    # Membership changes only explain rebalances away: a count below the threshold before
    # them stays below after, so the window's members (most of the work) are not read.
    if not (
        stuck
        or (counted and beyond_probing >= p.loop_events)
        or unstable_beyond_formation >= p.loop_unstable_ratio
    ):
        return Judgement(KIND, judged=judged, gauges=gauges)

    churn_polls = w.strictly_after(p.loop_window)
    # A group re-forming after it had no member: its members joined, as in a scale-out.
    reformed = reformed_after_empty(churn_polls)
    churn = membership_churn(churn_polls, from_empty=reformed)
    legitimate = not churn.rejoining and not churn.came_and_went and churn.member_changes > 0
    # Rebalances between two Empty polls are members that joined and left again unseen:
    # no member change the Stable polls show explains them. Without this, the restart
    # that brought a looping version in (a deploy) explained the loop's first six
    # rebalances, and the loop was found only once the restart left the window, long
    # after the fault.
    explainable = max(beyond_probing - unseen, 0)
    churn_explained = (
        min(explainable, churn.member_changes * EVENTS_PER_MEMBER_CHANGE) if legitimate else 0
    )
    unexplained = beyond_probing - churn_explained
    too_many = counted and unexplained >= p.loop_events
    too_unstable = unstable_beyond_formation >= p.loop_unstable_ratio and not legitimate
    if not (stuck or too_many or too_unstable):
        return Judgement(KIND, judged=judged, gauges=gauges)

    record = group_record(polls)
    stored = sum(column.stored) if any(column.exact) else None
    # The group went round and round with its generation known, yet none was stored.
    unstored = (
        unfinished.generation is not None
        if stuck and unfinished is not None
        else stored == 0 and events > 0
    )
    cause = _likely_cause(
        churn, unseen, record, p.metadata_size_ratio, unstored=unstored, stuck=stuck
    )
    empty_ratio = min(sum(column.empty_seconds) / p.loop_window, 1.0)
    explained = probing + formation + churn_explained
    if stuck and unfinished is not None:
        explanation = _unfinished_text(ev.group, now.t, unfinished, cause)
    else:
        explanation = (
            f"group {ev.group} rebalanced {_times(events)} in {p.loop_window:.0f} s "
            f"({explained} explained by probing, the group forming or membership changes) "
            f"and was {_time_split(unstable_ratio, empty_ratio)}; likely cause: {cause}"
        )
    evidence: JsonObject = {
        "rebalances": events,
        "probing_rebalances": probing,
        "group_forming_rebalances": formation,
        "explained_by_membership_changes": churn_explained,
        "unexplained_rebalances": unexplained,
        "rebalances_between_empty_polls": unseen,
        "member_changes": churn.member_changes,
        "reformed_after_empty": reformed,
        "unstable_ratio": rounded(unstable_ratio),
        "empty_ratio": rounded(empty_ratio),
        "window_seconds": float(p.loop_window),
        "events_from": "exact" if any(column.exact) else "inferred",
        "likely_cause": cause,
        "members_rejoining": [r._asdict() for r in churn.rejoining],
        "members_came_and_went": churn.came_and_went,
        "unfinished_rebalance": _unfinished_evidence(now.t, unfinished),
        "generations_stored": stored,
        "group_metadata_bytes": record.size,
        "group_metadata_measured_at": record.measured_at,
        "offsets_topic_max_message_bytes": record.limit,
        "metadata_ratio": rounded(record.ratio),
    }
    found = Found(KIND, "warning", FindingSubject(), explanation, evidence)
    return Judgement(KIND, judged=True, found=(found,), gauges=gauges)


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _time_split(unstable_ratio: float, empty_ratio: float) -> str:
    """How the window went: rebalancing, and Empty between re-joins where it was (seen
    live: a group out between re-joins nearly all the time was said to be "rebalancing 0%
    of the time")."""
    rebalancing = f"rebalancing {unstable_ratio * 100:.0f}%"
    if round(empty_ratio * 100) < 1:
        return f"{rebalancing} of the time"
    empty = f"Empty between re-joins {empty_ratio * 100:.0f}% of the time"
    return empty if round(unstable_ratio * 100) < 1 else f"{empty} and {rebalancing}"


def _unfinished_text(group: str, t: float, unfinished: Unfinished, cause: str) -> str:
    how = (
        f"none completed (generation {unfinished.generation} all along)"
        if unfinished.generation is not None
        else "no poll saw it Stable"
    )
    return (
        f"group {group} has been rebalancing for {t - unfinished.since:.0f} s and {how}: "
        f"{unfinished.replaced} member ids joined meanwhile beyond the {unfinished.members} "
        f"it began with, its members replaced again and again; likely cause: {cause}"
    )


def _unfinished_evidence(t: float, unfinished: Unfinished | None) -> JsonObject | None:
    if unfinished is None:
        return None
    return {
        "since": unfinished.since,
        "seconds": t - unfinished.since,
        "members_at_start": unfinished.members,
        "member_ids_joined": unfinished.replaced,
        "generation_still": unfinished.generation,
    }


def _likely_cause(
    churn: Churn,
    unseen: int,
    record: Record,
    metadata_size_ratio: float,
    *,
    unstored: bool,
    stuck: bool,
) -> str:
    metadata = _metadata_cause(record, metadata_size_ratio)
    if metadata is not None:
        return metadata
    if unstored:
        limit = f" {record.limit}" if record.limit is not None else ""
        return (
            "members join again and again and no generation is stored: the coordinator "
            "cannot write the group's record (over __consumer_offsets' max.message.bytes"
            f"{limit}, KAFKA-7149, or the offsets topic unavailable)"
        )
    if any(not r.old_member_lingered for r in churn.rejoining):
        return _REJOIN_CAUSE
    if any(r.old_member_lingered for r in churn.rejoining) or churn.came_and_went:
        return _CRASH_CAUSE
    if unseen > 0:
        return _UNSEEN_CAUSE
    return _REPLACED_CAUSE if stuck else "unknown"


def _metadata_cause(record: Record, metadata_size_ratio: float) -> str | None:
    """The group's record against the offsets topic's limit, when it is the likely cause."""
    ratio = record.ratio
    if ratio is None or ratio < metadata_size_ratio:
        return None
    if ratio >= 1.0:
        return (
            f"the group's record, {record.size} bytes at its last Stable poll, is over "
            f"__consumer_offsets' max.message.bytes {record.limit}: the coordinator cannot "
            "store the assignment, so every SyncGroup fails (KAFKA-7149)"
        )
    return (
        f"group metadata {record.size} bytes at its last Stable poll, {ratio * 100:.0f}% "
        f"of __consumer_offsets' max.message.bytes {record.limit}: near it, a rebalance "
        "that adds to the record cannot be stored (KAFKA-7149)"
    )
