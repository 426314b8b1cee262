"""Plain-text layout for interactive commands."""

from collections.abc import Sequence


def table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns two spaces apart; the first row is usually the header.

    >>> table([("A", "BB"), ("ccc", "d")])
    ['A    BB', 'ccc  d']
    """
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
