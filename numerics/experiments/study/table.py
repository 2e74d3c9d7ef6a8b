"""A study's table: one row per candidate, the CSV layout (the recipe column always present) and its only reader.

Light on purpose (``csv`` only, no numpy): the package's answer (``idepth --help``) reads the settings and depths of
the certified study's table through :func:`read_rows` as the page writer and the reproduction do. The checks that
need the plan's starts and recipes (:func:`numerics.experiments.study.certified.table.check_rows`) run on top of it
(:func:`numerics.experiments.study.certified.table.read_csv`).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CSV_COLUMNS", "CandidateRow", "read_rows", "table_settings", "table_text"]


@dataclass(frozen=True)
class CandidateRow:
    """One candidate of one cell, as the CSV holds it (losses are eq. 12 on the held-out sets).

    Examples
    --------
    >>> row = CandidateRow(0.0, 0.0, 2, 16, 32, 64, 1, 0, "cold", 1e-3, 6000, False, False, 2.1, 0.03, 2.2, 0.03,
    ...                    True, "abc", "converged_study")
    >>> row.group, row.recipe
    ((0.0, 0.0, 2, 16, 32, 64, 1, 0), 'converged_study')
    """

    a: float
    b: float
    k: int
    d: int
    N: int
    P: int
    depth: int
    seed: int
    start: str
    learning_rate: float
    steps: int
    doubled: bool
    diverged: bool
    R_select: float
    R_select_se: float
    R_L: float
    R_L_se: float
    selected: bool
    cell: str
    recipe: str

    @property
    def group(self) -> tuple:
        """(a, b, k, d, N, P, depth, seed): the cell the row belongs to."""
        return (self.a, self.b, self.k, self.d, self.N, self.P, self.depth, self.seed)

    @property
    def setting(self) -> tuple:
        """(a, b, k, d, N, P): what the envelope's depth law is fitted over."""
        return (self.a, self.b, self.k, self.d, self.N, self.P)


#: the CSV's columns: every field of a row, the recipe's name last
CSV_COLUMNS = tuple(f.name for f in dataclasses.fields(CandidateRow))
_TYPES = {f.name: f.type for f in dataclasses.fields(CandidateRow)}
#: how a CSV cell of each column type is read
_READERS = {"float": float, "int": int, "str": str, "bool": {"True": True, "False": False}.__getitem__}


def table_text(rows, *, provenance: dict | None = None) -> str:
    """The CSV text of ``rows``: a ``# {json}`` provenance line, the header, a line per row (floats by ``repr``).

    Examples
    --------
    >>> row = CandidateRow(0.0, 0.0, 2, 16, 32, 64, 1, 0, "cold", 1e-3, 6000, False, False, 2.1, 0.03, 2.2, 0.03,
    ...                    True, "abc", "converged_study")
    >>> table_text([row]).splitlines()[1]
    '0.0,0.0,2,16,32,64,1,0,cold,0.001,6000,False,False,2.1,0.03,2.2,0.03,True,abc,converged_study'
    """
    buffer = io.StringIO()
    if provenance:
        buffer.write("# " + json.dumps(provenance, sort_keys=True) + "\n")
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        writer.writerow([repr(v) if isinstance(v, float) else str(v) for v in (getattr(row, c) for c in CSV_COLUMNS)])
    return buffer.getvalue()


def _parse(name: str, text: str, line: int):
    try:
        return _READERS[_TYPES[name]](text)
    except (KeyError, ValueError):
        raise ValueError(f"line {line}: column {name!r} must be a {_TYPES[name]}; got {text!r}") from None


def read_rows(path) -> list[CandidateRow]:
    """The rows of a study's CSV, parsed but not checked against a plan (the table's one reader).

    Raises
    ------
    ValueError
        Missing columns, the recipe column among them (named, one line), or a malformed value (line and column).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = pathlib.Path(tmp) / "t.csv"
    ...     _ = path.write_text("a,b\\n0,0\\n")
    ...     read_rows(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: .../t.csv: not a study table: missing columns k, d, N, P, depth, ..., cell, recipe
    """
    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    reader = csv.DictReader(lines)
    missing = [name for name in CSV_COLUMNS if name not in (reader.fieldnames or ())]
    if missing:
        raise ValueError(f"{path}: not a study table: missing columns {', '.join(missing)}")
    return [CandidateRow(**{name: _parse(name, record[name], n) for name in CSV_COLUMNS})
            for n, record in enumerate(reader, start=2)]


def table_settings(rows) -> dict:
    """``{(a, b, k, d, N, P): depths}`` of ``rows``: what a verdicts record written from them may rest on.

    Examples
    --------
    >>> row = CandidateRow(0.0, 0.0, 2, 16, 32, 64, 4, 0, "cold", 1e-3, 6000, False, False, 2.1, 0.03, 2.2, 0.03,
    ...                    True, "abc", "converged_study")
    >>> table_settings([row])
    {(0.0, 0.0, 2, 16, 32, 64): {4}}
    """
    out: dict = {}
    for row in rows:
        out.setdefault(row.setting, set()).add(row.depth)
    return out
