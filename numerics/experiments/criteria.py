"""The decision rules of the experiments layer, written once (sympy) and evaluated from the numbers.

Every "agrees", "between", "within", "settles", "gains from depth", "below the bound"
or "checked" (a depth whose step-doubling check ran and passed) in a table, the studies or ``REPORT.md`` is computed here,
with the thresholds below; none is asserted by hand. :data:`AGREEMENT` is
``|m − r| <= z sqrt(s_m² + s_r²)`` with ``z`` = :data:`AGREEMENT_SIGMAS` (about 95 % for
Gaussian errors), :data:`BETWEEN` ``lo − z s <= m <= hi + z s`` (Table 2: ζ <= alpha <= 2ζ),
"within 10 %" is :data:`RELATIVE_DEVIATION` ``< 0.1`` (Table 3), and a quantity *settles* when
its :data:`RELATIVE_CHANGE` over the last doubling of depth is below :data:`SETTLING_TOLERANCE`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import sympy as sp

from .vocabulary import DECIDED, DepthDependence, Reason, Verdict

__all__ = [
    "Verdict",
    "DECIDED",
    "Reason",
    "AGREEMENT_SIGMAS",
    "SETTLING_TOLERANCE",
    "AGREEMENT",
    "BETWEEN",
    "RELATIVE_DEVIATION",
    "RELATIVE_CHANGE",
    "agrees",
    "between",
    "relative_deviation",
    "relative_change",
    "settles",
    "change_settles",
    "DEPTH_GAIN_THRESHOLD",
    "ALPHA_WINDOW",
    "BOUND_SIGMAS",
    "last_doubling",
    "depth_gain",
    "classify_depth_dependence",
    "DepthDependence",
    "alpha_in_window",
    "below_bound",
    "exceeds",
    "at_most",
    "ses_word",
    "certificate_allowance",
    "ALPHA_GRID",
    "alpha_ends_bounded",
    "standard_error",
    "mean_se",
    "EASY_TARGET",
    "FLOOR_TARGET",
    "WINDOW_MARGIN",
    "PARALLEL_SPREAD",
    "SEQUENTIAL_CORRELATION",
    "CERTIFICATE_SES",
    "DOUBLING_SES",
    "CERTIFICATE_ROUNDOFF",
    "FIRST_STEP_SES",
    "PREDICTION_TARGET",
    "HOURS_TARGET",
    "SIZE_REGION_DELTA",
    "MIN_CHECKED_DEPTHS",
    "MIN_COMPLETE_SEEDS",
    "GAIN_LAW_MAX_CHI2_DOF",
    "checked_depths",
    "CONTRASTS",
    "CONTRAST_DEPTHS",
    "contrast_depths",
    "contrast_value",
    "law_contrast",
]

#: standard errors allowed between a measurement and a reference
AGREEMENT_SIGMAS = 2.0
#: largest relative change over the last doubling of depth for a quantity that "settles"
SETTLING_TOLERANCE = 0.10
#: a model "gains from depth" when R_1 / R_{L_max} exceeds this
DEPTH_GAIN_THRESHOLD = 1.10
#: fitted alpha counted as inverse-depth
ALPHA_WINDOW = (0.85, 1.15)
#: a value is "below the bound" when it is more than this many of the bound's standard errors under it
BOUND_SIGMAS = 3.0
#: the softmax easy-task target: final L = 1 loss below this fraction of the initial
EASY_TARGET = 0.01
#: the linear difficult-task target: plateau within this relative distance of the floor
FLOOR_TARGET = 0.10
#: margin of the ``<<`` of the linear validity window (eq. 34)
WINDOW_MARGIN = 10.0
#: largest spread (std over modes) of the reducible mode loss for "parallel" learning
PARALLEL_SPREAD = 0.10
#: smallest rank correlation of mode index and mode loss for "sequential" learning
SEQUENTIAL_CORRELATION = 0.8
#: how many SEs a certificate of the certified study allows (nesting ``R*_L ≤ R*_{L/2} + 2 SE``, eq. 60, and
#: reachability ``R*_L ≤ B_L + 2 SE``); also the gap above which one candidate beats the per-seed choice
CERTIFICATE_SES = 2.0
#: how many SEs the doubling certificate allows (twice the step cap gains less than one SE)
DOUBLING_SES = 1.0
#: relative float32 round-off of a mean loss: a certificate's allowance when both sides are one function (SE 0)
CERTIFICATE_ROUNDOFF = 1e-6
#: certified study target: how many paired SEs the envelope's first gain may fall short of the heads' at (0, 0)
FIRST_STEP_SES = 1.0
#: certified study target: how far ``predict_loss`` may be from R*_L (relative) at the first depths
PREDICTION_TARGET = 0.03
#: certified study target: the wall-clock hours of the three-seed plan (on the target's cores)
HOURS_TARGET = 3.0
#: χ² increase of the allowed region of ``idepth study sizes`` (two fitted sizes, 95 %)
SIZE_REGION_DELTA = 5.99
#: fewest depths whose step-doubling check ran and passed that a certified verdict may rest on: the law's three
#: parameters (L0, c, α) and two more, so that a misfit can show
MIN_CHECKED_DEPTHS = 5
#: fewest seeds with every planned depth done on which a certified setting is judged alone while its other seeds
#: still run (fewer: the depths every seed has done decide); two, so that the seeds' spread has an estimate
MIN_COMPLETE_SEEDS = 2
#: largest χ²/dof at which the certified study reports its gain-law fit (above it no single α describes the gains)
GAIN_LAW_MAX_CHI2_DOF = 2.0
#: the α grid of the gain-law profile (paper eq. 16); an interval end at its edge does not bound α
ALPHA_GRID = np.geomspace(0.01, 10.0, 301)

_m, _r, _sm, _sr, _z, _lo, _hi, _s = sp.symbols("m r s_m s_r z lo hi s", real=True)
_x_lo, _x_hi = sp.symbols("x_lo x_hi", real=True)

#: margin of the agreement rule, z sqrt(s_m² + s_r²) − |m − r| (agreement: margin >= 0)
AGREEMENT_MARGIN = _z * sp.sqrt(_sm**2 + _sr**2) - sp.Abs(_m - _r)
#: |m − r| <= z sqrt(s_m² + s_r²)
AGREEMENT = sp.Ge(AGREEMENT_MARGIN, 0)
#: margins of the interval rule: m − (lo − z s) and (hi + z s) − m (between: both >= 0)
BETWEEN_MARGINS = (_m - (_lo - _z * _s), (_hi + _z * _s) - _m)
#: lo − z s <= m <= hi + z s
BETWEEN = sp.And(sp.Ge(BETWEEN_MARGINS[0], 0), sp.Ge(BETWEEN_MARGINS[1], 0))
#: |m − r| / |r|
RELATIVE_DEVIATION = sp.Abs(_m - _r) / sp.Abs(_r)
#: |x_hi − x_lo| / |x_lo|
RELATIVE_CHANGE = sp.Abs(_x_hi - _x_lo) / sp.Abs(_x_lo)

_agreement_margin = sp.lambdify((_m, _r, _sm, _sr, _z), AGREEMENT_MARGIN, "math")
_between_lower = sp.lambdify((_m, _lo, _s, _z), BETWEEN_MARGINS[0], "math")
_between_upper = sp.lambdify((_m, _hi, _s, _z), BETWEEN_MARGINS[1], "math")
_relative_deviation = sp.lambdify((_m, _r), RELATIVE_DEVIATION, "math")
_relative_change = sp.lambdify((_x_lo, _x_hi), RELATIVE_CHANGE, "math")


def _finite(*values: float) -> bool:
    return all(v is not None and isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def _se(value: float | None) -> float:
    """A missing or NaN standard error counts as 0 (the comparison is then the strictest)."""
    return 0.0 if value is None or not math.isfinite(value) else float(value)


def agrees(measured: float, measured_se: float | None, reference: float, reference_se: float | None = 0.0,
           sigmas: float = AGREEMENT_SIGMAS) -> bool | None:
    """:data:`AGREEMENT`: True/False, or None when a value is missing or not finite.

    References
    ----------
    The comparison behind every "agrees" column (Tables 1-5 of the paper).

    Examples
    --------
    >>> agrees(1.0, 0.1, 1.15), agrees(1.0, 0.01, 1.15), agrees(float("nan"), 0.1, 1.0)
    (True, False, None)
    """
    if not _finite(measured, reference):
        return None
    return bool(_agreement_margin(measured, reference, _se(measured_se), _se(reference_se), sigmas) >= 0)


def between(measured: float, measured_se: float | None, lower: float, upper: float,
            sigmas: float = AGREEMENT_SIGMAS) -> bool | None:
    """:data:`BETWEEN`: True/False, or None when a value is missing.

    References
    ----------
    Paper Table 2 (ζ <= alpha <= 2ζ), eqs. (34), (40).

    Examples
    --------
    >>> between(1.2, 0.05, 1.0, 2.0), between(0.8, 0.05, 1.0, 2.0), between(0.95, 0.05, 1.0, 2.0)
    (True, False, True)
    """
    if not _finite(measured, lower, upper):
        return None
    s = _se(measured_se)
    return bool(_between_lower(measured, lower, s, sigmas) >= 0 and _between_upper(measured, upper, s, sigmas) >= 0)


def relative_deviation(measured: float, reference: float) -> float:
    """:data:`RELATIVE_DEVIATION` (NaN when undefined).

    References
    ----------
    Paper Table 3 (measured plateau against the theory floor, eq. 54).

    Examples
    --------
    >>> relative_deviation(1.05, 1.0)
    0.05000000000000004
    """
    if not _finite(measured, reference) or reference == 0:
        return math.nan
    return float(_relative_deviation(measured, reference))


def relative_change(lower_depth_value: float, upper_depth_value: float) -> float:
    """:data:`RELATIVE_CHANGE` from the value at ``L/2`` to the value at ``L`` (NaN when undefined).

    References
    ----------
    Paper Fig. 6c-d and eq. (63): C_L → C_∞, A_L − C_L → Δ_∞.

    Examples
    --------
    >>> relative_change(2.0, 2.1)
    0.050000000000000044
    """
    if not _finite(lower_depth_value, upper_depth_value) or lower_depth_value == 0:
        return math.nan
    return float(_relative_change(lower_depth_value, upper_depth_value))


def settles(lower_depth_value: float, upper_depth_value: float, tolerance: float = SETTLING_TOLERANCE) -> bool | None:
    """True when the relative change over the last doubling is below ``tolerance`` (None if undefined).

    References
    ----------
    Paper section 4.2 / Fig. 6c-d: C_L → C_∞, A_L − C_L → Δ_∞.

    Examples
    --------
    >>> settles(2.0, 2.1), settles(2.0, 3.0)
    (True, False)
    """
    return change_settles(relative_change(lower_depth_value, upper_depth_value), tolerance)


def change_settles(change: float, tolerance: float = SETTLING_TOLERANCE) -> bool | None:
    """:func:`settles` from a relative change already computed (None when it is NaN).

    References
    ----------
    Paper section 4.2 / Fig. 6c-d: C_L → C_∞, A_L − C_L → Δ_∞.

    Examples
    --------
    >>> change_settles(0.05), change_settles(0.5), change_settles(float("nan"))
    (True, False, None)
    """
    return None if math.isnan(change) else bool(change < tolerance)


def last_doubling(depths, values) -> tuple[int, int, float]:
    """``(L/2, L, relative change)`` over the last doubling of a depth grid (finite values only).

    ``L`` is the largest depth with a finite value whose half also has one; ``(0, 0, nan)`` if none.

    References
    ----------
    Paper Fig. 6c-d and eq. (63): C_L → C_∞, A_L − C_L → Δ_∞.

    Examples
    --------
    >>> last_doubling([1, 2, 4, 8], [float("nan"), 1.0, 2.0, 2.1])
    (4, 8, 0.050000000000000044)
    >>> last_doubling([1, 3], [1.0, 2.0])
    (0, 0, nan)
    """
    finite = {int(L): float(v) for L, v in zip(depths, values) if _finite(v)}
    for depth in sorted(finite, reverse=True):
        if depth % 2 == 0 and depth // 2 in finite:
            return depth // 2, depth, relative_change(finite[depth // 2], finite[depth])
    return 0, 0, math.nan


def standard_error(values, axis: int | None = None):
    """The standard error of a mean of independent values, ``std(ddof=1) / sqrt(n)``; NaN with fewer than two.

    The one rule for a mean over seeds (each seed its own run) and over held-out contexts. ``axis=None``:
    of every value (a float); otherwise along ``axis`` (an array).

    Examples
    --------
    >>> standard_error([1.0, 2.0, 3.0])
    0.5773502691896258
    >>> standard_error([2.0]), standard_error([[1.0, 2.0], [3.0, 6.0]], axis=0).tolist()
    (nan, [1.0, 2.0])
    """
    values = np.asarray(values, dtype=np.float64)
    n = values.size if axis is None else values.shape[axis]
    if n < 2:
        return math.nan if axis is None else np.full(np.delete(values.shape, axis), np.nan)
    se = values.std(axis=axis, ddof=1) / np.sqrt(n)
    return float(se) if axis is None else se


def mean_se(values, axis: int | None = None):
    """The mean and its :func:`standard_error`: of every value (two floats) or along ``axis`` (two arrays).

    The one mean ± SE of the package (over seeds, over held-out contexts, over Monte-Carlo draws); the
    mean keeps the values' dtype, as ``values.mean()`` does.

    Examples
    --------
    >>> mean_se([1.0, 1.2])
    (1.1, 0.09999999999999998)
    >>> [v.tolist() for v in mean_se([[1.0, 2.0], [3.0, 6.0]], axis=0)]
    [[2.0, 4.0], [1.0, 2.0]]
    """
    values = np.asarray(values)
    if axis is None:
        return float(values.mean()), standard_error(values)
    return values.mean(axis=axis), np.asarray(standard_error(values, axis=axis))


def depth_gain(R_first: float, R_last: float, se_first: float | None = None, se_last: float | None = None) -> tuple[float, float]:
    """``(R_1 / R_{L_max}, delta-method SE)`` (NaN SE when the SEs are not given).

    References
    ----------
    Paper eq. (16): the gain a depth sweep shows.

    Examples
    --------
    >>> depth_gain(3.0, 1.5, 0.03, 0.015)
    (2.0, 0.0282842712474619)
    """
    gain = float(R_first / R_last)
    if not _finite(se_first, se_last):
        return gain, math.nan
    return gain, float(gain * math.hypot(se_first / R_first, se_last / R_last))


def alpha_in_window(alpha: float) -> bool:
    """alpha lies in :data:`ALPHA_WINDOW` (the paper's α ≈ 1); False for NaN.

    References
    ----------
    Paper eq. (16).

    Examples
    --------
    >>> alpha_in_window(0.95), alpha_in_window(0.6), alpha_in_window(float("nan"))
    (True, False, False)
    """
    return bool(ALPHA_WINDOW[0] <= alpha <= ALPHA_WINDOW[1])


def classify_depth_dependence(gain: float, alpha: float, settled: bool) -> str:
    """Name a depth curve from its numbers.

    * ``'flat'``: ``R_1 / R_{L_max} <`` :data:`DEPTH_GAIN_THRESHOLD` (depth removes less than a tenth);
    * ``'inverse-depth'``: it gains, alpha is in :data:`ALPHA_WINDOW` and ``C_L``, ``A_L − C_L`` settle;
    * ``'improves (alpha = …)'`` otherwise (with ``', not settled'`` when they do not settle).

    References
    ----------
    Paper eqs. (16), (63).

    Examples
    --------
    >>> classify_depth_dependence(1.05, 1.0, True), classify_depth_dependence(1.5, 0.95, True)
    ('flat', 'inverse-depth')
    >>> classify_depth_dependence(1.5, 0.6, False)
    'improves (alpha = 0.6, not settled)'
    """
    if not (gain >= DEPTH_GAIN_THRESHOLD):
        return DepthDependence.FLAT.value
    if alpha_in_window(alpha) and settled:
        return DepthDependence.INVERSE_DEPTH.value
    return f"{DepthDependence.IMPROVES} (alpha = {alpha:.2g}{'' if settled else ', not settled'})"


def below_bound(value: float, bound: float, bound_se: float, sigmas: float = BOUND_SIGMAS) -> tuple[bool, float]:
    """``(value is more than sigmas SEs below bound, margin in SEs)``.

    References
    ----------
    Paper Tables 1 and 4 against the oracle bound of eq. (60).

    Examples
    --------
    >>> below_bound(2.0, 2.5, 0.1), below_bound(2.4, 2.5, 0.1)[0]
    ((True, 5.0), False)
    """
    margin = (bound - value) / max(_se(bound_se), 1e-300)
    return bool(margin > sigmas), float(margin)


def exceeds(value: float, se: float, sigmas: float = AGREEMENT_SIGMAS) -> bool:
    """``value > sigmas · se``: more than ``sigmas`` standard errors above 0; False when either is NaN.

    The one "more than z SE" rule: a difference resolved from 0 (a depth gain, ``ΔQ``), a gap one candidate
    wins by (``sigmas`` = :data:`CERTIFICATE_SES`), a target's shortfall (:data:`FIRST_STEP_SES`). "Below" is
    ``exceeds(-value, se)``. Its complement for finite numbers is :func:`at_most`.

    References
    ----------
    The ``± 2 SE`` of every comparison in the paper's tables and of eq. (60)'s certificates.

    Examples
    --------
    >>> exceeds(0.021, 0.01), exceeds(0.019, 0.01), exceeds(-0.021, 0.01), exceeds(float("nan"), 0.01)
    (True, False, False, False)
    """
    return bool(value > sigmas * se)


def at_most(value: float, se: float, sigmas: float) -> bool:
    """``value <= sigmas · se``: at most ``sigmas`` standard errors above 0; False when either is NaN.

    A doubling of the step cap that gains at most :data:`DOUBLING_SES` SE has converged; a first step short of
    the heads' by at most :data:`FIRST_STEP_SES` SE meets its target.

    References
    ----------
    Paper section 3.2 ("trained until the loss has converged"), checked by doubling the step cap.

    Examples
    --------
    >>> at_most(0.01, 0.01, 1.0), at_most(0.011, 0.01, 1.0), at_most(float("nan"), 0.01, 1.0)
    (True, False, False)
    """
    return bool(value <= sigmas * se)


def ses_word(value: float, se: float, sigmas: float = AGREEMENT_SIGMAS) -> str:
    """``'above'``, ``'below'`` or ``'indistinguishable'``: whether ``value ± se`` is beyond ``± sigmas`` SEs of 0.

    References
    ----------
    The ``± 2 SE`` of every comparison in the paper's tables.

    Examples
    --------
    >>> ses_word(0.021, 0.01), ses_word(-0.021, 0.01), ses_word(0.019, 0.01)
    ('above', 'below', 'indistinguishable')
    """
    if exceeds(value, se, sigmas):
        return "above"
    if exceeds(-value, se, sigmas):
        return "below"
    return "indistinguishable"


def certificate_allowance(se: float, reference: float, sigmas: float) -> float:
    """What a certificate allows: ``sigmas`` paired SEs plus :data:`CERTIFICATE_ROUNDOFF` of the reference.

    The round-off term lets a certificate pass where both sides are one function (SE 0) evaluated twice.

    References
    ----------
    Paper eq. (60): nesting ``R*_L ≤ R*_{L/2} + 2 SE``; reachability ``R*_L ≤ B_L + 2 SE``.

    Examples
    --------
    >>> certificate_allowance(0.004, 1.0, CERTIFICATE_SES)
    0.008001
    """
    return sigmas * se + CERTIFICATE_ROUNDOFF * abs(reference)


def alpha_ends_bounded(lo: float, hi: float, grid: Sequence[float] = ALPHA_GRID) -> tuple[bool, bool]:
    """Whether each end of the α interval ``[lo, hi]`` lies inside ``grid``'s edges (an end at an edge, or NaN, is
    unbounded: the gains do not bound α on that side).

    A verdict needs both ends bounded; an interval with neither says nothing about α.

    References
    ----------
    Paper eq. (16): the exponent α of the gain law.

    Examples
    --------
    >>> alpha_ends_bounded(0.8, 1.3), alpha_ends_bounded(0.01, 1.3), alpha_ends_bounded(float("nan"), 10.0)
    ((True, True), (False, True), (False, False))
    """
    return bool(lo > grid[0]), bool(hi < grid[-1])


def checked_depths(depths: Sequence[int], doubling: dict) -> tuple:
    """The depths of ``depths`` whose step-doubling check ran and passed: the only ones a verdict may rest on.

    ``doubling`` maps a depth to whether its check passed; a depth it does not hold had no check (it never
    ran there). A depth without a check, or with a failed one, is not shown to have converged at the plan's
    step caps, so nothing is concluded from it.

    References
    ----------
    Paper section 3.2: "all models are trained until the loss has converged".

    Examples
    --------
    >>> checked_depths([1, 2, 4, 8], {1: True, 2: True, 4: False})
    (1, 2)
    >>> checked_depths([1, 2], {})
    ()
    """
    return tuple(int(L) for L in depths if doubling.get(int(L)) is True)


#: the fit-free contrasts of a depth curve R by name: ``L_max -> depths (u0, u1, u2)`` read, and the pairs of them
#: whose differences are the numerator and the denominator, ``(R[ua] − R[ub]) / (R[uc] − R[ud])``
CONTRAST_DEPTHS = {
    # the gain at L = 2 over the gain at the deepest depth (gains R_1 − R_L): the share of the whole gain that the
    # first doubling brings
    "g2/gLmax": (lambda L_max: (1, 2, L_max), (0, 1), (0, 2)),
    # what depths 2 → 16 add against what the first doubling brings
    "(R2-R16)/(R1-R2)": (lambda L_max: (1, 2, 16), (1, 2), (0, 1)),
    # the gain of one doubling over the next, ending at L_max: 2^α whatever the plateau and the depths, so the law's
    # exponent on a depth range (the diffuse range) without its plateau
    "(R_L-R_2L)/(R_2L-R_4L)": (lambda L_max: (L_max / 4, L_max / 2, L_max), (0, 1), (1, 2)),
}


def contrast_depths(name: str, L_max: int) -> tuple:
    """The depths contrast ``name`` (:data:`CONTRAST_DEPTHS`) reads, ending at ``L_max``.

    Examples
    --------
    >>> contrast_depths("g2/gLmax", 128), contrast_depths("(R_L-R_2L)/(R_2L-R_4L)", 128)
    ((1, 2, 128), (32, 64, 128))
    """
    return tuple(int(L) for L in CONTRAST_DEPTHS[name][0](int(L_max)))


def contrast_value(name: str, R, L_max: int):
    """Contrast ``name`` of a depth curve ``R`` (depth -> value, or replicates, or a sympy expression).

    Examples
    --------
    >>> contrast_value("g2/gLmax", {1: 3.0, 2: 2.0, 8: 1.0}, 8)
    0.5
    """
    depths, (a, b), (c, d) = CONTRAST_DEPTHS[name]
    if not callable(R):  # a curve by depth, read at whole depths
        R, depths = R.__getitem__, lambda L_max: contrast_depths(name, L_max)
    u = depths(L_max)
    return (R(u[a]) - R(u[b])) / (R(u[c]) - R(u[d]))


def _law_contrasts() -> dict:
    """Each contrast of :data:`CONTRAST_DEPTHS` as a sympy ratio of the law R_L = L0 + c L^-α (eq. 16)."""
    from theory.fitting import DEPTH_LAW
    from theory.symbols import L

    lmax = sp.Symbol("L_max", positive=True)
    return {name: (sp.simplify(contrast_value(name, lambda depth: DEPTH_LAW.subs(L, depth), lmax)), lmax)
            for name in CONTRAST_DEPTHS}


#: name -> (sympy expression of the contrast under eq. 16, in α and L_max; L0 and c cancel)
CONTRASTS = _law_contrasts()
_contrast_numeric = {name: sp.lambdify((_lmax, sp.Symbol("alpha", positive=True)), expr, "math")
                     for name, (expr, _lmax) in CONTRASTS.items()}


def law_contrast(name: str, L_max: int, alpha: float = 1.0) -> float:
    """The value of contrast ``name`` (:data:`CONTRASTS`) under R_L = L0 + c L^-α: α = 1 gives the paper's reference.

    References
    ----------
    Paper eq. (16).

    Examples
    --------
    >>> round(law_contrast("g2/gLmax", 128), 4), round(law_contrast("(R2-R16)/(R1-R2)", 128), 4)
    (0.5039, 0.875)
    >>> law_contrast("g3", 128)
    Traceback (most recent call last):
    ...
    ValueError: contrast must be one of g2/gLmax, (R2-R16)/(R1-R2), (R_L-R_2L)/(R_2L-R_4L); got 'g3'
    """
    if name not in CONTRASTS:
        raise ValueError(f"contrast must be one of {', '.join(CONTRASTS)}; got {name!r}")
    return float(_contrast_numeric[name](float(L_max), float(alpha)))
