"""The agent's latest results, shared between the pollers (writers) and /metrics (reader).

Writers replace whole immutable values under a lock; a scrape takes a
consistent copy and never waits on a poll, let alone on Kafka.
"""

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from agent.model import Snapshot
from agent.model.poll_result import PollResult, SidecarReport
from agent.transport.sink import SinkStats


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    cluster: str
    up: bool = False
    last_poll_at: float | None = None
    last_success_at: float | None = None
    last_duration_seconds: float | None = None
    last_error: str | None = None
    polls_ok: int = 0
    polls_failed: int = 0
    groups: int = 0
    requests_total: Counter[str] = field(default_factory=Counter)
    poll_errors_total: Counter[tuple[str, str]] = field(default_factory=Counter)  # (stage, error)
    snapshots: tuple[Snapshot, ...] = ()  # from the last successful poll; empty while down
    # Sidecar mode: the last look inside the pod, kept while the cluster is down.
    sidecar: SidecarReport | None = None


@dataclass(frozen=True, slots=True)
class StateView:
    clusters: tuple[ClusterStatus, ...]
    sinks: tuple[SinkStats, ...]
    # Per cluster that reads __consumer_offsets: whether its reader is running now.
    offsets_readers: dict[str, bool] = field(default_factory=dict)


class AgentState:
    def __init__(
        self,
        clusters: list[str],
        sink_stats: Callable[[], list[SinkStats]] | None = None,
        offsets_readers: Callable[[], dict[str, bool]] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._clusters = {name: ClusterStatus(name) for name in clusters}
        self._sink_stats = sink_stats or list
        self._offsets_readers = offsets_readers or dict

    def record(self, result: PollResult) -> None:
        with self._lock:
            previous = self._clusters.get(result.cluster, ClusterStatus(result.cluster))
            requests = previous.requests_total + result.requests
            errors = Counter(previous.poll_errors_total)
            for snapshot in result.snapshots:
                for error in snapshot.errors:
                    errors[(error.stage, error.error)] += 1
            if result.ok:
                status = replace(
                    previous,
                    up=True,
                    last_poll_at=result.started_at,
                    last_success_at=result.started_at,
                    last_duration_seconds=result.duration_seconds,
                    last_error=None,
                    polls_ok=previous.polls_ok + 1,
                    groups=len(result.snapshots),
                    requests_total=requests,
                    poll_errors_total=errors,
                    snapshots=tuple(result.snapshots),
                    sidecar=result.sidecar,
                )
            else:
                errors[("cluster", "unreachable")] += 1
                # Stale lag is worse than none: group series vanish while the cluster is down.
                status = replace(
                    previous,
                    up=False,
                    last_poll_at=result.started_at,
                    last_duration_seconds=result.duration_seconds,
                    last_error=result.error,
                    polls_failed=previous.polls_failed + 1,
                    groups=0,
                    requests_total=requests,
                    poll_errors_total=errors,
                    snapshots=(),
                    sidecar=result.sidecar,
                )
            self._clusters[result.cluster] = status

    def view(self) -> StateView:
        with self._lock:
            clusters = tuple(self._clusters.values())
        return StateView(clusters, tuple(self._sink_stats()), self._offsets_readers())
