"""Small value types shared by the Streams decoders: topic partitions, hosts and task ids.

``TaskId`` follows Kafka Streams' ``org.apache.kafka.streams.processor.TaskId``
(``streams-internals.md`` section 4): text form ``"0_2"`` or ``"<name>__0_2"``,
ordered by named topology (none first), then subtopology, then partition.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import repeat
from typing import Final, NamedTuple, cast

from agent.streams.codec import INT32_MAX

_NAMED_TOPOLOGY_DELIMITER: Final = "__"
# ASCII digits only (Python's \d also takes other scripts' digits), at most ten
# of them so int() never sees a gigantic number.
_TASK_ID_TEXT: Final = re.compile(
    r"(?:(?P<name>.+)__)?(?P<sub>[0-9]{1,10})_(?P<part>[0-9]{1,10})", re.DOTALL
)


class TopicPartition(NamedTuple):
    """A topic partition; sorts by (topic, partition) like Kafka's PARTITION_COMPARATOR."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def topic_partitions(topics: Iterable[str], partitions: Iterable[int]) -> list[TopicPartition]:
    """Many ``TopicPartition``s at once, pairing ``topics`` and ``partitions`` in order.

    Calls ``tuple.__new__`` directly: the NamedTuple constructor's Python-level
    wrapper would otherwise dominate decoding the group-wide host maps, which
    hold every partition of the application in every member's assignment.
    """
    # Not strict: a caller pairs an endless repeat(topic) with one topic's partitions.
    made = map(tuple.__new__, repeat(TopicPartition), zip(topics, partitions, strict=False))
    return cast(list[TopicPartition], list(made))


class HostInfo(NamedTuple):
    """An ``application.server`` endpoint as AssignmentInfo carries it."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class TaskId:
    """A Streams task: subtopology (topic group) id, partition, optional named topology.

    >>> str(TaskId(0, 2)), str(TaskId(1, 3, "orders"))
    ('0_2', 'orders__1_3')
    >>> TaskId.parse("orders__1_3") == TaskId(1, 3, "orders")
    True
    """

    subtopology: int
    partition: int
    named_topology: str | None = None

    def __post_init__(self) -> None:
        # Kafka treats an empty topology name as none (a NamedTopology cannot be
        # named ""), and its AssignmentInfo writes "no name" as zero chars.
        if self.named_topology == "":
            object.__setattr__(self, "named_topology", None)

    def __str__(self) -> str:
        if self.named_topology is None:
            return f"{self.subtopology}_{self.partition}"
        return (
            f"{self.named_topology}{_NAMED_TOPOLOGY_DELIMITER}{self.subtopology}_{self.partition}"
        )

    @classmethod
    def parse(cls, text: str) -> "TaskId | None":
        """The task named by ``str(task)``, or None if ``text`` is not a task id."""
        match = _TASK_ID_TEXT.fullmatch(text)
        if match is None:
            return None
        subtopology, partition = int(match["sub"]), int(match["part"])
        if subtopology > INT32_MAX or partition > INT32_MAX:
            return None
        return cls(subtopology, partition, match["name"])

    def _sort_key(self) -> tuple[bool, str, int, int]:
        return (
            self.named_topology is not None,
            self.named_topology or "",
            self.subtopology,
            self.partition,
        )

    def __lt__(self, other: "TaskId") -> bool:
        return self._sort_key() < other._sort_key()

    def __le__(self, other: "TaskId") -> bool:
        return self._sort_key() <= other._sort_key()

    def __gt__(self, other: "TaskId") -> bool:
        return self._sort_key() > other._sort_key()

    def __ge__(self, other: "TaskId") -> bool:
        return self._sort_key() >= other._sort_key()
