"""The findings topic: the job publishes finding events, ``ksmon findings`` reads them back.

Records are ``FindingEvent`` JSON keyed by the finding (cluster/group/kind/
subject), so one finding's events stay in order on one partition. The topic
is ``compact,delete``: per finding the latest event survives compaction (a
close carries the whole finding), everything goes after 7 days. No Spark here.
"""

import logging
from collections.abc import Iterable, Mapping

from agent.aggregation.outputs.topics import TopicToCreate, TopicWriter
from agent.errors import KsmonError, described
from agent.model.findings import FindingEvent
from agent.model.records import RecordError

log = logging.getLogger(__name__)

_TOPIC_CONFIGS = {"cleanup.policy": "compact,delete", "retention.ms": str(7 * 24 * 3600 * 1000)}
_LOOK_BACK_RECORDS = 2000  # per partition, when checking what a crashed batch already sent
# The producer's delivery timeout (kafka-python's default, 120 s) and some: by then every
# record it holds was delivered or given up on.
_SETTLE_SECONDS = 150.0


class FindingsTopicError(KsmonError):
    retriable = True


class FindingsPublisher:
    """Synchronous publishing: a batch's events are on the broker, or ``publish`` raises.

    With ``create``, the topic is created if missing before anything is read from or
    written to it; until that has worked (the cluster unreachable when the job starts),
    ``ensure_topic`` tries again at each call, and ``publish`` raises.
    """

    def __init__(
        self, settings: Mapping[str, object], topic: str, create: TopicToCreate | None = None
    ) -> None:
        self.writer = TopicWriter(
            settings,
            topic,
            create,
            configs=_TOPIC_CONFIGS,
            what="findings topic",
            producer_settings={"acks": "all", "enable_idempotence": True, "linger_ms": 20},
        )

    @property
    def topic(self) -> str:
        return self.writer.topic

    def ensure_topic(self) -> None:
        """Create the topic if it is still to be created; FindingsTopicError if that fails."""
        try:
            self.writer.ensure_topic()
        except Exception as e:
            raise FindingsTopicError(
                f"cannot create findings topic {self.topic}: {described(e)}"
            ) from e

    def publish(self, events: Iterable[FindingEvent]) -> int:
        self.ensure_topic()
        events = list(events)
        try:
            self.writer.send_all([(e.key, e.to_json()) for e in events], timeout=30)
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
        # Records of an earlier ``publish`` that failed (the broker was away) are delivered
        # or expire first: landing after the look at the topic, they would go out twice.
        self.writer.settle(_SETTLE_SECONDS)
        found = set()
        for event in _recent_events(self.writer.settings, self.topic, _LOOK_BACK_RECORDS):
            if event.event_id in wanted:
                found.add(event.event_id)
        return found

    def close(self) -> None:
        self.writer.close()


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
