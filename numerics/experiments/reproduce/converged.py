"""The shipped converged study (``docs/results/converged-study.csv``) inside a reproduction.

The paper's central claim -- softmax attention on the top-k task follows
``R_L = L0 + c L^-α`` with ``α ≈ 1`` once trained to convergence (section 3,
eq. 16, Tables 1, 4, 5) -- is judged from the converged study of
:mod:`numerics.experiments.study.converged`: every depth trained on its own
until the study's convergence rule holds, at the sizes the paper's nonlinear
numbers imply (``idepth study sizes``: d = 16, P = 64), all depths of a spectrum
evaluated on one common set of held-out contexts. That study costs hours, so a
reproduction reads the table the package ships (or one the user regenerates,
``idepth reproduce --converged-table PATH`` / ``--converged-table run``), and
re-trains a few of its runs (:attr:`numerics.experiments.scales.Scale.converged_checks`)
to show that the shipped numbers come out of this code on this machine.

The law is tested on the **paired depth gains** ``g_L = R_1 − R_L`` (same
contexts, same seed; SEs from :func:`numerics.experiments.study.converged.paired_depth_gains`):
eq. (16) gives ``g_L = c (1 − L^-α)`` whatever the plateau, so ``α`` and ``c``
follow from a weighted least-squares profile over ``α`` (:func:`fit_gain_law`)
with ``L0 = R_1 − c``. One model-free number goes with it: ``g_2 / g_Lmax``, which
eq. (16) with ``α = 1`` puts at ``(1/2) / (1 − 1/Lmax) ≈ 0.5``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

__all__ = ["SHIPPED_TABLE", "ConvergedSummary", "ConvergedTable", "GainFit", "fit_gain_law", "gap_fit", "load_table",
           "spot_check_configs"]

#: the table the package ships (present in a source checkout; a wheel does not carry ``docs/``)
SHIPPED_TABLE = Path(__file__).resolve().parents[3] / "docs" / "results" / "converged-study.csv"
#: the α grid of the profile fit (log-spaced)
ALPHA_GRID = np.geomspace(0.01, 10.0, 601)
#: Δχ² of the two-sigma profile interval
DELTA_CHI2_2SIGMA = 4.0


@dataclass(frozen=True)
class GainFit:
    """Weighted least-squares fit of ``g_L = c (1 − L^-α)`` (eq. 16 written for the paired gains).

    Attributes
    ----------
    alpha, c : float
        Best fit (``c ≥ 0``).
    alpha_lo, alpha_hi : float
        Two-sigma profile interval of α (``χ²(α) ≤ χ²_min + 4 max(1, χ²_min/dof)``: a fit worse
        than its errors widens the interval by the Birge ratio); an end at the grid's edge
        (``0.01`` or ``10``) means the data do not bound α on that side.
    c_se : float
        SE of ``c`` at the best α.
    chi2 : float
        ``χ²`` at the best fit (gains treated as independent across depths).
    dof : int
        Depths minus two.

    Examples
    --------
    >>> fit = fit_gain_law([1, 2, 4, 8, 16], [0.0, 0.5, 0.75, 0.875, 0.9375], [0.0, 0.01, 0.01, 0.01, 0.01])
    >>> round(fit.alpha, 2), round(fit.c, 3), fit.covers(1.0)
    (1.0, 1.0, True)
    """

    alpha: float
    alpha_lo: float
    alpha_hi: float
    c: float
    c_se: float
    chi2: float
    dof: int

    def covers(self, alpha: float) -> bool:
        """Whether ``alpha`` lies in the two-sigma profile interval."""
        return self.alpha_lo <= alpha <= self.alpha_hi

    def overlaps(self, lo: float, hi: float) -> bool:
        """Whether the two-sigma interval meets ``[lo, hi]``."""
        return self.alpha_lo <= hi and self.alpha_hi >= lo

    @property
    def bounded(self) -> bool:
        """Both ends of the interval inside the grid (the data bound α on both sides)."""
        return self.alpha_lo > ALPHA_GRID[0] and self.alpha_hi < ALPHA_GRID[-1]

    def interval_text(self) -> str:
        lo = f"{self.alpha_lo:.3g}" if self.alpha_lo > ALPHA_GRID[0] else f"< {ALPHA_GRID[1]:.2g}"
        hi = f"{self.alpha_hi:.3g}" if self.alpha_hi < ALPHA_GRID[-1] else f"> {ALPHA_GRID[-2]:.3g}"
        return f"[{lo}, {hi}]"


def fit_gain_law(depths: Sequence[int], gains: Sequence[float], ses: Sequence[float]) -> GainFit:
    """Fit ``R_1 − R_L = c (1 − L^-α)``, ``c ≥ 0``, to paired depth gains by a profile over α.

    For each α on :data:`ALPHA_GRID` the best ``c`` is a weighted linear least-squares
    solution (weights ``1/SE²``, depths ``L > 1``); the α with the smallest ``χ²`` is the fit
    and ``{α : χ²(α) ≤ χ²_min + 4 max(1, χ²_min/dof)}`` its two-sigma interval (widened by
    the Birge ratio when the law fits worse than the SEs allow).

    Parameters
    ----------
    depths : sequence of int
        Must contain at least two depths above 1.
    gains, ses : sequence of float
        ``R_1 − R_L`` and its paired SE per depth (the entry at ``L = 1`` is ignored).

    Returns
    -------
    GainFit

    Raises
    ------
    ValueError
        Fewer than two depths above 1, or a non-positive or non-finite SE.

    References
    ----------
    Paper eq. (16); the depth gains of eqs. (61)-(63).

    Examples
    --------
    >>> fit_gain_law([1, 2, 4], [0.0, 0.1, 0.2], [0.0, 0.01, 0.01]).dof
    0
    """
    depths = np.asarray(depths, dtype=np.float64)
    gains = np.asarray(gains, dtype=np.float64)
    ses = np.asarray(ses, dtype=np.float64)
    if not (depths.shape == gains.shape == ses.shape):
        raise ValueError(f"depths, gains and ses must have one shape; got {depths.shape}, {gains.shape}, {ses.shape}")
    keep = depths > 1
    if keep.sum() < 2:
        raise ValueError(f"depths must hold at least two depths above 1; got {depths.tolist()}")
    L, g, s = depths[keep], gains[keep], ses[keep]
    if not (np.all(np.isfinite(s)) and np.all(s > 0) and np.all(np.isfinite(g))):
        raise ValueError("gains must be finite and ses finite and positive at every depth above 1")
    w = 1.0 / s**2
    f = 1.0 - L[None, :] ** (-ALPHA_GRID[:, None])  # (alpha, depth)
    c = np.maximum((w * f * g).sum(axis=1) / (w * f * f).sum(axis=1), 0.0)
    chi2 = (w * (g[None, :] - c[:, None] * f) ** 2).sum(axis=1)
    best = int(np.argmin(chi2))
    dof = int(keep.sum() - 2)
    birge = max(1.0, float(chi2[best]) / dof) if dof > 0 else 1.0  # a poor fit widens the interval
    inside = ALPHA_GRID[chi2 <= chi2[best] + DELTA_CHI2_2SIGMA * birge]
    c_se = float(1.0 / math.sqrt((w * f[best] ** 2).sum()))
    return GainFit(alpha=float(ALPHA_GRID[best]), alpha_lo=float(inside.min()), alpha_hi=float(inside.max()),
                   c=float(c[best]), c_se=c_se * math.sqrt(birge), chi2=float(chi2[best]), dof=dof)


def gap_fit(depths: Sequence[int], C: Sequence[float], L0: float) -> dict:
    """The paper's gap fit ``L0 − C_L = c L^-α`` (eqs. 92-93) by least squares on the log scale.

    Returns ``{"ok", "alpha", "alpha_se", "r_squared", "reason"}``; not ``ok`` when some
    ``C_L ≥ L0`` (the logarithm is undefined) or fewer than three depths remain.

    References
    ----------
    Paper eqs. (92)-(93), Table 5.

    Examples
    --------
    >>> out = gap_fit([2, 4, 8, 16], [1.5, 1.75, 1.875, 1.9375], 2.0)
    >>> out["ok"], round(out["alpha"], 3)
    (True, 1.0)
    """
    depths = np.asarray(depths, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    keep = (depths >= 2) & np.isfinite(C)
    L, gap = depths[keep], L0 - C[keep]
    if np.any(gap <= 0):
        first = int(np.argmax(gap <= 0))
        return {"ok": False, "reason": f"C_L = {C[keep][first]:.4g} at L = {int(L[first])} is not below L0 = {L0:.4g}"}
    if L.size < 3:
        return {"ok": False, "reason": f"only {L.size} depths with C_L defined"}
    x, y = np.log(L), np.log(gap)
    coef, cov = np.polyfit(x, y, 1, cov=True)
    residual = y - np.polyval(coef, x)
    r_squared = 1.0 - float(residual @ residual) / float(((y - y.mean()) ** 2).sum())
    return {"ok": True, "alpha": float(-coef[0]), "alpha_se": float(math.sqrt(cov[0, 0])), "r_squared": r_squared,
            "reason": ""}


@dataclass(frozen=True)
class ConvergedSummary:
    """One (model, width, spectrum, k) of the converged study: means over seeds per depth and the law's fit.

    Attributes
    ----------
    model, norm : str
    a, b : float
    k, d, N, P : int
    depths : tuple of int
    R, R_se, gain, gain_se, C, gap : ndarray
        Per depth: ``R_L`` ± SE, the paired gain ``R_1 − R_L`` ± paired SE (mean over seeds),
        ``C_L`` and ``A_L − C_L`` (means over seeds).
    n_seeds, n_runs, n_converged : int
    steps : tuple of int
        Step caps the runs converged at.
    fit : GainFit or None
        ``None`` with ``fit_reason`` when the gains cannot be fitted.
    fit_reason : str
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
    def label(self) -> str:
        return f"({self.a:g}, {self.b:g})"

    @property
    def all_converged(self) -> bool:
        return self.n_converged == self.n_runs

    @property
    def resolved(self) -> bool:
        """The gain at the deepest depth is above two paired SE (a depth effect is measured at all)."""
        return bool(self.gain[-1] > 2 * self.gain_se[-1])

    @property
    def L0(self) -> float:
        """The plateau of the fit, ``R_1 − c``."""
        return math.nan if self.fit is None else float(self.R[0] - self.fit.c)

    def ratio(self) -> tuple[float, float, float]:
        """``(g_2 / g_Lmax, its SE, the value eq. (16) gives with α = 1)``; the SE ignores the (positive)
        covariance of the two gains, so it is conservative."""
        if 2 not in self.depths or len(self.depths) < 3:
            return math.nan, math.nan, math.nan
        i = self.depths.index(2)
        g2, s2, gL, sL = self.gain[i], self.gain_se[i], self.gain[-1], self.gain_se[-1]
        ratio = g2 / gL
        se = abs(ratio) * math.hypot(s2 / g2 if g2 else math.inf, sL / gL) if g2 else abs(s2 / gL)
        return float(ratio), float(se), 0.5 / (1.0 - 1.0 / self.depths[-1])


