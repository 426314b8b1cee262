"""One bucket's micro-batch: what reaches a group's state, and what never does."""

import copy
import pickle
from dataclasses import replace

from agent.aggregation.judging.bucket import REJECTED_SAMPLE, expire, judge_records
from agent.aggregation.judging.group import GroupState
from agent.aggregation.judging.stored_bucket import GroupKey
from agent.config.schema import DetectorsConfig
from tests.unit.aggregation.cases import hot_partitions, no_live_consumers

HOT = hot_partitions.CASES[0]
GONE = next(c for c in no_live_consumers.CASES if c.expect)
PARAMS = DetectorsConfig()


def _records(case: object) -> list[tuple[str, str]]:
    return [(s.to_json().decode(), "test") for s in case.snapshots]  # type: ignore[attr-defined]


def test_a_bad_record_is_set_aside_and_the_group_judged_as_without_it() -> None:
    clean: dict[GroupKey, GroupState] = {}
    dirty: dict[GroupKey, GroupState] = {}
    good = _records(HOT)
    bad = [("{", "a"), ('{"schema_version": 99}', "b")] * REJECTED_SAMPLE
    out_clean = judge_records(clean, good, PARAMS)
    out_dirty = judge_records(dirty, bad[:5] + good + bad[5:], PARAMS)
    assert out_dirty.rejected_counts == {
        "malformed": REJECTED_SAMPLE,
        "future_version": REJECTED_SAMPLE,
    }
    assert len(out_dirty.rejected) == REJECTED_SAMPLE, "a sample is kept, every one counted"
    assert out_dirty.reports == out_clean.reports
    assert pickle.dumps(dirty) == pickle.dumps(clean)


def test_the_same_records_from_the_same_state_give_the_same_report() -> None:
    # Spark re-runs a batch after a crash from the state of the batch before.
    state: dict[GroupKey, GroupState] = {}
    records = _records(HOT)
    judge_records(state, records[: len(records) // 2], PARAMS)
    again = copy.deepcopy(state)
    first = judge_records(state, records[len(records) // 2 :], PARAMS)
    second = judge_records(again, list(reversed(records[len(records) // 2 :])), PARAMS)
    assert first.reports == second.reports
    assert first.reports[0].open_findings, "something to be equal about"


def test_a_poll_delivered_twice_is_judged_once() -> None:
    state: dict[GroupKey, GroupState] = {}
    records = _records(HOT)
    judge_records(state, records, PARAMS)
    out = judge_records(state, records[-3:], PARAMS)
    (report,) = out.reports
    assert (report.judged, report.duplicates, report.events) == (0, 3, ())


def test_a_group_no_longer_polled_closes_its_findings_and_goes() -> None:
    groups: dict[GroupKey, GroupState] = {}
    judge_records(groups, _records(GONE), PARAMS)
    (key,) = groups
    open_before = groups[key].hysteresis.open
    newest = groups[key].newest
    assert open_before
    assert newest is not None
    assert expire(groups, newest - 1) == [], "polled after that: kept"
    (report,) = expire(groups, newest)
    assert report.gone
    assert [(e.event, e.finding) for e in report.events] == [("close", f) for f in open_before]
    assert all(e.at == newest for e in report.events)
    assert key not in groups


def test_a_deleted_group_closes_its_findings_at_once_and_says_why() -> None:
    # Issue 25: after kafka-consumer-groups --delete a critical finding stayed 21 minutes.
    # The agent ships the group's last snapshot with the coordinator's state Dead.
    groups: dict[GroupKey, GroupState] = {}
    judge_records(groups, _records(GONE), PARAMS)
    (key,) = groups
    open_before = groups[key].hysteresis.open
    assert open_before
    last = GONE.snapshots[-1]
    deleted_at = last.poll.started_at + 10
    dead = replace(
        last,
        poll=replace(last.poll, started_at=deleted_at),
        group=replace(last.group, state="Dead"),
        members=(),
        partitions=(),
    )
    (report,) = judge_records(groups, [(dead.to_json().decode(), "test")], PARAMS).reports
    assert report.gone
    assert [(e.event, e.at, e.reason, e.finding) for e in report.events] == [
        ("close", deleted_at, "group deleted", f) for f in open_before
    ]
    assert key not in groups, "its state is gone: a group of that name starts afresh"
