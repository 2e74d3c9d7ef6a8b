"""Markdown tables and the numbers in their cells, written one way (every page of the studies uses them)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

__all__ = ["fixed", "fmt", "fmt_bool", "markdown_table"]


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


def fmt(value: float | None, se: float | None = None, digits: int = 4) -> str:
    """``value ± se`` with ``digits`` significant digits ('—' when missing).

    Examples
    --------
    >>> fmt(1.23456, 0.0123), fmt(float("nan")), fmt(2.0)
    ('1.235 ± 0.012', '—', '2')
    """
    if value is None or not math.isfinite(value):
        return "—"
    text = f"{value:.{digits}g}"
    if se is not None and math.isfinite(se) and se > 0:
        text += f" ± {se:.2g}"
    return text


def fmt_bool(value: bool | None) -> str:
    """'yes', 'no' or 'n/a'.

    Examples
    --------
    >>> fmt_bool(True), fmt_bool(False), fmt_bool(None)
    ('yes', 'no', 'n/a')
    """
    return "n/a" if value is None else ("yes" if value else "no")


def fixed(value: float, se: float | None = None, digits: int = 4) -> str:
    """``value ± se`` with ``digits`` decimals ('–' when ``value`` is missing; no ``± se`` when ``se`` is).

    Examples
    --------
    >>> fixed(0.123456, 0.00123), fixed(float("nan")), fixed(1.5, float("nan"), digits=2)
    ('0.1235 ± 0.0012', '–', '1.50')
    """
    if value is None or not math.isfinite(value):
        return "–"
    text = f"{value:.{digits}f}"
    return text if se is None or not math.isfinite(se) else f"{text} ± {se:.{digits}f}"
