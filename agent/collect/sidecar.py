"""The sidecar's view of the Kafka Streams instance in its pod, collected once per poll.

Per poll, ``observe`` scrapes the app's metrics endpoint and reads its state
directory (the two I/O edges); the broker poll then describes the app's group,
asking for the changelog topics the observation names (``changelog_topics``);
``report`` matches the group's members to this pod and assembles the
snapshot's ``sidecar`` section (``build_sidecar_info``, pure).

Either edge may fail on its own: an app whose endpoint is down gives
``app_metrics_up=False`` with the reason and the rest still ships; a state
directory that is not mounted gives ``state_dir_readable=False``. The
filesystem holding the state directory is asked for its size and free bytes
(``state_volume``) beside it, with its own error.
"""

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agent.collect.app_scrape import Scrape, scrape_metrics
from agent.collect.memory_limit import MemoryLimit, read_memory_limit
from agent.collect.state_dir_reader import StateDirReading, TaskDirReading, read_state_dir
from agent.collect.state_volume import StateVolume, read_state_volume
from agent.model import (
    CheckpointOffset,
    MemberInfo,
    SidecarInfo,
    SidecarStateUpdater,
    SidecarTask,
    SidecarThread,
    StateDirStore,
    StateDirTask,
)
from agent.streams.app_instance import InstanceMemory, InstanceView, observe_instance
from agent.streams.app_metrics import (
    AppMetrics,
    Dialect,
    parse_app_metrics,
    relevant_raw_line,
)
from agent.streams.codec import DecodeError
from agent.streams.identity import PodIdentity, match_members
from agent.streams.state_dir import changelog_topic

log = logging.getLogger(__name__)

# Recording levels at which Kafka Streams counts restore-total (a DEBUG sensor).
_RESTORE_TOTAL_LEVELS = frozenset({"DEBUG", "TRACE"})


@dataclass(frozen=True, slots=True)
class SidecarSettings:
    application_id: str
    app_metrics_url: str
    scrape_timeout: float = 5.0
    state_dir: Path | None = None
    expected_stream_threads: int | None = None
    pod_name: str | None = None  # Downward API, for identity
    pod_ip: str | None = None
    # The app container's memory limit: a fixed number (Downward API limits.memory via
    # the configuration), else a cgroup file read at every poll.
    app_memory_limit: int | None = None
    app_memory_limit_source: str | None = None
    app_memory_limit_file: Path | None = None
    # The naming of the app's metrics (``app_metrics.DIALECTS``); auto: the page's own.
    app_metrics_dialect: Dialect | Literal["auto"] = "auto"


@dataclass(frozen=True, slots=True)
class SidecarObservation:
    scrape: Scrape
    instance: InstanceView | None = None  # None when the scrape failed
    state_dir: StateDirReading | None = None  # None when no state directory is configured
    state_volume: StateVolume | None = None  # the filesystem holding it; None likewise
    stores: frozenset[str] = field(default_factory=frozenset)
    memory_limit: MemoryLimit = field(default_factory=lambda: MemoryLimit(None))


Scraper = Callable[[str, float, Callable[[bytes], bool]], Scrape]
StateDirReader = Callable[[Path, str], StateDirReading]
StateVolumeReader = Callable[[Path], StateVolume]


class SidecarCollector:
    """Keeps what earlier scrapes of the app's JVM showed (see ``app_instance``)."""

    def __init__(
        self,
        settings: SidecarSettings,
        *,
        scraper: Scraper = scrape_metrics,
        state_dir_reader: StateDirReader = read_state_dir,
        state_volume_reader: StateVolumeReader = read_state_volume,
    ) -> None:
        self.settings = settings
        self._scrape = scraper
        self._read_state_dir = state_dir_reader
        self._read_state_volume = state_volume_reader
        self._memory = InstanceMemory()
        self._said: tuple[str | None, tuple[str, ...]] | None = None  # the last gaps logged

    @property
    def application_id(self) -> str:
        return self.settings.application_id

    def observe(self) -> SidecarObservation:
        s = self.settings
        scrape = self._scrape(s.app_metrics_url, s.scrape_timeout, relevant_raw_line)
        instance = None
        if scrape.error is None:
            metrics = parse_app_metrics(scrape.text, s.app_metrics_dialect)
            self._say_what_is_missing(metrics)
            instance, self._memory = observe_instance(metrics, s.application_id, self._memory)
        state_dir = volume = None
        if s.state_dir is not None:
            state_dir = self._read_state_dir(s.state_dir, s.application_id)
            volume = self._read_state_volume(s.state_dir)
        stores = set(instance.stores if instance is not None else ())
        for task in state_dir.tasks if state_dir is not None else ():
            stores.update(task.stores)
        return SidecarObservation(
            scrape, instance, state_dir, volume, frozenset(stores), _memory_limit(s)
        )

    def _say_what_is_missing(self, metrics: AppMetrics) -> None:
        """One line when the app's page lacks fields its client always has, and again only
        when that changes (a poll every few seconds must not repeat it)."""
        if not metrics.clients:
            return  # no client yet (starting) or any more (closed): nothing to judge
        gaps = (metrics.dialect, metrics.missing)
        if gaps == self._said:
            return
        self._said = gaps
        if metrics.missing:
            log.info(
                "%s (%s naming) has no %s: left unknown",
                self.settings.app_metrics_url,
                metrics.dialect,
                ", ".join(metrics.missing),
            )

    def changelog_topics(self, observation: SidecarObservation) -> set[str]:
        """Changelog topics the app may have: named after its stores, or in its checkpoints.

        They let a sidecar find its app's changelogs without listing every topic
        of the cluster; names that do not exist are dropped by the broker poll.
        """
        topics = {changelog_topic(self.application_id, store) for store in observation.stores}
        for task in observation.state_dir.tasks if observation.state_dir is not None else ():
            if task.checkpoint is not None and not isinstance(task.checkpoint, DecodeError):
                topics.update(o.topic for o in task.checkpoint.offsets)
                topics.update(topic for topic, _ in task.checkpoint.unknown)
        return topics

    def report(self, observation: SidecarObservation, members: Iterable[MemberInfo]) -> SidecarInfo:
        return build_sidecar_info(self.settings, observation, members)


