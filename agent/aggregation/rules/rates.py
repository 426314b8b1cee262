"""Partition rates and the load of tasks, stream threads (members) and instances, at the
poll being judged.

Rate of a partition: growth of its log-end offset over the evaluation window
divided by the time it took (records/s), from the oldest poll of the window
that knew its log-end offset. Load of a unit of work (a Kafka Streams task,
else a partition): the sum of its source partitions' rates. Load of a member:
the sum over the units it holds; of an instance (a Streams process, or a
plain consumer's client id), the sum over its members.
"""

from dataclasses import dataclass

from agent.aggregation.facts import Member, TopicPartition
from agent.aggregation.window import SeriesWindow


@dataclass(frozen=True, slots=True)
class PartitionRate:
    topic: str
    partition: int
    rate: float | None  # None: no earlier log-end offset in the window yet
    log_end: int
    lag: int | None


@dataclass(frozen=True, slots=True)
class UnitRate:
    """One unit of work one member holds."""

    member: Member
    process: str | None  # the member's process (a plain consumer: None here)
    unit: str  # a task id, else "<topic>-<partition>"
    kind: str  # "task" | "partition"
    rate: float  # the sum of its source partitions' rates (unknown counts 0)
    source_partitions: tuple[str, ...]  # "<topic>-<partition>", sorted


@dataclass(frozen=True, slots=True)
class MemberLoad:
    member: Member
    process: str  # the Streams process, else the client id
    load: float
    units: int


@dataclass(frozen=True, slots=True)
class InstanceLoad:
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
    # The oldest known log-end offset of each partition within the window.
    start: dict[tuple[str, int], tuple[float, int]] = {}
    for poll in window.looking_back(seconds)[:-1]:
        for p in poll.partitions or ():
            if p.log_end is not None:
                start.setdefault((p.topic, p.partition), (poll.t, p.log_end))
    rates = []
    for p in now.partitions:
        if p.log_end is None:
            continue
        first = start.get((p.topic, p.partition))
        rate = None
        if first is not None and now.t > first[0]:
            rate = max(p.log_end - first[1], 0) / (now.t - first[0])
        rates.append(PartitionRate(p.topic, p.partition, rate, p.log_end, p.lag))
    return tuple(rates)


def compute_rates(window: SeriesWindow, seconds: float) -> Rates:
    now = window.now
    partitions = partition_rates(window, seconds)
    rate_by = {(p.topic, p.partition): p.rate for p in partitions}
    units: list[UnitRate] = []
    members: list[MemberLoad] = []
    for m in now.members:
        held: list[UnitRate] = []
        if m.decoded:
            for task in m.active:
                if task.partitions:  # a task reading nothing has no rate to speak of
                    held.append(_unit(m, m.process, task.task, "task", task.partitions, rate_by))
        elif not now.is_streams:
            # Outside Kafka Streams the unit of work is the partition. (A Streams member
            # whose userData did not decode has no units: tasks and partitions do not mix.)
            for tp in m.assigned:
                unit = f"{tp.topic}-{tp.partition}"
                held.append(_unit(m, m.client_id, unit, "partition", (tp,), rate_by))
        units += held
        # During a rebalance Streams members come undecoded: their load is unknown, not zero.
        if m.decoded or not now.is_streams:
            members.append(
                MemberLoad(
                    m,
                    m.process if m.process is not None else m.client_id,
                    sum(u.rate for u in held),
                    len({u.unit for u in held}),
                )
            )
    instances: dict[str, list[MemberLoad]] = {}
    for ml in members:
        instances.setdefault(ml.process, []).append(ml)
    return Rates(
        partitions=partitions,
        units=tuple(units),
        members=tuple(members),
        instances=tuple(
            InstanceLoad(process, sum(ml.load for ml in held), len(held))
            for process, held in sorted(instances.items())
        ),
    )


def _unit(  # noqa: PLR0917 - one unit's every part
    member: Member,
    process: str | None,
    unit: str,
    kind: str,
    partitions: tuple[TopicPartition, ...],
    rate_by: dict[tuple[str, int], float | None],
) -> UnitRate:
    rate = 0.0
    names = []
    for tp in partitions:
        topic, partition = tp
        rate += rate_by.get((topic, partition)) or 0.0
        names.append(f"{topic}-{partition}")
    return UnitRate(member, process, unit, kind, rate, tuple(sorted(names)))
