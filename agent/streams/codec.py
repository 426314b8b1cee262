"""A bounds-checked big-endian byte reader for Kafka's wire encodings, and ``DecodeError``.

Two encoder families write the bytes the decoders in this package read
(``streams-internals.md`` section 0.1):

* Kafka's *generated messages*: int16-length strings, int32-length bytes and
  int32-count arrays; in flexible versions unsigned-varint ``length + 1`` and a
  tagged-field section after every struct.
* ``java.io.DataOutputStream`` (the hand-written ``AssignmentInfo``):
  ``writeUTF`` modified UTF-8 with an *unsigned* int16 length, and
  ``writeChars`` UTF-16BE.

Decoders raise ``MalformedError`` from deep inside; ``run_decoder`` is the one
place that turns it (and the few stdlib errors that slicing, ``struct`` and
codecs can raise) into a ``DecodeError`` value, so no public decoder raises.
"""

import base64
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar

T = TypeVar("T")

_I8: Final = struct.Struct(">b")
_I16: Final = struct.Struct(">h")
_U16: Final = struct.Struct(">H")
_I32: Final = struct.Struct(">i")
_I64: Final = struct.Struct(">q")

INT32_MAX: Final = 2**31 - 1
INT64_MAX: Final = 2**63 - 1
# A varint for an int32 never needs more than 5 bytes (7 payload bits each);
# Kafka's readUnsignedVarint rejects longer ones too.
_MAX_VARINT_BYTES: Final = 5
# Kafka's generated readers refuse compact strings longer than an int16 can say,
# so that a flexible string never decodes to something its classic twin cannot carry.
_MAX_STRING_LENGTH: Final = 0x7FFF


@dataclass(frozen=True, slots=True)
class DecodeError:
    """Why some bytes did not decode. A value, never raised.

    ``what`` names the format ("SubscriptionInfo"), ``reason`` says what was
    wrong in words a person can act on, ``offset`` is the byte position where
    reading stopped and ``version`` the format version when it was known.
    """

    what: str
    reason: str
    offset: int | None = None
    version: int | None = None

    def __str__(self) -> str:
        where = f" v{self.version}" if self.version is not None else ""
        at = f" (at byte {self.offset})" if self.offset is not None else ""
        return f"{self.what}{where}: {self.reason}{at}"


