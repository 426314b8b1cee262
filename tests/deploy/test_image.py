"""The container image definition, as far as it can be checked without a Docker daemon:
the Dockerfile's files are in the build context, its bases are pinned, its user is the
one the manifests run as, the Kafka connector matches PySpark, and the two build steps
written in Python (the agent's requirements, the connector jars) do what the build
needs. The job image's entrypoint runs a real spark-submit in its driver role, under
which the job's own session settings (the state store) still apply."""

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pyspark
import pytest

from agent.aggregation.session import STATEFUL_CONF
from agent.embedded.maven import run_maven
from agent.errors import KsmonError
from deploy.image.build_helpers import agent_requirements, artifact_name, jars_to_add
from tests.deploy.manifests import (
    DEPLOY,
    IMAGE_USER,
    REPO,
    SIDECAR_CONTAINER,
    Object,
    Rendered,
    by_name,
    pod_specs,
)
from tests.support.environment import unavailable

IMAGE = DEPLOY / "image"
DOCKERFILE = (IMAGE / "Dockerfile").read_text()
POM = IMAGE / "spark-kafka-pom.xml"
_MAVEN = "{http://maven.apache.org/POM/4.0.0}"
KAFKA_SOURCE = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
# The settings the job's session gives Spark's state store (RocksDB, its changelog).
_STATE_STORE_KEYS = frozenset(k for k in STATEFUL_CONF if k.startswith("spark.sql.streaming."))


def _pinned_pyspark() -> str:
    # With or without extras: "pyspark[sql]==4.2.0" (the job's pandas and pyarrow).
    match = re.search(r'"pyspark(?:\[[^]]*\])?==([0-9.]+)"', (REPO / "pyproject.toml").read_text())
    assert match, "pyproject.toml pins pyspark exactly"
    return match[1]


def test_the_kafka_connector_is_pysparks_version() -> None:
    root = ET.parse(POM).getroot()  # noqa: S314 - our own file
    versions = {
        d.findtext(f"{_MAVEN}artifactId"): d.findtext(f"{_MAVEN}version")
        for d in root.iter(f"{_MAVEN}dependency")
    }
    assert versions == {"spark-sql-kafka-0-10_2.13": _pinned_pyspark()}


def test_base_images_are_pinned_to_exact_versions() -> None:
    images = dict(re.findall(r"^ARG (\w+_IMAGE)=(\S+)$", DOCKERFILE, re.MULTILINE))
    assert set(images) == {"PYTHON_IMAGE", "JAVA_IMAGE", "MAVEN_IMAGE"}
    for image in images.values():
        tag = image.partition(":")[2]
        assert re.match(r"\d+\.\d+\.\d+", tag), f"{image}: pin a full version, not {tag!r}"
    assert images["PYTHON_IMAGE"].startswith("python:3.11.")
    assert re.match(r"eclipse-temurin:17\.\d+\.\d+_\d+-jre", images["JAVA_IMAGE"])
    # Every FROM is a pinned ARG image or an earlier stage.
    for base in re.findall(r"^FROM (\S+)", DOCKERFILE, re.MULTILINE):
        assert base.startswith("${") or base in re.findall(r" AS ([\w-]+)$", DOCKERFILE, re.M)


def test_both_targets_run_as_the_unprivileged_user_the_manifests_expect() -> None:
    stages = re.split(r"^FROM ", DOCKERFILE, flags=re.MULTILINE)
    for target in ("agent", "job"):
        (stage,) = [s for s in stages if re.match(rf"\S+ AS {target}$", s.splitlines()[0])]
        assert f"USER {IMAGE_USER}:{IMAGE_USER}" in stage


def _ksmon_security(rendered: Rendered) -> list[tuple[str, Object]]:
    """(where, merged pod + container security context) of every ksmon container."""
    found = []
    for objects in rendered.values():
        for obj in objects:
            for pod in pod_specs(obj):
                containers = by_name(pod.get("containers")) | by_name(pod.get("initContainers"))
                for name, container in containers.items():
                    if container["image"].split("/")[-1].startswith("ksmon"):
                        merged = pod.get("securityContext", {}) | container.get(
                            "securityContext", {}
                        )
                        found.append((f"{obj['metadata']['name']}/{name}", merged))
            if obj["kind"] == "SparkApplication":
                for role in ("driver", "executor"):
                    spec = obj["spec"][role]
                    merged = spec.get("podSecurityContext", {}) | spec.get("securityContext", {})
                    found.append((f"{obj['metadata']['name']}/{role}", merged))
    return found


