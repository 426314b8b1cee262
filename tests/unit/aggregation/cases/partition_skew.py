"""partition_skew: one partition carries most of its topic's traffic."""

from collections.abc import Mapping

from agent.aggregation.judging.hysteresis import Candidate
from agent.model import Snapshot, TopicInfo
from tests.support.snapshots import partition, snapshot, streams_member
from tests.unit.aggregation.cases import T0, Case, Expect, all_of, evidence, explains, times

KIND = "partition_skew"


def _history(
    group: str, topics: Mapping[str, Mapping[int, float]], count: int = 4
) -> list[Snapshot]:
    """Polls every 10 s for a minute; ``topics``: topic -> partition -> records/s."""
    kinds = [
        TopicInfo(
            name, count, internal_kind="repartition" if name.endswith("-repartition") else None
        )
        for name in topics
    ]
    return [
        snapshot(
            group,
            t,
            members=[streams_member("pA", 1)],
            partitions=[
                partition(name, p, end=round(rates.get(p, 1.0) * (t - T0)) + 10)
                for name, rates in topics.items()
                for p in range(count)
            ],
            topics=kinds,
        )
        for t in times(0, 60, 10)
    ]


def _check_inheritance(candidates: list[Candidate]) -> None:
    by_topic = {c.subject.topic: c for c in candidates}
    source = by_topic["skew-hot-key-in"].evidence
    assert source["inherited_by"] == ["skew-hot-key-counts-repartition"]
    assert source["topic_kind"] == "input"
    assert source["share"] >= 0.8
    repartition = by_topic["skew-hot-key-counts-repartition"].evidence
    assert repartition["inherited_from"] == ["skew-hot-key-in"]
    assert "inherited by skew-hot-key-counts-repartition" in by_topic["skew-hot-key-in"].explanation


CASES = [
    Case(
        "skew-hot-key",
        "a hot key puts 85% of the input on partition 2 and the groupBy copies it into the "
        "repartition topic: both fire, each naming the other",
        KIND,
        _history(
            "skew-hot-key",
            {
                "skew-hot-key-in": {2: 60.0, 0: 3.0, 1: 4.0, 3: 3.0},
                "skew-hot-key-counts-repartition": {2: 60.0, 0: 3.0, 1: 4.0, 3: 3.0},
            },
        ),
        expect=[
            Expect("info", topic="skew-hot-key-in", partition=2),
            Expect("info", topic="skew-hot-key-counts-repartition", partition=2),
        ],
        check=_check_inheritance,
    ),
    Case(
        "skew-too-few-partitions",
        "80% on one partition of a 3-partition topic is below skew_min_partitions (4)",
        KIND,
        _history("skew-too-few-partitions", {"in3": {0: 80.0, 1: 10.0, 2: 10.0}}, count=3),
    ),
    Case(
        "skew-balanced",
        "the largest partition carries 40%: under the 50% share",
        KIND,
        _history("skew-balanced", {"in": {0: 40.0, 1: 20.0, 2: 20.0, 3: 20.0}}),
    ),
    Case(
        "skew-trickle",
        "one partition carries all of 3 records/s: too little traffic to matter",
        KIND,
        _history("skew-trickle", {"in": {0: 3.0, 1: 0.0, 2: 0.0, 3: 0.0}}),
    ),
    Case(
        "skew-lone-input",
        "a hot key puts 95% of the only topic's traffic on partition 1, and no other topic "
        "of the group is skewed there (no repartition): it fires all the same, naming no "
        "lineage (the Spark rule dropped a skewed partition with no skewed partner)",
        KIND,
        _history("skew-lone-input", {"skew-lone-input-in": {1: 60.0}}),
        expect=[Expect("info", topic="skew-lone-input-in", partition=1)],
        check=all_of(
            evidence(inherited_by=[], inherited_from=[], topic_kind="input", partitions=4),
            explains(
                "partition skew-lone-input-in-1 carries 95% of topic skew-lone-input-in's "
                "63.0 records/s (a hot key); its consumer cannot spread that load",
            ),
        ),
    ),
]
