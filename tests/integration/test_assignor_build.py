"""Builds the Java task assignor (assignor/) and runs its JUnit tests with the project's
Maven runner and cache, so every CI run proves the assignor too."""

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from agent.embedded.maven import run_maven
from agent.errors import SetupError, UnreachableError
from tests.support.environment import unavailable

pytestmark = pytest.mark.integration

ASSIGNOR = Path(__file__).parents[2] / "assignor"


def test_assignor_builds_and_its_junit_tests_pass(tmp_path: Path) -> None:
    build = tmp_path / "build"
    try:
        run_maven(
            ASSIGNOR / "pom.xml",
            ["-q", "test"],
            {"ksmon.build.dir": str(build)},
            purpose="building and testing the ksmon task assignor",
        )
    except UnreachableError as e:
        unavailable("Maven Central", e)
    except SetupError as e:
        pytest.fail(str(e), pytrace=False)

    suites = {
        suite.get("name"): suite
        for report in (build / "surefire-reports").glob("TEST-*.xml")
        # The reports this build just wrote, not outside input.
        for suite in [ET.parse(report).getroot()]  # noqa: S314
    }
    # Every suite ran: placement and fallbacks, the loads record, large groups, and the
    # cases shared with explain.
    expected = {
        "dev.ksmon.assignor.LoadAwareTaskAssignorTest",
        "dev.ksmon.assignor.LoadsRecordTest",
        "dev.ksmon.assignor.LargeGroupTest",
        "dev.ksmon.assignor.SharedCasesTest",
    }
    assert expected <= set(suites)
    for name, suite in suites.items():
        assert int(suite.get("tests", "0")) > 0, name
        assert suite.get("failures") == "0", name
        assert suite.get("errors") == "0", name
