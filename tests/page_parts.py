"""The structure of a Markdown page, for tests that check what a page says without pinning its sentences.

A page's numbers and verdicts live in its tables and its section list; a test reads those (a table's rows by the
first cells of its header, the headings in order) and compares them with the values they were written from.

Examples
--------
>>> text = "## A\\n\\n| x | y |\\n|---|---|\\n| 1 | **met** |\\n\\n### B\\n"
>>> headings(text), table(text, "x")
(['A', 'B'], [['1', '**met**']])
"""

from __future__ import annotations

__all__ = ["has_cells", "headings", "table", "tables"]


def headings(text: str, level: int | None = None) -> list[str]:
    """The headings of ``text`` in order, without their hashes (``level``: only those of that many hashes)."""
    out = []
    for line in text.splitlines():
        hashes = len(line) - len(line.lstrip("#"))
        if hashes and line[hashes:hashes + 1] == " " and (level is None or hashes == level):
            out.append(line[hashes + 1:].strip())
    return out


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every pipe table of ``text``: ``(header cells, rows of cells)``."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header, rows, i = _cells(lines[i]), [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            out.append((header, rows))
        else:
            i += 1
    return out


def table(text: str, *first: str) -> list[list[str]]:
    """The rows of the one table of ``text`` whose header starts with the cells ``first``."""
    found = [rows for header, rows in tables(text) if header[:len(first)] == list(first)]
    if len(found) != 1:
        raise AssertionError(f"{len(found)} tables whose header starts with {first!r}")
    return found[0]


def has_cells(text: str, *cells: str) -> bool:
    """Whether a row of a table of ``text`` (its header included) holds ``cells`` side by side.

    Examples
    --------
    >>> text = "| a | b | c |\\n|---|---|---|\\n| 1 | 2 | 3 |"
    >>> has_cells(text, "2", "3"), has_cells(text, "b", "a")
    (True, False)
    """
    wanted, n = list(cells), len(cells)
    return any(row[i:i + n] == wanted for header, rows in tables(text) for row in [header, *rows]
               for i in range(len(row) - n + 1))
