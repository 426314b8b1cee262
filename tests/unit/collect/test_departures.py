"""A group gone from the listing gets one last snapshot (state Dead) only when its
coordinator confirms it holds no such group: a broker missing from the listing must
never close an app's findings. The real broker's deletion is checked in
tests/integration/test_agent_poll.py."""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agent.collect.build import PollObservation
from agent.collect.poller import ClusterPoller
from agent.collect.raw import ConsumerGroupDescription, DescribedGroup, ListedGroup
from agent.model import AgentInfo

AGENT = AgentInfo("test", "0", "central")
CLASSIC_APP = ListedGroup("app", "consumer", "Stable", "classic")
MODERN_APP = ListedGroup("app", "consumer", "Stable", "consumer")
OTHER = ListedGroup("other", "consumer", "Stable", "classic")


def classic(state: str, error_code: int = 0) -> DescribedGroup:
    return DescribedGroup("app", error_code, None, state, "consumer" if state else "", "", ())


def modern(error_code: int) -> ConsumerGroupDescription:
    return ConsumerGroupDescription(
        group_id="app",
        error_code=error_code,
        error_message=None,
        state="" if error_code else "Stable",
        group_epoch=1,
        assignment_epoch=1,
        assignor="uniform",
        members=(),
        coordinator_id=1,
    )


class CoordinatorEdge:
    """What the group's coordinator answers when asked about it (None: no answer)."""

    def __init__(
        self,
        classic: DescribedGroup | None = None,
        modern: ConsumerGroupDescription | None = None,
    ) -> None:
        self.classic, self.modern = classic, modern
        self.asked = 0

    def coordinators(self, group_ids: Iterable[str]) -> tuple[dict[str, int], list[Any]]:
        return dict.fromkeys(group_ids, 1), []

    def describe_groups(self, by: Mapping[int, Sequence[str]]) -> tuple[list[Any], list[Any]]:
        wanted = [g for gs in by.values() for g in gs]
        self.asked += len(wanted)
        return ([self.classic] if wanted and self.classic else []), []

    def describe_consumer_groups(
        self, by: Mapping[int, Sequence[str]]
    ) -> tuple[list[Any], list[Any]]:
        wanted = [g for gs in by.values() for g in gs]
        self.asked += len(wanted)
        return ([self.modern] if wanted and self.modern else []), []

    def describe_streams_groups(
        self, by: Mapping[int, Sequence[str]]
    ) -> tuple[list[Any], list[Any]]:
        return [], []


def listing(*groups: ListedGroup) -> PollObservation:
    return PollObservation(
        cluster="c", agent=AGENT, sequence=1, started_at=0.0, duration_seconds=0.0, groups=groups
    )


def departed_states(poller: ClusterPoller, *groups: ListedGroup) -> list[tuple[str, str]]:
    return [
        (s.group.group_id, s.group.state) for s in poller._departures(listing(*groups), now=10.0)
    ]


def test_a_deleted_classic_group_gets_one_dead_snapshot() -> None:
    # The coordinator answers DescribeGroups for a group it does not hold with state Dead.
    poller = ClusterPoller("c", AGENT, CoordinatorEdge(classic=classic("Dead")))  # type: ignore[arg-type]
    assert departed_states(poller, CLASSIC_APP, OTHER) == []
    assert departed_states(poller, OTHER) == [("app", "Dead")]
    # Said once: the next polls ship nothing more for it.
    assert departed_states(poller, OTHER) == []


def test_a_deleted_kip848_group_is_confirmed_by_group_id_not_found() -> None:
    poller = ClusterPoller("c", AGENT, CoordinatorEdge(modern=modern(69)))  # type: ignore[arg-type]
    departed_states(poller, MODERN_APP)
    assert departed_states(poller) == [("app", "Dead")]


def test_a_group_its_coordinator_still_holds_is_not_deleted() -> None:
    # Its broker was missing from the metadata, so ListGroups never asked it: the group
    # lives on, and its findings must stay open.
    edge = CoordinatorEdge(classic=classic("Stable"))
    poller = ClusterPoller("c", AGENT, edge)  # type: ignore[arg-type]
    departed_states(poller, CLASSIC_APP)
    assert departed_states(poller) == []
    assert departed_states(poller) == []
    assert edge.asked == 2  # asked again at each poll while it is missing
    # Listed again: no longer asked about.
    assert departed_states(poller, CLASSIC_APP) == []
    assert departed_states(poller, CLASSIC_APP) == []
    assert edge.asked == 2


def test_a_coordinator_that_never_answers_is_asked_a_bounded_number_of_polls() -> None:
    edge = CoordinatorEdge()  # no answer at all: coordinator loading or unreachable
    poller = ClusterPoller("c", AGENT, edge)  # type: ignore[arg-type]
    departed_states(poller, CLASSIC_APP)
    for _ in range(40):
        assert departed_states(poller) == []
    assert edge.asked == 30
    assert poller._vanished == {}


def test_a_group_deleted_and_created_again_between_polls_is_not_gone() -> None:
    poller = ClusterPoller("c", AGENT, CoordinatorEdge(classic=classic("Dead")))  # type: ignore[arg-type]
    departed_states(poller, CLASSIC_APP)
    assert departed_states(poller, CLASSIC_APP) == []
