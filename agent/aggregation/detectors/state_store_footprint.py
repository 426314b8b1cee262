"""state_store_footprint (warning): an instance's RocksDB stores, at their configured
memory, near its container's memory limit; or a changelog that compaction does not bound.

**Memory.** Kafka Streams opens one RocksDB per key-value store per task, and one per
segment of a window or session store (``AbstractSegments``: a segment is a directory
``<store>.<start ms>`` holding its own RocksDB). Each RocksDB instance, without a
``RocksDBConfigSetter``, gets its own block cache (``RocksDBStore``: an ``LRUCache`` of
50 MiB) and up to 3 memtables of 16 MiB: about 98 MiB off-heap, outside the JVM heap
but inside the container's limit (seed 002, Confluent's sizing guide). Standby tasks
open their stores too. So per instance (process)::

    estimate = (RocksDB instances over its held tasks' stores) x per-instance bytes

with per-instance bytes = ``rocksdb_block_cache_bytes`` + ``rocksdb_write_buffer_bytes`` x
``rocksdb_write_buffers``, or, when a ``RocksDBConfigSetter`` bounds every store to one
shared cache and write buffer manager (``rocksdb_bounded_memory_bytes``), that bound.
It is a capacity, not a measurement: a cache fills only as data is read, a memtable
only as data is written; index and filter blocks (outside the block cache by default)
come on top and grow with the data. The stores are counted from the sidecar's reading
of the state directory (the tasks' ``rocksdb/<store>/`` and ``<store>/<store>.<seg>/``
directories), over the tasks the instance holds (active, standby, warm-up) per the
group's assignment: task directories left over from an earlier assignment hold no
open RocksDB. The limit is the app container's (``SidecarInfo.memory_limit_bytes``).

The rule judges, at each evaluation of any series of the group, each instance's newest
sidecar reading from the last two evaluation windows that has a readable state
directory, a decoded assignment and a known limit; it holds when the estimate is at
least ``store_footprint_ratio`` of the limit at every such reading for
``evaluation_window``. The estimate is also a gauge, limit or not.

**Changelog growth** (``changelog_growth_window`` > 0). A compact-only changelog
(``cleanup.policy=compact``: key-value stores) is bounded only by its number of keys:
a store that never deletes keys (no tombstones, no TTL of its own) grows, with its
changelog, for ever (seed 002, "State Stores don't have TTL"). The topic's size on
disk (``TopicInfo.size_bytes``, DescribeLogDirs over partitions and replicas) says so
honestly only over a long look-back: the log cleaner never compacts the active
segment, so any busy changelog grows between segment rolls. The rule holds for a
changelog whose size never shrank over the look-back (no cleaning reclaimed anything),
spans at least 90% of it in at least three polls, rises on a least-squares line, and
grew by at least ``changelog_growth_min_ratio`` of its size at the start and
``changelog_growth_min_bytes``. Windowed and session changelogs (``compact,delete``)
have a retention and are not judged.
"""

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from agent.aggregation.candidates import Context, Detection, candidates, rounded
from agent.aggregation.tables import KEYS
from agent.aggregation.windows import (
    by_series,
    evaluated,
    looking_back,
    pair_with_lookback,
    with_run_start,
)
from agent.config.schema import DetectorsConfig

KIND = "state_store_footprint"

_LARGEST_STORES = 3
_MIB = float(2**20)
_MIN_GROWTH_SAMPLES = 3
_MIN_GROWTH_SPAN = 0.9


@dataclass(frozen=True)
class FootprintResults:
    detection: Detection
    estimates: DataFrame  # KEYS, process, estimate_bytes: each instance's newest estimate


def state_store_footprint_results(ctx: Context) -> FootprintResults:
    p = ctx.params
    instances = _instance_estimates(ctx)
    # Every series of the group judges every instance by its sidecar's newest reading.
    fresh = 2 * p.evaluation_window
    newest = _newest_per_process(
        pair_with_lookback(
            ctx.evaluations.select(*KEYS),
            instances.withColumnRenamed("agent", "sidecar_agent"),
            fresh,
            keys=("cluster", "group"),
        )
    )
    judged = newest.where(F.col("memory_limit_bytes") > 0)
    holds = judged.where(
        F.col("at_risk") & (F.col("row_t") - F.col("run_since") >= p.evaluation_window)
    )
    memory = candidates(
        holds,
        kind=KIND,
        severity=F.lit("warning"),
        since=F.col("run_since"),
        process=F.col("process"),
        explanation=_memory_explanation(p),
        evidence=F.struct(
            F.lit("memory").alias("variant"),
            F.col("process"),
            F.col("sidecar_agent"),
            F.col("stores"),
            F.col("store_instances"),
            F.col("rocksdb_instances"),
            F.col("segments"),
            F.col("tasks_held"),
            F.col("per_instance_bytes"),
            F.lit(p.rocksdb_bounded_memory_bytes).alias("bounded_memory_bytes"),
            F.col("estimate_bytes"),
            F.col("memory_limit_bytes"),
            F.col("memory_limit_source"),
            rounded("ratio").alias("ratio"),
            F.lit(p.store_footprint_ratio).alias("warning_ratio"),
            F.col("largest_stores"),
            (F.col("row_t") - F.col("run_since")).alias("at_risk_for_seconds"),
        ),
    )
    growth, growth_coverage = _changelog_growth(ctx)
    coverage = judged.select(*KEYS).unionByName(growth_coverage).distinct()
    return FootprintResults(
        Detection(KIND, memory.unionByName(growth), coverage),
        newest.select(*KEYS, "process", "estimate_bytes"),
    )


