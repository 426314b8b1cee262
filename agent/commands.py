"""The agent-side CLI commands as small functions: each returns data; cli.py prints."""

import ctypes
import ctypes.util
import gc
import json
import os
import re
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from agent.collect.kafka_edge import KafkaEdge
from agent.collect.poller import ClusterPoller, GroupFilter
from agent.config import ClusterConfig, Config, kafka_client_settings, load_config, parse_config
from agent.config.sasl_files import check_sasl_files
from agent.config.tls_files import check_tls_files
from agent.config.topologies import configured_topologies, configured_topology
from agent.config.yaml_source import load_yaml
from agent.errors import ConfigError, KsmonError
from agent.explain.findings import findings_for_group
from agent.explain.history import group_history
from agent.explain.report import GroupReport, build_report
from agent.model import MemberInfo, Snapshot
from agent.runner import AgentRunner, agent_identity
from agent.terminal import table


class GroupNotFoundError(KsmonError):
    pass


class ClusterUnreachableError(KsmonError):
    retriable = True


def load_usable_config(path: Path) -> Config:
    """The config at ``path``, validated, with the TLS and SASL files it names readable."""
    config = load_config(path)
    check_tls_files(config, str(path))
    check_sasl_files(config, str(path))
    return config


def check_config(path: Path) -> str:
    """The file checked, and what it runs: the agent (or sidecar), the job, or both."""
    config = load_usable_config(path)
    return config.describe(written=sections_written(path))


def sections_written(path: Path) -> frozenset[str]:
    """The top-level sections of a config file that loads (``load_config`` read it first)."""
    document = load_yaml(path.read_text(encoding="utf-8"), str(path))
    return frozenset(str(key) for key in document) if isinstance(document, dict) else frozenset()


# The cyclic garbage collector's first threshold: allocations of container objects
# between two young collections (Python's default: 700).
GC_YOUNG_THRESHOLD = 50_000
# glibc's malloc arenas, at most (its default: 8 per core). Every poll runs in a new
# thread, and each thread's large buffers (the whole exposition, a poll's responses)
# kept memory in an arena of its own.
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # mallopt's parameter number (malloc.h)


