"""The job's JVM plan helper: compiled once with the JDK into the cache, and its absence
is a logged slowdown, never a failure."""

import logging
import zipfile
from pathlib import Path

import pytest

from agent.aggregation.helper_jar import HelperUnavailableError, build_helper_jar, find_javac
from agent.aggregation.template import evaluation_template
from agent.config.schema import DetectorsConfig


def test_without_a_jdk_the_reason_names_javac(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))  # a directory with no bin/javac
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HelperUnavailableError, match=r"no javac .* a JDK, not only a JRE"):
        find_javac()


def test_the_helper_is_compiled_once_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KSMON_CACHE_DIR", str(tmp_path))
    jar = build_helper_jar()

    assert jar.is_relative_to(tmp_path / "spark-helpers")
    with zipfile.ZipFile(jar) as contents:
        assert "ksmon/spark/PlanTemplate.class" in contents.namelist()
    built_at = jar.stat().st_mtime_ns
    assert build_helper_jar() == jar
    assert jar.stat().st_mtime_ns == built_at, "a second call must reuse the built jar"


def test_a_session_without_the_helper_evaluates_the_slow_way(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A session whose driver has no JVM view (spark-submit without the jar looks alike:
    # the class is missing): no template, one warning, no exception.
    session = _DriverWithoutJvm()
    with caplog.at_level(logging.WARNING, logger="agent.aggregation.template"):
        assert evaluation_template(session, DetectorsConfig()) is None  # type: ignore[arg-type]
    assert "ksmon.spark.PlanTemplate is not on the driver's classpath" in caplog.text


class _DriverWithoutJvm:
    class sparkContext:  # noqa: N801 - the attribute a SparkSession has
        _jvm = None
