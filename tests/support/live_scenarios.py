"""The live detector scenarios' expectations and recordings, shared by the live test
(``tests/integration/test_detectors_live.py``) and the replay of its recordings
(``tests/integration/test_recordings_replay.py``), so both judge the job's findings
by the same rules.

The ground truth is what the fixture app says about itself (its oracle): which
instance (process id) holds the hot tasks, which one restarts with an empty state
directory, which one the poison pill kills. A scenario's ``Facts`` carry it from
the live run into its recording.
"""

import gzip
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agent.model.findings import SEVERITIES, Finding, FindingEvent

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings"
SNAPSHOTS_FILE = "snapshots.jsonl.gz"
FACTS_FILE = "scenario.yaml"
REPLAY_CONFIG = "ksmon.yaml"

# hot-kip1071: the hot scenario with the app on group.protocol=streams (KIP-1071).
# loop-two-instances and loop-sync-fails: tests/integration/test_loops_live.py.
PROBLEMS = (
    "hot",
    "hot-kip1071",
    "restore",
    "poison",
    "loop",
    "loop-two-instances",
    "loop-sync-fails",
    "restore-wiped",  # issue 25 #5, #6
)
# A fault that the test then ends, at ``Facts.fault_at`` (the return): the whole app
# stopped for longer than the look-back while input arrives, then started again; one
# instance of two stopped past the thread-death grace, then started again on its state
# (the same process id). What the fault opens is in EXPECTED; after the return nothing
# opens or pages louder, and what was open closes within RECOVERY_CLOSES_WITHIN.
RECOVERIES = ("return", "restart")
RECOVERY_CLOSES_WITHIN = 60.0
CHURN = ("steady", "rolling", "scale")
# The healthy runs again with the app on group.protocol=streams.
HEALTHY = (*CHURN, *(f"{name}-kip1071" for name in CHURN))


@dataclass(frozen=True)
class Facts:
    """One scenario's group and what its app said about itself."""

    scenario: str
    group: str
    process: str | None = None  # the instance the finding must name
    tasks: tuple[str, ...] = ()  # the tasks it must name
    snapshots: int = 0  # in its recording
    fault_at: float | None = None  # when the test brought the fault on (event time)
    # An assignment record over the offsets topic's limit: the record as the agent
    # measured it, and the limit the test set.
    group_record_bytes: int | None = None
    offsets_topic_limit: int | None = None


@dataclass(frozen=True)
class Expected:
    """A finding a problem scenario must open: which one (``matches``), then its subject
    and evidence (``check``, which raises AssertionError)."""

    what: str
    matches: Callable[[Finding], bool]
    check: Callable[[Finding, Facts], None] = field(default=lambda _f, _facts: None)


def _hot_member(f: Finding, facts: Facts) -> None:
    assert f.subject.process == facts.process, f"the hot member is on {facts.process}: {f}"
    assert f.subject.thread == 1, f"each instance runs one stream thread: {f}"
    assert {u["unit"] for u in f.evidence["hot_units"]} == set(facts.tasks), f.evidence
    assert f.evidence["suggested_move"]["unit"] in facts.tasks, f.evidence


def _hot_instance(f: Finding, facts: Facts) -> None:
    assert f.subject.process == facts.process, f"the hot instance is {facts.process}: {f}"
    assert {u["unit"] for u in f.evidence["hot_units"]} == set(facts.tasks), f.evidence


def _restore(f: Finding, facts: Facts) -> None:
    assert f.subject.process == facts.process, f"{facts.process} restores: {f}"
    assert f.subject.task is not None
    assert f.subject.task.startswith("1_"), f"the count store's sub-topology restores: {f}"
    assert f.evidence["source"] == "broker", f.evidence


def _poison(f: Finding, facts: Facts) -> None:
    assert f.subject.process == facts.process, f"the pill killed {facts.process}: {f}"
    assert f.severity == "info", f"no sidecar: from the broker it may be a scale-down: {f}"


def _restarted(f: Finding, facts: Facts) -> None:
    assert f.subject.process == facts.process, f"{facts.process} was stopped: {f}"


def _loop(f: Finding, _facts: Facts) -> None:
    assert "max.poll.interval.ms" in f.evidence["likely_cause"], f.evidence


# Issue 25 #3: found within 2 minutes of the loop's start, with the size against the limit.
SYNC_FAILS_FOUND_WITHIN = 120.0


