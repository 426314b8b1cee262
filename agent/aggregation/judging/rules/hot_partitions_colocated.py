"""hot_partitions_colocated (warning): two or more hot units of work piled on one member
(or one instance) while another member (instance) of the group holds none.

A unit is a Kafka Streams task, else a partition (plain consumers). It is hot when
its rate is at least ``hot_factor`` x the median rate of the group's input partitions
that have traffic, and at least ``min_hot_rate`` records/s. The rule looks at member
level (one stream thread, or one plain consumer) and, in a Kafka Streams group, at
instance level (one Streams process), where CPU and memory pressure land. A stream
thread whose process id is not known (its assignment says none) is a member but no
instance: it is left out of the instance level, and findings never name its client id
as an instance.

The evidence names the single move of one of the piled units to another holder that
lowers the group's maximum load the most: to the least loaded other holder, which no
other destination beats. When no single move lowers the maximum, none is advised
(``suggested_move`` is null) and ``no_move_reason`` says why:

- ``one_unit_is_the_maximum``: the busiest holder carries the maximum with one unit
  alone; no assignment can bring the maximum below one unit's rate;
- ``another_is_as_busy``: another holder is at least as busy as this one, so moving
  this one's units leaves the maximum where it is;
- ``destination_would_be_as_busy``: this holder is the busiest, but any of its units
  would leave the least loaded other holder at least as busy.

``limited_by`` names that other holder. A thread's pile that no move helps, on an
instance whose instance-level finding names a move, is no finding of its own: it is
folded into the instance's (``folded_members``), whose move is what to do about it.
A move counts as lowering the maximum when it does so at the precision the explanation
shows (0.1 records/s).

A pile is judged on load that lasts. A group draining a backlog of its input topics
(its lag on them fell over the evaluation window by at least as many records as
arrived: it consumes at twice the arrival rate or more, as an application back from
an outage or a new application id replaying a topic's history does) writes its
repartition topics (``<application id>-...-repartition``) as fast as it drains, so
the tasks reading them look hot until the backlog is gone. While it drains, a task
that reads repartition topics only is not counted hot; a task hot on its input
topics' own arrival rate still is, and a lasting hot key behind a re-key is found
once the draining stops.

Judged at Stable polls (members fully described); a finding on the rates of another
poll counts as judged too.
"""

from collections.abc import Callable, Sequence
from statistics import median
from typing import NamedTuple

from agent.aggregation.judging.facts import Member, Partition
from agent.aggregation.judging.rules.base import (
    Evaluation,
    Found,
    Judgement,
    is_repartition,
    rounded,
    thread_name,
)
from agent.aggregation.judging.rules.rates import UnitRate
from agent.model.findings import FindingSubject
from agent.model.records import JsonObject

KIND = "hot_partitions_colocated"

_PILE = 2  # hot units on one holder that make a pile

ONE_UNIT_IS_THE_MAXIMUM = "one_unit_is_the_maximum"
ANOTHER_IS_AS_BUSY = "another_is_as_busy"
DESTINATION_WOULD_BE_AS_BUSY = "destination_would_be_as_busy"


class _Holder(NamedTuple):
    """What holds units: a member (a stream thread, a plain consumer) or an instance."""

    key: str  # the member id, or the instance's process id
    load: float
    process: str | None  # the instance findings name (None: not known)
    member: Member | None  # at member level
    units: Sequence[UnitRate]

    @property
    def largest(self) -> UnitRate | None:
        return max(self.units, key=lambda u: u.rate, default=None)


class _Move(NamedTuple):
    unit: UnitRate
    to: _Holder
    max_after: float


class _Advice(NamedTuple):
    """The best single move, or why there is none."""

    max_load: float  # the group's maximum load now
    move: _Move | None
    no_move_reason: str | None
    limited_by: _Holder | None  # the other holder the reason is about


class _Pile(NamedTuple):
    holder: _Holder
    hot: list[UnitRate]  # busiest first, equal rates by unit id
    advice: _Advice
    mean_load: float
    holders: int


class _Heat(NamedTuple):
    median: float  # of the rates of the partitions with traffic
    threshold: float


