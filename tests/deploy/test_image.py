"""The container image definition, as far as it can be checked without building it
(tests/image/ builds and runs both images with podman): the Dockerfile's files are in
the build context, its bases are pinned build arguments, its user is the one the
manifests run as, the job's config takes the Kafka source from where the image puts
it, and the build step written in Python (the requirements of each image) does what
the build needs. The job image's entrypoint runs a real spark-submit in its driver
role, under which the job's own session settings (the state store) still apply."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest
import yaml

from agent.aggregation.spark.session import STATEFUL_CONF
from deploy.image.build_helpers import UnknownExtraError, requirements
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
KAFKA_SOURCE = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
# The settings the job's session gives Spark's state store (RocksDB, its changelog).
_STATE_STORE_KEYS = frozenset(k for k in STATEFUL_CONF if k.startswith("spark.sql.streaming."))


def test_the_jobs_config_takes_the_kafka_source_from_where_the_image_puts_it() -> None:
    """The job image holds the Kafka source's jars; a job config without
    aggregation.spark.jars_dir would fetch them from Maven Central at every start."""
    (into,) = re.findall(r"kafka_package\s+\\\s*--into (\S+)", DOCKERFILE)
    job = yaml.safe_load((DEPLOY / "job" / "job.yaml").read_text())
    assert job["aggregation"]["spark"]["jars_dir"] == into


def test_base_images_are_pinned_to_exact_versions() -> None:
    images = dict(re.findall(r"^ARG (\w+_IMAGE)=(\S+)$", DOCKERFILE, re.MULTILINE))
    assert set(images) == {"PYTHON_IMAGE", "JAVA_IMAGE"}
    for image in images.values():
        tag = image.partition(":")[2]
        assert re.match(r"\d+\.\d+\.\d+", tag), f"{image}: pin a full version, not {tag!r}"
    assert images["PYTHON_IMAGE"].startswith("python:3.11.")
    assert re.match(r"eclipse-temurin:17\.\d+\.\d+_\d+-jre", images["JAVA_IMAGE"])
    # Every FROM is a base argument or an earlier stage.
    for base in re.findall(r"^FROM (\S+)", DOCKERFILE, re.MULTILINE):
        assert base.startswith("${") or base in re.findall(r" AS ([\w-]+)$", DOCKERFILE, re.M)
    # The local bases the image tests build on are the ones make-debian-bases makes.
    script = (IMAGE / "make-debian-bases").read_text()
    for tag in ("localhost/ksmon-base-python:", "localhost/ksmon-base-jre:"):
        assert tag in script


def test_the_base_image_script_is_valid_bash() -> None:
    script = IMAGE / "make-debian-bases"
    assert os.access(script, os.X_OK)
    subprocess.run(["bash", "-n", str(script)], check=True)


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


PYPROJECT = (REPO / "pyproject.toml").read_text()
JOB_ONLY = {"pyspark", "numpy", "pandas", "pyarrow"}


def _names(listed: list[str]) -> set[str]:
    return {re.match(r"[A-Za-z0-9_.-]+", r)[0].lower() for r in listed}  # type: ignore[index]


def test_the_agent_image_gets_the_lean_install() -> None:
    names = _names(requirements(PYPROJECT))
    assert not names & JOB_ONLY
    assert {"kafka-python", "prometheus-client", "pyyaml"} <= names


def test_the_job_image_gets_the_aggregate_extra_too() -> None:
    names = _names(requirements(PYPROJECT, ["aggregate"]))
    assert {"pyspark", "numpy", "pandas", "kafka-python"} <= names


def test_an_extra_naming_the_project_brings_that_extras_dependencies() -> None:
    pyproject = """
[project]
name = "ksmon"
dependencies = ["a"]
[project.optional-dependencies]
job = ["b", "a"]
dev = ["KSmon[job]", "c"]
"""
    assert requirements(pyproject, ["dev"]) == ["a", "b", "c"]


def test_an_unknown_extra_is_an_error_naming_the_known_ones() -> None:
    known = r"\(extras: aggregate, dev, kerberos, msk\)"
    with pytest.raises(UnknownExtraError, match=r"no extra 'agregate' " + known):
        requirements(PYPROJECT, ["agregate"])
    helper = [sys.executable, str(IMAGE / "build_helpers.py"), "requirements"]
    run = subprocess.run(
        [*helper, str(REPO / "pyproject.toml"), "agregate"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr.count("\n") == 1, "one line, no traceback"


@pytest.mark.parametrize(
    ("arguments", "extras"),
    [
        (["aggregate", ""], ["aggregate"]),  # EXTRAS not set: nothing more
        (["msk"], ["msk"]),
        (["aggregate", "msk,kerberos"], ["aggregate", "msk", "kerberos"]),
        ([" msk , "], ["msk"]),
    ],
)
def test_the_build_step_takes_the_extras_as_the_build_argument_gives_them(
    arguments: list[str], extras: list[str]
) -> None:
    helper = [sys.executable, str(IMAGE / "build_helpers.py"), "requirements"]
    run = subprocess.run(
        [*helper, str(REPO / "pyproject.toml"), *arguments],
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.splitlines() == requirements(PYPROJECT, extras)


@pytest.fixture(scope="module")
def kafka_source_jars(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The Kafka source's jars as the job image gets them: the command its build runs."""
    jars = tmp_path_factory.mktemp("kafka-source-jars")
    run = subprocess.run(
        [sys.executable, "-m", "agent.aggregation.spark.kafka_package", "--into", str(jars)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        timeout=600,
    )
    if run.returncode != 0:
        unavailable("Spark's package fetch (the Kafka source)", run.stderr.strip()[-2000:])
    return sorted(jars.glob("*.jar"))


@pytest.mark.integration
def test_the_entrypoint_driver_role_runs_spark_submit_with_the_kafka_source(
    kafka_source_jars: list[Path], tmp_path: Path
) -> None:
    """What Spark on Kubernetes runs in the driver pod (`<entrypoint> driver ...`),
    with a local master instead of k8s://: spark-submit in client mode starts the
    Python main file, whose Spark session finds the Kafka source on the classpath
    (spark.jars, as aggregation.spark.jars_dir sets it)."""
    main = tmp_path / "main.py"
    main.write_text(
        "import sys\n"
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "conf = spark.sparkContext.getConf()\n"
        "jvm = spark.sparkContext._jvm\n"
        # The lookup format("kafka") makes, through the classloader spark-submit set up.
        "lookup = jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource\n"
        "provider = lookup('kafka', spark._jsparkSession.sessionState().conf())\n"
        "print('deploy-mode', conf.get('spark.submit.deployMode'))\n"
        "print('bind-address', conf.get('spark.driver.bindAddress'))\n"
        "print('kafka-source', provider.getName())\n"
        "print('args', ' '.join(sys.argv[1:]))\n"
        "spark.stop()\n"
    )
    env = {
        **os.environ,
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
        "SPARK_DRIVER_BIND_ADDRESS": "127.0.0.1",
        # The executor fetches spark.jars from the driver: at 127.0.0.1 too.
        "SPARK_LOCAL_IP": "127.0.0.1",
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
            "--conf",
            f"spark.jars={','.join(str(jar) for jar in kafka_source_jars)}",
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
        "from agent.aggregation.spark.session import spark_session\n"
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
