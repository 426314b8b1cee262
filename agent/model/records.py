"""Plain-JSON encoding of the model's frozen dataclasses, tolerant in both directions.

Readers ignore fields they do not know (a newer agent may add some) and fill
fields that are missing with their defaults (an older agent may lack them),
so agents and jobs of neighbouring versions keep working together. Only a
missing field *without* a default, or a value of the wrong kind, is an error.
A field typed ``JsonObject`` holds free-form JSON (a finding's evidence) as is.
A field declared with ``field(metadata=OMIT_WHEN_DEFAULT)`` is written only when it
differs from its default (a flag that is rarely set costs nothing on every record).
"""

import dataclasses
import json
import math
import types
import typing
from functools import cache
from typing import Any, Literal, NamedTuple, TypeVar, Union, get_args, get_origin

T = TypeVar("T")

# Free-form JSON kept as decoded (str keys; values JSON scalars, lists, objects).
JsonObject = dict[str, Any]
# Field metadata: leave the field out of the JSON while it holds its default.
OMIT_WHEN_DEFAULT: dict[str, bool] = {"omit_when_default": True}


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
        return _plain_of(type(value))(value)
    return plain_by_value(value)


def plain_by_value(value: object) -> object:
    """``to_plain`` looking at every value's type (the reference the compiled
    converters must equal; also what fields without a precise type get)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        omitted = _omitted_when_default(type(value))
        return {
            name: plain_by_value(getattr(value, name))
            for name in _field_names(type(value))
            if name not in omitted or getattr(value, name) != omitted[name]
        }
    if isinstance(value, (list, tuple)):
        return [plain_by_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): plain_by_value(item) for key, item in value.items()}
    return value


_SCALARS = (str, int, float, bool, type(None))


@cache
def _plain_of(cls: type) -> typing.Callable[[object], object]:
    """A converter for one dataclass, written once from its field types: an agent
    serialises 20,000 partitions per poll, and asking every value its type (as
    ``plain_by_value`` does) took most of that time."""
    hints = typing.get_type_hints(cls)
    names: dict[str, object] = {"plain_by_value": plain_by_value}
    omitted = _omitted_when_default(cls)
    items, optional = [], []
    for i, name in enumerate(_field_names(cls)):
        expression = _plain_expression(hints[name], f"o.{name}", f"c{i}", names)
        if name in omitted:
            names[f"d{i}"] = omitted[name]
            optional.append(f"    if o.{name} != d{i}:\n        d[{name!r}] = {expression}\n")
        else:
            items.append(f"{name!r}: {expression}")
    source = "def convert(o):\n    d = {" + ", ".join(items) + "}\n"
    source += "".join(optional) + "    return d\n"
    exec(source, names)  # noqa: S102 - code written here, from the class's own field names
    return typing.cast(typing.Callable[[object], object], names["convert"])


def _is_record(kind: object) -> typing.TypeGuard[type]:
    return isinstance(kind, type) and dataclasses.is_dataclass(kind)


class _Shape(NamedTuple):
    """A field's declared type, as the generated converters and writers tell it apart."""

    kind: Literal["scalars", "record", "scalar_tuple", "record_tuple", "other"]
    scalars: tuple[Any, ...] = ()  # "scalars": the declared types other than None
    record: type | None = None  # "record", "record_tuple": the dataclass
    nullable: bool = False  # "scalars", "record": None is allowed too


def _shape(kind: Any) -> _Shape:  # noqa: ANN401 - a type hint
    options = get_args(kind) if get_origin(kind) in (Union, types.UnionType) else (kind,)
    non_null = [option for option in options if option is not type(None)]
    nullable = len(non_null) < len(options)
    if all(option in _SCALARS for option in options):
        return _Shape("scalars", scalars=tuple(non_null), nullable=nullable)
    if len(non_null) == 1 and _is_record(non_null[0]):
        return _Shape("record", record=non_null[0], nullable=nullable)
    if len(options) == 1 and get_origin(kind) is tuple:
        item, *_ = get_args(kind)
        union = get_origin(item) in (Union, types.UnionType)
        if item in _SCALARS or (union and all(a in _SCALARS for a in get_args(item))):
            return _Shape("scalar_tuple")
        if _is_record(item):
            return _Shape("record_tuple", record=item)
    return _Shape("other")