@dataclass(frozen=True)
class ConvergedTable:
    """A converged-study CSV and its provenance.

    Attributes
    ----------
    path : Path
    rows : tuple of dict
        :func:`numerics.experiments.study.converged.read_study_csv`.
    provenance : dict
        The ``.provenance.json`` beside the CSV (empty if absent).
    """

    path: Path
    rows: tuple
    provenance: dict

    def groups(self, model: str = "nonlinear") -> list[tuple]:
        """``(a, b, k, N)`` of every group of ``model``, main width (largest N) only, sorted."""
        widest: dict = {}
        for r in self.rows:
            if r["model"] == model:
                key = (r["a"], r["b"], r["k"])
                widest[key] = max(widest.get(key, 0), r["N"])
        return sorted(key + (N,) for key, N in widest.items())

    def has(self, a: float, b: float, k: int, model: str = "nonlinear") -> bool:
        return any((g[0], g[1], g[2]) == (a, b, k) for g in self.groups(model))

    def summary(self, a: float, b: float, k: int, *, model: str = "nonlinear", N: int | None = None) -> ConvergedSummary:
        """The :class:`ConvergedSummary` of one group (``N`` default: the widest the table has)."""
        from ..study.converged import group_stats

        if N is None:
            widths = [g[3] for g in self.groups(model) if g[:3] == (a, b, k)]
            if not widths:
                raise KeyError(f"no {model} rows at (a, b, k) = ({a:g}, {b:g}, {k}) in {self.path}")
            N = widths[0]
        rows = [r for r in self.rows if (r["model"], r["a"], r["b"], r["k"], r["N"]) == (model, a, b, k, N)]
        if not rows:
            raise KeyError(f"no {model} rows at (a, b, k, N) = ({a:g}, {b:g}, {k}, {N}) in {self.path}")
        stats = group_stats(rows)
        depths = tuple(sorted(key[5] for key in stats))
        get = lambda name: np.array([stats[(model, N, a, b, k, L)][name] for L in depths], dtype=np.float64)
        gain, gain_se = get("delta_R1"), get("delta_R1_se")
        try:
            fit, reason = fit_gain_law(depths, gain, gain_se), ""
        except ValueError as exc:
            fit, reason = None, str(exc)
        return ConvergedSummary(
            model=model, norm=rows[0]["norm"], a=a, b=b, k=k, d=rows[0]["d"], N=N, P=rows[0]["P"], depths=depths,
            R=get("R_L"), R_se=get("R_L_se"), gain=gain, gain_se=gain_se, C=get("C_L"), gap=get("A_L") - get("C_L"),
            n_seeds=len({r["seed"] for r in rows}), n_runs=len(rows), n_converged=sum(bool(r["converged"]) for r in rows),
            steps=tuple(sorted({r["steps"] for r in rows})), fit=fit, fit_reason=reason)

    def sizes_text(self) -> str:
        r = self.rows[0]
        return f"d = {r['d']}, N = {2 * r['d']} (main), P = {r['P']}"

    def source_text(self) -> str:
        p = self.provenance
        when = p.get("date", "date unknown")
        return f"`{self.path.name}` ({len(self.rows)} runs, {when}, package {p.get('package_version', '?')})"


