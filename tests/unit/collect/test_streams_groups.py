"""KIP-1071 streams groups (group.protocol=streams): how StreamsGroupDescribe's answer
becomes a snapshot, and which describe API each group gets. The real broker's answer is
checked in tests/integration/test_agent_poll.py."""

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from agent.collect.build import PollObservation, build_snapshot
from agent.collect.lag_time import OffsetHistory
from agent.collect.poller import ClusterPoller
from agent.collect.raw import (
    DescribedGroup,
    FailedRequest,
    ListedGroup,
    StreamsGroupDescription,
    StreamsGroupMember,
    StreamsTaskSet,
    Subtopology,
)
from agent.collect.streams_view import streams_group_member_view
from agent.model import AgentInfo, Snapshot

AGENT = AgentInfo("test", "0", "central")
TOPOLOGY = (
    Subtopology("0", ("orders",), (), ("app-by-customer-repartition",), ()),
    Subtopology("1", (), ("app-by-customer-repartition",), (), ("app-totals-changelog",)),
)


def member(
    member_id: str = "m1",
    *,
    active: Sequence[StreamsTaskSet] = (),
    standby: Sequence[StreamsTaskSet] = (),
    warmup: Sequence[StreamsTaskSet] = (),
    client_id: str = "app-5f1c-StreamThread-2-consumer",
) -> StreamsGroupMember:
    return StreamsGroupMember(
        member_id=member_id,
        client_id=client_id,
        client_host="/10.0.0.7",
        group_instance_id=None,
        rack_id="az-1",
        member_epoch=7,
        process_id="5f1c",
        endpoint="10.0.0.7:8080",
        client_tags=(("zone", "az-1"),),
        active=tuple(active),
        standby=tuple(standby),
        warmup=tuple(warmup),
    )


def described(
    *members: StreamsGroupMember,
    state: str = "Stable",
    subtopologies: tuple[Subtopology, ...] | None = TOPOLOGY,
    error_code: int = 0,
) -> StreamsGroupDescription:
    return StreamsGroupDescription(
        group_id="app",
        error_code=error_code,
        error_message="Group app is not a streams group." if error_code else None,
        state=state,
        group_epoch=9,
        assignment_epoch=8,
        topology_epoch=0 if subtopologies is not None else None,
        subtopologies=subtopologies,
        members=members,
        coordinator_id=1,
    )


def test_tasks_read_partition_p_of_every_topic_their_subtopology_reads() -> None:
    view = streams_group_member_view(
        member(active=(StreamsTaskSet("1", (3,)), StreamsTaskSet("0", (3, 0)))), TOPOLOGY
    )
    assert view.streams is not None
    tasks = {
        t.task: [(p.topic, p.partition) for p in t.partitions] for t in view.streams.active_tasks
    }
    assert tasks == {
        "0_0": [("orders", 0)],
        "0_3": [("orders", 3)],
        "1_3": [("app-by-customer-repartition", 3)],
    }, "a sub-topology reads its source topics and the repartition topics it consumes"
    assert [t.task for t in view.streams.active_tasks] == ["0_0", "0_3", "1_3"]
    assert [(p.topic, p.partition) for p in view.assigned_partitions] == [
        ("app-by-customer-repartition", 3),
        ("orders", 0),
        ("orders", 3),
    ], "the member consumes what its active tasks read"


def test_standby_and_warmup_tasks_are_kept_apart_and_consume_nothing() -> None:
    view = streams_group_member_view(
        member(
            active=(StreamsTaskSet("0", (1,)),),
            standby=(StreamsTaskSet("1", (2,)),),
            warmup=(StreamsTaskSet("1", (0,)),),
        ),
        TOPOLOGY,
    )
    assert view.streams is not None
    assert [t.task for t in view.streams.standby_tasks] == ["1_2"]
    assert [t.task for t in view.streams.warmup_tasks] == ["1_0"]
    assert [(p.topic, p.partition) for p in view.assigned_partitions] == [("orders", 1)]


