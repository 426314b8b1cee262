"""Task loads: each Kafka Streams application's latest per-task load, as the aggregation
job measured it, the record the load-aware task assignor (assignor/) places tasks by.

The job publishes one record per application to the task loads topic, keyed
``<cluster>/<application id>``; the topic is compacted, so the latest record per
application is what the assignor reads when it assigns. Loads are records per second
arriving at each task's input partitions, at the poll ``measured_at`` names.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime

from agent.model.records import decode_versioned, from_plain, to_json_bytes

TASK_LOADS_SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class TaskLoads:
    schema_version: int
    application_id: str
    measured_at: str  # ISO-8601 instant, UTC: the poll the loads were measured at
    tasks: dict[str, float] = field(default_factory=dict)  # "<subtopology>_<partition>"

    @classmethod
    def of(cls, application_id: str, at: float, tasks: dict[str, float]) -> "TaskLoads":
        """The loads of ``application_id``'s tasks at poll time ``at`` (epoch seconds)."""
        measured_at = datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")
        return cls(
            TASK_LOADS_SCHEMA_VERSION,
            application_id,
            measured_at.replace("+00:00", "Z"),
            dict(sorted(tasks.items())),
        )

    @staticmethod
    def key_of(cluster: str, application_id: str) -> bytes:
        return f"{cluster}/{application_id}".encode()

    def to_json(self) -> bytes:
        return to_json_bytes(self)

    @classmethod
    def from_json(cls, data: bytes | str) -> "TaskLoads":
        """Parse a record; raises ``RecordError`` naming the offending field."""
        return from_plain(cls, decode_versioned(data, TASK_LOADS_SCHEMA_VERSION))