def build_sidecar_info(
    settings: SidecarSettings, observation: SidecarObservation, members: Iterable[MemberInfo]
) -> SidecarInfo:
    """The snapshot's ``sidecar`` section from one observation and the group's members (pure)."""
    instance = observation.instance or InstanceView()
    state_dir = observation.state_dir
    volume = observation.state_volume or StateVolume()
    # The live metrics speak for the running client; the state directory's file
    # is the same id when the app has persistent stores.
    process_id = instance.process_id or (state_dir.process_id if state_dir is not None else None)
    identity = PodIdentity(
        process_id=process_id,
        consumer_client_ids=frozenset(
            t.coordinator.client_id for t in instance.threads if t.coordinator is not None
        ),
        pod_name=settings.pod_name,
        pod_ip=settings.pod_ip,
    )
    match = match_members(members, identity)
    counts_restores = instance.recording_level in _RESTORE_TOTAL_LEVELS
    return SidecarInfo(
        process_id=process_id or match.process_id,
        member_ids=match.member_ids,
        app_metrics_url=settings.app_metrics_url,
        app_metrics_up=observation.scrape.error is None,
        app_metrics_error=observation.scrape.error,
        client_state=instance.client_state,
        alive_stream_threads=instance.alive_stream_threads,
        failed_stream_threads=instance.failed_stream_threads,
        expected_stream_threads=settings.expected_stream_threads,
        threads=tuple(
            SidecarThread(
                thread_id=t.thread_id,
                thread_index=t.index,
                state=t.state,
                rebalance_total=t.coordinator.rebalance_total if t.coordinator else None,
                failed_rebalance_total=(
                    t.coordinator.failed_rebalance_total if t.coordinator else None
                ),
                last_rebalance_seconds_ago=(
                    t.coordinator.last_rebalance_seconds_ago if t.coordinator else None
                ),
            )
            for t in instance.threads
        ),
        tasks=tuple(
            SidecarTask(
                task=t.task_id,
                thread_id=t.thread_id,
                restore_remaining_records=t.remaining_records,
                restored_records_total=t.restored_records_total if counts_restores else None,
            )
            for t in instance.tasks
        ),
        state_updaters=tuple(
            SidecarStateUpdater(
                thread_id=u.thread_id,
                active_restoring_tasks=u.active_restoring_tasks,
                standby_updating_tasks=u.standby_updating_tasks,
                active_paused_tasks=u.active_paused_tasks,
                restore_records_rate=u.restore_records_rate,
            )
            for u in instance.state_updaters
        ),
        state_dir=str(state_dir.directory) if state_dir is not None else None,
        state_dir_readable=state_dir is not None and state_dir.readable,
        state_dir_tasks=tuple(_state_dir_task(t) for t in state_dir.tasks) if state_dir else (),
        matched_by=match.matched_by,
        client_closed=instance.closed,
        recording_level=instance.recording_level,
        state_dir_error=state_dir.error if state_dir is not None else None,
        state_dir_bytes=state_dir.total_bytes if state_dir is not None else None,
        state_volume_size_bytes=volume.size_bytes,
        state_volume_available_bytes=volume.available_bytes,
        state_volume_error=volume.error,
        memory_limit_bytes=observation.memory_limit.bytes,
        memory_limit_source=observation.memory_limit.source,
        memory_limit_error=observation.memory_limit.error,
    )


def _memory_limit(settings: SidecarSettings) -> MemoryLimit:
    if settings.app_memory_limit is not None:
        return MemoryLimit(settings.app_memory_limit, settings.app_memory_limit_source)
    if settings.app_memory_limit_file is not None:
        return read_memory_limit(settings.app_memory_limit_file)
    return MemoryLimit(None)


def _state_dir_task(reading: TaskDirReading) -> StateDirTask:
    checkpoint = reading.checkpoint
    stores = tuple(StateDirStore(s.name, s.kind, s.segments, s.size_bytes) for s in reading.layouts)
    if isinstance(checkpoint, DecodeError):
        return StateDirTask(
            reading.task,
            has_checkpoint=True,
            size_bytes=reading.size_bytes,
            error=str(checkpoint),
            stores=stores,
        )
    return StateDirTask(
        task=reading.task,
        has_checkpoint=checkpoint is not None,
        checkpoint=tuple(
            CheckpointOffset(o.topic, o.partition, o.offset)
            for o in (checkpoint.offsets if checkpoint is not None else ())
        ),
        size_bytes=reading.size_bytes,
        stores=stores,
    )
