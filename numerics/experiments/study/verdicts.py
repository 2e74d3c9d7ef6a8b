"""Verdicts of the regime study: one depth curve per (size, spectrum, regime), fitted
(eq. 16) and named by the rules of :mod:`numerics.experiments.criteria`."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from numerics.io import json_clean

from .. import criteria
from ..scales import REGIMES

__all__ = ["RegimePoint", "summarise_point", "name_regime"]


@dataclass(frozen=True)
class RegimePoint:
    """The depth dependence of one (size, spectrum, regime) point.

    Attributes
    ----------
    n_seeds : int
        Seeds (or disjoint groups of separate models) per depth.
    R, R_se, A, C : tuple of float
        Means over seeds per depth (``R_se``: SE over seeds; ``C`` NaN at L = 1).
    depth_gain, depth_gain_se : float
        ``R_1 / R_{L_max}`` and its delta-method SE.
    alpha, alpha_low, alpha_high, L0, c : float
        The fit of ``R_L = L0 + c L^(−alpha)`` (eq. 16), alpha's 95 % interval.
    plateau_change, gap_change : float
        Relative change of ``C_L`` and of ``A_L − C_L`` over the last doubling of depth.
    settles : bool
        Both changes below :data:`numerics.experiments.criteria.SETTLING_TOLERANCE`.
    verdict : str
        :func:`numerics.experiments.criteria.classify_depth_dependence`.

    References
    ----------
    Paper eqs. (16), (61)-(63).

    Examples
    --------
    >>> p = summarise_point("lazy", (16, 64, 16), (0.0, 0.0), 2, [1, 2, 4, 8],
    ...                     [[4.0, 3.0, 2.5, 2.25]] * 3, [[4.0, 4.0, 4.0, 4.0]] * 3, [[np.nan, 2.0, 2.0, 2.0]] * 3)
    >>> round(p.depth_gain, 6), round(p.alpha, 6), p.settles, p.verdict
    (1.777778, 1.0, True, 'inverse-depth')
    """

    d: int
    P: int
    N: int
    k: int
    a: float
    b: float
    regime: str
    depths: tuple
    n_seeds: int
    R: tuple
    R_se: tuple
    A: tuple
    C: tuple
    depth_gain: float
    depth_gain_se: float
    alpha: float
    alpha_low: float
    alpha_high: float
    L0: float
    c: float
    plateau_change: float
    gap_change: float
    settles: bool
    verdict: str

    @property
    def gap(self) -> tuple:
        """``A_L − C_L`` per depth."""
        return tuple(a - c for a, c in zip(self.A, self.C))

    def to_dict(self) -> dict:
        """JSON-able dict (NaN as None)."""
        return json_clean(dataclasses.asdict(self))


def summarise_point(regime, size, spectrum, k, depths, R, A, C) -> RegimePoint:
    """Fit and classify one point from per-seed ``R_L``, ``A_L``, ``C_L`` arrays (seeds x depths).

    Notes
    -----
    No example: it needs trained runs or Monte-Carlo bounds (minutes); see :class:`RegimePoint`.

    References
    ----------
    Paper eqs. (16), (61)-(63).
    """
    from theory.fitting import fit_depth_law

    depths = [int(L) for L in depths]
    R, A, C = (np.atleast_2d(np.asarray(x, dtype=np.float64)) for x in (R, A, C))
    n = R.shape[0]
    R_mean, A_mean = R.mean(axis=0), A.mean(axis=0)
    with np.errstate(invalid="ignore"):
        C_mean = np.array([np.nan if np.all(np.isnan(col)) else np.nanmean(col) for col in C.T])
    R_se = criteria.standard_error(R, axis=0)
    gain, gain_se = (criteria.depth_gain(R_mean[0], R_mean[-1], R_se[0], R_se[-1]) if depths[0] == 1
                     else (math.nan, math.nan))
    alpha = lo = hi = L0 = c = math.nan
    if len(set(depths)) >= 3 and np.all(R > 0):
        try:
            fit = fit_depth_law(depths, R if n > 1 else R[0])
            alpha, L0, c = fit.alpha, fit.L0, fit.c
            lo, hi = fit.interval("alpha")
        except (ValueError, np.linalg.LinAlgError, OverflowError, FloatingPointError):
            pass  # no fit (reported as "—"); theory.fit_depth_law can overflow on non-monotone data
    plateau_change = criteria.last_doubling(depths, C_mean)[2]
    gap_change = criteria.last_doubling(depths, A_mean - C_mean)[2]
    settles = bool(criteria.change_settles(plateau_change) and criteria.change_settles(gap_change))
    d, P, N = size
    return RegimePoint(
        d=int(d), P=int(P), N=int(N), k=int(k), a=float(spectrum[0]), b=float(spectrum[1]), regime=regime,
        depths=tuple(depths), n_seeds=int(n), R=tuple(map(float, R_mean)), R_se=tuple(map(float, R_se)),
        A=tuple(map(float, A_mean)), C=tuple(map(float, C_mean)), depth_gain=gain, depth_gain_se=gain_se,
        alpha=float(alpha), alpha_low=float(lo), alpha_high=float(hi), L0=float(L0), c=float(c),
        plateau_change=float(plateau_change), gap_change=float(gap_change), settles=settles,
        verdict=criteria.classify_depth_dependence(gain, alpha, settles),
    )


_REGIME_PHRASES = {
    "lazy": "under lazy training",
    "lazy_long": "under longer lazy training",
    "converged": "at convergence",
    "frozen_heads": "for frozen random heads",
    "separate_models": "for averages of separate models",
}


def name_regime(points: Sequence[RegimePoint]) -> str:
    """One line naming where inverse-depth scaling appears: each regime by its most common verdict.

    Ties go to the first of inverse-depth, improves, flat.

    References
    ----------
    Paper eqs. (16), (63).

    Examples
    --------
    >>> pts = [summarise_point("lazy", (8, 32, 8), (0, 0), 2, [1, 2, 4], [[3, 2, 1.5]] * 3, [[3, 3, 3]] * 3,
    ...                        [[np.nan, 1, 1]] * 3),
    ...        summarise_point("converged", (8, 32, 8), (0, 0), 2, [1, 2, 4], [[3, 3, 3]] * 3, [[3, 3, 3]] * 3,
    ...                        [[np.nan, 3, 3]] * 3)]
    >>> name_regime(pts)
    'inverse-depth under lazy training; flat at convergence'
    """
    parts = []
    for regime in REGIMES:
        verdicts = [p.verdict for p in points if p.regime == regime]
        if not verdicts:
            continue
        kinds = [v if v in ("inverse-depth", "flat") else "improves (not 1/L)" for v in verdicts]
        order = ["inverse-depth", "improves (not 1/L)", "flat"]
        best = max(order, key=lambda kind: (kinds.count(kind), -order.index(kind)))
        count = kinds.count(best)
        share = "" if count == len(kinds) else f" ({count} of {len(kinds)} points)"
        parts.append(f"{best} {_REGIME_PHRASES[regime]}{share}")
    return "; ".join(parts)
