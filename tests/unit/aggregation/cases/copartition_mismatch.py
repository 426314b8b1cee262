"""copartition_mismatch: a sub-topology reads topics of different partition counts."""

import dataclasses
from collections.abc import Callable, Mapping

from agent.aggregation.judging.hysteresis import Candidate
from agent.model import MemberInfo, Snapshot, SubtopologyInfo, TopicInfo
from tests.support.snapshots import partition, plain_member, snapshot, streams_member
from tests.unit.aggregation.cases import T0, Case, Expect, all_of, evidence, explains, times

KIND = "copartition_mismatch"
UNTIL = 120  # seconds of polls: past the default copartition_mismatch_after (60 s)

# sub-topology id -> {topic: partition count}
Reads = Mapping[str, Mapping[str, int]]


def _tasks(reads: Reads) -> dict[str, list[tuple[str, int]]]:
    """As Kafka Streams deals them: task <s>_<p> for p below the largest count, reading
    partition p of every topic of the sub-topology that has it."""
    return {
        f"{sub}_{p}": [(topic, p) for topic, count in sorted(topics.items()) if p < count]
        for sub, topics in reads.items()
        for p in range(max(topics.values()))
    }


def _members(reads: Reads, threads: int = 2, *, kip1071: bool = False) -> list[MemberInfo]:
    """One instance's ``threads`` members, the tasks dealt round-robin."""
    held: list[dict[str, list[tuple[str, int]]]] = [{} for _ in range(threads)]
    for i, (task, parts) in enumerate(sorted(_tasks(reads).items())):
        held[i % threads][task] = parts
    return [
        streams_member("pA", t + 1, held[t], member_epoch=5 if kip1071 else None)
        for t in range(threads)
    ]


def _topics(reads: Reads, **counts: int) -> list[TopicInfo]:
    """The snapshot's topics: every topic read, with its count (``counts`` overrides)."""
    every = {topic: n for topics in reads.values() for topic, n in topics.items()}
    every.update(counts)
    return [TopicInfo(name, n, consumed=True) for name, n in sorted(every.items())]


def _history(
    group: str,
    reads: Callable[[float], Reads],
    *,
    members: Callable[[float], list[MemberInfo]] | None = None,
    topics: Callable[[float], list[TopicInfo]] | None = None,
    state: Callable[[float], str] = lambda s: "Stable",
    topology: Callable[[float], Reads] | None = None,
    repartition: frozenset[str] = frozenset(),
    kip1071: bool = False,
    streams: bool = True,
) -> list[Snapshot]:
    """Polls every 10 s for ``UNTIL`` s; each callable gets s, the seconds after T0.
    ``topology``: the sub-topologies the snapshot carries (a KIP-1071 broker's, or a
    configured description); ``repartition`` names its repartition source topics.
    Classic groups come undecoded while they rebalance, as the broker describes them."""
    snapshots = []
    for t in times(0, UNTIL, 10):
        s = t - T0
        now = reads(s)
        present = members(s) if members is not None else _members(now, kip1071=kip1071)
        word = state(s)
        if not kip1071 and word != "Stable":
            present = [dataclasses.replace(m, streams=None) for m in present]
        polled = snapshot(
            group,
            t,
            members=present,
            partitions=[
                partition(tp.topic, tp.partition, end=100)
                for m in present
                for tp in m.assigned_partitions
            ],
            topics=topics(s) if topics is not None else _topics(now),
            state=word,
            streams=streams,
            group_epoch=7 if kip1071 else None,
        )
        if topology is not None:
            polled = dataclasses.replace(
                polled,
                subtopologies=tuple(
                    SubtopologyInfo(
                        sub,
                        source_topics=tuple(sorted(set(topics) - repartition)),
                        repartition_source_topics=tuple(sorted(set(topics) & repartition)),
                    )
                    for sub, topics in topology(s).items()
                ),
            )
        snapshots.append(polled)
    return snapshots


JOIN_MISMATCH = {"0": {"orders": 4, "customers": 2}}
JOIN_EQUAL = {"0": {"orders": 4, "customers": 4}}


def _since_start(candidates: list[Candidate]) -> None:
    (found,) = candidates
    assert found.since == T0, "the run began at the first poll; the rebalance did not break it"


