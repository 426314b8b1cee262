"""Which Kafka Streams instance and stream thread a group member is, also when the broker
describes it without its Streams data.

Mid-rebalance a classic group's members come without metadata: no process id, no
thread index from a decoded subscription. Their client ids still say who they are: a
stream thread's main consumer is ``<base>-StreamThread-<n>-consumer``, and the base
client id is the instance's ``client.id``, else ``<application.id>-<process id>``.
Members whose process id is known (a Stable poll, or a broker that assigns) teach
which process each base belongs to; a base two processes share (one ``client.id``
set for every instance) names none.
"""

from collections.abc import Iterable

from agent.aggregation.judging.facts import Member
from agent.streams.client_id import parse_stream_thread_client_id

_SHARED = ""  # a base client id more than one process uses


class InstanceNames:
    """What members with a known process id taught about base client ids."""

    __slots__ = ("_bases", "_seen")

    def __init__(self) -> None:
        self._bases: dict[str, str] = {}
        self._seen: set[int] = set()  # id() of member tuples already read

    def learn(self, members: tuple[Member, ...]) -> None:
        """Read one poll's members (polls share unchanged members: each tuple once)."""
        key = id(members)
        if key in self._seen:
            return
        self._seen.add(key)
        for m in members:
            if not m.process:
                continue
            parsed = parse_stream_thread_client_id(m.client_id)
            if parsed is None:
                continue
            known = self._bases.setdefault(parsed.base_client_id, m.process)
            if known != m.process:
                self._bases[parsed.base_client_id] = _SHARED

    def learn_all(self, polls_members: Iterable[tuple[Member, ...]]) -> None:
        for members in polls_members:
            self.learn(members)

    def thread(self, m: Member) -> tuple[str, int] | None:
        """(process id, thread index) of a stream thread's member, when known."""
        if m.process is not None and m.thread is not None:
            return m.process, m.thread
        parsed = parse_stream_thread_client_id(m.client_id)
        if parsed is None:
            return None
        process = m.process or self._bases.get(parsed.base_client_id)
        return (process, parsed.thread_index) if process else None

    def process(self, m: Member) -> str | None:
        """The member's process id, when known."""
        if m.process is not None:
            return m.process
        parsed = parse_stream_thread_client_id(m.client_id)
        if parsed is None:
            return None
        return self._bases.get(parsed.base_client_id) or None

    def instance(self, m: Member) -> str:
        """A name for the member's instance, whatever is known: its process id, else its
        base client id (a Streams thread), else its client id (a plain consumer)."""
        process = self.process(m)
        if process is not None:
            return process
        parsed = parse_stream_thread_client_id(m.client_id)
        return parsed.base_client_id if parsed is not None else m.client_id
