"""Local TCP ports for the embedded broker and fixture apps."""

import errno
import socket

from agent.errors import SetupError

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A port that is free on 127.0.0.1 right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


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
