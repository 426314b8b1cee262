"""Plain-JSON encoding of the model's frozen dataclasses, tolerant in both directions.

Readers ignore fields they do not know (a newer agent may add some) and fill
fields that are missing with their defaults (an older agent may lack them),
so agents and jobs of neighbouring versions keep working together. Only a
missing field *without* a default, or a value of the wrong kind, is an error.
A field typed ``JsonObject`` holds free-form JSON (a finding's evidence) as is.
"""

import dataclasses
import json
import types
import typing
from functools import cache
from typing import Any, TypeVar, Union, get_args, get_origin

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


def to_plain(value: object) -> object:
    """A dataclass tree as dicts, lists and scalars, ready for ``json.dumps``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: to_plain(getattr(value, name)) for name in _field_names(type(value))}
    if isinstance(value, (list, tuple)):
        return [to_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_plain(item) for key, item in value.items()}
    return value


def to_json_bytes(value: object) -> bytes:
    """Compact UTF-8 JSON (no newlines: one record per line in spool files)."""
    return json.dumps(to_plain(value), separators=(",", ":"), ensure_ascii=False).encode()


def decode_versioned(data: bytes | str, newest: int) -> dict[str, Any]:
    """A JSON object with a ``schema_version`` this reader (at ``newest``) understands.

    Raises ``RecordError`` for text that is not a JSON object or has a missing
    or malformed version, and ``NewerSchemaError`` (a ``RecordError``) for a
    newer version: a newer writer may have changed what the fields mean, so
    its records are kept aside, never guessed at.
    """
    try:
        plain = json.loads(data)
    except ValueError as e:
        raise RecordError(f"not JSON: {e}") from e
    except RecursionError:
        # json.loads recurses per nesting level: a hostile or corrupt document
        # of many nested brackets must be an error, not a crash.
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


def from_plain(cls: type[T], data: object, path: str = "$") -> T:
    """Build ``cls`` from decoded JSON, ignoring unknown keys, defaulting missing ones."""
    return typing.cast(T, _convert(cls, data, path))


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


@cache
def _fields(cls: type) -> tuple[tuple[str, Any, bool], ...]:
    hints = typing.get_type_hints(cls)
    return tuple(
        (
            f.name,
            hints[f.name],
            f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING,
        )
        for f in dataclasses.fields(cls)
    )


def _convert(kind: Any, data: object, path: str) -> object:  # noqa: ANN401, PLR0911, PLR0912 - one branch per JSON kind
    origin = get_origin(kind)
    if origin in (Union, types.UnionType):
        options = get_args(kind)
        if data is None:
            if type(None) in options:
                return None
            raise RecordError(f"{path}: must not be null")
        non_null = [option for option in options if option is not type(None)]
        if len(non_null) == 1:
            return _convert(non_null[0], data, path)
        raise RecordError(f"{path}: unsupported union type {kind}")  # pragma: no cover
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        if not isinstance(data, dict):
            raise RecordError(f"{path}: expected an object, got {type(data).__name__}")
        values = {}
        for name, field_kind, has_default in _fields(kind):
            if name in data:
                values[name] = _convert(field_kind, data[name], f"{path}.{name}")
            elif not has_default:
                raise RecordError(f"{path}.{name}: missing")
        return kind(**values)
    if origin is dict:
        if not isinstance(data, dict):
            raise RecordError(f"{path}: expected an object, got {type(data).__name__}")
        return data
    if origin is tuple:
        if not isinstance(data, list):
            raise RecordError(f"{path}: expected a list, got {type(data).__name__}")
        (item_kind, _ellipsis) = get_args(kind)
        return tuple(_convert(item_kind, item, f"{path}[{i}]") for i, item in enumerate(data))
    if kind is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise RecordError(f"{path}: expected a number, got {type(data).__name__}")
        return float(data)
    if kind is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise RecordError(f"{path}: expected an integer, got {type(data).__name__}")
        return data
    if kind in (str, bool):
        if not isinstance(data, kind):
            raise RecordError(f"{path}: expected {kind.__name__}, got {type(data).__name__}")
        return data
    raise RecordError(f"{path}: unsupported field type {kind}")  # pragma: no cover
