"""The shipped converged study (``converged-study.csv`` of the shipped results) inside a reproduction.

The central claim (eq. 16 with ``α ≈ 1``, Tables 1, 4, 5) is judged from the
converged study (every depth trained until it settles). It costs hours, so a
reproduction reads the shipped table and re-trains a few of its runs. The law
is fitted to the paired depth gains ``g_L = R_1 − R_L = c (1 − L^-α)``, free of
the plateau (:func:`theory.fit_gain_law`); at ``α = 1``, ``g_2 / g_Lmax`` is
``(1/2) / (1 − 1/Lmax)``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from theory.fitting import GainFit, fit_gain_law, gap_fit

from ..criteria import training_failures
from ..shipped import not_found_message, results_dir, shipped_path
from ..study.converged.plan import ConvergedPlan, RunSpec
from ..study.converged.statistics import group_stats
from ..study.converged.table import StudyRow, read_study_csv
from .results import _Labelled

__all__ = ["SHIPPED_SIZES", "SHIPPED_TABLE", "ConvergedSummary", "ConvergedTable", "gap_fit", "load_table",
           "sizes_section", "spot_check_configs"]

#: the converged-study table among the shipped results (:mod:`numerics.experiments.shipped`)
SHIPPED_TABLE = ("converged-study.csv",)
#: the size inference among the shipped results (``idepth study sizes``)
SHIPPED_SIZES = ("sizes", "sizes.json")


@dataclass(frozen=True)
class ConvergedSummary(_Labelled):
    """One (model, width, spectrum, k) of the converged study: means and fit.

    Attributes
    ----------
    R, R_se, gain, gain_se, C, gap : ndarray
        Per depth: ``R_L``, paired gain ``R_1 − R_L`` (± SE), ``C_L``, ``A_L − C_L``.
    steps : tuple of int
        Step caps the runs converged at.
    fit : GainFit or None
        ``None`` with ``fit_reason`` when the gains cannot be fitted.

    References
    ----------
    Paper eqs. (16), (61)-(63); Tables 1, 4, 5.

    Examples
    --------
    >>> s = load_table().summary(0.0, 0.0, 2)  # the shipped table of a source checkout
    >>> s.depths[:3], s.resolved, s.fit.covers(1.0)
    ((1, 2, 4), True, False)
    """

    model: str
    norm: str
    a: float
    b: float
    k: int
    d: int
    N: int
    P: int
    depths: tuple
    R: np.ndarray
    R_se: np.ndarray
    gain: np.ndarray
    gain_se: np.ndarray
    C: np.ndarray
    gap: np.ndarray
    n_seeds: int
    n_runs: int
    n_converged: int
    steps: tuple
    fit: GainFit | None
    fit_reason: str = ""

    @property
    def all_converged(self) -> bool:
        return self.n_converged == self.n_runs

    @property
    def resolved(self) -> bool:
        """The gain at the deepest depth is above two paired SE."""
        return bool(self.gain[-1] > 2 * self.gain_se[-1])

    @property
    def worse_than_shallow(self) -> tuple:
        """Depths whose ``R_L`` exceeds ``R_1`` by two paired SE: a training
        failure (depth L expresses the L = 1 solution, eqs. 59-60)."""
        return training_failures(self.depths, self.gain, self.gain_se)

    @property
    def L0(self) -> float:
        """The plateau of the fit, ``R_1 − c``."""
        return math.nan if self.fit is None else float(self.R[0] - self.fit.c)

    def ratio(self) -> tuple[float, float, float]:
        """``(g_2 / g_Lmax, its conservative SE, its value at α = 1 by eq. 16)``."""
        if 2 not in self.depths or len(self.depths) < 3:
            return math.nan, math.nan, math.nan
        i = self.depths.index(2)
        g2, s2, gL, sL = self.gain[i], self.gain_se[i], self.gain[-1], self.gain_se[-1]
        ratio = g2 / gL
        se = abs(ratio) * math.hypot(s2 / g2 if g2 else math.inf, sL / gL) if g2 else abs(s2 / gL)
        return float(ratio), float(se), 0.5 / (1.0 - 1.0 / self.depths[-1])


@dataclass(frozen=True)
class ConvergedTable:
    """A converged-study CSV: ``path``, ``rows`` (``StudyRow``) and ``provenance``.

    References
    ----------
    Paper Tables 1, 4, 5 (what the table is read for).

    Notes
    -----
    No example: instances come from :func:`load_table`.
    """

    path: Path
    rows: tuple[StudyRow, ...]
    provenance: dict

    def groups(self, model: str = "nonlinear") -> list[tuple]:
        """``(a, b, k, N)`` of every group of ``model`` at its largest N, sorted."""
        widest: dict = {}
        for r in self.rows:
            if r.model == model:
                key = (r.a, r.b, r.k)
                widest[key] = max(widest.get(key, 0), r.N)
        return sorted(key + (N,) for key, N in widest.items())

    def has(self, a: float, b: float, k: int, model: str = "nonlinear") -> bool:
        return any((g[0], g[1], g[2]) == (a, b, k) for g in self.groups(model))

    def summary(self, a: float, b: float, k: int, *, model: str = "nonlinear", N: int | None = None) -> ConvergedSummary:
        """The :class:`ConvergedSummary` of one group (default ``N``: the widest)."""
        if N is None:
            widths = [g[3] for g in self.groups(model) if g[:3] == (a, b, k)]
            if not widths:
                raise KeyError(f"no {model} rows at (a, b, k) = ({a:g}, {b:g}, {k}) in {self.path}")
            N = widths[0]
        rows = [r for r in self.rows if r.group == (model, N, a, b, k)]
        if not rows:
            raise KeyError(f"no {model} rows at (a, b, k, N) = ({a:g}, {b:g}, {k}, {N}) in {self.path}")
        stats = group_stats(rows)
        depths = tuple(sorted(key[5] for key in stats))
        def get(name):
            return np.array([getattr(stats[(model, N, a, b, k, L)], name) for L in depths], dtype=np.float64)

        gain, gain_se = get("delta_R1"), get("delta_R1_se")
        try:
            fit, reason = fit_gain_law(depths, gain, gain_se), ""
        except ValueError as exc:
            fit, reason = None, str(exc)
        return ConvergedSummary(
            model=model, norm=rows[0].norm, a=a, b=b, k=k, d=rows[0].d, N=N, P=rows[0].P, depths=depths,
            R=get("R_L"), R_se=get("R_L_se"), gain=gain, gain_se=gain_se, C=get("C_L"),
            gap=get("A_L") - get("C_L"), n_seeds=len({r.seed for r in rows}), n_runs=len(rows),
            n_converged=sum(r.converged for r in rows), steps=tuple(sorted({r.steps for r in rows})), fit=fit,
            fit_reason=reason)

    def sizes_text(self) -> str:
        """``d``, the main width (the widest ``N``) and ``P`` of the table."""
        r = self.rows[0]
        widths = [g[3] for g in self.groups()] or [row.N for row in self.rows]
        return f"d = {r.d}, N = {max(widths)} (main), P = {r.P}"

    def source_text(self) -> str:
        p = self.provenance
        when = p.get("date", "date unknown")
        return f"`{self.path.name}` ({len(self.rows)} runs, {when}, package {p.get('package_version', '?')})"


def load_table(path: str | Path | None = None) -> ConvergedTable:
    """Read and check a converged-study CSV (default: the shipped one) and its provenance.

    The one reader of the table a reproduction uses: :func:`~numerics.experiments.reproduce.reproduce`
    calls it before any training, so a malformed table is refused before minutes are spent.

    Parameters
    ----------
    path : path, optional
        The CSV (default :data:`SHIPPED_TABLE` among the shipped results,
        :mod:`numerics.experiments.shipped`).

    Returns
    -------
    ConvergedTable

    Raises
    ------
    FileNotFoundError
        No file at ``path`` (names it and how to make one); without ``path``, the shipped
        results not found (:class:`~numerics.experiments.shipped.ShippedResultsNotFound`).
    ValueError
        Not a converged-study table, in one line naming the file: empty, missing columns, no
        rows, a cell that does not parse (line, column, value) or an unreadable provenance.

    References
    ----------
    Paper Tables 1, 4, 5 (what the table is read for).

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "t.csv")
    ...     _ = open(path, "w").write("model,a,b\\nnonlinear,0,0\\n")
    ...     try:
    ...         load_table(path)
    ...     except ValueError as exc:
    ...         print(str(exc).replace(path, "t.csv")[:60])
    t.csv: not a converged-study table: missing columns norm, k,
    """
    path = shipped_path(*SHIPPED_TABLE) if path is None else Path(path)
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "not found"
        raise FileNotFoundError(f"converged-study table {what}: {path} (the shipped results hold "
                                f"{'/'.join(SHIPPED_TABLE)}; `idepth study converged --out DIR` writes one)")
    rows = tuple(read_study_csv(path))
    if not rows:
        raise ValueError(f"{path}: not a converged-study table: a header and no rows")
    prov_path = path.with_suffix(".provenance.json")
    try:
        provenance = json.loads(prov_path.read_text(encoding="utf-8")) if prov_path.is_file() else {}
    except ValueError as exc:
        raise ValueError(f"{prov_path}: the table's provenance is not JSON ({' '.join(str(exc).split())})") from None
    if not isinstance(provenance, dict):
        raise ValueError(f"{prov_path}: the table's provenance must be a JSON object")
    return ConvergedTable(path=path, rows=rows, provenance=provenance)


def spot_check_configs(table: ConvergedTable, picks: Sequence[tuple]) -> list[tuple]:
    """``[(row, TrainConfig)]`` re-training the runs ``picks`` = ``(a, b, k, N,
    depth, seed)`` exactly, rebuilt from the row and the provenance's plan.

    Raises
    ------
    ValueError
        A pick not in the table, or a rebuilt config of another hash.

    Examples
    --------
    >>> [cfg.depth for _, cfg in spot_check_configs(load_table(), [(0.0, 0.0, 2, 32, 1, 0)])]  # doctest: +SKIP
    [1]
    """
    plan_fields = dict(table.provenance.get("plan", {}))
    keep = {"d", "P", "batch_size", "learning_rate", "warmup_steps", "eval_size", "evals_per_run", "dtype"}
    out = []
    for a, b, k, N, depth, seed in picks:
        pick = (a, b, k, N, depth, seed)
        row = next((r for r in table.rows if r.model == "nonlinear"
                    and (r.a, r.b, r.k, r.N, r.depth, r.seed) == pick), None)
        if row is None:
            raise ValueError(f"converged_checks: the table has no run at (a, b, k, N, depth, seed) = "
                             f"{(a, b, k, N, depth, seed)}")
        fields = {name: plan_fields[name] for name in keep if name in plan_fields}
        fields.update(d=row.d, P=row.P, batch_size=row.batch_size, learning_rate=row.learning_rate,
                      eval_size=row.eval_size)
        plan = ConvergedPlan(**fields, base_steps=row.steps, table4_spectra=())
        cfg = plan.config(RunSpec("nonlinear", a, b, N, depth, seed, k), row.steps)
        if cfg.content_hash() != row.content_hash:
            raise ValueError(f"the shipped run {pick} cannot be rebuilt: its hash "
                             f"{row.content_hash[:12]} differs from this code's {cfg.content_hash()[:12]}")
        out.append((row, cfg))
    return out


def sizes_section(table: ConvergedTable | None, linear_sizes: tuple, sizes_path: str | Path | None = None) -> str:
    """The "sizes" part of the consistency section: the size inference against
    ``linear_sizes`` (Table 3), the converged study against Table 1.

    Examples
    --------
    >>> print(sizes_section(None, (128, 1024), "/nonexistent.json").splitlines()[0])
    ### Sizes the paper's numbers imply
    """
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
        lines += ["| quantity | value |", "|---|---|",
                  f"| best (d, P) for the paper's 14 softmax plateaus against B_∞ | ({d_mix}, {P_mix}), χ² = "
                  f"{np.nanmin(chi2):.3g} for {dof} dof |",
                  f"| best (d, P) against B_1 | ({d_one}, {P_one}) |",
                  f"| (d, P) the data allow (B_∞) | {', '.join(f'({d}, {P})' for d, P in data['region_mixture'])} |",
                  f"| χ² at the linear Table 3 sizes (d, P) = ({d_lin}, {P_lin}) | {at_linear or 'not on the grid'} |",
                  f"| source | `{path.name}` ({data['n_seeds']} seeds × {data['n_contexts']} contexts per bound; "
                  "`idepth study sizes`) |", ""]
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
            if not table.has(a, b, 2):
                continue
            s = table.summary(a, b, 2)
            rows.append(f"| ({a:g}, {b:g}) | {r['nonlinear_L0']} | {s.R[-1]:.4g} ± {s.R_se[-1]:.2g} (L = {s.depths[-1]}) | "
                        f"{s.C[-1]:.4g} | {s.R[-1] / r['nonlinear_L0'] - 1:+.1%} | {s.C[-1] / r['nonlinear_L0'] - 1:+.1%} |")
        if rows:
            lines += [f"The converged study at {table.sizes_text()} against the paper's Table 1 softmax plateaus:", "",
                      "| (a, b) | paper L0 | converged R_L, deepest L | C_L, deepest L | R_L / paper − 1 | "
                      "C_L / paper − 1 |", "|---|---|---|---|---|---|"] + rows + [""]
    return "\n".join(lines)
