"""A job's view for the JSON API's unit tests: two clusters, groups in every kind of
status, findings of groups and of a cluster."""

from agent.aggregation.judging import results as r
from agent.aggregation.judging.results import GaugeRow
from agent.aggregation.judging.rules.consumer_status import STATUSES
from agent.aggregation.outputs.latest import LatestView
from agent.model.findings import Finding, FindingEvent, FindingSubject

T = 1_700_000_000.0


def finding(
    kind: str,
    severity: str,
    cluster: str,
    group: str,
    subject: FindingSubject,
    explanation: str = "x",
    evidence: dict[str, object] | None = None,
) -> Finding:
    return Finding(kind, severity, cluster, group, subject, T, T + 60, explanation, evidence or {})


HOT = finding(
    "hot_partitions_colocated",
    "warning",
    "prod",
    "orders-app",
    FindingSubject(process="pA", thread=1),
    "two hot tasks on one thread; move task 0_1 to pB",
    {
        "hot_tasks": ["0_0", "0_1"],
        "suggested_move": {"unit": "task", "task": "0_1", "to_process": "pB"},
    },
)
STALLED = finding(
    "consumer_status",
    "critical",
    "prod",
    "billing",
    FindingSubject(),
    "group billing has 1 member yet committed nothing on 1 partition",
    {"status": "stalled", "eta_seconds": float("inf"), "ratio": float("nan")},
)
BUDGET = finding(
    "broker_partition_budget",
    "info",
    "prod",
    "",
    FindingSubject(),
    "broker 1 hosts 3900 partition replicas",
)
SKEW = finding(
    "partition_skew", "info", "staging", "clicks", FindingSubject(topic="clicks", partition=2)
)
OPEN = (HOT, STALLED, BUDGET, SKEW)


def status_rows(cluster: str, group: str, status: str, counts: tuple[int, ...]) -> list[GaugeRow]:
    """consumer_status's gauges of a group: its status, and its partitions in each."""
    return [
        *(GaugeRow(r.GROUP_STATUS, cluster, group, float(s == status), status=s) for s in STATUSES),
        *(
            GaugeRow(r.GROUP_STATUS_PARTITIONS, cluster, group, float(n), status=s)
            for s, n in zip(STATUSES, counts, strict=True)
        ),
    ]


def partition_row(
    cluster: str, group: str, topic: str, partition: int, status: str, lag: int
) -> GaugeRow:
    return GaugeRow(
        r.PARTITION_STATUS, cluster, group, float(lag), topic=topic, partition=partition,
        status=status,
    )  # fmt: skip


GAUGES = (
    # STATUSES: stalled, stopped, rewound, lagging, ok
    *status_rows("prod", "billing", "stalled", (1, 0, 0, 2, 3)),
    partition_row("prod", "billing", "payments", 4, "lagging", 120),
    partition_row("prod", "billing", "payments", 1, "stalled", 17),
    partition_row("prod", "billing", "payments", 0, "lagging", 900),
    *status_rows("prod", "orders-app", "ok", (0, 0, 0, 0, 6)),
    GaugeRow(r.THREAD_LOAD, "prod", "orders-app", 130.0, process="pA", thread=1),
    # A group with gauges but no status yet (its snapshot had errors).
    GaugeRow(r.REBALANCES, "prod", "shipping", 2.0),
    *status_rows("staging", "clicks", "rewound", (0, 0, 1, 0, 2)),
    partition_row("staging", "clicks", "clicks", 2, "rewound", 0),
)


def api_state() -> LatestView:
    state = LatestView()
    state.started()
    state.batch_done(
        at=T + 65,
        seconds=2.5,
        open_findings=OPEN,
        gauges=GAUGES,
        events=[FindingEvent.of("open", T, f) for f in OPEN],
        processed=42,
        quarantined={},
        late=0,
        not_judged=0,
        newest={"prod": T + 60, "staging": T + 55},
    )
    return state
