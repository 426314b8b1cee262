"""stream_threads_dead: an instance runs fewer stream threads than it should.

From the broker (each Streams member is one stream thread of one instance):

* partial loss (warning): an instance's thread count drops below its maximum
  over ``thread_history`` and stays lower for ``thread_death_grace`` while the
  instance keeps at least one member. Threads are counted by index, so a
  restarted instance whose old members linger until their session times out
  does not count twice.
* whole instance gone (info): an instance left the group more than
  ``thread_death_grace`` ago and none replaced it (the group has fewer
  instances than its most over the look-back). Without a sidecar this may be
  a scale-down; ``no_live_consumers`` covers a group left with nobody.

The broker's view is read at Stable polls only: mid-rebalance, members come
without their Streams data. An instance is a Kafka Streams process id: a
member whose process id is unknown (undecoded, or empty) is no instance, and
is counted in none.

A death is a thread that does not come back. A thread (or an instance) seen in
the group at any poll within ``thread_death_grace``, Stable or not, is out
between re-joins, not dead: mid-rebalance its member's client id names its
instance and thread index (``instances.InstanceNames``). And while a
``rebalance_loop`` finding is open on the group (or holds at this poll: that
rule judges first), members leave and re-join under new ids, so a thread out
of the group says nothing of a death: the broker's view is not judged then
(a finding open from before stays open), and the loop's finding says why the
members are out. Seen live: a poll-timeout loop with every
thread alive opened "runs 1 of its 2 stream threads ... look for the uncaught
exception" and "all its stream threads died". A thread that really died during
a loop is found once the loop's finding has closed.

A broker finding closes at once (``Judgement.cleared``) at a Stable poll that shows
its instance back with every thread it ran over the look-back, loop or not: an
instance stopped on purpose and started under the same process id re-joins under new
member ids, and waiting for the broker's view to be judged again would keep the
finding open for as long as the restart's rebalances keep a loop open, and a window
after. An instance gone closes so too when a successor, new since it was last seen,
runs on its host or under its base client id and the group has its most instances
again (a restart under a new process id).

From a sidecar (authoritative, next to the instance): ``alive-stream-threads``
below the expected count (configured, else the most seen), the client in
ERROR / NOT_RUNNING / PENDING_ERROR, a thread in DEAD, or the instance having
no member at all while its sidecar reports: held for ``thread_death_grace``
(ERROR and PENDING_ERROR at once: a client leaves them only by being closed),
critical when nothing runs, else warning; and ``failed-stream-threads`` having
increased within the look-back (warning, even if a replacement thread runs).
A sidecar that does not know its instance's process id says nothing.

Judged at Stable polls and at every poll with a sidecar section. Gauges: the
threads each instance is expected to run, a sidecar's configured count
(priority 0) over the broker's most threads seen (priority 1).
"""

from collections.abc import Sequence
from dataclasses import dataclass

from agent.aggregation.judging.facts import Member, Poll, Sidecar
from agent.aggregation.judging.results import THREADS_EXPECTED
from agent.aggregation.judging.rules.base import Evaluation, Found, Gauge, Judgement
from agent.aggregation.judging.rules.instances import InstanceNames
from agent.aggregation.judging.window import SeriesWindow
from agent.model.findings import FindingSubject
from agent.model.records import JsonObject
from agent.streams.client_id import parse_stream_thread_client_id

KIND = "stream_threads_dead"
BAD_CLIENT_STATES = frozenset(("ERROR", "NOT_RUNNING", "PENDING_ERROR"))
# A Kafka Streams client leaves ERROR only by being closed, and PENDING_ERROR leads only
# to ERROR: no grace can bring its threads back. NOT_RUNNING may be an orderly close (a
# pod stopping), and a thread short may be replaced within the grace: those wait for it.
TERMINAL_CLIENT_STATES = frozenset(("ERROR", "PENDING_ERROR"))

# Per instance (process id), its stream threads at one poll: their indexes as text,
# sorted (a member without an index stands for itself, by member id).
Threads = dict[str, tuple[str, ...]]


