"""Two steps of the image build (``deploy/image/Dockerfile``), written in Python so
the tests run the very code the build runs. Standard library only: the build
stages have nothing else.

    python build_helpers.py agent-requirements pyproject.toml > agent-requirements.txt
    python build_helpers.py add-jars CONNECTOR_JARS_DIR SPARK_JARS_DIR
"""

import re
import shutil
import sys
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path

# Dependencies only the aggregation job imports; the agent image leaves them out.
JOB_ONLY = frozenset({"pyspark"})

_REQUIREMENT_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
# name-1.2.3.jar, name-1.2.3-4.jar, name_2.13-4.2.0.jar: the version is the first
# "-" followed by dotted digits that runs to the end of the file name.
_JAR = re.compile(r"(?P<artifact>.+?)-(?P<version>\d+(?:\.\d+)+(?:[-.][0-9A-Za-z_]+)*)\.jar")


def agent_requirements(pyproject_text: str) -> list[str]:
    """ksmon's declared dependencies, as written in pyproject.toml, without the job's."""
    dependencies: list[str] = tomllib.loads(pyproject_text)["project"]["dependencies"]
    return [d for d in dependencies if _normalized_name(d) not in JOB_ONLY]


def artifact_name(jar_file_name: str) -> str:
    """The Maven artifact a jar file holds, from its name.

    >>> artifact_name("spark-sql-kafka-0-10_2.13-4.2.0.jar")
    'spark-sql-kafka-0-10_2.13'
    """
    match = _JAR.fullmatch(jar_file_name)
    return match["artifact"] if match else jar_file_name.removesuffix(".jar")


def jars_to_add(connector_jars: Iterable[str], spark_jars: Iterable[str]) -> list[str]:
    """The connector jars whose artifact Spark does not already ship: two versions of
    one library on a classpath is a conflict waiting to happen, and Spark's own
    version is the one Spark was tested with."""
    shipped = {artifact_name(j) for j in spark_jars}
    return sorted(j for j in connector_jars if artifact_name(j) not in shipped)


def add_jars(connector_dir: Path, spark_jars_dir: Path) -> list[str]:
    """Copy ``jars_to_add`` from ``connector_dir`` into ``spark_jars_dir``; their names."""
    added = jars_to_add(
        (p.name for p in connector_dir.glob("*.jar")),
        (p.name for p in spark_jars_dir.glob("*.jar")),
    )
    for name in added:
        shutil.copy2(connector_dir / name, spark_jars_dir / name)
    return added


def main(argv: Sequence[str]) -> int:
    match list(argv):
        case ["agent-requirements", pyproject]:
            text = Path(pyproject).read_text(encoding="utf-8")
            sys.stdout.write("".join(f"{r}\n" for r in agent_requirements(text)))
        case ["add-jars", connector_dir, spark_jars_dir]:
            for name in add_jars(Path(connector_dir), Path(spark_jars_dir)):
                sys.stdout.write(f"added {name}\n")
        case _:
            sys.stderr.write(__doc__ or "")
            return 2
    return 0


def _normalized_name(requirement: str) -> str:
    match = _REQUIREMENT_NAME.match(requirement)
    name = match[1] if match else requirement
    return re.sub(r"[-_.]+", "-", name).lower()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
