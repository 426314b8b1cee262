"""The job image, built with podman and run the way deploy/job/ runs it: the
SparkApplication's driver (the image's entrypoint with "driver", spark-submit of its
main application file and arguments, its sparkConf, volumes and security context)
with deploy/job/job.yaml as its config, a local master in place of Kubernetes. It
reads the snapshot topic the agent image fills and serves the judged group and its
own health on /metrics, fetching nothing at its start."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from tests.image.ksmon_containers import (
    CLUSTER,
    IMAGE_USER,
    JOB_START_TIMEOUT,
    has_group,
    running_agent_image,
    series,
    start_streams_app,
)
from tests.image.podman import REPO, running_container
from tests.support.agent_process import metric_values
from tests.support.streams import StreamsApps, unique_name

pytestmark = pytest.mark.integration

JOB_MANIFESTS = REPO / "deploy" / "job"
# The driver pod's cores in the manifest, and one more for the executor it would start.
LOCAL_MASTER = "local[2]"


def spark_application() -> Any:
    return yaml.safe_load((JOB_MANIFESTS / "sparkapplication.yaml").read_text())


def driver_arguments(application: Any) -> list[str]:
    """The arguments the Spark operator gives the driver pod's entrypoint, with a local
    master: the application's sparkConf and driver memory, its main file and arguments."""
    spec = application["spec"]
    conf = {**spec.get("sparkConf", {}), "spark.driver.memory": spec["driver"]["memory"]}
    arguments = ["driver", "--master", LOCAL_MASTER]
    for key, value in conf.items():
        arguments += ["--conf", f"{key}={value}"]
    return [*arguments, spec["mainApplicationFile"], *spec["arguments"]]


def job_config(kafka: EmbeddedKafka, directory: Path, port: int, snapshot_topic: str) -> Path:
    """deploy/job/job.yaml with this machine's broker, port and topics in it."""
    document = yaml.safe_load((JOB_MANIFESTS / "job.yaml").read_text())
    (cluster,) = document["clusters"]
    document["clusters"] = [
        {**cluster, "name": CLUSTER, "bootstrap_servers": [kafka.bootstrap_servers]}
    ]
    document["aggregation"]["listen"] = f"127.0.0.1:{port}"
    document["sink"]["kafka"]["topic"] = snapshot_topic
    document["aggregation"]["findings"] = {"topic": unique_name("findings"), "partitions": 1}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "job.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return directory


def test_the_job_image_judges_the_agents_snapshots_as_its_manifests_run_it(
    agent_image: str,
    job_image: str,
    kafka: EmbeddedKafka,
    streams_apps: StreamsApps,
    tmp_path: Path,
) -> None:
    app = start_streams_app(kafka, streams_apps, "image-job-app")

    application = spark_application()
    driver = application["spec"]["driver"]
    mounts = {m["name"]: m["mountPath"] for m in driver["volumeMounts"]}
    security = driver["podSecurityContext"] | driver["securityContext"]
    read_only = security.get("readOnlyRootFilesystem", False)
    port = free_port()
    snapshot_topic = unique_name("snapshots")
    config = job_config(kafka, tmp_path / "job-config", port, snapshot_topic)
    # The checkpoint volume: writable by the job's user, as fsGroup makes it in the pod.
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    checkpoint.chmod(0o777)

    with (
        running_agent_image(agent_image, kafka, tmp_path, snapshot_topic),
        running_container(
            job_image,
            driver_arguments(application),
            log=tmp_path / "job-container.log",
            user=f"{security['runAsUser']}:{security['runAsGroup']}",
            read_only=read_only,
            tmpfs=["/tmp"] if read_only else [],  # noqa: S108 - the pod's emptyDir
            volumes={config: f"{mounts['config']}:ro", checkpoint: mounts["checkpoint"]},
        ) as job,
    ):
        wait_until(
            lambda: has_group(port, "ksmon_streams_thread_load_records_per_second", app),
            timeout=JOB_START_TIMEOUT,
            interval=2.0,
            what=f"the job container's /metrics to judge group {app}",
            abort=job.exited,
        )
        values = metric_values(port)
        assert values["ksmon_job_snapshots_processed_total"][()] > 0
        assert values["ksmon_job_waiting_for_input"][()] == 0
        assert values["ksmon_job_batch_errors_total"][()] == 0
        newest = values["ksmon_job_newest_snapshot_timestamp_seconds"]
        assert (("kafka_cluster", CLUSTER),) in newest
        assert job.exec("id", "-u").stdout.strip() == IMAGE_USER
        assert any((checkpoint / "stream" / "offsets").iterdir()), "no checkpoint on the volume"
        assert series(port, "ksmon_job_last_batch_timestamp_seconds")
    log = (tmp_path / "job-container.log").read_text()
    assert "Traceback" not in log
    # The Kafka source comes from the image (aggregation.spark.jars_dir), not from Ivy.
    assert "resolving dependencies" not in log
