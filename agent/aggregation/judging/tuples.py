"""A window of ``facts.Poll`` records <-> plain tuples in columns, for pickling fast.

Pickling a ``NamedTuple`` runs Python code twice per object (its
``__getnewargs__`` when written, its ``__new__`` when read): for a window of a
hundred polls that was most of the job's time per group (docs/benchmarks.md).
Plain tuples pickle and unpickle in C. ``freeze`` turns a window into them and
``thaw`` back, building each record with ``tuple.__new__`` (no Python frame).

A window is frozen as columns, one per ``Poll`` field, oldest poll first: a
hundred polls are 22 tuples, not a hundred, and the polls are zipped back from
them in C. Most fields are scalars and stay as they are. A field that holds
records (members, topics, partitions ...) is converted once per distinct
object in its column, not once per poll: the parts a poll shares with the poll
before (``Poll.sharing``: its members, topics, ...) are one object in the
column, so they are converted once, stored once in the pickle and thawed into
one object again.

A poll's partitions are frozen as six columns of their own (topics, numbers,
log-end offsets, committed offsets, lags, owners), and those equal to the
poll before's (the partitions listed, usually their owners) are its object.

A window read from the state store and written back a batch later is mostly
the same objects: ``thaw_keeping`` remembers what each part was read from,
and ``freeze`` writes those parts as they were read, converting only what a
new poll brought. Polls that aged in between (``Poll.aged``) keep their parts.
"""

import functools
import types
import typing
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any, NamedTuple, Union, get_args, get_origin

from agent.aggregation.judging.facts import Partition, Poll, StoredPartitions


class Memo(dict[object, Any]):
    """Parts already converted, by the identity of what they were converted from (an
    int), and partition columns already frozen, by their value (a tuple). Thawing also
    lists each part thawed with what it was thawed from (``pairs``)."""

    __slots__ = ("pairs",)

    def __init__(self) -> None:
        super().__init__()
        self.pairs: list[tuple[object, object]] = []


# A window as columns: one tuple per ``Poll`` field, each as long as the window; () for
# an empty window.
Frozen = tuple[tuple[object, ...], ...]

_PARTITIONS_AT = Poll._fields.index("partitions")
_make_poll = functools.partial(tuple.__new__, Poll)


class Thawed(NamedTuple):
    """What a series' window was thawed from, so that freezing it again reuses it: each
    part (a poll's members, its partitions, ...) still in the window is written as it
    was read, and a new poll's partition columns equal to the newest read are that one
    object. The thawed parts are held here: their identities are the keys."""

    frozen: dict[object, object]  # id(thawed part) -> what it was thawed from
    parts: list[object]  # the thawed parts, alive while their ids are keys
    columns: tuple[object, ...]  # the newest poll's frozen partition columns


def freeze(polls: list[Poll], thawed: Thawed | None = None) -> Frozen:
    if not polls:
        return ()
    memo = Memo()
    if thawed is not None:
        memo.update(thawed.frozen)
        for column in thawed.columns:
            memo[column] = column
    columns = list(zip(*polls, strict=True))
    for i, convert in _converters(thaw=False):
        columns[i] = tuple(_convert_column(columns[i], convert, memo, thawing=False))
    return tuple(columns)


def thaw(frozen: Frozen) -> list[Poll]:
    return thaw_keeping(frozen)[0]


def thaw_keeping(frozen: Frozen) -> tuple[list[Poll], Thawed]:
    """The window's polls, and what ``freeze`` needs to reuse what was thawed."""
    if not frozen:
        return [], Thawed({}, [], ())
    memo = Memo()
    columns: list[Iterable[object]] = list(frozen)
    for i, convert in _converters(thaw=True):
        columns[i] = _convert_column(frozen[i], convert, memo, thawing=True)
    newest = next((p for p in reversed(frozen[_PARTITIONS_AT]) if p), ())
    polls = list(map(_make_poll, zip(*columns, strict=True)))
    parts = [part for part, _ in memo.pairs]
    return polls, Thawed({id(p): f for p, f in memo.pairs}, parts, newest)  # type: ignore[arg-type]


_MISSING = object()


def _convert_column(
    column: tuple[object, ...], convert: Callable[[Any, Memo], Any], memo: Memo, *, thawing: bool
) -> Iterable[object]:
    """``column`` with each distinct object in it (by identity) converted once."""
    ids = list(map(id, column))
    table: dict[int, object] = {}
    for key, value in dict(zip(ids, column, strict=True)).items():
        converted = memo.get(key, _MISSING)
        if converted is _MISSING:
            converted = memo[key] = convert(value, memo)
            if thawing and converted is not None:
                memo.pairs.append((converted, value))
        table[key] = converted
    return map(table.__getitem__, ids)


def _is_record(kind: object) -> bool:
    return isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields")


