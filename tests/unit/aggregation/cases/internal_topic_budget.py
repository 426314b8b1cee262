"""internal_topic_budget and broker_partition_budget: internal topics and partition replicas
against their budgets (defaults: 50 internal topics and 2,000 replicas per application,
4,000 replicas per broker, info from 80 %, held 5 minutes)."""

import dataclasses
from collections.abc import Sequence

from agent.model import BrokerLoad, ClusterFacts, Snapshot, TopicInfo
from tests.support.snapshots import snapshot
from tests.unit.aggregation.cases import T0, Case, Expect, all_of, evidence, explains, times

KIND = "internal_topic_budget"
BROKER_KIND = "broker_partition_budget"
UNTIL = 420  # seconds of polls: past the default budget_hold (300 s)


def internal(
    app: str, kind: str, count: int, partitions: int, rf: int | None = 3, start: int = 0
) -> list[TopicInfo]:
    suffix = {"repartition": "repartition", "changelog": "changelog"}[kind]
    return [
        TopicInfo(
            f"{app}-store-{start + i}-{suffix}",
            partitions,
            internal_kind=kind,
            consumed=kind == "repartition",
            replication_factor=rf,
        )
        for i in range(count)
    ]


def _facts(brokers: Sequence[tuple[int, int, int, int]] = ((1, 100, 50, 10),)) -> ClusterFacts:
    loads = tuple(BrokerLoad(b, r, leaders, s) for b, r, leaders, s in brokers)
    return ClusterFacts(
        broker_count=len(loads),
        offsets_topic_max_message_bytes=1_048_588,
        total_topics=200,
        total_partitions=sum(b.leaders for b in loads),
        total_replicas=sum(b.replicas for b in loads),
        brokers=loads,
    )


def app_history(
    group: str,
    topics: Sequence[TopicInfo] | None = None,
    *,
    topics_at: dict[int, Sequence[TopicInfo]] | None = None,
    state: str = "Stable",
    streams: bool = True,
    central: bool = True,
    start: float = 0,
) -> list[Snapshot]:
    """Polls every 10 s up to UNTIL; ``topics_at``: from that second on, these topics."""
    polls = []
    for t in times(start, UNTIL, 10):
        s = t - T0
        now = topics or ()
        for since, later in sorted((topics_at or {}).items()):
            if s >= since:
                now = later
        polled = snapshot(group, t, topics=now, state=state, streams=streams)
        if central:
            polled = dataclasses.replace(polled, cluster_facts=_facts())
        polls.append(polled)
    return polls


def broker_history(
    cluster: str,
    brokers: Sequence[tuple[int, int, int, int]],
    *,
    groups: Sequence[str] = ("app",),
    start: float = 0,
    central: bool = True,
) -> list[Snapshot]:
    """Every group of a poll carries the same cluster facts."""
    return [
        dataclasses.replace(
            snapshot(f"{cluster}-{g}", t, cluster=cluster),
            cluster_facts=_facts(brokers) if central else ClusterFacts(),
        )
        for t in times(start, UNTIL, 10)
        for g in groups
    ]


BIG = [
    *internal("app-over", "repartition", 3, 128),
    *internal("app-over", "changelog", 3, 128),
    TopicInfo("orders", 128, consumed=True, replication_factor=3),  # input: not counted
]

