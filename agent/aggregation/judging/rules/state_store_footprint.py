"""state_store_footprint (warning): an instance's RocksDB stores, at their configured
memory, near its container's memory limit; or a changelog that compaction does not bound.

Memory: the RocksDB instances a sidecar counts in its state directory, over the
tasks the instance holds, times the configured per-instance memory, against the
app container's limit (``store_footprint_ratio``). Growth: a compact-only changelog
whose size on disk never shrank and rose steadily over ``changelog_growth_window``.

The spec is docs/rules/state_store_footprint.md.
"""

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from agent.aggregation.judging.facts import Poll, Sidecar, Topic
from agent.aggregation.judging.results import STORE_MEMORY_ESTIMATE
from agent.aggregation.judging.rules.base import Evaluation, Found, Gauge, Judgement, rounded
from agent.config.schema import DetectorsConfig
from agent.model.findings import FindingSubject

KIND = "state_store_footprint"

_LARGEST_STORES = 3
_MIB = float(2**20)
_MIN_GROWTH_SAMPLES = 3
_MIN_GROWTH_SPAN = 0.9


def judge(ev: Evaluation) -> Judgement:
    memory, memory_judged, gauges = _memory(ev)
    growth, growth_judged = _changelog_growth(ev)
    return Judgement(
        KIND,
        judged=memory_judged or growth_judged,
        found=(*memory, *growth),
        gauges=gauges,
    )


# -- memory ------------------------------------------------------------------------------


def _countable(sidecar: Sidecar | None) -> str | None:
    """The instance of a reading the stores can be counted from (its state directory read,
    the tasks it holds known), else None."""
    if sidecar is None or not sidecar.state_dir_readable or sidecar.held_tasks is None:
        return None
    return sidecar.process


def _per_instance_bytes(p: DetectorsConfig) -> int:
    return int(p.rocksdb_block_cache_bytes + p.rocksdb_write_buffer_bytes * p.rocksdb_write_buffers)


def _rocksdb_instances(sidecar: Sidecar) -> int:
    """RocksDB instances the held tasks open: one per key-value store, one per segment."""
    held = set(sidecar.held_tasks or ())
    count = 0
    for store in sidecar.stores:  # by index: this runs over every reading of a long run
        if store[0] in held:
            count += store[3] if store[2] == "segmented" else 1
    return count


def _estimate(rocksdb_instances: int, p: DetectorsConfig) -> int:
    if p.rocksdb_bounded_memory_bytes is not None:
        # One shared, bounded cache and write buffer manager: the bound, once any store opens.
        return int(p.rocksdb_bounded_memory_bytes) if rocksdb_instances > 0 else 0
    return rocksdb_instances * _per_instance_bytes(p)


def _at_risk(sidecar: Sidecar, p: DetectorsConfig) -> bool:
    """The estimate is at least ``store_footprint_ratio`` of a known, non-zero limit."""
    limit = sidecar.memory_limit_bytes
    if not limit:
        return False
    return float(_estimate(_rocksdb_instances(sidecar), p)) / limit >= p.store_footprint_ratio


def _memory(ev: Evaluation) -> tuple[list[Found], bool, tuple[Gauge, ...]]:
    p, polls = ev.params, ev.window.polls
    found: list[Found] = []
    gauges: list[Gauge] = []
    judged = False
    for process, i in sorted(_newest_readings(polls, ev.t - 2 * p.evaluation_window).items()):
        reading = polls[i]
        sidecar = reading.sidecar
        assert sidecar is not None  # noqa: S101 - _newest_readings picks countable ones
        estimate = _estimate(_rocksdb_instances(sidecar), p)
        gauges.append(Gauge(STORE_MEMORY_ESTIMATE, float(estimate), process=process))
        limit = sidecar.memory_limit_bytes
        if limit is None or limit <= 0:
            continue
        judged = True
        ratio = float(estimate) / limit
        if ratio < p.store_footprint_ratio:
            continue
        since = _at_risk_since(polls, i, process, p)
        if reading.t - since >= p.evaluation_window:
            found.append(
                _memory_found(
                    process, sidecar, p, ratio=ratio, since=since, at_risk_for=reading.t - since
                )
            )
    return found, judged, tuple(gauges)


