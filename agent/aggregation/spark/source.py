"""Where the streaming job's snapshots come from: the snapshot topic or a spool directory.

Each returns a streaming DataFrame with ``value`` (one snapshot's JSON) and
``origin`` (``topic/partition@offset`` or the file), the input of
``operator``; Spark's checkpoint records how far each micro-batch read.
(Recorded files are ``replay``'s, read without Spark.)
"""

from collections.abc import Iterable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from agent.config.schema import ClusterConfig, KafkaInputConfig, SaslConfig, SpoolInputConfig
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
    set_driver_properties(spark, jvm_system_properties([cluster]))
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
        options["kafka.sasl.mechanism"] = sasl.mechanism
        options.update(_sasl_login_options(sasl))
    return options


OAUTH_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
OAUTH_LOGIN_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
# Kafka clients since 3.9.1 fetch tokens only from URLs this JVM system property lists.
OAUTH_ALLOWED_URLS = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
KERBEROS_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
MSK_IAM_LOGIN_MODULE = "software.amazon.msk.auth.iam.IAMLoginModule"
MSK_IAM_CALLBACK_HANDLER = "software.amazon.msk.auth.iam.IAMClientCallbackHandler"


def _sasl_login_options(sasl: SaslConfig) -> dict[str, str]:
    """The Java client's login for the mechanism: its JAAS line and handlers."""
    if sasl.oauth is not None:
        oauth = sasl.oauth
        jaas = {"clientId": oauth.client_id, "clientSecret": oauth.client_secret.reveal()}
        if oauth.scope:
            jaas["scope"] = oauth.scope
        jaas.update({f"extension_{name}": value for name, value in oauth.extensions})
        if oauth.ca_file is not None:
            # The token endpoint's TLS settings are read from the JAAS options.
            jaas["ssl.truststore.type"] = "PEM"
            jaas["ssl.truststore.location"] = str(oauth.ca_file)
        return {
            "kafka.sasl.login.callback.handler.class": OAUTH_LOGIN_HANDLER,
            "kafka.sasl.oauthbearer.token.endpoint.url": oauth.token_endpoint_url,
            "kafka.sasl.jaas.config": _jaas_line(OAUTH_LOGIN_MODULE, jaas),
        }
    if sasl.kerberos is not None:
        kerberos = sasl.kerberos
        jaas = {
            "useKeyTab": "true",
            "storeKey": "true",
            "keyTab": str(kerberos.keytab),
            "principal": kerberos.principal,
        }
        return {
            "kafka.sasl.kerberos.service.name": kerberos.service_name,
            "kafka.sasl.jaas.config": _jaas_line(KERBEROS_LOGIN_MODULE, jaas),
        }
    if sasl.aws is not None:
        # Amazon's aws-msk-iam-auth library; the credentials come from the AWS chain.
        jaas = {"awsProfileName": sasl.aws.profile} if sasl.aws.profile else {}
        return {
            "kafka.sasl.client.callback.handler.class": MSK_IAM_CALLBACK_HANDLER,
            "kafka.sasl.jaas.config": _jaas_line(MSK_IAM_LOGIN_MODULE, jaas),
        }
    module = (
        "org.apache.kafka.common.security.plain.PlainLoginModule"
        if sasl.mechanism == "PLAIN"
        else "org.apache.kafka.common.security.scram.ScramLoginModule"
    )
    assert sasl.username is not None  # noqa: S101 - the loader requires both
    assert sasl.password is not None  # noqa: S101
    return {
        "kafka.sasl.jaas.config": _jaas_line(
            module, {"username": sasl.username, "password": sasl.password.reveal()}
        )
    }


def jvm_system_properties(clusters: Iterable[ClusterConfig]) -> dict[str, str]:
    """The JVM system properties the Java Kafka clients of these clusters need, on the
    driver and on every executor: the token endpoints they may fetch from, and the
    Kerberos configuration."""
    urls = sorted(
        {
            c.security.sasl.oauth.token_endpoint_url
            for c in clusters
            if c.security.sasl is not None and c.security.sasl.oauth is not None
        }
    )
    krb5 = sorted(
        {
            str(c.security.sasl.kerberos.krb5_conf)
            for c in clusters
            if c.security.sasl is not None
            and c.security.sasl.kerberos is not None
            and c.security.sasl.kerberos.krb5_conf is not None
        }
    )
    properties = {OAUTH_ALLOWED_URLS: ",".join(urls)} if urls else {}
    if krb5:
        # One per JVM: clusters of different Kerberos configurations cannot share a job.
        properties["java.security.krb5.conf"] = krb5[0]
    return properties


def java_options_conf(properties: dict[str, str]) -> dict[str, str]:
    """Session settings that start the driver and executor JVMs with these properties
    (the driver's only when the session starts its JVM: ``set_driver_properties``)."""
    if not properties:
        return {}
    options = " ".join(f"-D{key}={value}" for key, value in properties.items())
    return {"spark.driver.extraJavaOptions": options, "spark.executor.extraJavaOptions": options}


def set_driver_properties(spark: SparkSession, properties: dict[str, str]) -> None:
    """Set the properties in the running driver JVM (spark-submit started it, or a session
    is reused), keeping the token URLs it already allows."""
    system = spark.sparkContext._jvm.java.lang.System  # type: ignore[union-attr]
    for key, value in properties.items():
        merged = value
        if key == OAUTH_ALLOWED_URLS:
            allowed = [u for u in (system.getProperty(key) or "").split(",") if u]
            merged = ",".join(allowed + [u for u in value.split(",") if u not in allowed])
        system.setProperty(key, merged)


def _jaas_line(module: str, options: dict[str, str]) -> str:
    written = "".join(f' {key}="{_jaas(value)}"' for key, value in options.items())
    return f"{module} required{written};"


def _jaas(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
