"""The task loads topic: the job publishes each Kafka Streams application's latest
per-task loads, and the load-aware task assignor (assignor/) reads them when it
assigns. No Spark here.

One ``TaskLoads`` record per application, keyed ``<cluster>/<application id>``, on a
compacted topic, so the latest per application is what stays. After each micro-batch,
the applications whose newest judged poll moved on are published again. Loads are
advice: an assignor without fresh ones falls back to Kafka Streams' own, so a failure
here never fails a batch: it is said once, and tried again only after ``RETRY_AFTER``
seconds, so a cluster away does not hold every batch up for a client's timeouts.
"""

import logging
import time
from collections.abc import Callable, Iterable, Mapping

from agent.aggregation.judging.board import GroupTaskRates
from agent.aggregation.outputs.topics import TopicToCreate, TopicWriter
from agent.errors import described
from agent.model.task_loads import TaskLoads

log = logging.getLogger(__name__)

_TOPIC_CONFIGS = {"cleanup.policy": "compact"}
_SEND_SECONDS = 10.0  # a batch waits this long at most for the loads to be delivered
RETRY_AFTER = 60.0  # seconds without trying after a publish failed


class TaskLoadsPublisher:
    def __init__(
        self,
        settings: Mapping[str, object],
        topic: str,
        create: TopicToCreate | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self.writer = TopicWriter(
            settings,
            topic,
            create,
            configs=_TOPIC_CONFIGS,
            what="task loads topic",
            producer_settings={"acks": "all"},
        )
        self._published: dict[tuple[str, str], float] = {}  # poll time published, per group
        self._failing = False
        self._retry_at = 0.0  # by ``clock``: no try before this, after a failure

    @property
    def topic(self) -> str:
        return self.writer.topic

    def publish(self, groups: Iterable[GroupTaskRates]) -> int:
        """Publish the loads newer than those already published; how many were. ``groups``
        is every group the board has loads for: one missing from it is forgotten. Never
        raises: a failure is logged (once until publishing works again)."""
        groups = list(groups)
        present = {(g.cluster, g.group) for g in groups}
        self._published = {k: t for k, t in self._published.items() if k in present}
        fresh = [g for g in groups if g.t > self._published.get((g.cluster, g.group), -1.0)]
        if not fresh or self.clock() < self._retry_at:
            return 0
        records = [
            (TaskLoads.key_of(g.cluster, g.group), TaskLoads.of(g.group, g.t, g.rates).to_json())
            for g in fresh
        ]
        try:
            self.writer.ensure_topic()
            self.writer.send_all(records, timeout=_SEND_SECONDS)
        except Exception as e:  # noqa: BLE001 - advice only: said, retried, never fatal
            if not self._failing:
                log.warning(
                    "cannot publish task loads to %s (the assignor falls back until it "
                    "works; tried again every %.0f s): %s",
                    self.topic,
                    RETRY_AFTER,
                    described(e),
                )
            self._failing = True
            self._retry_at = self.clock() + RETRY_AFTER
            return 0
        if self._failing:
            log.info("task loads topic %s: publishing again", self.topic)
            self._failing = False
        for g in fresh:
            self._published[(g.cluster, g.group)] = g.t
        return len(fresh)

    def close(self) -> None:
        self.writer.close()
