"""The secret values this process holds, so that every way out can blank them.

A ``Secret`` from the configuration remembers its value here when it is
created. Log records (messages, tracebacks, stack dumps), the command line's
error line, and anything else that prints text pass through ``redact``, so a
password that a library puts into a log line or an exception message shows
as ``***``. Values shorter than three characters are not redacted: blanking
them would mangle every line, and no real password is that short.
"""

import threading

_MIN_LENGTH = 3
_known: set[str] = set()
_ordered: tuple[str, ...] = ()  # longest first, so a secret containing another goes whole
_lock = threading.Lock()


def remember(value: str) -> None:
    """Treat ``value`` as secret from now on."""
    global _ordered  # noqa: PLW0603 - one registry per process, by design
    if len(value) < _MIN_LENGTH:
        return
    with _lock:
        if value not in _known:
            _known.add(value)
            _ordered = tuple(sorted(_known, key=len, reverse=True))


def redact(text: str) -> str:
    """``text`` with every remembered secret replaced by ``***``."""
    for secret in _ordered:
        if secret in text:
            text = text.replace(secret, "***")
    return text


def contains_secret(text: str) -> bool:
    return any(secret in text for secret in _ordered)
