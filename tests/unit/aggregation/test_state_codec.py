"""A bucket's state through the state store: kept, carried over an upgrade, or told."""

import json
from typing import NamedTuple

from agent.aggregation import facts
from agent.aggregation.facts import decode as decode_snapshot
from agent.aggregation.group import GroupState, step
from agent.aggregation.state_codec import WINDOWS_FORMAT, bucket_of, decode, encode
from agent.config.schema import DetectorsConfig
from tests.unit.aggregation.cases import no_live_consumers

# What WINDOWS_FORMAT was bumped for last: every facts record and its fields. A change to
# any of them changes what a stored window unpickles to: bump WINDOWS_FORMAT, then this.
RECORDS_AT_FORMAT = {
    1: "db7d694a",
}


def _records_digest() -> str:
    import hashlib  # noqa: PLC0415

    records = {
        name: list(cls._fields)
        for name, cls in sorted(vars(facts).items())
        if isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")
    }
    return hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()[:8]


def test_the_windows_format_is_bumped_with_every_change_to_the_facts() -> None:
    assert RECORDS_AT_FORMAT.get(WINDOWS_FORMAT) == _records_digest(), (
        "facts records changed: bump state_codec.WINDOWS_FORMAT and record the new digest"
    )


def _state() -> GroupState:
    case = next(c for c in no_live_consumers.CASES if c.expect)
    state = GroupState()
    polls = []
    for s in case.snapshots:
        key, poll = decode_snapshot(s.to_json())
        polls.append((key.agent, poll))
    step(state, polls, DetectorsConfig(), cluster="test", group=case.name)
    assert state.hysteresis.open, "a case whose finding is open"
    return state


def test_a_bucket_round_trips_through_the_state_store() -> None:
    state = _state()
    groups, dropped = decode(encode({("test", "g"): state}))
    assert not dropped
    assert groups[("test", "g")].series == state.series
    assert groups[("test", "g")].hysteresis == state.hysteresis


class _Stored(NamedTuple):
    windows_format: int
    hysteresis: str
    windows: bytes


def test_windows_of_another_format_are_dropped_and_open_findings_carry_on() -> None:
    state = _state()
    stored = encode({("test", "g"): state})
    groups, dropped = decode(stored._replace(windows_format=WINDOWS_FORMAT + 1))
    assert dropped
    assert groups[("test", "g")].series == {}
    assert groups[("test", "g")].hysteresis.open == state.hysteresis.open


def test_a_group_has_one_bucket_whatever_the_process() -> None:
    # crc32 (not Python's salted hash): the job's JVM computes the same bucket.
    assert bucket_of("prod", "orders", 32) == bucket_of("prod", "orders", 32) == 22
