"""The converged study's table: one typed row per run, and the only reader and writer of its CSV.

``docs/results/converged-study.csv`` holds one :class:`StudyRow` per run (columns
:data:`CSV_COLUMNS`), with a ``.provenance.json`` beside it; everything else reads rows through
:func:`read_study_csv`. A row is also a read-only mapping, so ``row["R_L"] == row.R_L``.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import io
import json
import math
import os
import platform
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from numerics.io import write_json, write_text
from theory import __version__

from .plan import ConvergedPlan

__all__ = ["CSV_COLUMNS", "CSV_NAME", "OPTIONAL_COLUMNS", "StudyRow", "as_rows", "provenance", "read_provenance",
           "read_study_csv", "write_study_csv"]


@dataclass(frozen=True)
class StudyRow(Mapping):
    """One run of the converged study, as its CSV holds it.

    Attributes
    ----------
    norm : str
        The model's pre-norm (``"layer"`` or ``"rms"``).
    steps, attempts : int
        Step cap of the attempt the row reports; attempts trained (the cap doubled after each).
    converged : bool
        The study's rule (:func:`numerics.experiments.criteria.is_converged`).
    R_L, R_L_se, A_L, C_L : float
        Held-out loss ± SE, the mean head's loss and the shared error (NaN at L = 1).
    change_last_quarter : float
        ``R(S) − R(3S/4)`` (:func:`numerics.experiments.criteria.last_quarter_change`).
    delta_R1, delta_R1_se : float
        ``R_1 − R_L`` of the same model, width, spectrum and seed, paired over the contexts.
    content_hash : str
        The run's key in the store.
    doubling_gain, doubling_gain_se : float
        Paired ``R(S) − R(2S)`` of the doubling check (NaN where not run; optional columns).

    Examples
    --------
    >>> row = StudyRow.from_mapping(dict.fromkeys(CSV_COLUMNS, "1") | {"model": "nonlinear", "converged": "true"})
    >>> row.depth, row["R_L"], row.converged, row.group
    (1, 1.0, True, ('nonlinear', 1, 1.0, 1.0, 1))
    """

    model: str
    norm: str
    a: float
    b: float
    k: int
    d: int
    N: int
    P: int
    depth: int
    seed: int
    steps: int
    converged: bool
    R_L: float
    R_L_se: float
    A_L: float
    C_L: float
    change_last_quarter: float
    attempts: int
    delta_R1: float
    delta_R1_se: float
    eval_size: int
    eval_seed: int
    batch_size: int
    learning_rate: float
    cpu_time: float
    content_hash: str
    doubling_gain: float = math.nan
    doubling_gain_se: float = math.nan

    @classmethod
    def from_mapping(cls, values: Mapping) -> StudyRow:
        """The row of ``values`` (CSV text or Python values), each column parsed to its field's type.

        A missing column or a value not of its column's type raises ``ValueError`` naming them.
        """
        missing = _missing(values)
        if missing:
            raise ValueError(f"a converged-study row must have every column; missing: {', '.join(missing)}")
        return cls(**{name: _parse(name, values[name]) for name in CSV_COLUMNS if name in values})

    @property
    def group(self) -> tuple:
        """``(model, N, a, b, k)``: the runs a depth curve is made of (over depths and seeds)."""
        return (self.model, self.N, self.a, self.b, self.k)

    def __getitem__(self, name: str):
        if name not in _TYPES:
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(CSV_COLUMNS)

    def __len__(self) -> int:
        return len(CSV_COLUMNS)


#: the table's file name in a study's output directory
CSV_NAME = "converged-study.csv"
#: the columns of ``docs/results/converged-study.csv`` (one row per run), in file order
CSV_COLUMNS = tuple(f.name for f in dataclasses.fields(StudyRow))
#: columns a table written before they existed may lack (read as NaN)
OPTIONAL_COLUMNS = ("doubling_gain", "doubling_gain_se")
_TYPES = {f.name: f.type for f in dataclasses.fields(StudyRow)}


def _missing(columns) -> list[str]:
    return [name for name in CSV_COLUMNS if name not in columns and name not in OPTIONAL_COLUMNS]


def _parse(name: str, value):
    """``value`` (CSV text or a Python value) as the type of column ``name``."""
    kind = _TYPES[name]
    try:
        if kind == "str":
            return str(value)
        if kind == "bool":
            if isinstance(value, str):
                return {"true": True, "false": False}[value]
            return bool(value)
        if kind == "int":
            if not isinstance(value, str):
                return int(value)
            number = float(value)
            if not number.is_integer():  # CSV text: "2.5" is no integer
                raise ValueError(value)
            return int(number)
        return float(value)
    except (TypeError, ValueError, KeyError, OverflowError):
        allowed = " ('true' or 'false')" if kind == "bool" else ""
        raise ValueError(f"column {name} must hold {'an' if kind == 'int' else 'a'} {kind}{allowed}; "
                         f"got {value!r}") from None


def as_rows(rows: Iterable[Mapping]) -> list[StudyRow]:
    """``rows`` as :class:`StudyRow` (rows already typed pass through; mappings are parsed).

    Examples
    --------
    >>> as_rows([dict.fromkeys(CSV_COLUMNS, 2.0) | {"model": "nonlinear", "converged": False}])[0].N
    2
    """
    return [row if isinstance(row, StudyRow) else StudyRow.from_mapping(row) for row in rows]


def _format(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    return str(value)


def write_study_csv(rows: Sequence[Mapping], path, *, provenance: Mapping | None = None) -> Path:
    """Write ``rows`` to ``path`` (atomically) and ``provenance`` beside it (``.provenance.json``).

    Examples
    --------
    >>> import tempfile, os
    >>> row = dict.fromkeys(CSV_COLUMNS, 0.5) | {"model": "nonlinear", "norm": "layer", "converged": False}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = write_study_csv([row], os.path.join(tmp, "s.csv"), provenance={"command": "x"})
    ...     head = open(path).read().splitlines()[0].split(",")[:3]
    ...     head, os.path.isfile(os.path.join(tmp, "s.provenance.json"))
    (['model', 'norm', 'a'], True)
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in as_rows(rows):
        writer.writerow([_format(getattr(row, name)) for name in CSV_COLUMNS])
    path = Path(path)
    write_text(path, buffer.getvalue())
    if provenance is not None:
        write_json(path.with_suffix(".provenance.json"), dict(provenance))
    return path


