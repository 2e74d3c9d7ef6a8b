"""The certified study's table: one row per candidate (the CSV), and the per-context errors behind it.

:func:`collect` reads the exported cells into :class:`CandidateRow` rows and an :class:`Errors` array;
:func:`write_csv` and :func:`read_csv` write and read ``certified-study.csv`` through the one layout and reader of a
study's table (:mod:`numerics.experiments.study.table`: the recipe column always present). Every table is checked
(:func:`check_rows`): a known recipe, starts and rates, and in each cell exactly one ``selected`` row, the
envelope's (least selection-set loss among the non-doubling candidates). An exported cell that names no recipe
was trained with the plan's (:data:`~numerics.experiments.study.plan.RECIPE`):
:func:`_recipe_of_record` says so in one place.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from numerics.io import write_text

from ...recipes import RECIPES
from ..table import CSV_COLUMNS, CandidateRow, read_rows, table_text
from .cells import SUMMARY_COLUMNS, cell_files, read_cell
from ..plan import RECIPE, STARTS, Cell

__all__ = ["CSV_COLUMNS", "PLAN_FIELDS", "CandidateRow", "Errors", "check_plan_versions", "check_rows", "collect", "csv_text",
           "read_csv", "write_csv"]


@dataclass(frozen=True, eq=False)
class Errors:
    """Report-set squared errors, ``values[i]`` for ``rows[i]`` (float32; contexts shared by setting).

    Examples
    --------
    >>> Errors((), np.zeros((0, 4), np.float32)).values.shape
    (0, 4)
    >>> row = object()
    >>> Errors((row,), np.ones((1, 4), np.float32)).of(row).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """

    rows: tuple
    values: np.ndarray

    @cached_property
    def _index(self) -> dict:
        return {id(row): i for i, row in enumerate(self.rows)}

    def of(self, row) -> np.ndarray:
        """The report-set errors of ``row`` (one of :attr:`rows`, by identity)."""
        return self.values[self._index[id(row)]]


def _recipe_of_record(record: dict) -> str:
    """The recipe of an exported cell: its ``recipe`` if it names one, else its config's (a plan made with another
    recipe hashes it into its cells), else the shipped plan's."""
    return record.get("recipe") or (record.get("config", {}).get("recipe") or {}).get("name") or RECIPE


def _rows_of_cell(record: dict, arrays: dict) -> list[CandidateRow]:
    cell = Cell.from_dict(record["config"])
    recipe = _recipe_of_record(record)
    summary = arrays["summary"]
    col = {name: i for i, name in enumerate(SUMMARY_COLUMNS)}
    winner = int(record["metrics"]["winner"])
    return [CandidateRow(cell.a, cell.b, cell.k, cell.d, cell.N, cell.P, cell.depth, cell.seed, c.start,
                         c.learning_rate, c.steps, c.doubled, bool(summary[i, col["diverged"]]),
                         float(summary[i, col["R_select"]]), float(summary[i, col["R_select_se"]]),
                         float(summary[i, col["R_report"]]), float(summary[i, col["R_report_se"]]), i == winner,
                         record["hash"], recipe)
            for i, c in enumerate(cell.candidates)]


#: the fields of a cell's config that its plan fixes for every cell: cells that differ in one are of two plans
PLAN_FIELDS = ("version", "d", "N", "model", "dtype", "stream", "batch_size", "warmup_steps", "evals_per_run",
               "eval_size", "select_size", "report_size", "report_block", "bound_contexts", "bound_depths",
               "nested_noise")
#: what a version-1 cell's dict leaves out (it was written before these fields existed)
_VERSION1 = {"version": 1, "report_block": 1}


def check_plan_versions(configs, source) -> None:
    """``ValueError`` naming ``source`` and the field when cell ``configs`` (dicts) come from different plans.

    Examples
    --------
    >>> check_plan_versions([{"eval_size": 4096}, {"eval_size": 4096}], "cells")
    >>> check_plan_versions([{"eval_size": 4096}, {"eval_size": 2048}], "cells")
    Traceback (most recent call last):
    ...
    ValueError: cells mixes plan versions: eval_size is 2048 in some cells and 4096 in others
    """
    for name in PLAN_FIELDS:
        values = sorted({json.dumps(c.get(name, _VERSION1.get(name))) for c in configs
                         if name in c or name in _VERSION1})
        if len(values) > 1:
            raise ValueError(f"{source} mixes plan versions: {name} is {' in some cells and '.join(values)} in others")