def _record_too_large(f: Finding, facts: Facts) -> None:
    evidence = f.evidence
    assert "KAFKA-7149" in evidence["likely_cause"], evidence
    assert evidence["offsets_topic_max_message_bytes"] == facts.offsets_topic_limit, evidence
    assert evidence["group_metadata_bytes"] == facts.group_record_bytes, evidence
    assert evidence["unfinished_rebalance"] is not None, (
        f"found as a rebalance that never ends: {f}"
    )
    assert (
        f"{facts.group_record_bytes} bytes at its last Stable poll, is over __consumer_offsets' "
        f"max.message.bytes {facts.offsets_topic_limit}"
    ) in f.explanation, f.explanation
    assert facts.fault_at is not None
    assert f.since - facts.fault_at <= SYNC_FAILS_FOUND_WITHIN, (f.since - facts.fault_at, f)


# Issue 25 #5: found within the stall threshold the live runs use (progress_stall_after,
# 60 s in test_detectors_live.py's DETECTORS) and 30 s of the task's assignment.
WIPED_FOUND_WITHIN = 60.0 + 30.0


def _restore_wiped(f: Finding, facts: Facts) -> None:
    _restore(f, facts)
    assert f.evidence["task_offset_sum"] is None, f"an empty state directory: {f}"
    since_assigned = f.evidence["seconds_since_assigned"]
    assert since_assigned is not None, f"just assigned to the restarted instance: {f}"
    assert since_assigned <= WIPED_FOUND_WITHIN, f


_HOT = (
    Expected(
        "hot_partitions_colocated at member level",
        lambda f: f.kind == "hot_partitions_colocated" and f.subject.thread is not None,
        _hot_member,
    ),
    Expected(
        "hot_partitions_colocated at instance level",
        lambda f: f.kind == "hot_partitions_colocated" and f.subject.thread is None,
        _hot_instance,
    ),
)

EXPECTED: Mapping[str, tuple[Expected, ...]] = {
    "hot": _HOT,
    "hot-kip1071": _HOT,
    "restore": (Expected("restore_stalled", lambda f: f.kind == "restore_stalled", _restore),),
    "poison": (
        Expected("stream_threads_dead", lambda f: f.kind == "stream_threads_dead", _poison),
    ),
    "loop": (Expected("rebalance_loop", lambda f: f.kind == "rebalance_loop", _loop),),
    "loop-two-instances": (
        Expected("rebalance_loop", lambda f: f.kind == "rebalance_loop", _loop),
    ),
    "loop-sync-fails": (
        Expected("rebalance_loop", lambda f: f.kind == "rebalance_loop", _record_too_large),
    ),
    "restore-wiped": (
        Expected("restore_stalled", lambda f: f.kind == "restore_stalled", _restore_wiped),
    ),
    "return": (Expected("no_live_consumers", lambda f: f.kind == "no_live_consumers"),),
    "restart": (
        Expected("stream_threads_dead", lambda f: f.kind == "stream_threads_dead", _restarted),
    ),
}

# Kinds a problem scenario must never open: in a loop whose threads all live, members out
# between re-joins are no dead threads (issue 27 #2).
NEVER: Mapping[str, tuple[str, ...]] = {
    "loop-two-instances": ("stream_threads_dead",),
    "loop-sync-fails": ("stream_threads_dead",),
    # The held tasks' lag is the restore's, not too few threads' (issue 25 #6).
    "restore-wiped": ("threads_fewer_than_tasks",),
}


def first_open(events: Iterable[FindingEvent], expected: Expected) -> FindingEvent | None:
    """The first ``open`` event of the finding ``expected`` is about."""
    return next((e for e in events if e.event == "open" and expected.matches(e.finding)), None)


def opened_never(events: Iterable[FindingEvent], scenario: str) -> list[FindingEvent]:
    """The ``open`` events of kinds ``scenario`` must never open."""
    never = NEVER.get(scenario, ())
    return [e for e in events if e.event == "open" and e.finding.kind in never]


def opened_unexpected(events: Iterable[FindingEvent], scenario: str) -> list[FindingEvent]:
    """The ``open`` events of findings none of ``scenario``'s EXPECTED entries is about:
    for a recovery, whose start, steady load and fault each have one outcome."""
    expected = EXPECTED[scenario]
    return [
        e for e in events if e.event == "open" and not any(x.matches(e.finding) for x in expected)
    ]


