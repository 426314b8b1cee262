"""Replay: the rules over recorded snapshot files, in one batch, without Spark.

For tests, backfills and incident reviews. The same code as the streaming
job's stateful operator (``bucket.judge_records``: facts, windows, every rule
at every recorded poll, hysteresis) and its board (the cluster rules), over
every recorded snapshot at once: the result is what the job would have
opened and closed, and when, had it watched live.

Recorded files are spool files or any JSON-lines files (``.jsonl``,
``.json``, ``.ndjson``), gzipped or not (``.gz``); a directory stands for the
recordings inside it.
"""

import gzip
import multiprocessing
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agent.aggregation.board import Board
from agent.aggregation.bucket import BucketOutput, judge_records
from agent.aggregation.quarantine import write_rejected
from agent.aggregation.results import GaugeRow
from agent.config.schema import DetectorsConfig
from agent.errors import ConfigError
from agent.model.findings import Finding, FindingEvent
from agent.transport.spool import DONE

RECORDING_SUFFIXES = tuple(f"{s}{gz}" for s in (DONE, ".json", ".ndjson") for gz in ("", ".gz"))


@dataclass(frozen=True)
class ReplayResult:
    events: list[FindingEvent]  # opens, updates and closes, in event-time order
    open_findings: list[Finding]  # still open at the end of the recording
    gauges: list[GaugeRow]  # at the last poll of each group
    snapshots: int
    quarantined: dict[str, int] = field(default_factory=dict)
    quarantine_file: Path | None = None


def recorded_files(paths: Iterable[Path]) -> list[Path]:
    """The files a replay reads: each file given, and the recordings inside each directory."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(
                p for p in path.rglob("*") if p.is_file() and p.name.endswith(RECORDING_SUFFIXES)
            )
            if not found:
                raise ConfigError(
                    f"{path}: no recorded snapshots in this directory (expected files ending in "
                    f"{', '.join(RECORDING_SUFFIXES)})"
                )
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise ConfigError(f"{path}: no such file or directory to replay")
    return files


def recorded_lines(files: Iterable[Path]) -> Iterator[tuple[str, str]]:
    """Every non-blank line of ``files``, with where it came from (``file:line``)."""
    for path in files:
        opener = gzip.open if path.name.endswith(".gz") else open
        try:
            with opener(path, "rt", encoding="utf-8", errors="replace") as lines:
                for number, line in enumerate(lines, start=1):
                    if line.strip():
                        yield line, f"{path}:{number}"
        except OSError as e:
            raise ConfigError(f"{path}: cannot read this recording: {e}") from e


def replay(
    paths: list[Path],
    params: DetectorsConfig,
    *,
    quarantine_dir: Path | None = None,
    workers: int = 1,
) -> ReplayResult:
    """Replay ``paths``. With ``workers`` > 1 the groups are shared out among that many
    processes (each reads every file and judges its share of the groups), as the
    streaming job shares them out among its buckets: the same events, sooner."""
    files = recorded_files(paths)
    if workers > 1:
        context = multiprocessing.get_context("spawn")
        with context.Pool(workers) as pool:
            outputs = pool.map(_judge_share, [(files, params, i, workers) for i in range(workers)])
    else:
        outputs = [judge_records({}, recorded_lines(files), params)]
    board = Board()
    events, tally = board.apply(outputs, params)
    rejected = [r for out in outputs for r in out.rejected]
    sample = None
    if rejected and quarantine_dir is not None:
        sample = write_rejected(rejected, quarantine_dir, "replay")
    return ReplayResult(
        events=events,
        open_findings=list(board.open_findings()),
        gauges=board.gauge_rows(),
        snapshots=tally.accepted,
        quarantined=dict(tally.rejected),
        quarantine_file=sample,
    )


# The cluster and group of a snapshot line, found without decoding it (the key fields
# come first, as the agent writes them); a line where they are not found is the first
# share's, whose decoding sets it aside if it is broken.
_CLUSTER = re.compile(r'"cluster":\s*"((?:[^"\\]|\\.)*)"')
_GROUP = re.compile(r'"group_id":\s*"((?:[^"\\]|\\.)*)"')


def _share_of(line: str, shares: int) -> int:
    cluster, group = _CLUSTER.search(line), _GROUP.search(line)
    if cluster is None or group is None:
        return 0
    return zlib.crc32(f"{cluster.group(1)}/{group.group(1)}".encode()) % shares


def _judge_share(job: tuple[list[Path], DetectorsConfig, int, int]) -> BucketOutput:
    files, params, index, shares = job
    mine = (
        (line, origin) for line, origin in recorded_lines(files) if _share_of(line, shares) == index
    )
    return judge_records({}, mine, params)
