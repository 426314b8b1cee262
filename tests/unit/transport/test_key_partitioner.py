"""The sink's partitioner puts every keyed record where kafka-python's default does."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner import DefaultPartitioner

from agent.transport import key_partitioner
from agent.transport.key_partitioner import RememberingPartitioner


class Cluster:
    """The three questions a partitioner asks of kafka-python's cluster metadata."""

    def __init__(self, partitions: dict[str, set[int]]) -> None:
        self.partitions = partitions

    def topics(self) -> set[str]:
        return set(self.partitions)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self.partitions.get(topic)

    def available_partitions_for_topic(self, topic: str) -> set[int]:
        return self.partitions.get(topic, set())


@given(
    st.lists(st.binary(max_size=40), min_size=1, max_size=30),
    st.sets(st.integers(0, 200), min_size=1, max_size=24),
)
def test_every_key_goes_where_the_default_partitioner_puts_it_again_and_again(
    keys: list[bytes], partitions: set[int]
) -> None:
    cluster = Cluster({"ksmon.snapshots": partitions})
    ours, default = RememberingPartitioner(), DefaultPartitioner()
    for _ in range(2):  # the second time from the remembered hashes
        for key in keys:
            expected = default.partition("ksmon.snapshots", key, key, b"v", b"v", cluster)
            assert ours.partition("ksmon.snapshots", key, key, b"v", b"v", cluster) == expected


def test_a_topic_with_more_partitions_than_before_rehashes_nothing_but_places_anew() -> None:
    ours, default = RememberingPartitioner(), DefaultPartitioner()
    keys = [f"group-{n}".encode() for n in range(50)]
    for count in (3, 12):
        cluster = Cluster({"t": set(range(count))})
        for key in keys:
            assert ours.partition("t", key, key, b"", b"", cluster) == default.partition(
                "t", key, key, b"", b"", cluster
            )


def test_an_unknown_topic_fails_as_the_default_does_and_no_key_goes_to_some_partition() -> None:
    ours = RememberingPartitioner()
    with pytest.raises(ValueError, match="not found"):
        ours.partition("missing", b"k", b"k", b"", b"", Cluster({}))
    assert ours.partition("t", None, None, b"", b"", Cluster({"t": {4, 5}})) in {4, 5}


def test_the_remembered_keys_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_partitioner, "MAX_KEYS", 10)
    ours, cluster = RememberingPartitioner(), Cluster({"t": {0, 1, 2}})
    for n in range(25):
        ours.partition("t", b"", f"group-{n}".encode(), b"", b"", cluster)
        assert len(ours._hashes) <= 10