def _plain_expression(kind: Any, value: str, slot: str, names: dict[str, object]) -> str:  # noqa: ANN401 - a type hint
    """Python source converting ``value`` (of type ``kind``) to plain JSON values."""
    shape = _shape(kind)
    if shape.kind == "scalars":
        return value
    if shape.kind == "scalar_tuple":
        return f"list({value})"
    if shape.record is not None:
        names[slot] = _plain_of(shape.record)
        if shape.kind == "record_tuple":
            return f"[{slot}(x) for x in {value}]"
        call = f"{slot}({value})"
        return f"(None if {value} is None else {call})" if shape.nullable else call
    return f"plain_by_value({value})"


# No check for circular references: ``to_plain`` makes a fresh tree of plain values
# (a cycle would never get this far), and the check kept a set of every list and
# dict of a snapshot, 20,000 partitions a poll, a sixth of the encoding's time.
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)
_json_string = json.encoder.encode_basestring  # as the encoder writes a str, unescaped UTF-8
_FLOAT_WORDS: dict[float, str] = {math.inf: "Infinity", -math.inf: "-Infinity"}


def to_json_bytes(value: object) -> bytes:
    """Compact UTF-8 JSON (no newlines: one record per line in spool files)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _json_of(type(value))(value).encode()
    return _COMPACT_JSON.encode(plain_by_value(value)).encode()


def _float_text(value: float) -> str:
    if value != value:  # noqa: PLR0124 - NaN, which the encoder writes as JavaScript does
        return "NaN"
    return _FLOAT_WORDS.get(value) or float.__repr__(value)


# How the encoder writes each plain scalar type (exact types: a bool is not an int here).
_SCALAR_TEXT: dict[type, typing.Callable[[Any], str]] = {
    str: _json_string,
    int: int.__repr__,
    type(None): lambda _: "null",
    float: _float_text,
    bool: lambda value: "true" if value else "false",
}


def _json_scalar(value: object) -> str:
    """One value as the encoder writes it (``to_json_bytes``' writers, field by field)."""
    text = _SCALAR_TEXT.get(type(value))
    if text is None:
        return _COMPACT_JSON.encode(plain_by_value(value))  # an enum, a subclass: as encoded
    return text(value)


@cache
def _json_of(cls: type) -> typing.Callable[[object], str]:
    """A JSON text writer for one dataclass, written once from its field types: the
    text of ``_COMPACT_JSON.encode(to_plain(o))`` without the dicts in between (the
    same fields in the same order; a test compares them), for an agent that encodes
    20,000 partitions per poll.
    """
    hints = typing.get_type_hints(cls)
    names: dict[str, object] = {
        "scalar": _json_scalar,
        "string": _json_string,
        "int_text": int.__repr__,
        "float_text": float.__repr__,
        "inf": math.inf,
        "encode": _COMPACT_JSON.encode,
        "plain_by_value": plain_by_value,
    }
    omitted = _omitted_when_default(cls)
    always, optional = [], []
    for i, name in enumerate(_field_names(cls)):
        key = _json_string(name) + ":"  # a field's name: nothing to escape, no braces
        expression = _json_expression(hints[name], f"o.{name}", f"w{i}", names)
        if name in omitted:
            names[f"d{i}"] = omitted[name]
            optional.append(f"    if o.{name} != d{i}:\n        text += ',{key}' + {expression}\n")
        else:
            always.append(f"{key}{{{expression}}}")
    # One f-string (the expressions quote with ' only) for the fields always written.
    source = f'def write(o):\n    text = f"""{{{{{",".join(always)}"""\n'
    if not always:  # every field optional: the first one written takes no comma
        source += "".join(optional) + "    return '{' + text[2:] + '}'\n"
    else:
        source += "".join(optional) + "    return text + '}'\n"
    exec(source, names)  # noqa: S102 - code written here, from the class's own field names
    return typing.cast(typing.Callable[[object], str], names["write"])


# The commonest declared scalar types, written at once when the value is of that exact
# type (anything else, an int in a float field say, goes through ``scalar``).
_EXACT_TEXT = {
    str: "string({v}) if type({v}) is str",
    int: "int_text({v}) if type({v}) is int",
    float: "float_text({v}) if type({v}) is float and -inf < {v} < inf",
}


def _scalar_expression(declared: list[Any], value: str, *, nullable: bool) -> str:
    """Python source writing a field declared as one scalar type (or it or None)."""
    if len(declared) != 1 or declared[0] not in _EXACT_TEXT:
        return f"scalar({value})"
    text = f"({_EXACT_TEXT[declared[0]].format(v=value)} else scalar({value}))"
    return f"('null' if {value} is None else {text})" if nullable else text


def _json_expression(kind: Any, value: str, slot: str, names: dict[str, object]) -> str:  # noqa: ANN401 - a type hint
    """Python source writing ``value`` (of type ``kind``) as JSON text."""
    shape = _shape(kind)
    if shape.kind == "scalars":
        return _scalar_expression(list(shape.scalars), value, nullable=shape.nullable)
    if shape.kind == "scalar_tuple":
        return f"('[' + ','.join(map(scalar, {value})) + ']')"
    if shape.record is not None:
        names[slot] = _json_of(shape.record)
        if shape.kind == "record_tuple":
            return f"('[' + ','.join(map({slot}, {value})) + ']')"
        call = f"{slot}({value})"
        return f"('null' if {value} is None else {call})" if shape.nullable else call
    return f"encode(plain_by_value({value}))"


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
def _omitted_when_default(cls: type) -> dict[str, object]:
    """Fields left out of the JSON while they hold their default, with that default."""
    return {
        f.name: f.default
        for f in dataclasses.fields(cls)
        if f.metadata.get("omit_when_default") and f.default is not dataclasses.MISSING
    }


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
        _key_kind, value_kind = get_args(kind)
        if value_kind is Any:
            return data  # free-form JSON (evidence)
        return {k: _convert(value_kind, v, f"{path}.{k}") for k, v in data.items()}
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


def quick_constructor(cls: type[T]) -> typing.Callable[..., T]:
    """A maker of ``cls`` (a frozen, slotted dataclass) from every field, in order.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``
    (its own ``__setattr__`` refuses), a slow call per field, for the tens of thousands
    of PartitionInfo of a poll. The maker sets the fields on an instance of a twin class,
    the same slots with no ``__setattr__`` of its own, and then turns it into a ``cls``,
    which Python allows between classes of one slot layout, for a fraction of the cost.
    What it returns is a ``cls`` in every way (equal, hashed and frozen like one made by
    ``cls(...)``; a test checks).

    No defaults and no checks: every field is given, positionally.
    """
    if not (dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen):  # type: ignore[attr-defined]
        raise TypeError(f"{cls.__name__} is not a frozen dataclass")
    if "__slots__" not in cls.__dict__ or cls.__bases__ != (object,):
        raise TypeError(f"{cls.__name__} must be slotted and derive from object alone")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__ the maker would skip")
    names = _field_names(cls)
    twin = type(f"_Unfrozen{cls.__name__}", (), {"__slots__": cls.__dict__["__slots__"]})
    source = (
        f"def make({', '.join(names)}):\n"
        "    made = new(twin)\n"
        + "".join(f"    made.{name} = {name}\n" for name in names)
        + "    made.__class__ = cls\n"
        "    return made\n"
    )
    scope: dict[str, object] = {"new": object.__new__, "twin": twin, "cls": cls}
    exec(source, scope)  # noqa: S102 - code written here, from the class's own field names
    return typing.cast(typing.Callable[..., T], scope["make"])