def _newest_readings(polls: Sequence[Poll], fresh_after: float) -> dict[str, int]:
    """Per instance, the index of its newest countable reading in (fresh_after, now]."""
    newest: dict[str, int] = {}
    for i in range(len(polls) - 1, -1, -1):
        if polls[i].t <= fresh_after:
            break
        process = _countable(polls[i].sidecar)
        if process is not None and process not in newest:
            newest[process] = i
    return newest


def _at_risk_since(polls: Sequence[Poll], i: int, process: str, p: DetectorsConfig) -> float:
    """When the run of at-risk readings of ``process`` that ends at ``polls[i]`` began.
    Polls without a countable reading of it neither break the run nor extend it."""
    since = polls[i].t
    last = polls[i].sidecar
    for j in range(i - 1, -1, -1):
        sidecar = polls[j].sidecar
        if _countable(sidecar) != process:
            continue
        assert sidecar is not None  # noqa: S101 - countable
        # An unchanged sidecar is shared with the poll after it: no need to count again.
        if sidecar is not last and not _at_risk(sidecar, p):
            break
        since, last = polls[j].t, sidecar
    return since


class _Footprint(NamedTuple):
    """One reading's stores over its held tasks, and the memory they are estimated at."""

    stores: int  # distinct (store, kind)
    store_instances: int  # a store per task holding it
    rocksdb_instances: int
    segments: int
    estimate: int
    largest_stores: list[dict[str, Any]]

    @classmethod
    def of(cls, sidecar: Sidecar, p: DetectorsConfig) -> "_Footprint":
        held = frozenset(sidecar.held_tasks or ())
        # (store, kind) -> [tasks, RocksDB instances, segments]
        per_store: dict[tuple[str, str], list[int]] = {}
        for s in sidecar.stores:
            if s.task not in held:
                continue
            counts = per_store.setdefault((s.name, s.kind), [0, 0, 0])
            counts[0] += 1
            counts[1] += s.segments if s.kind == "segmented" else 1
            counts[2] += s.segments
        rocksdb_instances = sum(c[1] for c in per_store.values())
        # Most RocksDB instances first; ties by store, kind, tasks, segments, all descending.
        largest = sorted(
            (
                (rocks, name, kind, tasks, segments)
                for (name, kind), (tasks, rocks, segments) in per_store.items()
            ),
            reverse=True,
        )[:_LARGEST_STORES]
        return cls(
            stores=len(per_store),
            store_instances=sum(c[0] for c in per_store.values()),
            rocksdb_instances=rocksdb_instances,
            segments=sum(c[2] for c in per_store.values()),
            estimate=_estimate(rocksdb_instances, p),
            largest_stores=[
                {
                    "rocksdb_instances": rocks,
                    "store": name,
                    "kind": kind,
                    "tasks": tasks,
                    "segments": segments,
                }
                for rocks, name, kind, tasks, segments in largest
            ],
        )


