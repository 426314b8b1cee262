"""The Spark Kafka source the job reads the snapshot topic with, and where it comes from.

``org.apache.spark:spark-sql-kafka-0-10_2.13`` must match pyspark's version
exactly. By default the job's session names it in ``spark.jars.packages``, and
Spark resolves it and its Kafka client itself (Ivy, from Maven Central and an
optional mirror) into an Ivy directory under ksmon's cache: a JRE is all it
takes, and later starts resolve from that cache, offline. With
``aggregation.spark.jars_dir`` there is no fetch: the jars in that directory
go on the classpath.

``python -m agent.aggregation.spark.kafka_package --into DIR [--repository URL]``
fills such a directory (an image build, a machine without network later): it
lets Spark resolve the package once and copies the jars Spark does not ship
itself, printing their names; ``--with-msk-iam`` adds Amazon's MSK IAM login library,
which the Kafka source needs to log in to MSK with ``AWS_MSK_IAM``.
"""

import argparse
import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from agent.config.schema import SparkConfig
from agent.errors import ConfigError, KsmonError, SetupError, first_line
from agent.paths import cache_dir

KAFKA_SOURCE = "org.apache.spark:spark-sql-kafka-0-10_2.13"
# IAMLoginModule and IAMClientCallbackHandler, for a source cluster on AWS_MSK_IAM.
MSK_IAM_AUTH = "software.amazon.msk:aws-msk-iam-auth:2.4.0"
MSK_IAM_AUTH_ARTIFACT = "aws-msk-iam-auth"
# The variable the demo's Maven fetches read, so one setting points every fetch at a mirror.
MIRROR_ENV = "KSMON_MAVEN_MIRROR"

# The version starts at the first "-<digits>." (``-0-10_2.13`` is part of a name).
_VERSIONED_JAR = re.compile(r"^(?P<artifact>.+?)-\d+\.[\w.\-]*\.jar$")
# Ivy names the jars it resolved ``<organisation>_<artifact>-<version>.jar``.
_IVY_JAR = re.compile(r"^(?P<organisation>[^_]+)_(?P<file>.+\.jar)$")
_REPOSITORY_URL = re.compile(r"https?://[^\s/?#]+(/\S*)?")


def pyspark_version() -> str:
    import pyspark  # noqa: PLC0415 - only the job needs it

    return str(pyspark.__version__)


def spark_home_jars() -> Path:
    import pyspark  # noqa: PLC0415

    return Path(pyspark.__file__).parent / "jars"


def kafka_source_coordinate(version: str | None = None) -> str:
    return f"{KAFKA_SOURCE}:{version or pyspark_version()}"


def ivy_dir() -> Path:
    """Spark's ``spark.jars.ivy``: its resolution cache and the jars it resolved."""
    return cache_dir() / "spark-ivy"


def jar_file_name(ivy_name: str) -> str:
    """A jar Ivy resolved, named as Maven names it (without the organisation):
    ``org.apache.kafka_kafka-clients-3.9.1.jar`` -> ``kafka-clients-3.9.1.jar``."""
    match = _IVY_JAR.match(ivy_name)
    return match["file"] if match else ivy_name


def artifact_of(jar_name: str) -> str:
    """``kafka-clients-3.9.1.jar`` -> ``kafka-clients``."""
    match = _VERSIONED_JAR.match(jar_name)
    return match["artifact"] if match else jar_name.removesuffix(".jar")


def packages_repository(spark: SparkConfig, env: Mapping[str, str] = os.environ) -> str | None:
    """The mirror Spark also fetches from: the configured one, else ``$KSMON_MAVEN_MIRROR``."""
    if spark.packages_repository is not None:
        return spark.packages_repository
    mirror = env.get(MIRROR_ENV, "").strip()
    if not mirror:
        return None
    if not _REPOSITORY_URL.fullmatch(mirror):
        raise ConfigError(
            f"{MIRROR_ENV}: expected the http:// or https:// URL of a Maven repository, "
            f"got {mirror!r}"
        )
    return mirror


def jars_in(directory: Path, *, msk_iam: bool = False) -> list[Path]:
    """The jars of ``aggregation.spark.jars_dir``; an error naming the key if there are none."""
    if not directory.is_dir():
        raise ConfigError(
            f"aggregation.spark.jars_dir {directory}: no such directory; fill it with "
            f"`python -m agent.aggregation.spark.kafka_package --into {directory}`, or leave the "
            "key out to let Spark fetch the Kafka source"
        )
    jars = sorted(directory.glob("*.jar"))
    if not jars:
        raise ConfigError(
            f"aggregation.spark.jars_dir {directory}: holds no .jar files; fill it with "
            f"`python -m agent.aggregation.spark.kafka_package --into {directory}`"
        )
    if msk_iam and not any(artifact_of(jar.name) == MSK_IAM_AUTH_ARTIFACT for jar in jars):
        raise ConfigError(
            f"aggregation.spark.jars_dir {directory}: has no {MSK_IAM_AUTH_ARTIFACT} jar, "
            "which the source cluster's AWS_MSK_IAM login needs; fill it with "
            f"`python -m agent.aggregation.spark.kafka_package --into {directory} --with-msk-iam`"
        )
    return jars


