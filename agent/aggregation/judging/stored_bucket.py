"""A bucket's groups <-> the one value the state store keeps for it.

The job keys its stateful operator by a bucket of groups (``bucket_of``),
not by group: every key costs a round trip between Spark and Python, which
costs more than the rules themselves (docs/benchmarks.md). A bucket's value
holds two halves that age differently:

* the hysteresis of each group (its open findings), as JSON: a contract the
  findings topic shares, readable by every later version, so an upgrade never
  forgets a finding it published as open;
* the windows of polls, ``facts.Poll`` records as plain tuples in columns
  (``tuples``), pickled: a hundred polls of a group in about a millisecond
  each way. Their
  layout changes with the facts the rules read, so they carry
  ``WINDOWS_FORMAT``; windows of another format are dropped rather than
  misread, the rules then judge from the polls that follow, and ``decode``
  says so (the job logs it once). Bump
  ``WINDOWS_FORMAT`` with every change to a ``facts`` record:
  ``tests/unit/aggregation/test_stored_bucket.py`` keeps the records' fields
  and fails until it is bumped.
"""

import json
import pickle
import zlib
from typing import NamedTuple

from agent.aggregation.judging.group import GroupState
from agent.aggregation.judging.hysteresis import HysteresisState
from agent.aggregation.judging.tuples import Frozen, freeze, thaw_keeping

# 2: a poll's partitions frozen as columns; 3: a window frozen as columns, one per field
# of ``facts.Poll`` (``tuples``).
WINDOWS_FORMAT = 3

GroupKey = tuple[str, str]  # (cluster, group)


class StoredBucket(NamedTuple):
    """A bucket of groups as the state store holds it."""

    windows_format: int
    hysteresis: str  # JSON: [[cluster, group, HysteresisState as JSON], ...]
    windows: bytes  # zlib(pickle): {(cluster, group): {agent: a window as ``tuples.Frozen``}}


def bucket_of(cluster: str, group: str, buckets: int) -> int:
    """The bucket a group's state lives in: stable across processes and versions."""
    return zlib.crc32(f"{cluster}/{group}".encode()) % buckets


def encode(groups: dict[GroupKey, GroupState]) -> StoredBucket:
    keys = sorted(groups)
    return StoredBucket(
        WINDOWS_FORMAT,
        json.dumps(
            [[c, g, json.loads(groups[(c, g)].hysteresis.to_json())] for c, g in keys],
            separators=(",", ":"),
        ),
        # Level 1: most of a window is repeated names and offsets; more effort buys little.
        zlib.compress(
            pickle.dumps(
                {k: _frozen_series(groups[k]) for k in keys},
                protocol=pickle.HIGHEST_PROTOCOL,
            ),
            1,
        ),
    )


def decode(stored: StoredBucket) -> tuple[dict[GroupKey, GroupState], bool]:
    """The bucket's groups, and whether their windows had to be dropped (another format)."""
    groups = {
        (str(c), str(g)): GroupState(hysteresis=HysteresisState.from_json(json.dumps(h)))
        for c, g, h in json.loads(stored.hysteresis)
    }
    if stored.windows_format != WINDOWS_FORMAT:
        return groups, True
    windows = pickle.loads(zlib.decompress(stored.windows))  # noqa: S301 - the job's own state
    for key, series in windows.items():
        state = groups.setdefault(key, GroupState())
        for agent, plain in series.items():
            state.series[agent], state.thawed[agent] = thaw_keeping(plain)
    return groups, False


def _frozen_series(state: GroupState) -> dict[str, Frozen]:
    return {a: freeze(polls, state.thawed.get(a)) for a, polls in state.series.items()}
