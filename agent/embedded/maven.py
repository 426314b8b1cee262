"""Run Maven to fetch artifacts from Maven Central (or a mirror) into ksmon's cache.

Maven does the resolving because Kafka's dependency tree is deep and Maven is
the tool that reads POMs correctly; ksmon only points it at a local
repository under the cache directory and explains its failures.
"""

import logging
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from xml.sax.saxutils import escape

from agent.embedded.cache import cache_dir
from agent.errors import SetupError, UnreachableError

log = logging.getLogger(__name__)

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
MIRROR_ENV = "KSMON_MAVEN_MIRROR"

# Lines in Maven's output that mean the repository could not be reached at all,
# as opposed to a build or POM problem.
_UNREACHABLE = re.compile(
    r"UnknownHostException|Unknown host|Connection refused|Connect timed out|connect timed out"
    r"|Network is unreachable|No route to host|Connection reset|PKIX path building failed"
    r"|Could not transfer artifact|transfer failed for|Temporary failure in name resolution"
)
_DOWNLOADED = re.compile(r"Downloaded from [^:]+: (\S+)")


def repository_url() -> str:
    return os.environ.get(MIRROR_ENV) or MAVEN_CENTRAL


def run_maven(
    pom: Path,
    goals: Sequence[str],
    properties: Mapping[str, str],
    purpose: str,
) -> None:
    """Run ``mvn goals`` on ``pom`` with the local repository in ksmon's cache.

    ``purpose`` says what the run is for ("fetching Kafka 4.3.1"): it goes into
    progress lines and error messages. Raises :class:`UnreachableError` when
    the repository cannot be reached and :class:`SetupError` otherwise.
    """
    mvn = shutil.which("mvn")
    if not mvn:
        raise SetupError(
            f"Maven (mvn) not found on PATH; ksmon needs it once for {purpose} from "
            f"Maven Central (Debian/Ubuntu: apt-get install maven)"
        )
    logs = cache_dir() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_file = logs / f"maven-{re.sub(r'[^a-zA-Z0-9.]+', '-', purpose).strip('-')}.log"
    argv = [mvn, "-B", "-f", str(pom), f"-Dmaven.repo.local={cache_dir() / 'm2'}"]
    mirror = os.environ.get(MIRROR_ENV)
    if mirror:
        settings = cache_dir() / "maven-mirror-settings.xml"
        settings.write_text(_mirror_settings(mirror))
        argv += ["-s", str(settings)]
    argv += [f"-D{key}={value}" for key, value in properties.items()]
    argv += list(goals)

    log.info("%s from %s (first run only)", purpose, repository_url())
    downloaded = 0
    lines: list[str] = []
    with log_file.open("w") as out:
        process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=pom.parent
        )
        assert process.stdout is not None  # noqa: S101 - guaranteed by stdout=PIPE
        for line in process.stdout:
            out.write(line)
            lines.append(line.rstrip())
            if _DOWNLOADED.search(line):
                downloaded += 1
                if downloaded % 25 == 0:
                    log.info("  %s: %d artifacts downloaded", purpose, downloaded)
        code = process.wait()
    if code == 0:
        if downloaded:
            log.info("  %s: done, %d artifacts downloaded", purpose, downloaded)
        return
    raise _explain_failure(purpose, code, lines, log_file)


def _explain_failure(purpose: str, code: int, lines: list[str], log_file: Path) -> Exception:
    unreachable = next((line for line in lines if _UNREACHABLE.search(line)), None)
    if unreachable:
        return UnreachableError(
            f"cannot download from {repository_url()} while {purpose}: "
            f"{_shorten(unreachable)}. Check the network or proxy (Maven reads "
            f"~/.m2/settings.xml), or set {MIRROR_ENV} to a reachable mirror; "
            f"Maven's log: {log_file}"
        )
    errors = [line for line in lines if line.startswith("[ERROR]")][:3]
    detail = " | ".join(_shorten(e) for e in errors) or "no [ERROR] lines"
    return SetupError(
        f"Maven failed (exit {code}) while {purpose}: {detail}; Maven's log: {log_file}"
    )


def _shorten(line: str, limit: int = 300) -> str:
    line = line.removeprefix("[ERROR]").strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _mirror_settings(url: str) -> str:
    return (
        "<settings><mirrors><mirror><id>ksmon-mirror</id><mirrorOf>*</mirrorOf>"
        f"<url>{escape(url)}</url></mirror></mirrors></settings>\n"
    )
