"""Markdown tables, written one way: a header and rows of cells (every page of the studies uses it)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["markdown_table"]


def _line(cells: Sequence) -> str:
    return "|" + "|".join(f" {cell} " if str(cell) else " " for cell in cells) + "|"


def markdown_table(header: Sequence, rows: Iterable[Sequence]) -> list[str]:
    """The lines of a Markdown table: the header, the ``|---|`` rule, one line per row.

    Cells are written with ``str``; an empty cell is one space. A row with another number of cells
    than the header is a ``ValueError`` naming it.

    Examples
    --------
    >>> markdown_table(["L", "R_L", ""], [(1, "2.0", "✓"), (2, 1.5, "")])
    ['| L | R_L | |', '|---|---|---|', '| 1 | 2.0 | ✓ |', '| 2 | 1.5 | |']
    >>> markdown_table(["L", "R_L"], [(1,)])
    Traceback (most recent call last):
    ...
    ValueError: rows[0] must have 2 cells (the header's); got 1
    """
    lines = [_line(header), "|" + "---|" * len(header)]
    for i, row in enumerate(rows):
        row = tuple(row)
        if len(row) != len(header):
            raise ValueError(f"rows[{i}] must have {len(header)} cells (the header's); got {len(row)}")
        lines.append(_line(row))
    return lines
