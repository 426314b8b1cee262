"""The value types of settings and their text forms: durations, sizes, host:port, secrets.

Parsers take what YAML produced and return the typed value, or raise
``ValueError`` saying what is allowed; the reader puts the key's path in front.
"""

import hmac
import math
import re
from dataclasses import dataclass
from fractions import Fraction

from agent import redaction

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h)")
_DURATION_UNITS = {
    "ms": Fraction(1, 1000),
    "s": Fraction(1),
    "m": Fraction(60),
    "h": Fraction(3600),
}
_DURATION_FORMS = "a duration such as 500ms, 10s, 5m, 1h or a number of seconds"

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]i?b|b)", re.IGNORECASE)
_SIZE_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_SIZE_FORMS = "a size such as 500KB, 64MiB, 1GiB or a number of bytes"

# Host names and IPv4 addresses; IPv6 addresses go in brackets.
_HOST = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?")
_PORT = re.compile(r"[0-9]{1,5}")  # ASCII digits: str.isdigit() also takes "²" and "١٢"
_MAX_PORT = 65535
# Longest duration accepted: far beyond any sensible interval, and well inside
# what datetime.timedelta (APScheduler's intervals) can hold.
MAX_DURATION_SECONDS = 365 * 24 * 3600
_SHOWN_TEXT = 60


def shown(value: object) -> str:
    """How an input value appears in a message: text quoted, containers by kind.

    >>> shown("SCRAM"), shown([1]), shown(None), shown(True)
    ("'SCRAM'", 'a list', 'nothing', 'true')
    """
    if isinstance(value, str) and len(value) > _SHOWN_TEXT:
        return repr(value[: _SHOWN_TEXT - 3]) + "..."  # a pasted blob stays one readable line
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        return repr(value)
    named = {type(None): "nothing", bool: "false", list: "a list", dict: "a mapping"}
    if value is True:
        return "true"
    for kind, name in named.items():
        if isinstance(value, kind):
            return name
    return f"a {type(value).__name__}"


def kind_of(value: object) -> str:
    """What an input value is, without showing it (for secrets)."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    return shown(value)


def _number(value: object) -> Fraction | None:
    """A bare YAML number as an exact fraction; None for anything else (bools included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return Fraction(value)


def parse_duration(value: object) -> float:
    """Seconds (> 0) from ``"500ms"``, ``"10s"``, ``"5m"``, ``"1h"`` or a bare number of seconds.

    >>> parse_duration("5m"), parse_duration("500ms"), parse_duration(2)
    (300.0, 0.5, 2.0)
    """
    seconds = _number(value)
    if seconds is None and isinstance(value, str):
        match = _DURATION.fullmatch(value.strip())
        if match:
            seconds = Fraction(match[1]) * _DURATION_UNITS[match[2]]
    if seconds is None:
        raise ValueError(f"expected {_DURATION_FORMS}, got {shown(value)}")
    if seconds <= 0:
        raise ValueError(f"must be more than zero, got {shown(value)}")
    if seconds > MAX_DURATION_SECONDS:
        raise ValueError(
            f"must be at most {format_duration(MAX_DURATION_SECONDS)} (a year), got {shown(value)}"
        )
    return float(seconds)


def parse_size(value: object) -> int:
    """Bytes (> 0) from ``"64MiB"``, ``"1GiB"``, ``"500KB"`` (decimal) or a bare byte count.

    >>> parse_size("64MiB"), parse_size("500KB"), parse_size(4096)
    (67108864, 500000, 4096)
    """
    size = _number(value)
    if size is None and isinstance(value, str):
        match = _SIZE.fullmatch(value.strip())
        if match:
            size = Fraction(match[1]) * _SIZE_UNITS[match[2].lower()]
    if size is None:
        raise ValueError(f"expected {_SIZE_FORMS}, got {shown(value)}")
    if size <= 0:
        raise ValueError(f"must be more than zero, got {shown(value)}")
    if size.denominator != 1:
        raise ValueError(f"must be a whole number of bytes, got {shown(value)}")
    return int(size)


def format_duration(seconds: float) -> str:
    """The shortest exact text form of a duration.

    >>> format_duration(1800), format_duration(0.5), format_duration(90)
    ('30m', '500ms', '90s')
    """
    exact = Fraction(seconds).limit_denominator(1000)
    for unit, scale in (("h", 3600), ("m", 60), ("s", 1)):
        if exact % scale == 0:
            return f"{int(exact / scale)}{unit}"
    milliseconds = exact * 1000
    if milliseconds.denominator == 1:
        return f"{int(milliseconds)}ms"
    return f"{seconds:g}s"


def format_size(size: int) -> str:
    """The shortest exact text form of a byte count.

    >>> format_size(8 * 2**20), format_size(500_000), format_size(1500)
    ('8MiB', '500KB', '1500B')
    """
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size % scale == 0:
            return f"{size // scale}{unit}"
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if size % scale == 0:
            return f"{size // scale}{unit}"
    return f"{size}B"


@dataclass(frozen=True, slots=True)
class HostPort:
    """A TCP endpoint; ``str()`` gives ``host:port`` (IPv6 hosts in brackets).

    >>> HostPort.parse("broker-1:9092"), str(HostPort.parse("[::1]:9092"))
    (HostPort(host='broker-1', port=9092), '[::1]:9092')
    """

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @classmethod
    def parse(cls, text: str) -> "HostPort":
        spelled = text.strip()
        if "://" in spelled:
            raise ValueError(f"expected host:port without a scheme, got {text!r}")
        host, colon, port = spelled.rpartition(":")
        if not colon:
            raise ValueError(f"expected host:port (the port is missing), got {text!r}")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
            if not host or not all(c in "0123456789abcdefABCDEF:." for c in host):
                raise ValueError(f"expected an IPv6 address inside [], got {text!r}")
        elif ":" in host:
            raise ValueError(f"put an IPv6 address in brackets ([::1]:9092), got {text!r}")
        elif not _HOST.fullmatch(host):
            raise ValueError(f"expected host:port with a host name or address, got {text!r}")
        if not _PORT.fullmatch(port) or not 1 <= int(port) <= _MAX_PORT:
            raise ValueError(f"expected host:port with a port from 1 to 65535, got {text!r}")
        return cls(host, int(port))


class Secret:
    """A password or passphrase that never shows its value, except through ``reveal()``.

    ``origin`` says where it came from (``environment variable X``, ``file P``,
    ``the config file``) and may be shown. Creating one registers the value
    with ``agent.redaction``, so logs and errors show it as ``***``.

    >>> s = Secret("hunter2", "environment variable DB_PASSWORD")
    >>> s, f"{s}", s.reveal()
    (Secret('***'), '***', 'hunter2')
    """

    __slots__ = ("_value", "origin")

    def __init__(self, value: str, origin: str = "the config file") -> None:
        self._value = value
        self.origin = origin
        # Every log line and error line of this process blanks the value from now on.
        redaction.remember(value)

    def reveal(self) -> str:
        """The value itself: call only where it is handed to the Kafka client."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash(self._value)
