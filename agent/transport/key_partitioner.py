"""Kafka's default partitioning of keyed records, each key's hash computed once.

The sink keys every snapshot by its group, so a group's snapshots stay in order
on one partition. kafka-python hashes each key (murmur2, as Kafka's Java client
does) in pure Python at every send: at 1,000 groups a thousand hashes a poll,
of the same keys over and over. This partitioner gives the very partitions
kafka-python's ``DefaultPartitioner`` gives (a test compares them) and remembers
each key's hash. Records without a key go to the default.
"""

from typing import Any

from kafka.partitioner import DefaultPartitioner
from kafka.partitioner.default import murmur2

# Keys remembered at most (groups come and go; a thousand are a few hundred KB).
MAX_KEYS = 100_000


class RememberingPartitioner(DefaultPartitioner):  # type: ignore[misc]  # kafka-python: untyped
    def __init__(self) -> None:
        self._hashes: dict[bytes, int] = {}

    def partition(  # noqa: PLR0917 - kafka-python's signature
        self,
        topic: str,
        key: Any,  # noqa: ANN401 - kafka-python's signature
        serialized_key: bytes | None,
        value: Any,  # noqa: ANN401
        serialized_value: bytes | None,
        cluster: Any,  # noqa: ANN401
    ) -> int:
        known = cluster.partitions_for_topic(topic)
        if serialized_key is None or not known:
            # No key, or a topic not (yet) known: the default, its errors included.
            return int(
                super().partition(topic, key, serialized_key, value, serialized_value, cluster)
            )
        hashed = self._hashes.get(serialized_key)
        if hashed is None:
            if len(self._hashes) >= MAX_KEYS:
                self._hashes.clear()
            hashed = self._hashes[serialized_key] = murmur2(serialized_key) & 0x7FFFFFFF
        all_partitions = sorted(known)
        return int(all_partitions[hashed % len(all_partitions)])
