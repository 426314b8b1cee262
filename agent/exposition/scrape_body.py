"""One /metrics answer as the HTTP server sends it: pieces, their length, their encoding.

Both the agent's and the job's pages are kept between scrapes in this shape, so
the server needs nothing else of either.
"""

from collections.abc import Iterable
from typing import NamedTuple

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Exposition(NamedTuple):
    """One scrape's answer: its pieces, written one after the other, and their length."""

    chunks: Iterable[bytes]
    length: int
    gzipped: bool
