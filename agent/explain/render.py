"""``GroupReport`` as text for a terminal: findings first, then who holds what."""

import time
from collections.abc import Iterable, Sequence

from agent.explain.report import (
    AdviceLine,
    GroupReport,
    InstanceLine,
    PartitionLine,
    RebalanceLine,
    SubtopologyLine,
    TaskLine,
)
from agent.terminal import table

# A loop stores a generation every few seconds: the text shows the newest, --json all.
REBALANCES_SHOWN = 20


def render_report(report: GroupReport) -> str:
    lines = [_headline(report), *_situation(report), ""]
    lines += _findings(report)
    # In trouble, the rebalances are part of what is wrong: right after the findings.
    in_trouble = report.condition is not None
    if in_trouble:
        lines += [*_rebalances(report), ""]
    footnoted: set[str] = set()
    if report.instances:
        lines += ["INSTANCES (by load)", *_instances(report.instances)]
        task_partitions = [
            p for i in report.instances for t in i.threads for k in t.tasks for p in k.partitions
        ]
        lines += _lag_footnotes(task_partitions, footnoted)
        lines.append("")
    if report.other_members:
        title = "MEMBERS" if not report.is_streams else "MEMBERS WITHOUT KAFKA STREAMS DATA"
        lines += [title, *(f"  {m}" for m in report.other_members), ""]
    if report.advice is not None:
        lines += [*_advice(report.advice), ""]
    if report.topology:
        lines += [_TOPOLOGY_TITLE[report.topology_source or "broker"]]
        lines += [f"  {_subtopology(s)}" for s in report.topology] + [""]
    if report.partitions:
        lines += ["PARTITIONS", *_partitions(report.partitions)]
        lines += [*_lag_footnotes(report.partitions, footnoted), ""]
    else:
        lines += [
            "PARTITIONS: none known: the group has committed no offsets, and no member "
            "holds an assignment at this instant",
            "",
        ]
    if report.internal_topics:
        rows = [("  TOPIC", "KIND", "PARTITIONS", "CLEANUP", "SIZE")]
        rows += [
            (
                f"  {t.name}",
                t.kind,
                str(t.partitions),
                t.cleanup_policy or "-",
                _bytes(t.size_bytes),
            )
            for t in report.internal_topics
        ]
        lines += ["INTERNAL TOPICS", *table(rows), ""]
    if not in_trouble:
        lines += [*_rebalances(report), ""]
    if report.problems:
        lines += ["PROBLEMS WHILE POLLING", *(f"  {p}" for p in report.problems), ""]
    return "\n".join(lines).rstrip() + "\n"


def _headline(report: GroupReport) -> str:
    kind = "Kafka Streams application" if report.is_streams else f"{report.group_type} group"
    parts = [f"{report.group} on cluster {report.cluster}: {kind}, {report.state}"]
    if report.generation is not None:
        parts.append(f"generation {report.generation}")
    if not report.members:
        parts.append("no members at this instant")
    elif report.is_streams:
        threads = sum(len(i.threads) for i in report.instances)
        parts.append(f"{len(report.instances)} instances, {threads} stream threads")
    else:
        parts.append(f"{report.members} members")
    parts.append(f"rates over {report.sampled_seconds:.1f} s")
    return ", ".join(parts)


def _situation(report: GroupReport) -> list[str]:
    """Under the headline: what state the group is in when it is not simply running."""
    lines = []
    if report.condition is not None:
        lines.append(report.condition)
    last = report.last_members
    if last is not None:
        generation = f"generation {last.generation}, " if last.generation is not None else ""
        instances = f" of {_count(last.instances, 'instance')}" if last.instances else ""
        lines.append(
            f"Last members: {_count(last.members, 'member')}{instances} at {generation}"
            f"{_clock(last.at)} (from {last.source})"
        )
    if report.streams_evidence is not None:
        lines.append(f"Why a Kafka Streams application: {report.streams_evidence}")
    return lines


