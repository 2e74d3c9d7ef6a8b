"""The certified study inside a reproduction: the best loss each depth reaches (Tables 1, 4, 5; Figs. 1, 6).

The reproduction does not train the deep softmax models itself (that costs CPU-days); it reads the certified
study's verdicts record (:func:`numerics.experiments.study.answer.read_record`, under ``certified-revised/``) and
the study's decomposition of its winners
(``A_L``, ``C_L``, eqs. 61-63), and re-trains a few of the study's candidates to check that the shipped numbers
come out of this code (:func:`spot_check_configs`).

Per setting, the record's :class:`~numerics.experiments.study.curves.CurveSummary` holds the envelope ``R*_L``
(mean over seeds of each seed's winner, ± its bootstrap SE), the paired SEs of the gains ``g_L = R*_1 − R*_L``, the
untrained bound ``B_L``, the verdict with the depths it rests on, and the gain-law α, which is reported only where
the law fits (χ²/dof ≤ :data:`~numerics.experiments.criteria.GAIN_LAW_MAX_CHI2_DOF`).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .. import criteria
from ..shipped import not_found_message, results_dir, shipped_path
from ..study.curves import CurveSummary

__all__ = ["SHIPPED_SIZES", "SPOT_CHECK_FIELDS", "EnvelopeTable", "load_envelopes",
           "sizes_section", "spot_check_configs"]

#: the size inference among the shipped results (``idepth study sizes``)
SHIPPED_SIZES = ("sizes", "sizes.json")
#: what names one candidate of the certified study that a reproduction re-trains (``Scale.certified_checks``)
SPOT_CHECK_FIELDS = ("a", "b", "k", "P", "depth", "seed", "start", "learning_rate", "steps")


@dataclass(frozen=True)
class EnvelopeTable:
    """The certified study's current settings, one :class:`~numerics.experiments.study.curves.CurveSummary` each,
    read by :func:`load_envelopes`.

    Notes
    -----
    No example: instances come from :func:`load_envelopes`.
    """

    source: Path
    summaries: tuple

    def groups(self, k: int | None = None) -> list[tuple]:
        """``(a, b, k, P)`` of every setting (of top-``k`` if given), sorted."""
        return sorted((s.a, s.b, s.k, s.P) for s in self.summaries if k is None or s.k == k)

    @property
    def main_P(self) -> int:
        """The P of the study's main settings (the most common; of equally common ones, the first)."""
        return Counter(s.P for s in self.summaries).most_common(1)[0][0]

    def find(self, a: float, b: float, k: int, *, P: int | None = None) -> CurveSummary | None:
        """The summary of one setting (default ``P``: the main one), or None.

        Examples
        --------
        >>> table = load_envelopes()  # the shipped verdicts of a source checkout
        >>> table.find(0.0, 0.0, 2).P == table.main_P, table.find(9.0, 9.0, 2)
        (True, None)
        """
        P = self.main_P if P is None else int(P)
        return next((s for s in self.summaries if (s.a, s.b, s.k, s.P) == (float(a), float(b), int(k), P)), None)

    def summary(self, a: float, b: float, k: int, *, P: int | None = None) -> CurveSummary:
        """:meth:`find`, but a missing setting is a ``KeyError`` naming it.

        Examples
        --------
        >>> s = load_envelopes().summary(0.0, 0.0, 2)  # the shipped verdicts of a source checkout
        >>> s.depths[:3], bool(s.gain > 0)
        ((1, 2, 4), True)
        """
        P = self.main_P if P is None else int(P)
        found = self.find(a, b, k, P=P)
        if found is None:
            raise KeyError(f"no certified setting at (a, b, k, P) = ({a:g}, {b:g}, {k}, {P}) in {self.source}")
        return found

    def sizes_text(self) -> str:
        s = self.summaries[0]
        return f"d = {s.d}, N = {s.N}, P = {self.main_P}"

    def source_text(self) -> str:
        return (f"the certified study's current verdicts (`certified-study.verdicts.json`, {len(self.summaries)} "
                "settings, from the revised study)")