def kafka_source_conf(
    spark: SparkConfig,
    *,
    msk_iam: bool = False,
    version: str | None = None,
    env: Mapping[str, str] = os.environ,
) -> dict[str, str]:
    """The session settings that put the Kafka source on the job's classpath, with the
    MSK IAM login library when ``msk_iam``.

    They take effect only in a session that starts its JVM (spark-submit
    resolves packages before anything else runs).
    """
    if spark.jars_dir is not None:
        jars = jars_in(spark.jars_dir, msk_iam=msk_iam)
        return {"spark.jars": ",".join(str(jar) for jar in jars)}
    packages = [kafka_source_coordinate(version), *([MSK_IAM_AUTH] if msk_iam else [])]
    conf = {
        "spark.jars.packages": ",".join(packages),
        "spark.jars.ivy": str(ivy_dir()),
    }
    repository = packages_repository(spark, env)
    if repository is not None:
        conf["spark.jars.repositories"] = repository
    return conf


def not_shipped(resolved: Sequence[Path], shipped: Sequence[Path]) -> list[Path]:
    """The jars Ivy resolved whose artifact pyspark does not already ship (Spark, Scala,
    compression codecs, slf4j), so that no class comes twice."""
    shipped_artifacts = {artifact_of(jar.name) for jar in shipped}
    return sorted(
        (jar for jar in resolved if artifact_of(jar_file_name(jar.name)) not in shipped_artifacts),
        key=lambda jar: jar_file_name(jar.name),
    )


def resolve_kafka_source(repository: str | None, *, msk_iam: bool = False) -> list[Path]:
    """Let Spark resolve the Kafka source (a short local session in a JVM of its own) and
    return the jars it resolved, in its Ivy directory.

    Call it in a process that has not started Spark yet: a running JVM never
    resolves packages again.
    """
    from pyspark.errors import PySparkRuntimeError  # noqa: PLC0415 - only the job needs it
    from pyspark.sql import SparkSession  # noqa: PLC0415 - starts a JVM

    conf = kafka_source_conf(SparkConfig(packages_repository=repository), msk_iam=msk_iam, env={})
    builder = (
        SparkSession.builder.appName("ksmon-kafka-package")
        .master("local[1]")
        .config("spark.ui.enabled", "false")
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except PySparkRuntimeError as e:
        raise SetupError(
            f"Spark could not resolve {conf['spark.jars.packages']} from Maven Central"
            + (f" and {repository}" if repository else "")
            + f" (its output above says why): {first_line(e)}"
        ) from e
    try:
        listed = session.sparkContext.getConf().get("spark.jars") or ""
    finally:
        session.stop()
    return [Path(entry.removeprefix("file://")) for entry in listed.split(",") if entry]


def copy_kafka_source(into: Path, repository: str | None, *, msk_iam: bool = False) -> list[Path]:
    """Fill ``into`` with the Kafka source's jars that pyspark does not ship (and the MSK
    IAM login library's, when ``msk_iam``)."""
    resolved = resolve_kafka_source(repository, msk_iam=msk_iam)
    artifacts = {artifact_of(jar_file_name(jar.name)) for jar in resolved}
    wanted = [KAFKA_SOURCE, *([MSK_IAM_AUTH] if msk_iam else [])]
    for coordinate in wanted:
        if coordinate.split(":")[1] not in artifacts:
            raise SetupError(
                f"Spark resolved no {coordinate} jar (it listed {len(resolved)} jars); "
                f"its Ivy directory: {ivy_dir()}"
            )
    into.mkdir(parents=True, exist_ok=True)
    copied = []
    for jar in not_shipped(resolved, sorted(spark_home_jars().glob("*.jar"))):
        target = into / jar_file_name(jar.name)
        shutil.copyfile(jar, target)
        copied.append(target)
    return copied


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agent.aggregation.spark.kafka_package",
        description=f"Resolve Spark's Kafka source ({KAFKA_SOURCE} at pyspark's version) and "
        "its dependencies through Spark's own package fetch, and copy the jars Spark does not "
        "ship into DIR (for aggregation.spark.jars_dir).",
    )
    parser.add_argument("--into", type=Path, required=True, metavar="DIR")
    parser.add_argument(
        "--repository",
        metavar="URL",
        help=f"a Maven repository to fetch from too (default: ${MIRROR_ENV} when set)",
    )
    parser.add_argument(
        "--with-msk-iam",
        action="store_true",
        help=f"also {MSK_IAM_AUTH} (and its AWS SDK jars), for a source cluster on AWS_MSK_IAM",
    )
    args = parser.parse_args(argv)
    try:
        repository = packages_repository(SparkConfig(packages_repository=args.repository))
        if repository is not None and not _REPOSITORY_URL.fullmatch(repository):
            raise ConfigError(
                f"--repository: expected the http:// or https:// URL of a Maven repository, "
                f"got {repository!r}"
            )
        copied = copy_kafka_source(args.into, repository, msk_iam=args.with_msk_iam)
    except KsmonError as e:
        print(f"kafka_package: error: {e}", file=sys.stderr)  # noqa: T201 - a command line
        return 1
    for jar in copied:
        print(jar.name)  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())
