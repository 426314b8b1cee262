"""ksmon's images run the way the manifests in deploy/ run them, against the session's
broker: the agent as the image's user with a read-only root file system and a tmpfs
on /tmp, its config mounted read-only."""

import contextlib
from collections.abc import Iterator
from pathlib import Path

import yaml

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import produce
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppConfig
from agent.embedded.topics import create_topics
from tests.image.podman import Container, running_container
from tests.support.agent_process import metric_values
from tests.support.streams import StreamsApps, unique_name

IMAGE_USER = "10001"
CLUSTER = "local"
# A JVM, Spark and the first micro-batch, on two shared cores.
JOB_START_TIMEOUT = 300


def series(port: int, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples of one metric on 127.0.0.1:``port``, empty while nothing answers."""
    try:
        return metric_values(port).get(name, {})
    except OSError:
        return {}


def has_group(port: int, name: str, group: str) -> bool:
    return any(("group", group) in labels for labels in series(port, name))


def start_streams_app(kafka: EmbeddedKafka, streams_apps: StreamsApps, prefix: str) -> str:
    """The fixture Streams app (two threads over a four-partition input) started and fed
    200 records; its application id."""
    app = unique_name(prefix)
    topic = f"{app}-in"
    create_topics(kafka.bootstrap_servers, {topic: 4})
    streams_apps.start(
        StreamsAppConfig(
            application_id=app, input_topic=topic, output_topic=f"{app}-out", threads=2
        )
    )
    produce(kafka.bootstrap_servers, topic, [(f"k{n}", "v") for n in range(200)])
    return app


def agent_config(kafka: EmbeddedKafka, directory: Path, port: int, snapshot_topic: str) -> Path:
    """A central agent's config: it polls the session broker every second and ships
    its snapshots to ``snapshot_topic``."""
    directory.mkdir(parents=True, exist_ok=True)
    document = {
        "agent": {"id": "image-test-agent"},
        "http": {"listen": f"127.0.0.1:{port}"},
        "logging": {"format": "json", "level": "info"},
        "clusters": [
            {
                "name": CLUSTER,
                "bootstrap_servers": [kafka.bootstrap_servers],
                "poll": {"offsets_interval": "1s", "metadata_interval": "5s"},
            }
        ],
        "sink": {"type": "kafka", "kafka": {"topic": snapshot_topic}},
    }
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@contextlib.contextmanager
def running_agent_image(
    image: str, kafka: EmbeddedKafka, work: Path, snapshot_topic: str
) -> Iterator[tuple[Container, int]]:
    """The agent image as the sidecar and central Deployments run it, until its first
    successful poll; yields the container and its /metrics port."""
    port = free_port()
    config = agent_config(kafka, work / "agent-config", port, snapshot_topic)
    with running_container(
        image,
        log=work / "agent-container.log",
        user=f"{IMAGE_USER}:{IMAGE_USER}",
        read_only=True,
        tmpfs=["/tmp"],  # noqa: S108 - the emptyDir the manifests mount there
        volumes={config: "/etc/ksmon/config.yaml:ro"},
    ) as container:
        wait_until(
            lambda: series(port, "ksmon_kafka_up").get((("kafka_cluster", CLUSTER),)) == 1.0,
            timeout=90,
            interval=1.0,
            what="the agent container's first successful poll",
            abort=container.exited,
        )
        yield container, port
