"""The Spark Kafka source's jars, resolved from Maven Central into ksmon's cache.

``org.apache.spark:spark-sql-kafka-0-10_2.13`` must match pyspark's version
exactly. Maven resolves it (and its Kafka client) once, like the embedded
Kafka; later runs work offline. Jars pyspark already ships (Spark, Scala,
compression codecs, slf4j) are left out so one class never comes twice.
"""

import re
from importlib import resources
from pathlib import Path

from agent.embedded.cache import cache_dir, ensure_built
from agent.embedded.maven import run_maven

_VERSIONED_JAR = re.compile(r"^(?P<artifact>.+?)-\d[\w.\-]*\.jar$")


def pyspark_version() -> str:
    import pyspark  # noqa: PLC0415 - only the job needs it

    return str(pyspark.__version__)


def spark_home_jars() -> Path:
    import pyspark  # noqa: PLC0415

    return Path(pyspark.__file__).parent / "jars"


def artifact_of(jar_name: str) -> str:
    """``kafka-clients-3.9.1.jar`` -> ``kafka-clients``."""
    match = _VERSIONED_JAR.match(jar_name)
    return match["artifact"] if match else jar_name.removesuffix(".jar")


def kafka_source_jars(version: str | None = None) -> list[Path]:
    """The jars to add to ``spark.jars`` for ``format("kafka")``, downloading them once."""
    version = version or pyspark_version()

    def download(scratch: Path) -> None:
        pom = scratch / "pom.xml"
        template = resources.files("agent.aggregation") / "resources" / "spark-kafka.pom.xml"
        pom.write_text(template.read_text().replace("@SPARK_VERSION@", version))
        run_maven(
            pom,
            ["dependency:copy-dependencies"],
            {"outputDirectory": str(scratch / "jars"), "includeScope": "runtime"},
            purpose=f"fetching the Spark {version} Kafka source",
        )
        pom.unlink()

    home = ensure_built(cache_dir() / "spark-kafka" / version, download)
    shipped = {artifact_of(jar.name) for jar in spark_home_jars().glob("*.jar")}
    return sorted(
        jar for jar in (home / "jars").glob("*.jar") if artifact_of(jar.name) not in shipped
    )
