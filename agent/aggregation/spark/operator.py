"""The stateful operator: snapshots keyed by a bucket of groups, each bucket's groups
judged in Python by ``bucket.judge_records`` with their state in Spark's state store.

Spark does what it is good at: reading the source, keying and partitioning
the records, keeping each bucket's state (RocksDB, checkpointed with every
micro-batch), re-running a batch after a failure from the state of the one
before, and spreading buckets over executors. Python does the rest, per
bucket: decode the new snapshots, step each group's windows and hysteresis,
report. One key per bucket of groups, not per group: each key costs a round
trip between the JVM and the Python worker and an Arrow conversion, which
cost more than judging a group (docs/benchmarks.md).

Groups that stop being polled are forgotten through event-time timers: the
watermark trails the newest poll time by ``DetectorsConfig.history_retention``,
so a group whose newest poll falls behind it closes its findings and drops
its state (``bucket.expire``); snapshots that old when they arrive are
dropped by Spark (counted in ``ksmon_job_snapshots_late_total``).
"""

import functools
import gc
import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)

from agent.aggregation.judging.bucket import BucketOutput, expire, judge_records
from agent.aggregation.judging.group import GroupState
from agent.aggregation.judging.stored_bucket import GroupKey, StoredBucket, decode, encode
from agent.config.schema import DetectorsConfig

if TYPE_CHECKING:
    import pandas as pd

STORED_SCHEMA = T.StructType(
    [
        T.StructField("windows_format", T.IntegerType()),
        T.StructField("hysteresis", T.StringType()),
        T.StructField("windows", T.BinaryType()),
    ]
)
# One row per bucket and micro-batch: its ``BucketOutput``, pickled (the driver reads it).
OUTPUT_SCHEMA = T.StructType([T.StructField("output", T.BinaryType())])

_LIGHT_SCHEMA = T.StructType(
    [
        T.StructField("cluster", T.StringType()),
        T.StructField("group", T.StructType([T.StructField("group_id", T.StringType())])),
        T.StructField("poll", T.StructType([T.StructField("started_at", T.DoubleType())])),
    ]
)


def keyed(snapshots: DataFrame, keys: Sequence[int], params: DetectorsConfig) -> DataFrame:
    """``snapshots`` (``value``, ``origin``) with their bucket's key (``keys[bucket]``, in
    the column ``bucket``) and poll time, read from the JSON in the JVM with only the three
    fields the bucket needs (the snapshot itself is decoded once, in Python). A record
    those fields cannot be read from goes to bucket 0, whose Python decoding sets it aside
    with the reason."""
    light = F.from_json("value", _LIGHT_SCHEMA)
    name = F.concat_ws("/", light["cluster"], light["group"]["group_id"])
    bucket: Column = F.coalesce(
        F.pmod(F.crc32(F.encode(name, "UTF-8")), F.lit(len(keys))), F.lit(0)
    )
    key = F.element_at(F.array(*[F.lit(k) for k in keys]), bucket.cast("int") + 1)
    return (
        snapshots.select(
            key.cast("int").alias("bucket"),
            "value",
            "origin",
            F.timestamp_seconds(light["poll"]["started_at"]).alias("polled_at"),
        )
        # Snapshots older than the look-back behind the newest are of no use to any rule.
        .withWatermark("polled_at", f"{round(params.history_retention * 1000)} milliseconds")
    )


def judged(snapshots: DataFrame, keys: Sequence[int], params: DetectorsConfig) -> DataFrame:
    """The stateful operator over ``keyed`` snapshots: one ``OUTPUT_SCHEMA`` row per
    bucket that got snapshots (or whose timer fired) in a micro-batch. ``keys``: each
    bucket's key (``Checkpoint.keys``)."""
    return (
        keyed(snapshots, keys, params)
        .groupBy("bucket")
        .transformWithStateInPandas(
            statefulProcessor=BucketProcessor(params),
            outputStructType=OUTPUT_SCHEMA,
            outputMode="Append",
            timeMode="EventTime",
        )
    )


def _without_gc(
    handler: Callable[..., Iterator["pd.DataFrame"]],
) -> Callable[..., Iterator["pd.DataFrame"]]:
    """A bucket's windows are tens of thousands of small tuples, unpickled, judged and
    pickled again in one go: Python's cycle collector, triggered by so many allocations,
    took most of the time (see docs/benchmarks.md). None of them form cycles, and
    reference counting frees them all."""

    @functools.wraps(handler)
    def run(*args: Any, **kwargs: Any) -> Iterator["pd.DataFrame"]:  # noqa: ANN401
        enabled = gc.isenabled()
        gc.disable()
        try:
            yield from handler(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return run


class BucketProcessor(StatefulProcessor):
    """Runs in Spark's Python workers, one bucket key at a time."""

    def __init__(self, params: DetectorsConfig) -> None:
        self.params = params

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.state = handle.getValueState("groups", STORED_SCHEMA)

    @_without_gc
    def handleInputRows(  # noqa: N802 - pyspark's name
        self,
        key: Any,  # noqa: ANN401
        rows: Iterator["pd.DataFrame"],
        timerValues: TimerValues,  # noqa: N803
    ) -> Iterator["pd.DataFrame"]:
        groups, dropped = self._load()
        records = (
            (value, origin)
            for frame in rows
            for value, origin in zip(frame["value"], frame["origin"], strict=True)
        )
        out = judge_records(groups, records, self.params, windows_dropped=dropped)
        self._save(groups)
        yield _frame(out)

    @_without_gc
    def handleExpiredTimer(  # noqa: N802 - pyspark's name
        self,
        key: Any,  # noqa: ANN401
        timerValues: TimerValues,  # noqa: N803
        expiredTimerInfo: ExpiredTimerInfo,  # noqa: N803
    ) -> Iterator["pd.DataFrame"]:
        groups, _dropped = self._load()
        watermark = timerValues.getCurrentWatermarkInMs() / 1000
        out = BucketOutput(reports=expire(groups, watermark))
        self._save(groups)
        if out.reports:
            yield _frame(out)

    def close(self) -> None:
        pass

    def _load(self) -> tuple[dict[GroupKey, GroupState], bool]:
        if not self.state.exists():
            return {}, False
        stored = self.state.get()
        assert stored is not None  # noqa: S101 - it exists
        return decode(StoredBucket(int(stored[0]), str(stored[1]), bytes(stored[2])))

    def _save(self, groups: dict[GroupKey, GroupState]) -> None:
        """Keep the bucket's groups, and one timer at its oldest group's newest poll: it
        fires once the watermark passes it, that is once that group was not polled for
        the look-back while others were."""
        for timer in list(self.handle.listTimers()):
            self.handle.deleteTimer(timer)
        if not groups:
            self.state.clear()
            return
        self.state.update(tuple(encode(groups)))
        oldest = min((s.newest for s in groups.values() if s.newest is not None), default=None)
        if oldest is not None:
            self.handle.registerTimer(int(oldest * 1000) + 1)


def _frame(out: BucketOutput) -> "pd.DataFrame":
    import pandas as pd  # noqa: PLC0415 - only in Spark's Python workers

    return pd.DataFrame({"output": [pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)]})


def outputs(rows: list[Any]) -> list[BucketOutput]:
    """The driver's side: a micro-batch's collected rows, unpickled."""
    return [pickle.loads(row["output"]) for row in rows]  # noqa: S301 - our own operator's
