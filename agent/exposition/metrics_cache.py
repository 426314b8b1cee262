"""The agent's /metrics as bytes, built once per poll instead of at every scrape.

On a large cluster the exposition is a great many series and megabytes of text;
building it through prometheus_client at every scrape cost more CPU than polling
the cluster. Here the families a poll changes (groups, partitions, Streams, the
sidecar's view) are written as text when a poll is recorded and gzip-compressed
as they are written (only the compressed text is kept: the plain one, held twice
while a poll replaced it, was a large share of the agent's memory; the
per-partition families are compressed while they are written, since their text
before compression was the agent's peak); a scrape adds the few families that
change between polls (poll counters, the sink's delivery, the
``__consumer_offsets`` readers), written fresh, in front. A scraper that does
not accept gzip gets the body decompressed for it (Prometheus always accepts
gzip).

The text is the Prometheus text format 0.0.4, the same bytes prometheus_client's
``generate_latest`` writes for ``AgentCollector`` (tests compare them): the same
``AgentMetrics`` code makes the families, only the family objects differ, except
the per-partition ones, which ``bulk_families`` writes a group at a time
(``text_format`` writes the lines).
OpenMetrics is not offered; Prometheus and every scraper accept this format.
A gzip answer is gzip members one after the other (the fresh head, then the
cached body: a member per per-partition family and members for the families
between them), which gzip readers (Go's, Python's, curl's) read as one stream.
"""

import itertools
import threading
import zlib
from collections.abc import Iterable, Iterator

from agent import fast_gzip
from agent.exposition.agent_metrics import AgentMetrics, Family, LagGranularity
from agent.exposition.agent_state import AgentState
from agent.exposition.bulk_families import BulkTextMetrics
from agent.exposition.scrape_body import Exposition
from agent.exposition.text_format import PackedTextFamily, TextFamily

_GZIP_WBITS = 16 + zlib.MAX_WBITS  # zlib's way of reading a gzip member


def _text(families: Iterable[Family]) -> bytes:
    text = bytearray()
    for family in families:
        assert isinstance(family, TextFamily)  # noqa: S101 - TextFamilies makes only these
        text += family.text
    return bytes(text)


def _gzipped(families: Iterable[Family]) -> tuple[bytes, int]:
    """The families' text as gzip members, and the length of the text: the families
    compressed as they were written (``PackedTextFamily``) are members of their own,
    the others are compressed family by family into members between them."""
    members: list[bytes] = []
    size = 0
    packer, parts = None, []
    for family in families:
        if isinstance(family, PackedTextFamily):
            if packer is not None:
                members.append(b"".join([*parts, packer.flush()]))
                packer, parts = None, []
            members.append(family.member())
            size += family.length
            continue
        assert isinstance(family, TextFamily)  # noqa: S101 - TextFamilies makes only these
        if packer is None:
            packer = fast_gzip.packer()
        parts.append(packer.compress(family.text))
        size += len(family.text)
        family.text = bytearray()  # the family object may outlive this loop
    if packer is not None:
        members.append(b"".join([*parts, packer.flush()]))
    return b"".join(members), size


_PLAIN_CHUNK = 256 * 1024


def _unpacked(body: bytes) -> Iterator[bytes]:
    """The text of gzip members one after the other, in pieces (never the whole
    text at once)."""
    data = body
    while data:
        unpacker = zlib.decompressobj(_GZIP_WBITS)
        while data and not unpacker.eof:
            piece = unpacker.decompress(data, _PLAIN_CHUNK)
            if piece:
                yield piece
            data = unpacker.unconsumed_tail
        if not unpacker.eof:
            # All input given, some text still inside zlib. (Not called at a member's
            # end: flush would read the next member's bytes into unused_data again.)
            yield unpacker.flush()
            return
        data = unpacker.unused_data  # the next member


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
        packed = fast_gzip.gzip_member(head)
        return Exposition([packed, body], len(packed) + len(body), True)
