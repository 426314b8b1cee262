"""Findings: what the aggregation job concluded, the record its consumers share.

One schema for every detector: a kind, a severity, the subject (cluster,
group, and where it applies the instance, stream thread, task or partition),
since when it holds, its evidence (numbers, as a JSON object) and a one-line
explanation a person on call can act on. The job publishes ``FindingEvent``
records (open, update, close) to the findings topic; ``ksmon findings`` and
``ksmon explain`` read them back with ``FindingEvent.from_json``.

This module is plain Python: the agent and the CLI import it without Spark.
"""

import hashlib
from dataclasses import dataclass, field
from typing import Literal, get_args

from agent.model.records import JsonObject, decode_versioned, from_plain, to_json_bytes

FINDINGS_SCHEMA_VERSION = 1

Kind = Literal[
    "hot_partitions_colocated",
    "partition_skew",
    "restore_stalled",
    "stream_threads_dead",
    "no_live_consumers",
    "rebalance_loop",
    "idle_members",
    "assignment_size_risk",
    "internal_topic_budget",
    "broker_partition_budget",
    "copartition_mismatch",
    "threads_fewer_than_tasks",
    "state_store_footprint",
    "consumer_status",
]
Severity = Literal["critical", "warning", "info"]
EventType = Literal["open", "update", "close"]

KINDS: tuple[str, ...] = get_args(Kind)
SEVERITIES: tuple[str, ...] = get_args(Severity)
EVENT_TYPES: tuple[str, ...] = get_args(EventType)


@dataclass(frozen=True, slots=True)
class FindingSubject:
    """What a finding is about, below its group; fields that do not apply are None.

    ``process`` is a Kafka Streams process id (an instance; for a plain
    consumer group, the member's client id), ``thread`` a stream thread index
    (a member-level finding has both), ``task`` a task id such as ``1_3``.
    Member ids change with every rebalance, so they are evidence, not subject.
    """

    process: str | None = None
    thread: int | None = None
    task: str | None = None
    topic: str | None = None
    partition: int | None = None

    @property
    def key(self) -> str:
        """A stable text form, part of the finding's key: ``process=p,thread=1``."""
        parts = [
            f"{name}={value}"
            for name, value in (
                ("process", self.process),
                ("thread", self.thread),
                ("task", self.task),
                ("topic", self.topic),
                ("partition", self.partition),
            )
            if value is not None
        ]
        return ",".join(parts) or "group"

    def describe(self) -> str:
        """For people: ``instance 1a2b... thread 2``, ``partition orders-3``, ``the group``."""
        parts = []
        if self.process is not None:
            parts.append(f"instance {self.process}")
        if self.thread is not None:
            parts.append(f"thread {self.thread}")
        if self.task is not None:
            parts.append(f"task {self.task}")
        if self.topic is not None:
            parts.append(
                f"partition {self.topic}-{self.partition}"
                if self.partition is not None
                else f"topic {self.topic}"
            )
        return " ".join(parts) or "the group"


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str  # one of KINDS (more may follow; readers keep unknown kinds)
    severity: str  # critical | warning | info
    cluster: str
    group: str
    subject: FindingSubject
    since: float  # event time (snapshot poll time) the finding opened at
    last_seen: float  # the latest evaluation at which its rule held
    explanation: str  # one line for a person on call
    evidence: JsonObject = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The findings topic's record key: one finding's events stay in order."""
        return f"{self.cluster}/{self.group}/{self.kind}/{self.subject.key}"


@dataclass(frozen=True, slots=True)
class FindingEvent:
    """A finding opened, changed severity, or closed, at event time ``at``."""

    schema_version: int
    event: str  # open | update | close
    at: float
    finding: Finding
    # Deterministic (finding key, event, time): a consumer can drop a repeat.
    event_id: str = ""
    # Why a finding closed when not because its rule stopped holding (which says nothing
    # here): "group deleted", "group no longer polled".
    reason: str = ""

    @classmethod
    def of(cls, event: str, at: float, finding: Finding, reason: str = "") -> "FindingEvent":
        digest = hashlib.sha256(f"{finding.key}|{event}|{at!r}".encode()).hexdigest()[:24]
        return cls(FINDINGS_SCHEMA_VERSION, event, at, finding, digest, reason)

    @property
    def key(self) -> bytes:
        return self.finding.key.encode()

    def to_json(self) -> bytes:
        return to_json_bytes(self)

    @classmethod
    def from_json(cls, data: bytes | str) -> "FindingEvent":
        """Parse an event; raises ``RecordError`` naming the offending field."""
        return from_plain(cls, decode_versioned(data, FINDINGS_SCHEMA_VERSION))


def current_findings(events: list[FindingEvent]) -> list[Finding]:
    """The findings still open after ``events`` (in topic order), most severe first."""
    latest: dict[str, FindingEvent] = {}
    for event in events:
        latest[event.finding.key] = event
    open_findings = [e.finding for e in latest.values() if e.event != "close"]
    rank = {severity: i for i, severity in enumerate(SEVERITIES)}
    return sorted(
        open_findings,
        key=lambda f: (rank.get(f.severity, len(rank)), f.cluster, f.group, f.kind, f.since),
    )
