"""Which members of a Kafka Streams group are the instance in this pod (pure).

The strongest evidence comes first and the first kind that matches decides:

1. ``process_id``: every stream thread of one KafkaStreams instance sends the
   same process id in its SubscriptionInfo (``streams-internals.md`` section 5);
   the sidecar knows its own from the state directory or the app's metrics.
2. ``client_id``: the app's metrics name each thread's main consumer
   (``<client>-StreamThread-<n>-consumer``), which is the member's client id.
3. ``instance_id``: static members are ``<group.instance.id>-<n>``; deployments
   often set ``group.instance.id`` to the pod's name (Downward API ``POD_NAME``).
4. ``host``: the member's client host is the pod's IP (Downward API ``POD_IP``).
   Weakest: members of an earlier incarnation of this pod share it until their
   session times out, and they are reported too (they are this pod's).
"""

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from agent.model import MemberInfo

Rule = Callable[[MemberInfo], bool]


@dataclass(frozen=True, slots=True)
class PodIdentity:
    process_id: str | None = None
    consumer_client_ids: frozenset[str] = field(default_factory=frozenset)
    pod_name: str | None = None
    pod_ip: str | None = None


@dataclass(frozen=True, slots=True)
class IdentityMatch:
    member_ids: tuple[str, ...] = ()
    matched_by: str | None = None  # process_id | client_id | instance_id | host
    # The matched members' process id, when they agree on one.
    process_id: str | None = None


def match_members(members: Iterable[MemberInfo], identity: PodIdentity) -> IdentityMatch:
    """The members that are this pod, and which evidence said so."""
    members = list(members)
    rules: tuple[tuple[str, Rule], ...] = (
        ("process_id", _by_process_id(identity.process_id)),
        ("client_id", lambda m: m.client_id in identity.consumer_client_ids),
        ("instance_id", _by_instance_id(identity.pod_name)),
        ("host", _by_host(identity.pod_ip)),
    )
    for kind, matches in rules:
        found = [m for m in members if matches(m)]
        if found:
            processes = {m.streams.process_id for m in found if m.streams is not None}
            return IdentityMatch(
                member_ids=tuple(sorted(m.member_id for m in found)),
                matched_by=kind,
                process_id=processes.pop() if len(processes) == 1 else None,
            )
    return IdentityMatch()


def _by_process_id(process_id: str | None) -> Rule:
    if not process_id:
        return _never
    wanted = process_id.lower()
    return lambda m: m.streams is not None and m.streams.process_id.lower() == wanted


def _by_instance_id(pod_name: str | None) -> Rule:
    if not pod_name:
        return _never
    # Kafka Streams appends "-<thread index>" to a configured group.instance.id.
    pattern = re.compile(re.escape(pod_name) + r"(-[0-9]+)?")
    return lambda m: bool(m.group_instance_id and pattern.fullmatch(m.group_instance_id))


def _by_host(pod_ip: str | None) -> Rule:
    if not pod_ip:
        return _never
    # The coordinator reports InetAddress.toString(): "/10.0.0.5" or "host/10.0.0.5".
    return lambda m: m.client_host.rsplit("/", 1)[-1] == pod_ip


def _never(_member: MemberInfo) -> bool:
    return False
