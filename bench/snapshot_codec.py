"""Benchmark: the snapshot codec, writing and reading a poll's worth of snapshots.

Builds the snapshots of one poll of 1,000 Kafka Streams groups x 20 partitions
(four members each, every partition its own task), then times, best of five:
the agent writing them (``Snapshot.to_json``), reading them back into the model
(``Snapshot.from_json``, as ``ksmon explain`` and the replay do), and the job's
reader turning them into a window's polls (``facts.decode``).

``--against REV`` runs the same measurement on the code of a git revision (in a
temporary worktree, in a fresh process) and prints both, side by side, in one run.

    .venv/bin/python bench/snapshot_codec.py                      # this tree
    .venv/bin/python bench/snapshot_codec.py --against HEAD~1     # and an older one
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def best_of(runs: int, work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def measure(groups: int, partitions: int, runs: int) -> dict[str, object]:
    """Seconds per poll's snapshots for each step, measured on the code at ``sys.path[0]``."""
    from agent.aggregation.judging import facts
    from agent.model.snapshot import Snapshot
    from tests.support.snapshots import partition, snapshot, streams_member

    def group(i: int) -> Snapshot:
        topic = f"topic-{i % 100}"
        members = [
            streams_member(
                f"process-{k}",
                1,
                {f"0_{p}": [(topic, p)] for p in range(partitions) if p % 4 == k},
                member_id=f"member-{k}",
            )
            for k in range(4)
        ]
        rows = [
            partition(topic, p, 1_000_000 + p, 999_000 + p, owner=f"member-{p % 4}")
            for p in range(partitions)
        ]
        return snapshot(f"group-{i}", 1_000.0, members=members, partitions=rows)

    tree = Path(sys.path[0]).resolve()
    assert Path(facts.__file__).resolve().is_relative_to(tree), f"not the code of {tree}"
    snapshots = [group(i) for i in range(groups)]
    texts = [s.to_json() for s in snapshots]
    return {
        "groups": groups,
        "partitions": groups * partitions,
        "bytes": sum(map(len, texts)),
        "write_s": round(best_of(runs, lambda: [s.to_json() for s in snapshots]), 4),
        "read_model_s": round(best_of(runs, lambda: [Snapshot.from_json(t) for t in texts]), 4),
        "read_job_s": round(best_of(runs, lambda: [facts.decode(t) for t in texts]), 4),
    }


def measure_at(revision: str, args: argparse.Namespace) -> dict[str, object]:
    """The same measurement on ``revision``'s code, in a worktree and a process of its own."""
    with tempfile.TemporaryDirectory(prefix="ksmon-codec-") as scratch:
        tree = Path(scratch) / "tree"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), revision],
            check=True,
            capture_output=True,
        )
        try:
            out = subprocess.run(
                [sys.executable, __file__, "--tree", str(tree), *own_options(args)],
                check=True,
                capture_output=True,
                text=True,
            )
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True
            )
    return dict(json.loads(out.stdout))


def own_options(args: argparse.Namespace) -> list[str]:
    return [
        f"--groups={args.groups}",
        f"--partitions={args.partitions}",
        f"--runs={args.runs}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=1_000)
    parser.add_argument("--partitions", type=int, default=20, help="per group")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", metavar="REV", help="also measure this git revision")
    parser.add_argument("--tree", type=Path, help=argparse.SUPPRESS)  # the code to measure
    args = parser.parse_args()
    sys.path.insert(0, str(args.tree or ROOT))
    report: dict[str, object] = {"this tree": measure(args.groups, args.partitions, args.runs)}
    if args.tree is not None:
        print(json.dumps(report["this tree"]))
        return
    if args.against:
        report[args.against] = measure_at(args.against, args)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