def test_member_identity_comes_from_the_description_and_the_client_id() -> None:
    view = streams_group_member_view(member(active=(StreamsTaskSet("0", (1,)),)), TOPOLOGY)
    assert view.streams is not None
    assert (view.streams.process_id, view.streams.thread_index) == ("5f1c", 2)
    assert view.streams.base_client_id == "app-5f1c"
    assert view.streams.endpoint == "10.0.0.7:8080"
    assert [(t.key, t.value) for t in view.streams.client_tags] == [("zone", "az-1")]
    assert (view.member_epoch, view.rack_id) == (7, "az-1")


def test_subtopology_ids_sort_as_numbers() -> None:
    view = streams_group_member_view(
        member(active=(StreamsTaskSet("10", (0,)), StreamsTaskSet("2", (0,)))), None
    )
    assert view.streams is not None
    assert [t.task for t in view.streams.active_tasks] == ["2_0", "10_0"], "not 10_0 first"


def test_without_a_topology_tasks_are_named_but_read_no_known_partition() -> None:
    view = streams_group_member_view(member(active=(StreamsTaskSet("0", (1,)),)), None)
    assert view.streams is not None
    assert [(t.task, t.partitions) for t in view.streams.active_tasks] == [("0_1", ())]
    assert view.assigned_partitions == ()


def snapshot_of(description: StreamsGroupDescription, listed_type: str = "streams") -> Snapshot:
    observation = PollObservation(
        cluster="c",
        agent=AGENT,
        sequence=1,
        started_at=100.0,
        duration_seconds=0.1,
        groups=[ListedGroup("app", "streams", "Stable", listed_type)],
        streams_groups={"app": description},
    )
    return build_snapshot(observation, observation.groups[0], OffsetHistory(), 100.0)


def test_a_streams_group_snapshot_carries_its_state_epochs_and_topology() -> None:
    snapshot = snapshot_of(
        described(member(active=(StreamsTaskSet("0", (1,)),)), state="Reconciling")
    )
    group = snapshot.group
    assert (group.group_type, group.protocol_type, group.is_streams) == ("streams", "streams", True)
    assert group.state == "Reconciling", "the describe's state, not ListGroups' older one"
    assert (group.group_epoch, group.assignment_epoch, group.topology_epoch) == (9, 8, 0)
    assert group.coordinator_id == 1
    assert [s.subtopology_id for s in snapshot.subtopologies] == ["0", "1"]
    assert snapshot.subtopologies[1].changelog_topics == ("app-totals-changelog",)
    assert [m.member_id for m in snapshot.members] == ["m1"]
    assert snapshot.errors == ()


def test_a_sidecars_untyped_group_found_by_streams_describe_is_a_streams_group() -> None:
    snapshot = snapshot_of(described(member()), listed_type="")
    assert snapshot.group.group_type == "streams"


def test_a_group_with_no_topology_yet_has_no_subtopologies() -> None:
    snapshot = snapshot_of(described(state="NotReady", subtopologies=None))
    assert (snapshot.group.state, snapshot.subtopologies) == ("NotReady", ())
    assert snapshot.group.topology_epoch is None


def test_a_describe_error_is_reported_on_the_snapshot() -> None:
    snapshot = snapshot_of(described(error_code=69, state=""))
    assert [(e.stage, e.error) for e in snapshot.errors] == [
        ("streams_group_describe", "GroupIdNotFoundError")
    ]
    assert snapshot.group.state == "Stable", "no state in the answer: ListGroups' stands"


# -- which describe API a group gets ------------------------------------------------------

NOT_CLASSIC = DescribedGroup("app", 69, "Group app is not a classic group.", "Dead", "", "", ())
CLASSIC = DescribedGroup("app", 0, None, "Stable", "consumer", "stream", ())


