"""``facts`` records <-> plain nested tuples, for pickling windows fast.

Pickling a ``NamedTuple`` runs Python code twice per object (its
``__getnewargs__`` when written, its ``__new__`` when read): for a window of a
hundred polls that was most of the job's time per group (docs/benchmarks.md).
Plain tuples pickle and unpickle in C. ``freeze`` turns a window into them
(one converter per record type, written once from its field types) and
``thaw`` back, building each record with ``tuple.__new__`` (no Python frame).

Sharing survives: parts a poll shares with the poll before (``Poll.sharing``:
its members, topics, ...) are frozen once and thawed once, so a window holds
them once in memory as in the pickle.

A poll's partitions, most of a window's objects, are frozen as columns (topics,
numbers, log-end offsets, committed offsets, lags, owners): six tuples a poll
instead of one per partition, and the columns that repeat from poll to poll
(the partitions listed, usually their owners) are one object, pickled once
per window. Thawing zips them back into ``Partition`` records in C.

A window read from the state store and written back a batch later is mostly
the same polls: ``thaw_keeping`` remembers what each was read from, and
``freeze`` writes those polls as they were read, freezing only the new and
the changed ones (the newest, the one before it aged, the one that lost its
partitions). That halved the encoding's time (measured: 1.5 -> 0.8 ms per
group of a full window at 20 partitions).
"""

import functools
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any, NamedTuple, Union, get_args, get_origin

from agent.aggregation.facts import Partition, Poll

# Parts already converted, by the identity of the part (an int), and columns already
# frozen, by their value (a tuple).
Memo = dict[object, Any]

# Containers of a poll that consecutive polls share (``Poll.sharing``).
_SHARED = frozenset(("members", "topics", "subtopologies", "brokers", "sidecar"))
_SHARED_AT = tuple(Poll._fields.index(f) for f in sorted(_SHARED))
_PARTITIONS_AT = Poll._fields.index("partitions")


class Thawed(NamedTuple):
    """What a series' polls were thawed from, so that freezing the series again reuses
    it: a poll still in the window as it was read is written as it was read (most of a
    window, every batch), and parts a new poll shares with them (``Poll.sharing``) map
    to their frozen objects, which keeps them one object in the pickle.

    The thawed polls and parts are held here: their identities are the keys."""

    polls: dict[int, tuple[Poll, tuple[object, ...]]]  # id(poll) -> (poll, frozen)
    parts: dict[int, tuple[object, object]]  # id(shared part) -> (part, frozen)
    columns: tuple[object, ...]  # the newest frozen partition columns


def freeze(polls: list[Poll], thawed: Thawed | None = None) -> list[tuple[object, ...]]:
    memo: Memo = {}
    convert = _converter(Poll, thaw=False)
    if thawed is None:
        return [convert(p, memo) for p in polls]
    for key, (_part, frozen) in thawed.parts.items():
        memo[key] = frozen
    for column in thawed.columns:
        memo[column] = column
    kept = thawed.polls
    out = []
    for p in polls:
        hit = kept.get(id(p))
        out.append(hit[1] if hit is not None and hit[0] is p else convert(p, memo))
    return out


def thaw(plain: list[tuple[object, ...]]) -> list[Poll]:
    memo: Memo = {}
    convert = _converter(Poll, thaw=True)
    return [convert(p, memo) for p in plain]


def thaw_keeping(plain: list[tuple[object, ...]]) -> tuple[list[Poll], Thawed]:
    """``thaw``, and what ``freeze`` needs to reuse what was thawed."""
    polls = thaw(plain)
    parts: dict[int, tuple[object, object]] = {}
    previous: Poll | None = None
    columns: tuple[object, ...] = ()
    for poll, frozen in zip(polls, plain, strict=True):
        # Consecutive polls share most parts: only a part that changed is new here.
        for i in _SHARED_AT:
            if previous is None or poll[i] is not previous[i]:
                parts[id(poll[i])] = (poll[i], frozen[i])
        if frozen[_PARTITIONS_AT]:
            columns = frozen[_PARTITIONS_AT]  # type: ignore[assignment]
        previous = poll
    kept = {id(p): (p, f) for p, f in zip(polls, plain, strict=True)}
    return polls, Thawed(kept, parts, columns)


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


def _expression(kind: object, value: str, names: dict[str, object], thaw: bool) -> str | None:
    """Python source converting ``value`` of type ``kind``; None when it holds no record."""
    kind, nullable = _nullable(kind)
    if _is_record(kind):
        name = f"c_{kind.__name__}"  # type: ignore[attr-defined]
        names[name] = _converter(kind, thaw=thaw)
        inner = f"{name}({value}, memo)"
    elif get_origin(kind) is tuple:
        args = get_args(kind)
        if len(args) == 2 and args[1] is Ellipsis:  # noqa: PLR2004 - tuple[X, ...]
            if _flat(args[0]):  # a record type: it has a __name__
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
    hints = typing.get_type_hints(cls)
    names: dict[str, object] = {"new": tuple.__new__, "cls": cls}
    fields = []
    shared_lines = []
    for i, field in enumerate(cls._fields):
        expression = _expression(hints[field], f"o[{i}]", names, thaw)
        if cls is Poll and field == "partitions":
            names["partitions"] = _thaw_partitions if thaw else _freeze_partitions
            fields.append(f"partitions(o[{i}], memo)")
        elif expression is None:
            fields.append(f"o[{i}]")
        elif cls is Poll and field in _SHARED:
            # Shared with the poll before: converted once, by the identity of the part.
            shared_lines.append(
                f"    v{i} = memo.get(id(o[{i}]))\n"
                f"    if v{i} is None:\n"
                f"        v{i} = memo[id(o[{i}])] = {expression}\n"
            )
            fields.append(f"v{i}")
        else:
            fields.append(expression)
    body = "".join(shared_lines)
    built = f"({', '.join(fields)},)"
    result = f"new(cls, {built})" if thaw else built
    source = f"def convert(o, memo):\n{body}    return {result}\n"
    exec(source, names)  # noqa: S102 - written here from the record's own field types
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
    return tuple(map(_make_partition, zip(*columns, strict=True)))
