"""The SparkSession the job and its tests run on.

The job's plan is small (a source, a keyed stateful operator, a sink): what
matters is where its state lives and what a Python worker runs with.
"""

import os
import sys

from pyspark.sql import SparkSession

STATEFUL_CONF: dict[str, str] = {
    # transformWithState keeps its state in RocksDB, checkpointed per micro-batch as a
    # changelog of what changed (the default uploads whole snapshots).
    "spark.sql.streaming.stateStore.providerClass": (
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    ),
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    # Old state versions and their changelogs kept in the checkpoint directory: enough
    # to recover the last batches, bounded (Spark's default keeps 100).
    "spark.sql.streaming.minBatchesToRetain": "10",
    # After a batch that moved the watermark Spark runs one more, without data, to fire
    # timers: a second batch per poll, for timers (forgetting groups no longer polled)
    # that the next poll's batch fires anyway. (A stream that stops altogether forgets
    # nothing until polls come again.)
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    # PySpark 4 records the Python call site of every DataFrame and Column call in the
    # JVM, for error messages: py4j round trips the job never needs.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}


def spark_session(
    app_name: str,
    *,
    master: str | None,
    shuffle_partitions: int,
    driver_memory: str = "1g",
    extra: dict[str, str] | None = None,
) -> SparkSession:
    """Get or create the session. ``master=None`` keeps the one spark-submit chose."""
    # Spark's Python workers run the rules: with this interpreter (its packages: pandas,
    # pyarrow, ksmon), not whatever ``python3`` is first on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is not None and not submitted_by_spark_submit():
        builder = builder.master(master).config("spark.driver.memory", driver_memory)
    conf = {
        **STATEFUL_CONF,
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.default.parallelism": str(shuffle_partitions),
        **(extra or {}),
    }
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def submitted_by_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands Python its gateway; its --master wins."""
    return "PYSPARK_GATEWAY_PORT" in os.environ
