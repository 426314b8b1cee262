"""``python -m agent.aggregation.spark.kafka_package --into DIR`` (what an image build runs) and
``aggregation.spark.jars_dir``, both without any network once Spark's Ivy cache is filled.

Each step runs in a network namespace of its own with only a loopback interface
(``unshare -n``): Spark resolves the Kafka source from ksmon's Ivy cache, the
command copies the jars pyspark does not ship, and a session given that
directory as ``jars_dir`` finds the Kafka source with no fetch at all.
"""

import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from agent.aggregation.spark.kafka_package import (
    KAFKA_SOURCE,
    artifact_of,
    ivy_dir,
    pyspark_version,
    spark_home_jars,
)
from tests.support.environment import unavailable

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

USES_JARS_DIR = textwrap.dedent(
    """\
    import sys
    from pathlib import Path
    from pyspark.sql import SparkSession
    from agent.aggregation.spark.kafka_package import kafka_source_conf
    from agent.config.schema import SparkConfig

    conf = kafka_source_conf(SparkConfig(jars_dir=Path(sys.argv[1])))
    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", "127.0.0.1:9")
        .option("subscribe", "snapshots")
        .load()
    )
    print(sorted(conf), stream.isStreaming, spark.conf.get("spark.jars.packages", "none"))
    spark.stop()
    """
)


def offline(*command: str) -> subprocess.CompletedProcess[str]:
    """``command`` with no network but a loopback interface."""
    script = 'ip link set lo up && exec "$@"'
    return subprocess.run(
        ["unshare", "--net", "sh", "-c", script, "offline", *command],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(ROOT)},
        check=False,
    )


@pytest.fixture(scope="module")
def filled_ivy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Spark's Ivy cache holding the Kafka source (the first run anywhere fetches it)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        unavailable("a network namespace", "unshare or ip is not on PATH")
    probe = subprocess.run(
        ["unshare", "--net", "sh", "-c", "ip link set lo up"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        unavailable("a network namespace (unshare --net, as root)", probe.stderr.strip())
    resolved = ivy_dir() / "jars" / f"{KAFKA_SOURCE.replace(':', '_')}-{pyspark_version()}.jar"
    if not resolved.is_file():
        into = tmp_path_factory.mktemp("fetched")
        fetch = subprocess.run(
            [sys.executable, "-m", "agent.aggregation.spark.kafka_package", "--into", str(into)],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
            check=False,
        )
        if fetch.returncode != 0:
            unavailable("Spark's package fetch from Maven Central", fetch.stderr[-1500:])
    return ivy_dir()


def test_the_command_copies_the_kafka_source_offline_and_a_jars_dir_needs_no_fetch(
    filled_ivy_cache: Path, tmp_path: Path
) -> None:
    into = tmp_path / "jars"
    copied = offline(
        sys.executable, "-m", "agent.aggregation.spark.kafka_package", "--into", str(into)
    )

    assert copied.returncode == 0, copied.stderr[-3000:]
    names = copied.stdout.split()
    assert sorted(p.name for p in into.iterdir()) == sorted(names)
    assert f"spark-sql-kafka-0-10_2.13-{pyspark_version()}.jar" in names
    assert any(name.startswith("kafka-clients-") for name in names)
    shipped = {artifact_of(jar.name) for jar in spark_home_jars().glob("*.jar")}
    assert {artifact_of(name) for name in names} & shipped == set()

    used = offline(sys.executable, "-c", USES_JARS_DIR, str(into))

    assert used.returncode == 0, used.stderr[-3000:]
    assert used.stdout.split("\n")[0] == "['spark.jars'] True none"
    assert "resolving dependencies" not in used.stderr


def test_a_source_that_cannot_be_fetched_ends_the_job_with_one_line_naming_the_keys(
    filled_ivy_cache: Path, tmp_path: Path
) -> None:
    """With an empty cache and no network: what was tried, and the two ways out."""
    config = tmp_path / "ksmon.yaml"
    config.write_text(
        "clusters:\n  - name: local\n    bootstrap_servers: ['127.0.0.1:9']\n"
        f"aggregation:\n  checkpoint_dir: {tmp_path / 'checkpoint'}\n"
        "  spark:\n    packages_repository: https://mirror.invalid/maven2\n"
    )
    result = offline(
        "env",
        f"KSMON_CACHE_DIR={tmp_path / 'empty-cache'}",
        sys.executable,
        "-m",
        "agent",
        "aggregate",
        "--config",
        str(config),
    )

    assert result.returncode == 1
    assert "unresolved dependency" in result.stderr  # Spark's own words, above ksmon's line
    assert result.stderr.splitlines()[-1] == (
        "ksmon: error: Spark's JVM did not start ([JAVA_GATEWAY_EXITED] Java gateway process "
        "exited before sending its port number.): its output above says why; it needs a Java "
        "runtime (java on PATH or JAVA_HOME); or it could not fetch "
        f"{KAFKA_SOURCE}:{pyspark_version()} from Maven Central or "
        "https://mirror.invalid/maven2 (set aggregation.spark.packages_repository to a "
        "reachable Maven mirror, or aggregation.spark.jars_dir to a directory holding its jars)"
    )


def test_with_msk_iam_the_command_copies_amazons_login_classes_too(tmp_path: Path) -> None:
    """What the job needs to log in to MSK: the classes its JAAS line names, fetched from
    Maven Central with their AWS SDK jars, none of them a second copy of one pyspark ships.
    (MSK itself is not reachable from the tests: no login is tried.)"""
    into = tmp_path / "jars"
    fetched = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent.aggregation.spark.kafka_package",
            "--into",
            str(into),
            "--with-msk-iam",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    if fetched.returncode != 0 and "could not resolve" in fetched.stderr:
        unavailable("Spark's package fetch from Maven Central", fetched.stderr[-1500:])
    assert fetched.returncode == 0, fetched.stderr[-3000:]
    names = fetched.stdout.split()
    assert "aws-msk-iam-auth-2.4.0.jar" in names
    with zipfile.ZipFile(into / "aws-msk-iam-auth-2.4.0.jar") as jar:
        classes = set(jar.namelist())
    assert {
        "software/amazon/msk/auth/iam/IAMLoginModule.class",
        "software/amazon/msk/auth/iam/IAMClientCallbackHandler.class",
    } <= classes
    shipped = {artifact_of(jar.name) for jar in spark_home_jars().glob("*.jar")}
    assert {artifact_of(name) for name in names} & shipped == set()
