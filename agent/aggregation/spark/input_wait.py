"""Before the streaming query starts: wait until the job's input exists. No Spark here.

Spark's Kafka source fails a query whose topic does not exist, and a job
deployed before the agent (or on a fresh cluster) finds no snapshot topic:
the agent creates it with its first snapshot, and a spool directory when it
starts. So the job checks first, says once what it waits for, checks again
with a bounded back-off and starts when the input is there. A cluster that
does not answer gets one warning naming its bootstrap servers and one line
when it answers; each change is said once, never once per check.
"""

import enum
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from agent import kafka_python_fixes
from agent.errors import described

log = logging.getLogger(__name__)

FIRST_DELAY = 1.0
MAX_DELAY = 10.0  # a topic that appears is seen within this long

UNKNOWN_TOPIC_OR_PARTITION = 3  # Kafka's error code: the topic does not exist


class InputStatus(enum.Enum):
    READY = "ready"
    MISSING = "missing"
    UNREACHABLE = "unreachable"  # the cluster did not answer, or refused to say


@dataclass(frozen=True, slots=True)
class Probe:
    """One check of the input."""

    status: InputStatus
    detail: str = ""  # why, when unreachable


@dataclass(frozen=True, slots=True)
class JobInput:
    """What the job reads, in the words its log lines use."""

    what: str  # "snapshot topic ksmon.snapshots on cluster main"
    appears: str  # who makes it and when: "the agent creates it with its first snapshot"
    cluster: str | None = None  # the cluster that holds it (a topic), with its servers
    servers: tuple[str, ...] = ()


def kafka_input(topic: str, cluster: str, servers: tuple[str, ...]) -> JobInput:
    return JobInput(
        f"snapshot topic {topic} on cluster {cluster}",
        "the agent creates it with its first snapshot",
        cluster,
        servers,
    )


def spool_input(directory: Path) -> JobInput:
    return JobInput(f"spool directory {directory}", "the agent creates it when it starts")


class InputWatch:
    """The log lines of one wait: each change of the input's status, said once."""

    def __init__(self, job_input: JobInput) -> None:
        self.job_input = job_input
        self.status: InputStatus | None = None

    def observe(self, probe: Probe) -> list[tuple[int, str]]:
        """The (logging level, message) lines this check adds to what was said."""
        before, self.status = self.status, probe.status
        if probe.status == before:
            return []
        source = self.job_input
        lines: list[tuple[int, str]] = []
        servers = ",".join(source.servers)
        if before is InputStatus.UNREACHABLE:
            lines.append(
                (logging.INFO, f"cluster {source.cluster} answers at bootstrap servers {servers}")
            )
        if probe.status is InputStatus.UNREACHABLE:
            lines.append(
                (
                    logging.WARNING,
                    f"cannot check for {source.what} at bootstrap servers {servers}: "
                    f"{probe.detail}; trying again",
                )
            )
        elif probe.status is InputStatus.MISSING:
            lines.append((logging.INFO, f"waiting for {source.what} to exist ({source.appears})"))
        elif before is InputStatus.MISSING:
            lines.append((logging.INFO, f"{source.what} exists now; starting the streaming query"))
        return lines


def backoff_delays(first: float = FIRST_DELAY, most: float = MAX_DELAY) -> Iterator[float]:
    """Seconds between checks: doubling from ``first``, never more than ``most``."""
    delay = first
    while True:
        yield delay
        delay = min(delay * 2, most)


def wait_for_input(
    probe: Callable[[], Probe],
    watch: InputWatch,
    until: threading.Event,
    *,
    waiting: Callable[[bool], None] = lambda _: None,
    delays: Iterator[float] | None = None,
) -> bool:
    """Check with ``probe`` until the input is ready (True) or ``until`` is set (False);
    ``waiting(True)`` while it is not there, ``waiting(False)`` once it is."""
    for delay in delays or backoff_delays():
        result = probe()
        for level, message in watch.observe(result):
            log.log(level, message)
        if result.status is InputStatus.READY:
            waiting(False)
            return True
        waiting(True)
        if until.wait(delay):
            return False
    return False  # pragma: no cover - backoff_delays never ends


def topic_probe(settings: Mapping[str, object], topic: str) -> Probe:
    """Whether ``topic`` exists, asked with an Admin client made from the job's own
    client settings (its servers, TLS, SASL); asked about that topic only."""
    from kafka.admin import KafkaAdminClient  # noqa: PLC0415 - slow import
    from kafka.errors import for_code  # noqa: PLC0415

    admin_settings = {k: v for k, v in settings.items() if k in KafkaAdminClient.DEFAULT_CONFIG}
    # Reaching the cluster counts as a request: a cluster away fails within its timeout.
    if "request_timeout_ms" in admin_settings:
        admin_settings.setdefault("bootstrap_timeout_ms", admin_settings["request_timeout_ms"])
    kafka_python_fixes.install()
    try:
        admin = KafkaAdminClient(**admin_settings)
    except Exception as e:  # noqa: BLE001 - any failure to connect is "unreachable", said once
        return Probe(InputStatus.UNREACHABLE, described(e))
    try:
        (described_topic,) = admin.describe_topics([topic])
    except Exception as e:  # noqa: BLE001 - likewise
        return Probe(InputStatus.UNREACHABLE, described(e))
    finally:
        admin.close()
    code = int(described_topic.get("error_code") or 0)
    if code == UNKNOWN_TOPIC_OR_PARTITION:
        return Probe(InputStatus.MISSING)
    if code:
        return Probe(InputStatus.UNREACHABLE, for_code(code).__name__)
    if not described_topic.get("partitions"):
        return Probe(InputStatus.MISSING)  # being created: no partitions yet
    return Probe(InputStatus.READY)


def directory_probe(directory: Path) -> Probe:
    return Probe(InputStatus.READY if directory.is_dir() else InputStatus.MISSING)