def read_study_csv(path) -> list[StudyRow]:
    """The rows of a study CSV, typed; a file that is not such a table raises ``ValueError`` naming it.

    What is wrong is said in one line: an empty file, the missing columns, or the first line whose
    cells do not parse (its line number, the column and the value).

    Examples
    --------
    >>> import tempfile, os
    >>> row = dict.fromkeys(CSV_COLUMNS, 1.0) | {"model": "nonlinear", "norm": "layer", "converged": True,
    ...                                         "content_hash": "x"}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = write_study_csv([row], os.path.join(tmp, "s.csv"))
    ...     back = read_study_csv(os.path.join(tmp, "s.csv"))[0]
    >>> back.converged, back.R_L, back.depth
    (True, 1.0, 1)
    """
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None:
                raise ValueError(f"{path}: not a converged-study table: the file is empty (no header line naming "
                                 "its columns)")
            missing = _missing(reader.fieldnames)
            if missing:
                raise ValueError(f"{path}: not a converged-study table: missing columns {', '.join(missing)}")
            rows = []
            for raw in reader:
                if None in raw or None in raw.values():  # more or fewer cells than the header names
                    cells = sum(v is not None for k, v in raw.items() if k is not None) + len(raw.get(None) or ())
                    raise ValueError(f"{path}, line {reader.line_num}: {cells} cells where the header names "
                                     f"{len(reader.fieldnames)} columns")
                try:
                    rows.append(StudyRow.from_mapping(raw))
                except ValueError as exc:
                    raise ValueError(f"{path}, line {reader.line_num}: {exc}") from None
            return rows
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a converged-study table: not UTF-8 text ({exc.reason} at byte "
                         f"{exc.start})") from None
    except csv.Error as exc:
        raise ValueError(f"{path}: not a converged-study table: {exc}") from None


def read_provenance(path) -> dict | None:
    """The ``.provenance.json`` that :func:`write_study_csv` wrote beside the table at ``path`` (None without one).

    Examples
    --------
    >>> read_provenance("/nonexistent/converged-study.csv") is None
    True
    """
    prov_path = Path(path).with_suffix(".provenance.json")
    return json.loads(prov_path.read_text()) if prov_path.is_file() else None


def provenance(plan: ConvergedPlan, command: str, elapsed: float | None = None) -> dict:
    """Package version, command, date, machine and the plan of a study CSV.

    Examples
    --------
    >>> sorted(provenance(ConvergedPlan(), "idepth study converged"))[:3]
    ['command', 'date', 'elapsed_seconds']
    """
    machine = {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
               "cpu_count": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__}
    return {"package_version": __version__, "command": command,
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": machine, "elapsed_seconds": elapsed, "plan": plan.to_dict()}
