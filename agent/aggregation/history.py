"""The bounded recent history the detectors look back over, kept under the checkpoint directory.

Each micro-batch's parsed snapshots are written once, as Parquet, to their
own directory named after the batch id (a re-run of a batch overwrites its
own directory: idempotent), with a small note of the newest event time it
holds. Reading takes the batches up to the current one that still reach
past the horizon (the newest event time minus the retention); trimming
deletes the batches that no longer do. Event time, never the wall clock.
"""

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from agent.aggregation.schema import snapshot_schema


def history_schema() -> T.StructType:
    return T.StructType(
        [
            T.StructField("cluster", T.StringType()),
            T.StructField("group", T.StringType()),
            T.StructField("agent", T.StringType()),
            T.StructField("t", T.DoubleType()),
            T.StructField("s", snapshot_schema()),
        ]
    )


@dataclass(frozen=True)
class _Stored:
    batch_id: int
    path: Path
    newest_t: float


class History:
    def __init__(self, spark: SparkSession, directory: Path) -> None:
        self.spark = spark
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def append(self, parsed: DataFrame, batch_id: int, newest_t: float) -> None:
        path = self._path(batch_id)
        parsed.select(*history_schema().fieldNames()).write.mode("overwrite").parquet(str(path))
        note = self._note(batch_id)
        tmp = note.with_suffix(".tmp")
        tmp.write_text(json.dumps({"batch_id": batch_id, "newest_t": newest_t}))
        tmp.replace(note)

    def read(self, upto_batch: int, horizon: float) -> DataFrame:
        paths = [
            str(s.path)
            for s in self._stored()
            if s.batch_id <= upto_batch and s.newest_t >= horizon and s.path.is_dir()
        ]
        if not paths:
            return self.spark.createDataFrame([], history_schema())
        return (
            self.spark.read.schema(history_schema())
            .parquet(*paths)
            .where(F.col("t") >= F.lit(horizon))
        )

    def trim(self, horizon: float) -> int:
        """Delete the batches whose newest snapshot is older than ``horizon``; how many went."""
        gone = 0
        for stored in self._stored():
            if stored.newest_t < horizon:
                shutil.rmtree(stored.path, ignore_errors=True)
                self._note(stored.batch_id).unlink(missing_ok=True)
                gone += 1
        return gone

    def _path(self, batch_id: int) -> Path:
        return self.directory / f"batch-{batch_id:012d}"

    def _note(self, batch_id: int) -> Path:
        return self.directory / f"batch-{batch_id:012d}.json"

    def _stored(self) -> list[_Stored]:
        stored = []
        for note in sorted(self.directory.glob("batch-*.json")):
            try:
                meta = json.loads(note.read_text())
                batch_id = int(meta["batch_id"])
                stored.append(_Stored(batch_id, self._path(batch_id), float(meta["newest_t"])))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a note torn by a crash: its batch is re-written on re-run
        return stored
