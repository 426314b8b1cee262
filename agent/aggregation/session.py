"""The SparkSession the job, replay and tests run on, tuned for small, many-branched plans.

Measured on the 2-core CI machine (docs/benchmarks.md): with Spark's
defaults one evaluation of a handful of snapshots took minutes, because each
detector's plan had a hundred shuffles and broadcasts, each a stage or job.
With the settings below the same evaluation runs without a single shuffle
after the input is partitioned by (cluster, group).
"""

import os

from pyspark.sql import SparkSession

from agent.aggregation.helper_jar import helper_jar

SMALL_DATA_CONF: dict[str, str] = {
    # Joins and windows keyed by (cluster, group, ...) reuse the input's
    # (cluster, group) partitioning instead of shuffling both sides.
    "spark.sql.requireAllClusterKeysForCoPartition": "false",
    # A broadcast is one more Spark job per join; the sides are co-partitioned anyway.
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1",
    # Many small operators: compiling whole stages costs more than it saves.
    "spark.sql.codegen.wholeStage": "false",
    # An evaluation has many hundreds of distinct expressions; with the default cache
    # of 100 compiled classes each micro-batch compiled most of them again.
    "spark.sql.codegen.cache.maxEntries": "5000",
    "spark.sql.adaptive.enabled": "false",
    # Runtime bloom filters give shuffle joins a scalar subquery (one more Spark job)
    # whose result, a filter of up to 8 MiB of mostly zeros, is serialized into the tasks
    # above it: measured 64 MiB task binaries for a few snapshots, and a 512 MiB driver
    # running out of heap. The tables are too small for a filter to save anything.
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
    # PySpark 4 records the Python call site of every DataFrame and Column call in
    # the JVM, for error messages: five or more extra py4j round trips per call. For
    # one evaluation's plan that was 28,000 of its 50,000 py4j commands (the build's
    # time moved less: docs/benchmarks.md, "Where a micro-batch's time goes").
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
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
    builder = SparkSession.builder.appName(app_name)
    if master is not None and not submitted_by_spark_submit():
        builder = builder.master(master).config("spark.driver.memory", driver_memory)
    conf = {
        **SMALL_DATA_CONF,
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.default.parallelism": str(shuffle_partitions),
        **(extra or {}),
    }
    # Under spark-submit the JVM already runs: its --jars decide, not spark.jars.
    helper = None if submitted_by_spark_submit() else helper_jar()
    if helper is not None:
        conf["spark.jars"] = ",".join(j for j in (str(helper), conf.get("spark.jars")) if j)
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def submitted_by_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands Python its gateway; its --master wins."""
    return "PYSPARK_GATEWAY_PORT" in os.environ
