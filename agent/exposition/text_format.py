"""The Prometheus text format 0.0.4, written as prometheus_client's ``generate_latest``
writes it: the same HELP escaping, labels in name order, label values escaped the
same way and numbers as Go prints them. ``metrics_cache`` serves what is written
here; tests compare the bytes with prometheus_client's.
"""

from collections.abc import Sequence

from prometheus_client.utils import floatToGoString

from agent import fast_gzip

_PLAIN_INTEGERS = 999_999  # up to here, floatToGoString(n) is "n.0" (Go's exponent starts at 1e6)
# Up to here every int is a float exactly, so its digits are the float's (and below
# 10**16 Python writes the float without an exponent, as floatToGoString expects).
_EXACT_FLOAT_INTEGERS = 2**53
_MINUS_INF = float("-inf")
_GO_EXPONENT_FROM = 1e6  # floatToGoString writes positive numbers from here as Go does
# The exponents Go writes for 10**6 .. 2**53 (up to 16 digits), by a number's digits less one.
_GO_EXPONENTS = tuple(f"e+{n:02d}" for n in range(16))


def number_text(value: float) -> str:
    """A sample's value, as ``floatToGoString`` writes it (the common cases without it)."""
    if type(value) is int:
        if -_PLAIN_INTEGERS <= value <= _PLAIN_INTEGERS:
            return f"{value}.0"
        if _PLAIN_INTEGERS < value <= _EXACT_FLOAT_INTEGERS:
            # Offsets of a real cluster, in the millions and more: 1,234,567 is
            # "1.234567e+06", 10**10 "1e+10". A poll of 20,000 partitions writes
            # 60,000 of them: one strip of the digits and a ready exponent cost
            # far less than floatToGoString.
            digits = str(value)
            significant = digits.rstrip("0")
            exponent = _GO_EXPONENTS[len(digits) - 1]
            if len(significant) == 1:
                return significant + exponent
            return f"{significant[0]}.{significant[1:]}{exponent}"
    if type(value) is float and _MINUS_INF < value < _GO_EXPONENT_FROM:
        return repr(value)  # what floatToGoString returns for these (NaN fails the test)
    return str(floatToGoString(value))  # type: ignore[no-untyped-call]


def _needs_escape(text: str) -> bool:
    # Three scans of a short string: quicker than a regular expression's search.
    return "\\" in text or "\n" in text or '"' in text


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def label_value(value: str) -> str:
    """A label value as it stands between the quotes."""
    return _escape(value) if _needs_escape(value) else value


def label_template(names: Sequence[str]) -> str:
    """A ``str.format`` template of a series' labels (``{a="{0}",b="{1}"}``), placed in
    name order as prometheus_client writes them: it takes the values, already passed
    through ``label_value``, in the order of ``names``."""
    order = sorted(range(len(names)), key=lambda i: names[i])
    return "{{" + ",".join(f'{names[i]}="{{{i}}}"' for i in order) + "}}"


class _LastLabels:
    """The label text written last, by label names and values: a group's members, lag,
    lag in seconds, generation, epoch and metadata bytes are families with the same
    labels in turn."""

    __slots__ = ("names", "text", "values")

    def __init__(self) -> None:
        self.names: tuple[str, ...] = ()
        self.values: Sequence[str] = ()
        self.text = ""


class TextFamily:
    """A metric family that writes its lines as samples are added, as UTF-8 bytes into
    one buffer (not a list of 20,000 strings: those raised the agent's peak memory)."""

    __slots__ = ("_last", "_names", "_template", "sample", "text")

    def __init__(
        self, name: str, documentation: str, labels: list[str], kind: str, last: _LastLabels
    ) -> None:
        # The name on the sample lines: prometheus_client adds _total to a counter's.
        self.sample = f"{name}_total" if kind == "counter" else name
        help_text = documentation.replace("\\", r"\\").replace("\n", r"\n")
        self.text = bytearray(
            f"# HELP {self.sample} {help_text}\n# TYPE {self.sample} {kind}\n".encode()
        )
        self._names = tuple(labels)
        self._template = label_template(labels)
        self._last = last

    def add_metric(self, labels: Sequence[str], value: float) -> None:
        last = self._last
        if last.values == labels and last.names == self._names:
            text = last.text
        elif not labels:
            text = ""
        else:
            if _needs_escape("".join(labels)):
                text = self._template.format(*[_escape(v) for v in labels])
            else:
                text = self._template.format(*labels)
            # A copy: a caller may reuse its list with other values.
            last.names, last.values, last.text = self._names, list(labels), text
        self.text += f"{self.sample}{text} {number_text(value)}\n".encode()

    def add_lines(self, lines: list[str]) -> None:
        """Sample lines written by the caller (each ends with a newline), in one piece."""
        self.text += "".join(lines).encode()


# Text a packed family holds before compressing it: small next to what the three
# lag families of 20,000 partitions wrote before they were compressed.
_PACK_FROM_BYTES = 256 * 1024


class PackedTextFamily(TextFamily):
    """A family compressed as it is written, into a gzip member of its own.

    The per-partition families are written side by side a group at a time, so each
    is complete only after the last group; held as text until then, they were the
    agent's peak memory at every poll. ``member`` ends the member; ``length`` is the
    text's length.
    """

    __slots__ = ("_packer", "_parts", "length")

    def __init__(
        self, name: str, documentation: str, labels: list[str], kind: str, last: _LastLabels
    ) -> None:
        super().__init__(name, documentation, labels, kind, last)
        self._packer = fast_gzip.packer()
        self._parts: list[bytes] = []
        self.length = 0

    def add_lines(self, lines: list[str]) -> None:
        super().add_lines(lines)
        if len(self.text) >= _PACK_FROM_BYTES:
            self._pack()

    def _pack(self) -> None:
        self.length += len(self.text)
        self._parts.append(self._packer.compress(self.text))
        self.text = bytearray()

    def member(self) -> bytes:
        """The family's text as one gzip member (once: the family is done)."""
        self._pack()
        self._parts.append(self._packer.flush())
        return b"".join(self._parts)


class TextFamilies:
    def __init__(self) -> None:
        self._last = _LastLabels()

    def gauge(self, name: str, documentation: str, labels: list[str]) -> TextFamily:
        return TextFamily(name, documentation, labels, "gauge", self._last)

    def packed_gauge(self, name: str, documentation: str, labels: list[str]) -> PackedTextFamily:
        """A gauge compressed as it is written (for families of many series)."""
        return PackedTextFamily(name, documentation, labels, "gauge", self._last)

    def counter(self, name: str, documentation: str, labels: list[str]) -> TextFamily:
        return TextFamily(name, documentation, labels, "counter", self._last)
