"""Work-arounds for kafka-python behaviour that would mislead ksmon's users, and
the one producer setting it does not offer.

kafka-python 3.0's transports read everything a socket holds in one loop and,
when that loop ends at end-of-file, report only the disconnection: bytes that
arrived just before the close are never handed to the protocol. A broker that
rejects a login sends its SaslAuthenticate error response and closes the
connection at once, so under load (both arrive in one read) the user saw
"socket disconnected" instead of "Authentication failed: Invalid username or
password". The wrapper below delivers the bytes first and reports the
disconnection on the next read, which the closed socket makes immediate.

kafka-python gzips every record batch it produces with zlib at level 9, with no
setting to change it. Compressing ksmon's snapshots costs many times more CPU
even at zlib's level 6 (Kafka's Java producer's default) than with ISA-L at its
level 1 (``fast_gzip``), whose output is only somewhat larger: its batches are
made so.

``install()`` is idempotent and is called where ksmon creates Kafka clients.
"""

import gzip
import threading
from collections.abc import Callable
from typing import Any

from agent import fast_gzip

_installed = False
_lock = threading.Lock()

RecvResult = tuple[bytes, BaseException | None]


def deliver_before_disconnect(
    sock_recv: Callable[[Any], RecvResult],
) -> Callable[[Any], RecvResult]:
    """Wrap a transport's ``_sock_recv`` so data read before EOF is delivered first."""

    def wrapped(transport: Any) -> RecvResult:  # noqa: ANN401 - kafka-python's untyped transport
        pending: BaseException | None = getattr(transport, "_ksmon_pending_error", None)
        if pending is not None:
            transport._ksmon_pending_error = None
            return b"", pending
        data, error = sock_recv(transport)
        if data and error is not None:
            transport._ksmon_pending_error = error
            return data, None
        return data, error

    wrapped.ksmon_wrapped = True  # type: ignore[attr-defined]
    return wrapped


def install() -> None:
    """Apply the work-arounds to kafka-python's classes (once per process)."""
    global _installed  # noqa: PLW0603 - one process-wide switch
    with _lock:
        if _installed:
            return
        from kafka.net import transport  # noqa: PLC0415 - kafka-python is slow to import
        from kafka.record import default_records  # noqa: PLC0415

        for cls in (transport.KafkaTCPTransport, transport.KafkaSSLTransport):
            original = cls.__dict__.get("_sock_recv")
            if original is not None and not getattr(original, "ksmon_wrapped", False):
                cls._sock_recv = deliver_before_disconnect(original)
        # The batch builder calls this module-level function by name for each batch.
        if hasattr(default_records, "gzip_encode"):
            default_records.gzip_encode = gzip_batch
        _installed = True


def gzip_batch(payload: bytes, compresslevel: int | None = None) -> bytes:
    """A record batch's records as one gzip member: made by ``fast_gzip`` unless a zlib
    level is asked for (kafka-python asks for none)."""
    if compresslevel:
        return gzip.compress(payload, compresslevel=compresslevel, mtime=0)
    return fast_gzip.gzip_member(payload)