def test_every_ksmon_container_runs_as_the_image_user_without_privileges(
    rendered: Rendered,
) -> None:
    contexts = _ksmon_security(rendered)
    names = {where.split("/")[-1] for where, _ in contexts}
    assert {"agent", SIDECAR_CONTAINER, "driver", "executor"} <= names
    for where, context in contexts:
        assert context.get("runAsNonRoot") is True, where
        assert (context.get("runAsUser"), context.get("runAsGroup")) == (IMAGE_USER, IMAGE_USER)
        assert context.get("allowPrivilegeEscalation") is False, where
        assert context.get("capabilities") == {"drop": ["ALL"]}, where


def _context_includes(path: str, dockerignore: str) -> bool:
    """Our .dockerignore excludes everything ("*") and re-includes listed paths
    ("!path"); this reads that form only."""
    lines = [line.strip() for line in dockerignore.splitlines()]
    assert "*" in lines
    included = [line[1:].rstrip("/") for line in lines if line.startswith("!")]
    return any(path == p or path.startswith(p + "/") for p in included)


def test_the_build_context_holds_every_file_the_dockerfile_copies() -> None:
    dockerignore = (REPO / ".dockerignore").read_text()
    sources = [
        source
        for line in re.findall(r"^COPY (?!--from)(.+)$", DOCKERFILE, re.MULTILINE)
        for source in line.split()[:-1]
    ]
    assert "agent" in sources
    assert "deploy/image/spark-entrypoint.sh" in sources
    for source in sources:
        assert (REPO / source).exists(), source
        assert _context_includes(source, dockerignore), f"{source} is left out of the context"
    assert not _context_includes("tests", dockerignore)
    assert not _context_includes(".venv", dockerignore)


def test_the_entrypoint_is_executable() -> None:
    assert os.access(IMAGE / "spark-entrypoint.sh", os.X_OK)


def test_the_agent_image_gets_every_dependency_but_pyspark() -> None:
    requirements = agent_requirements((REPO / "pyproject.toml").read_text())
    names = {re.match(r"[A-Za-z0-9_.-]+", r)[0].lower() for r in requirements}  # type: ignore[index]
    assert "pyspark" not in names
    assert {"kafka-python", "prometheus-client", "pyyaml"} <= names


# Each case: a jar file name and the Maven artifact it holds.
ARTIFACTS = [
    ("kafka-clients-3.9.2.jar", "kafka-clients"),
    ("spark-sql-kafka-0-10_2.13-4.2.0.jar", "spark-sql-kafka-0-10_2.13"),
    ("scala-parallel-collections_2.13-1.2.0.jar", "scala-parallel-collections_2.13"),
    ("zstd-jni-1.5.6-4.jar", "zstd-jni"),  # a dash inside the version
    ("netty-codec-4.1.118.Final.jar", "netty-codec"),
    ("commons-pool2-2.13.1.jar", "commons-pool2"),  # a digit ending the name
    ("no-version.jar", "no-version"),
]


@pytest.mark.parametrize(("jar", "artifact"), ARTIFACTS)
def test_artifact_names_come_from_jar_file_names(jar: str, artifact: str) -> None:
    assert artifact_name(jar) == artifact


def test_jars_spark_already_ships_are_not_added_in_a_second_version() -> None:
    added = jars_to_add(
        ["kafka-clients-3.9.2.jar", "lz4-java-1.10.1.jar", "commons-pool2-2.13.1.jar"],
        ["lz4-java-1.11.0.jar", "commons-pool-1.5.4.jar"],
    )
    # lz4-java: Spark's own version wins; commons-pool (v1) is another artifact.
    assert added == ["commons-pool2-2.13.1.jar", "kafka-clients-3.9.2.jar"]


