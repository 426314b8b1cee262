"""Polling Kafka: the Admin API edge, pure parsing into snapshots, and the poll loop."""