CASES = [
    Case(
        "budget-over-replicas",
        "3 repartition and 3 changelog topics of 128 partitions x RF 3: 2,304 replicas, over "
        "the 2,000 budget for 7 minutes",
        KIND,
        app_history("budget-over-replicas", BIG),
        expect=[Expect("warning")],
        check=all_of(
            evidence(
                internal_topics=6,
                internal_partitions=768,
                internal_replicas=2304,
                repartition_topics=3,
                changelog_topics=3,
                budget_topics=50,
                budget_replicas=2000,
                budget_ratio=1.152,
                over=["replicas"],
                replication_factor_unknown=0,
                by_kind=[
                    {"kind": "changelog", "topics": 3, "partitions": 384, "replicas": 1152},
                    {"kind": "repartition", "topics": 3, "partitions": 384, "replicas": 1152},
                ],
            ),
            explains(
                "application budget-over-replicas has 6 internal topics (3 repartition, "
                "3 changelog) with 768 partitions, 2304 partition replicas: over its budget",
                "(repartition, 128 partitions x 3)",
                "topology.optimization=all",
            ),
        ),
    ),
    Case(
        "budget-over-topics",
        "55 single-partition internal topics: few replicas, but over 50 topics",
        KIND,
        app_history(
            "budget-over-topics",
            [
                *internal("budget-over-topics", "changelog", 40, 1, rf=1),
                *internal("budget-over-topics", "repartition", 15, 1, rf=1),
            ],
        ),
        expect=[Expect("warning")],
        check=evidence(internal_topics=55, internal_replicas=55, over=["topics"]),
    ),
    Case(
        "budget-approaching",
        "1,728 replicas (86 % of 2,000): info, approaching",
        KIND,
        app_history("budget-approaching", internal("budget-approaching", "changelog", 9, 64)),
        expect=[Expect("info")],
        check=all_of(
            evidence(internal_replicas=1728, over=[]),
            explains("86 % of its budget"),
        ),
    ),
    Case(
        "budget-within",
        "a usual application: 4 internal topics of 12 partitions x 3 (144 replicas)",
        KIND,
        app_history(
            "budget-within",
            [
                *internal("budget-within", "repartition", 2, 12),
                *internal("budget-within", "changelog", 2, 12),
            ],
        ),
    ),
    Case(
        "budget-big-input-only",
        "a huge input topic is not the application's own: only internal topics count",
        KIND,
        app_history(
            "budget-big-input-only",
            [
                TopicInfo("clicks", 3000, consumed=True, replication_factor=3),
                *internal("budget-big-input-only", "changelog", 1, 8),
            ],
        ),
    ),
    Case(
        "budget-not-held",
        "a topology over budget deployed 3 minutes ago: not yet held for budget_hold (5m)",
        KIND,
        app_history(
            "budget-not-held",
            internal("budget-not-held", "changelog", 1, 8),
            topics_at={240: internal("budget-not-held", "changelog", 6, 128)},
        ),
    ),
    Case(
        "budget-shrunk",
        "over budget for 5 minutes, then topology.optimization=all dropped the changelogs: "
        "under the approach share now, nothing holds",
        KIND,
        app_history(
            "budget-shrunk",
            BIG,
            topics_at={380: internal("budget-shrunk", "repartition", 3, 128)},
        ),
    ),
    Case(
        "budget-app-down",
        "an application with no member (down, Empty) still owns its internal topics",
        KIND,
        app_history("budget-app-down", BIG, state="Empty"),
        expect=[Expect("warning")],
    ),
    Case(
        "budget-rf-unknown",
        "an older agent without replication factors: partitions count as 1 replica each "
        "(a lower bound), still 2,100 > 2,000",
        KIND,
        app_history(
            "budget-rf-unknown", internal("budget-rf-unknown", "changelog", 3, 700, rf=None)
        ),
        expect=[Expect("warning")],
        check=evidence(internal_replicas=2100, replication_factor_unknown=3),
    ),
    Case(
        "budget-sidecar-view",
        "a sidecar sees only some internal topics (no all-topics view): not judged",
        KIND,
        app_history("budget-sidecar-view", BIG, central=False),
    ),
    Case(
        "budget-plain-consumer",
        "a plain consumer group has no internal topics to budget",
        KIND,
        app_history("budget-plain-consumer", BIG, streams=False),
    ),
]

# Broker cases: the cluster is the case's name; the finding's group is empty.
BROKER_CASES = [
    Case(
        "brokers-over",
        "broker 1 hosts 4,200 replicas (over 4,000), broker 2 3,900 (over 80 %), broker 3 "
        "2,000; three groups per poll carry the same facts: one finding",
        BROKER_KIND,
        broker_history(
            "brokers-over",
            [(1, 4200, 1400, 2100), (2, 3900, 1300, 0), (3, 2000, 700, 0)],
            groups=("a", "b", "c"),
        ),
        expect=[Expect("warning")],
        check=all_of(
            evidence(
                budget_replicas_per_broker=4000,
                brokers_over_budget=1,
                broker_count=3,
                total_topics=200,
                total_replicas=10100,
                brokers=[
                    {
                        "broker": 1,
                        "replicas": 4200,
                        "leaders": 1400,
                        "streams_internal_replicas": 2100,
                        "streams_internal_share": 0.5,
                        "budget_ratio": 1.05,
                    },
                    {
                        "broker": 2,
                        "replicas": 3900,
                        "leaders": 1300,
                        "streams_internal_replicas": 0,
                        "streams_internal_share": 0.0,
                        "budget_ratio": 0.975,
                    },
                ],
            ),
            explains(
                "2 of 3 brokers host partition replicas over the budget of 4000 per broker; "
                "the most: broker 1 with 4200 replicas (1400 leaders), 50 % of them internal",
            ),
        ),
    ),
    Case(
        "brokers-approaching",
        "3,300 replicas on the busiest broker (82 %): info",
        BROKER_KIND,
        broker_history("brokers-approaching", [(1, 3300, 1100, 0), (2, 3000, 1000, 0)]),
        expect=[Expect("info")],
        check=evidence(brokers_over_budget=0),
    ),
    Case(
        "brokers-within",
        "brokers well under the budget",
        BROKER_KIND,
        broker_history("brokers-within", [(1, 1200, 400, 300), (2, 1200, 400, 300)]),
    ),
    Case(
        "brokers-not-held",
        "over budget for only 3 minutes of polls: not yet held",
        BROKER_KIND,
        broker_history("brokers-not-held", [(1, 5000, 1700, 0)], start=240),
    ),
    Case(
        "brokers-sidecar",
        "a sidecar never lists every topic: no broker facts, nothing judged",
        BROKER_KIND,
        broker_history("brokers-sidecar", [(1, 5000, 1700, 0)], central=False),
    ),
]
