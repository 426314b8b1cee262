from pathlib import Path

import pytest

from agent.embedded.maven import _explain_failure
from agent.errors import SetupError, UnreachableError

LOG = Path("/cache/logs/maven.log")


@pytest.mark.parametrize(
    "line",
    [
        "[ERROR] Could not transfer artifact org.apache.kafka:kafka_2.13:pom:4.3.1 from/to central",
        "[ERROR] ... java.net.UnknownHostException: repo1.maven.org",
        "[ERROR] ... Connect to 127.0.0.1:1 failed: Connection refused",
        "[ERROR] ... PKIX path building failed: unable to find valid certification path",
    ],
)
def test_unreachable_repository_is_told_apart_from_build_errors(line: str) -> None:
    error = _explain_failure("fetching Kafka 4.3.1", 1, ["[INFO] Scanning", line], LOG)

    assert isinstance(error, UnreachableError)
    assert error.retriable
    assert "while fetching Kafka 4.3.1" in str(error)
    assert str(LOG) in str(error)


def test_other_maven_failures_quote_the_first_error_lines() -> None:
    lines = [
        "[INFO] Compiling 7 source files",
        "[ERROR] /src/FixtureApp.java:[12,8] cannot find symbol",
        "[ERROR] BUILD FAILURE",
    ]

    error = _explain_failure("building the fixture app", 1, lines, LOG)

    assert type(error) is SetupError
    assert "Maven failed (exit 1) while building the fixture app" in str(error)
    assert "cannot find symbol" in str(error)
