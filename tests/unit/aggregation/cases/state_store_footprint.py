"""state_store_footprint: an instance's RocksDB stores near its memory limit, and a
compact-only changelog growing with no bound."""

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from agent.model import SidecarInfo, Snapshot, StateDirStore, StateDirTask
from tests.support.snapshots import changelog, snapshot, streams_member
from tests.unit.aggregation.cases import T0, Case, Expect, all_of, evidence, explains, times

KIND = "state_store_footprint"
MIB = 2**20
GIB = 2**30
PER_INSTANCE = 50 * MIB + 3 * 16 * MIB  # Kafka Streams' defaults: 98 MiB
UNTIL = 120  # seconds of polls every 10 s: past the default evaluation_window (60 s)
# The changelog cases run with changelog_growth_window = 20 minutes (conftest).
GROWTH_WINDOW = 1200
GROWTH_UNTIL = 1320

KV = ("counts", "key_value", 0)
WINDOWED = ("windowed-counts", "segmented", 3)
Layout = Sequence[tuple[str, str, int]]


def _task_dir(task: str, stores: Layout) -> StateDirTask:
    return StateDirTask(
        task,
        stores=tuple(StateDirStore(name, kind, segments, 1000) for name, kind, segments in stores),
    )


def _sidecar(
    process: str,
    dirs: Mapping[str, Layout],
    limit: int | None,
    *,
    readable: bool = True,
) -> SidecarInfo:
    return SidecarInfo(
        process_id=process,
        state_dir="/state/app",
        state_dir_readable=readable,
        state_dir_tasks=tuple(_task_dir(task, stores) for task, stores in sorted(dirs.items())),
        memory_limit_bytes=limit,
        memory_limit_source="configuration" if limit is not None else None,
    )


Poll = Callable[[float], tuple[Sequence[str], Sequence[str], Mapping[str, Layout], int | None]]


def _history(
    group: str,
    poll: Poll,
    *,
    process: str = "pA",
    others: Sequence[tuple[str, Poll]] = (),
    decoded: bool = True,
    until: int = UNTIL,
) -> list[Snapshot]:
    """Each instance's sidecar polls every 10 s; ``poll(s)`` gives (active tasks, standby
    tasks, task directories with their stores, memory limit) s seconds after T0. Every
    sidecar sees the whole group (all instances' members)."""
    instances = [(process, poll), *others]
    snapshots = []
    for t in times(0, until, 10):
        s = t - T0
        members = []
        for name, of in instances:
            active, standby, _, _ = of(s)
            member = streams_member(
                name,
                1,
                {task: [("in", int(task.split("_")[1]))] for task in active},
                standby=standby,
            )
            members.append(member if decoded else dataclasses.replace(member, streams=None))
        for name, of in instances:
            _, _, dirs, limit = of(s)
            snapshots.append(
                snapshot(
                    group,
                    t,
                    members=members,
                    sidecar=_sidecar(name, dirs, limit),
                    agent=f"sidecar-{name}",
                )
            )
    return snapshots


def _steady(
    active: Sequence[str],
    standby: Sequence[str],
    dirs: Mapping[str, Layout],
    limit: int | None,
) -> Poll:
    return lambda s: (active, standby, dirs, limit)


THREE_TASKS = dict.fromkeys(("0_0", "0_1", "0_2"), (KV, WINDOWED))
# 3 tasks x (1 key-value store + 1 window store of 3 segments) = 12 RocksDB instances.
TWELVE = 12 * PER_INSTANCE


def _changelog_history(
    group: str, sizes: Callable[[float], int], *, policy: str = "compact", until: int = 0
) -> list[Snapshot]:
    """A central agent polling every minute; the changelog's size ``sizes(s)``."""
    topic = f"{group}-store-changelog"
    return [
        snapshot(
            group,
            t,
            members=[streams_member("pA", 1, {"0_0": [("in", 0)]})],
            topics=[
                dataclasses.replace(
                    changelog(topic, [100], size_bytes=sizes(t - T0)), cleanup_policy=policy
                )
            ],
        )
        for t in times(0, until or GROWTH_UNTIL, 60)
    ]


