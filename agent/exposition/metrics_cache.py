"""The agent's /metrics as bytes, built once per poll instead of at every scrape.

At 1,000 groups x 20 partitions the exposition is about 100,000 series (11 MB of
text); building it through prometheus_client at every scrape cost more CPU than
polling the cluster. Here the families a poll changes (groups, partitions,
Streams, the sidecar's view) are written as text when a poll is recorded and
gzip-compressed as they are written (only the compressed text is kept: the
plain one, held twice while a poll replaced it, was a fifth of the agent's
memory); a scrape adds the few families that change between polls (poll
counters, the sink's delivery, the ``__consumer_offsets`` readers), written
fresh, in front. A scraper that does not accept gzip gets the body
decompressed for it (Prometheus always accepts gzip).

The text is the Prometheus text format 0.0.4, the same bytes prometheus_client's
``generate_latest`` writes for ``AgentCollector`` (tests compare them): the same
``AgentMetrics`` code makes the families, only the family objects differ, except
the per-partition ones, which ``bulk_families`` writes a group at a time
(``text_format`` writes the lines).
OpenMetrics is not offered; Prometheus and every scraper accept this format.
A gzip answer is two gzip members (the fresh head, the cached body) one after
the other, which gzip readers (Go's, Python's, curl's) read as one stream.
"""

import gzip
import itertools
import threading
import zlib
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from agent.exposition.agent_metrics import AgentMetrics, Family, LagGranularity
from agent.exposition.agent_state import AgentState
from agent.exposition.bulk_families import BulkTextMetrics
from agent.exposition.text_format import TextFamily

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Fast: the text is repetitive enough that level 1 already shrinks it about 10 times.
_GZIP_LEVEL = 1


def _text(families: Iterable[Family]) -> bytes:
    text = bytearray()
    for family in families:
        assert isinstance(family, TextFamily)  # noqa: S101 - TextFamilies makes only these
        text += family.text
    return bytes(text)


_GZIP_WBITS = 16 + zlib.MAX_WBITS  # zlib's way of asking for a gzip member


def _gzipped(families: Iterable[Family]) -> tuple[bytes, int]:
    """The families' text as one gzip member, compressed family by family, and the
    length of the text."""
    packer = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, _GZIP_WBITS)
    parts = []
    size = 0
    for family in families:
        assert isinstance(family, TextFamily)  # noqa: S101 - TextFamilies makes only these
        parts.append(packer.compress(family.text))
        size += len(family.text)
        family.text = bytearray()  # the family object may outlive this loop
    parts.append(packer.flush())
    return b"".join(parts), size


_PLAIN_CHUNK = 256 * 1024


def _unpacked(body: bytes) -> Iterator[bytes]:
    """A gzip member's text in pieces (never the whole 11 MB at once)."""
    unpacker = zlib.decompressobj(_GZIP_WBITS)
    data = body
    while data:
        yield unpacker.decompress(data, _PLAIN_CHUNK)
        data = unpacker.unconsumed_tail
    rest = unpacker.flush()
    if rest:
        yield rest


class Exposition(NamedTuple):
    """One scrape's answer: its pieces, written one after the other, and their length."""

    chunks: Iterable[bytes]
    length: int
    gzipped: bool


class MetricsExposition:
    """/metrics: ``update`` after each recorded poll, ``render`` at each scrape."""

    def __init__(
        self,
        state: AgentState,
        *,
        agent_id: str,
        mode: str,
        lag_granularity: LagGranularity = "partition",
    ) -> None:
        self.state = state
        self.agent_id, self.mode, self.lag_granularity = agent_id, mode, lag_granularity
        self._lock = threading.Lock()
        self._body = (b"", 0)  # gzip, and the length of the text
        self.update()

    def _metrics(self) -> AgentMetrics:
        """Fresh families for one rendering (polls and scrapes run in parallel)."""
        return BulkTextMetrics(
            agent_id=self.agent_id, mode=self.mode, lag_granularity=self.lag_granularity
        )

    def update(self) -> None:
        """Write the families a poll changes (call after ``AgentState.record``)."""
        body = _gzipped(self._metrics().body(self.state.view()))
        with self._lock:
            self._body = body

    def render(self, *, gzipped: bool) -> Exposition:
        head = _text(self._metrics().head(self.state.view()))
        with self._lock:
            body, size = self._body
        if not gzipped:
            return Exposition(itertools.chain([head], _unpacked(body)), len(head) + size, False)
        packed = gzip.compress(head, compresslevel=_GZIP_LEVEL, mtime=0)
        return Exposition([packed, body], len(packed) + len(body), True)
