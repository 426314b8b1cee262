"""Partition rates and the load of tasks, stream threads (members) and instances, at the
poll being judged.

Rate of a partition: growth of its log-end offset over the evaluation window
divided by the time it took (records/s), from the oldest poll of the window
that knew its log-end offset. Load of a unit of work (a Kafka Streams task,
else a partition): the sum of its source partitions' rates. Load of a member:
the sum over the units it holds; of an instance (a Streams process, or a
plain consumer's client id), the sum over its members.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import numpy as np

from agent.aggregation.judging.facts import Member, Partition, Poll, TopicPartition
from agent.aggregation.judging.rules.columns import partition_columns
from agent.aggregation.judging.window import SeriesWindow

_new = tuple.__new__

# Per poll and partition, unit, member: records, built by the hundred thousand in a replay
# (tuples build faster than frozen dataclasses).


class PartitionRate(NamedTuple):
    topic: str
    partition: int
    rate: float | None  # None: no earlier log-end offset in the window yet
    log_end: int
    lag: int | None


_new_rate = partial(tuple.__new__, PartitionRate)


class UnitRate(NamedTuple):
    """One unit of work one member holds."""

    member: Member
    process: str | None  # the member's process (a plain consumer: None here)
    unit: str  # a task id, else "<topic>-<partition>"
    kind: str  # "task" | "partition"
    rate: float  # the sum of its source partitions' rates (unknown counts 0)
    partitions: tuple[TopicPartition, ...]  # its source partitions

    @property
    def source_partitions(self) -> tuple[str, ...]:
        """``<topic>-<partition>``, sorted."""
        return tuple(sorted(f"{tp.topic}-{tp.partition}" for tp in self.partitions))


_new_unit = partial(tuple.__new__, UnitRate)


class MemberLoad(NamedTuple):
    member: Member
    process: str  # the Streams process, else the client id
    load: float
    units: int


class InstanceLoad(NamedTuple):
    process: str
    load: float
    members: int


@dataclass(frozen=True, slots=True)
class Rates:
    partitions: tuple[PartitionRate, ...]  # every partition with a known log-end offset
    units: tuple[UnitRate, ...]
    members: tuple[MemberLoad, ...]  # decoded Streams members, and every plain consumer
    instances: tuple[InstanceLoad, ...]

    def rate_of(self, topic: str, partition: int) -> float | None:
        for p in self.partitions:
            if p.topic == topic and p.partition == partition:
                return p.rate
        return None


def partition_rates(window: SeriesWindow, seconds: float) -> tuple[PartitionRate, ...]:
    now = window.now
    if not now.partitions:
        return ()
    older = window.looking_back(seconds)[:-1]
    if older:
        aligned = _rates_since(older[0], now)
        if aligned is not None:
            return aligned
    return _rates_by_key(now.t, now.partitions, older)


def _rates_by_key(
    t: float, partitions: tuple[Partition, ...], older: Sequence[Poll]
) -> tuple[PartitionRate, ...]:
    """The rates of the ``partitions`` of the poll at ``t`` over the ``older`` polls of
    its window, each partition looked up by its key."""
    # The oldest known log-end offset of each partition within the window, read from the
    # oldest poll on until every partition of the newest poll has one.
    wanted = {(p.topic, p.partition) for p in partitions if p.log_end is not None}
    start: dict[tuple[str, int], tuple[float, int]] = {}
    for poll in older:
        for p in poll.partitions or ():
            if p.log_end is not None:
                start.setdefault((p.topic, p.partition), (poll.t, p.log_end))
        if len(start) >= len(wanted) and wanted.issubset(start):
            break
    rates = []
    for p in partitions:
        if p.log_end is None:
            continue
        first = start.get((p.topic, p.partition))
        rate = None
        if first is not None and t > first[0]:
            rate = max(p.log_end - first[1], 0) / (t - first[0])
        rates.append(PartitionRate(p.topic, p.partition, rate, p.log_end, p.lag))
    return tuple(rates)


def _rates_since(oldest: Poll, now: Poll) -> tuple[PartitionRate, ...] | None:
    """The rates when the window's oldest poll lists the newest poll's partitions, in its
    order, each once, all with a log-end offset in both (as a steady series does): then
    it is every partition's start, and the rates are computed at once (the same
    arithmetic: an exact difference, made a float once, divided). None: not so."""
    if oldest.partitions is None or now.partitions is None:
        return None
    theirs, mine = partition_columns(oldest.partitions), partition_columns(now.partitions)
    if (
        theirs is None
        or mine is None
        or theirs.keys is not mine.keys
        or not theirs.unique
        or theirs.log_ends is None
        or mine.log_ends is None
    ):
        return None
    topics, numbers, ends, _, lags, _ = zip(*now.partitions, strict=True)
    rates: list[float] | tuple[None, ...]
    if now.t > oldest.t:
        growth = np.maximum(mine.log_ends - theirs.log_ends, 0)
        rates = (growth / (now.t - oldest.t)).tolist()
    else:
        rates = (None,) * len(ends)
    return tuple(map(_new_rate, zip(topics, numbers, rates, ends, lags, strict=True)))


def compute_rates(window: SeriesWindow, seconds: float) -> Rates:
    now = window.now
    partitions = partition_rates(window, seconds)
    # A TopicPartition is a (topic, partition) tuple: it looks itself up.
    rate_of = {(p.topic, p.partition): p.rate for p in partitions}.get
    plan = _plan(now.members, now.is_streams)
    # Each unit's rate: the sum of its sources' rates, in order, from 0.0.
    rates: list[float]
    if plan.one_source:
        rates = [0.0 + (rate or 0.0) for rate in map(rate_of, plan.first_sources)]
    else:
        rates = []
        for sources in plan.sources:
            rate = 0.0
            for tp in sources:
                rate += rate_of(tp) or 0.0
            rates.append(rate)
    members = tuple(
        _new(MemberLoad, (m, process, sum(rates[start:end]), distinct))
        for m, process, distinct, start, end in plan.loads
    )
    return Rates(
        partitions=partitions,
        units=tuple(
            map(
                _new_unit,
                zip(
                    plan.members,
                    plan.processes,
                    plan.units,
                    plan.kinds,
                    rates,
                    plan.sources,
                    strict=True,
                ),
            )
        ),
        members=members,
        instances=tuple(
            _new(InstanceLoad, (process, sum([members[i].load for i in held]), len(held)))
            for process, held in plan.instances
        ),
    )


class _Plan(NamedTuple):
    """Who holds which units, and which members make an instance: all the rates need of a
    poll's members (shared with the poll before while unchanged), worked out once. The
    units of every member with a load, in the poll's order, field by field."""

    members: tuple[Member, ...]
    processes: tuple[str | None, ...]  # UnitRate.process
    units: tuple[str, ...]
    kinds: tuple[str, ...]
    sources: tuple[tuple[TopicPartition, ...], ...]
    one_source: bool  # every unit reads one partition
    first_sources: tuple[TopicPartition, ...]  # (then) each unit's
    # Per member with a load: the member, its MemberLoad.process, its distinct units, and
    # where its units are (start, end).
    loads: tuple[tuple[Member, str, int, int, int], ...]
    instances: tuple[tuple[str, tuple[int, ...]], ...]  # by process: its loads' places


