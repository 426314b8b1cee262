"""The job's history keeps the detectors' tables, built once per snapshot: what it gives
back must be exactly the tables of the snapshots it was given, each snapshot once, each
table from its own horizon; and a history an older ksmon wrote is neither read nor kept.
"""

import json
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from agent.aggregation.history import History
from agent.aggregation.tables import TABLE_NAMES, build_tables

pytestmark = pytest.mark.integration

Key = tuple[str, str, str, float]


def _keys(snapshots: DataFrame) -> list[Key]:
    rows = snapshots.select("cluster", "group", "agent", "t").collect()
    return [(r[0], r[1], r[2], r[3]) for r in rows]


def _rows(df: DataFrame) -> list[str]:
    return sorted(repr(r) for r in df.collect())


def _split(snapshots: DataFrame) -> tuple[DataFrame, DataFrame, float]:
    times = sorted({k[3] for k in _keys(snapshots)})
    middle = times[len(times) // 2]
    return snapshots.where(F.col("t") < middle), snapshots.where(F.col("t") >= middle), middle


def _store(history: History, batch_id: int, snapshots: DataFrame) -> None:
    history.append(build_tables(snapshots), batch_id, _keys(snapshots))


def _stored_in_two_batches(
    spark: SparkSession, snapshots: DataFrame, directory: Path
) -> tuple[History, DataFrame, float]:
    """A history of ``snapshots``: the earlier half as batch 0, the later as batch 1.
    Returns it, the earlier half, and the first poll time of the later one."""
    history = History(spark, directory)
    first, second, middle = _split(snapshots)
    _store(history, 0, first)
    _store(history, 1, second)
    return history, first, middle


def test_the_history_gives_back_the_tables_of_its_snapshots(
    spark: SparkSession, recorded_snapshots: DataFrame, tmp_path: Path
) -> None:
    history, _first, _middle = _stored_in_two_batches(spark, recorded_snapshots, tmp_path)

    stored = history.read(1, float("-inf"), {}).named()
    expected = build_tables(recorded_snapshots).named()

    non_empty = [name for name in TABLE_NAMES if expected[name].limit(1).count()]
    assert {"groups", "members", "units", "partitions", "subtopologies"} <= set(non_empty)
    for name in TABLE_NAMES:
        assert stored[name].columns == expected[name].columns, name
        assert _rows(stored[name]) == _rows(expected[name]), name


def test_each_table_is_read_from_its_own_horizon_and_up_to_the_batch(
    spark: SparkSession, recorded_snapshots: DataFrame, tmp_path: Path
) -> None:
    history, first, middle = _stored_in_two_batches(spark, recorded_snapshots, tmp_path)

    tables = history.read(1, float("-inf"), {"partitions": middle})
    assert _min_t(build_tables(first).partitions) < middle, "both halves should have partitions"
    assert _min_t(tables.partitions) >= middle
    assert _min_t(tables.groups) < middle
    # A batch re-run reads what came before it, not what it wrote the first time.
    assert _times(history.read(0, float("-inf"), {}).groups) == _times(build_tables(first).groups)


def test_a_snapshot_stored_before_counts_for_later_batches_not_for_its_own_rerun(
    spark: SparkSession, recorded_snapshots: DataFrame, tmp_path: Path
) -> None:
    history = History(spark, tmp_path)
    first, _second, _ = _split(recorded_snapshots)
    _store(history, 3, first)

    assert history.stored_before(4) == set(_keys(first))
    assert history.stored_before(3) == set()
    # The re-run overwrites its own directory: still one copy of each row.
    _store(history, 3, first)
    assert _rows(history.read(3, float("-inf"), {}).groups) == _rows(build_tables(first).groups)


def test_a_history_an_older_ksmon_wrote_is_not_read_and_goes_at_the_next_trim(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old = tmp_path / "batch-000000000007"
    old.mkdir()
    (old / "part-0.parquet").write_bytes(b"whole snapshots, once")
    note = tmp_path / "batch-000000000007.json"
    note.write_text(json.dumps({"batch_id": 7, "newest_t": 1000.0}))
    history = History(spark, tmp_path)

    tables = history.read(8, 0.0, {})

    assert all(df.count() == 0 for df in tables.named().values())
    assert "written by an older ksmon" in caplog.text
    assert history.trim(0.0) == 1
    assert not old.exists()
    assert not note.exists()


def _min_t(df: DataFrame) -> float:
    return float(df.agg(F.min("t")).first()[0])  # type: ignore[index]


def _times(df: DataFrame) -> list[float]:
    return sorted(r[0] for r in df.select("t").collect())
