"""The bounded recent history the detectors look back over, kept under the checkpoint directory.

What is kept is not the snapshots but the tables the detectors read
(``tables.build_tables``): each is a function of one snapshot, so it is built
once, when its snapshot arrives, instead of at every micro-batch from twenty
minutes of nested snapshots (docs/benchmarks.md: at 20,000 partitions that
taking apart was about 20 s of every batch).

Each micro-batch's tables are written once, as one Parquet dataset
partitioned by table name, to a directory named after the batch id (a re-run
of a batch overwrites its own directory: idempotent), with a small note: the
snapshots it holds and their oldest and newest event times. A snapshot
already stored by an earlier batch (delivered twice) is not stored again.
Reading takes, per table, the batches up to the current one that reach past
that table's horizon; trimming deletes the batches that no longer reach the
history's. Event time, never the wall clock.
"""

import json
import logging
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import reduce
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from agent.aggregation.parse import SnapshotKey
from agent.aggregation.tables import TABLE_NAMES, Tables, empty_tables

log = logging.getLogger(__name__)

# Written into every note; batches without it (an older ksmon kept whole snapshots) are
# not read, and go at the next trim.
LAYOUT = 2


@dataclass(frozen=True)
class _Stored:
    batch_id: int
    path: Path
    oldest_t: float
    newest_t: float
    keys: frozenset[SnapshotKey]


class History:
    def __init__(self, spark: SparkSession, directory: Path) -> None:
        self.spark = spark
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._schemas = {name: df.schema for name, df in empty_tables(spark).named().items()}
        self._old_layout_logged = False

    def stored_before(self, batch_id: int) -> set[SnapshotKey]:
        """The snapshots earlier batches hold (a re-run batch does not count its own)."""
        return {k for s in self._stored() if s.batch_id < batch_id for k in s.keys}

    def append(self, tables: Tables, batch_id: int, keys: Iterable[SnapshotKey]) -> None:
        """Store the tables of one batch's snapshots (``keys``: which, none held before)."""
        keys = sorted(set(keys))
        if not keys:
            return
        path = self._path(batch_id)
        self._one_frame(tables).write.mode("overwrite").partitionBy("table").parquet(str(path))
        note = self._note(batch_id)
        tmp = note.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {
                    "layout": LAYOUT,
                    "batch_id": batch_id,
                    "oldest_t": min(k[3] for k in keys),
                    "newest_t": max(k[3] for k in keys),
                    "keys": [list(k) for k in keys],
                }
            )
        )
        tmp.replace(note)

    def read(self, upto_batch: int, horizon: float, since: Mapping[str, float]) -> Tables:
        """Every table from ``horizon`` on, or from ``since[name]`` where given (later)."""
        stored = [s for s in self._stored() if s.batch_id <= upto_batch]
        frames = {}
        for name in TABLE_NAMES:
            start = max(horizon, since.get(name, horizon))
            paths = [
                str(s.path / f"table={name}")
                for s in stored
                if s.newest_t >= start and (s.path / f"table={name}").is_dir()
            ]
            schema = self._schemas[name]
            if not paths:
                frames[name] = self.spark.createDataFrame([], schema)
                continue
            frames[name] = (
                self.spark.read.schema(T.StructType([T.StructField(name, schema)]))
                .parquet(*paths)
                .select(f"{name}.*")
                .where(F.col("t") >= F.lit(start))
            )
        return Tables(**frames)

    def trim(self, horizon: float) -> int:
        """Delete the batches whose newest snapshot is older than ``horizon``, and any an
        older ksmon left; how many went."""
        gone = 0
        for stored in self._stored(include_old_layout=True):
            if stored.newest_t < horizon:
                shutil.rmtree(stored.path, ignore_errors=True)
                self._note(stored.batch_id).unlink(missing_ok=True)
                gone += 1
        return gone

    # -- layout --------------------------------------------------------------------------

    def _one_frame(self, tables: Tables) -> DataFrame:
        """All tables as one frame (one Spark job to write): a ``table`` column, and per
        table a struct column that holds its rows and is null in the others'."""
        named = tables.named()
        frames = []
        for name, df in named.items():
            frames.append(
                df.select(
                    F.lit(name).alias("table"),
                    *[
                        (
                            F.struct(*[F.col(c) for c in df.columns])
                            if other == name
                            else F.lit(None).cast(self._schemas[other])
                        ).alias(other)
                        for other in named
                    ],
                )
            )
        return reduce(DataFrame.unionByName, frames)

    def _path(self, batch_id: int) -> Path:
        return self.directory / f"batch-{batch_id:012d}"

    def _note(self, batch_id: int) -> Path:
        return self.directory / f"batch-{batch_id:012d}.json"

    def _stored(self, *, include_old_layout: bool = False) -> list[_Stored]:
        stored = []
        for note in sorted(self.directory.glob("batch-*.json")):
            try:
                meta = json.loads(note.read_text())
                batch_id = int(meta["batch_id"])
                newest_t = float(meta["newest_t"])
                if meta.get("layout") != LAYOUT:
                    if include_old_layout:
                        stored.append(
                            _Stored(batch_id, self._path(batch_id), newest_t, -1.0, frozenset())
                        )
                    elif not self._old_layout_logged:
                        self._old_layout_logged = True
                        log.warning(
                            "history in %s was written by an older ksmon and is not read; "
                            "the detectors' look-back fills again from new snapshots",
                            self.directory,
                        )
                    continue
                keys = frozenset((str(c), str(g), str(a), float(t)) for c, g, a, t in meta["keys"])
                stored.append(
                    _Stored(batch_id, self._path(batch_id), float(meta["oldest_t"]), newest_t, keys)
                )
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a note torn by a crash: its batch is re-written on re-run
        return stored
