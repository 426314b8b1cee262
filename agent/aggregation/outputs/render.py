"""Findings for a person at a terminal (no Spark): one block per finding, most severe first."""

import json
import time
from collections.abc import Sequence

from agent.model.findings import Finding, FindingEvent
from agent.model.records import to_plain


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def _where(f: Finding) -> str:
    """``cluster/group  subject``; a cluster-level finding (no group) says so."""
    if not f.group:
        return f"{f.cluster}  the cluster"
    return f"{f.cluster}/{f.group}  {f.subject.describe()}"


def findings_text(findings: Sequence[Finding], now: float) -> str:
    if not findings:
        return "no open findings"
    lines = [f"{len(findings)} open finding{'s' if len(findings) != 1 else ''}", ""]
    for f in findings:
        lines.append(f"{f.severity.upper():8} {f.kind}  {_where(f)}")
        lines.append(f"         since {_when(f.since)} ({_age(now - f.since)} ago)")
        lines.append(f"         {f.explanation}")
        lines.append("")
    return "\n".join(lines).rstrip()


def findings_json(findings: Sequence[Finding]) -> str:
    return json.dumps([to_plain(f) for f in findings], indent=2, ensure_ascii=False)


def events_text(events: Sequence[FindingEvent]) -> str:
    """A replay's timeline: one line per event."""
    if not events:
        return "no findings opened"
    return "\n".join(
        f"{_when(e.at)}  {e.event:6} {e.finding.severity:8} {e.finding.kind}  "
        f"{_where(e.finding)}: "
        f"{e.finding.explanation}"
        for e in events
    )
