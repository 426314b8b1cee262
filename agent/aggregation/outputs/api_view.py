"""The job's JSON API (docs/api.md): its answers, made from the latest view (``latest``) (no Spark,
no HTTP).

Pure: ``index_of`` sorts one view into clusters and groups, once per view; ``answer``
turns a path below /api/ and its query into a status and a JSON body, made new for each
request from that index (which nobody changes). Field names are a contract, frozen by a
golden test; a name that does not apply is null, never left out.

Statuses are consumer_status's (``ok``, ``lagging``, ``stalled``, ``stopped``,
``rewound``), as its /metrics gauges say them; a group the rule has not judged yet (a
restart's first batch, a snapshot with errors) has none: null.
"""

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from agent.aggregation.judging.results import (
    GROUP_STATUS,
    GROUP_STATUS_PARTITIONS,
    PARTITION_STATUS,
)
from agent.aggregation.judging.rules.consumer_status import STATUSES
from agent.aggregation.outputs.latest import JobView
from agent.exposition.http import json_error
from agent.model.findings import KINDS, SEVERITIES, Finding

API_VERSION = "v1"
UNKNOWN = "unknown"  # groups_by_status: groups without a status
PATHS = (
    "/api/v1/clusters",
    "/api/v1/clusters/{cluster}",
    "/api/v1/clusters/{cluster}/groups",
    "/api/v1/clusters/{cluster}/groups/{group}",
    "/api/v1/findings",
)
# The query parameters each answer takes; a value may list several, comma-separated.
FINDING_FILTERS = ("cluster", "group", "kind", "severity")
GROUP_FILTERS = ("status",)

Reply = tuple[int, dict[str, object]]

_SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}
_STATUS_RANK = {s: i for i, s in enumerate(STATUSES)}


@dataclass(frozen=True, slots=True)
class PartitionStatus:
    """A partition not ok, as consumer_status judged it at the group's newest poll."""

    topic: str
    partition: int
    status: str
    lag: int


@dataclass(frozen=True, slots=True)
class GroupEntry:
    cluster: str
    group: str
    status: str | None
    partition_counts: tuple[tuple[str, int], ...] | None  # per status, worst first
    partitions: tuple[PartitionStatus, ...]  # not ok: worst first, then the most lag
    findings: tuple[Finding, ...]


@dataclass(frozen=True, slots=True)
class ClusterEntry:
    cluster: str
    newest_snapshot_at: float | None
    groups: Mapping[str, GroupEntry]  # by name, sorted
    own_findings: tuple[Finding, ...]  # the cluster's, of no group (empty ``group``)
    findings: tuple[Finding, ...]  # all of the cluster's, its groups' too


@dataclass(frozen=True, slots=True)
class ApiIndex:
    as_of: float | None  # when the micro-batch the view is of finished
    clusters: Mapping[str, ClusterEntry]  # by name, sorted
    findings: tuple[Finding, ...]  # every open one: most severe first


def index_of(view: JobView) -> ApiIndex:
    """The view's clusters, groups and findings, ordered as the answers list them."""
    status: dict[tuple[str, str], str] = {}
    counts: dict[tuple[str, str], dict[str, int]] = {}
    partitions: dict[tuple[str, str], list[PartitionStatus]] = {}
    groups: set[tuple[str, str]] = set()
    for row in view.gauges:
        key = (row.cluster, row.group)
        groups.add(key)
        if row.status is None:
            continue
        if row.metric == GROUP_STATUS and row.value == 1:
            status[key] = row.status
        elif row.metric == GROUP_STATUS_PARTITIONS:
            counts.setdefault(key, {})[row.status] = int(row.value)
        elif row.metric == PARTITION_STATUS and row.topic is not None:
            partitions.setdefault(key, []).append(
                PartitionStatus(row.topic, row.partition or 0, row.status, int(row.value))
            )
    findings = tuple(sorted(view.open_findings, key=_finding_order))
    by_group: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        by_group.setdefault((f.cluster, f.group), []).append(f)
    groups |= {key for key in by_group if key[1]}
    newest = dict(view.newest_snapshot)
    names = sorted({c for c, _ in groups} | {c for c, _ in by_group} | set(newest))
    clusters = {}
    for cluster in names:
        entries = {
            group: GroupEntry(
                cluster,
                group,
                status.get((cluster, group)),
                _counts(counts.get((cluster, group))) if (cluster, group) in status else None,
                tuple(sorted(partitions.get((cluster, group), ()), key=_partition_order)),
                tuple(by_group.get((cluster, group), ())),
            )
            for c, group in sorted(groups)
            if c == cluster
        }
        clusters[cluster] = ClusterEntry(
            cluster,
            newest.get(cluster),
            entries,
            tuple(by_group.get((cluster, ""), ())),
            tuple(f for f in findings if f.cluster == cluster),
        )
    return ApiIndex(view.last_batch_at, clusters, findings)


