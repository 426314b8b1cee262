"""Tests that stop or freeze the session's shared broker put it back with this."""

import os
import signal

from agent.embedded.kafka import EmbeddedKafka


def restore(kafka: EmbeddedKafka) -> None:
    """Leave the shared broker running and answering, whatever the test did to it."""
    pid = kafka.process.pid
    if kafka.process.alive and pid is not None:
        os.killpg(pid, signal.SIGCONT)
    if not kafka.process.alive:
        kafka.launch()
    kafka.wait_ready(timeout=180)
