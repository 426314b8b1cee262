"""What the benches read of a process from /proc (Linux)."""

from pathlib import Path


def proc_status_kb(pid: int, key: str) -> int:
    """A ``kB`` field of ``/proc/<pid>/status``, e.g. ``VmHWM`` (the peak RSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)
