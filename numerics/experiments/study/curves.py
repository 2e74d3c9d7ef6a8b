"""Depth curves and their one summary, shared by every study that trains a depth sweep.

A :class:`Curve` is one quantity (``R_L``, ``C_L``, ``A_L − C_L``, ...) against depth, per seed, with its
mean and SE over seeds (:meth:`Curve.over_seeds`, the one place that rule is written for a curve).
:func:`fit_curve` fits eq. (16) to it. A :class:`CurveSummary` is what the regime study, the defaults and the
reproduction say about one depth sweep: the fit, whether ``C_L`` and ``A_L − C_L`` settle, the depth gain
and the verdict, all by the rules of :mod:`numerics.experiments.criteria`; :func:`summarise_curves` builds
it from curves, :func:`summarise_seeds` from per-seed ``R_L, A_L, C_L`` arrays.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import criteria

__all__ = ["Curve", "CurveSummary", "Labelled", "FitSummary", "RecipeAlpha", "fit_curve", "spectrum_label",
           "summarise_curves", "summarise_seeds"]


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


@dataclass(frozen=True)
class RecipeAlpha:
    """The depth law of one way of getting a depth-L model, on the envelope's contexts and depths.

    ``name``: ``envelope``, ``heads`` (B_L's untrained heads), ``cold lr=<rate>`` or a contrast recipe
    (``lazy``, ``equal_budget``); ``alpha`` with its profile interval, ``gain`` = R_1 − R_Lmax ± its SE;
    ``chi2``, ``dof`` of the gain law's fit, its α reported where ``fit_reported``
    (:func:`~numerics.experiments.study.certified.verdict.fit_reported`).

    Examples
    --------
    >>> RecipeAlpha("lazy", 0.9, 0.5, 1.4, 0.02, 0.004).name
    'lazy'
    """

    name: str
    alpha: float
    alpha_lo: float
    alpha_hi: float
    gain: float
    gain_se: float
    chi2: float = math.nan
    dof: int = 0
    fit_reported: bool = False


#: the keys of a :class:`RecipeAlpha` in a verdicts record, before what the record adds about it
_RECIPE_KEYS = ("name", "alpha", "alpha_lo", "alpha_hi", "gain", "gain_se", "chi2", "dof")


@dataclass(frozen=True, eq=False)
class CurveSummary(Labelled):
    """What a study says about one depth curve of one setting and one recipe: the curve, its law and its verdict.

    The one summary of a depth curve: the regime study, the defaults and the reproduction's softmax families
    build it from per-seed arrays (:func:`summarise_curves`, :func:`summarise_seeds`), the certified study from
    its joint bootstrap (:func:`~numerics.experiments.study.certified.statistics.summarise`, ``name``
    ``"envelope"``); the verdicts record holds :meth:`to_dict` per setting and the reproduction reads it back
    with :meth:`from_dict`. A field one study does not compute keeps its default (NaN, None or empty).

    Attributes
    ----------
    name : str
        What trained the curve: a regime, a reproduction family, or ``"envelope"`` (the certified study's best
        candidate per seed and depth).
    a, b : float
        The spectrum (eq. 2); ``size`` ``(d, P, N)`` (also read as ``d``, ``P``, ``N``) and ``k`` (eq. 6); ``setting``
        ``(a, b, k, d, N, P)``.
    R, C, gap : Curve
        ``R_L`` (for the certified study the envelope ``R*_L``, SE from the joint bootstrap), ``C_L`` and
        ``A_L − C_L`` (eqs. 61-63; None where not measured).
    verdict, reason, kind : str
        The verdict and why: :func:`~numerics.experiments.criteria.classify_depth_dependence` for a sweep,
        :func:`~numerics.experiments.study.certified.verdict.setting_verdict` for the certified study.
    alpha, alpha_lo, alpha_hi, chi2, dof : float
        The depth law's α and 95 % interval: eq. (16) fitted to ``R`` (``fit``), or the certified gain law
        ``R*_1 − R*_L`` (χ² and dof; reported only where ``fit_reported``, on the grid ``alpha_grid``).
    fit, C_change, gap_change, C_settles, gap_settles, depth_gain, depth_gain_se, alpha_in_target, bound
        A sweep's: the eq. (16) fit (:class:`FitSummary`); the relative change of ``C_L`` and ``A_L − C_L`` over the
        last doubling and whether it settles (:func:`~numerics.experiments.criteria.change_settles`); ``R_1 /
        R_{L_max}`` with its SE; α in :data:`~numerics.experiments.criteria.ALPHA_WINDOW`; the reproduction's
        oracle bound (dict).
    B, gain, gain_se, gains_se, bound_gain, recipe, recipe_se, recipe_gain, recipe_gain_se, recipes
        The certified study's: ``B_L`` (untrained heads, eq. 60) per depth; ``R*_1 − R*_Lmax`` ± SE, per depth the
        paired SE of ``R*_1 − R*_L``; the heads' gain; the shipped cells' recipe (cold, lr 1e-3) per depth ± SE and
        its gain; each recipe's law (:class:`RecipeAlpha`).
    planned_depths, checked, doubling_run, certificates, winners, first_shortfall, first_shortfall_se
        The certified study's evidence: the depths planned, those the verdict rests on (step-doubling check ran
        and passed) and those where it ran; the certificates; the winning start per depth and seed;
        ``(B_1 − B_2) − (R*_1 − R*_2)`` ± paired SE (NaN without depth 2).
    contrasts, ladder, variants, primary, best_seed, best_seed_ids, crossover, range_contrasts, ranges
        The fit-free contrasts, ``g_2/g_L`` to every depth, the gain law's analysis variants, the verdict's contrast
        (dict), the best seed's curve and ids, the theory's crossover depth and the verdict per depth range.

    References
    ----------
    Paper eqs. (16), (60), (61)-(63); Figs. 6a-d; Tables 1, 4, 5.

    Examples
    --------
    >>> s = summarise_seeds("lazy", (16, 64, 16), (0.0, 0.0), 2, [1, 2, 4, 8],
    ...                     [[4.0, 3.0, 2.5, 2.25]] * 3, [[4.0, 4.0, 4.0, 4.0]] * 3, [[np.nan, 2.0, 2.0, 2.0]] * 3)
    >>> round(s.depth_gain, 6), round(s.alpha, 6), s.settled, s.verdict
    (1.777778, 1.0, True, 'inverse-depth')
    >>> CurveSummary.from_dict(s.to_dict()).R.mean.tolist()
    [4.0, 3.0, 2.5, 2.25]
    """

    name: str
    a: float
    b: float
    R: Curve
    C: Curve | None = None
    gap: Curve | None = None
    verdict: str = ""
    reason: str = ""
    kind: str = ""
    size: tuple | None = None
    k: int | None = None
    alpha: float = math.nan
    alpha_lo: float = math.nan
    alpha_hi: float = math.nan
    chi2: float = math.nan
    dof: int = 0
    fit_reported: bool = False
    alpha_grid: tuple = (float(criteria.ALPHA_GRID[0]), float(criteria.ALPHA_GRID[-1]))
    fit: FitSummary | None = None
    C_change: float = math.nan
    gap_change: float = math.nan
    C_settles: bool | None = None
    gap_settles: bool | None = None
    depth_gain: float = math.nan
    depth_gain_se: float = math.nan
    alpha_in_target: bool | None = None
    bound: dict | None = None
    B: tuple = ()
    gain: float = math.nan
    gain_se: float = math.nan
    gains_se: tuple = ()
    bound_gain: float = math.nan
    recipe: tuple = ()
    recipe_se: tuple = ()
    recipe_gain: float = math.nan
    recipe_gain_se: float = math.nan
    recipes: tuple = ()
    planned_depths: tuple = ()
    checked: tuple = ()
    doubling_run: tuple = ()
    certificates: tuple = ()
    winners: tuple = ()
    first_shortfall: float = math.nan
    first_shortfall_se: float = math.nan
    contrasts: tuple = ()
    ladder: tuple = ()
    variants: tuple = ()
    primary: dict | None = None
    best_seed: tuple = ()
    best_seed_ids: tuple = ()
    crossover: int | None = None
    range_contrasts: tuple = ()
    ranges: tuple = ()

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
    def setting(self) -> tuple:
        """``(a, b, k, d, N, P)``, as the certified study's table names a setting."""
        return (self.a, self.b, self.k, self.d, self.N, self.P)

    @property
    def n_seeds(self) -> int:
        """Seeds (or disjoint groups of separate models) per depth."""
        return int(self.R.values.shape[0])

    @property
    def settled(self) -> bool:
        """Both ``C_L`` and ``A_L − C_L`` settle."""
        return bool(self.C_settles and self.gap_settles)

    @property
    def alpha_interval(self) -> tuple[float, float]:
        """alpha's 95 % interval (NaN where there is no fit or it sits at the search bound)."""
        return (self.alpha_lo, self.alpha_hi)

    @property
    def L0(self) -> float:
        return self.fit.value("L0") if self.fit is not None else math.nan

    @property
    def c(self) -> float:
        return self.fit.value("c") if self.fit is not None else math.nan

    @property
    def failed(self) -> list:
        """The certificates that failed."""
        return [c for c in self.certificates if not c.passed]

    def ends_bounded(self, lo: float | None = None, hi: float | None = None) -> tuple[bool, bool]:
        """Whether each end of the α interval ``[lo, hi]`` (default the envelope's) lies inside the fit's grid."""
        lo = self.alpha_lo if lo is None else lo
        hi = self.alpha_hi if hi is None else hi
        return criteria.alpha_ends_bounded(lo, hi, self.alpha_grid)

    def interval_text(self, lo: float | None = None, hi: float | None = None) -> str:
        """The α interval ``[lo, hi]`` (default the envelope's), an end at the grid's edge written as unbounded."""
        lo = self.alpha_lo if lo is None else lo
        hi = self.alpha_hi if hi is None else hi
        below, above = self.ends_bounded(lo, hi)
        return f"[{f'{lo:.3g}' if below else 'unbounded below'}, {f'{hi:.3g}' if above else 'unbounded above'}]"

    def alpha_text(self) -> str:
        """α with its interval where the law fits, else why it is not reported."""
        if not self.fit_reported:
            return f"not reported (χ²/dof = {self.chi2:.3g}/{self.dof})"
        return f"{self.alpha:.3g} {self.interval_text()}"

    def find_recipe(self, name: str) -> RecipeAlpha | None:
        """The law of recipe ``name`` (for example ``"cold lr=0.001"``), or None."""
        return next((r for r in self.recipes if r.name == name), None)

    def to_dict(self) -> dict:
        """JSON-able dict of the numbers, as the certified verdicts record holds each setting.

        The evidence the certified study computed (certificates, contrasts, ranges) is written where present; a
        sweep fitted with eq. (16) adds its name, ``C``, ``gap`` and settling (NaN stays NaN: the caller cleans).
        """
        out = {"a": self.a, "b": self.b, "k": self.k, "d": self.d, "N": self.N, "P": self.P,
               "depths": list(self.depths), "planned_depths": list(self.planned_depths), "seeds": self.n_seeds,
               "verdict": self.verdict, "reason": self.reason, "kind": self.kind,
               "doubling_run": list(self.doubling_run), "checked_depths": list(self.checked),
               "excluded_depths": {str(L): ("step-doubling check failed" if L in self.doubling_run
                                            else "no step-doubling check ran")
                                   for L in self.depths if L not in self.checked},
               "certificates_run": sorted({c.name for c in self.certificates}),
               "failed": [[c.name, c.depth] for c in self.failed], "primary": self.primary,
               "contrasts": [c.to_dict() for c in self.contrasts],
               "variants": [dataclasses.asdict(v) for v in self.variants],
               "alpha": self.alpha, "alpha_lo": self.alpha_lo, "alpha_hi": self.alpha_hi, "chi2": self.chi2,
               "dof": self.dof, "fit_reported": self.fit_reported,
               "envelope": list(self.R.mean), "envelope_se": list(self.R.se), "gains_se": list(self.gains_se),
               "bound": list(self.B), "best_seed": list(self.best_seed),
               "recipes": [{**{key: getattr(r, key) for key in _RECIPE_KEYS}, "kind": "contrast",
                            "finding": "that recipe's finding", "fit_reported": r.fit_reported} for r in self.recipes],
               "crossover": self.crossover, "ranges": list(self.ranges)}
        if self.fit is not None:
            out.update(name=self.name, C=self.C.mean.tolist(), gap=self.gap.mean.tolist(), depth_gain=self.depth_gain,
                       depth_gain_se=self.depth_gain_se, L0=self.L0, c=self.c, C_change=self.C_change,
                       gap_change=self.gap_change, settles=self.settled)
        return out

    @classmethod
    def from_dict(cls, data: dict, *, grid: tuple | None = None, decomposition: dict | None = None) -> "CurveSummary":
        """Read back a :meth:`to_dict` (a setting of the certified verdicts record): the curves, the depth law,
        the verdict and the depths it rests on, each recipe's law.

        ``grid``: the α grid's ends of the record (default the rules'); ``decomposition``: ``{depth: (C_L,
        A_L − C_L)}`` where measured (the certified study's facts), else ``C`` and ``gap`` of the dict (NaN where
        absent). The evidence lists (certificates, contrasts, ranges) stay in the record.

        Raises
        ------
        ValueError
            A dict that lacks the curve (a record written by an older package), naming what it lacks.
        """
        missing = [key for key in ("envelope", "envelope_se", "gains_se", "bound") if key not in data]
        if missing:
            raise ValueError(f"setting ({data['a']:g}, {data['b']:g}), P = {data['P']} lacks {', '.join(missing)} "
                             "(written by an older package: `idepth study certified --report-only` rewrites it)")
        a, b, depths, seeds = float(data["a"]), float(data["b"]), [int(L) for L in data["depths"]], int(data["seeds"])

        name = data.get("name", "envelope")

        def curve(quantity, values, se=None, se_kind="seeds"):  # per-seed values are not in the record: NaN
            se = [None] * len(depths) if se is None else se
            return Curve(quantity, a, b, np.array(depths), np.full((seeds, len(depths)), math.nan),
                         np.array([_number(v) for v in values], dtype=np.float64),
                         np.array([_number(v) for v in se], dtype=np.float64), np.full(len(depths), seeds), se_kind)

        if decomposition is not None:
            C, gap = zip(*(decomposition.get(L, (None, None)) for L in depths)) if depths else ((), ())
        else:
            C, gap = data.get("C", [None] * len(depths)), data.get("gap", [None] * len(depths))
        R = curve("R_L", data["envelope"], data["envelope_se"], "bootstrap" if name == "envelope" else "seeds")
        gains_se = [_number(v) for v in data["gains_se"]]
        return cls(
            name=name, a=a, b=b, R=R, C=curve("C_L", C), gap=curve("A_minus_C", gap),
            verdict=data["verdict"], reason=data.get("reason", ""), kind=data.get("kind", ""),
            size=(int(data["d"]), int(data["P"]), int(data["N"])), k=int(data["k"]),
            alpha=_number(data["alpha"]), alpha_lo=_number(data["alpha_lo"]), alpha_hi=_number(data["alpha_hi"]),
            chi2=_number(data.get("chi2")), dof=int(data.get("dof", 0)), fit_reported=bool(data.get("fit_reported")),
            alpha_grid=tuple(grid) if grid is not None else cls.alpha_grid,
            B=tuple(_number(v) for v in data["bound"]), gain=float(R.mean[0] - R.mean[-1]),
            gain_se=gains_se[-1] if gains_se else math.nan,
            gains_se=tuple(gains_se), planned_depths=tuple(data.get("planned_depths", ())),
            checked=tuple(data.get("checked_depths", ())), doubling_run=tuple(data.get("doubling_run", ())),
            recipes=tuple(RecipeAlpha(**{key: r[key] for key in (*_RECIPE_KEYS, "fit_reported") if key in r})
                          for r in data.get("recipes", ())),
            primary=data.get("primary"), best_seed=tuple(data.get("best_seed", ())), crossover=data.get("crossover"),
            ranges=tuple(data.get("ranges", ())))


def _number(value) -> float:
    return math.nan if value is None else float(value)


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
        name=name, a=R.a, b=R.b, R=R, C=C, gap=gap, alpha=alpha, alpha_lo=fit.interval("alpha")[0],
        alpha_hi=fit.interval("alpha")[1], fit=fit, C_change=float(C_change), gap_change=float(gap_change),
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
