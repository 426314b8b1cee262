"""Matching this pod to its group members: each rule, and which evidence wins."""

import pytest

from agent.model import MemberInfo, StreamsMemberInfo
from agent.streams.identity import IdentityMatch, PodIdentity, match_members

MINE = "11111111-1111-1111-1111-111111111111"
OTHER = "22222222-2222-2222-2222-222222222222"


def member(
    n: int, process: str, host: str = "/10.0.0.9", instance: str | None = None
) -> MemberInfo:
    client = f"app-{process}-StreamThread-{n}-consumer"
    return MemberInfo(
        member_id=f"{client}-m{process[:1]}{n}",
        client_id=client,
        client_host=host,
        group_instance_id=instance,
        streams=StreamsMemberInfo(process_id=process, thread_index=n),
    )


GROUP = (
    member(1, MINE, "/10.0.0.5", "pod-a-1"),
    member(2, MINE, "/10.0.0.5", "pod-a-2"),
    member(1, OTHER, "/10.0.0.6", "pod-b-1"),
)
MY_IDS = (GROUP[0].member_id, GROUP[1].member_id)


@pytest.mark.parametrize(
    ("identity", "expected"),
    [
        pytest.param(
            PodIdentity(process_id=MINE, pod_ip="10.0.0.6"),
            IdentityMatch(MY_IDS, "process_id", MINE),
            id="the process id wins over a host that says otherwise",
        ),
        pytest.param(
            PodIdentity(process_id=MINE.upper()),
            IdentityMatch(MY_IDS, "process_id", MINE),
            id="process ids compare without case",
        ),
        pytest.param(
            PodIdentity(consumer_client_ids=frozenset({GROUP[0].client_id})),
            IdentityMatch((GROUP[0].member_id,), "client_id", MINE),
            id="the app's metrics name its consumers (a thread another instance has is not)",
        ),
        pytest.param(
            PodIdentity(process_id=OTHER.replace("2", "3"), pod_name="pod-a"),
            IdentityMatch(MY_IDS, "instance_id", MINE),
            id="an unknown process id falls through to static membership named after the pod",
        ),
        pytest.param(
            PodIdentity(pod_name="pod", pod_ip="10.0.0.5"),
            IdentityMatch(MY_IDS, "host", MINE),
            id="pod-a-1 is not pod's instance id; the host then matches",
        ),
        pytest.param(
            PodIdentity(pod_ip="10.0.0.7"),
            IdentityMatch(),
            id="nothing matches: no members are claimed",
        ),
        pytest.param(PodIdentity(), IdentityMatch(), id="no evidence at all"),
    ],
)
def test_match_members(identity: PodIdentity, expected: IdentityMatch) -> None:
    assert match_members(GROUP, identity) == expected


def test_members_of_an_earlier_incarnation_on_the_same_ip_are_also_this_pod() -> None:
    lingering = member(1, OTHER, "/10.0.0.5")
    group = (*GROUP[:2], lingering)

    match = match_members(group, PodIdentity(pod_ip="10.0.0.5"))

    assert set(match.member_ids) == {m.member_id for m in group}
    assert match.process_id is None, "two process ids: no single one to report"


def test_host_with_a_name_before_the_slash() -> None:
    named = member(1, MINE, "pod-a.svc/10.0.0.5")

    assert match_members([named], PodIdentity(pod_ip="10.0.0.5")).member_ids == (named.member_id,)
