"""Depth curves and their one summary, shared by every study that trains a depth sweep.

A :class:`Curve` is one quantity (``R_L``, ``C_L``, ``A_L − C_L``, ...) against depth, per seed, with its
mean and SE over seeds (:meth:`Curve.over_seeds`, the one place that rule is written for a curve).
:func:`fit_curve` fits eq. (16) to it. A :class:`CurveSummary` is what the regime study, the defaults and the
reproduction say about one depth sweep: the fit, whether ``C_L`` and ``A_L − C_L`` settle, the depth gain
and the verdict, all by the rules of :mod:`numerics.experiments.criteria`; :func:`summarise_curves` builds
it from curves, :func:`summarise_seeds` from per-seed ``R_L, A_L, C_L`` arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from numerics.io import json_clean

from .. import criteria

__all__ = ["Curve", "CurveSummary", "Labelled", "FitSummary", "fit_curve", "spectrum_label", "summarise_curves",
           "summarise_seeds"]


def spectrum_label(a: float, b: float) -> str:
    """``(a, b)`` as the paper writes it.

    References
    ----------
    Paper eq. (2).

    Examples
    --------
    >>> spectrum_label(0.25, 0.0)
    '(0.25, 0)'
    """
    return f"({a:g}, {b:g})"


class Labelled:
    """A mixin for a record with fields ``a`` and ``b`` (paper eq. 2's exponents): ``label``, the spectrum as the
    paper writes it.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Point(Labelled):
    ...     a: float
    ...     b: float
    >>> Point(0.0, 0.5).label
    '(0, 0.5)'
    """

    @property
    def label(self) -> str:
        return spectrum_label(self.a, self.b)


@dataclass(frozen=True, eq=False)
class Curve(Labelled):
    """One quantity against depth for one spectrum.

    Attributes
    ----------
    quantity : str
        Metric name (``R_L``, ``A_minus_C``, ...) of spectrum ``(a, b)`` (eq. 2).
    values : ndarray, shape (n_seeds, n_depths)
        Per-seed values (NaN where a run is missing or the value undefined).
    mean, se : ndarray, shape (n_depths,)
        Mean over seeds and its SE (``se_kind``: ``"seeds"`` or ``"held-out"``);
        ``n_seeds``: finite values per depth.

    References
    ----------
    Paper eqs. (12), (61)-(63).

    Examples
    --------
    >>> c = Curve("R_L", 0.0, 0.0, np.array([1, 2]), np.array([[2.0, 1.5], [2.2, 1.7]]),
    ...           np.array([2.1, 1.6]), np.array([0.1, 0.1]), np.array([2, 2]), "seeds")
    >>> c.at(2)
    (1.6, 0.1)
    """

    quantity: str
    a: float
    b: float
    depths: np.ndarray
    values: np.ndarray
    mean: np.ndarray
    se: np.ndarray
    n_seeds: np.ndarray
    se_kind: str

    @classmethod
    def over_seeds(cls, quantity: str, a: float, b: float, depths, values, heldout_se=None) -> "Curve":
        """The curve of per-seed ``values`` (seeds x depths): mean over the finite ones and its SE.

        The SE is over seeds (:func:`~numerics.experiments.criteria.standard_error`) where a depth has two
        or more values. Where it has one, and ``heldout_se`` (seeds x depths, the runs' own held-out SEs)
        is given, that run's held-out SE stands in; with a single seed the whole curve's SE is held-out
        (``se_kind = "held-out"``). Otherwise NaN: the scatter of one value is unknown.

        References
        ----------
        Paper eqs. (12), (61)-(63).

        Examples
        --------
        >>> c = Curve.over_seeds("R_L", 0, 0, [1, 2], [[2.0, 1.5], [2.2, np.nan]], [[0.01, 0.02], [0.01, 0.02]])
        >>> c.mean.tolist(), np.round(c.se, 6).tolist(), c.n_seeds.tolist()
        ([2.1, 1.5], [0.1, 0.02], [2, 1])
        """
        depths = np.asarray(depths, dtype=np.int64)
        values = np.atleast_2d(np.asarray(values, dtype=np.float64))
        heldout = np.full(values.shape, np.nan) if heldout_se is None else np.asarray(heldout_se, dtype=np.float64)
        columns = [values[np.isfinite(values[:, j]), j] for j in range(len(depths))]
        n = np.sum(np.isfinite(values), axis=0)
        mean = np.array([float(np.mean(column)) if column.size else np.nan for column in columns], dtype=np.float64)
        if values.shape[0] < 2:
            return cls(quantity, float(a), float(b), depths, values, mean, heldout[0], n, "held-out")
        se = np.full(len(depths), np.nan)
        for j, column in enumerate(columns):
            if column.size >= 2:
                se[j] = criteria.standard_error(column)
            elif column.size == 1 and np.any(np.isfinite(heldout[:, j])):
                se[j] = float(np.nanmax(heldout[:, j]))
        return cls(quantity, float(a), float(b), depths, values, mean, se, n, "seeds")

    @property
    def empty(self) -> bool:
        """No finite value at any depth."""
        return not bool(np.any(np.isfinite(self.mean)))

    def at(self, depth: int) -> tuple[float, float]:
        """``(mean, se)`` at ``depth`` (NaN, NaN if absent)."""
        hits = np.flatnonzero(self.depths == depth)
        if hits.size == 0:
            return (math.nan, math.nan)
        return (float(self.mean[hits[0]]), float(self.se[hits[0]]))

    def finite(self) -> "Curve":
        """The depths where the mean is finite."""
        keep = np.isfinite(self.mean)
        return Curve(self.quantity, self.a, self.b, self.depths[keep], self.values[:, keep], self.mean[keep],
                     self.se[keep], self.n_seeds[keep], self.se_kind)


@dataclass(frozen=True, eq=False)
class FitSummary:
    """A fit of eq. (16) (or eq. 92) to a curve, or None and the ``reason``.

    References
    ----------
    Paper eqs. (16), (88)-(89), (92)-(93).

    Examples
    --------
    >>> FitSummary(None, "too few depths").ok
    False
    """

    fit: Any
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.fit is not None

    def value(self, name: str) -> float:
        """A parameter estimate (NaN if no fit)."""
        return float(getattr(self.fit, name)) if self.ok else math.nan

    def se(self, name: str) -> float:
        """A parameter's standard error (NaN if no fit)."""
        return float(self.fit.standard_errors[name]) if self.ok else math.nan

    def interval(self, name: str) -> tuple[float, float]:
        """A parameter's 95 % interval (NaN, NaN if no fit)."""
        return tuple(map(float, self.fit.interval(name))) if self.ok else (math.nan, math.nan)


def _complete_rows(curve: Curve) -> np.ndarray:
    rows = curve.values[np.all(np.isfinite(curve.values), axis=1)]
    return rows if rows.shape[0] > 0 else curve.mean[None, :]


def fit_curve(curve: Curve, floor: float | None = None, *, gap_plateau: float | None = None) -> FitSummary:
    """Fit ``R_L = L0 + c L^(−alpha)`` (eq. 16) to ``curve``, or the gap law.

    The seeds with a value at every finite depth are fitted jointly
    (:func:`theory.fitting.fit_depth_law`); the gap law is fitted to the mean
    (one seed's ``C_L`` may exceed the plateau where the mean does not).

    Parameters
    ----------
    curve : Curve
    floor : float or None
        ``None``: ``L0`` fitted; ``0``: ``L0 = 0`` (easy task); otherwise fixed.
    gap_plateau : float or None
        Fit ``gap_plateau − C_L = c L^(−alpha)`` (eqs. 92-93) instead.

    References
    ----------
    Paper eqs. (16), (88)-(89), (92)-(93).

    Examples
    --------
    >>> depths = np.array([1, 2, 4, 8])
    >>> losses = 1.0 + 2.0 / depths
    >>> c = Curve("R_L", 0, 0, depths, losses[None], losses, np.zeros(4), np.ones(4, int), "held-out")
    >>> round(fit_curve(c).value("alpha"), 6)
    1.0
    """
    from theory.fitting import fit_depth_law, fit_gap_law

    curve = curve.finite()
    needed = 3 if (floor is None and gap_plateau is None) else 2
    if len(np.unique(curve.depths)) < needed:
        return FitSummary(None, f"{len(curve.depths)} depth(s) with data; the fit needs {needed}")
    try:
        if gap_plateau is not None:
            fit = fit_gap_law(curve.depths, curve.mean, gap_plateau)
        else:
            fit = fit_depth_law(curve.depths, _complete_rows(curve), floor)
    except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
        return FitSummary(None, " ".join(str(exc).split()))
    return FitSummary(fit)


@dataclass(frozen=True, eq=False)
class CurveSummary(Labelled):
    """What a study says about one depth sweep of one setting: fit, settling, depth gain, verdict.

    The regime study, the defaults and the reproduction's softmax families each build one per
    (setting, regime or family) with :func:`summarise_curves` or :func:`summarise_seeds`, so the same runs
    cannot get two fits or two verdicts.

    Attributes
    ----------
    name : str
        What trained the curves: a regime of the regime study or the defaults, or a reproduction family.
    a, b : float
        The spectrum (eq. 2); ``size`` ``(d, P, N)`` (also read as ``d``, ``P``, ``N``) and ``k`` (eq. 6) of
        the setting.
    R, C, gap : Curve
        ``R_L``, ``C_L`` and ``A_L − C_L`` (eqs. 61-63).
    fit : FitSummary
        Eq. (16) fitted to ``R`` (:func:`fit_curve`); ``alpha``, ``L0``, ``c`` and ``alpha_interval`` read it.
    C_change, gap_change : float
        Relative change of ``C_L`` and of ``A_L − C_L`` over the last doubling of depth;
        ``C_settles``, ``gap_settles`` (None when NaN) and ``settled`` (both) by
        :func:`~numerics.experiments.criteria.change_settles`.
    depth_gain, depth_gain_se : float
        ``R_1 / R_{L_max}`` (first planned depth over the deepest with a value) and its delta-method SE.
    alpha_in_target : bool or None
        alpha in :data:`~numerics.experiments.criteria.ALPHA_WINDOW` (None without a fit).
    verdict : str
        :func:`~numerics.experiments.criteria.classify_depth_dependence`.
    bound : dict or None
        The reproduction's oracle bound of the setting, where it asked for one.

    References
    ----------
    Paper eqs. (16), (61)-(63); Figs. 6a-d.

    Examples
    --------
    >>> s = summarise_seeds("lazy", (16, 64, 16), (0.0, 0.0), 2, [1, 2, 4, 8],
    ...                     [[4.0, 3.0, 2.5, 2.25]] * 3, [[4.0, 4.0, 4.0, 4.0]] * 3, [[np.nan, 2.0, 2.0, 2.0]] * 3)
    >>> round(s.depth_gain, 6), round(s.alpha, 6), s.settled, s.verdict
    (1.777778, 1.0, True, 'inverse-depth')
    """

    name: str
    a: float
    b: float
    R: Curve
    C: Curve
    gap: Curve
    fit: FitSummary
    C_change: float
    gap_change: float
    C_settles: bool | None
    gap_settles: bool | None
    depth_gain: float
    depth_gain_se: float
    alpha_in_target: bool | None
    verdict: str
    size: tuple | None = None
    k: int | None = None
    bound: dict | None = None

    @property
    def has_data(self) -> bool:
        return not self.R.empty

    @property
    def depths(self) -> tuple:
        return tuple(int(L) for L in self.R.depths)

    @property
    def d(self) -> int | None:
        return None if self.size is None else self.size[0]

    @property
    def P(self) -> int | None:
        return None if self.size is None else self.size[1]

    @property
    def N(self) -> int | None:
        return None if self.size is None else self.size[2]

    @property
    def n_seeds(self) -> int:
        """Seeds (or disjoint groups of separate models) per depth."""
        return int(self.R.values.shape[0])

    @property
    def settled(self) -> bool:
        """Both ``C_L`` and ``A_L − C_L`` settle."""
        return bool(self.C_settles and self.gap_settles)

    @property
    def alpha(self) -> float:
        return self.fit.value("alpha")

    @property
    def alpha_interval(self) -> tuple[float, float]:
        """alpha's 95 % interval (NaN where there is no fit or it sits at the search bound)."""
        return self.fit.interval("alpha")

    @property
    def L0(self) -> float:
        return self.fit.value("L0")

    @property
    def c(self) -> float:
        return self.fit.value("c")

    def to_dict(self) -> dict:
        """JSON-able dict of the numbers (NaN as None): the curves' means and SEs, fit, changes, verdict."""
        lo, hi = self.alpha_interval
        return json_clean({
            "name": self.name, "d": self.d, "P": self.P, "N": self.N, "k": self.k, "a": self.a, "b": self.b,
            "depths": list(self.depths), "n_seeds": self.n_seeds, "R": self.R.mean.tolist(), "R_se": self.R.se.tolist(),
            "C": self.C.mean.tolist(), "gap": self.gap.mean.tolist(), "depth_gain": self.depth_gain,
            "depth_gain_se": self.depth_gain_se, "alpha": self.alpha, "alpha_low": lo, "alpha_high": hi,
            "L0": self.L0, "c": self.c, "C_change": self.C_change, "gap_change": self.gap_change,
            "settles": self.settled, "verdict": self.verdict,
        })


def summarise_curves(name: str, R: Curve, C: Curve, gap: Curve, *, size: tuple | None = None, k: int | None = None,
                     bound: dict | None = None) -> CurveSummary:
    """Fit, settling, depth gain and verdict of one depth sweep from its ``R_L``, ``C_L``, ``A_L − C_L`` curves.

    References
    ----------
    Paper eqs. (16), (61)-(63).

    Examples
    --------
    >>> depths = [1, 2, 4, 8]
    >>> R = Curve.over_seeds("R_L", 0, 0, depths, [[3.0, 3.0, 3.0, 3.0]] * 2)
    >>> flat = summarise_curves("converged", R, R, R)
    >>> flat.depth_gain, flat.verdict
    (1.0, 'flat')
    """
    fit = fit_curve(R)
    C_change = criteria.last_doubling(C.depths, C.mean)[2]
    gap_change = criteria.last_doubling(gap.depths, gap.mean)[2]
    C_settles, gap_settles = criteria.change_settles(C_change), criteria.change_settles(gap_change)
    first, first_se = R.at(int(R.depths[0])) if len(R.depths) else (math.nan, math.nan)
    deepest = R.finite()
    last, last_se = deepest.at(int(deepest.depths.max())) if len(deepest.depths) else (math.nan, math.nan)
    gain = gain_se = math.nan
    if math.isfinite(first) and math.isfinite(last) and last > 0:
        gain, gain_se = criteria.depth_gain(first, last, first_se, last_se)
    alpha = fit.value("alpha")
    in_target = criteria.alpha_in_window(alpha) if fit.ok else None
    return CurveSummary(
        name=name, a=R.a, b=R.b, R=R, C=C, gap=gap, fit=fit, C_change=float(C_change), gap_change=float(gap_change),
        C_settles=C_settles, gap_settles=gap_settles, depth_gain=gain, depth_gain_se=gain_se,
        alpha_in_target=in_target,
        verdict=criteria.classify_depth_dependence(gain, alpha, bool(C_settles and gap_settles)),
        size=None if size is None else tuple(int(v) for v in size), k=None if k is None else int(k), bound=bound)


def summarise_seeds(name: str, size, spectrum, k, depths, R, A, C) -> CurveSummary:
    """:func:`summarise_curves` of per-seed ``R_L``, ``A_L``, ``C_L`` arrays (seeds x depths).

    References
    ----------
    Paper eqs. (16), (61)-(63).

    Examples
    --------
    >>> s = summarise_seeds("converged", (8, 32, 8), (0, 0), 2, [1, 2, 4], [[3, 3, 3]] * 3, [[3, 3, 3]] * 3,
    ...                     [[np.nan, 3, 3]] * 3)
    >>> s.n_seeds, s.verdict
    (3, 'flat')
    """
    a, b = spectrum
    R, A, C = (np.atleast_2d(np.asarray(x, dtype=np.float64)) for x in (R, A, C))
    curves = [Curve.over_seeds(quantity, a, b, depths, values)
              for quantity, values in (("R_L", R), ("C_L", C), ("A_minus_C", A - C))]
    return summarise_curves(name, *curves, size=size, k=k)