def _decompositions(results: Path) -> dict:
    """``{(a, b, k, P): {depth: (C_L, A_L − C_L)}}`` of the revised study's winners, mean over seeds, at its main
    k and P (empty without the revised study's facts)."""
    from ..study.answer import REVISED_DIR, REVISED_FACTS, VERDICTS_FILE

    path = results / REVISED_FACTS
    if not path.is_file():
        return {}
    try:
        facts = json.loads(path.read_text(encoding="utf-8"))
        main = json.loads((results / REVISED_DIR / VERDICTS_FILE).read_text(encoding="utf-8"))["main"]
    except (OSError, KeyError, ValueError) as exc:
        raise ValueError(f"{path.parent}: the revised study's facts cannot be read ({' '.join(str(exc).split())})"
                         ) from None
    out: dict = {}
    for row in facts.get("decomposition", []):
        C, gap = row.get("C"), row.get("A_minus_C")
        out.setdefault((float(row["a"]), float(row["b"]), int(main["k"]), int(main["P"])), {})[int(row["depth"])] = (
            math.nan if C is None else C["value"], math.nan if gap is None else gap["value"])
    return out


def load_envelopes(results: str | Path | None = None) -> EnvelopeTable:
    """Read the certified study's current settings (default: the shipped results) as an :class:`EnvelopeTable`.

    The one reader of the certified study a reproduction uses; it reads before any training, so a malformed
    file is refused before minutes are spent. Each setting is read back with
    :meth:`~numerics.experiments.study.curves.CurveSummary.from_dict`, with the revised study's decomposition
    of its winners (``C_L``, ``A_L − C_L``, eqs. 61-63; NaN where not decomposed).

    Parameters
    ----------
    results : path, optional
        A results directory holding the study's ``certified-revised/certified-study.verdicts.json`` and its
        ``certified-study.csv``; default the shipped results (:mod:`numerics.experiments.shipped`).

    Raises
    ------
    FileNotFoundError
        No verdicts in ``results`` (naming the file); without ``results``, the shipped results not found.
    ValueError
        A verdicts file that disagrees with its cells, or a setting written by an older package (naming it).

    References
    ----------
    Paper Tables 1, 4, 5 (what the study is read for).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     try:
    ...         load_envelopes(tmp)
    ...     except FileNotFoundError as exc:
    ...         print("certified-study.verdicts.json not found" in str(exc))
    True
    """
    from ..study.answer import REVISED_DIR, VERDICTS_FILE, read_record

    path = shipped_path() if results is None else Path(results)
    record = read_record(path / REVISED_DIR / VERDICTS_FILE)
    grid = tuple(record.get("alpha_grid", (criteria.ALPHA_GRID[0], criteria.ALPHA_GRID[-1])))
    decompositions = _decompositions(path)
    try:
        summaries = tuple(CurveSummary.from_dict(s, grid=grid, decomposition=decompositions.get(
            (float(s["a"]), float(s["b"]), int(s["k"]), int(s["P"])), {})) for s in record["settings"])
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    if not summaries:
        raise ValueError(f"{path}: the certified verdicts hold no setting")
    return EnvelopeTable(source=path, summaries=summaries)


def spot_check_configs(picks: Sequence[tuple], results: str | Path | None = None) -> list[tuple]:
    """``[(row, TrainConfig)]``: the certified candidates ``picks`` (each :data:`SPOT_CHECK_FIELDS`), rebuilt
    exactly from their cells, to re-train and compare with the shipped selection-set loss.

    Only cold-started candidates of the first certified study are rebuilt (a warm start needs its parent's
    weights). ``row``: a dict of the shipped candidate's fields, ``R_select`` and ``R_select_se`` among them.

    Raises
    ------
    ValueError
        A pick that is not a cold start, not in the table, or whose cell is missing.

    Examples
    --------
    >>> [cfg.depth for _, cfg in spot_check_configs([(0.0, 0.0, 2, 64, 1, 0, "cold", 1e-3, 6000)])]  # doctest: +SKIP
    [1]
    """
    from ..study.certified.cells import read_cell
    from ..study.plan import Candidate, Cell
    from ..study.certified.table import read_csv

    base = shipped_path() if results is None else Path(results)
    table = base / "certified-study.csv"
    rows = read_csv(table) if picks else []
    out = []
    for pick in picks:
        a, b, k, P, depth, seed, start, lr, steps = pick
        if start != "cold":
            raise ValueError(f"certified_checks: {pick} is not a cold start (a warm start needs its parent's weights)")
        row = next((r for r in rows if (r.a, r.b, r.k, r.P, r.depth, r.seed, r.start, r.learning_rate, r.steps)
                    == (a, b, k, P, depth, seed, start, lr, steps) and not r.doubled), None)
        if row is None:
            raise ValueError(f"certified_checks: {table} has no candidate at "
                             f"({', '.join(SPOT_CHECK_FIELDS)}) = {pick}")
        cell_path = base / "certified" / "cells" / f"{row.cell}.npz"
        if not cell_path.is_file():
            raise ValueError(f"certified_checks: the cell of {pick} is missing ({cell_path})")
        record, _ = read_cell(cell_path)
        cell = Cell.from_dict(record["config"])
        cfg = cell.train_config(Candidate(start, lr, steps), None)
        out.append(({**{name: getattr(row, name) for name in SPOT_CHECK_FIELDS}, "R_select": row.R_select,
                     "R_select_se": row.R_select_se}, cfg))
    return out