def tune_garbage_collection() -> None:
    """Fewer collections for a process that allocates a great many objects per poll.

    On a large cluster, Python's default thresholds ran a young collection every
    700 allocations and a full one (through every object the agent keeps) every
    few polls, a large share of the agent's CPU. The objects that exist once the
    daemon is set up (modules, configuration) are frozen out of collections for
    good; cycles are still collected, 70 times less often.
    """
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def limit_malloc_arenas() -> None:
    """Cap glibc's malloc arenas (as ``MALLOC_ARENA_MAX`` would); elsewhere, nothing."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return  # the operator's choice
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(_M_ARENA_MAX, MALLOC_ARENAS)
    except (OSError, AttributeError):
        pass  # not glibc (musl, macOS): its allocator has no such knob


def run_agent(config: Config) -> None:
    """Run the daemon until SIGINT or SIGTERM."""
    limit_malloc_arenas()
    runner = AgentRunner(config)
    tune_garbage_collection()
    done = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda *_: done.set()) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    runner.start()
    try:
        done.wait()
    finally:
        runner.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@dataclass(frozen=True, slots=True)
class SnapshotTarget:
    config: Config
    cluster: ClusterConfig
    # False when the cluster was given only as --bootstrap servers: its name here
    # is made up, so it cannot match the name agents and the job know it by.
    cluster_named: bool = True


def snapshot_target(
    config_path: Path | None, bootstrap: str | None, cluster: str | None
) -> SnapshotTarget:
    if config_path is not None:
        config = load_usable_config(config_path)
    elif bootstrap is not None:
        config = parse_config(
            json.dumps({"clusters": [{"name": cluster or "cli", "bootstrap_servers": bootstrap}]}),
            "--bootstrap",
        )
    else:
        raise ConfigError("give --config FILE or --bootstrap host:port")
    named = config_path is not None or cluster is not None
    if cluster is None:
        return SnapshotTarget(config, config.clusters[0], named)
    matches = [c for c in config.clusters if c.name == cluster]
    if not matches:
        names = ", ".join(c.name for c in config.clusters)
        raise ConfigError(f"--cluster {cluster}: no such cluster in the configuration ({names})")
    return SnapshotTarget(config, matches[0], named)


def take_snapshot(target: SnapshotTarget, group: str) -> Snapshot:
    """One poll of one group, as the agent would ship it."""
    return poll_group(target, group, polls=1)[0]


def poll_group(
    target: SnapshotTarget,
    group: str,
    *,
    polls: int,
    interval: float = 0.0,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Snapshot]:
    """``polls`` polls of one group, ``interval`` seconds apart, with one connection.

    Raises one-line errors for an unreachable cluster and an unknown group.
    """
    cluster = target.cluster
    settings = kafka_client_settings(cluster)
    edge = KafkaEdge({**settings, "bootstrap_timeout_ms": int(cluster.poll.request_timeout * 1000)})
    poller = ClusterPoller(
        cluster.name,
        agent_identity(target.config),
        edge,
        group_filter=GroupFilter(allow=(re.compile(re.escape(group)),)),
        topologies=configured_topologies(target.config, cluster.name),
    )
    snapshots: list[Snapshot] = []
    try:
        for n in range(polls):
            if n:
                sleep(interval)
            result = poller.poll()
            if not result.ok:
                raise ClusterUnreachableError(
                    f"cannot poll cluster {cluster.name} ({','.join(cluster.bootstrap_servers)}): "
                    f"{result.error}"
                )
            if not result.snapshots:
                raise GroupNotFoundError(
                    f"group {group!r} not found on cluster {cluster.name} "
                    f"({result.groups_listed} groups listed)"
                )
            snapshots.append(result.snapshots[0])
    finally:
        edge.close()
    return snapshots


def explain_group(target: SnapshotTarget, group: str, *, sample_seconds: float) -> GroupReport:
    """Two polls ``sample_seconds`` apart (rates need two points), explained, with the
    group's recent generations from __consumer_offsets (a poll of an Empty group shows
    none) and the aggregation job's open findings for the group when its findings topic
    can be read."""
    # Spark-free modules of the job's package: the findings topic reader and its fold.
    from agent.aggregation.commands import open_findings  # noqa: PLC0415

    first, second = poll_group(target, group, polls=2, interval=sample_seconds)
    # Read after the second poll: the generations then cover the whole sample.
    history = group_history(target.cluster, second)
    findings, source = findings_for_group(
        partial(open_findings, target.config),
        _findings_topic(target.config),
        group,
        target.cluster.name if target.cluster_named else None,
    )
    topology, problem = configured_topology(target.config, target.cluster.name, group)
    report = build_report(first, second, findings, source, topology, history=history)
    return replace(report, problems=(*report.problems, problem)) if problem else report


def _findings_topic(config: Config) -> str:
    findings = config.aggregation.findings
    return findings.topic if findings is not None else "(not configured)"


def snapshot_table(snapshot: Snapshot) -> str:
    """A readable rendering of one snapshot for a terminal."""
    g = snapshot.group
    rows: list[tuple[str, ...]]
    lines = [
        f"group {g.group_id} on cluster {snapshot.cluster}: {g.state}, type {g.group_type}, "
        f"protocol {g.protocol or '-'}, coordinator {g.coordinator_id}, "
        f"{len(snapshot.members)} members",
    ]
    if g.is_streams:
        processes = sorted({m.streams.process_id for m in snapshot.members if m.streams})
        lines.append(f"Kafka Streams application: {len(processes)} instances")
        lines.append("")
        rows = [("INSTANCE", "THREAD", "HOST", "ACTIVE TASKS", "STANDBY TASKS")]
        for m in sorted(
            snapshot.members,
            key=lambda m: (
                m.streams.process_id if m.streams else "",
                m.streams.thread_index or 0 if m.streams else 0,
            ),
        ):
            if m.streams is None:
                rows.append(("?", "?", m.client_host, "(not decoded)", ""))
                continue
            rows.append(
                (
                    m.streams.process_id[:8],
                    str(m.streams.thread_index or "?"),
                    m.client_host,
                    " ".join(t.task for t in m.streams.active_tasks) or "-",
                    " ".join(t.task for t in m.streams.standby_tasks) or "-",
                )
            )
        lines += table(rows)
    elif snapshot.members:
        lines.append("")
        rows = [("MEMBER", "CLIENT", "HOST", "PARTITIONS")]
        for m in snapshot.members:
            parts = " ".join(f"{p.topic}-{p.partition}" for p in m.assigned_partitions) or "-"
            rows.append((m.member_id[-12:], m.client_id, m.client_host, parts))
        lines += table(rows)
    lines.append("")
    rows = [("TOPIC", "PARTITION", "COMMITTED", "LOG END", "LAG", "LAG SECONDS")]
    for p in snapshot.partitions:
        rows.append(
            (
                p.topic,
                str(p.partition),
                _num(p.committed_offset),
                _num(p.log_end_offset),
                _num(p.lag),
                _seconds(p.lag_seconds, at_least=p.lag_seconds_lower_bound),
            )
        )
    lines += table(rows)
    internal = [t for t in snapshot.topics if t.internal_kind]
    if internal:
        lines.append("")
        rows = [("INTERNAL TOPIC", "KIND", "PARTITIONS", "CLEANUP", "SIZE")]
        for t in internal:
            size = f"{t.size_bytes / 1024**2:.1f} MiB" if t.size_bytes is not None else "-"
            rows.append(
                (t.name, t.internal_kind or "", str(t.partitions), t.cleanup_policy or "-", size)
            )
        lines += table(rows)
    for e in snapshot.errors:
        lines.append(f"error while polling ({e.stage}): {e.error}: {e.message}")
    return "\n".join(lines)


def _instance_then_thread(member: MemberInfo) -> tuple[str, int]:
    if member.streams is None:
        return ("", 0)
    return (member.streams.process_id, member.streams.thread_index or 0)


def _seconds(value: float | None, *, at_least: bool) -> str:
    """Lag in seconds; ">=" marks a lower bound (older than anything datable)."""
    if value is None:
        return "-"
    return f">={value:.1f}" if at_least else f"{value:.1f}"


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)
