"""The filesystem holding the app's state directory: its size and the bytes still free.

One ``statvfs`` of the configured ``state.dir`` per poll, as the pod sees that
mount (an emptyDir shares the node's disk, a PersistentVolumeClaim is its own
filesystem). Free means free to an unprivileged writer (``f_bavail``, what
``df`` shows as Avail), which is what the app's RocksDB can still use; the
blocks only root may fill are left out. A filesystem that cannot be asked is
the reason as text, never an exception.
"""

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class StateVolume:
    size_bytes: int | None = None  # f_blocks * f_frsize
    available_bytes: int | None = None  # f_bavail * f_frsize
    error: str | None = None  # why it could not be read


def read_state_volume(path: Path) -> StateVolume:
    try:
        stats = os.statvfs(path)
    except OSError as e:
        return StateVolume(error=f"{path}: {e.strerror or type(e).__name__}")
    return StateVolume(stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize)
