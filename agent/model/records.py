"""JSON encoding of the model's frozen dataclasses, tolerant in both directions.

Readers ignore fields they do not know (a newer agent may add some) and fill
fields that are missing with their defaults (an older agent may lack them),
so agents and jobs of neighbouring versions keep working together. Only a
missing field *without* a default, or a value of the wrong kind, is an error.
A field typed ``JsonObject`` holds free-form JSON (a finding's evidence) as is.

msgspec does the work, in C, from the dataclasses' own type hints: it writes a
record in one pass and reads one straight into its dataclass, checking every
field's type on the way, so the types declared in the model are the whole codec.
"""

import re
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

# Free-form JSON kept as decoded (str keys; values JSON scalars, lists, objects).
JsonObject = dict[str, Any]


class RecordError(ValueError):
    """A JSON document does not fit the record type; the message names the field path."""


class NewerSchemaError(RecordError):
    """A record written with a newer schema version than this reader knows.

    Not malformed: a newer agent wrote it after a change older readers cannot
    ignore (additive changes keep the version). Readers keep such records
    aside (the job quarantines them as ``future_version``) instead of guessing.
    """

    def __init__(self, version: int, known: int) -> None:
        super().__init__(f"$.schema_version: {version} is newer than this reader's {known}")
        self.version = version
        self.known = known


_ENCODER = msgspec.json.Encoder()
_PLAIN = msgspec.json.Decoder()


def to_json_bytes(value: object) -> bytes:
    """Compact UTF-8 JSON (no newlines: one record per line in spool files).

    A float that is not finite is written as ``null``: JSON has no word for it.
    """
    return _ENCODER.encode(value)


def to_plain(value: object) -> Any:  # noqa: ANN401 - JSON values
    """A record as its JSON reads back: dicts, lists and scalars."""
    return _PLAIN.decode(_ENCODER.encode(value))


def decode_versioned(data: bytes | str, newest: int) -> dict[str, Any]:
    """A JSON object with a ``schema_version`` this reader (at ``newest``) understands.

    Raises ``RecordError`` for text that is not a JSON object or has a missing
    or malformed version, and ``NewerSchemaError`` (a ``RecordError``) for a
    newer version: a newer writer may have changed what the fields mean, so
    its records are kept aside, never guessed at.
    """
    try:
        plain = _PLAIN.decode(data)
    except msgspec.DecodeError as e:
        raise RecordError(f"not JSON: {e}") from None
    except RecursionError:
        # A hostile or corrupt document of many nested brackets must be an error, not a crash.
        raise RecordError("not JSON a record can be: nested too deeply") from None
    if not isinstance(plain, dict):
        raise RecordError("$: expected an object")
    version = plain.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        shown = repr(version)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."  # noqa: PLR2004
        raise RecordError(f"$.schema_version: expected a positive integer, got {shown}")
    if version > newest:
        raise NewerSchemaError(version, newest)
    return plain


def from_plain(cls: type[T], data: object) -> T:
    """Build ``cls`` from decoded JSON, ignoring unknown keys, defaulting missing ones."""
    try:
        return msgspec.convert(data, cls)
    except msgspec.ValidationError as e:
        raise RecordError(field_error(e)) from None


_AT_PATH = re.compile(r"^(?P<what>.*) - at `(?P<path>[^`]*)`$", re.DOTALL)


def field_error(error: msgspec.ValidationError) -> str:
    """msgspec's "Expected `int`, got `str` - at `$.lag`" as "$.lag: expected `int`, got `str`"."""
    message = str(error)
    found = _AT_PATH.match(message)
    what, path = (found["what"], found["path"]) if found else (message, "$")
    return f"{path}: {what[:1].lower()}{what[1:]}"
