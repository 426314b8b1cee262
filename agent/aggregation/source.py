"""Where the streaming job's snapshots come from: the snapshot topic or a spool directory.

Each returns a streaming DataFrame with ``value`` (one snapshot's JSON) and
``origin`` (``topic/partition@offset`` or the file), the input of
``operator``; Spark's checkpoint records how far each micro-batch read.
(Recorded files are ``replay``'s, read without Spark.)
"""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from agent.config.schema import ClusterConfig, KafkaInputConfig, SpoolInputConfig
from agent.transport.spool import DONE


def spool_stream(spark: SparkSession, spool: SpoolInputConfig) -> DataFrame:
    """New complete spool files (the agent renames ``.part`` files when done). The
    directory is the agent's to create: the job waits for it (``input_wait``)."""
    return (
        spark.readStream.format("text")
        .option("pathGlobFilter", f"*{DONE}")
        .option("maxFilesPerTrigger", spool.max_files_per_batch)
        .load(str(spool.directory))
        .where(F.length(F.trim("value")) > 0)
        .select("value", F.input_file_name().alias("origin"))
    )


def kafka_stream(spark: SparkSession, cluster: ClusterConfig, kafka: KafkaInputConfig) -> DataFrame:
    reader = spark.readStream.format("kafka")
    for key, value in kafka_source_options(cluster).items():
        reader = reader.option(key, value)
    return (
        reader.option("subscribe", kafka.topic)
        .option("startingOffsets", kafka.starting_offsets)
        .option("maxOffsetsPerTrigger", kafka.max_snapshots_per_batch)
        # Retention may delete snapshots the job has not read (it was down for a week):
        # carry on with what is there.
        .option("failOnDataLoss", "false")
        .load()
        .select(
            F.col("value").cast("string").alias("value"),
            F.format_string("%s/%d@%d", "topic", "partition", "offset").alias("origin"),
        )
    )


def kafka_source_options(cluster: ClusterConfig) -> dict[str, str]:
    """The cluster's connection as options of Spark's Kafka source (the Java client's names)."""
    security = cluster.security
    options = {
        "kafka.bootstrap.servers": ",".join(cluster.bootstrap_servers),
        "kafka.security.protocol": security.protocol,
        "kafka.client.id": f"{cluster.client_id}-aggregate",
        "kafka.request.timeout.ms": str(max(1, round(cluster.poll.request_timeout * 1000))),
    }
    tls = security.tls
    if tls is not None:
        if tls.ca_file is not None:
            options["kafka.ssl.truststore.type"] = "PEM"
            options["kafka.ssl.truststore.location"] = str(tls.ca_file)
        if tls.cert_file is not None and tls.key_file is not None:
            options["kafka.ssl.keystore.type"] = "PEM"
            options["kafka.ssl.keystore.certificate.chain"] = tls.cert_file.read_text()
            options["kafka.ssl.keystore.key"] = tls.key_file.read_text()
            if tls.key_password is not None:
                options["kafka.ssl.key.password"] = tls.key_password.reveal()
        if not tls.check_hostname:
            options["kafka.ssl.endpoint.identification.algorithm"] = ""
    sasl = security.sasl
    if sasl is not None:
        module = (
            "org.apache.kafka.common.security.plain.PlainLoginModule"
            if sasl.mechanism == "PLAIN"
            else "org.apache.kafka.common.security.scram.ScramLoginModule"
        )
        options["kafka.sasl.mechanism"] = sasl.mechanism
        options["kafka.sasl.jaas.config"] = (
            f'{module} required username="{_jaas(sasl.username)}" '
            f'password="{_jaas(sasl.password.reveal())}";'
        )
    return options


def _jaas(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
