"""The client ids Kafka Streams gives its StreamThreads' main consumers.

A Streams instance with base client id ``<base>`` (``client.id``, or
``<application.id>-<processId>`` when unset) names thread n ``<base>-StreamThread-<n>``
and that thread's group member ``<base>-StreamThread-<n>-consumer``
(``streams-internals.md`` section 5). Restore consumers, producers and the
global consumer are not group members and do not parse.

>>> parse_stream_thread_client_id("app-1-StreamThread-2-consumer")
StreamThreadClientId(base_client_id='app-1', thread_index=2)
>>> thread_name("app-1", 2)
'app-1-StreamThread-2'
"""

import re
from dataclasses import dataclass
from typing import Final

from agent.streams.codec import INT32_MAX

# Greedy base: if the base itself contains "-StreamThread-", the last one is the
# thread's. The index is a Java int printed in decimal: no sign, no leading zeros,
# ASCII digits only, at most ten of them.
_MAIN_CONSUMER: Final = re.compile(r"(?P<base>.+)-StreamThread-(?P<n>0|[1-9][0-9]{0,9})-consumer")


@dataclass(frozen=True, slots=True)
class StreamThreadClientId:
    """The parts of a StreamThread main consumer's client id."""

    base_client_id: str
    thread_index: int  # n of StreamThread-n, starting at 1

    @property
    def thread_name(self) -> str:
        return thread_name(self.base_client_id, self.thread_index)


def parse_stream_thread_client_id(client_id: str) -> StreamThreadClientId | None:
    """The base client id and thread index, or None for any other client."""
    match = _MAIN_CONSUMER.fullmatch(client_id)
    if match is None:
        return None
    index = int(match["n"])
    if index > INT32_MAX:
        return None
    return StreamThreadClientId(match["base"], index)


def thread_name(base_client_id: str, thread_index: int) -> str:
    """The StreamThread's name, which is also its ``thread-id`` metrics tag."""
    return f"{base_client_id}-StreamThread-{thread_index}"
