"""Where ksmon keeps downloads and the data of its long-running processes.

The agent, the job and the demo's embedded broker all use these directories,
so they live outside any one of them.
"""

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path


def cache_dir() -> Path:
    """Downloads (Kafka, the job's Spark packages, fixture builds): ``$KSMON_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/ksmon``, else ``~/.cache/ksmon``."""
    explicit = os.environ.get("KSMON_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "ksmon"


def state_dir() -> Path:
    """Data of long-running local processes (``ksmon kafka start``, the job's checkpoint):
    ``$KSMON_STATE_DIR``, else ``$XDG_STATE_HOME/ksmon``, else ``~/.local/state/ksmon``."""
    explicit = os.environ.get("KSMON_STATE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "state"
    return base / "ksmon"


def ensure_built(destination: Path, build: Callable[[Path], None]) -> Path:
    """Return ``destination``, building it first with ``build(tmp_dir)`` unless a
    complete copy is already there.

    The build writes into a temporary sibling directory that is renamed into
    place only when it succeeded, so an interrupted download never leaves a
    half-filled directory that looks complete. A file lock serialises
    concurrent ksmon processes (the demo and a test run, say).
    """
    marker = destination / ".complete"
    if marker.is_file():
        return destination
    destination.parent.mkdir(parents=True, exist_ok=True)
    with (destination.parent / f".{destination.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file():
            return destination
        scratch = destination.parent / f".{destination.name}.tmp-{os.getpid()}"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        try:
            build(scratch)
            (scratch / ".complete").touch()
            shutil.rmtree(destination, ignore_errors=True)
            scratch.rename(destination)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return destination
