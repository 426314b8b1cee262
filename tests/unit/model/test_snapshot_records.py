import dataclasses
import json
import re
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.model import (
    SCHEMA_VERSION,
    AgentInfo,
    GroupInfo,
    MemberInfo,
    PartitionInfo,
    PollInfo,
    Snapshot,
    StreamsMemberInfo,
    StreamsTask,
    TaskOffsetSum,
    TopicPartitionRef,
)
from agent.model import snapshot as snapshot_module
from agent.model.records import NewerSchemaError, RecordError


def a_snapshot() -> Snapshot:
    return Snapshot(
        schema_version=SCHEMA_VERSION,
        cluster="prod",
        agent=AgentInfo("agent-1", "0.1.0", "central"),
        poll=PollInfo(7, 1_700_000_000.5, 0.25),
        group=GroupInfo("app", "classic", "Stable", "consumer", "stream", 1, is_streams=True),
        members=(
            MemberInfo(
                member_id="app-p-StreamThread-1-consumer-x",
                client_id="app-p-StreamThread-1-consumer",
                client_host="/10.0.0.5",
                assigned_partitions=(TopicPartitionRef("in", 0),),
                streams=StreamsMemberInfo(
                    process_id="00112233-4455-6677-8899-aabbccddeeff",
                    thread_index=1,
                    active_tasks=(StreamsTask("0_0", (TopicPartitionRef("in", 0),)),),
                    task_offset_sums=(TaskOffsetSum("0_0", -2),),
                ),
            ),
        ),
        partitions=(
            PartitionInfo("in", 0, 100, 0, 90, 10, 4.5, "app-p-StreamThread-1-consumer-x"),
        ),
    )


def test_a_snapshot_survives_json_unchanged() -> None:
    snapshot = a_snapshot()

    encoded = snapshot.to_json()

    assert b"\n" not in encoded, "one record per line in spool files"
    assert Snapshot.from_json(encoded) == snapshot


def test_fields_from_a_newer_agent_are_ignored() -> None:
    plain = json.loads(a_snapshot().to_json())
    plain["a_section_from_the_future"] = {"threads": 2}
    plain["members"][0]["streams"]["future"] = [1, 2]

    assert Snapshot.from_json(json.dumps(plain)) == a_snapshot()


def test_fields_an_older_agent_lacked_take_their_defaults() -> None:
    plain = json.loads(a_snapshot().to_json())
    del plain["partitions"][0]["lag_seconds"]
    del plain["topics"]
    del plain["members"][0]["streams"]["task_offset_sums"]

    parsed = Snapshot.from_json(json.dumps(plain))

    assert parsed.partitions[0].lag_seconds is None
    assert parsed.topics == ()
    assert parsed.members[0].streams is not None
    assert parsed.members[0].streams.task_offset_sums == ()


@pytest.mark.parametrize(
    ("mutate", "message", "why"),
    [
        (lambda p: p.update(schema_version=SCHEMA_VERSION + 1), "newer than this reader", "future"),
        (
            lambda p: p.update(schema_version="1"),
            "schema_version: expected a positive integer",
            "type",
        ),
        (
            lambda p: p.pop("group"),
            r"\$: object missing required field `group`",
            "required field without default",
        ),
        (
            lambda p: p["partitions"][0].update(lag="ten"),
            r"\$\.partitions\[0\]\.lag: expected `int \| null`, got `str`",
            "the path names the list index",
        ),
        (
            lambda p: p["poll"].update(started_at=True),
            r"\$\.poll\.started_at: expected `float`, got `bool`",
            "bool is no number",
        ),
        (
            lambda p: p.update(members={}),
            r"\$\.members: expected `array`, got `object`",
            "wrong container",
        ),
    ],
)
def test_bad_records_are_rejected_naming_the_field(
    mutate: Callable[[dict[str, Any]], object], message: str, why: str
) -> None:
    plain = json.loads(a_snapshot().to_json())
    mutate(plain)

    with pytest.raises(RecordError, match=message):
        Snapshot.from_json(json.dumps(plain))


def test_not_json_is_a_record_error() -> None:
    with pytest.raises(RecordError, match="not JSON"):
        Snapshot.from_json(b"{oops")


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(b"[" * 100_000, id="deep array"),
        pytest.param(b'{"a":' * 100_000, id="deep object"),
        pytest.param(b'{"schema_version":1,"cluster":' + b"[" * 100_000, id="deep field"),
    ],
)
def test_deeply_nested_json_is_a_record_error_not_a_crash(document: bytes) -> None:
    # Regression (found by tests/unit/fuzz): json.loads recursed into a
    # RecursionError, which escaped from_json and would kill a reader loop.
    with pytest.raises(RecordError, match="nested too deeply"):
        Snapshot.from_json(document)


def test_a_newer_schema_version_is_its_own_error_for_quarantine() -> None:
    plain = json.loads(a_snapshot().to_json())
    plain["schema_version"] = SCHEMA_VERSION + 1

    with pytest.raises(NewerSchemaError) as raised:
        Snapshot.from_json(json.dumps(plain))

    # A reader tells "from a newer agent" (keep aside) from "broken" (malformed).
    assert isinstance(raised.value, RecordError)
    assert (raised.value.version, raised.value.known) == (SCHEMA_VERSION + 1, SCHEMA_VERSION)


def test_a_newer_agent_at_the_same_schema_version_is_read() -> None:
    # What a newer agent may change without a version bump: new fields anywhere,
    # new sections, new values in open enumerations.
    plain = json.loads(a_snapshot().to_json())
    plain["agent"]["build"] = {"commit": "abc"}
    plain["poll"]["phases"] = [{"name": "describe", "seconds": 0.1}]
    plain["group"]["state"] = "SomeFutureState"
    plain["partitions"][0]["leader_epoch"] = 7
    plain["new_section"] = {"x": [1, {"y": None}]}

    parsed = Snapshot.from_json(json.dumps(plain))

    assert parsed.group.state == "SomeFutureState"
    assert parsed.partitions == a_snapshot().partitions


@pytest.mark.parametrize("version", [True, 0, -1, 1.0, None, "x" * 1000])
def test_a_schema_version_that_is_no_positive_integer_is_refused_in_one_short_line(
    version: object,
) -> None:
    plain = json.loads(a_snapshot().to_json())
    plain["schema_version"] = version

    with pytest.raises(RecordError, match="schema_version: expected a positive integer") as raised:
        Snapshot.from_json(json.dumps(plain))
    assert len(str(raised.value)) < 120


def test_key_keeps_one_groups_snapshots_on_one_partition() -> None:
    assert a_snapshot().key == b"prod/app"


def _field_paths(cls: type, prefix: str = "") -> list[str]:
    """Every field of the snapshot, nested records included, as dotted paths."""
    paths = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        paths.append(f"{prefix}{f.name}")
        for name in re.findall(r"[A-Za-z]+", str(hints[f.name])):
            nested = getattr(snapshot_module, name, None)
            if isinstance(nested, type) and dataclasses.is_dataclass(nested):
                paths += _field_paths(nested, f"{prefix}{f.name}.")
    return paths


def test_every_snapshot_field_is_documented() -> None:
    """docs/snapshot.md is the contract with the job and with anyone reading the topic."""
    doc = (Path(__file__).resolve().parents[3] / "docs" / "snapshot.md").read_text()
    paths = _field_paths(Snapshot)
    assert "members.streams.warmup_tasks" in paths, "the walk reaches nested records"
    missing = [p for p in paths if f"`{p.rsplit('.', 1)[-1]}" not in doc]
    assert missing == [], f"not in docs/snapshot.md: {missing}"