class MalformedError(Exception):
    """Internal signal that the input does not fit the layout; see ``run_decoder``."""

    def __init__(self, reason: str, offset: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offset = offset


class Reader:
    """Reads big-endian values from ``data``, refusing to read past its end.

    Every read checks the bytes left first, so a truncated or lying input gives
    a ``MalformedError`` that says how many bytes were needed and where. Set
    ``version`` once it is known: ``run_decoder`` copies it into the error.
    """

    __slots__ = ("_data", "_end", "pos", "version")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._end = len(data)
        self.pos = 0
        self.version: int | None = None

    @property
    def remaining(self) -> int:
        return self._end - self.pos

    def fail(self, reason: str) -> MalformedError:
        """A failure at the current position, for the caller to raise."""
        return MalformedError(reason, self.pos)

    def _need(self, size: int) -> int:
        start = self.pos
        if size < 0:  # would move backwards; every caller checks, this guards the next one
            raise MalformedError(f"negative length {size}", start)
        if size > self._end - start:
            raise MalformedError(
                f"truncated: needed {size} bytes at offset {start}, {self._end - start} left",
                start,
            )
        self.pos = start + size
        return start

    def expect_end(self) -> None:
        """Fail if bytes are left after a message whose layout we know completely."""
        if self.pos != self._end:
            raise MalformedError(f"{self._end - self.pos} trailing bytes", self.pos)

    # --- fixed-size values -------------------------------------------------------------------

    def int8(self) -> int:
        value: int = _I8.unpack_from(self._data, self._need(1))[0]
        return value

    def int16(self) -> int:
        value: int = _I16.unpack_from(self._data, self._need(2))[0]
        return value

    def uint16(self) -> int:
        value: int = _U16.unpack_from(self._data, self._need(2))[0]
        return value

    def int32(self) -> int:
        value: int = _I32.unpack_from(self._data, self._need(4))[0]
        return value

    def int64(self) -> int:
        value: int = _I64.unpack_from(self._data, self._need(8))[0]
        return value

    def raw(self, size: int) -> bytes:
        start = self._need(size)
        return bytes(self._data[start : start + size])

    def unpack(self, fmt: struct.Struct) -> tuple[int, ...]:
        """Several fixed-size values in one call (e.g. ``>iiq``), for hot loops."""
        values: tuple[int, ...] = fmt.unpack_from(self._data, self._need(fmt.size))
        return values

    def unpack_many(self, fmt: struct.Struct, count: int) -> list[tuple[int, ...]]:
        """``count`` consecutive fixed-size records, e.g. (partition, offsetSum) pairs."""
        size = fmt.size * count
        start = self._need(size)
        return list(fmt.iter_unpack(memoryview(self._data)[start : start + size]))

    def int32s(self, count: int) -> tuple[int, ...]:
        """``count`` int32s in one ``struct`` call instead of a Python loop."""
        values: tuple[int, ...] = struct.unpack_from(
            f">{count}i", self._data, self._need(4 * count)
        )
        return values

    def uuid(self) -> str:
        """A java.util.UUID (two int64s) as its canonical 8-4-4-4-12 text."""
        h = self.raw(16).hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def kafka_uuid(self) -> str:
        """A Kafka ``Uuid`` (topic ids) as Kafka prints it: URL-safe base64, no padding."""
        return base64.urlsafe_b64encode(self.raw(16)).rstrip(b"=").decode("ascii")

    # --- counts ------------------------------------------------------------------------------

    def _checked_count(self, count: int, min_element_size: int, at: int) -> int:
        # Checked before any loop or allocation: a corrupt count of two billion
        # must cost one comparison, not two billion iterations.
        if count * min_element_size > self._end - self.pos:
            raise MalformedError(
                f"count {count} needs at least {count * min_element_size} bytes, "
                f"{self._end - self.pos} left",
                at,
            )
        return count

    def count(self, min_element_size: int) -> int:
        """An int32 element count of a non-nullable array."""
        at = self.pos
        count = self.int32()
        if count < 0:
            raise MalformedError(f"negative count {count}", at)
        return self._checked_count(count, min_element_size, at)

    def nullable_count(self, min_element_size: int) -> int | None:
        """An int32 element count where -1 means a null array."""
        at = self.pos
        count = self.int32()
        if count == -1:
            return None
        if count < 0:
            raise MalformedError(f"negative count {count}", at)
        return self._checked_count(count, min_element_size, at)

    # --- generated-message strings and bytes (non-flexible) ----------------------------------

    def nullable_string(self) -> str | None:
        """int16 length + UTF-8; -1 is null."""
        at = self.pos
        length = self.int16()
        if length == -1:
            return None
        if length < 0:
            raise MalformedError(f"negative string length {length}", at)
        return decode_utf8(self.raw(length))

    def string(self) -> str:
        at = self.pos
        value = self.nullable_string()
        if value is None:
            raise MalformedError("null in a non-nullable string", at)
        return value

    def nullable_bytes(self) -> bytes | None:
        """int32 length + bytes; -1 is null."""
        at = self.pos
        length = self.int32()
        if length == -1:
            return None
        if length < 0:
            raise MalformedError(f"negative bytes length {length}", at)
        return self.raw(length)

    def bytes_(self) -> bytes:
        at = self.pos
        value = self.nullable_bytes()
        if value is None:
            raise MalformedError("null in a non-nullable bytes field", at)
        return value

    # --- java.io.DataOutputStream ------------------------------------------------------------

    def java_utf(self) -> str:
        """``writeUTF``: unsigned int16 byte length + modified UTF-8."""
        return decode_modified_utf8(self.raw(self.uint16()))

    def java_chars(self, count: int) -> str:
        """``writeChars``: ``count`` UTF-16BE code units."""
        if count < 0:
            raise MalformedError(f"negative char count {count}", self.pos)
        # Java strings may hold lone surrogates; they become U+FFFD here so the
        # text stays encodable wherever it is shown next.
        return self.raw(2 * count).decode("utf-16-be", "replace")

    # --- flexible versions -------------------------------------------------------------------

    def uvarint(self) -> int:
        data, pos, end = self._data, self.pos, self._end
        value = 0
        for i in range(_MAX_VARINT_BYTES):
            if pos + i >= end:
                raise MalformedError(f"truncated: varint runs past the end at offset {end}", pos)
            byte = data[pos + i]
            value |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                self.pos = pos + i + 1
                return value
        raise MalformedError("varint longer than 5 bytes", pos)

    def _compact_length(self) -> int:
        """A compact length: uvarint of length + 1, so -1 (null) is 0 on the wire."""
        return self.uvarint() - 1

    def compact_nullable_string(self) -> str | None:
        at = self.pos
        length = self._compact_length()
        if length == -1:
            return None
        if length > _MAX_STRING_LENGTH:
            raise MalformedError(f"string length {length} exceeds {_MAX_STRING_LENGTH}", at)
        return decode_utf8(self.raw(length))

    def compact_string(self) -> str:
        at = self.pos
        value = self.compact_nullable_string()
        if value is None:
            raise MalformedError("null in a non-nullable string", at)
        return value

    def compact_nullable_bytes(self) -> bytes | None:
        length = self._compact_length()
        return None if length == -1 else self.raw(length)

    def compact_bytes(self) -> bytes:
        at = self.pos
        value = self.compact_nullable_bytes()
        if value is None:
            raise MalformedError("null in a non-nullable bytes field", at)
        return value

    def compact_count(self, min_element_size: int) -> int:
        at = self.pos
        count = self._compact_length()
        if count == -1:
            raise MalformedError("null in a non-nullable array", at)
        return self._checked_count(count, min_element_size, at)

    def tagged_fields(self) -> dict[int, bytes]:
        """A tagged-field section: every tag's raw payload, for callers to pick known ones."""
        # Each field is at least a one-byte tag and a one-byte size.
        at = self.pos
        count = self._checked_count(self.uvarint(), 2, at)
        fields: dict[int, bytes] = {}
        for _ in range(count):
            tag = self.uvarint()
            fields[tag] = self.raw(self.uvarint())
        return fields


def decode_utf8(raw: bytes) -> str:
    """UTF-8 text the way Java's ``new String(bytes, UTF_8)`` reads it."""
    # Java's new String(bytes, UTF_8), which Kafka's generated readers use,
    # substitutes U+FFFD for malformed input instead of failing; so do we, so a
    # stray byte in one client tag does not cost the whole member.
    return raw.decode("utf-8", "replace")


def decode_modified_utf8(raw: bytes) -> str:
    """Java modified UTF-8 (``DataOutput.writeUTF``) to text.

    It differs from UTF-8 in two ways: U+0000 is written ``C0 80`` and a
    supplementary character is written as two 3-byte encoded surrogates
    (CESU-8). Both are invalid in strict UTF-8, so plain ASCII and ordinary
    text take the fast path and only strings with those forms are rewritten.
    Malformed bytes raise ``UnicodeDecodeError``, as Java's ``readUTF`` throws.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    # C0 is never a continuation byte, so "C0 80" cannot straddle another sequence.
    with_nul = raw.replace(b"\xc0\x80", b"\x00")
    # surrogatepass accepts the encoded surrogates; the UTF-16 round trip then
    # joins each high/low pair into one character. Lone surrogates, which Java
    # strings may hold, become U+FFFD.
    halves = with_nul.decode("utf-8", "surrogatepass")
    return halves.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "replace")


# struct.error: a format fed the wrong buffer; IndexError: slicing or indexing
# past the end; ValueError (UnicodeDecodeError and binascii.Error are subclasses):
# bytes that are not the text or Base64 they should be; OverflowError: a count
# too large for a struct format. Anything else is a bug and should surface.
_STDLIB_INPUT_ERRORS: Final = (struct.error, IndexError, ValueError, OverflowError)


def run_decoder(what: str, data: bytes, parse: Callable[[Reader], T]) -> T | DecodeError:
    """Run ``parse`` over ``data``; every input problem comes back as a ``DecodeError``."""
    reader = Reader(data)
    try:
        return parse(reader)
    except MalformedError as e:
        return DecodeError(what, e.reason, e.offset, reader.version)
    except _STDLIB_INPUT_ERRORS as e:
        return DecodeError(what, f"{type(e).__name__}: {e}", reader.pos, reader.version)
