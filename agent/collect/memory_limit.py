"""The app container's memory limit, as the sidecar can know it.

In Kubernetes every container has its own cgroup, so the sidecar's own
``/sys/fs/cgroup/memory.max`` is the sidecar's limit, not the app's. Two ways in:

- a number given in the configuration, typically the app container's
  ``limits.memory`` passed by the Downward API
  (``resourceFieldRef: {containerName: app, resource: limits.memory}``) as an
  environment variable; read once, at start;
- a cgroup file naming the app's limit (cgroup v2 ``memory.max``, cgroup v1
  ``memory.limit_in_bytes``), read at every poll: on a node or in a test where the
  app's cgroup is visible.

``max`` (v2) and v1's "no limit" (the page counter's maximum, about 2^63 rounded
down to a page) mean unlimited: no limit to judge against.

>>> parse_memory_limit(b"2147483648\\n"), parse_memory_limit(b"max\\n")
(2147483648, None)
>>> parse_memory_limit(b"9223372036854771712"), parse_memory_limit(b"lots")
(None, 'expected a byte count or "max", got \\'lots\\'')
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Final

# cgroup v1 reports "no limit" as PAGE_COUNTER_MAX pages, a little under 2^63; no
# real machine has 2^62 bytes.
_UNLIMITED_FROM: Final = 1 << 62
_MAX_FILE_BYTES: Final = 64


@dataclass(frozen=True, slots=True)
class MemoryLimit:
    bytes: int | None  # None: unknown or unlimited
    source: str | None = None  # where it came from, e.g. "file /sys/fs/cgroup/memory.max"
    error: str | None = None  # why it could not be read


def parse_memory_limit(data: bytes) -> int | str | None:
    """Bytes from a cgroup memory limit file; None for unlimited; the reason as text if
    the content is not a limit."""
    text = data.decode("ascii", errors="replace").strip()
    if text == "max":
        return None
    if not text.isdigit():
        return f'expected a byte count or "max", got {text[:40]!r}'
    value = int(text)
    if value <= 0:
        return f"expected a positive byte count, got {text}"
    return None if value >= _UNLIMITED_FROM else value


def read_memory_limit(path: Path) -> MemoryLimit:
    """The limit in ``path`` (a cgroup ``memory.max`` or ``memory.limit_in_bytes``)."""
    source = f"file {path}"
    try:
        with path.open("rb") as f:
            data = f.read(_MAX_FILE_BYTES)
    except OSError as e:
        return MemoryLimit(None, source, f"cannot read {path}: {e.strerror or type(e).__name__}")
    parsed = parse_memory_limit(data)
    if isinstance(parsed, str):
        return MemoryLimit(None, source, f"{path}: {parsed}")
    return MemoryLimit(parsed, source if parsed is not None else f"{source} (unlimited)")