def _counts(found: Mapping[str, int] | None) -> tuple[tuple[str, int], ...]:
    found = found or {}
    return tuple((s, found.get(s, 0)) for s in STATUSES)


def _finding_order(f: Finding) -> tuple[object, ...]:
    return (_SEVERITY_RANK.get(f.severity, len(_SEVERITY_RANK)), f.cluster, f.group, f.key)


def _partition_order(p: PartitionStatus) -> tuple[object, ...]:
    return (_STATUS_RANK.get(p.status, len(_STATUS_RANK)), -p.lag, p.topic, p.partition)


# -- the answers ----------------------------------------------------------------------------


def answer(index: ApiIndex, path: str, query: Mapping[str, list[str]]) -> Reply:  # noqa: PLR0911 - a route each
    """The reply to GET /api/``path`` (percent-encoded, as the request line has it)."""
    parts = [unquote(p) for p in path.rstrip("/").split("/")] if path.strip("/") else []
    if not parts:
        return not_found(f"no API at /api/ itself; the versions served: {API_VERSION}")
    version, rest = parts[0], parts[1:]
    if version != API_VERSION:
        return not_found(f"no API version {version!r}; the versions served: {API_VERSION}")
    match rest:
        case []:
            return _ok(index, {"paths": list(PATHS)}, query, ())
        case ["clusters"]:
            clusters = [cluster_summary(c) for c in index.clusters.values()]
            return _ok(index, {"clusters": clusters}, query)
        case ["clusters", cluster, *_] if cluster not in index.clusters:
            return _no_cluster(index, cluster)
        case ["clusters", cluster]:
            return _ok(index, cluster_body(index.clusters[cluster]), query)
        case ["clusters", cluster, "groups"]:
            return _groups(index, index.clusters[cluster], query)
        case ["clusters", cluster, "groups", group]:
            entry = index.clusters[cluster].groups.get(group)
            if entry is None:
                return not_found(f"no group {group!r} in cluster {cluster!r}")
            return _ok(index, group_body(entry), query)
        case ["findings"]:
            return _findings(index, query)
    return not_found(f"no path /api/{path} here; the paths: {', '.join(PATHS)}")


def not_found(message: str) -> Reply:
    return json_error(404, "not_found", message)


def bad_request(message: str) -> Reply:
    return json_error(400, "bad_request", message)


def _no_cluster(index: ApiIndex, cluster: str) -> Reply:
    known = ", ".join(index.clusters) or "none yet"
    return not_found(f"no cluster {cluster!r}; the clusters: {known}")


def _ok(
    index: ApiIndex,
    body: dict[str, object],
    query: Mapping[str, list[str]],
    known: tuple[str, ...] = (),
) -> Reply:
    unknown = sorted(set(query) - set(known))
    if unknown:
        takes = f"it takes {', '.join(known)}" if known else "it takes none"
        return bad_request(f"unknown query parameter {unknown[0]!r} for this path; {takes}")
    return 200, {"api_version": API_VERSION, "as_of": index.as_of, **body}


def _groups(index: ApiIndex, cluster: ClusterEntry, query: Mapping[str, list[str]]) -> Reply:
    wanted, error = _filter(query, "status", (*STATUSES, UNKNOWN))
    if error is not None:
        return error
    groups = [
        group_summary(g)
        for g in cluster.groups.values()
        if wanted is None or (g.status or UNKNOWN) in wanted
    ]
    return _ok(index, {"cluster": cluster.cluster, "groups": groups}, query, GROUP_FILTERS)