CASES = [
    Case(
        "cpm-join-inferred",
        "a classic join app's only sub-topology reads orders (4) and customers (2), seen from "
        "its tasks: 0_2 and 0_3 read only orders, for 2 minutes: a warning (a join is not "
        "visible from the tasks, and the tasks run)",
        KIND,
        _history("cpm-join-inferred", lambda s: JOIN_MISMATCH),
        expect=[Expect("warning")],
        check=all_of(
            evidence(
                sources_from="active tasks",
                subtopologies=[
                    {
                        "subtopology": "0",
                        "topics": [
                            {"topic": "customers", "partitions": 2},
                            {"topic": "orders", "partitions": 4},
                        ],
                        "unknown_topics": [],
                        "tasks_reading_some": [
                            {
                                "first_task": "0_2",
                                "last_task": "0_3",
                                "tasks": 2,
                                "reads_only": ["orders"],
                            }
                        ],
                    }
                ],
                group_state="Stable",
                group_type="classic",
                members=2,
                active_tasks=4,
                mismatched_for_seconds=float(UNTIL),
            ),
            explains(
                "group cpm-join-inferred: sub-topology 0 reads customers (2), orders (4): "
                "tasks 0_2 to 0_3 read only orders; a key's records from these topics meet in "
                "different tasks",
                "repartition() one side",
                "adding partitions moves keys",
            ),
        ),
    ),
    Case(
        "cpm-kip1071-refused",
        "a KIP-1071 group whose broker holds a topology reading orders (4) and customers (2) "
        "in one sub-topology, NotReady, its two members without a task: the broker refused "
        "the join; nothing is processed: critical",
        KIND,
        _history(
            "cpm-kip1071-refused",
            lambda s: JOIN_MISMATCH,
            members=lambda s: [
                streams_member("pA", t, member_epoch=5, app="cpm-kip1071-refused") for t in (1, 2)
            ],
            topology=lambda s: JOIN_MISMATCH,
            state=lambda s: "NotReady",
            kip1071=True,
        ),
        expect=[Expect("critical")],
        check=all_of(
            evidence(
                sources_from="broker topology",
                group_state="NotReady",
                group_type="streams",
                active_tasks=0,
            ),
            explains("INCORRECTLY_PARTITIONED_TOPICS", "tasks 0_2 to 0_3 read only orders"),
        ),
    ),
    Case(
        "cpm-kip1071-refused-empty",
        "the same refused KIP-1071 group after its instances shut down on the refusal "
        "(SHUTDOWN_CLIENT, the default handler): Empty, the broker keeps the topology: "
        "still nothing is processed: critical",
        KIND,
        _history(
            "cpm-kip1071-refused-empty",
            lambda s: JOIN_MISMATCH,
            members=lambda s: [],
            topology=lambda s: JOIN_MISMATCH,
            state=lambda s: "Empty",
            kip1071=True,
        ),
        expect=[Expect("critical")],
        check=evidence(members=0, active_tasks=0, group_state="Empty"),
    ),
    Case(
        "cpm-configured-topology",
        "a classic group with a configured topology whose sub-topology 1 merges a (3) and "
        "b (6) while sub-topology 0 reads c alone: the topology is the source, and its tasks "
        "run: a warning naming sub-topology 1 only",
        KIND,
        _history(
            "cpm-configured-topology",
            lambda s: {"0": {"c": 8}, "1": {"a": 3, "b": 6}},
            topology=lambda s: {"0": {"c": 8}, "1": {"a": 3, "b": 6}},
        ),
        expect=[Expect("warning")],
        check=all_of(
            evidence(sources_from="configured topology", group_type="classic"),
            explains("sub-topology 1 reads a (3), b (6): tasks 1_3 to 1_5 read only b"),
        ),
    ),
    Case(
        "cpm-three-counts",
        "one sub-topology reads x (2), y (4) and z (5); another reads w (4) and v (4): each "
        "step between counts is one range of tasks reading fewer topics",
        KIND,
        _history(
            "cpm-three-counts",
            lambda s: {"0": {"x": 2, "y": 4, "z": 5}, "1": {"w": 4, "v": 4}},
        ),
        expect=[Expect("warning")],
        check=explains(
            "sub-topology 0 reads x (2), y (4), z (5): tasks 0_2 to 0_3 read only y, z; "
            "task 0_4 read only z;",
            absent="sub-topology 1",
        ),
    ),
    Case(
        "cpm-through-a-rebalance",
        "the mismatch holds at every Stable poll; polls mid-rebalance (members undecoded) at "
        "40-60 s neither count nor break the run, so it is found with its first poll as since",
        KIND,
        _history(
            "cpm-through-a-rebalance",
            lambda s: JOIN_MISMATCH,
            state=lambda s: "PreparingRebalance" if 40 <= s <= 60 else "Stable",
        ),
        expect=[Expect("warning")],
        check=_since_start,
    ),
    Case(
        "cpm-repartition-set-apart",
        "a running KIP-1071 group whose sub-topology reads orders (4) and its own repartition "
        "topic sized apart to 8 (Repartitioned.withNumberOfPartitions): repartition topics are "
        "checked too",
        KIND,
        _history(
            "cpm-repartition-set-apart",
            lambda s: {"1": {"orders": 4, "app-by-id-repartition": 8}},
            topology=lambda s: {"1": {"orders": 4, "app-by-id-repartition": 8}},
            repartition=frozenset({"app-by-id-repartition"}),
            kip1071=True,
        ),
        expect=[Expect("warning")],
        check=evidence(sources_from="broker topology", active_tasks=8),
    ),
    # ------------------------------------------------------------------ must not fire
    Case(
        "cpm-equal",
        "the join's two topics have 4 partitions each: co-partitioned",
        KIND,
        _history("cpm-equal", lambda s: JOIN_EQUAL),
    ),
    Case(
        "cpm-kip1071-equal",
        "a KIP-1071 group whose topology reads orders (4) and customers (4): co-partitioned",
        KIND,
        _history(
            "cpm-kip1071-equal",
            lambda s: JOIN_EQUAL,
            topology=lambda s: JOIN_EQUAL,
            kip1071=True,
        ),
    ),
    Case(
        "cpm-one-topic-each",
        "sub-topology 0 reads orders (4), sub-topology 1 only the repartition topic (2): "
        "counts differ between sub-topologies, which is no co-partitioning question",
        KIND,
        _history("cpm-one-topic-each", lambda s: {"0": {"orders": 4}, "1": {"app-repartition": 2}}),
    ),
    Case(
        "cpm-unknown-count",
        "customers' count is unknown (no metadata: 0): it is not judged, never guessed",
        KIND,
        _history(
            "cpm-unknown-count",
            lambda s: JOIN_MISMATCH,
            topics=lambda s: _topics(JOIN_MISMATCH, customers=0),
        ),
    ),
    Case(
        "cpm-pattern-all-match",
        "a pattern subscription matching events-a, events-b and events-c, 3 partitions each",
        KIND,
        _history(
            "cpm-pattern-all-match", lambda s: {"0": {"events-a": 3, "events-b": 3, "events-c": 3}}
        ),
    ),
    Case(
        "cpm-repartition-sized",
        "a KIP-1071 group's sub-topology reads orders (4) and the repartition topic Kafka "
        "Streams sized from it (4): equal by construction",
        KIND,
        _history(
            "cpm-repartition-sized",
            lambda s: {"1": {"orders": 4, "app-by-id-repartition": 4}},
            topology=lambda s: {"1": {"orders": 4, "app-by-id-repartition": 4}},
            repartition=frozenset({"app-by-id-repartition"}),
            kip1071=True,
        ),
    ),
    Case(
        "cpm-too-recent",
        "orders grew from 2 to 4 partitions at 80 s (customers still 2): held 40 s, shorter "
        "than copartition_mismatch_after (60 s)",
        KIND,
        _history(
            "cpm-too-recent",
            lambda s: JOIN_MISMATCH if s >= 80 else {"0": {"orders": 2, "customers": 2}},
        ),
    ),
    Case(
        "cpm-repaired",
        "mismatched for the first 70 s, then customers grew to 4 as well: counts match at the "
        "last poll, so the rule no longer holds (an open finding closes)",
        KIND,
        _history(
            "cpm-repaired",
            lambda s: JOIN_MISMATCH if s < 70 else JOIN_EQUAL,
        ),
    ),
    Case(
        "cpm-plain-consumer",
        "a plain consumer group reading two topics of different counts: no Kafka Streams, no "
        "sub-topologies",
        KIND,
        _history(
            "cpm-plain-consumer",
            lambda s: JOIN_MISMATCH,
            members=lambda s: [
                plain_member("c1", [("orders", p) for p in range(4)] + [("customers", 0)])
            ],
            streams=False,
        ),
    ),
    Case(
        "cpm-always-rebalancing",
        "a classic group mid-rebalance at every poll: no member's tasks are known, so there "
        "is nothing to judge",
        KIND,
        _history(
            "cpm-always-rebalancing",
            lambda s: JOIN_MISMATCH,
            state=lambda s: "CompletingRebalance",
        ),
    ),
]
