"""The topics the job writes to besides its input: created when missing, with the
partitions, replication and configs the deployment asked for, and written through one
producer each. No Spark here."""

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TopicToCreate:
    partitions: int
    replication_factor: int


def _admin_settings(settings: Mapping[str, object]) -> dict[str, object]:
    from kafka.admin import KafkaAdminClient  # noqa: PLC0415 - slow import

    return {k: v for k, v in settings.items() if k in KafkaAdminClient.DEFAULT_CONFIG}


def ensure_topic(
    settings: Mapping[str, object],
    topic: str,
    create: TopicToCreate,
    configs: Mapping[str, str],
    what: str,
) -> None:
    """Create ``topic`` unless it exists; ``what`` names it in the log line."""
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
                        create.partitions,
                        create.replication_factor,
                        topic_configs=dict(configs),
                    )
                ]
            )
            log.info("created %s %s", what, topic)
        except TopicAlreadyExistsError:
            pass
    finally:
        admin.close()


class TopicWriter:
    """One topic the job writes: created, when asked to, before the first write (tried
    again at each call until that works), and the producer that writes it, made at first
    use with ``producer_settings`` on top of the cluster's settings."""

    def __init__(
        self,
        settings: Mapping[str, object],
        topic: str,
        create: TopicToCreate | None,
        *,
        configs: Mapping[str, str],
        what: str,
        producer_settings: Mapping[str, object],
    ) -> None:
        self.settings = dict(settings)
        self.topic = topic
        self.what = what
        self._to_create = create
        self._configs = dict(configs)
        self._producer_settings = dict(producer_settings)
        self._producer: Any = None

    def ensure_topic(self) -> None:
        """Create the topic if it is still to be created; raises what creating raised."""
        if self._to_create is not None:
            ensure_topic(self.settings, self.topic, self._to_create, self._configs, self.what)
            self._to_create = None

    def send_all(self, records: Sequence[tuple[bytes, bytes]], timeout: float) -> None:
        """Write (key, value) records and wait until the broker has each; raises if not."""
        if not records:
            return
        producer = self._ensure_producer()
        futures = [producer.send(self.topic, key=key, value=value) for key, value in records]
        producer.flush(timeout=timeout)
        for future in futures:
            future.get(timeout=timeout)

    def settle(self, timeout: float) -> None:
        """Let records still held (from a write that failed) be delivered or expire."""
        if self._producer is not None:
            self._producer.flush(timeout=timeout)

    def close(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.close(timeout=10)

    def _ensure_producer(self) -> Any:  # noqa: ANN401 - kafka-python is untyped
        if self._producer is None:
            from kafka import KafkaProducer  # noqa: PLC0415 - slow import

            self._producer = KafkaProducer(**self.settings, **self._producer_settings)
        return self._producer