def _memory_found(
    process: str,
    sidecar: Sidecar,
    p: DetectorsConfig,
    *,
    ratio: float,
    since: float,
    at_risk_for: float,
) -> Found:
    footprint = _Footprint.of(sidecar, p)
    limit = sidecar.memory_limit_bytes
    assert limit is not None  # noqa: S101 - judged readings know their limit
    tasks_held = len(sidecar.held_tasks or ())
    per_instance = _per_instance_bytes(p)
    if p.rocksdb_bounded_memory_bytes is not None:
        per = (
            f"bounded by a RocksDBConfigSetter to {p.rocksdb_bounded_memory_bytes / _MIB:.0f} "
            "MiB in all"
        )
    else:
        per = (
            f"{footprint.rocksdb_instances} RocksDB instances x {per_instance / _MIB:.0f} MiB "
            f"(block cache {p.rocksdb_block_cache_bytes / _MIB:.0f} MiB + "
            f"{p.rocksdb_write_buffers} write buffers of "
            f"{p.rocksdb_write_buffer_bytes / _MIB:.0f} MiB)"
        )
    explanation = (
        f"instance {process} holds {tasks_held} tasks with {footprint.stores} persistent "
        f"store(s) ({footprint.store_instances} store instances, {footprint.segments} "
        f"window/session segments): estimated RocksDB memory "
        f"{footprint.estimate / _MIB:.0f} MiB, {per}, is {ratio * 100:.0f}% of its "
        f"container's memory limit {limit / _MIB:.0f} MiB (warning at "
        f"{p.store_footprint_ratio * 100:.0f}%); RocksDB memory is off-heap, beside the JVM "
        "heap, and past the limit the container is OOM-killed: bound it with a "
        "RocksDBConfigSetter (one shared block cache and write buffer manager), use fewer "
        "segments (a shorter retention or a longer segment interval), spread the tasks over "
        "more instances, or raise the memory limit"
    )
    return Found(
        KIND,
        "warning",
        FindingSubject(process=process),
        explanation,
        {
            "variant": "memory",
            "process": process,
            "sidecar_agent": sidecar.agent,
            "stores": footprint.stores,
            "store_instances": footprint.store_instances,
            "rocksdb_instances": footprint.rocksdb_instances,
            "segments": footprint.segments,
            "tasks_held": tasks_held,
            "per_instance_bytes": per_instance,
            "bounded_memory_bytes": p.rocksdb_bounded_memory_bytes,
            "estimate_bytes": footprint.estimate,
            "memory_limit_bytes": limit,
            "memory_limit_source": sidecar.memory_limit_source,
            "ratio": rounded(ratio),
            "warning_ratio": p.store_footprint_ratio,
            "largest_stores": footprint.largest_stores,
            "at_risk_for_seconds": at_risk_for,
        },
        since=since,
    )


# -- changelog growth --------------------------------------------------------------------

# Java's \s, as the old regexp_replace read it (Python's \s also takes Unicode spaces).
_SPACES = re.compile(r"[ \t\n\x0b\f\r]")


def _compact_only(topic: Topic) -> bool:
    """A changelog of a key-value store (compact, no delete), with its size known."""
    if topic.internal_kind != "changelog" or topic.size_bytes is None:
        return False
    policy = topic.cleanup_policy
    if policy is None:
        return False
    return policy == "compact" or _SPACES.sub("", policy.lower()) == "compact"


class _Growth(NamedTuple):
    """A changelog's sizes over the look-back, up to the judged poll."""

    topic: str
    rows: list[tuple[float, int]]  # (t, size), oldest first
    shrank: bool  # at some poll of the look-back, against the sighting before it

    @property
    def first_t(self) -> float:
        return self.rows[0][0]

    @property
    def first_size(self) -> int:
        return self.rows[0][1]

    @property
    def size(self) -> int:
        return self.rows[-1][1]

    @property
    def grown(self) -> int:
        return self.size - self.first_size


def _changelog_growth(ev: Evaluation) -> tuple[list[Found], bool]:
    p = ev.params
    window = p.changelog_growth_window
    if window <= 0:
        return [], False
    # Judged at the polls that see the changelog (its size, its policy).
    names = sorted({t.name for t in ev.now.topics if _compact_only(t)})
    if not names:
        return [], False
    found: list[Found] = []
    judged = False
    for g in _growths(ev.window.polls, len(ev.window.looking_back(window)), names):
        if ev.t - g.first_t < _MIN_GROWTH_SPAN * window or len(g.rows) < _MIN_GROWTH_SAMPLES:
            continue  # the look-back is not covered yet
        judged = True
        if (
            g.shrank
            or g.grown < g.first_size * p.changelog_growth_min_ratio
            or g.grown < p.changelog_growth_min_bytes
        ):
            continue
        slope = _slope(g.rows)  # last: the costly pass, only for a changelog that grew
        if slope is not None and slope > 0:
            found.append(_growth_found(g, slope, ev.t, p))
    return found, judged


