"""Local TCP ports for the embedded broker and fixture apps."""

import errno
import random
import socket
from pathlib import Path

from agent.errors import SetupError

LOOPBACK = "127.0.0.1"

# Ports handed out below the kernel's ephemeral range: a port the kernel picks
# for bind(0) comes from the same range as the local ports of outgoing
# connections, so between picking it and the server binding it, any client
# connection (the broker's, Spark's, a Streams app's) may take it. CI lost a
# run that way ("Address already in use" for a sidecar's /metrics).
_LOWEST_PORT = 10000
_EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_DEFAULT_EPHEMERAL_RANGE = (32768, 60999)
_handed_out: set[int] = set()
# Its own generator, seeded from the OS: a test that seeds `random` must not
# make two processes hand out the same ports.
_chooser = random.SystemRandom()
_MIN_ROOM = 1000  # fewer candidate ports than this below the range: let the kernel pick


def ephemeral_range(source: Path = _EPHEMERAL_RANGE_FILE) -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports (inclusive)."""
    try:
        low, high = (int(field) for field in source.read_text().split())
    except (OSError, ValueError):
        return _DEFAULT_EPHEMERAL_RANGE
    return low, high


def free_port() -> int:
    """A port free on 127.0.0.1 right now, outside the ephemeral range, and not
    handed out before by this process."""
    low, _high = ephemeral_range()
    if low - _LOWEST_PORT >= _MIN_ROOM:
        for _ in range(500):
            port = _chooser.randrange(_LOWEST_PORT, low)
            if port not in _handed_out and _can_bind(port):
                _handed_out.add(port)
                return port
    # No room below the ephemeral range (or it is full): let the kernel pick.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        port = int(s.getsockname()[1])
    _handed_out.add(port)
    return port


def _can_bind(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def ensure_free(port: int, what: str) -> None:
    """Raise a clear error if ``port`` on 127.0.0.1 cannot be bound."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((LOOPBACK, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise SetupError(
                    f"port {port} on {LOOPBACK} is already in use, so {what} cannot listen "
                    "there; stop whatever holds it or choose another port"
                ) from e
            raise SetupError(f"cannot listen on {LOOPBACK}:{port} for {what}: {e}") from e


def is_listening(port: int, host: str = LOOPBACK, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