CASES = [
    # --- memory: must fire ------------------------------------------------------------
    Case(
        "ssf-windowed-over",
        "2 active + 1 standby task, each with a key-value store and a window store of 3 "
        "segments: 12 RocksDB instances x 98 MiB = 1176 MiB against a 1 GiB limit, for two "
        "minutes",
        KIND,
        _history("ssf-windowed-over", _steady(["0_0", "0_1"], ["0_2"], THREE_TASKS, GIB)),
        expect=[Expect("warning", process="pA")],
        check=all_of(
            evidence(
                variant="memory",
                stores=2,
                store_instances=6,
                rocksdb_instances=12,
                segments=9,
                tasks_held=3,
                per_instance_bytes=PER_INSTANCE,
                estimate_bytes=TWELVE,
                memory_limit_bytes=GIB,
                ratio=round(TWELVE / GIB, 3),
                warning_ratio=0.8,
                largest_stores=[
                    {
                        "rocksdb_instances": 9,
                        "store": "windowed-counts",
                        "kind": "segmented",
                        "tasks": 3,
                        "segments": 9,
                    },
                    {
                        "rocksdb_instances": 3,
                        "store": "counts",
                        "kind": "key_value",
                        "tasks": 3,
                        "segments": 0,
                    },
                ],
            ),
            explains(
                "instance pA holds 3 tasks with 2 persistent store(s)",
                "12 RocksDB instances x 98 MiB",
                "1176 MiB",
                "limit 1024 MiB",
                "RocksDBConfigSetter",
            ),
        ),
    ),
    Case(
        "ssf-standbys-count",
        "1 active and 4 standby tasks with a key-value store each: standbys keep their "
        "RocksDB open too; 5 x 98 = 490 MiB is 96% of a 512 MiB limit",
        KIND,
        _history(
            "ssf-standbys-count",
            _steady(
                ["0_0"],
                ["0_1", "0_2", "0_3", "0_4"],
                {f"0_{p}": (KV,) for p in range(5)},
                512 * MIB,
            ),
        ),
        expect=[Expect("warning", process="pA")],
        check=evidence(tasks_held=5, rocksdb_instances=5, segments=0),
    ),
    Case(
        "ssf-only-the-instance-over",
        "two instances, each with its sidecar: pA holds 3 tasks (1176 MiB of 1 GiB), pB one "
        "(392 MiB of 1 GiB); only pA is named, by every series of the group",
        KIND,
        _history(
            "ssf-only-the-instance-over",
            _steady(["0_0", "0_1"], ["0_2"], THREE_TASKS, GIB),
            others=[("pB", _steady(["0_3"], [], {"0_3": (KV, WINDOWED)}, GIB))],
        ),
        expect=[Expect("warning", process="pA")],
    ),
    # --- memory: must not fire --------------------------------------------------------
    Case(
        "ssf-generous-limit",
        "the same 1176 MiB against a 4 GiB limit: 29%",
        KIND,
        _history("ssf-generous-limit", _steady(["0_0", "0_1"], ["0_2"], THREE_TASKS, 4 * GIB)),
    ),
    Case(
        "ssf-unknown-limit",
        "no memory limit known: the estimate is a gauge, nothing is judged",
        KIND,
        _history("ssf-unknown-limit", _steady(["0_0", "0_1"], ["0_2"], THREE_TASKS, None)),
    ),
    Case(
        "ssf-left-over-directories",
        "six task directories on disk, but the instance holds only 0_0 now: directories "
        "left from an earlier assignment hold no open RocksDB (4 x 98 = 392 MiB of 1 GiB)",
        KIND,
        _history(
            "ssf-left-over-directories",
            _steady(["0_0"], [], {f"0_{p}": (KV, WINDOWED) for p in range(6)}, GIB),
        ),
    ),
    Case(
        "ssf-brief-excess",
        "over the limit only for the last 30 s (more tasks after a scale-in, say): not yet "
        "held for the evaluation window",
        KIND,
        _history(
            "ssf-brief-excess",
            lambda s: (
                (["0_0", "0_1"], ["0_2"], THREE_TASKS, GIB)
                if s >= UNTIL - 30
                else (["0_0"], [], THREE_TASKS, GIB)
            ),
        ),
    ),
    Case(
        "ssf-assignment-unknown",
        "every poll mid-rebalance (assignment undecoded): the held tasks are unknown, so "
        "nothing is judged rather than counting every directory",
        KIND,
        _history(
            "ssf-assignment-unknown",
            _steady(["0_0", "0_1"], ["0_2"], THREE_TASKS, GIB),
            decoded=False,
        ),
    ),
    # --- changelog growth -------------------------------------------------------------
    Case(
        "ssf-changelog-grows",
        "a compact-only changelog growing 10 MiB a minute from 100 MiB for 22 minutes, never "
        "shrinking: compaction is not bounding it",
        KIND,
        _changelog_history("ssf-changelog-grows", lambda s: 100 * MIB + int(s / 60) * 10 * MIB),
        expect=[Expect("warning", topic="ssf-changelog-grows-store-changelog")],
        check=all_of(
            evidence(
                variant="changelog_growth",
                size_bytes_at_start=100 * MIB + 2 * 10 * MIB,
                size_bytes=320 * MIB,
                growth_bytes=200 * MIB,
                over_seconds=1200.0,
                samples=21,
            ),
            explains("never shrank", "tombstones", "segment.ms"),
        ),
    ),
    Case(
        "ssf-changelog-cleaned",
        "the same growth, but the log cleaner reclaimed space once in the window: "
        "compaction is working; growth between segment rolls is normal",
        KIND,
        _changelog_history(
            "ssf-changelog-cleaned",
            lambda s: 100 * MIB + int(s / 60) * 10 * MIB - (50 * MIB if s >= 900 else 0),
        ),
    ),
    Case(
        "ssf-changelog-windowed",
        "a window store's changelog (compact,delete) growing the same: retention bounds it",
        KIND,
        _changelog_history(
            "ssf-changelog-windowed",
            lambda s: 100 * MIB + int(s / 60) * 10 * MIB,
            policy="compact,delete",
        ),
    ),
    Case(
        "ssf-changelog-slight-growth",
        "a 1 GiB changelog growing 1 MiB a minute: 20 MiB in the window is under both "
        "margins (20% and 64 MiB)",
        KIND,
        _changelog_history("ssf-changelog-slight-growth", lambda s: GIB + int(s / 60) * MIB),
    ),
    Case(
        "ssf-changelog-short-history",
        "10 minutes of polls: the look-back is not covered, nothing is judged",
        KIND,
        _changelog_history(
            "ssf-changelog-short-history", lambda s: 100 * MIB + int(s / 60) * 10 * MIB, until=600
        ),
    ),
]
