"""partition_skew (info): one partition carries at least ``skew_min_share`` of its topic's
traffic, on a topic with at least ``skew_min_partitions`` partitions.

A hot key does this (seed 001). Whatever the assignment, one consumer reads that
partition alone, so no rebalance spreads its load. A ``groupBy`` on the same key copies
the skew into the repartition topic; the evidence says which topics of the group are
skewed at the same partition number, so a person sees where the skew came from (an
input topic, for a repartition topic) and where it went (the repartition topics, for an
input topic).

A partition counts when it carries at least ``min_hot_rate`` records/s: one that holds
all of a trickle is not a problem. Rates are the log-end offsets' growth over the
evaluation window (``rates``); the rule judges a poll once some partition has one.
"""

from collections.abc import Sequence
from typing import NamedTuple

from agent.aggregation.judging.rules.base import Evaluation, Found, Judgement, rounded
from agent.aggregation.judging.rules.rates import PartitionRate
from agent.model.findings import FindingSubject

KIND = "partition_skew"


class _Skewed(NamedTuple):
    topic: str
    partition: int
    rate: float
    topic_rate: float
    partitions: int  # the topic's partitions: as listed, or as many as have a rate
    internal_kind: str | None

    @property
    def share(self) -> float:
        return self.rate / self.topic_rate

    @property
    def repartition(self) -> bool:
        return self.internal_kind == "repartition"


def judge(ev: Evaluation) -> Judgement:
    known = [p for p in ev.rates.partitions if p.rate is not None]
    if not known:
        return Judgement(KIND, judged=False)
    skewed = _skewed(ev, known)
    found = tuple(_found(s, skewed) for s in sorted(skewed))
    return Judgement(KIND, judged=True, found=found)


def _skewed(ev: Evaluation, known: Sequence[PartitionRate]) -> list[_Skewed]:
    """The partitions carrying too large a share of their topic's traffic."""
    p = ev.params
    by_topic: dict[str, list[PartitionRate]] = {}
    for known_rate in known:
        by_topic.setdefault(known_rate.topic, []).append(known_rate)
    listed = {t.name: t for t in ev.now.topics}
    skewed = []
    for topic, rates in by_topic.items():
        topic_rate = sum(r.rate or 0.0 for r in rates)
        info = listed.get(topic)
        # A topic the snapshot does not list counts the partitions that have a rate.
        partitions = max(info.partitions if info is not None else 0, len(rates))
        if topic_rate <= 0 or partitions < p.skew_min_partitions:
            continue
        # A share grows with the rate: when the busiest partition's is below the bar, all
        # are (most topics, most polls).
        busiest = max(r.rate or 0.0 for r in rates)
        if busiest / topic_rate < p.skew_min_share or busiest < p.min_hot_rate:
            continue
        for r in rates:
            rate = r.rate or 0.0
            if rate / topic_rate >= p.skew_min_share and rate >= p.min_hot_rate:
                kind = info.internal_kind if info is not None else None
                skewed.append(_Skewed(topic, r.partition, rate, topic_rate, partitions, kind))
    return skewed


def _found(s: _Skewed, skewed: Sequence[_Skewed]) -> Found:
    # Other skewed topics at the same partition number: a repartition topic inherits an
    # input topic's hot key there (one key, one partition number, when their counts match).
    same_number = [o for o in skewed if o.partition == s.partition and o.topic != s.topic]
    inherited_by = sorted({o.topic for o in same_number if not s.repartition and o.repartition})
    inherited_from = sorted({o.topic for o in same_number if s.repartition and not o.repartition})
    if inherited_by:
        lineage = "; inherited by " + ", ".join(inherited_by)
    elif inherited_from:
        lineage = "; inherited from " + ", ".join(inherited_from)
    else:
        lineage = ""
    return Found(
        KIND,
        "info",
        FindingSubject(topic=s.topic, partition=s.partition),
        f"partition {s.topic}-{s.partition} carries {s.share * 100:.0f}% of topic {s.topic}'s "
        f"{s.topic_rate:.1f} records/s (a hot key){lineage}; its consumer cannot spread that "
        "load, whatever the assignment",
        {
            "topic": s.topic,
            "partition": s.partition,
            "share": rounded(s.share),
            "partition_records_per_second": rounded(s.rate),
            "topic_records_per_second": rounded(s.topic_rate),
            "partitions": s.partitions,
            "topic_kind": s.internal_kind if s.internal_kind is not None else "input",
            "inherited_by": inherited_by,
            "inherited_from": inherited_from,
        },
    )