class DescribeEdge:
    """The three describe calls, answering from tables; records which groups each got."""

    def __init__(
        self,
        classic: Mapping[str, DescribedGroup],
        streams: Mapping[str, StreamsGroupDescription],
        streams_fails: bool = False,
    ) -> None:
        self.classic, self.streams, self.streams_fails = classic, streams, streams_fails
        self.asked: dict[str, list[str]] = {}

    def _ask(self, api: str, by_coordinator: Mapping[int, Sequence[str]]) -> list[str]:
        groups = [g for gs in by_coordinator.values() for g in gs]
        if groups:  # the real edge sends nothing for no groups
            self.asked[api] = self.asked.get(api, []) + groups
        return groups

    def describe_groups(self, by: Mapping[int, Sequence[str]]) -> tuple[list[Any], list[Any]]:
        return [self.classic[g] for g in self._ask("classic", by)], []

    def describe_consumer_groups(
        self, by: Mapping[int, Sequence[str]]
    ) -> tuple[list[Any], list[Any]]:
        self._ask("consumer", by)
        return [], []

    def describe_streams_groups(
        self, by: Mapping[int, Sequence[str]]
    ) -> tuple[list[Any], list[Any]]:
        groups = self._ask("streams", by)
        if self.streams_fails:
            failed = FailedRequest(
                "streams_group_describe", "UnsupportedVersionError", "", False, tuple(groups)
            )
            return [], [failed]
        return [self.streams[g] for g in groups], []


def route(
    listed_type: str, edge: DescribeEdge
) -> tuple[dict[str, Any], dict[str, Any], list[FailedRequest]]:
    poller = ClusterPoller("c", AGENT, edge)  # type: ignore[arg-type]
    failures: list[FailedRequest] = []
    classic, _modern, streams = poller._describe(  # the routing alone
        [
            ListedGroup(
                "app", "streams" if listed_type == "streams" else "consumer", "", listed_type
            )
        ],
        {"app": 1},
        failures,
    )
    return classic, streams, failures


@pytest.mark.parametrize(
    ("listed_type", "classic", "streams", "streams_fails", "expected", "why"),
    [
        (
            "streams",
            {},
            {"app": described()},
            False,
            ("streams", ["streams"]),
            "ListGroups says streams: StreamsGroupDescribe only",
        ),
        (
            "",
            {"app": NOT_CLASSIC},
            {"app": described()},
            False,
            ("streams", ["classic", "streams"]),
            "a sidecar's group the broker says is not classic is asked again as a streams group",
        ),
        (
            "",
            {"app": NOT_CLASSIC},
            {"app": described(error_code=69)},
            False,
            ("classic", ["classic", "streams"]),
            "neither classic nor streams (a share group, say): DescribeGroups' error stands",
        ),
        (
            "",
            {"app": NOT_CLASSIC},
            {},
            True,
            ("classic", ["classic", "streams"]),
            "a broker without StreamsGroupDescribe: the retry's failure is not the group's",
        ),
        (
            "",
            {"app": CLASSIC},
            {},
            False,
            ("classic", ["classic"]),
            "a classic group found by DescribeGroups is not asked again",
        ),
        (
            "classic",
            {"app": NOT_CLASSIC},
            {},
            False,
            ("classic", ["classic"]),
            "a group ListGroups typed as classic is not retried: the type is known",
        ),
    ],
)
def test_each_group_is_described_by_the_api_of_its_type(
    listed_type: str,
    classic: Mapping[str, DescribedGroup],
    streams: Mapping[str, StreamsGroupDescription],
    streams_fails: bool,
    expected: tuple[str, list[str]],
    why: str,
) -> None:
    edge = DescribeEdge(classic, streams, streams_fails)
    described_classic, described_streams, failures = route(listed_type, edge)
    kind, apis = expected
    assert [api for api in ("classic", "consumer", "streams") if api in edge.asked] == apis, why
    assert ("app" in described_streams) == (kind == "streams"), why
    assert ("app" in described_classic) == (kind == "classic"), why
    assert failures == [], why