def judge(ev: Evaluation) -> Judgement:
    now = ev.now
    sidecar = now.sidecar
    if not now.stable and sidecar is None:
        return Judgement(KIND, judged=False)
    # While the group loops, its members leave and re-join under new ids: from the
    # broker, a thread out between re-joins looks like a dead one (seen live: a
    # poll-timeout loop opened a warning "look for the uncaught exception" on an
    # instance whose threads all lived). The loop's finding says why they are out; a
    # thread still out once the loop is over died. Not judged meanwhile, so a finding
    # open from before stays open (rebalance_loop judges this poll first), unless its
    # instance is back with its threads (``_back``).
    loop = ev.is_open("rebalance_loop")
    found: list[Found] = []
    gauges: list[Gauge] = []
    broker = _BrokerView.of(ev.window, ev.params.thread_history) if now.stable else None
    if broker is not None:
        if not loop:
            found += _partial_loss(ev, broker)
            found += _instance_gone(ev, broker)
        gauges += [
            Gauge(THREADS_EXPECTED, float(broker.threads_max[p]), process=p, priority=1)
            for p in sorted(broker.now)
        ]
    # A sidecar that does not know its process id (empty: its members' subscriptions,
    # of a newer version, carry none) speaks for no instance, and has none's members.
    if sidecar is not None and sidecar.process:
        said = _sidecar_says(ev, sidecar, sidecar.process)
        if said is not None:
            found.append(said)
        if sidecar.expected is not None:
            gauges.append(
                Gauge(
                    THREADS_EXPECTED, float(sidecar.expected), process=sidecar.process, priority=0
                )
            )
    judged = sidecar is not None or not loop
    # Back is back, loop or not: a Stable generation lists the instance with every thread.
    holding = {f.subject for f in found}
    cleared = () if broker is None else tuple(s for s in _back(ev, broker) if s not in holding)
    return Judgement(KIND, judged=judged, found=tuple(found), gauges=tuple(gauges), cleared=cleared)


# -- the broker's view -----------------------------------------------------------------


def _threads_of(members: Sequence[Member]) -> Threads:
    """Each instance's stream threads among ``members``; a member without a known process
    id belongs to no instance (its client id is not one)."""
    by_process: dict[str, set[str]] = {}
    for m in members:
        if m.process is not None:  # decoded, with a process id
            key = str(m.thread) if m.thread is not None else m.member_id
            by_process.setdefault(m.process, set()).add(key)
    return {p: tuple(sorted(keys)) for p, keys in by_process.items()}


@dataclass
class _BrokerView:
    """The instances at the judged (Stable) poll, and what the Stable polls of the
    look-back say about them."""

    window: SeriesWindow
    threads_at: dict[int, Threads]  # by id(poll.members): polls share unchanged members
    now: Threads
    threads_max: dict[str, int]  # per instance now: the most threads over the look-back
    instances_max: int  # the most instances at a Stable poll of the look-back
    # Instances absent now, each with its last Stable poll within (now - look-back, now].
    last_seen: dict[str, float]
    history: Sequence[Poll]
    _sightings: "_Sightings | None" = None

    @classmethod
    def of(cls, window: SeriesWindow, seconds: float) -> "_BrokerView":
        threads_at: dict[int, Threads] = {}
        history = window.looking_back(seconds)
        # strictly_after's cut, in whole milliseconds as the window counts them.
        after_ms = int(window.t * 1000) - round(seconds * 1000)
        now = _threads_at(window.now, threads_at)
        threads_max = {p: len(keys) for p, keys in now.items()}
        instances_max = 0
        last_seen: dict[str, float] = {}
        newer_members = None
        for poll in reversed(history):
            # An older Stable poll with the very members of the newer one adds nothing.
            if not poll.stable or poll.members is newer_members:
                continue
            newer_members = poll.members
            threads = _threads_at(poll, threads_at)
            instances_max = max(instances_max, len(threads))
            strictly_after = int(poll.t * 1000) > after_ms
            for process, keys in threads.items():
                if process in now:
                    threads_max[process] = max(threads_max[process], len(keys))
                elif strictly_after and process not in last_seen:
                    last_seen[process] = poll.t
        return cls(window, threads_at, now, threads_max, instances_max, last_seen, history)

    def threads_seen(self, process: str) -> list[str]:
        """Every thread of ``process`` at a Stable poll of the look-back, sorted."""
        seen: set[str] = set()
        for poll in self.history:
            if poll.stable:
                seen.update(_threads_at(poll, self.threads_at).get(process, ()))
        return sorted(seen)

    def whereabouts(self, process: str) -> JsonObject:
        """Where ``process`` ran at its newest Stable poll of the look-back: its members'
        host and base client id (None when they differ or are unknown)."""
        for poll in reversed(self.history):
            members = [m for m in poll.members if poll.stable and m.process == process]
            if members:
                hosts = {m.host for m in members}
                bases = {_base_client_id(m.client_id) for m in members}
                return {
                    "host": hosts.pop() if len(hosts) == 1 else None,
                    "client_id_base": bases.pop() if len(bases) == 1 else None,
                }
        return {"host": None, "client_id_base": None}

    def first_seen(self) -> dict[str, float]:
        """Each instance's oldest Stable poll of the look-back."""
        first: dict[str, float] = {}
        for poll in self.history:
            if poll.stable:
                for process in _threads_at(poll, self.threads_at):
                    first.setdefault(process, poll.t)
        return first

    def sightings(self) -> "_Sightings":
        """When each stream thread and instance was last in the group at any poll of the
        look-back, Stable or not (read once, when a finding is in question)."""
        if self._sightings is None:
            self._sightings = _Sightings.of(self.history)
        return self._sightings

    def count_since(self, process: str) -> float:
        """When ``process`` began to run as many threads as now, over the Stable polls
        that show it (polls mid-rebalance or without it neither count nor break the run)."""
        count = len(self.now[process])
        since = self.window.t
        for poll in self.window.reversed():
            if not poll.stable:
                continue
            keys = _threads_at(poll, self.threads_at).get(process)
            if keys is None:
                continue
            if len(keys) != count:
                break
            since = poll.t
        return since


