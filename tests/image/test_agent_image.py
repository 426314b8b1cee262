"""The agent image, built with podman and run the way the sidecar and central
Deployments run it: as user 10001 with a read-only root file system and a tmpfs on
/tmp, its config mounted read-only. It polls the session broker and serves /metrics
with the fixture Streams app's group; it carries the lean install only."""

import shlex
import subprocess
from pathlib import Path

import pytest

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.process import wait_until
from tests.image.ksmon_containers import (
    CLUSTER,
    IMAGE_USER,
    has_group,
    running_agent_image,
    series,
    start_streams_app,
)
from tests.image.podman import RUNTIME_FLAGS, image_size, run_once
from tests.support.agent_process import metric_values
from tests.support.streams import StreamsApps, unique_name

pytestmark = pytest.mark.integration

# The sidecar runs beside every Kafka Streams pod: the image stays small.
AGENT_IMAGE_MAX_BYTES = 150 * 10**6
# Distributions only the aggregation job needs (`ksmon[aggregate]`).
JOB_ONLY = ("pyspark", "numpy", "pandas", "pyarrow")
# An MSK cluster's config: the region is in the broker's host name, the credentials
# would come from the pod's role (check-config fetches none).
MSK_CONFIG = """\
clusters:
  - name: msk
    bootstrap_servers: ["b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"]
    security:
      protocol: SASL_SSL
      sasl: {mechanism: AWS_MSK_IAM}
"""


def test_the_agent_image_polls_the_broker_and_serves_the_apps_group_read_only(
    agent_image: str, kafka: EmbeddedKafka, streams_apps: StreamsApps, tmp_path: Path
) -> None:
    app = start_streams_app(kafka, streams_apps, "image-agent-app")

    with running_agent_image(agent_image, kafka, tmp_path, unique_name("snapshots")) as (
        container,
        port,
    ):
        wait_until(
            lambda: (
                has_group(port, "ksmon_streams_instances", app)
                and series(port, "ksmon_snapshots_sent_total").get((("sink", "kafka"),), 0) > 0
            ),
            timeout=90,
            interval=1.0,
            what=f"the agent container to show group {app} and ship a snapshot",
            abort=container.exited,
        )
        values = metric_values(port)
        assert values["ksmon_streams_instances"][(("group", app), ("kafka_cluster", CLUSTER))] == 1

        assert container.exec("id", "-u").stdout.strip() == IMAGE_USER
        for path in ("/opt/ksmon/probe", "/etc/ksmon/probe"):
            written = container.exec("touch", path)
            assert written.returncode != 0, f"{path} is writable"
            assert "Read-only file system" in written.stderr
        tmpfs_probe = "/tmp/probe"  # noqa: S108 - inside the container, on its tmpfs
        assert container.exec("touch", tmpfs_probe).returncode == 0, "the tmpfs is not writable"
    assert "Traceback" not in (tmp_path / "agent-container.log").read_text()


def test_the_agent_image_is_the_lean_install_and_small(agent_image: str) -> None:
    installed = run_once(
        agent_image,
        "-c",
        "import importlib.metadata as m; print(' '.join(d.metadata['Name'].lower() "
        "for d in m.distributions()))",
        entrypoint="python3",
    ).split()
    assert "ksmon" in installed
    assert "kafka-python" in installed
    assert [name for name in JOB_ONLY if name in installed] == []
    size = image_size(agent_image)
    assert size <= AGENT_IMAGE_MAX_BYTES, f"the agent image has {size / 1e6:.0f} MB"


def _check_msk_config(image: str) -> subprocess.CompletedProcess[str]:
    """``ksmon check-config`` on MSK_CONFIG, written inside a fresh container."""
    script = (
        f"printf '%s' {shlex.quote(MSK_CONFIG)} > /tmp/ksmon.yaml "
        "&& exec ksmon check-config /tmp/ksmon.yaml"
    )
    return subprocess.run(
        ["podman", "run", "--rm", *RUNTIME_FLAGS, "--entrypoint", "sh", image, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_lean_agent_image_says_an_msk_login_needs_the_msk_extra(agent_image: str) -> None:
    checked = _check_msk_config(agent_image)
    assert checked.returncode != 0, checked.stdout
    assert "needs the Python package botocore (pip install 'ksmon[msk]')" in checked.stderr
    assert "Traceback" not in checked.stderr


def test_the_agent_image_built_with_the_msk_extra_takes_an_msk_config(
    agent_msk_image: str,
) -> None:
    checked = _check_msk_config(agent_msk_image)
    assert checked.returncode == 0, checked.stderr
    assert "over SASL_SSL AWS_MSK_IAM (credentials from the AWS chain)" in checked.stdout
    installed = run_once(
        agent_msk_image,
        "-c",
        "import importlib.metadata as m; print(m.version('botocore'))",
        entrypoint="python3",
    )
    assert installed, "botocore is installed"
