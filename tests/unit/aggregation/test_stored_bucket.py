"""A bucket's state through the state store: kept, carried over an upgrade, or told."""

import json
import pickle
import typing
import zlib
from typing import NamedTuple

from agent.aggregation.judging import facts, tuples
from agent.aggregation.judging.facts import decode as decode_snapshot
from agent.aggregation.judging.group import GroupState, step
from agent.aggregation.judging.stored_bucket import WINDOWS_FORMAT, bucket_of, decode, encode
from agent.config.schema import DetectorsConfig
from tests.unit.aggregation.cases import no_live_consumers

# What WINDOWS_FORMAT was bumped for last: every facts record and its fields. A change to
# any of them changes what a stored window unpickles to: bump WINDOWS_FORMAT, then this.
RECORDS_AT_FORMAT = {
    1: "db7d694a",
    2: "db7d694a",  # the records as they were; their partitions frozen as columns
    3: "db7d694a",  # the records as they were; a window frozen as columns
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
        "facts records changed: bump stored_bucket.WINDOWS_FORMAT and record the new digest"
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


def _poll_with(partitions: tuple[facts.Partition, ...] | None, t: float) -> facts.Poll:
    _key, poll = decode_snapshot(next(c for c in no_live_consumers.CASES).snapshots[0].to_json())
    return poll._replace(t=t, partitions=partitions)


def test_partitions_frozen_as_columns_come_back_as_the_same_records() -> None:
    # Unknown offsets and owners, no partitions at all, and partitions aged out (None):
    # each reads back as it was, in its order.
    listed = (
        facts.Partition("in", 0, 100, 90, 10, "m-1"),
        facts.Partition("in", 1, None, None, None, None),
        facts.Partition("out", 0, 5, 5, 0, "m-2"),
    )
    moved = (listed[0]._replace(log_end=120, lag=30), *listed[1:])
    state = GroupState(
        series={"a": [_poll_with(None, 1.0), _poll_with((), 2.0), _poll_with(listed, 3.0),
                      _poll_with(moved, 4.0)]}
    )  # fmt: skip
    groups, _dropped = decode(encode({("test", "g"): state}))
    polls = groups[("test", "g")].series["a"]
    assert [p.partitions for p in polls] == [None, (), listed, moved]
    assert all(type(p) is facts.Partition for p in polls[3].partitions or ())


def test_columns_that_repeat_from_poll_to_poll_are_stored_once() -> None:
    # An idle group: every poll lists the same 50 partitions with the same offsets, each
    # poll in its own objects (as decoded from its own snapshot).
    def listed() -> tuple[facts.Partition, ...]:
        return tuple(
            facts.Partition("".join(["in", "put"]), n, 1000, 900, 100, "".join(["m-", "1"]))
            for n in range(50)
        )

    def raw_size(polls: int) -> int:
        state = GroupState(series={"a": [_poll_with(listed(), float(t)) for t in range(polls)]})
        return len(zlib.decompress(encode({("test", "g"): state}).windows))

    one, thirty = raw_size(1), raw_size(30)
    # 29 more polls cost their own fields, not 29 more copies of 50 partitions.
    assert thirty - one < 29 * 200 < one * 5


def test_a_window_carried_batch_after_batch_stays_what_it_would_be_kept_in_memory() -> None:
    # Each batch decodes the bucket, steps one new poll, encodes it again: polls read
    # from the store are written back as read, the new ones frozen. The windows stay
    # those of a group never stored, and as small as written from scratch (the parts
    # consecutive polls share stay one object in the pickle).
    case = next(c for c in no_live_consumers.CASES if len(c.snapshots) > 100)
    polls = [decode_snapshot(s.to_json()) for s in case.snapshots]
    params = DetectorsConfig()
    in_memory = GroupState()
    stored = encode({})
    for key, poll in polls:
        step(in_memory, [(key.agent, poll)], params, cluster="test", group=case.name)
        groups, _dropped = decode(stored)
        state = groups.setdefault(("test", case.name), GroupState())
        step(state, [(key.agent, poll)], params, cluster="test", group=case.name)
        stored = encode(groups)
    carried, _dropped = decode(stored)
    assert carried[("test", case.name)].series == in_memory.series
    fresh = encode({("test", case.name): in_memory})
    assert len(zlib.decompress(stored.windows)) == len(zlib.decompress(fresh.windows))


def _rebalance_loop(polls: int) -> list[facts.Poll]:
    """A group in which one of four members rejoins under a new id at every poll."""
    window: list[facts.Poll] = []
    for t in range(polls):
        # Each poll decoded from its own snapshot: equal members, but their own objects.
        own = _poll_with(None, float(t))
        member = own.members[0]
        stay = tuple(member._replace(member_id=f"m-{n}", thread=n) for n in range(3))
        rejoined = member._replace(member_id=f"again-{t}", thread=9)
        poll = own._replace(members=(*stay, rejoined))
        window.append(poll.sharing(window[-1] if window else None))
    return window


def test_a_member_that_stays_while_another_rejoins_is_stored_once() -> None:
    def raw_size(polls: int) -> int:
        state = GroupState(series={"a": _rebalance_loop(polls)})
        return len(zlib.decompress(encode({("test", "g"): state}).windows))

    one, thirty = raw_size(1), raw_size(30)
    member = len(pickle.dumps(tuple(_rebalance_loop(1)[0].members[0]), protocol=5))
    # 29 more polls cost their own fields and one new member each, not four.
    assert thirty - one < 29 * (member + 200)
    groups, _dropped = decode(
        encode({("test", "g"): GroupState(series={"a": _rebalance_loop(30)})})
    )
    thawed = groups[("test", "g")].series["a"]
    assert thawed == _rebalance_loop(30)
    assert len({id(p.members[0]) for p in thawed}) == 1, "thawed as one object again"
    assert len({id(p.members[3]) for p in thawed}) == 30


def test_a_window_frozen_again_reuses_every_part_it_was_read_from() -> None:
    # Between two batches a window gains a poll; the parts read from the store (members,
    # each member, partitions) are written back as the very objects read, not converted
    # again; only the new poll's own parts are.
    window = _rebalance_loop(12)
    read = pickle.loads(pickle.dumps(tuples.freeze(window[:-1]), protocol=5))  # noqa: S301
    polls, thawed = tuples.thaw_keeping(read)
    polls.append(window[-1].sharing(polls[-1]))
    again = tuples.freeze(polls, thawed)
    at = facts.Poll._fields.index("members")
    members_read, members_again = _records(read[at]), _records(again[at])
    for before, after in zip(members_read, members_again[:-1], strict=False):
        assert after is before
    newest = members_again[-1]
    assert [m is r for m, r in zip(newest, members_read[-1], strict=True)] == [True] * 3 + [False]


def _records(column: tuple[object, ...]) -> list[tuple[object, ...]]:
    """A frozen column of tuples of records (members, topics), as such."""
    return [typing.cast(tuple[object, ...], value) for value in column]


def test_a_topic_that_stays_while_another_grows_is_stored_once() -> None:
    def window(polls: int) -> list[facts.Poll]:
        out: list[facts.Poll] = []
        for t in range(polls):
            # Each poll's records its own objects, as decoded from its own snapshot.
            idle = facts.Topic(
                "".join(["app-idle-", "changelog"]), 1, "changelog", True, None, 10, 1
            )
            busy = facts.Topic("app-busy-changelog", 1, "changelog", True, None, 100 + t, 1)
            poll = _poll_with(None, float(t))._replace(topics=(idle, busy))
            out.append(poll.sharing(out[-1] if out else None))
        return out

    topics = _records(tuples.freeze(window(30))[facts.Poll._fields.index("topics")])
    assert len({id(idle) for idle, _busy in topics}) == 1
    assert len({id(busy) for _idle, busy in topics}) == 30