def _nullable(kind: object) -> tuple[object, bool]:
    if get_origin(kind) in (Union, types.UnionType):
        options = [k for k in get_args(kind) if k is not type(None)]
        if len(options) == 1:
            return options[0], True
    return kind, False


def _flat(kind: object) -> bool:
    """A record none of whose fields holds a record."""
    if not _is_record(kind):
        return False
    hints = typing.get_type_hints(kind)
    return all(
        _expression(hints[f], "x", {}, thaw=False) is None
        for f in kind._fields  # type: ignore[attr-defined]
    )


def _expression(
    kind: object, value: str, names: dict[str, object], thaw: bool, *, each: bool = False
) -> str | None:
    """Python source converting ``value`` of type ``kind``; None when it holds no record.
    ``each``: records in a tuple are converted one by one, each once (by identity), even
    records of scalars: for a poll's own fields, whose records ``Poll.sharing`` shares
    one by one with the poll before (its topics: one grows, the others stay)."""
    kind, nullable = _nullable(kind)
    if _is_record(kind):
        name = f"c_{kind.__name__}"  # type: ignore[attr-defined]
        names[name] = _converter(kind, thaw=thaw)
        inner = f"{name}({value}, memo)"
    elif get_origin(kind) is tuple:
        args = get_args(kind)
        if len(args) == 2 and args[1] is Ellipsis:  # noqa: PLR2004 - tuple[X, ...]
            if _flat(args[0]) and not each:  # a record type: it has a __name__
                # Records of scalars (partitions, topics): converted by map, all in C.
                name = f"make_{args[0].__name__}"
                names[name] = functools.partial(tuple.__new__, args[0])
                inner = f"tuple(map({name if thaw else 'tuple'}, {value}))"
            else:
                item = _expression(args[0], "x", names, thaw)
                if item is None:
                    return None
                inner = f"tuple([{item} for x in {value}])"
        else:
            return None  # fixed tuples in facts hold scalars only
    else:
        return None
    return f"(None if {value} is None else {inner})" if nullable else inner


@cache
def _converter(cls: type[NamedTuple], *, thaw: bool) -> Callable[[Any, Memo], Any]:
    """One record of ``cls`` <-> a plain tuple of its fields, converted likewise; a
    record met again (the same object: members shared from poll to poll) is converted
    once."""
    hints = typing.get_type_hints(cls)
    names: dict[str, object] = {"new": tuple.__new__, "cls": cls}
    fields = []
    for i, field in enumerate(cls._fields):
        expression = _expression(hints[field], f"o[{i}]", names, thaw)
        fields.append(f"o[{i}]" if expression is None else expression)
    built = f"({', '.join(fields)},)"
    source = (
        "def convert(o, memo):\n"
        "    r = memo.get(id(o))\n"
        "    if r is None:\n"
        f"        r = memo[id(o)] = {f'new(cls, {built})' if thaw else built}\n"
        + ("        memo.pairs.append((r, o))\n" if thaw else "")
        + "    return r\n"
    )
    exec(source, names)  # noqa: S102 - written here from the record's own field types
    return typing.cast(Callable[[Any, Memo], Any], names["convert"])


@cache
def _converters(*, thaw: bool) -> tuple[tuple[int, Callable[[Any, Memo], Any]], ...]:
    """The ``Poll`` fields that hold records, each with the converter of one value."""
    hints = typing.get_type_hints(Poll)
    out: list[tuple[int, Callable[[Any, Memo], Any]]] = []
    for i, field in enumerate(Poll._fields):
        if i == _PARTITIONS_AT:
            out.append((i, _thaw_partitions if thaw else _freeze_partitions))
            continue
        names: dict[str, object] = {}
        expression = _expression(hints[field], "o", names, thaw, each=True)
        if expression is not None:
            out.append((i, _compiled(expression, names)))
    return tuple(out)


def _compiled(expression: str, names: dict[str, object]) -> Callable[[Any, Memo], Any]:
    source = f"def convert(o, memo):\n    return {expression}\n"
    exec(source, names)  # noqa: S102 - written here from the records' own field types
    return typing.cast(Callable[[Any, Memo], Any], names["convert"])


_make_partition = functools.partial(tuple.__new__, Partition)


def _freeze_partitions(
    partitions: tuple[Partition, ...] | None, memo: Memo
) -> tuple[tuple[object, ...], ...] | None:
    if not partitions:
        return None if partitions is None else ()
    # A column equal to one frozen before (the same partitions, owners, idle offsets) is
    # that one object: the pickle then writes a reference to it.
    return tuple(memo.setdefault(column, column) for column in zip(*partitions, strict=True))


def _thaw_partitions(
    columns: tuple[tuple[object, ...], ...] | None, _memo: Memo
) -> tuple[Partition, ...] | None:
    if not columns:
        return None if columns is None else ()
    rows = StoredPartitions(map(_make_partition, zip(*columns, strict=True)))
    rows.columns = columns
    return rows