def _rebalances(report: GroupReport) -> list[str]:
    """The generations stored recently, or why they are unknown: never silently none."""
    if not report.rebalances:
        lines = [f"RECENT REBALANCES: {report.rebalances_note}"]
    else:
        lines = [f"RECENT REBALANCES ({report.rebalances_note})"]
        shown = report.rebalances[-REBALANCES_SHOWN:]
        if len(report.rebalances) > len(shown):
            earlier = len(report.rebalances) - len(shown)
            lines.append(f"  ... {earlier} earlier generations (--json lists them)")
        lines += [f"  {_rebalance(r)}" for r in shown]
    if report.sample_changes:
        lines.append(f"  during the sample: {'; '.join(report.sample_changes)}")
    return lines


def _rebalance(r: RebalanceLine) -> str:
    text = f"generation {r.generation} at {_clock(r.at)}, {_count(r.member_count, 'member')}"
    if r.instances is not None:
        text += f" of {_count(r.instances, 'instance')}"
    if r.protocol is not None:
        text += f", assignor {r.protocol}"
    if r.member_count == 0:
        text += " (Empty)"
    if r.during_sample:
        text += " (during the sample)"
    return text


def _findings(report: GroupReport) -> list[str]:
    if report.findings is None:
        source = report.findings_source or "the aggregation job is not reachable"
        return [f"FINDINGS: unknown ({source}); the agent's own view follows", ""]
    if not report.findings:
        return [f"FINDINGS: none ({report.findings_source or 'the aggregation job'})", ""]
    lines = [f"FINDINGS ({report.findings_source or 'the aggregation job'})"]
    for f in sorted(report.findings, key=lambda f: (_SEVERITY.get(f.severity, 9), f.kind)):
        since = f", since {_clock(f.since)}" if f.since is not None else ""
        lines.append(f"  {f.severity.upper():8} {f.kind} ({f.subject}{since})")
        lines.append(f"           {f.explanation}")
        if f.evidence:
            lines.append(f"           evidence: {f.evidence}")
    return [*lines, ""]


_SEVERITY = {"critical": 0, "warning": 1, "info": 2}
_TOPOLOGY_TITLE = {
    "broker": "TOPOLOGY (as the broker holds it)",
    "config": "TOPOLOGY (from the configured Topology#describe() text)",
}


def _advice(advice: AdviceLine) -> list[str]:
    how = "the best" if advice.exact else "the best found (not proven optimal)"
    moves = len(advice.moves)
    lines = [
        f"REBALANCING ADVICE (by load, not task count: {how})",
        f"  busiest instance {_rate(advice.before_instance_max)} -> "
        f"{_rate(advice.after_instance_max)}, busiest thread "
        f"{_rate(advice.before_thread_max)} -> {_rate(advice.after_thread_max)}, "
        f"{moves} move{'s' if moves != 1 else ''}:",
    ]
    for move in advice.moves:
        standby = " (a standby there is promoted: no restore)" if move.promotes_standby else ""
        lines.append(
            f"  {move.task} ({_rate(move.records_per_second)}): {move.from_instance} "
            f"thread {move.from_thread} -> {move.to_instance} thread {move.to_thread}{standby}"
        )
    lines.append(
        "  Kafka Streams' assignor balances task counts and will not make these moves "
        "itself; a custom TaskAssignor (KIP-924, Kafka Streams 3.8+) can."
    )
    return lines


def _subtopology(s: SubtopologyLine) -> str:
    tasks = "global store, no tasks" if s.is_global else f"{s.active_tasks} active tasks"
    parts = [f"sub-topology {s.subtopology}: {tasks}", f"reads {', '.join(s.reads) or '-'}"]
    if s.writes:
        parts.append(f"writes {', '.join(s.writes)}")
    if s.stores:
        parts.append(f"stores {', '.join(s.stores)}")
    if s.processors:
        parts.append(f"{len(s.processors)} processors")
    return "; ".join(parts)


