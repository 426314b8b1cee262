"""The agent process: configuration in, pollers, sink and /metrics wired together.

Lifecycle (as Burrow's): constructing touches no network; ``start`` starts
the HTTP server, the __consumer_offsets readers and the poll scheduler, and
returns; ``stop`` stops them in reverse order, within ``STOP_SECONDS`` whatever
the brokers do, and says what it could not ship.
"""

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from agent import __version__
from agent.collect.kafka_edge import KafkaEdge
from agent.collect.lag_time import OffsetHistory
from agent.collect.offsets_tail import OffsetsTopicTail
from agent.collect.poller import ClusterPoller, GroupFilter
from agent.collect.schedule import PollScheduler, ScheduledPoller
from agent.collect.sidecar import SidecarCollector, SidecarSettings
from agent.config import Config, SidecarConfig, kafka_client_settings
from agent.config.topologies import configured_topologies
from agent.errors import ConfigError
from agent.exposition.agent_state import AgentState
from agent.exposition.http import MetricsServer
from agent.exposition.metrics_cache import MetricsExposition
from agent.model import AgentInfo
from agent.model.poll_result import PollResult
from agent.transport.factory import open_sink

log = logging.getLogger(__name__)

# How long stopping may take: a poll under way gets ``POLL_GRACE_SECONDS`` to finish, the
# sink the rest to deliver what it holds. A dead broker gets no longer than that.
STOP_SECONDS = 4.0
POLL_GRACE_SECONDS = 1.0


def agent_identity(config: Config, env: dict[str, str] | None = None) -> AgentInfo:
    env = dict(os.environ) if env is None else env
    return AgentInfo(
        id=config.agent.id,
        version=__version__,
        mode=config.agent.mode,
        pod=env.get("POD_NAME"),
        namespace=env.get("POD_NAMESPACE"),
        pod_ip=env.get("POD_IP"),
        node=env.get("NODE_NAME"),
    )


def _sidecar_collector(sidecar: SidecarConfig, identity: AgentInfo) -> SidecarCollector:
    limit = sidecar.app_memory_limit
    return SidecarCollector(
        SidecarSettings(
            application_id=sidecar.application_id,
            app_metrics_url=sidecar.app_metrics_url,
            scrape_timeout=sidecar.scrape_timeout,
            state_dir=sidecar.state_dir,
            expected_stream_threads=sidecar.expected_stream_threads,
            pod_name=identity.pod,
            pod_ip=identity.pod_ip,
            app_memory_limit=limit if isinstance(limit, int) else None,
            app_memory_limit_source="configuration" if isinstance(limit, int) else None,
            app_memory_limit_file=limit if isinstance(limit, Path) else None,
            app_metrics_dialect=sidecar.app_metrics_dialect,
        )
    )


