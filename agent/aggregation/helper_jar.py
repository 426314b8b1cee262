"""The job's small JVM helper (``resources/PlanTemplate.java``), compiled once into the cache.

It is compiled against the jars pyspark ships, with the JDK's ``javac``, and
kept under ``<cache>/spark-helpers/<pyspark version>-<source hash>/``: a new
pyspark or a changed source gets its own build. No Maven, no download. Where
there is no JDK (a JRE runs Spark, but cannot compile), the job works
without the helper, only slower: ``helper_jar`` says why and returns None.
"""

import hashlib
import logging
import os
import shutil
import subprocess
import zipfile
from importlib import resources
from pathlib import Path

from agent.aggregation.kafka_package import pyspark_version, spark_home_jars
from agent.embedded.cache import cache_dir, ensure_built

log = logging.getLogger(__name__)

SOURCE = "PlanTemplate.java"
JAR_NAME = "ksmon-spark-helpers.jar"


class HelperUnavailableError(Exception):
    """The helper cannot be built here; the message says why."""


def helper_source() -> str:
    return (resources.files("agent.aggregation") / "resources" / SOURCE).read_text()


def find_javac() -> Path:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "javac").is_file():
        return Path(java_home) / "bin" / "javac"
    found = shutil.which("javac")
    if found:
        return Path(found)
    raise HelperUnavailableError(
        "no javac (neither $JAVA_HOME/bin/javac nor on PATH): a JDK, not only a JRE, "
        "compiles the job's plan helper"
    )


def build_helper_jar() -> Path:
    """The helper's jar, compiled on first use; raises HelperUnavailableError."""
    source = helper_source()
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    javac = find_javac()

    def compile_into(scratch: Path) -> None:
        (scratch / SOURCE).write_text(source)
        classes = scratch / "classes"
        classes.mkdir()
        try:
            result = subprocess.run(
                [
                    str(javac),
                    "-nowarn",
                    "-d",
                    str(classes),
                    "-cp",
                    str(spark_home_jars() / "*"),
                    str(scratch / SOURCE),
                ],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise HelperUnavailableError(f"could not run {javac}: {e}") from e
        if result.returncode != 0:
            raise HelperUnavailableError(
                f"{javac} could not compile {SOURCE} against pyspark {pyspark_version()}: "
                f"{(result.stderr or result.stdout).strip()[:400]}"
            )
        with zipfile.ZipFile(scratch / JAR_NAME, "w") as jar:
            for path in sorted(classes.rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())
        shutil.rmtree(classes)

    home = ensure_built(
        cache_dir() / "spark-helpers" / f"{pyspark_version()}-{digest}", compile_into
    )
    return home / JAR_NAME


def helper_jar() -> Path | None:
    """The jar, or None (the reason logged) where it cannot be built."""
    try:
        return build_helper_jar()
    except HelperUnavailableError as e:
        log.warning("the job runs without its plan helper, slower: %s", e)
        return None