def collect(cells_dir) -> tuple[list[CandidateRow], Errors]:
    """The candidates of the cells exported to ``cells_dir`` (by setting, depth, seed) and their errors.

    Raises
    ------
    ValueError
        Cells of different plan versions (:func:`check_plan_versions`), or a failed :func:`check_rows`.

    Notes
    -----
    No example: it needs exported cells (``tests/test_certified.py``).
    """
    rows, errors, configs = [], [], []
    for path in cell_files(cells_dir):
        record, arrays = read_cell(path)
        configs.append(record["config"])
        rows += _rows_of_cell(record, arrays)
        errors += list(arrays["report_errors"])
    check_plan_versions(configs, f"the cells directory {cells_dir}")  # before their arrays are stacked
    order = sorted(range(len(rows)), key=lambda i: (rows[i].setting, rows[i].depth, rows[i].seed))
    rows = [rows[i] for i in order]
    values = np.asarray([errors[i] for i in order], dtype=np.float32) if rows else np.zeros((0, 0), np.float32)
    check_rows(rows)
    return rows, Errors(tuple(rows), values)


def check_rows(rows) -> None:
    """``ValueError`` naming the row: no or an unknown recipe, start or rate, a cell of two recipes, or a selection
    that is not the envelope.

    Examples
    --------
    >>> check_rows([])
    """
    groups: dict = {}
    for i, row in enumerate(rows):
        if getattr(row, "recipe", None) not in RECIPES:
            raise ValueError(f"row {i}: recipe must be one of {', '.join(RECIPES)}; got {getattr(row, 'recipe', None)!r}")
        if row.start not in STARTS:
            raise ValueError(f"row {i}: start must be one of {', '.join(STARTS)}; got {row.start!r}")
        if not (row.learning_rate > 0) and (row.steps > 0 or row.start == "cold"):
            raise ValueError(f"row {i}: a trained candidate needs a learning rate > 0; got {row.learning_rate!r}")
        groups.setdefault(row.group, []).append((i, row))
    for group, members in groups.items():
        recipes = sorted({r.recipe for _, r in members})
        if len(recipes) > 1:
            raise ValueError(f"rows {[i for i, _ in members]} (a, b, k, d, N, P, depth, seed = {group}): recipe: one "
                             f"cell trains with one recipe; got {', '.join(map(repr, recipes))}")
        chosen = [i for i, r in members if r.selected]
        if len(chosen) != 1:
            raise ValueError(f"rows {[i for i, _ in members]} (a, b, k, d, N, P, depth, seed = {group}): "
                             f"{len(chosen)} rows are selected, exactly one must be")
        eligible = [(r.R_select, i) for i, r in members if not r.doubled and math.isfinite(r.R_select)]
        best = min(eligible)[1]
        if rows[best].R_select < rows[chosen[0]].R_select:
            raise ValueError(f"row {chosen[0]}: selected, but row {best} of the same cell has the smaller selection "
                             f"loss ({rows[best].R_select:.6g} < {rows[chosen[0]].R_select:.6g}): the envelope "
                             "disagrees with its candidates")


def write_csv(rows, path, *, provenance: dict | None = None) -> Path:
    """Write ``rows`` (checked first) as CSV, a ``# {json}`` provenance line first; atomic (:func:`csv_text`).

    Notes
    -----
    No example: it writes a file (``tests/test_certified.py``).
    """
    return write_text(path, csv_text(rows, provenance=provenance))


def csv_text(rows, *, provenance: dict | None = None) -> str:
    """The text of ``certified-study.csv`` of ``rows`` (checked first; ``ValueError`` naming a bad row).

    Notes
    -----
    No example: rows come from finished cells (``tests/test_certified.py``).
    """
    check_rows(rows)
    return table_text(rows, provenance=provenance)


def read_csv(path) -> list[CandidateRow]:
    """The rows of a certified-study CSV, checked (:func:`check_rows`).

    Raises
    ------
    ValueError
        Missing columns (named, one line), a malformed value (line and column), or a failed check.

    Notes
    -----
    No example: it reads a file (``tests/test_certified.py``).
    """
    rows = read_rows(path)
    check_rows(rows)
    return rows