def load_table(path: str | Path | None = None) -> ConvergedTable:
    """Read a converged-study CSV (default :data:`SHIPPED_TABLE`) and the provenance beside it.

    Raises
    ------
    FileNotFoundError
        No CSV at ``path`` (names the path and how to make one).

    Examples
    --------
    >>> table = load_table()  # doctest: +SKIP
    >>> table.groups()[0]  # doctest: +SKIP
    (0.0, 0.0, 2, 32)
    """
    from ..study.converged import read_study_csv

    path = SHIPPED_TABLE if path is None else Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"converged-study table not found: {path} (a source checkout ships "
                                "docs/results/converged-study.csv; `idepth study converged --out DIR` writes one)")
    rows = tuple(read_study_csv(path))
    if not rows:
        raise ValueError(f"converged-study table {path} has no rows")
    prov_path = path.with_suffix(".provenance.json")
    provenance = json.loads(prov_path.read_text()) if prov_path.is_file() else {}
    return ConvergedTable(path=path, rows=rows, provenance=provenance)


def spot_check_configs(table: ConvergedTable, picks: Sequence[tuple]) -> list[tuple]:
    """``[(row, TrainConfig)]`` that re-train the shipped runs ``picks`` = ``(a, b, k, N, depth, seed)`` exactly.

    The config is rebuilt from the row and the study plan in the provenance; its content hash
    must equal the row's ``content_hash`` (else this code would train something else).

    Raises
    ------
    ValueError
        A pick the table does not hold, or a rebuilt config whose hash differs from the row's.

    Examples
    --------
    >>> [cfg.depth for _, cfg in spot_check_configs(load_table(), [(0.0, 0.0, 2, 32, 1, 0)])]  # doctest: +SKIP
    [1]
    """
    from ..study.converged import ConvergedPlan, RunSpec

    plan_fields = dict(table.provenance.get("plan", {}))
    keep = {"d", "P", "batch_size", "learning_rate", "warmup_steps", "eval_size", "evals_per_run", "dtype"}
    out = []
    for a, b, k, N, depth, seed in picks:
        row = next((r for r in table.rows if r["model"] == "nonlinear" and (r["a"], r["b"], r["k"], r["N"], r["depth"],
                                                                            r["seed"]) == (a, b, k, N, depth, seed)), None)
        if row is None:
            raise ValueError(f"converged_checks: the table has no run at (a, b, k, N, depth, seed) = "
                             f"{(a, b, k, N, depth, seed)}")
        fields = {name: plan_fields[name] for name in keep if name in plan_fields}
        fields.update(d=row["d"], P=row["P"], batch_size=row["batch_size"], learning_rate=row["learning_rate"],
                      eval_size=row["eval_size"])
        plan = ConvergedPlan(**fields, base_steps=row["steps"], table4_spectra=())
        cfg = plan.config(RunSpec("nonlinear", a, b, N, depth, seed, k), row["steps"])
        if cfg.content_hash() != row["content_hash"]:
            raise ValueError(f"the shipped run {(a, b, k, N, depth, seed)} cannot be rebuilt: its hash "
                             f"{row['content_hash'][:12]} differs from this code's {cfg.content_hash()[:12]}")
        out.append((row, cfg))
    return out
