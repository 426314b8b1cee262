"""Replay: the detectors over recorded snapshot files, in one batch.

For tests, backfills and incident reviews. The same evaluation as the
streaming job (``evaluate``), at every recorded poll, then hysteresis over
the whole timeline: the result is what the job would have opened and closed,
and when, had it watched live.
"""

from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession

from agent.aggregation.evaluate import evaluate, prepare, snapshot_tables
from agent.aggregation.hysteresis import HysteresisState, advance
from agent.aggregation.parse import parse_snapshots, take_inventory
from agent.aggregation.quarantine import write_quarantined
from agent.aggregation.results import GaugeRow
from agent.aggregation.source import replay_frame
from agent.aggregation.tables import KEYS
from agent.config.schema import DetectorsConfig
from agent.model.findings import Finding, FindingEvent


@dataclass(frozen=True)
class ReplayResult:
    events: list[FindingEvent]  # opens, updates and closes, in event-time order
    open_findings: list[Finding]  # still open at the end of the recording
    gauges: list[GaugeRow]  # at the last poll of each group
    snapshots: int
    quarantined: dict[str, int] = field(default_factory=dict)
    quarantine_file: Path | None = None


def replay(
    spark: SparkSession,
    paths: list[Path],
    params: DetectorsConfig,
    *,
    quarantine_dir: Path | None = None,
) -> ReplayResult:
    parsed = parse_snapshots(replay_frame(spark, paths))
    inventory = take_inventory(parsed)
    sample = None
    if inventory.quarantined and quarantine_dir is not None:
        sample = write_quarantined(parsed.quarantined, quarantine_dir, "replay")
    snapshots = prepare(parsed.parsed)
    evaluations = snapshots.select(*KEYS)
    result = evaluate(snapshot_tables(snapshots, evaluations, params), evaluations, params)
    state, events = advance(
        HysteresisState(),
        result.candidates,
        result.coverage,
        close_after=params.evaluation_window,
        forget_after=params.history_retention,
    )
    return ReplayResult(
        events=events,
        open_findings=list(state.open),
        gauges=result.gauges,
        snapshots=inventory.accepted,
        quarantined=inventory.quarantined,
        quarantine_file=sample,
    )
