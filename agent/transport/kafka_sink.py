"""Ship snapshots to a Kafka topic, through a bounded buffer and a sender thread.

The poller calls ``send`` and moves on: the record goes into a bounded
buffer (oldest dropped, and counted, when full) and a background thread
delivers it with an idempotent producer (``acks=all``). While the broker or
topic is unreachable, records wait and are retried in order; the longest
delivered prefix of each batch leaves the buffer, so delivery is at least
once and per-key order is kept. A topic deleted while the agent runs is
created again; after any failed attempt the next one uses a new producer.
"""

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agent import kafka_python_fixes
from agent.errors import described, first_line
from agent.transport.buffer import BoundedBuffer
from agent.transport.sink import SinkStats

log = logging.getLogger(__name__)

_BATCH = 500
# The producer's record batch per partition, at most. A poll of 1,000 groups ships
# megabytes of snapshots: kafka-python's default batch of 16 KB made that hundreds of
# batches, each built, compressed and acknowledged on its own; 256 KB batches cut the
# sink's CPU most, and larger ones saved little more and held more memory.
PRODUCER_BATCH_BYTES = 256 * 1024
# Closing: deliveries that make no progress for this long are not waited for.
_STALL_SECONDS = 1.0
_RETENTION_MS = 7 * 24 * 3600 * 1000


