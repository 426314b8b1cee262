"""Start fleets of the Kafka Streams fixture app for a test, and always stop them."""

import re
import uuid
from pathlib import Path

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.streams_app import StreamsAppBuild, StreamsAppConfig, StreamsAppInstance


def unique_name(base: str) -> str:
    """A name no other test on the shared broker uses: ``<base>-<6 hex>``."""
    return f"{re.sub(r'[^a-zA-Z0-9-]+', '-', base).strip('-')[:40]}-{uuid.uuid4().hex[:6]}"


class StreamsApps:
    """Starts instances of the fixture app against the session broker and stops
    every one of them when the test ends, whatever happened in between."""

    def __init__(self, kafka: EmbeddedKafka, build: StreamsAppBuild, work_dir: Path) -> None:
        self.kafka = kafka
        self.build = build
        self.work_dir = work_dir
        self.instances: list[StreamsAppInstance] = []

    def start(
        self, config: StreamsAppConfig, instances: int = 1, *, wait: bool = True
    ) -> list[StreamsAppInstance]:
        """Start ``instances`` JVMs at once, then wait for all to reach RUNNING."""
        started = []
        for _ in range(instances):
            name = f"{config.application_id}-{len(self.instances)}"
            instance = StreamsAppInstance(
                self.build, self.kafka.bootstrap_servers, config, name, self.work_dir / name
            )
            self.instances.append(instance)
            started.append(instance)
        # Spawn every JVM before waiting for any: they boot in parallel.
        for instance in started:
            instance.start()
        if wait:
            for instance in started:
                instance.wait_until_running()
        return started

    def stop_all(self) -> None:
        for instance in self.instances:
            instance.stop(timeout=15)
