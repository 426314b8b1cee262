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

import gc
import gzip
import itertools
import multiprocessing
import re
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from agent.aggregation.judging.board import Board
from agent.aggregation.judging.bucket import BucketOutput, judge_records
from agent.aggregation.judging.results import GaugeRow
from agent.aggregation.outputs.quarantine import write_rejected
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
                    if line and not line.isspace():  # not blank (without copying the line)
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
        outputs = _shared_out(files, params, workers)
    else:
        with fewer_collections():
            outputs = [judge_records({}, recorded_lines(files), params)]
    board = Board()
    with fewer_collections():
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


# Snapshots read to weigh the shares (a recording's first ones: every group of a fleet
# recorded poll by poll).
WEIGHED_LINES = 2000

# A replay builds millions of small tuples (facts, windows) that live as long as their
# window and hold no reference cycles. At CPython's default thresholds the cycle collector
# scans all of them again whenever the survivors have grown by a quarter, a large share
# of a replay's time (docs/benchmarks.md). While a replay runs, collections are rarer.
GC_THRESHOLDS = (100_000, 50, 100)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """The cycle collector at ``GC_THRESHOLDS`` within, as it was after."""
    before = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


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


def _shared_out(files: list[Path], params: DetectorsConfig, workers: int) -> list[BucketOutput]:
    """Each share's output, in share order: this process judges the heaviest share (the
    most bytes of snapshots among the first ``WEIGHED_LINES``), ``workers - 1`` spawned
    ones the others. They start first, and take a while to import the rules, which this
    one spends weighing the shares."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers - 1, initializer=_ready) as pool:
        weights = [0] * workers
        for line, _ in itertools.islice(recorded_lines(files), WEIGHED_LINES):
            weights[_share_of(line, workers)] += len(line)
        mine = max(range(workers), key=lambda i: (weights[i], -i))
        others = [i for i in range(workers) if i != mine]
        theirs = pool.map_async(_judge_share, [(files, params, i, workers) for i in others])
        outputs = {mine: _judge_share((files, params, mine, workers))}
        outputs.update(zip(others, theirs.get(), strict=True))
    return [outputs[i] for i in range(workers)]


def _ready() -> None:
    """A worker's start: importing this module (to run it) imports the rules."""


def _judge_share(job: tuple[list[Path], DetectorsConfig, int, int]) -> BucketOutput:
    files, params, index, shares = job
    mine = (
        (line, origin) for line, origin in recorded_lines(files) if _share_of(line, shares) == index
    )
    with fewer_collections():
        return judge_records({}, mine, params)
