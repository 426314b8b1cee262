"""The job's view of every group, kept by the driver between micro-batches (no Spark).

The stateful operator reports, per bucket and batch, what happened to each
group that got a poll (``bucket.GroupReport``). The board folds those reports
into what /metrics shows and what the findings topic needs: every group's
open findings, the gauges of each series' newest poll, the newest poll time
per cluster, the snapshots counted and set aside. It also judges what no
single group can: the rules on facts every group of a cluster shares
(``rules.CLUSTER_RULES``, each broker's replicas), over a series per
(cluster, agent) of those facts, with the same windows and hysteresis as a
group's (their findings' group is empty).

The board's lasting part (open findings, the cluster rules' state, newest
times) is saved with every micro-batch (``BoardState``), so a restarted job
shows the same findings before its first batch and judges the cluster rules
on from where it stopped.
"""

import base64
from collections import Counter
from dataclasses import dataclass, field

from agent.aggregation.judging.bucket import BucketOutput, ClusterPoll, GroupReport, SeriesGauges
from agent.aggregation.judging.facts import Poll
from agent.aggregation.judging.group import GroupState, step
from agent.aggregation.judging.results import TASK_RATE, GaugeRow
from agent.aggregation.judging.rules import CLUSTER_RULES
from agent.aggregation.judging.rules.base import Gauge
from agent.aggregation.judging.stored_bucket import GroupKey, StoredBucket, decode, encode
from agent.config.schema import DetectorsConfig
from agent.model.findings import Finding, FindingEvent
from agent.model.records import from_plain, to_plain


@dataclass
class BatchTally:
    """What one micro-batch held."""

    accepted: int = 0
    judged: int = 0
    late: int = 0
    duplicates: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    windows_dropped: int = 0  # groups whose windows were of another format
    gone: int = 0  # groups forgotten: not polled for the look-back


@dataclass(frozen=True)
class GroupTaskRates:
    """One group's tasks' rates (records/s) at one poll."""

    cluster: str
    group: str
    t: float
    rates: dict[str, float]  # task id -> records/s