def detect_state_store_footprint(ctx: Context) -> Detection:
    return state_store_footprint_results(ctx).detection


def _instance_estimates(ctx: Context) -> DataFrame:
    """Per sidecar snapshot whose state directory and assignment are known: the
    instance's stores, RocksDB instances, estimate, limit, ratio and risk run."""
    p = ctx.params
    sidecars = ctx.tables.sidecars.where(
        F.col("process").isNotNull() & F.col("state_dir_readable") & F.col("held_tasks").isNotNull()
    )
    held = ctx.tables.sidecar_stores.join(
        sidecars.select(*KEYS, "process", "held_tasks"), [*KEYS, "process"]
    ).where(F.array_contains("held_tasks", F.col("task")))
    rocksdb_instances = F.when(F.col("store_kind") == "segmented", F.col("segments")).otherwise(
        F.lit(1)
    )
    per_store = held.groupBy(*KEYS, "process", "store", "store_kind").agg(
        F.count("*").alias("tasks"),
        F.sum(rocksdb_instances).alias("rocksdb_instances"),
        F.sum("segments").alias("segments"),
    )
    per_process = per_store.groupBy(*KEYS, "process").agg(
        F.count("*").alias("stores"),
        F.sum("tasks").alias("store_instances"),
        F.sum("rocksdb_instances").alias("rocksdb_instances"),
        F.sum("segments").alias("segments"),
        F.slice(
            F.sort_array(
                F.collect_list(
                    F.struct(
                        F.col("rocksdb_instances"),
                        F.col("store"),
                        F.col("store_kind").alias("kind"),
                        F.col("tasks"),
                        F.col("segments"),
                    )
                ),
                asc=False,
            ),
            1,
            _LARGEST_STORES,
        ).alias("largest_stores"),
    )
    per_instance = p.rocksdb_block_cache_bytes + p.rocksdb_write_buffer_bytes * (
        p.rocksdb_write_buffers
    )
    rows = sidecars.join(per_process, [*KEYS, "process"], "left").select(
        *KEYS,
        "process",
        "memory_limit_bytes",
        "memory_limit_source",
        F.size("held_tasks").alias("tasks_held"),
        *[
            F.coalesce(F.col(c), F.lit(0)).cast("long").alias(c)
            for c in ("stores", "store_instances", "rocksdb_instances", "segments")
        ],
        F.coalesce(F.col("largest_stores"), F.array()).alias("largest_stores"),
        F.lit(per_instance).cast("long").alias("per_instance_bytes"),
    )
    if p.rocksdb_bounded_memory_bytes is not None:
        # One shared, bounded cache and write buffer manager: the bound, once any store opens.
        estimate = F.when(
            F.col("rocksdb_instances") > 0, F.lit(p.rocksdb_bounded_memory_bytes)
        ).otherwise(F.lit(0))
    else:
        estimate = F.col("rocksdb_instances") * F.col("per_instance_bytes")
    rows = rows.withColumn("estimate_bytes", estimate.cast("long")).withColumn(
        "ratio", F.try_divide(F.col("estimate_bytes"), F.col("memory_limit_bytes"))
    )
    at_risk = F.coalesce(F.col("ratio") >= p.store_footprint_ratio, F.lit(False))
    return with_run_start(rows, at_risk, "run_since", "process").withColumn("at_risk", at_risk)


def _newest_per_process(paired: DataFrame) -> DataFrame:
    newest_first = Window.partitionBy(*KEYS, "process").orderBy(F.col("row_t").desc())
    return (
        paired.withColumn("_rank", F.row_number().over(newest_first))
        .where(F.col("_rank") == 1)
        .drop("_rank")
    )


