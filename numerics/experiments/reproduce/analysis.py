"""Measured quantities of a reproduction, computed once (memoised in the context)
and shared by figures, tables and verdicts, so that they cannot disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import criteria
from ..study.curves import Curve, CurveSummary, FitSummary, Labelled, fit_curve, summarise_curves

__all__ = [
    "LinearEasySummary",
    "LinearDifficultSummary",
    "EasySoftmaxSummary",
    "nonlinear_summary",
    "linear_easy_summary",
    "linear_difficult_summary",
    "easy_softmax_summary",
    "modewise_matrix",
    "selection_quantiles",
    "spectra_of",
]



def spectra_of(ctx, family_name: str, *, a: float | None = None, b: float | None = None) -> tuple:
    """The family's spectra, optionally only those with the given ``a`` and/or ``b``.

    References
    ----------
    Paper eq. (2) (the spectrum exponents a, b).

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.reproduce.context import ReproductionContext
    >>> from numerics.experiments.reproduce.scales import get_scale
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     spectra_of(ReproductionContext.open(get_scale("smoke"), tmp), "nonlinear_lazy", b=0.0)
    ((0.0, 0.0), (0.5, 0.0))
    """
    spectra = ctx.family(family_name).spectra
    return tuple(s for s in spectra if (a is None or s[0] == a) and (b is None or s[1] == b))


def nonlinear_summary(ctx, family_name: str, a: float, b: float, *, with_bound: bool = True) -> CurveSummary:
    """The :class:`~numerics.experiments.study.curves.CurveSummary` of one spectrum of a softmax family, with its bound.

    References
    ----------
    Paper eqs. (16), (61)-(63), (88)-(89).

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.reproduce.context import ReproductionContext
    >>> from numerics.experiments.reproduce.scales import get_scale
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     s = nonlinear_summary(ReproductionContext.open(get_scale("smoke"), tmp), "nonlinear_lazy", 0, 0,
    ...                           with_bound=False)
    >>> s.has_data, s.fit.ok
    (False, False)
    """

    def compute() -> CurveSummary:
        family = ctx.family(family_name)
        R = ctx.results.curve(family, a, b, "R_L")
        bound = ctx.oracle_bound(family, a, b) if (with_bound and not R.empty) else None
        return summarise_curves(family_name, R, ctx.results.curve(family, a, b, "C_L"),
                                ctx.results.curve(family, a, b, "A_minus_C"), size=(family.d, family.P, family.N),
                                k=family.k, bound=bound)

    return ctx.memo(("nonlinear", family_name, float(a), float(b), with_bound), compute)


@dataclass(frozen=True, eq=False)
class LinearEasySummary(Labelled):
    """Linear attention on the easy task, one spectrum: the fitted α against ζ and 2ζ.

    Attributes
    ----------
    zeta : float or None
        ``(a + b − 1)/a`` (eq. 34); None if ``a = 0``.
    window_upper : float
        The largest depth inside the constrained law's window (eq. 34).
    fit : FitSummary
        ``R_L = c L^(−alpha)`` (L0 = 0) on ``fit_depths``, inside the window.
    resolvable : bool
        Three grid depths in the window; ``between``: ``ζ <= alpha <= 2ζ``.

    References
    ----------
    Paper eqs. (34), (40), Table 2.

    Notes
    -----
    No example: built by :func:`linear_easy_summary`.
    """

    a: float
    b: float
    R: Curve
    zeta: float | None
    window_upper: float
    fit_depths: tuple
    fit: FitSummary
    resolvable: bool
    between: bool | None


def validity_window(family, a: float, b: float) -> tuple[float, int]:
    """``(upper, inside)``: the end of the window of eq. (34), the depths in it."""
    from theory import PowerLawSpectrum

    upper = PowerLawSpectrum(a, b, family.d).condition_number / criteria.WINDOW_MARGIN
    return upper, sum(1 for L in family.depths if L <= upper)


def linear_easy_summary(ctx, a: float, b: float) -> LinearEasySummary:
    """Fit of ``R_L = c L^(−alpha)`` inside the validity window, against ζ and 2ζ.

    References
    ----------
    Paper eqs. (34), (40), Table 2.

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.reproduce.context import ReproductionContext
    >>> from numerics.experiments.reproduce.scales import get_scale
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     s = linear_easy_summary(ReproductionContext.open(get_scale("smoke"), tmp), 2.0, 1.0)
    >>> s.zeta, s.fit.ok
    (1.0, False)
    """

    def compute() -> LinearEasySummary:
        from theory import zeta

        family = ctx.family("linear_easy")
        R = ctx.results.curve(family, a, b, "R_L")
        z = zeta(a, b) if a > 0 else None
        upper, depths_inside = validity_window(family, a, b)
        data = R.finite()
        keep = data.depths <= upper
        sub = Curve(R.quantity, R.a, R.b, data.depths[keep], data.values[:, keep], data.mean[keep],
                    data.se[keep], data.n_seeds[keep], data.se_kind)
        fit = fit_curve(sub, floor=0.0) if len(sub.depths) >= 2 else FitSummary(
            None, f"{len(sub.depths)} depth(s) with data inside L <= {upper:.3g}")
        between = None
        if fit.ok and z is not None and z > 0:
            between = criteria.between(fit.value("alpha"), fit.se("alpha"), z, 2 * z)
        return LinearEasySummary(float(a), float(b), R, z, float(upper), tuple(int(x) for x in sub.depths), fit,
                                 depths_inside >= 3, between)

    return ctx.memo(("linear_easy", float(a), float(b)), compute)


@dataclass(frozen=True, eq=False)
class LinearDifficultSummary(Labelled):
    """Linear attention on the top-k task, one spectrum: plateau against floor.

    Attributes
    ----------
    depth : int
        Largest depth with data; ``plateau`` is ``R`` there.
    floor, floor_se : float
        Theory floor of degree ``depth`` at the family's ``(d, P, k)`` (eqs. 47-54).
    deviation : float
        ``|plateau − floor| / floor``, ``within_target`` below :data:`~numerics.experiments.criteria.FLOOR_TARGET`.
    finite_floor, finite_floor_se : float
        The finite-P floor (best polynomial in the empirical covariance ``S``,
        eq. 24): a plateau between it and ``floor`` is explained, one more
        than two SE below it (``below_finite``) is not.

    References
    ----------
    Paper eqs. (24), (41)-(54), Table 3.

    Notes
    -----
    No example: built by :func:`linear_difficult_summary`.
    """

    family: str
    a: float
    b: float
    R: Curve
    depth: int
    plateau: float
    plateau_se: float
    floor: float
    floor_se: float
    deviation: float
    within_target: bool | None
    agrees: bool | None
    finite_floor: float = math.nan
    finite_floor_se: float = math.nan
    below_finite: bool | None = None


def linear_difficult_summary(ctx, family_name: str, a: float, b: float) -> LinearDifficultSummary:
    """Measured plateau (``R`` at the deepest model) against the floor at ``(d, P, k)``.

    References
    ----------
    Paper eqs. (41)-(54), Table 3.

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.reproduce.context import ReproductionContext
    >>> from numerics.experiments.reproduce.scales import get_scale
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     s = linear_difficult_summary(ReproductionContext.open(get_scale("smoke"), tmp), "linear_difficult", 0, 0)
    >>> math.isnan(s.plateau), s.floor > 0
    (True, True)
    """

    def compute() -> LinearDifficultSummary:
        family = ctx.family(family_name)
        R = ctx.results.curve(family, a, b, "R_L")
        finite = R.finite()
        depth = int(finite.depths.max()) if len(finite.depths) else int(max(family.depths))
        plateau, plateau_se = finite.at(depth) if len(finite.depths) else (math.nan, math.nan)
        floor, floor_se = ctx.floor_at(family, a, b, depth)
        deviation = criteria.relative_deviation(plateau, floor)
        finite_floor, finite_se = ctx.finite_p_floor(family, a, b, depth)
        below = (None if not math.isfinite(plateau) else
                 criteria.exceeds(finite_floor - plateau, math.hypot(plateau_se, finite_se)))
        return LinearDifficultSummary(
            family_name, float(a), float(b), R, depth, plateau, plateau_se, floor, floor_se, deviation,
            None if math.isnan(deviation) else bool(deviation < criteria.FLOOR_TARGET),
            criteria.agrees(plateau, plateau_se, floor, floor_se), finite_floor, finite_se, below,
        )

    return ctx.memo(("linear_difficult", family_name, float(a), float(b)), compute)


@dataclass(frozen=True, eq=False)
class EasySoftmaxSummary(Labelled):
    """Softmax attention on the easy task for one spectrum.

    Attributes
    ----------
    final, initial, ratio : ndarray
        Final and initial held-out loss per depth (mean over seeds) and ``final / initial``.
    top1 : ndarray
        Final top-1 attention mass per depth.
    below_target : bool or None
        ``ratio`` below :data:`~numerics.experiments.criteria.EASY_TARGET` at ``L = 1``.

    References
    ----------
    Paper section 3.2, Fig. 4.

    Notes
    -----
    No example: built by :func:`easy_softmax_summary`.
    """

    a: float
    b: float
    depths: tuple
    final: np.ndarray
    initial: np.ndarray
    ratio: np.ndarray
    top1: np.ndarray
    below_target: bool | None


def easy_softmax_summary(ctx, a: float, b: float) -> EasySoftmaxSummary:
    """Final/initial loss and top-1 attention mass of the softmax easy-task runs.

    References
    ----------
    Paper section 3.2, Fig. 4.

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.reproduce.context import ReproductionContext
    >>> from numerics.experiments.reproduce.scales import get_scale
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     easy_softmax_summary(ReproductionContext.open(get_scale("smoke"), tmp), 0, 0).below_target is None
    True
    """

    def compute() -> EasySoftmaxSummary:
        family = ctx.family("nonlinear_easy")
        depths = tuple(int(x) for x in family.depths)
        final, initial, top1 = (ctx.results.curve(family, a, b, quantity).mean
                                for quantity in ("R_L", "initial_eval_loss", "top1_attention_mass"))
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = final / initial
        below = None if not np.isfinite(ratio[0]) else bool(ratio[0] < criteria.EASY_TARGET)
        return EasySoftmaxSummary(float(a), float(b), depths, final, initial, ratio, top1, below)

    return ctx.memo(("easy_softmax", float(a), float(b)), compute)


def modewise_matrix(ctx, family_name: str, a: float, b: float, name: str = "modewise_loss_normalised") -> tuple:
    """``(depths, matrix)``: the per-mode array ``name`` (mean over seeds) by depth.

    References
    ----------
    Paper Figs. 3c, 7 (normalised mode-wise loss ``E ẽ_k² / E t̃_k²``).

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.reproduce.context import ReproductionContext
    >>> from numerics.experiments.reproduce.scales import get_scale
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     depths, matrix = modewise_matrix(ReproductionContext.open(get_scale("smoke"), tmp), "linear_easy", 2, 1)
    >>> matrix.shape
    (3, 4)
    """

    def compute():
        family = ctx.family(family_name)
        rows = []
        for depth in family.depths:
            stack = [ctx.results.arrays(family.config(a, b, depth, seed)).get(name) for seed in family.seeds]
            stack = [np.asarray(s, dtype=np.float64) for s in stack if s is not None]
            rows.append(np.mean(stack, axis=0) if stack else np.full(family.d, np.nan))
        return np.asarray(family.depths), np.vstack(rows)

    return ctx.memo(("modewise", family_name, float(a), float(b), name), compute)


def selection_quantiles(ctx, family_name: str, a: float, b: float, depth: int,
                        levels=(0.5, 0.9, 0.95, 0.99)) -> tuple:
    """``(mean, se)`` of ``Q_L(q)`` over seeds at ``depth`` (NaN se with one seed).

    References
    ----------
    Paper eqs. (90)-(91), Fig. 13.

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.reproduce.context import ReproductionContext
    >>> from numerics.experiments.reproduce.scales import get_scale
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     mean, se = selection_quantiles(ReproductionContext.open(get_scale("smoke"), tmp), "nonlinear_lazy", 0, 0, 1)
    >>> mean.shape
    (4,)
    """

    def compute():
        family = ctx.family(family_name)
        per_seed = []
        for seed in family.seeds:
            errors = ctx.results.arrays(family.config(a, b, depth, seed)).get("selection_error")
            if errors is not None:
                per_seed.append(np.quantile(np.asarray(errors, dtype=np.float64), levels))
        if not per_seed:
            nan = np.full(len(levels), np.nan)
            return nan, nan
        return criteria.mean_se(np.vstack(per_seed), axis=0)

    return ctx.memo(("selection", family_name, float(a), float(b), int(depth), tuple(levels)), compute)