def _instances(instances: Sequence[InstanceLine]) -> list[str]:
    lines = []
    for instance in instances:
        share = (
            f" ({instance.load_share:.0%} of the group)" if instance.load_share is not None else ""
        )
        endpoint = f", endpoint {instance.endpoint}" if instance.endpoint else ""
        lines.append(
            f"  {instance.process_id}  host {instance.host}{endpoint}  "
            f"load {_rate(instance.load_records_per_second)}{share}"
        )
        for thread in instance.threads:
            name = f"thread {thread.thread}" if thread.thread is not None else "thread ?"
            active = [t for t in thread.tasks if t.kind == "active"]
            standby = [t for t in thread.tasks if t.kind == "standby"]
            warmup = [t for t in thread.tasks if t.kind == "warmup"]
            lines.append(
                f"    {name}: load {_rate(thread.load_records_per_second)}, "
                f"{len(active)} active, {len(standby)} standby"
            )
            lines += [f"      {_task(t)}" for t in active]
            if standby:
                lines.append(f"      standby {' '.join(_standby(t) for t in standby)}")
            if warmup:
                lines.append(f"      warm-up {' '.join(t.task for t in warmup)}")
    return lines


def _task(task: TaskLine) -> str:
    partitions = ", ".join(
        f"{p.topic}-{p.partition} {_rate(p.records_per_second)} {_lag(p)}" for p in task.partitions
    )
    return f"{task.task}: {partitions}" if partitions else task.task


def _standby(task: TaskLine) -> str:
    if task.offset_sum is not None and task.offset_sum >= 0:
        return f"{task.task} (state at changelog offset sum {task.offset_sum})"
    return task.task


def _partitions(partitions: Iterable[PartitionLine]) -> list[str]:
    rows = [("  TOPIC", "PARTITION", "RATE", "COMMITTED", "LOG END", "LAG", "LAG SECONDS")]
    rows += [
        (
            f"  {p.topic}",
            str(p.partition),
            _rate(p.records_per_second),
            _number(p.committed_offset),
            _number(p.log_end_offset),
            _lag_count(p),
            _lag_seconds(p),
        )
        for p in partitions
    ]
    lines = table(rows)
    if any(p.lag_seconds_lower_bound for p in partitions):
        lines.append(
            "  >= : at least that old: the record is older than anything the agent or the "
            "broker could date (deleted by retention, or the broker could not be asked)"
        )
    return lines


def _lag_seconds(p: PartitionLine) -> str:
    if p.lag_seconds is None:
        return "-"
    return f">={p.lag_seconds:.1f}" if p.lag_seconds_lower_bound else f"{p.lag_seconds:.1f}"


def _lag_count(p: PartitionLine) -> str:
    """The lag in records; "idle" or "?" (footnoted) when it cannot be measured."""
    if p.lag is not None:
        return str(p.lag)
    return "idle" if p.idle else "?"


def _lag_footnotes(partitions: Iterable[PartitionLine], shown: set[str]) -> list[str]:
    """Why lags read "idle" or "?", once each (``shown``: the reasons given already)."""
    by_reason: dict[str, list[str]] = {}
    for p in partitions:
        if p.lag is None and p.lag_unknown is not None:
            mark = "idle" if p.idle else "?"
            by_reason.setdefault(f"{mark} : {p.lag_unknown}", []).append(f"{p.topic}-{p.partition}")
    lines = []
    for reason, names in by_reason.items():
        if reason in shown:
            continue
        shown.add(reason)
        unique = sorted(set(names))
        more = f" and {len(unique) - 3} more" if len(unique) > 3 else ""  # noqa: PLR2004
        lines.append(f"  {reason} ({', '.join(unique[:3])}{more})")
    return lines


def _lag(p: PartitionLine) -> str:
    """ "lag 10 (1.5 s)", "lag 0", "idle", or "lag ?" (footnoted)."""
    if p.lag is None:
        return "idle" if p.idle else "lag ?"
    if p.lag_seconds is None:
        return f"lag {p.lag}"
    at_least = "at least " if p.lag_seconds_lower_bound else ""
    return f"lag {p.lag} ({at_least}{p.lag_seconds:.1f} s)"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _rate(rate: float | None) -> str:
    if rate is None:
        return "? rec/s"
    return f"{rate:,.1f} rec/s" if rate < 100 else f"{rate:,.0f} rec/s"  # noqa: PLR2004


def _number(value: int | None) -> str:
    return "-" if value is None else str(value)


def _bytes(size: int | None) -> str:
    if size is None:
        return "-"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def _clock(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(at))