def _memory_explanation(p: DetectorsConfig) -> Column:
    if p.rocksdb_bounded_memory_bytes is not None:
        per = F.lit(
            f"bounded by a RocksDBConfigSetter to {p.rocksdb_bounded_memory_bytes / _MIB:.0f} "
            "MiB in all"
        )
    else:
        per = F.format_string(
            "%d RocksDB instances x %.0f MiB (block cache %.0f MiB + %d write buffers of %.0f MiB)",
            F.col("rocksdb_instances"),
            F.col("per_instance_bytes") / _MIB,
            F.lit(p.rocksdb_block_cache_bytes / _MIB),
            F.lit(p.rocksdb_write_buffers),
            F.lit(p.rocksdb_write_buffer_bytes / _MIB),
        )
    return F.concat(
        F.format_string(
            "instance %s holds %d tasks with %d persistent store(s) (%d store instances, "
            "%d window/session segments): estimated RocksDB memory %.0f MiB, ",
            F.col("process"),
            F.col("tasks_held"),
            F.col("stores"),
            F.col("store_instances"),
            F.col("segments"),
            F.col("estimate_bytes") / _MIB,
        ),
        per,
        F.format_string(
            ", is %.0f%% of its container's memory limit %.0f MiB (warning at %.0f%%); "
            "RocksDB memory is off-heap, beside the JVM heap, and past the limit the "
            "container is OOM-killed: bound it with a RocksDBConfigSetter (one shared "
            "block cache and write buffer manager), use fewer segments (a shorter "
            "retention or a longer segment interval), spread the tasks over more "
            "instances, or raise the memory limit",
            F.col("ratio") * 100,
            F.col("memory_limit_bytes") / _MIB,
            F.lit(p.store_footprint_ratio * 100),
        ),
    )


def _changelog_growth(ctx: Context) -> tuple[DataFrame, DataFrame]:
    """Compact-only changelogs that grew, never shrinking, over the look-back."""
    p = ctx.params
    window = p.changelog_growth_window
    sized = ctx.tables.topics.where(
        (F.col("internal_kind") == "changelog")
        & (F.regexp_replace(F.lower(F.col("cleanup_policy")), r"\s", "") == "compact")
        & F.col("size_bytes").isNotNull()
    )
    if window <= 0:
        empty = sized.limit(0).select(
            *KEYS,
            "topic",
            "size_bytes",
            *[F.lit(None).cast("double").alias(c) for c in ("first_t", "slope")],
            *[F.lit(None).cast("long").alias(c) for c in ("first_size", "growth_bytes", "samples")],
        )
        return _growth_candidates(empty, p), empty.select(*KEYS)
    back = looking_back(window, "topic")
    shrank = F.coalesce(
        F.col("size_bytes") < F.lag("size_bytes").over(by_series("topic")), F.lit(False)
    )
    fitted = (
        sized.withColumn("_shrank", shrank.cast("int"))
        .withColumn("shrinks", F.sum("_shrank").over(back))
        .withColumn("first_size", F.first("size_bytes").over(back))
        .withColumn("first_t", F.min("t").over(back))
        .withColumn("samples", F.count("*").over(back))
        .withColumn(
            "slope",
            F.try_divide(F.covar_pop("t", "size_bytes").over(back), F.var_pop("t").over(back)),
        )
        .withColumn("growth_bytes", F.col("size_bytes") - F.col("first_size"))
    )
    at_evaluations = evaluated(fitted, ctx.evaluations)
    spanned = at_evaluations.where(
        (F.col("t") - F.col("first_t") >= _MIN_GROWTH_SPAN * window)
        & (F.col("samples") >= _MIN_GROWTH_SAMPLES)
    )
    holds = spanned.where(
        (F.col("shrinks") == 0)
        & (F.col("slope") > 0)
        & (F.col("growth_bytes") >= F.col("first_size") * p.changelog_growth_min_ratio)
        & (F.col("growth_bytes") >= p.changelog_growth_min_bytes)
    )
    return _growth_candidates(holds, p), spanned.select(*KEYS).distinct()


def _growth_candidates(rows: DataFrame, p: DetectorsConfig) -> DataFrame:
    return candidates(
        rows,
        kind=KIND,
        severity=F.lit("warning"),
        since=F.col("first_t"),
        topic=F.col("topic"),
        explanation=F.format_string(
            "changelog %s (cleanup.policy=compact, no delete) grew from %.1f MiB to %.1f MiB "
            "over %.1f h (%.1f MiB/h) and never shrank: compaction bounds a changelog only "
            "by its number of keys, so its store has keys it never deletes (no tombstones, "
            "no TTL of its own) or the log cleaner is not keeping up; delete keys that are "
            "done with (tombstones, a punctuator), use a windowed or session store where "
            "the data has a time limit, and check the log cleaner and the topic's "
            "segment.ms/segment.bytes (only rolled segments are compacted)",
            F.col("topic"),
            F.col("first_size") / _MIB,
            F.col("size_bytes") / _MIB,
            (F.col("t") - F.col("first_t")) / 3600,
            F.col("slope") * 3600 / _MIB,
        ),
        evidence=F.struct(
            F.lit("changelog_growth").alias("variant"),
            F.col("topic"),
            F.col("first_size").alias("size_bytes_at_start"),
            F.col("size_bytes"),
            F.col("growth_bytes"),
            rounded(F.try_divide(F.col("growth_bytes"), F.col("first_size"))).alias("growth_ratio"),
            rounded(F.col("slope") * 3600, 0).alias("growth_bytes_per_hour"),
            F.col("samples"),
            (F.col("t") - F.col("first_t")).alias("over_seconds"),
            F.lit(p.changelog_growth_min_ratio).alias("min_ratio"),
            F.lit(p.changelog_growth_min_bytes).alias("min_bytes"),
        ),
    )