def _growths(polls: Sequence[Poll], back: int, names: list[str]) -> list[_Growth]:
    """Each changelog of ``names`` at the last ``back`` polls that see it compact-only
    with a size."""
    start = len(polls) - back
    sizes: dict[str, list[tuple[float, int]]] = {name: [] for name in names}
    for poll in polls[start:]:
        for topic in poll.topics:
            rows = sizes.get(topic.name)
            if rows is not None and _compact_only(topic):
                assert topic.size_bytes is not None  # noqa: S101 - _compact_only
                rows.append((poll.t, topic.size_bytes))
    growths = []
    for name, rows in sizes.items():
        before = _size_before(polls, start, name)
        previous = before if before is not None else rows[0][1]
        shrank = False
        for _, size in rows:
            shrank = shrank or size < previous
            previous = size
        growths.append(_Growth(name, rows, shrank))
    return growths


def _size_before(polls: Sequence[Poll], start: int, name: str) -> int | None:
    """The changelog's size at the last poll before ``start`` that saw it compact-only."""
    for j in range(start - 1, -1, -1):
        for topic in polls[j].topics:
            if topic.name == name and _compact_only(topic):
                return topic.size_bytes
    return None


def _slope(rows: Sequence[tuple[float, int]]) -> float | None:
    """covar_pop(t, size) / var_pop(t), with the one-pass updates Spark's aggregates make
    (so the slope is the old rule's to the last bit); None when every t is the same."""
    n = x_avg = y_avg = ck = m2 = 0.0
    for t, size in rows:
        y = float(size)
        n1 = n + 1.0
        dx = t - x_avg
        dx_n = dx / n1
        x_avg = x_avg + dx_n
        y_avg = y_avg + (y - y_avg) / n1
        ck = ck + dx * (y - y_avg)
        m2 = m2 + dx * (dx - dx_n)
        n = n1
    var = m2 / n
    return (ck / n) / var if var != 0 else None


def _growth_found(g: _Growth, slope: float, t: float, p: DetectorsConfig) -> Found:
    grown = g.grown
    explanation = (
        f"changelog {g.topic} (cleanup.policy=compact, no delete) grew from "
        f"{g.first_size / _MIB:.1f} MiB to {g.size / _MIB:.1f} MiB over "
        f"{(t - g.first_t) / 3600:.1f} h ({slope * 3600 / _MIB:.1f} MiB/h) and never "
        "shrank: compaction bounds a changelog only by its number of keys, so its store has "
        "keys it never deletes (no tombstones, no TTL of its own) or the log cleaner is not "
        "keeping up; delete keys that are done with (tombstones, a punctuator), use a "
        "windowed or session store where the data has a time limit, and check the log "
        "cleaner and the topic's segment.ms/segment.bytes (only rolled segments are compacted)"
    )
    return Found(
        KIND,
        "warning",
        FindingSubject(topic=g.topic),
        explanation,
        {
            "variant": "changelog_growth",
            "topic": g.topic,
            "size_bytes_at_start": g.first_size,
            "size_bytes": g.size,
            "growth_bytes": grown,
            "growth_ratio": rounded(grown / g.first_size) if g.first_size else None,
            "growth_bytes_per_hour": rounded(slope * 3600, 0),
            "samples": len(g.rows),
            "over_seconds": t - g.first_t,
            "min_ratio": p.changelog_growth_min_ratio,
            "min_bytes": p.changelog_growth_min_bytes,
        },
        since=g.first_t,
    )