@dataclass
class Board:
    open: dict[GroupKey, tuple[Finding, ...]] = field(default_factory=dict)
    # Per group, each series' (agent's) gauges; and the group's rows as /metrics shows
    # them, made again only for the groups a batch reported (``gauge_rows``).
    gauges: dict[GroupKey, dict[str, SeriesGauges]] = field(default_factory=dict)
    _rows: dict[GroupKey, list[GaugeRow]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    newest: dict[str, float] = field(default_factory=dict)  # per cluster
    clusters: dict[str, GroupState] = field(default_factory=dict)

    def apply(
        self, outputs: list[BucketOutput], params: DetectorsConfig
    ) -> tuple[list[FindingEvent], BatchTally]:
        """Fold one micro-batch's outputs in; return its events (in event-time order)."""
        tally = BatchTally()
        events: list[FindingEvent] = []
        cluster_polls: dict[tuple[str, str, float], ClusterPoll] = {}
        for out in outputs:
            tally.accepted += out.accepted
            tally.rejected.update(out.rejected_counts)
            for report in out.reports:
                events += report.events
                self._fold(report, tally)
            for cp in out.cluster_polls:
                cluster_polls.setdefault((cp.cluster, cp.agent, cp.t), cp)
        events += self._judge_clusters([cluster_polls[k] for k in sorted(cluster_polls)], params)
        events.sort(key=lambda e: (e.at, e.finding.key, e.event))
        return events, tally

    def _fold(self, report: GroupReport, tally: BatchTally) -> None:
        key = (report.cluster, report.group)
        tally.judged += report.judged
        tally.late += report.late
        tally.duplicates += report.duplicates
        tally.windows_dropped += report.windows_dropped
        if report.gone:
            tally.gone += 1
            self.open.pop(key, None)
            self.gauges.pop(key, None)
            self._rows.pop(key, None)
            return
        if report.open_findings:
            self.open[key] = report.open_findings
        else:
            self.open.pop(key, None)
        if report.gauges:
            series = self.gauges.setdefault(key, {})
            for g in report.gauges:
                series[g.agent] = g
            self._rows.pop(key, None)
        if report.newest is not None:
            self.newest[report.cluster] = max(
                self.newest.get(report.cluster, report.newest), report.newest
            )

    def _judge_clusters(
        self, polls: list[ClusterPoll], params: DetectorsConfig
    ) -> list[FindingEvent]:
        by_cluster: dict[str, list[tuple[str, Poll]]] = {}
        for cp in polls:
            by_cluster.setdefault(cp.cluster, []).append((cp.agent, _as_poll(cp)))
        events: list[FindingEvent] = []
        for cluster, series in sorted(by_cluster.items()):
            state = self.clusters.setdefault(cluster, GroupState())
            outcome = step(state, series, params, cluster=cluster, group="", rules=CLUSTER_RULES)
            events += outcome.events
            if outcome.open_findings:
                self.open[(cluster, "")] = outcome.open_findings
            else:
                self.open.pop((cluster, ""), None)
        return events

    def open_findings(self) -> tuple[Finding, ...]:
        return tuple(f for key in sorted(self.open) for f in self.open[key])

    def gauge_rows(self) -> list[GaugeRow]:
        """Each group's gauges: per label set, a configured value (priority 0) before a
        guess, then the newest series' view (several agents may watch one group)."""
        rows: list[GaugeRow] = []
        for key, series in self.gauges.items():
            group_rows = self._rows.get(key)
            if group_rows is None:
                group_rows = self._rows[key] = _group_rows(key, series)
            rows += group_rows
        return rows

    def task_rates(self) -> list[GroupTaskRates]:
        """Each Kafka Streams group's task rates at its newest series' newest judged poll
        that had them, sorted by group."""
        found = []
        for key in sorted(self.gauges):
            newest = sorted(self.gauges[key].values(), key=lambda s: (-s.t, s.agent))
            for series in newest:
                rates = {
                    g.task: g.value
                    for g in series.gauges
                    if g.metric == TASK_RATE and g.task is not None
                }
                if rates:
                    found.append(GroupTaskRates(key[0], key[1], series.t, rates))
                    break
        return found

    # -- what survives a restart ---------------------------------------------------------

    def saved(self) -> dict[str, object]:
        stored = encode({(cluster, ""): state for cluster, state in self.clusters.items()})
        return {
            "open": [to_plain(f) for f in self.open_findings()],
            "newest": dict(sorted(self.newest.items())),
            "clusters": {
                "windows_format": stored.windows_format,
                "hysteresis": stored.hysteresis,
                "windows": base64.b64encode(stored.windows).decode(),
            },
        }

    @classmethod
    def restored(cls, plain: dict[str, object]) -> "Board":
        board = cls()
        for f in plain.get("open", []):  # type: ignore[attr-defined]
            finding = from_plain(Finding, f)
            key = (finding.cluster, finding.group)
            board.open[key] = (*board.open.get(key, ()), finding)
        board.newest = {str(k): float(v) for k, v in plain.get("newest", {}).items()}  # type: ignore[attr-defined]
        clusters = plain.get("clusters")
        if isinstance(clusters, dict):
            states, _dropped = decode(
                StoredBucket(
                    int(clusters["windows_format"]),
                    str(clusters["hysteresis"]),
                    base64.b64decode(clusters["windows"]),
                )
            )
            for state in states.values():
                state.thawed.clear()  # kept across batches here: nothing to pin
            board.clusters = {cluster: state for (cluster, _group), state in states.items()}
        return board


def _group_rows(key: GroupKey, series: dict[str, SeriesGauges]) -> list[GaugeRow]:
    cluster, group = key
    best: dict[tuple[object, ...], tuple[tuple[int, float, str], Gauge]] = {}
    for agent, newest in series.items():
        for g in newest.gauges:
            labels = (g.metric, *_labels(g))
            rank = (g.priority, -newest.t, agent)
            if labels not in best or rank < best[labels][0]:
                best[labels] = (rank, g)
    return [gauge_row(g, cluster, group) for _rank, g in best.values()]


def gauge_row(gauge: Gauge, cluster: str, group: str) -> GaugeRow:
    """A rule's gauge as the job exposes it: with its group's labels."""
    return GaugeRow(gauge.metric, cluster, group, gauge.value, *_labels(gauge))


def _labels(
    g: Gauge,
) -> tuple[str | None, int | None, str | None, str | None, int | None, str | None, str | None]:
    """``GAUGE_LABELS`` of a gauge, in that order."""
    return (g.process, g.thread, g.task, g.topic, g.partition, g.source, g.status)


def _as_poll(cp: ClusterPoll) -> Poll:
    """A cluster's shared facts as a poll of the cluster's pseudo-group."""
    return Poll(
        t=cp.t,
        sequence=0,
        agent_mode="central",
        state="Stable",
        group_type="cluster",
        is_streams=False,
        generation=None,
        group_epoch=None,
        rebalances=(),
        members=(),
        partitions=None,
        topics=(),
        changelog_ends=None,
        subtopologies=(),
        max_message_bytes=None,
        cluster_totals=cp.totals,
        brokers=cp.brokers,
        sidecar=None,
        errors=(),
        lag_total=0,
        lag_partitions=0,
    )
