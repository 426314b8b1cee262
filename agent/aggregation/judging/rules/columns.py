"""A poll's partitions as numpy columns, built once per poll and shared by every
evaluation whose window holds it.

A poll is judged once, but read again by the ~30 evaluations that follow it
while it stays in its series' look-back (consumer_status walks five minutes of
polls at every poll, for every partition). Reading its partitions' offsets
into one array once, instead of every row at every evaluation, lets a rule
judge all partitions of a window at once.

The columns are memoised by the identity of the poll's ``partitions`` tuple
(which ``Poll.aged`` and ``Poll.sharing`` keep), and the cache holds that
tuple itself, so an entry can never be taken for another tuple's: a pure
function's result, computed once. Bounded (the oldest entries go first), so a
long replay or a job judging many groups keeps only recent polls' columns.
Partitions read back from the state store (``facts.StoredPartitions``, every
batch of the streaming job) keep their arrays themselves instead, built from
the columns they were stored as.
"""

import typing
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from agent.aggregation.judging.facts import Partition, StoredPartitions

Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
Floats = npt.NDArray[np.float64]

# Rows of ``PartitionColumns.values``: nullable integers as their value (0 where unknown).
COMMITTED, LAG, KNOWN, OWNED = range(4)

_CACHE_SIZE = 1024
_OFFSET_LIMIT = 2**62


class PartitionColumns(NamedTuple):
    """One poll's partitions, column for row."""

    keys: tuple[tuple[str, int], ...]  # (topic, partition), in the poll's order
    # Shape (4, partitions): the committed offset, the lag, 1 where both are known, and 1
    # where an owner member is named.
    values: Ints
    unique: bool  # no partition listed twice
    # Every partition's log-end offset, when all are known and within [0, 2^62) (so any
    # difference of two is a 64-bit integer); else None.
    log_ends: Ints | None


_cache: dict[int, tuple[tuple[Partition, ...], PartitionColumns | None]] = {}
# Equal keys are one tuple, so polls listing the same partitions in the same order (most
# of a series) are told alike by identity.
_keys: dict[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]] = {}


def partition_columns(partitions: tuple[Partition, ...]) -> PartitionColumns | None:
    """``partitions`` as columns; None when a value does not fit a 64-bit integer (the
    caller then reads the rows one by one)."""
    if type(partitions) is StoredPartitions:
        # Read back from the state store: built from the columns they were stored as, and
        # kept with them for as long as their poll lives (a batch), outside the cache.
        built = partitions.__dict__.get("built", _MISSING)
        if built is _MISSING:
            built = partitions.built = _build(partitions.columns)
        return built  # type: ignore[no-any-return]
    hit = _cache.get(id(partitions))
    if hit is not None and hit[0] is partitions:
        return hit[1]
    columns = _build(tuple(zip(*partitions, strict=True)))
    if len(_cache) >= _CACHE_SIZE:
        # Insertion order: the oldest polls first.
        for key in list(_cache)[: _CACHE_SIZE // 4]:
            del _cache[key]
    _cache[id(partitions)] = (partitions, columns)
    return columns


_MISSING = object()


def _build(columns: tuple[tuple[Any, ...], ...]) -> PartitionColumns | None:
    """Arrays of partitions given as their six columns (``Partition``'s fields)."""
    if not columns:
        return PartitionColumns(
            (), np.zeros((4, 0), dtype=np.int64), unique=True, log_ends=np.zeros(0, dtype=np.int64)
        )
    topics, numbers, ends, committed, lags, owners = columns
    if None in committed or None in lags:
        known = [c is not None and lag is not None for c, lag in zip(committed, lags, strict=True)]
        committed = tuple(0 if c is None else c for c in committed)
        lags = tuple(0 if lag is None else lag for lag in lags)
    else:
        known = [True] * len(committed)
    try:
        values = np.array((committed, lags, known, [o is not None for o in owners]), dtype=np.int64)
    except OverflowError:
        return None
    keys = tuple(zip(topics, numbers, strict=True))
    if len(_keys) >= _CACHE_SIZE:
        _keys.clear()
    return PartitionColumns(
        _keys.setdefault(keys, keys),
        values,
        unique=len(set(keys)) == len(keys),
        log_ends=_offsets(ends),
    )


def _offsets(values: tuple[int | None, ...]) -> Ints | None:
    """Log-end offsets as an array, when all are known and any difference of two fits."""
    if None in values:
        return None
    known = typing.cast(tuple[int, ...], values)
    # Python's min and max: faster than numpy's for a poll's few partitions.
    if min(known) < 0 or max(known) >= _OFFSET_LIMIT:
        return None
    return np.array(known, dtype=np.int64)