def judge(ev: Evaluation) -> Judgement:
    now = ev.now
    heat = _heat(ev)
    if heat is None:
        return Judgement(KIND, judged=now.stable)
    draining = _draining_units(ev)
    members, instances = _member_level(ev, heat, draining), _instance_level(ev, heat, draining)
    # A thread's pile that no move helps, on an instance whose own finding names the move,
    # is folded into that finding: a warning of its own would page for nothing to do.
    moving = {pile.holder.process for pile in instances if pile.advice.move is not None}
    folded: dict[str | None, list[_Pile]] = {}
    found: list[Found] = []
    for pile in members:
        if pile.advice.move is None and pile.holder.process in moving:
            folded.setdefault(pile.holder.process, []).append(pile)
        else:
            found.append(_member_found(pile, heat))
    found += [_instance_found(p, heat, folded.get(p.holder.process, [])) for p in instances]
    return Judgement(KIND, judged=now.stable or bool(found), found=tuple(found))


def _heat(ev: Evaluation) -> _Heat | None:
    """The median partition rate and the hot threshold; None when no partition has traffic
    or no two units are hot (nothing can pile up)."""
    rates = ev.rates
    busy = [p.rate for p in rates.partitions if p.rate is not None and p.rate > 0]
    if not busy:
        return None
    middle = median(busy)
    threshold = max(middle * ev.params.hot_factor, ev.params.min_hot_rate)
    if sum(1 for u in rates.units if u.rate >= threshold) < _PILE:
        return None
    return _Heat(middle, threshold)


def _draining_units(ev: Evaluation) -> frozenset[str]:
    """The units that read repartition topics only, while the group drains a backlog of
    its input topics: their lag fell over the evaluation window by at least the records
    that arrived on them (empty: not draining)."""
    now = ev.now
    older = ev.window.looking_back(ev.params.evaluation_window)
    if older[0] is now or not now.partitions or not older[0].partitions:
        return frozenset()

    kinds = {t.name: t.internal_kind for t in now.topics}

    def repartition(topic: str) -> bool:
        return is_repartition(topic, kinds.get(topic))

    def inputs(poll_partitions: Sequence[Partition]) -> dict[tuple[str, int], Partition]:
        return {
            (p.topic, p.partition): p
            for p in poll_partitions
            if not repartition(p.topic) and p.lag is not None and p.log_end is not None
        }

    then, current = inputs(older[0].partitions), inputs(now.partitions)
    common = then.keys() & current.keys()
    drained = sum((then[k].lag or 0) - (current[k].lag or 0) for k in common)
    arrived = sum((current[k].log_end or 0) - (then[k].log_end or 0) for k in common)
    if drained <= 0 or drained < arrived:
        return frozenset()
    return frozenset(
        u.unit
        for u in ev.rates.units
        if u.partitions and all(repartition(tp.topic) for tp in u.partitions)
    )


def _member_level(ev: Evaluation, heat: _Heat, draining: frozenset[str]) -> list[_Pile]:
    rates = ev.rates
    units: dict[str, list[UnitRate]] = {}
    for u in rates.units:
        units.setdefault(u.member.member_id, []).append(u)
    holders = [
        _Holder(
            m.member.member_id,
            m.load,
            # A plain consumer is its own instance (its client id); a stream thread's
            # instance is its process, or not known.
            m.member.process if ev.now.is_streams else m.process,
            m.member,
            units.get(m.member.member_id, ()),
        )
        for m in rates.members
    ]
    return _piles(holders, heat.threshold, draining)


def _instance_level(ev: Evaluation, heat: _Heat, draining: frozenset[str]) -> list[_Pile]:
    """Instances are Streams processes: members with a known process id, summed. (Outside
    Kafka Streams a consumer is its own instance: the member level says it all.)"""
    loads: dict[str, float] = {}
    for m in ev.rates.members:
        if m.member.process is not None:
            loads[m.member.process] = loads.get(m.member.process, 0.0) + m.load
    units: dict[str, list[UnitRate]] = {}
    for u in ev.rates.units:
        if u.member.process is not None:
            units.setdefault(u.member.process, []).append(u)
    holders = [
        _Holder(process, load, process, None, units.get(process, ()))
        for process, load in sorted(loads.items())
    ]
    return _piles(holders, heat.threshold, draining)