def recovery_problems(events: Sequence[FindingEvent], facts: Facts) -> list[str]:
    """What a recovery scenario's events hold against the return: a finding opened after
    it, or raised to a louder severity, and one open at the return that did not close
    within RECOVERY_CLOSES_WITHIN."""
    back = facts.fault_at
    assert back is not None, f"{facts.scenario}: a recovery has a return time"
    loudness = {severity: -i for i, severity in enumerate(SEVERITIES)}  # critical first
    problems: list[str] = []
    severity_of: dict[str, str] = {}  # the open findings' severities
    open_at_return: set[str] = set()
    closed_after: dict[str, float] = {}  # seconds from the return to each first close
    for e in events:
        key, after, severity = e.finding.key, e.at - back, e.finding.severity
        if e.event == "close":
            severity_of.pop(key, None)
            if after <= 0:
                open_at_return.discard(key)
            else:
                closed_after.setdefault(key, after)
            continue
        previous = severity_of.get(key)
        severity_of[key] = severity
        if after <= 0:
            open_at_return.add(key)
        elif e.event == "open" or (previous and loudness[severity] > loudness[previous]):
            problems.append(
                f"{e.event} {after:.0f} s after the return: {e.finding.kind} "
                f"{e.finding.subject.key} {severity}: {e.finding.explanation}"
            )
    for key in sorted(open_at_return):
        closed = closed_after.get(key)
        if closed is None or closed > RECOVERY_CLOSES_WITHIN:
            took = "never closed" if closed is None else f"closed {closed:.0f} s after it"
            problems.append(f"{key}, open at the return, {took}")
    return problems


def describe(events: Iterable[FindingEvent]) -> list[tuple[str, str, str, str]]:
    """Events in a line each, for assertion messages."""
    return [(e.event, e.finding.kind, e.finding.subject.key, e.finding.explanation) for e in events]


# -- recordings --------------------------------------------------------------------------


def save_recording(spool: Path, directory: Path, facts: Facts, *, until: float) -> Path:
    """Write the snapshots of ``facts.group`` polled up to ``until`` from the agent's
    complete spool files into ``directory`` (gzipped JSON lines, in poll order), with
    the facts next to them."""
    lines: list[tuple[float, str]] = []
    for path in sorted(spool.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            snapshot = json.loads(line)
            t = float(snapshot["poll"]["started_at"])
            if snapshot["group"]["group_id"] == facts.group and t <= until:
                lines.append((t, line))
    if not lines:
        raise AssertionError(f"no snapshots of {facts.group} in {spool} to record")
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / SNAPSHOTS_FILE
    # mtime 0: re-recording the same snapshots gives the same bytes.
    with (
        target.open("wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as out,
    ):
        for _t, line in sorted(lines):
            out.write(line.encode() + b"\n")
    plain = {**asdict(facts), "tasks": list(facts.tasks), "snapshots": len(lines)}
    (directory / FACTS_FILE).write_text(yaml.safe_dump(plain, sort_keys=False))
    return target


def load_facts(directory: Path) -> Facts:
    plain: dict[str, Any] = yaml.safe_load((directory / FACTS_FILE).read_text())
    return Facts(
        scenario=str(plain["scenario"]),
        group=str(plain["group"]),
        process=plain.get("process"),
        tasks=tuple(plain.get("tasks") or ()),
        snapshots=int(plain.get("snapshots") or 0),
        fault_at=plain.get("fault_at"),
        group_record_bytes=plain.get("group_record_bytes"),
        offsets_topic_limit=plain.get("offsets_topic_limit"),
    )


def replay_config_text(detectors: Mapping[str, object]) -> str:
    """A config to replay the recordings with: the detector thresholds they were recorded
    under (no cluster is contacted by a replay)."""
    document = {
        "clusters": [{"name": "local", "bootstrap_servers": ["localhost:9092"]}],
        "sink": {"type": "none"},
        "aggregation": {
            "spark": {"master": "local[2]", "shuffle_partitions": 2},
            "detectors": dict(detectors),
        },
    }
    header = (
        "# The thresholds the recordings here were made with (tests/recordings/README.md):\n"
        "# ksmon aggregate --config tests/recordings/ksmon.yaml --replay tests/recordings/hot\n"
    )
    return header + yaml.safe_dump(document, sort_keys=False)
