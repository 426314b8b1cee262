"""Bucket keys that Spark's hash partitioning spreads evenly, and the checkpoint that
remembers how its state is keyed. (Spark's own partitioning of these keys is checked in
tests/integration/test_aggregation_job.py.)"""

import json
import logging
import zlib
from collections import Counter
from pathlib import Path

import pytest

from agent.aggregation.spark.checkpoint import LAYOUT, Checkpoint
from agent.aggregation.spark.partitioning import partition_of, spark_hash_int, spread_keys
from agent.errors import ConfigError


@pytest.mark.parametrize(
    ("buckets", "partitions"), [(32, 4), (32, 2), (64, 8), (7, 3), (1, 1), (3, 4), (200, 16)]
)
def test_every_bucket_gets_a_distinct_key_in_the_partition_of_its_number(
    buckets: int, partitions: int
) -> None:
    keys = spread_keys(buckets, partitions)
    assert len(set(keys)) == buckets
    assert [partition_of(k, partitions) for k in keys] == [b % partitions for b in range(buckets)]
    assert spread_keys(buckets, partitions) == keys  # the state is keyed by them


def test_bucket_numbers_as_keys_leave_partitions_uneven_and_spread_keys_do_not() -> None:
    # Why the keys exist: 1,000 groups in 32 buckets over 4 partitions, as the job's
    # defaults place them.
    groups = [f"prod/app-{i:05d}" for i in range(1000)]
    buckets = Counter(zlib.crc32(g.encode()) % 32 for g in groups)

    def groups_per_partition(keys: tuple[int, ...]) -> list[int]:
        load = Counter(dict.fromkeys(range(4), 0))
        for bucket, n in buckets.items():
            load[partition_of(keys[bucket], 4)] += n
        return [load[p] for p in range(4)]

    by_number = groups_per_partition(tuple(range(32)))
    spread = groups_per_partition(spread_keys(32, 4))
    assert max(by_number) > 1.2 * 250  # the busiest partition is the batch's tail
    assert max(spread) < 1.1 * 250


def test_the_hash_is_a_signed_32_bit_int_for_keys_of_any_sign() -> None:
    hashes = [spark_hash_int(k) for k in (-(2**31), -1, 0, 1, 2**31 - 1)]
    assert all(-(2**31) <= h < 2**31 for h in hashes)
    assert len(set(hashes)) == len(hashes)
    assert all(0 <= partition_of(k, 7) < 7 for k in (-(2**31), -5, 0, 5))  # pmod


def _layout(directory: Path) -> dict[str, object]:
    return json.loads((directory / "layout.json").read_text())  # type: ignore[no-any-return]


def test_a_new_checkpoint_spreads_its_buckets_and_says_so_in_its_layout(tmp_path: Path) -> None:
    checkpoint = Checkpoint(tmp_path / "cp", buckets=32, partitions=4)
    checkpoint.prepare()
    assert checkpoint.keys == spread_keys(32, 4)
    assert _layout(tmp_path / "cp") == {
        "layout": LAYOUT,
        "buckets": 32,
        "partitions": 4,
        "keys": "spread",
    }
    again = Checkpoint(tmp_path / "cp", buckets=32, partitions=4)
    again.prepare()
    assert again.keys == checkpoint.keys


def test_a_checkpoint_keyed_by_bucket_number_carries_on_so_and_says_how_to_spread(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # What ksmon wrote before layout 3: its state lives under the buckets' numbers.
    directory = tmp_path / "cp"
    (directory / "stream").mkdir(parents=True)
    made = {"layout": 2, "buckets": 32, "partitions": 4}
    (directory / "layout.json").write_text(json.dumps(made))
    checkpoint = Checkpoint(directory, buckets=32, partitions=4)
    with caplog.at_level(logging.INFO, logger="agent.aggregation.spark.checkpoint"):
        checkpoint.prepare()
    assert checkpoint.keys == tuple(range(32))
    assert _layout(directory)["layout"] == 2  # left as it was made
    assert [r.getMessage() for r in caplog.records] == [
        f"aggregation.checkpoint_dir {directory}: its state is keyed by bucket number, as "
        f"ksmon did before layout {LAYOUT}; kept so (a new checkpoint directory would "
        "spread the buckets evenly over the partitions)"
    ]


def test_a_checkpoint_made_for_other_buckets_is_refused_with_what_to_set(tmp_path: Path) -> None:
    Checkpoint(tmp_path / "cp", buckets=32, partitions=4).prepare()
    with pytest.raises(ConfigError) as raised:
        Checkpoint(tmp_path / "cp", buckets=64, partitions=4).prepare()
    message = str(raised.value)
    assert "keyed by 32 buckets over 4 shuffle partitions, not 64 over 4" in message
    assert "set aggregation.buckets: 32" in message