@dataclass
class _Sightings:
    """The last time each stream thread (process id, thread index) and each instance was
    in the group, at any poll: mid-rebalance the broker lists a member without its
    Streams data, and its client id says whose thread it is (``InstanceNames``)."""

    threads: dict[tuple[str, int], float]
    processes: dict[str, float]

    @classmethod
    def of(cls, history: Sequence[Poll]) -> "_Sightings":
        names = InstanceNames()
        names.learn_all(poll.members for poll in history)
        threads: dict[tuple[str, int], float] = {}
        processes: dict[str, float] = {}
        for poll in history:  # oldest first: the newest sighting stays
            for m in poll.members:
                thread = names.thread(m)
                if thread is not None:
                    threads[thread] = poll.t
                    processes[thread[0]] = poll.t
                else:
                    process = names.process(m)
                    if process is not None:
                        processes[process] = poll.t
        return cls(threads, processes)

    def thread_out_for(self, process: str, key: str, t: float) -> float | None:
        """Seconds since thread ``key`` (an index, as ``Threads`` holds it) of ``process``
        was last in the group; None when unknown (a member without an index)."""
        if not key.isdigit():
            return None
        seen = self.threads.get((process, int(key)))
        return None if seen is None else t - seen


# Threads by members, across evaluations: polls share their members while unchanged, so
# most evaluations find every poll's already worked out. Held with the members they were
# read from (their ids stay theirs); shared: not to be changed.
_threads: dict[int, tuple[tuple[Member, ...], Threads]] = {}
_THREADS_KEPT = 1024


def _threads_at(poll: Poll, cache: dict[int, Threads]) -> Threads:
    key = id(poll.members)
    threads = cache.get(key)
    if threads is None:
        hit = _threads.get(key)
        if hit is not None and hit[0] is poll.members:
            threads = hit[1]
        else:
            threads = _threads_of(poll.members)
            if len(_threads) >= _THREADS_KEPT:
                _threads.clear()
            _threads[key] = (poll.members, threads)
        cache[key] = threads
    return threads


def _base_client_id(client_id: str) -> str | None:
    parsed = parse_stream_thread_client_id(client_id)
    return parsed.base_client_id if parsed is not None else None


def _partial_loss(ev: Evaluation, broker: _BrokerView) -> list[Found]:
    found = []
    grace = ev.params.thread_death_grace
    for process in sorted(broker.now):
        threads_now = broker.now[process]
        count, most = len(threads_now), broker.threads_max[process]
        if count >= most:  # (count >= 1 always: the instance has a member)
            continue
        since = broker.count_since(process)
        lower_for = ev.t - since
        if lower_for < grace:
            continue
        # A death is a thread that does not come back: one seen in the group within the
        # grace (mid-rebalance, re-joining under a new member id) is out between
        # re-joins (seen live: a poll-timeout loop, a thread absent from every Stable
        # poll for two minutes, in and out of the group in between).
        now_set = set(threads_now)
        sightings = broker.sightings()
        gone = []
        for key in broker.threads_seen(process):
            out_for = sightings.thread_out_for(process, key, ev.t)
            if key not in now_set and (lower_for if out_for is None else out_for) >= grace:
                gone.append(key)
        if not gone:
            continue
        found.append(
            Found(
                KIND,
                "warning",
                FindingSubject(process=process),
                f"instance {process} runs {count} of its {most} stream threads (thread "
                f"{', '.join(gone)} gone for {lower_for:.0f} s); its tasks moved to the "
                "others: look for the uncaught exception in that instance's log",
                {
                    "source": "broker",
                    "threads_now": count,
                    "threads_max_in_window": most,
                    "thread_indexes_now": list(threads_now),
                    "thread_indexes_gone": gone,
                    "lower_for_seconds": lower_for,
                },
                since=since,
            )
        )
    return found


