"""Find a Java runtime and check that it is recent enough for Kafka 4.x and Spark 4.x."""

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from agent.errors import SetupError

MINIMUM_JAVA = 17  # Kafka 4.x brokers and Spark 4.x both require Java 17+

_VERSION = re.compile(r'version "(?P<version>[^"]+)"')


@dataclass(frozen=True)
class JavaRuntime:
    executable: Path
    major: int


def parse_java_major(version_output: str) -> int | None:
    """The major version from ``java -version`` output, e.g. 17 for
    ``openjdk version "17.0.15"`` and 8 for ``java version "1.8.0_292"``."""
    match = _VERSION.search(version_output)
    if not match:
        return None
    parts = re.split(r"[.+_-]", match.group("version"))
    try:
        first = int(parts[0])
        return int(parts[1]) if first == 1 and len(parts) > 1 else first
    except ValueError:
        return None


def find_java() -> JavaRuntime:
    """``$JAVA_HOME/bin/java`` when JAVA_HOME is set, else ``java`` on PATH; at least Java 17."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if not candidate.is_file():
            raise SetupError(
                f"JAVA_HOME={java_home} has no bin/java; point JAVA_HOME at a Java "
                f"{MINIMUM_JAVA}+ installation or unset it to use java from PATH"
            )
        executable = candidate
    else:
        found = shutil.which("java")
        if not found:
            raise SetupError(
                f"Java not found: put java {MINIMUM_JAVA}+ on PATH or set JAVA_HOME "
                "(Debian/Ubuntu: apt-get install openjdk-17-jre-headless)"
            )
        executable = Path(found)
    try:
        result = subprocess.run(
            [str(executable), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SetupError(f"could not run {executable} -version: {e}") from e
    output = result.stderr + result.stdout
    major = parse_java_major(output)
    if major is None:
        raise SetupError(
            f"could not read the Java version from {executable} -version: {output.strip()[:200]!r}"
        )
    if major < MINIMUM_JAVA:
        raise SetupError(
            f"{executable} is Java {major}; Kafka 4.x needs Java {MINIMUM_JAVA}+ "
            "(set JAVA_HOME to a newer JDK)"
        )
    return JavaRuntime(executable=executable, major=major)