_plans: dict[tuple[int, bool], tuple[tuple[Member, ...], _Plan]] = {}
_PLANS_KEPT = 1024


def _plan(members: tuple[Member, ...], is_streams: bool) -> _Plan:
    hit = _plans.get((id(members), is_streams))
    if hit is not None and hit[0] is members:
        return hit[1]
    plan = _plan_anew(members, is_streams)
    if len(_plans) >= _PLANS_KEPT:
        _plans.clear()
    _plans[(id(members), is_streams)] = (members, plan)  # held: the id stays theirs
    return plan


def _plan_anew(members: tuple[Member, ...], is_streams: bool) -> _Plan:
    units: list[tuple[Member, str | None, str, str, tuple[TopicPartition, ...]]] = []
    loads: list[tuple[Member, str, int, int, int]] = []
    for m in members:
        start = len(units)
        if m.decoded:
            # A task reading nothing has no rate to speak of.
            units += [
                (m, m.process, t.task, "task", t.partitions) for t in m.active if t.partitions
            ]
        elif not is_streams:
            # Outside Kafka Streams the unit of work is the partition. (A Streams member
            # whose userData did not decode has no units: tasks and partitions do not mix.)
            units += [
                (m, m.client_id, f"{tp.topic}-{tp.partition}", "partition", (tp,))
                for tp in m.assigned
            ]
        else:
            # During a rebalance Streams members come undecoded: their load is unknown,
            # not zero.
            continue
        process = m.process if m.process is not None else m.client_id
        distinct = len({unit for _, _, unit, _, _ in units[start:]})
        loads.append((m, process, distinct, start, len(units)))
    instances: dict[str, list[int]] = {}
    for i, load in enumerate(loads):
        instances.setdefault(load[1], []).append(i)
    columns = tuple(zip(*units, strict=True)) if units else ((),) * 5
    sources: tuple[tuple[TopicPartition, ...], ...] = columns[4]
    one_source = all(len(s) == 1 for s in sources)
    return _Plan(
        members=columns[0],
        processes=columns[1],
        units=columns[2],
        kinds=columns[3],
        sources=sources,
        one_source=one_source,
        first_sources=tuple(s[0] for s in sources) if one_source else (),
        loads=tuple(loads),
        instances=tuple((process, tuple(at)) for process, at in sorted(instances.items())),
    )