@pytest.fixture(scope="module")
def connector_jars(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The connector's runtime jars, resolved from the image's pom by real Maven."""
    jars = tmp_path_factory.mktemp("connector-jars")
    try:
        run_maven(
            POM,
            ["dependency:copy-dependencies"],
            {"includeScope": "runtime", "outputDirectory": str(jars)},
            purpose="resolving the Spark Kafka connector",
        )
    except KsmonError as e:
        unavailable("Maven (resolving the Spark Kafka connector)", e)
    return jars


@pytest.fixture(scope="module")
def spark_home(connector_jars: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """PySpark's Spark, as the job image lays it out: its own jars plus the connector's
    that ``add-jars`` lets through (links, not copies, of the installed files)."""
    installed = Path(pyspark.__file__).parent
    home = tmp_path_factory.mktemp("spark-home")
    for entry in installed.iterdir():
        if entry.name != "jars":
            (home / entry.name).symlink_to(entry)
    (home / "jars").mkdir()
    for jar in (installed / "jars").glob("*.jar"):
        (home / "jars" / jar.name).symlink_to(jar)
    # The way the Dockerfile runs it: the script, with the standard library only.
    helper = IMAGE / "build_helpers.py"
    subprocess.run(
        [sys.executable, str(helper), "add-jars", str(connector_jars), str(home / "jars")],
        capture_output=True,
        check=True,
    )
    return home


@pytest.mark.integration
def test_add_jars_adds_the_connector_and_nothing_spark_has(spark_home: Path) -> None:
    artifacts = [artifact_name(p.name) for p in (spark_home / "jars").glob("*.jar")]
    shipped = {
        artifact_name(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")
    }
    assert set(artifacts) - shipped == {
        "spark-sql-kafka-0-10_2.13",
        "spark-token-provider-kafka-0-10_2.13",
        "kafka-clients",
        "commons-pool2",
    }
    # The connector also depends on these; Spark's own version stays, alone.
    for artifact in ("lz4-java", "snappy-java", "slf4j-api", "scala-library"):
        assert artifacts.count(artifact) == 1, artifact


@pytest.mark.integration
def test_the_entrypoint_driver_role_runs_spark_submit_with_the_kafka_source(
    spark_home: Path, tmp_path: Path
) -> None:
    """What Spark on Kubernetes runs in the driver pod (`<entrypoint> driver ...`),
    with a local master instead of k8s://: spark-submit in client mode starts the
    Python main file, whose Spark session finds the Kafka source on the classpath."""
    main = tmp_path / "main.py"
    main.write_text(
        "import sys\n"
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "conf = spark.sparkContext.getConf()\n"
        "jvm = spark.sparkContext._jvm\n"
        f"provider = jvm.java.lang.Class.forName('{KAFKA_SOURCE}')\n"
        "print('deploy-mode', conf.get('spark.submit.deployMode'))\n"
        "print('bind-address', conf.get('spark.driver.bindAddress'))\n"
        "print('kafka-source', provider.getName())\n"
        "print('args', ' '.join(sys.argv[1:]))\n"
        "spark.stop()\n"
    )
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home),
        "SPARK_DRIVER_BIND_ADDRESS": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    result = subprocess.run(
        [
            str(IMAGE / "spark-entrypoint.sh"),
            "driver",
            "--master",
            "local[1]",
            "--conf",
            "spark.ui.enabled=false",
            str(main),
            "--config",
            "/etc/ksmon/job.yaml",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    assert lines["deploy-mode"] == "client"
    assert lines["bind-address"] == "127.0.0.1"
    assert lines["kafka-source"] == KAFKA_SOURCE
    assert lines["args"] == "--config /etc/ksmon/job.yaml"


@pytest.mark.integration
def test_under_spark_submit_the_jobs_session_keeps_the_master_and_sets_its_state_store(
    tmp_path: Path,
) -> None:
    """The driver pod runs the job under spark-submit, which starts the JVM before the
    job builds its session: spark-submit's --master stays, and the job's state store
    settings and shuffle partitions still apply, over a --conf (a SparkApplication's
    sparkConf) of the same key. So the manifests need not repeat them."""
    main = tmp_path / "main.py"
    main.write_text(
        "from agent.aggregation.session import spark_session\n"
        "spark = spark_session('ksmon-test', master='local[2]', shuffle_partitions=3)\n"
        "print('master', spark.sparkContext.master)\n"
        f"for key in {sorted(_STATE_STORE_KEYS)!r}:\n"
        "    print(key, spark.conf.get(key))\n"
        "print('partitions', spark.conf.get('spark.sql.shuffle.partitions'))\n"
        "spark.stop()\n"
    )
    env = {
        **os.environ,
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
        "SPARK_DRIVER_BIND_ADDRESS": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    result = subprocess.run(
        [
            str(IMAGE / "spark-entrypoint.sh"),
            "driver",
            *("--master", "local[1]"),
            *("--conf", "spark.ui.enabled=false"),
            *("--conf", "spark.sql.shuffle.partitions=7"),
            *("--conf", "spark.sql.streaming.stateStore.providerClass=ignored"),
            str(main),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    assert lines["master"] == "local[1]"
    assert lines["partitions"] == "3"
    assert {key: lines[key] for key in _STATE_STORE_KEYS} == {
        key: STATEFUL_CONF[key] for key in _STATE_STORE_KEYS
    }
