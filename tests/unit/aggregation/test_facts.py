"""Snapshot JSON -> facts: what a rule reads, and the records that must never reach a window."""

import json

import pytest

from agent.aggregation.judging.facts import (
    FUTURE_VERSION,
    MALFORMED,
    BadSnapshotError,
    decode,
)
from agent.model import SCHEMA_VERSION
from tests.support.snapshots import changelog, partition, snapshot, streams_member

T = 1_700_000_000.0


def _plain() -> dict[str, object]:
    s = snapshot(
        "app",
        T,
        members=[streams_member("pA", 2, {"0_1": [("in", 1)]}, offset_sums={"0_1": 5})],
        partitions=[partition("in", 1, end=100, committed=90)],
        topics=[changelog("app-store-changelog", [7, 8], size_bytes=10)],
        generation=4,
    )
    return json.loads(s.to_json())  # type: ignore[no-any-return]


def test_a_snapshot_reads_as_the_facts_the_rules_use() -> None:
    key, poll = decode(json.dumps(_plain()))
    assert (key.cluster, key.group, key.agent, key.t) == ("test", "app", "agent-1", T)
    (member,) = poll.members
    assert (member.process, member.thread, member.identity) == ("pA", 2, "pA:2")
    assert [t.task for t in member.active] == ["0_1"]
    assert member.offset_sums == (("0_1", 5),)
    assert poll.partitions is not None
    (p,) = poll.partitions
    assert (p.log_end, p.committed, p.lag) == (100, 90, 10)
    assert (poll.lag_total, poll.lag_partitions) == (10, 1)
    assert poll.changelog_ends == (("app-store-changelog", (7, 8)),)
    assert (poll.generation, poll.stable, poll.member_ids) == (4, True, (member.member_id,))


def test_fields_of_an_older_agent_read_as_unknown_and_a_newer_agents_are_ignored() -> None:
    plain = _plain()
    plain["group"].pop("generation")  # type: ignore[attr-defined]
    plain["members"][0].pop("subscription_bytes")  # type: ignore[index]
    plain["something_new"] = {"x": 1}
    plain["partitions"][0]["also_new"] = [1, 2]  # type: ignore[index]
    _key, poll = decode(json.dumps(plain))
    assert poll.generation is None
    assert poll.members[0].subscription_bytes == 0


def _rejected(plain: object) -> BadSnapshotError:
    with pytest.raises(BadSnapshotError) as raised:
        decode(plain if isinstance(plain, str) else json.dumps(plain))
    return raised.value


def _with(path: list[object], value: object) -> dict[str, object]:
    plain = _plain()
    node: object = plain
    for step in path[:-1]:
        node = node[step]  # type: ignore[index]
    node[path[-1]] = value  # type: ignore[index]
    return plain


@pytest.mark.parametrize(
    ("plain", "message"),
    [
        pytest.param("{not json", "not JSON", id="not JSON"),
        pytest.param("[1, 2]", "$: expected `object`, got `array`", id="not an object"),
        pytest.param(
            _with(["poll", "started_at"], "yesterday"),
            "$.poll.started_at: expected `float`, got `str`",
            id="a poll time that is no number",
        ),
        pytest.param(
            _with(["partitions", 0, "log_end_offset"], 1.5),
            "$.partitions[0].log_end_offset: expected `int | null`, got `float`",
            id="an offset that is no integer",
        ),
        pytest.param(
            _with(["members", 0, "streams", "active_tasks"], {"0_1": []}),
            "$.members[0].streams.active_tasks: expected `array`, got `object`",
            id="tasks that are no list",
        ),
        pytest.param(
            {k: v for k, v in _plain().items() if k != "cluster"},
            "$: object missing required field `cluster`",
            id="no cluster",
        ),
        pytest.param(
            _with(["schema_version"], 0),
            "$.schema_version: expected a positive integer",
            id="no version",
        ),
    ],
)
def test_a_snapshot_that_does_not_fit_is_malformed_and_says_where(
    plain: object, message: str
) -> None:
    error = _rejected(plain)
    assert error.reason == MALFORMED
    assert message in str(error)


def test_a_newer_schema_version_is_set_aside_as_from_the_future() -> None:
    error = _rejected(_with(["schema_version"], SCHEMA_VERSION + 1))
    assert error.reason == FUTURE_VERSION
    assert str(error) == (
        f"$.schema_version: {SCHEMA_VERSION + 1} is newer than this job's {SCHEMA_VERSION}"
    )


def test_unchanged_parts_are_shared_with_the_poll_before() -> None:
    _key, first = decode(json.dumps(_plain()))
    _key, second = decode(json.dumps(_with(["poll", "started_at"], T + 10)))
    shared = second.sharing(first)
    assert shared.members is first.members
    assert shared.topics is first.topics
    assert shared == second, "sharing changes no value"
    aged = shared.aged(keep_partitions=False)
    assert (aged.partitions, aged.changelog_ends) == (None, None)
    assert aged.lag_total == 10, "the lag survives its partitions"


def test_records_equal_to_the_poll_befores_are_shared_when_their_neighbours_changed() -> None:
    # A rebalance loop: one thread rejoins under a new member id at every poll while the
    # other stays as it was; one changelog grows while the other stays. What stayed is
    # the poll before's object.
    def plain(rejoined_id: str, t: float, size: int) -> bytes:
        s = snapshot(
            "app",
            t,
            members=[
                streams_member("pA", 1, {"0_0": [("in", 0)]}),
                streams_member("pB", 1, {"0_1": [("in", 1)]}, member_id=rejoined_id),
            ],
            topics=[
                changelog("app-idle-changelog", [3], size_bytes=10),
                changelog("app-busy-changelog", [7], size_bytes=size),
            ],
        )
        return s.to_json()

    _key, first = decode(plain("pB-1-first", T, 100))
    _key, second = decode(plain("pB-1-again", T + 10, 200))
    shared = second.sharing(first)
    assert shared.members is not first.members, "a member changed"
    assert [m is f for m, f in zip(shared.members, first.members, strict=True)] == [True, False]
    assert shared.topics is not first.topics, "a changelog grew"
    assert [t is f for t, f in zip(shared.topics, first.topics, strict=True)] == [True, False]
    assert shared == second, "sharing changes no value"