class AgentRunner:
    def __init__(
        self,
        config: Config,
        *,
        edge_factory: Callable[[dict[str, object]], KafkaEdge] = KafkaEdge,
    ) -> None:
        """``edge_factory`` makes each cluster's Admin connection; fault tests wrap it."""
        self.config = config
        identity = agent_identity(config)
        self.sink = open_sink(config)
        self.edges: dict[str, KafkaEdge] = {}
        self.tails: dict[str, OffsetsTopicTail] = {}
        self.pollers: dict[str, ClusterPoller] = {}
        scheduled = []
        sidecar = config.sidecar
        # A sidecar polls only the cluster its app runs on (others may host the sink).
        polled = [c for c in config.clusters if sidecar is None or c.name == sidecar.cluster]
        for cluster in polled:
            settings = kafka_client_settings(cluster)
            timeout_ms = int(cluster.poll.request_timeout * 1000)
            edge = edge_factory({**settings, "bootstrap_timeout_ms": timeout_ms})
            self.edges[cluster.name] = edge
            # A sidecar never tails __consumer_offsets: every pod reading it all would not scale.
            reads_offsets_topic = cluster.offsets_topic.read and sidecar is None
            tail = OffsetsTopicTail(settings, cluster.name) if reads_offsets_topic else None
            if tail is not None:
                self.tails[cluster.name] = tail
            poller = ClusterPoller(
                cluster.name,
                identity,
                edge,
                group_filter=GroupFilter(cluster.groups.allow, cluster.groups.deny),
                metadata_interval=cluster.poll.metadata_interval,
                history=OffsetHistory(),
                rebalances=tail,
                sidecar=_sidecar_collector(sidecar, identity) if sidecar is not None else None,
                topologies=configured_topologies(config, cluster.name),
            )
            self.pollers[cluster.name] = poller
            scheduled.append(ScheduledPoller(poller, cluster.poll.offsets_interval))
        self.state = AgentState(
            [c.name for c in polled],
            sink_stats=lambda: [self.sink.stats()],
            offsets_readers=lambda: {name: tail.running for name, tail in self.tails.items()},
        )
        self.scheduler = PollScheduler(scheduled, self._on_result)
        self.exposition = MetricsExposition(
            self.state,
            agent_id=config.agent.id,
            mode=config.agent.mode,
            lag_granularity=config.exposition.lag_granularity,
        )
        try:
            self.server = MetricsServer(
                None,
                config.http.host,
                config.http.port,
                ready=lambda: self.scheduler.started,
                exposition=self.exposition,
            )
        except OSError as e:  # the port is taken, or the host is not an address of this machine
            self.sink.close(timeout=0)
            raise ConfigError(
                f"http.listen: cannot serve /metrics on {config.http.listen}: {e.strerror or e}"
            ) from None
        self._stopped = threading.Event()
        self._stopping = threading.Event()

    def _on_result(self, result: PollResult) -> None:
        if self._stopping.is_set():
            return  # a poll that outlived the stop's grace: the sink is closed
        self.state.record(result)
        self.exposition.update()
        self.sink.send_all([(s.key, s.to_json()) for s in (*result.snapshots, *result.departed)])
        if result.ok:
            log.debug(
                "cluster %s: polled %d groups in %.3fs",
                result.cluster,
                len(result.snapshots),
                result.duration_seconds,
            )

    def start(self) -> None:
        self.server.start()
        for tail in self.tails.values():
            tail.start()
        self.scheduler.start()
        log.info(
            "ksmon agent %s (%s) watching %s; metrics on %s:%d",
            self.config.agent.id,
            self.config.agent.mode,
            self._watching(),
            self.config.http.host,
            self.server.port,
        )

    def _watching(self) -> str:
        sidecar = self.config.sidecar
        if sidecar is not None:
            return f"Kafka Streams application {sidecar.application_id} on {sidecar.cluster}"
        return ", ".join(c.name for c in self.config.clusters)

    def stop(self, timeout: float = STOP_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        abandoned = self.scheduler.stop(grace=min(POLL_GRACE_SECONDS, timeout))
        self._stopping.set()
        for tail in self.tails.values():
            tail.stop(timeout=0.5)  # a daemon thread: one stuck in a bootstrap stays behind
        self.sink.close(timeout=max(0.0, deadline - time.monotonic()))
        for edge in self.edges.values():
            edge.close(timeout=0.2)
        self.server.stop()
        self._stopped.set()
        unshipped = self._unshipped(abandoned)
        if unshipped:
            log.warning("ksmon agent stopped; %s (lost with the process)", unshipped)
        else:
            log.info("ksmon agent stopped")

    def _unshipped(self, abandoned: list[str]) -> str:
        """What stopping left undone, in one line."""
        parts = []
        stats = self.sink.stats()
        if stats.buffered:
            sink = self.config.sink
            where = (
                f"Kafka topic {sink.kafka.topic} on cluster {sink.kafka.cluster}"
                if sink.kafka is not None
                else sink.type
            )
            error = f"; last error: {stats.last_error}" if stats.last_error else ""
            parts.append(f"{stats.buffered} snapshots not shipped to {where}{error}")
        if abandoned:
            parts.append(
                "polls still waiting on their broker were abandoned: " + ", ".join(abandoned)
            )
        return "; ".join(parts)
