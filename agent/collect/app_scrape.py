"""Scrape the co-located app's Prometheus endpoint, keeping only the lines asked for.

A Kafka Streams app's JMX exporter serves thousands of lines (JVM, RocksDB,
per-partition client metrics); the sidecar reads a few hundred. Lines are
filtered while the body streams in, so memory holds only those. The whole
scrape, not each socket read, is bounded by ``timeout``. Failures come back
as a ``Scrape`` with an ``error`` saying what to check, never as an exception.
"""

import http.client
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from agent import __version__

_MAX_LINE = 1 << 20  # a longer line is not a metric sample worth keeping


@dataclass(frozen=True, slots=True)
class Scrape:
    text: str = ""  # the kept lines
    error: str | None = None  # why the scrape failed; None when it worked
    bytes_read: int = 0


def scrape_metrics(url: str, timeout: float, keep: Callable[[bytes], bool]) -> Scrape:
    """GET ``url`` and return its lines for which ``keep`` is true, or why it failed."""
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(  # noqa: S310 - the URL is validated config: http(s) only
        url, headers={"Accept": "text/plain", "User-Agent": f"ksmon-sidecar/{__version__}"}
    )
    kept: list[str] = []
    read = 0
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            while True:
                line = response.readline(_MAX_LINE)
                if not line:
                    break
                read += len(line)
                if keep(line):
                    kept.append(line.decode("utf-8", errors="replace"))
                if time.monotonic() > deadline:
                    return Scrape(
                        error=f"{url} did not finish within {timeout:g}s", bytes_read=read
                    )
    except urllib.error.HTTPError as e:
        return Scrape(error=f"{url} answered HTTP {e.code} {e.reason}", bytes_read=read)
    except urllib.error.URLError as e:
        return Scrape(error=f"cannot reach {url}: {_reason(e.reason)}", bytes_read=read)
    except TimeoutError:
        return Scrape(error=f"{url} did not answer within {timeout:g}s", bytes_read=read)
    except (OSError, http.client.HTTPException) as e:
        return Scrape(error=f"scraping {url} failed: {_reason(e)}", bytes_read=read)
    return Scrape(text="".join(kept), bytes_read=read)


def _reason(error: object) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__