def _piles(holders: Sequence[_Holder], threshold: float, draining: frozenset[str]) -> list[_Pile]:
    """The holders with two or more hot units (not draining a backlog) while another holds
    none, each with the advice for it."""
    hot = {
        h.key: sorted(
            (u for u in h.units if u.rate >= threshold and u.unit not in draining),
            key=lambda u: (-u.rate, u.unit),
        )
        for h in holders
    }
    if all(hot.values()):
        return []  # nobody holds none: moving cannot spread the heat
    lowest = sorted(holders, key=lambda h: (h.load, h.key))[:2]
    highest = sorted(holders, key=lambda h: (-h.load, h.key))[:3]
    mean_load = sum(h.load for h in holders) / len(holders)
    return [
        _Pile(h, hot[h.key], _advice(h, lowest, highest), mean_load, len(holders))
        for h in holders
        if len(hot[h.key]) >= _PILE
    ]


def _shown(load: float) -> float:
    """A load as explanations show it."""
    return float(f"{load:.1f}")


def _advice(holder: _Holder, lowest: Sequence[_Holder], highest: Sequence[_Holder]) -> _Advice:
    """The move of one of ``holder``'s units to the least loaded other holder that leaves
    the group's maximum load lowest (equal: the busier unit, then by unit id), if it
    lowers the maximum at all."""
    target = next(h for h in lowest if h.key != holder.key)
    # The busiest of the rest: the three busiest hold it, whoever the two others are.
    rest = max((h.load for h in highest if h.key not in {holder.key, target.key}), default=0.0)
    max_load = max(holder.load, rest, target.load)

    def after(u: UnitRate) -> float:
        return max(holder.load - u.rate, target.load + u.rate, rest)

    best = min(holder.units, key=lambda u: (after(u), -u.rate, u.unit))
    if _shown(after(best)) < _shown(max_load):
        return _Advice(max_load, _Move(best, target, after(best)), None, None)
    busiest = next(h for h in highest if h.key != holder.key)
    if _shown(busiest.load) < _shown(holder.load):
        return _Advice(max_load, None, DESTINATION_WOULD_BE_AS_BUSY, target)
    largest = busiest.largest
    if largest is not None and _shown(largest.rate) >= _shown(busiest.load):
        return _Advice(max_load, None, ONE_UNIT_IS_THE_MAXIMUM, busiest)
    return _Advice(max_load, None, ANOTHER_IS_AS_BUSY, busiest)


# -- what it says ------------------------------------------------------------------------


def _unit_words(pile: _Pile) -> tuple[str, str]:
    return ("task", "tasks") if pile.hot[0].kind == "task" else ("partition", "partitions")


def _hot_units(pile: _Pile) -> list[JsonObject]:
    return [{"unit": u.unit, "records_per_second": rounded(u.rate)} for u in pile.hot]


def _member_name(h: _Holder) -> str:
    assert h.member is not None  # noqa: S101 - member level
    return thread_name(h.process, h.member.thread, h.member.client_id)


def _instance_name(h: _Holder) -> str:
    return f"instance {h.process}"


def _advice_clause(pile: _Pile, level: str, name_of: Callable[[_Holder], str]) -> str:
    """The explanation's clause on the advice: the move, or why there is none."""
    advice, (unit, units) = pile.advice, _unit_words(pile)
    move, other = advice.move, advice.limited_by
    if move is not None:
        return (
            f"move {move.unit.unit} to {name_of(move.to)} to cut the busiest {level}'s load "
            f"from {advice.max_load:.1f} to {move.max_after:.1f} records/s"
        )
    assert other is not None  # noqa: S101 - a reason names the other holder
    why = f"no single move of its {units} lowers the busiest {level}'s load "
    why += f"({advice.max_load:.1f} records/s): "
    if advice.no_move_reason == ONE_UNIT_IS_THE_MAXIMUM:
        largest = other.largest
        assert largest is not None  # noqa: S101 - the reason is about it
        return why + (
            f"{unit} {largest.unit} alone carries {largest.rate:.1f} records/s on "
            f"{name_of(other)} (the mean {level} load is {pile.mean_load:.1f}), and one "
            f"{unit} cannot be split"
        )
    if advice.no_move_reason == ANOTHER_IS_AS_BUSY:
        return why + f"{name_of(other)} is as busy or busier ({other.load:.1f} records/s)"
    return why + (
        f"each would leave {name_of(other)}, the least loaded {level} "
        f"({other.load:.1f} records/s), at least as busy as this one"
    )


