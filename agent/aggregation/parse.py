"""Snapshot JSON -> typed rows, and the rows that cannot be trusted set aside.

Input: a DataFrame with a string column ``value`` (one snapshot as JSON) and
``origin`` (where it came from: ``topic/partition@offset`` or a file).
Output: ``parsed`` rows keyed for the detectors (cluster, group, agent, t)
with the whole snapshot as the struct column ``s``, and ``quarantined`` rows
(value, origin, reason) for snapshots that are malformed (not JSON, a field
of the wrong kind, a required field missing) or of a ``schema_version`` newer
than this job's. Neither kind stops the job.
"""

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from agent.aggregation.schema import CORRUPT_COLUMN, snapshot_parse_schema, snapshot_schema
from agent.model.snapshot import SCHEMA_VERSION

MALFORMED = "malformed"
FUTURE_VERSION = "future_version"
QUARANTINE_REASONS = (MALFORMED, FUTURE_VERSION)

# The columns every parsed row carries next to the snapshot struct ``s``.
KEY_COLUMNS = ("cluster", "group", "agent", "t")
# One snapshot's key: cluster, group, agent, poll time.
SnapshotKey = tuple[str, str, str, float]


def parsed_schema() -> T.StructType:
    """The columns of ``Parsed.parsed``: the keys, then the snapshot as ``s``."""
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
class Parsed:
    parsed: DataFrame  # KEY_COLUMNS and ``s``
    quarantined: DataFrame  # value, origin, reason
    # One row per input: ``reason`` (null when fine) and, for fine ones, KEY_COLUMNS.
    classified: DataFrame


@dataclass(frozen=True)
class Inventory:
    """What one batch of input held: the snapshots by series and time, and the rejects."""

    snapshots: list[SnapshotKey]  # distinct
    accepted: int  # snapshot records, duplicates included
    quarantined: dict[str, int]  # reason -> records


def parse_snapshots(raw: DataFrame) -> Parsed:
    version = F.get_json_object("value", "$.schema_version").cast("long")
    decoding = F.struct(
        version.alias("version"),
        F.from_json(
            "value",
            snapshot_parse_schema(),
            {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_COLUMN},
        ).alias("j"),
    )
    # Through a generator (one row in, one out): Spark's optimizer inlines a projected
    # expression into every place that reads it, and the filters and fields below read
    # ``j`` nine times, so a plain select parsed each snapshot nine times (a 206 MB
    # recording: 18 s to parse, 5 s once). A generator's output is computed once per row.
    decoded = raw.select("value", "origin", F.inline(F.array(decoding)))
    reason = (
        F.when(version > SCHEMA_VERSION, F.lit(FUTURE_VERSION))
        .when(_malformed(F.col("j")), F.lit(MALFORMED))
        .otherwise(F.lit(None))
    )
    classified = decoded.withColumn("reason", reason)
    snapshot = F.struct(*[F.col(f"j.{f.name}").alias(f.name) for f in snapshot_schema().fields])
    parsed = classified.where(F.col("reason").isNull()).select(
        F.col("j.cluster").alias("cluster"),
        F.col("j.group.group_id").alias("group"),
        F.col("j.agent.id").alias("agent"),
        F.col("j.poll.started_at").alias("t"),
        snapshot.alias("s"),
    )
    quarantined = classified.where(F.col("reason").isNotNull()).select("value", "origin", "reason")
    keys = classified.select(
        "reason",
        F.when(F.col("reason").isNull(), F.col("j.cluster")).alias("cluster"),
        F.when(F.col("reason").isNull(), F.col("j.group.group_id")).alias("group"),
        F.when(F.col("reason").isNull(), F.col("j.agent.id")).alias("agent"),
        F.when(F.col("reason").isNull(), F.col("j.poll.started_at")).alias("t"),
    )
    return Parsed(parsed, quarantined, keys)


def take_inventory(parsed: Parsed) -> Inventory:
    """One small Spark job: which snapshots arrived, and how many were set aside why."""
    rows = parsed.classified.groupBy(*parsed.classified.columns).count().collect()
    snapshots: list[SnapshotKey] = []
    accepted = 0
    quarantined: dict[str, int] = {}
    for row in rows:
        if row["reason"] is None:
            snapshots.append((row["cluster"], row["group"], row["agent"], row["t"]))
            accepted += row["count"]
        else:
            quarantined[row["reason"]] = quarantined.get(row["reason"], 0) + row["count"]
    return Inventory(sorted(snapshots), accepted, quarantined)


def _malformed(j: Column) -> Column:
    required = [
        j[CORRUPT_COLUMN].isNull(),
        j["schema_version"] >= 1,
        j["cluster"].isNotNull(),
        j["agent"]["id"].isNotNull(),
        j["group"]["group_id"].isNotNull(),
        j["group"]["state"].isNotNull(),
        j["poll"]["started_at"].isNotNull(),
    ]
    fine = required[0]
    for condition in required[1:]:
        fine = fine & condition
    return j.isNull() | ~F.coalesce(fine, F.lit(False))
