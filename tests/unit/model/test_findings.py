import json

import pytest

from agent.model.findings import Finding, FindingEvent, FindingSubject, current_findings
from agent.model.records import RecordError


def finding(kind: str = "rebalance_loop", severity: str = "warning", **subject: object) -> Finding:
    return Finding(
        kind=kind,
        severity=severity,
        cluster="prod",
        group="orders",
        subject=FindingSubject(**subject),  # type: ignore[arg-type]
        since=100.0,
        last_seen=160.0,
        explanation="it loops",
        evidence={"rebalances": 7, "members_rejoining": [{"client_id": "c", "member_ids": 4}]},
    )


def test_an_event_round_trips_through_json_with_its_evidence() -> None:
    event = FindingEvent.of("open", 100.0, finding(process="p1", thread=2))
    assert FindingEvent.from_json(event.to_json()) == event


def test_the_findings_topic_record_has_these_fields_and_a_close_says_why() -> None:
    # The findings topic is a contract (docs/aggregation.md): a reader keys on these names.
    event = FindingEvent.of("close", 200.0, finding(), reason="group deleted")
    plain = json.loads(event.to_json())
    assert sorted(plain) == ["at", "event", "event_id", "finding", "reason", "schema_version"]
    assert (plain["event"], plain["reason"]) == ("close", "group deleted")
    # An event written before ``reason`` existed still reads, as a close by its rule.
    del plain["reason"]
    assert FindingEvent.from_json(json.dumps(plain)).reason == ""


@pytest.mark.parametrize(
    ("subject", "key", "described"),
    [
        pytest.param({}, "group", "the group", id="group level"),
        pytest.param({"process": "p1"}, "process=p1", "instance p1", id="instance"),
        pytest.param(
            {"process": "p1", "thread": 2},
            "process=p1,thread=2",
            "instance p1 thread 2",
            id="thread",
        ),
        pytest.param(
            {"process": "p1", "task": "1_3"},
            "process=p1,task=1_3",
            "instance p1 task 1_3",
            id="task",
        ),
        pytest.param(
            {"topic": "in", "partition": 3},
            "topic=in,partition=3",
            "partition in-3",
            id="partition",
        ),
    ],
)
def test_subjects_have_a_stable_key_and_read_well(
    subject: dict[str, object], key: str, described: str
) -> None:
    s = FindingSubject(**subject)  # type: ignore[arg-type]
    assert s.key == key
    assert s.describe() == described


def test_a_newer_event_version_is_refused_by_name() -> None:
    text = (
        FindingEvent.of("open", 1.0, finding())
        .to_json()
        .replace(b'"schema_version":1', b'"schema_version":9')
    )
    with pytest.raises(RecordError, match=r"schema_version: 9 is newer than this reader's 1"):
        FindingEvent.from_json(text)


def test_current_findings_folds_events_by_key_and_sorts_by_severity() -> None:
    loop = finding()
    dead = finding("stream_threads_dead", "critical", process="p1")
    events = [
        FindingEvent.of("open", 1.0, loop),
        FindingEvent.of("open", 2.0, dead),
        FindingEvent.of("close", 3.0, loop),
        FindingEvent.of("open", 4.0, finding(kind="partition_skew", severity="info", topic="t")),
    ]
    assert [f.kind for f in current_findings(events)] == ["stream_threads_dead", "partition_skew"]
