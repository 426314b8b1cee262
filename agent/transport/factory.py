"""Build the configured sink."""

from agent.config import Config, kafka_client_settings
from agent.transport.kafka_sink import KafkaTopicSink
from agent.transport.sink import NullSink, SnapshotSink
from agent.transport.spool import SpoolDirectorySink


def open_sink(config: Config) -> SnapshotSink:
    sink = config.sink
    if sink.type == "spool" and sink.spool is not None:
        return SpoolDirectorySink(
            sink.spool.directory,
            rotate_bytes=sink.spool.rotate_bytes,
            rotate_interval=sink.spool.rotate_interval,
            max_bytes=sink.spool.max_bytes,
        )
    if sink.type == "kafka" and sink.kafka is not None:
        k = sink.kafka
        return KafkaTopicSink(
            kafka_client_settings(config.cluster(k.cluster)),
            k.topic,
            partitions=k.partitions,
            replication_factor=k.replication_factor,
            compression=k.compression,
            buffer_max_snapshots=k.buffer_max_snapshots,
            max_message_bytes=k.max_message_bytes,
            create_topic=k.create_topic,
        )
    return NullSink()