def sizes_section(table: EnvelopeTable | None, linear_sizes: tuple, sizes_path: str | Path | None = None) -> str:
    """The "sizes" part of the consistency section: the size inference against ``linear_sizes`` (Table 3),
    the certified envelope against Table 1.

    Examples
    --------
    >>> print(sizes_section(None, (128, 1024), "/nonexistent.json").splitlines()[0])
    ### Sizes the paper's numbers imply
    """
    from .._markdown import markdown_table

    lines = ["### Sizes the paper's numbers imply", ""]
    if sizes_path is not None:
        path = Path(sizes_path)
    else:
        path = shipped_path(*SHIPPED_SIZES) if results_dir() is not None else None
    d_lin, P_lin = linear_sizes
    if path is None:
        lines += [f"No size inference: {not_found_message()}.", ""]
    elif path.is_file():
        data = json.loads(path.read_text())
        (d_mix, P_mix), (d_one, P_one) = data["best_mixture"], data["best_single"]
        chi2 = np.asarray(data["chi2_mixture"])
        dof = len(data["rows"]) - 2
        at_linear = ""
        if d_lin in data["d_values"] and P_lin in data["P_values"]:
            at_linear = f"{chi2[data['d_values'].index(d_lin), data['P_values'].index(P_lin)]:.3g}"
        lines += markdown_table(("quantity", "value"), [
            ("best (d, P) for the paper's 14 softmax plateaus against B_∞",
             f"({d_mix}, {P_mix}), χ² = {np.nanmin(chi2):.3g} for {dof} dof"),
            ("best (d, P) against B_1", f"({d_one}, {P_one})"),
            ("(d, P) the data allow (B_∞)", ", ".join(f"({d}, {P})" for d, P in data["region_mixture"])),
            (f"χ² at the linear Table 3 sizes (d, P) = ({d_lin}, {P_lin})", at_linear or "not on the grid"),
            ("source", f"`{path.name}` ({data['n_seeds']} seeds × {data['n_contexts']} contexts per bound; "
                       "`idepth study sizes`)")]) + [""]
        softmax_d = {d for d, _ in data["region_mixture"]}
        different = d_lin not in softmax_d
        lines += [("**Table 1 compares two columns measured at different sizes**" if different else
                   "Table 1's two columns may come from the same sizes")
                  + f": its linear column matches d = {d_lin}, P ≈ {P_lin} (Table 3), its softmax column d ∈ "
                  f"{sorted(softmax_d)} — at d = {d_lin} no mixture of softmax heads comes near the softmax plateaus "
                  "(see the table above). The softmax-versus-linear gap of Table 1 is therefore not a comparison at "
                  "equal sizes.", ""]
    else:
        lines += [f"No size inference found at `{path}` (`idepth study sizes --out DIR` writes one).", ""]
    if table is not None:
        from theory.paper import paper_table

        rows = []
        for r in paper_table("table1"):
            a, b = float(r["a"]), float(r["b"])
            s = table.find(a, b, 2)
            if s is None:
                continue
            decomposed = s.C.finite()  # C_L at the deepest depth decomposed
            L_C, C = (int(decomposed.depths[-1]), float(decomposed.mean[-1])) if len(decomposed.depths) else (0, 0.0)
            paper = r["nonlinear_L0"]
            rows.append((f"({a:g}, {b:g})", paper, f"{s.R.mean[-1]:.4g} ± {s.R.se[-1]:.2g} (L = {s.depths[-1]})",
                         f"{C:.4g} (L = {L_C})" if L_C else "—", f"{s.R.mean[-1] / paper - 1:+.1%}",
                         f"{C / paper - 1:+.1%}" if L_C else "—"))
        if rows:
            lines += [f"The certified envelope at {table.sizes_text()} against the paper's Table 1 softmax plateaus:",
                      ""] + markdown_table(("(a, b)", "paper L0", "envelope R*_L, deepest L", "C_L, deepest L decomposed",
                                            "R*_L / paper − 1", "C_L / paper − 1"), rows) + [""]
    return "\n".join(lines)
