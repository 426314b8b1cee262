"""The findings topic: the job publishes finding events, ``ksmon findings`` reads them back.

Records are ``FindingEvent`` JSON keyed by the finding (cluster/group/kind/
subject), so one finding's events stay in order on one partition. The topic
is ``compact,delete``: per finding the latest event survives compaction (a
close carries the whole finding), everything goes after 7 days. No Spark here.
"""

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.errors import KsmonError, described
from agent.model.findings import FindingEvent
from agent.model.records import RecordError

log = logging.getLogger(__name__)

_RETENTION_MS = 7 * 24 * 3600 * 1000
_LOOK_BACK_RECORDS = 2000  # per partition, when checking what a crashed batch already sent
# The producer's delivery timeout (kafka-python's default, 120 s) and some: by then every
# record it holds was delivered or given up on.
_SETTLE_SECONDS = 150.0


class FindingsTopicError(KsmonError):
    retriable = True


def _admin_settings(settings: Mapping[str, object]) -> dict[str, object]:
    from kafka.admin import KafkaAdminClient  # noqa: PLC0415 - slow import

    return {k: v for k, v in settings.items() if k in KafkaAdminClient.DEFAULT_CONFIG}


def ensure_topic(
    settings: Mapping[str, object], topic: str, partitions: int, replication_factor: int
) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic  # noqa: PLC0415
    from kafka.errors import TopicAlreadyExistsError  # noqa: PLC0415

    # Reaching the cluster counts as a request: a cluster away fails within the cluster's
    # request timeout, not kafka-python's own 30 s plus back-off.
    admin_settings = _admin_settings(settings)
    if "request_timeout_ms" in admin_settings:
        admin_settings.setdefault("bootstrap_timeout_ms", admin_settings["request_timeout_ms"])
    admin = KafkaAdminClient(**admin_settings)
    try:
        if topic in set(admin.list_topics()):
            return
        try:
            admin.create_topics(
                [
                    NewTopic(
                        topic,
                        partitions,
                        replication_factor,
                        topic_configs={
                            "cleanup.policy": "compact,delete",
                            "retention.ms": str(_RETENTION_MS),
                        },
                    )
                ]
            )
            log.info("created findings topic %s", topic)
        except TopicAlreadyExistsError:
            pass
    finally:
        admin.close()


@dataclass(frozen=True)
class TopicToCreate:
    partitions: int
    replication_factor: int


class FindingsPublisher:
    """Synchronous publishing: a batch's events are on the broker, or ``publish`` raises.

    With ``create``, the topic is created if missing before anything is read from or
    written to it; until that has worked (the cluster unreachable when the job starts),
    ``ensure_topic`` tries again at each call, and ``publish`` raises.
    """

    def __init__(
        self, settings: Mapping[str, object], topic: str, create: TopicToCreate | None = None
    ) -> None:
        self.settings = dict(settings)
        self.topic = topic
        self._to_create = create
        self._producer: Any = None

    def ensure_topic(self) -> None:
        """Create the topic if it is still to be created; FindingsTopicError if that fails."""
        create = self._to_create
        if create is None:
            return
        try:
            ensure_topic(self.settings, self.topic, create.partitions, create.replication_factor)
        except Exception as e:
            raise FindingsTopicError(
                f"cannot create findings topic {self.topic}: {described(e)}"
            ) from e
        self._to_create = None

    def publish(self, events: Iterable[FindingEvent]) -> int:
        self.ensure_topic()
        events = list(events)
        if not events:
            return 0
        producer = self._ensure_producer()
        futures = [producer.send(self.topic, key=e.key, value=e.to_json()) for e in events]
        try:
            producer.flush(timeout=30)
            for future in futures:
                future.get(timeout=30)
        except Exception as e:
            raise FindingsTopicError(
                f"publishing {len(events)} finding events to {self.topic} failed: "
                f"{type(e).__name__}: {e}"
            ) from e
        return len(events)

    def already_published(self, events: Iterable[FindingEvent]) -> set[str]:
        """Which of ``events`` the topic already holds (looking at its recent records)."""
        wanted = {e.event_id for e in events}
        if not wanted:
            return set()
        self.ensure_topic()
        self._settle()
        found = set()
        for event in _recent_events(self.settings, self.topic, _LOOK_BACK_RECORDS):
            if event.event_id in wanted:
                found.add(event.event_id)
        return found

    def _settle(self) -> None:
        """Let the records of an earlier ``publish`` that failed (the broker was away) be
        delivered or expire first: landing after the look at the topic, they would be
        published twice."""
        if self._producer is not None:
            self._producer.flush(timeout=_SETTLE_SECONDS)

    def close(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.close(timeout=10)

    def _ensure_producer(self) -> Any:  # noqa: ANN401 - kafka-python is untyped
        if self._producer is None:
            from kafka import KafkaProducer  # noqa: PLC0415 - slow import

            self._producer = KafkaProducer(
                **self.settings, acks="all", enable_idempotence=True, linger_ms=20
            )
        return self._producer


def read_events(settings: Mapping[str, object], topic: str) -> list[FindingEvent]:
    """Every event on the topic up to its current end, in per-partition order."""
    return list(_recent_events(settings, topic, None))


def _recent_events(
    settings: Mapping[str, object], topic: str, per_partition: int | None
) -> Iterable[FindingEvent]:
    from kafka import KafkaConsumer, TopicPartition  # noqa: PLC0415 - slow import

    consumer_settings = {
        k: v
        for k, v in settings.items()
        if k in KafkaConsumer.DEFAULT_CONFIG and k not in {"group_id"}
    }
    consumer = KafkaConsumer(
        **consumer_settings, enable_auto_commit=False, consumer_timeout_ms=2000
    )
    try:
        partitions = consumer.partitions_for_topic(topic)
        if partitions is None:
            raise FindingsTopicError(
                f"findings topic {topic} does not exist (is the aggregation job running, "
                "with aggregation.findings.publish on?)"
            )
        assigned = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(assigned)
        ends = consumer.end_offsets(assigned)
        starts = consumer.beginning_offsets(assigned)
        remaining = {}
        for tp in assigned:
            start = (
                starts[tp] if per_partition is None else max(starts[tp], ends[tp] - per_partition)
            )
            consumer.seek(tp, start)
            if ends[tp] > start:
                remaining[tp] = ends[tp]
        while remaining:
            batch = consumer.poll(timeout_ms=2000)
            if not batch:
                break
            for tp, records in batch.items():
                for record in records:
                    if record.offset >= remaining.get(tp, 0):
                        continue
                    try:
                        yield FindingEvent.from_json(record.value)
                    except RecordError as e:
                        log.warning(
                            "skipping an unreadable finding event at %s@%d: %s",
                            tp,
                            record.offset,
                            e,
                        )
                if tp in remaining and consumer.position(tp) >= remaining[tp]:
                    del remaining[tp]
    finally:
        consumer.close()