def _findings(index: ApiIndex, query: Mapping[str, list[str]]) -> Reply:
    filters: dict[str, set[str] | None] = {}
    for name, allowed in (
        ("cluster", None),
        ("group", None),
        ("kind", KINDS),
        ("severity", SEVERITIES),
    ):
        filters[name], error = _filter(query, name, allowed)
        if error is not None:
            return error
    listed = [
        finding_body(f)
        for f in index.findings
        if all(wanted is None or getattr(f, name) in wanted for name, wanted in filters.items())
    ]
    return _ok(index, {"findings": listed}, query, FINDING_FILTERS)


def _filter(
    query: Mapping[str, list[str]], name: str, allowed: tuple[str, ...] | None
) -> tuple[set[str] | None, Reply | None]:
    """The values asked for (None: no filter), or a 400 naming a value not allowed."""
    if name not in query:
        return None, None
    wanted = {v.strip() for value in query[name] for v in value.split(",")}
    if allowed is not None:
        wrong = sorted(wanted - set(allowed))
        if wrong:
            return None, bad_request(
                f"query parameter {name}={wrong[0]!r} is not one of: {', '.join(allowed)}"
            )
    return wanted, None


# -- the bodies -----------------------------------------------------------------------------


def cluster_summary(c: ClusterEntry) -> dict[str, object]:
    by_status = dict.fromkeys((*STATUSES, UNKNOWN), 0)
    for g in c.groups.values():
        by_status[g.status or UNKNOWN] += 1
    return {
        "cluster": c.cluster,
        "newest_snapshot_at": c.newest_snapshot_at,
        "group_count": len(c.groups),
        "groups_by_status": by_status,
        "open_findings": _by_severity(c.findings),
    }


def cluster_body(c: ClusterEntry) -> dict[str, object]:
    return {**cluster_summary(c), "cluster_findings": [finding_body(f) for f in c.own_findings]}


def group_summary(g: GroupEntry) -> dict[str, object]:
    counts = g.partition_counts
    return {
        "group": g.group,
        "status": g.status,
        "partition_count": None if counts is None else sum(n for _s, n in counts),
        "open_findings": _by_severity(g.findings),
    }


def group_body(g: GroupEntry) -> dict[str, object]:
    counts = g.partition_counts
    return {
        "cluster": g.cluster,
        "group": g.group,
        "status": g.status,
        "partition_count": None if counts is None else sum(n for _s, n in counts),
        "partition_counts": None if counts is None else dict(counts),
        "partitions": [
            {"topic": p.topic, "partition": p.partition, "status": p.status, "lag": p.lag}
            for p in g.partitions
        ],
        "findings": [finding_body(f) for f in g.findings],
    }


def finding_body(f: Finding) -> dict[str, object]:
    s = f.subject
    move = f.evidence.get("suggested_move")
    return {
        "key": f.key,
        "kind": f.kind,
        "severity": f.severity,
        "cluster": f.cluster,
        "group": f.group,
        "subject": {
            "process": s.process,
            "thread": s.thread,
            "task": s.task,
            "topic": s.topic,
            "partition": s.partition,
        },
        # A cluster's own finding (no group) is about the cluster, not "the group".
        "subject_description": s.describe() if f.group or s.key != "group" else "the cluster",
        "since": _finite(f.since),
        "last_seen": _finite(f.last_seen),
        "explanation": f.explanation,
        "suggested_move": _finite(move) if isinstance(move, dict) else None,
        "evidence": _finite(f.evidence),
    }


def _by_severity(findings: Iterable[Finding]) -> dict[str, int]:
    counts = dict.fromkeys(SEVERITIES, 0)
    for f in findings:
        if f.severity in counts:
            counts[f.severity] += 1
    return counts


def _finite(value: object) -> object:
    """``value`` with NaN and infinities as null: strict JSON has neither, and clients
    (Go's, JavaScript's JSON.parse) refuse them. A fresh copy, shared with nobody."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