def _instance_gone(ev: Evaluation, broker: _BrokerView) -> list[Found]:
    instances_now = len(broker.now)
    if instances_now >= broker.instances_max:
        return []  # as many as ever: whoever left was replaced
    found = []
    grace = ev.params.thread_death_grace
    for process, last_stable in sorted(broker.last_seen.items()):
        if ev.t - last_stable < grace:
            continue
        # Its members may come and go between Stable polls: it left when none of them
        # was in the group any more.
        last_seen = max(last_stable, broker.sightings().processes.get(process, last_stable))
        gone_for = ev.t - last_seen
        if gone_for < grace:
            continue
        found.append(
            Found(
                KIND,
                "info",
                FindingSubject(process=process),
                f"instance {process} left the group {gone_for:.0f} s ago and no instance "
                f"replaced it ({instances_now} of {broker.instances_max} remain): a "
                "scale-down, or all its stream threads died (a sidecar next to it would tell)",
                {
                    "source": "broker",
                    "last_seen_at": last_seen,
                    "instances_now": instances_now,
                    "instances_max_in_window": broker.instances_max,
                    **broker.whereabouts(process),
                },
                since=last_seen,
            )
        )
    return found


def _back(ev: Evaluation, broker: _BrokerView) -> list[FindingSubject]:
    """The instances of the broker's open findings that this Stable poll shows back with
    every thread they ran within the look-back, or replaced by their successor."""
    back = []
    for finding in ev.open_findings:
        process = finding.subject.process
        if finding.kind != KIND or process is None or finding.evidence.get("source") != "broker":
            continue
        threads = broker.now.get(process)
        if threads is not None:
            if len(threads) >= broker.threads_max[process]:
                back.append(finding.subject)
        elif _succeeded(broker, finding.evidence):
            back.append(finding.subject)
    return sorted(back, key=lambda subject: subject.key)


def _succeeded(broker: _BrokerView, gone: JsonObject) -> bool:
    """Whether an instance new since the gone one was last seen runs where it ran (its
    host or base client id) and the group has its most instances again: a restart under
    a new process id (its state directory wiped, or none kept)."""
    if len(broker.now) < broker.instances_max:
        return False
    last_seen = gone.get("last_seen_at")
    host, base = gone.get("host"), gone.get("client_id_base")
    if not isinstance(last_seen, int | float) or (not host and not base):
        return False
    first_seen = broker.first_seen()
    for process in broker.now:
        if first_seen.get(process, broker.window.t) <= last_seen:
            continue  # it ran beside the gone instance: not its successor
        where = broker.whereabouts(process)
        if (host and where["host"] == host) or (base and where["client_id_base"] == base):
            return True
    return False


# -- what a sidecar says ---------------------------------------------------------------


def _sidecar_says(ev: Evaluation, sidecar: Sidecar, process: str) -> Found | None:
    p, now = ev.params, ev.now
    # The look-back of this instance's own sidecar sections (a restarted instance has a
    # new process id: its predecessor's counts are not its own).
    history = [
        q.sidecar
        for q in ev.window.looking_back(p.thread_history)
        if q.sidecar is not None and q.sidecar.process == process
    ]
    expected = _expected(sidecar, history)
    failed_before = history[0].failed  # the oldest section's count, known or not
    failed_more = (
        sidecar.failed - failed_before
        if sidecar.failed is not None and failed_before is not None
        else 0.0
    )
    reasons = _reasons(now, sidecar, expected)
    bad = sidecar.app_up and bool(reasons)
    if bad:
        bad_since = _bad_since(ev, process)
        holds = (
            ev.t - bad_since >= p.thread_death_grace
            or failed_more > 0
            or sidecar.client_state in TERMINAL_CLIENT_STATES
        )
    else:
        # Stale metrics prove nothing: the app is unreachable, or every signal is fine.
        bad_since = ev.t
        holds = sidecar.app_up and failed_more > 0
    if not holds:
        return None
    nothing_runs = _nothing_runs(now, sidecar)
    all_reasons = reasons + (
        [f"{failed_more:.0f} stream threads failed recently"] if failed_more > 0 else []
    )
    advice = (
        "it processes nothing: restart it and read its log"
        if nothing_runs
        else "its tasks moved to the remaining threads: read its log"
    )
    return Found(
        KIND,
        "critical" if bad and nothing_runs else "warning",
        FindingSubject(process=process),
        f"instance {process} (sidecar): {', '.join(all_reasons)} while its pod runs; {advice}",
        {
            "source": "sidecar",
            "sidecar_agent": sidecar.agent,
            "client_state": sidecar.client_state,
            "threads_alive": sidecar.alive,
            "threads_expected": expected,
            "threads_failed_total": sidecar.failed,
            "threads_failed_in_window": failed_more,
            "dead_threads": _dead_threads(sidecar),
            "members_in_group": sidecar.members,
            "reasons": all_reasons,
        },
        since=bad_since,
    )