def _limited_by(pile: _Pile, identity: JsonObject) -> JsonObject | None:
    other = pile.advice.limited_by
    if other is None:
        return None
    largest = other.largest
    return {
        **identity,
        "load_records_per_second": rounded(other.load),
        "largest_unit": largest.unit if largest is not None else None,
        "largest_unit_records_per_second": rounded(largest.rate) if largest is not None else None,
    }


def _member_identity(h: _Holder | None) -> JsonObject:
    if h is None or h.member is None:
        return {}
    return {
        "member_id": h.member.member_id,
        "client_id": h.member.client_id,
        "process": h.process,
        "thread": h.member.thread,
    }


def _member_found(pile: _Pile, heat: _Heat) -> Found:
    h, advice = pile.holder, pile.advice
    member, move = h.member, advice.move
    assert member is not None  # noqa: S101 - member level
    suggested: JsonObject | None = None
    if move is not None:
        to = move.to.member
        assert to is not None  # noqa: S101
        suggested = {
            "unit": move.unit.unit,
            "unit_records_per_second": rounded(move.unit.rate),
            "to_member_id": to.member_id,
            "to_process": move.to.process,
            "to_thread": to.thread,
            "max_load_before": rounded(advice.max_load),
            "max_load_after": rounded(move.max_after),
        }
    unit_words = _unit_words(pile)[1]
    return Found(
        KIND,
        "warning",
        FindingSubject(process=h.process, thread=member.thread),
        f"{_member_name(h)} holds {len(pile.hot)} hot {unit_words} "
        f"({', '.join(u.unit for u in pile.hot)}) while another member holds none; "
        + _advice_clause(pile, "member", _member_name),
        {
            "level": "member",
            "member_id": member.member_id,
            "client_id": member.client_id,
            "host": member.host,
            "process": h.process,
            "thread": member.thread,
            "hot_units": _hot_units(pile),
            "load_records_per_second": rounded(h.load),
            "mean_member_load_records_per_second": rounded(pile.mean_load),
            "members": pile.holders,
            "median_partition_rate": rounded(heat.median),
            "hot_threshold_records_per_second": rounded(heat.threshold),
            "max_load_records_per_second": rounded(advice.max_load),
            "suggested_move": suggested,
            "no_move_reason": advice.no_move_reason,
            "limited_by": _limited_by(pile, _member_identity(advice.limited_by)),
        },
    )


def _folded_words(folded: Sequence[_Pile]) -> str:
    """The clause on the threads whose piles the instance's move is the answer for."""
    return "".join(
        f"; {_member_name(f.holder)} holds {', '.join(u.unit for u in f.hot)}, which no "
        "move of its own helps: this move is the one"
        for f in folded
    )


def _instance_found(pile: _Pile, heat: _Heat, folded: Sequence[_Pile]) -> Found:
    """``folded``: the piles of this instance's threads that no move of their own helps."""
    h, advice = pile.holder, pile.advice
    move = advice.move
    suggested: JsonObject | None = None
    if move is not None:
        suggested = {
            "unit": move.unit.unit,
            "unit_records_per_second": rounded(move.unit.rate),
            "to_process": move.to.process,
            "max_load_before": rounded(advice.max_load),
            "max_load_after": rounded(move.max_after),
        }
    other = advice.limited_by
    return Found(
        KIND,
        "warning",
        FindingSubject(process=h.process),
        f"instance {h.process} holds {len(pile.hot)} hot {_unit_words(pile)[1]} "
        f"({', '.join(u.unit for u in pile.hot)}) while another instance holds none; "
        + _advice_clause(pile, "instance", _instance_name)
        + _folded_words(folded),
        {
            "level": "instance",
            "process": h.process,
            "hot_units": _hot_units(pile),
            "load_records_per_second": rounded(h.load),
            "mean_instance_load_records_per_second": rounded(pile.mean_load),
            "instances": pile.holders,
            "median_partition_rate": rounded(heat.median),
            "hot_threshold_records_per_second": rounded(heat.threshold),
            "max_load_records_per_second": rounded(advice.max_load),
            "suggested_move": suggested,
            "no_move_reason": advice.no_move_reason,
            "limited_by": _limited_by(
                pile, {"process": other.process} if other is not None else {}
            ),
            "folded_members": [
                {
                    **_member_identity(f.holder),
                    "hot_units": _hot_units(f),
                    "no_move_reason": f.advice.no_move_reason,
                }
                for f in folded
            ],
        },
    )
