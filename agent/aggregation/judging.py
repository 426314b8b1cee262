"""Which of a micro-batch's snapshots the detectors judge (pure: no Spark, no clock).

Every snapshot of a batch joins the history, so every look-back sees it. Judging
is another matter: each judged poll is one more evaluation in the batch's Spark
job (about 3 s per poll of 20,000 partitions on two cores, docs/benchmarks.md),
so a job that has fallen behind and judges every poll it reads takes longer per
batch and reads more polls the next time: it stays further behind, and never
catches up where judging a poll takes longer than the poll interval.
``aggregation.judged_polls_per_batch`` bounds that: only the newest polls of each
series (cluster, group, agent) are judged. What that costs: a condition that
held only at the polls skipped is not reported (a replay of the snapshots judges
every poll); a finding's ``since`` still comes from the full look-back.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agent.aggregation.parse import SnapshotKey

Series = tuple[str, str, str]  # cluster, group, agent


@dataclass(frozen=True)
class Judging:
    judged: list[SnapshotKey]  # in the order the batch held them
    late: int  # older than the history's horizon when they arrived: not judged
    skipped: int  # within the horizon, but older than the newest polls judged


def snapshots_to_judge(
    snapshots: Iterable[SnapshotKey],
    *,
    horizon: float,
    evaluated_until: Mapping[Series, float],
    newest_per_series: int,
) -> Judging:
    """The batch's polls to judge: newer than the horizon and than what their series was
    judged at already (a snapshot delivered twice is judged once), at most
    ``newest_per_series`` per series, the newest (0: all of them)."""
    snapshots = list(snapshots)
    late = sum(1 for key in snapshots if key[3] < horizon)
    fresh = [
        key
        for key in snapshots
        if key[3] >= horizon and key[3] > evaluated_until.get(key[:3], float("-inf"))
    ]
    if newest_per_series <= 0:
        return Judging(fresh, late, 0)
    times: dict[Series, set[float]] = defaultdict(set)
    for key in fresh:
        times[key[:3]].add(key[3])
    kept = {series: set(sorted(ts)[-newest_per_series:]) for series, ts in times.items()}
    judged = [key for key in fresh if key[3] in kept[key[:3]]]
    return Judging(judged, late, len(fresh) - len(judged))
