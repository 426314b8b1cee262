"""Start fleets of the Kafka Streams fixture app for a test, and always stop them."""

import re
import uuid
from pathlib import Path
from typing import Any

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import key_for_partition, produce
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppBuild, StreamsAppConfig, StreamsAppInstance
from agent.embedded.topics import end_offsets
from agent.model import Snapshot


def unique_name(base: str) -> str:
    """A name no other test on the shared broker uses: ``<base>-<6 hex>``."""
    return f"{re.sub(r'[^a-zA-Z0-9-]+', '-', base).strip('-')[:40]}-{uuid.uuid4().hex[:6]}"


def ksmon_view(snapshot: Snapshot) -> dict[tuple[str, int], tuple[set[str], set[str]]]:
    """(process id, thread index) -> (active tasks, standby tasks), as ksmon decoded them."""
    view = {}
    for m in snapshot.members:
        assert m.streams is not None, f"member {m.member_id} was not decoded: {m.decode_errors}"
        assert m.streams.thread_index is not None
        view[(m.streams.process_id, m.streams.thread_index)] = (
            {t.task for t in m.streams.active_tasks},
            {t.task for t in m.streams.standby_tasks},
        )
    return view


def app_view(
    instances: list[StreamsAppInstance],
) -> dict[tuple[str, int], tuple[set[str], set[str]]]:
    """The same, from each instance's own metadataForLocalThreads()."""
    view = {}
    for instance in instances:
        state: dict[str, Any] | None = instance.oracle()
        assert state is not None
        for thread in state["threads"]:
            index = int(thread["name"].rsplit("-", 1)[1])
            view[(state["processId"], index)] = (
                {t["taskId"] for t in thread["activeTasks"]},
                {t["taskId"] for t in thread["standbyTasks"]},
            )
    return view


def owned_input_partitions(instance: StreamsAppInstance, topic: str) -> list[int]:
    """The partitions of ``topic`` the instance's active tasks read, from its own view."""
    view = instance.oracle()
    assert view is not None, f"{instance.name} does not answer"
    return sorted(
        int(partition.rsplit("-", 1)[1])
        for thread in view["threads"]
        for task in thread["activeTasks"]
        for partition in task["partitions"]
        if partition.startswith(f"{topic}-")
    )


def poison_instance(
    kafka: EmbeddedKafka, instance: StreamsAppInstance, topic: str, partitions: int
) -> None:
    """Send a poison pill (prefix ``poison``) to an input partition ``instance`` owns."""
    owned = owned_input_partitions(instance, topic)
    assert owned, f"{instance.name} owns at least one partition of {topic}"
    pill = key_for_partition(owned[0], partitions, prefix="poison")
    produce(kafka.bootstrap_servers, topic, [(pill, "boom")])


def fill_changelog(kafka: EmbeddedKafka, topic: str, changelog: str, keys: int) -> None:
    """Produce ``keys`` distinct keys to ``topic`` and wait until the count topology
    has written them all to its changelog."""
    produce(kafka.bootstrap_servers, topic, [(f"k{n}", "v") for n in range(keys)])
    wait_until(
        lambda: sum(end_offsets(kafka.bootstrap_servers, changelog).values()) >= keys,
        timeout=60,
        what=f"{keys} distinct keys in {changelog}",
    )


class StreamsApps:
    """Starts instances of the fixture app against the session broker and stops
    every one of them when the test ends, whatever happened in between."""

    def __init__(self, kafka: EmbeddedKafka, build: StreamsAppBuild, work_dir: Path) -> None:
        self.kafka = kafka
        self.build = build
        self.work_dir = work_dir
        self.instances: list[StreamsAppInstance] = []

    def start(
        self,
        config: StreamsAppConfig,
        instances: int = 1,
        *,
        wait: bool = True,
        build: StreamsAppBuild | None = None,
    ) -> list[StreamsAppInstance]:
        """Start ``instances`` JVMs at once, then wait for all to reach RUNNING.

        ``build`` runs another build of the app (another Kafka Streams version)."""
        started = []
        for _ in range(instances):
            name = f"{config.application_id}-{len(self.instances)}"
            instance = StreamsAppInstance(
                build or self.build,
                self.kafka.bootstrap_servers,
                config,
                name,
                self.work_dir / name,
            )
            self.instances.append(instance)
            started.append(instance)
        # Spawn every JVM before waiting for any: they boot in parallel.
        for instance in started:
            instance.start()
        if wait:
            for instance in started:
                instance.wait_until_running()
            if len(started) > 1:
                # A later joiner sends the ones already RUNNING through another rebalance:
                # done when every instance runs at the same time. (CI caught one still
                # REBALANCING right after this returned.)
                wait_until(
                    lambda: all(i.is_running() for i in started),
                    timeout=90,
                    what=f"{config.application_id}: all {len(started)} instances RUNNING at once",
                    abort=lambda: next(filter(None, (i.died() for i in started)), None),
                )
        return started

    def stop_all(self) -> None:
        for instance in self.instances:
            instance.stop(timeout=15)
