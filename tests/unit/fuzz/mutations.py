"""Ways to damage valid input the way corruption, truncation and confusion do.

Byte damage aims at what decoders trust: lengths, counts and versions. Setting
a 2-, 4- or 8-byte window to 0, -1 or the largest int turns a length into
nothing, null or "more than there is"; cutting, repeating and splicing shift
every field after the damage. JSON damage changes the document's structure.
"""

import json
from typing import Any

from hypothesis import strategies as st

_INTERESTING = [0, 1, 2, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 2**31, 2**32 - 1]
_OPERATIONS = ["flip", "byte", "int", "cut", "drop", "repeat", "insert", "extend", "splice"]


@st.composite
def damaged(draw: st.DrawFn, data: bytes, *, min_operations: int = 1) -> bytes:
    """``data`` after one to four random damaging operations."""
    out = bytearray(data)
    for _ in range(draw(st.integers(min_operations, 4))):
        op = draw(st.sampled_from(_OPERATIONS))
        at = draw(st.integers(0, len(out)))
        if op == "flip" and at < len(out):
            out[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "byte" and at < len(out):
            out[at] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF]))
        elif op == "int":
            width = draw(st.sampled_from([1, 2, 4, 8]))
            value = draw(st.sampled_from(_INTERESTING)) % (1 << (8 * width))
            if draw(st.booleans()):
                value = (1 << (8 * width)) - 1 - value  # the negative twin, e.g. -1, -2
            out[at : at + width] = value.to_bytes(width, "big")
        elif op == "cut":
            del out[at:]
        elif op == "drop":
            del out[at : at + draw(st.integers(1, 8))]
        elif op == "repeat":
            out[at:at] = out[at : at + draw(st.integers(1, 16))]
        elif op == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "extend":
            out += draw(st.binary(min_size=1, max_size=16))
        else:  # splice: a copy of another part of the message lands here
            start = draw(st.integers(0, len(out)))
            out[at:at] = out[start : start + draw(st.integers(1, 16))]
    return bytes(out)


@st.composite
def damaged_text(draw: st.DrawFn, text: str) -> str:
    """A text format (Base64, JSON) damaged as bytes, then read back as text."""
    return draw(damaged(text.encode())).decode("utf-8", "replace")


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from([[], {}, 10**400, -1, "", "NaN"])
)


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if len(path) > 12:
        return found
    if isinstance(node, dict):
        for key, child in node.items():
            found += _paths(child, (*path, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found += _paths(child, (*path, index))
    return found


def _replace(node: Any, path: tuple[Any, ...], make: Any) -> Any:
    if not path:
        return make(node)
    head, *rest = path
    copy = dict(node) if isinstance(node, dict) else list(node)
    copy[head] = _replace(node[head], tuple(rest), make)
    return copy


@st.composite
def damaged_json(draw: st.DrawFn, document: bytes) -> bytes:
    """A JSON document with one to three structural changes at random places."""
    tree = json.loads(document)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(tree)))
        op = draw(st.sampled_from(["value", "delete", "unknown", "wrap", "nest"]))
        if op == "value":
            scalar = draw(JSON_SCALARS)
            tree = _replace(tree, path, lambda _old, v=scalar: v)
        elif op == "delete" and path:
            parent = path[:-1]
            tree = _replace(tree, parent, lambda old, key=path[-1]: _without(old, key))
        elif op == "unknown":
            name = draw(st.text(min_size=1, max_size=8))
            tree = _replace(
                tree, path, lambda old, k=name: {**old, k: 1} if isinstance(old, dict) else old
            )
        elif op == "wrap":
            tree = _replace(tree, path, lambda old: [old])
        else:
            depth = draw(st.sampled_from([2, 50, 5000]))
            tree = _replace(tree, path, lambda _old, d=depth: _nested(d))
    try:
        return json.dumps(tree).encode()
    except RecursionError:  # our own nesting can defeat json.dumps; write it by hand
        return b"[" * 5000 + b"]" * 5000


def _without(node: Any, key: Any) -> Any:
    if isinstance(node, dict):
        return {k: v for k, v in node.items() if k != key}
    return [v for i, v in enumerate(node) if i != key]


def _nested(depth: int) -> object:
    value: object = []
    for _ in range(depth):
        value = [value]
    return value
