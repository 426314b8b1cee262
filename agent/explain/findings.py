"""The aggregation job's open findings for one group, as ``ksmon explain`` shows them.

The job publishes every finding's open, update and close events to the
findings topic; folding them gives what is open now. ``explain`` must work
without the job, so a missing topic or an unreadable one is a reason shown
in the report ("FINDINGS: unknown (...)"), never an error that hides the
agent's own view.
"""

import json
from collections.abc import Callable, Sequence

from agent.errors import KsmonError
from agent.explain.report import FindingLine
from agent.model.findings import Finding
from agent.streams.client_id import parse_stream_thread_client_id

EVIDENCE_CHARS = 240  # one terminal line or two; the full evidence is in ``ksmon findings --json``

ReadOpenFindings = Callable[[], Sequence[Finding]]


def findings_for_group(
    read_open: ReadOpenFindings, topic: str, group: str, cluster: str | None
) -> tuple[tuple[FindingLine, ...] | None, str]:
    """The open findings of ``group`` (of ``cluster`` when it is known) and where they came from.

    ``cluster`` is None when the caller named the cluster only by its servers: the
    agent that wrote the findings knew it under a name this caller cannot know.
    """
    try:
        findings = read_open()
    except KsmonError as e:  # the job's view is missing; explain's own view still stands
        return None, str(e)
    mine = [f for f in findings if f.group == group and (cluster is None or f.cluster == cluster)]
    return tuple(finding_line(f) for f in mine), f"the aggregation job, findings topic {topic}"


def finding_line(finding: Finding) -> FindingLine:
    return FindingLine(
        kind=finding.kind,
        severity=finding.severity,
        subject=finding.subject.describe(),
        since=finding.since,
        explanation=finding.explanation,
        evidence=_compact(finding.evidence),
        stream_thread_client=first_stream_thread_client(finding.evidence),
    )


def first_stream_thread_client(evidence: object) -> str | None:
    """The first Kafka Streams stream thread client id anywhere in ``evidence`` (member
    lists name their clients), looked for in the whole of it: the line shows a cut."""
    if isinstance(evidence, str):
        return evidence if parse_stream_thread_client_id(evidence) is not None else None
    if isinstance(evidence, dict):
        evidence = list(evidence.values())
    if isinstance(evidence, list | tuple):
        for item in evidence:
            found = first_stream_thread_client(item)
            if found is not None:
                return found
    return None


def _compact(evidence: object) -> str:
    if not evidence:
        return ""
    text = json.dumps(evidence, separators=(",", ":"), sort_keys=True)
    return text if len(text) <= EVIDENCE_CHARS else text[: EVIDENCE_CHARS - 3] + "..."