def _expected(sidecar: Sidecar, history: Sequence[Sidecar]) -> int | None:
    """The configured thread count, else the most alive over the look-back."""
    if sidecar.expected is not None:
        return sidecar.expected
    return max((s.alive for s in history if s.alive is not None), default=None)


def _dead_threads(sidecar: Sidecar) -> list[str]:
    return sorted(t.thread_id for t in sidecar.threads if t.state == "DEAD")


def _no_members(poll: Poll, sidecar: Sidecar) -> bool:
    # Only a Stable group lists every member: mid-rebalance a member may be missing.
    return poll.stable and sidecar.members == 0


def _client_bad(sidecar: Sidecar) -> bool:
    return sidecar.client_state in BAD_CLIENT_STATES


def _nothing_runs(poll: Poll, sidecar: Sidecar) -> bool:
    return (
        _no_members(poll, sidecar)
        or _client_bad(sidecar)
        or (sidecar.alive is not None and sidecar.alive == 0)
    )


def _short_of_threads(sidecar: Sidecar, expected: int | None) -> bool:
    return sidecar.alive is not None and expected is not None and sidecar.alive < expected


def _bad(poll: Poll, sidecar: Sidecar, expected: int | None) -> bool:
    """Whether the sidecar at ``poll`` says something is wrong (``_reasons``, unworded)
    while it can reach the app."""
    return sidecar.app_up and (
        _short_of_threads(sidecar, expected)
        or _client_bad(sidecar)
        or any(t.state == "DEAD" for t in sidecar.threads)
        or _no_members(poll, sidecar)
    )


def _reasons(poll: Poll, sidecar: Sidecar, expected: int | None) -> list[str]:
    """What is wrong with the instance at ``poll``, by its sidecar."""
    reasons = []
    if _short_of_threads(sidecar, expected):
        reasons.append(f"{sidecar.alive} of {expected} stream threads alive")
    if _client_bad(sidecar):
        reasons.append(f"client state {sidecar.client_state}")
    dead = _dead_threads(sidecar)
    if dead:
        reasons.append(f"DEAD: {', '.join(dead)}")
    if _no_members(poll, sidecar):
        reasons.append("no member in the group")
    return reasons


def _bad_since(ev: Evaluation, process: str) -> float:
    """When the run of polls at which this instance's sidecar saw something wrong began,
    over the polls with its section (others neither count nor break the run).

    Whether a poll was bad depends on its own expected count, the most threads alive
    over the look-back before it: one pass, oldest first, keeps that trailing maximum
    (a deque of the candidates, falling in value) instead of a look-back per poll.
    """
    span = round(ev.params.thread_history * 1000)
    rows = [
        (poll, poll.sidecar)
        for poll in ev.window.polls
        if poll.sidecar is not None and poll.sidecar.process == process
    ]
    alive_max: list[tuple[int, int]] = []  # (ms, alive): the trailing maximum's candidates
    head = 0
    bad = []
    for poll, sidecar in rows:
        ms = int(poll.t * 1000)
        if sidecar.alive is not None:
            while len(alive_max) > head and alive_max[-1][1] <= sidecar.alive:
                alive_max.pop()
            alive_max.append((ms, sidecar.alive))
        while len(alive_max) > head and alive_max[head][0] < ms - span:
            head += 1
        head = min(head, len(alive_max))
        expected = sidecar.expected
        if expected is None and len(alive_max) > head:
            expected = alive_max[head][1]
        bad.append(_bad(poll, sidecar, expected))
    since = ev.t
    for (poll, _), was_bad in zip(reversed(rows), reversed(bad), strict=True):
        if not was_bad:
            break
        since = poll.t
    return since