class KafkaTopicSink:
    def __init__(
        self,
        client_settings: Mapping[str, object],
        topic: str,
        *,
        partitions: int = 6,
        replication_factor: int = -1,
        compression: str = "gzip",
        buffer_max_snapshots: int = 10_000,
        buffer_max_bytes: int = 256 * 1024**2,
        max_message_bytes: int = 8 * 1024**2,
        create_topic: bool = True,
        delivery_timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = dict(client_settings)
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.compression = None if compression == "none" else compression
        self.max_message_bytes = max_message_bytes
        self.create_topic = create_topic
        self.delivery_timeout = delivery_timeout
        self._clock = clock
        self._buffer = BoundedBuffer(buffer_max_snapshots, buffer_max_bytes)
        self._producer: Any = None
        self._topic_checked = False
        self._stop = threading.Event()
        self._sent = 0
        self._errors = 0
        self._last_error: str | None = None
        self._last_success: float | None = None
        self._failing = False  # the last delivery attempt failed
        self._failures_in_row = 0  # warned about each; the next delivery says it works again
        self._backoff = 0.5
        self._thread = threading.Thread(target=self._run, name=f"ksmon-sink-{topic}", daemon=True)
        self._thread.start()

    # -- the caller's side: cheap and non-blocking ----------------------------

    def send(self, key: bytes, payload: bytes) -> None:
        self.send_all([(key, payload)])

    def send_all(self, records: Sequence[tuple[bytes, bytes]]) -> None:
        dropped = self._buffer.offer_all(records)
        if dropped:
            log.warning(
                "snapshot buffer for topic %s is full; dropped the %d oldest", self.topic, dropped
            )

    def flush(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while len(self._buffer) and time.monotonic() < deadline:
            self._buffer.wake()
            time.sleep(0.05)
        return len(self._buffer) == 0

    def close(self, timeout: float = 10.0) -> None:
        """Deliver what is buffered within ``timeout``, but only while deliveries work:
        with the broker down, waiting for it would only delay the exit. What is left
        shows in ``stats().buffered`` (the caller says it was not shipped)."""
        deadline = time.monotonic() + timeout
        if not self._failing:
            self._flush_while_delivering(deadline)
        self._stop.set()
        self._buffer.wake()
        # The sender may be inside a delivery (its producer blocks up to the delivery
        # timeout); it is a daemon thread and its records stay counted as buffered.
        self._thread.join(max(0.0, min(0.2, deadline - time.monotonic())))
        producer, self._producer = self._producer, None
        if producer is not None:
            left = 0.0 if self._failing else max(0.0, deadline - time.monotonic())
            try:
                producer.close(timeout=left)
            except Exception as e:  # noqa: BLE001 - a broken producer may fail to close in any way
                log.debug("closing the producer failed: %s", e)

    def _flush_while_delivering(self, deadline: float) -> None:
        """Wait for the buffer to empty, but give up once a second passes without a
        delivery (the first one to a dead broker only fails after its timeouts)."""
        progress_at, sent = time.monotonic(), self._sent
        while len(self._buffer) and not self._failing:
            now = time.monotonic()
            if self._sent != sent:
                progress_at, sent = now, self._sent
            if now >= deadline or now - progress_at >= _STALL_SECONDS:
                return
            self._buffer.wake()
            time.sleep(0.05)

    def stats(self) -> SinkStats:
        return SinkStats(
            kind="kafka",
            sent=self._sent,
            dropped=self._buffer.dropped,
            errors=self._errors,
            buffered=len(self._buffer),
            last_error=self._last_error,
            last_success_timestamp=self._last_success,
        )

    # -- the sender thread ------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._buffer.wait(timeout=1.0):
                continue
            try:
                delivered = self._deliver(self._buffer.head(_BATCH))
            except Exception as e:  # noqa: BLE001 - any failure: record, back off, retry
                self._failed(e)
                delivered = False
            if delivered:
                self._backoff = 0.5
            else:
                self._stop.wait(self._backoff)
                self._backoff = min(self._backoff * 2, 10.0)

    def _deliver(self, batch: list[tuple[bytes, bytes]]) -> bool:
        if not batch:
            return True
        producer = self._ensure_producer()
        if not self._topic_checked:
            self._ensure_topic()
        futures = [producer.send(self.topic, key=key, value=payload) for key, payload in batch]
        producer.flush(timeout=self.delivery_timeout)
        done: list[tuple[bytes, bytes]] = []
        failure: BaseException | None = None
        for record, future in zip(batch, futures, strict=True):
            try:
                future.get(timeout=0)
            except Exception as e:  # noqa: BLE001 - per-record delivery failure
                failure = e
                break
            done.append(record)
        self._buffer.remove_head(done)
        if done:
            self._sent += len(done)
            self._last_success = self._clock()
        if failure is not None:
            self._failed(failure)
            return False
        if self._failures_in_row:
            log.info(
                "delivering snapshots to topic %s again, after %s",
                self.topic,
                f"{self._failures_in_row} failed attempt{'s' * (self._failures_in_row != 1)}",
            )
            self._failures_in_row = 0
        self._failing = False
        return True

    def _failed(self, error: BaseException) -> None:
        self._errors += 1
        self._failing = True
        self._failures_in_row += 1
        name = type(error).__name__
        text = first_line(error)
        self._last_error = described(error)
        log.warning("delivering snapshots to topic %s failed: %s", self.topic, self._last_error)
        if "Topic" in name or "Timeout" in name or "Metadata" in text:
            # The topic may have been deleted: check (and create it) before the next try.
            self._topic_checked = False
        # The next try gets a new producer: one that saw its topic deleted and
        # created again kept failing (stale metadata and idempotence state), and
        # one that met a refused login or a dead broker has nothing worth keeping.
        # What it still held is in the buffer, and is sent again.
        self._drop_producer()

    def _drop_producer(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            try:
                producer.close(timeout=1)
            except Exception as e:  # noqa: BLE001
                log.debug("closing the producer failed: %s", e)

    def _ensure_producer(self) -> Any:  # noqa: ANN401 - kafka-python is untyped
        if self._producer is None:
            from kafka import KafkaProducer  # noqa: PLC0415 - slow import

            from agent.transport.key_partitioner import RememberingPartitioner  # noqa: PLC0415

            timeout_ms = int(self.delivery_timeout * 1000)
            # The cluster's settings (servers, TLS, SASL) under the sink's own:
            # a key in both (request_timeout_ms) must not reach the producer twice.
            settings = {
                k: v for k, v in self._settings.items() if k in KafkaProducer.DEFAULT_CONFIG
            }
            settings.update(
                acks="all",
                enable_idempotence=True,
                compression_type=self.compression,
                max_request_size=self.max_message_bytes,
                # A batch is one message to the topic: never more than it accepts.
                batch_size=min(PRODUCER_BATCH_BYTES, self.max_message_bytes),
                linger_ms=50,
                max_block_ms=min(timeout_ms, 10_000),
                delivery_timeout_ms=timeout_ms,
                request_timeout_ms=min(timeout_ms, 30_000) // 2,
                # Only ksmon creates its topic, with its partitions and message size:
                # a producer that auto-created it after a deletion would get the
                # broker's defaults (one partition, 1 MB messages).
                allow_auto_create_topics=False,
                # The default partitioning, each group's key hashed once, not every poll.
                partitioner=RememberingPartitioner(),
            )
            kafka_python_fixes.install()
            producer = KafkaProducer(**settings)
            _forbid_topic_auto_creation(producer)
            self._producer = producer
        return self._producer

    def _ensure_topic(self) -> None:
        if not self.create_topic:
            self._topic_checked = True
            return
        from kafka.admin import KafkaAdminClient, NewTopic  # noqa: PLC0415
        from kafka.errors import TopicAlreadyExistsError  # noqa: PLC0415

        admin_settings = {
            k: v for k, v in self._settings.items() if k in KafkaAdminClient.DEFAULT_CONFIG
        }
        kafka_python_fixes.install()
        admin = KafkaAdminClient(**admin_settings)
        try:
            # Asked about its own topic only: every topic's metadata (list_topics) is
            # tens of MB to decode on a large cluster.
            (described,) = admin.describe_topics([self.topic])
            if described.get("error_code"):
                new = NewTopic(
                    self.topic,
                    self.partitions,
                    self.replication_factor,
                    topic_configs={
                        "max.message.bytes": str(self.max_message_bytes),
                        "retention.ms": str(_RETENTION_MS),
                        "cleanup.policy": "delete",
                    },
                )
                try:
                    admin.create_topics([new])
                    log.info("created snapshot topic %s", self.topic)
                except TopicAlreadyExistsError:
                    pass
            self._topic_checked = True
        finally:
            admin.close()


def _forbid_topic_auto_creation(producer: Any) -> None:  # noqa: ANN401 - kafka-python is untyped
    """Make the producer's metadata requests really say "do not create the topic".

    kafka-python 3.0 builds the client's cluster metadata without the
    ``allow_auto_create_topics`` option it was given, so its metadata
    requests always allow creation: after a deletion the producer re-created
    the snapshot topic with the broker's defaults (one partition, 1 MB
    messages) before ksmon could create it properly. The option is set where
    those requests read it.
    """
    config = getattr(getattr(producer, "_metadata", None), "config", None)
    if isinstance(config, dict) and "allow_auto_create_topics" in config:
        config["allow_auto_create_topics"] = False
    else:  # a kafka-python that moved it: say so rather than pretend
        log.warning("cannot turn off topic auto-creation in this kafka-python's producer")
