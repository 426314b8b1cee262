"""Where snapshots go: a Kafka topic, a spool directory of JSON lines, or nowhere."""
