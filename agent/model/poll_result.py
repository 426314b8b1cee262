"""What one poll of a cluster produced, as the agent's own outputs read it.

The poller makes a ``PollResult``; the agent's /metrics and its sink read it.
It never leaves the agent (the job reads the snapshots inside it), so it is not
part of the snapshot contract; it lives here so that the outputs depend on the
records they read, not on the poller that makes them.
"""

from collections import Counter
from dataclasses import dataclass, field

from agent.model.snapshot import SidecarInfo, Snapshot


@dataclass(frozen=True, slots=True)
class SidecarReport:
    """What a sidecar saw inside its pod, for its application's group."""

    group: str
    info: SidecarInfo


@dataclass(slots=True)
class PollResult:
    cluster: str
    sequence: int
    started_at: float
    duration_seconds: float
    snapshots: list[Snapshot] = field(default_factory=list)
    error: str | None = None  # set when the cluster could not be polled at all
    requests: Counter[str] = field(default_factory=Counter)
    groups_listed: int = 0
    # Groups watched before and gone now, their deletion confirmed by their coordinator:
    # one last snapshot each (state Dead) for the sink, so the job closes their findings.
    # Not in ``snapshots``: the agent's own metrics drop a deleted group at once.
    departed: list[Snapshot] = field(default_factory=list)
    # Sidecar mode: reported even when the cluster could not be polled.
    sidecar: SidecarReport | None = None

    @property
    def ok(self) -> bool:
        return self.error is None
