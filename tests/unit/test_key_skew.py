import random
from collections import Counter

import pytest

from agent.embedded.load import KeySkew, key_for_partition, partition_of


def test_hot_key_gets_its_share_of_records() -> None:
    skew = KeySkew({"hot": 0.8}, cold_keys=10)
    rng = random.Random(7)

    counts = Counter(skew.pick(rng) for _ in range(10_000))

    assert 0.78 < counts["hot"] / 10_000 < 0.82
    assert set(counts) - {"hot"} == {f"cold-{n}" for n in range(10)}


def test_two_hot_keys_and_no_cold_ones() -> None:
    skew = KeySkew({"a": 0.5, "b": 0.5}, cold_keys=0)
    rng = random.Random(1)

    assert {skew.pick(rng) for _ in range(1000)} == {"a", "b"}


@pytest.mark.parametrize(
    ("hot", "cold", "why"),
    [
        ({"a": 0.7, "b": 0.4}, 10, "shares above 100%"),
        ({"a": 0.0}, 10, "a zero share is no hot key"),
        ({"a": 0.5}, 0, "half the records would have no key to go to"),
    ],
)
def test_impossible_skews_are_rejected(hot: dict[str, float], cold: int, why: str) -> None:
    with pytest.raises(ValueError, match="must"):
        KeySkew(hot, cold_keys=cold)


def test_key_for_partition_finds_a_key_the_partitioner_sends_there() -> None:
    for partition in range(6):
        key = key_for_partition(partition, 6, prefix="hot")
        assert key.startswith("hot-")
        assert partition_of(key, 6) == partition


def test_partition_of_matches_kafkas_murmur2_vectors() -> None:
    # Expected partitions derived from the murmur2 values in Apache Kafka's
    # UtilsTest (e.g. murmur2("21") == -973932308), positive-masked, mod 100.
    assert partition_of("21", 100) == (-973932308 & 0x7FFFFFFF) % 100
    assert partition_of("foobar", 100) == (-790332482 & 0x7FFFFFFF) % 100
