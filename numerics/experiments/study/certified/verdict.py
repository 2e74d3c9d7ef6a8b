"""The certified study's verdict: checked depths, fit-free contrasts with their intervals, the gain law's variants.

A verdict rests only on the depths whose step-doubling check ran and passed
(:func:`~numerics.experiments.criteria.checked_depths` of :func:`doubling_passed`; the long-cap pairs
:func:`long_pairs`; the ranges split at :func:`crossover_depth`) and is judged on a fit-free contrast of the envelope
(:data:`~numerics.experiments.criteria.CONTRASTS`) against its value under ``R_L = L0 + c/L`` (paper eq. 16 at
α = 1), with a bootstrap interval (:func:`contrast_stat` of the replicates of
:func:`~numerics.experiments.study.certified.bootstrap.contrast_bootstrap`). The gain-law fit
(:func:`gain_law_gls`) is reported only where it fits, and a CONTRADICTED verdict must hold under each of its
analysis variants (:func:`gain_law_variants`). :func:`setting_verdict` takes only what the verdicts file holds,
so a verdict can be recomputed from the file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .formatting import depth_list
from ..plan import shipped_U
from ...criteria import (ALPHA_GRID, CONTRAST_DEPTHS, GAIN_LAW_MAX_CHI2_DOF, Reason, Verdict, alpha_ends_bounded,
                         contrast_depths, contrast_value, law_contrast)

__all__ = ["ALPHA_GRID", "DOUBLING_RATIO", "RANGES", "VERDICT_CONTRAST", "range_depths", "range_verdict", "ContrastStat",
           "FitVariant", "contrast_stat", "crossover_depth", "depth_list", "doubling_passed",
           "long_pairs", "long_picks", "fit_reported", "gain_law_gls", "gain_law_variants", "implied_alpha",
           "setting_verdict"]

#: the contrast a verdict is judged on (:data:`~numerics.experiments.criteria.CONTRASTS`)
VERDICT_CONTRAST = "g2/gLmax"
#: the contrast of the diffuse range: one doubling's gain over the next, ending at the range's deepest depth
#: (``2^α`` under eq. 16, whatever the plateau)
DOUBLING_RATIO = "(R_L-R_2L)/(R_2L-R_4L)"
#: the depth ranges a verdict is given for (the theory's branches, :meth:`theory.expressible.ExpressibleLoss.crossover_depth`)
RANGES = ("atomic", "diffuse")


def fit_reported(chi2: float, dof: int) -> bool:
    """``χ²/dof ≤`` :data:`~numerics.experiments.criteria.GAIN_LAW_MAX_CHI2_DOF` (no dof: no fit to report).

    Examples
    --------
    >>> fit_reported(9.0, 5), fit_reported(18.3, 5), fit_reported(1.0, 0)
    (True, False, False)
    """
    return bool(dof > 0 and math.isfinite(chi2) and chi2 / dof <= GAIN_LAW_MAX_CHI2_DOF)


def implied_alpha(name: str, L_max: int, lo: float, hi: float) -> tuple[float, float]:
    """The α of :data:`ALPHA_GRID` whose eq.-16 value of contrast ``name`` lies in ``[lo, hi]``: ``(min, max)``.

    NaN when none does. An end of the grid means the contrast does not bound α on that side.

    References
    ----------
    Paper eq. (16).

    Examples
    --------
    >>> [round(v, 2) for v in implied_alpha("g2/gLmax", 128, 0.49, 0.52)]
    [0.98, 1.05]
    """
    values = np.array([law_contrast(name, L_max, a) for a in ALPHA_GRID])
    inside = ALPHA_GRID[(values >= lo) & (values <= hi)]
    return (float(inside.min()), float(inside.max())) if inside.size else (math.nan, math.nan)


@dataclass(frozen=True)
class ContrastStat:
    """A fit-free contrast of a depth curve (:data:`~numerics.experiments.criteria.CONTRASTS`) with its interval.

    ``estimate``: ``'mean over seeds'`` (the envelope) or ``'best seed'`` (per depth, the seed whose winner has
    the least selection-set loss, reported on the report set); ``depths``: the depths it uses, ``checked``:
    whether each of them passed its step-doubling check; ``se``: half the central 68 % of the bootstrap
    replicates (:func:`~numerics.experiments.study.certified.bootstrap.contrast_bootstrap`); ``lo``, ``hi``: the
    central 95 % of the replicates, each side's distance from ``value`` widened by ``t(0.975, seeds − 1) /
    z(0.975)``; :attr:`reference`: its value under ``R_L = L0 + c/L``; ``resolved`` False: the contrast's
    denominator (a gain) has an interval holding 0, so the ratio's interval is unbounded (``lo = −∞``,
    ``hi = ∞``; Fieller).

    References
    ----------
    Paper eq. (16) (the reference), eq. (12) (the losses).

    Examples
    --------
    >>> c = ContrastStat("g2/gLmax", "mean over seeds", (1, 2, 128), 128, 0.55, 0.01, 0.52, 0.58, False)
    >>> round(c.reference, 3), c.covers
    (0.504, False)
    """

    name: str
    estimate: str
    depths: tuple
    L_max: int
    value: float
    se: float
    lo: float
    hi: float
    checked: bool
    resolved: bool = True

    @property
    def reference(self) -> float:
        """The contrast under R_L = L0 + c/L (eq. 16 at α = 1), computed from the law."""
        return law_contrast(self.name, self.L_max, 1.0)

    @property
    def covers(self) -> bool:
        """Whether the interval contains the α = 1 value."""
        return bool(self.lo <= self.reference <= self.hi)

    @property
    def alpha_interval(self) -> tuple[float, float]:
        """The α (eq. 16) whose contrast lies in the interval (:func:`implied_alpha`)."""
        return implied_alpha(self.name, self.L_max, self.lo, self.hi)

    def to_dict(self) -> dict:
        lo, hi = self.alpha_interval
        return {"name": self.name, "estimate": self.estimate, "depths": list(self.depths), "L_max": self.L_max,
                "value": self.value, "se": self.se, "lo": self.lo, "hi": self.hi, "checked": self.checked,
                "resolved": self.resolved, "reference": self.reference, "alpha_lo": lo, "alpha_hi": hi}


@dataclass(frozen=True)
class FitVariant:
    """The gain-law fit (eq. 16) under one analysis variant: its α interval, χ² and dof.

    ``name``: ``'full covariance'`` (GLS, Student-t threshold), ``'diagonal weights'`` (the bootstrap variances
    only) or ``'Birge widening'`` (the full fit's threshold times ``max(1, χ²/dof)``).

    Examples
    --------
    >>> FitVariant("diagonal weights", 1.2, 0.8, 2.0, 3.0, 2).alpha_hi
    2.0
    """

    name: str
    alpha: float
    alpha_lo: float
    alpha_hi: float
    chi2: float
    dof: int


def _judge_contrast(p: dict, depths) -> tuple[str, tuple | None]:
    """``(text, verdict)`` of a contrast on ``depths``: the verdict where its interval holds the α = 1 value
    (REPRODUCED, or INCONCLUSIVE ``resolution`` when it does not bound α), else None (the caller's variants decide).
    """
    text = (f"{p['name']} = {p['value']:.3f} [{p['lo']:.3f}, {p['hi']:.3f}] on L = {depth_list(depths)} "
            f"(α = 1: {p['reference']:.3f})")
    if not p["lo"] <= p["reference"] <= p["hi"]:
        return text, None
    if not all(alpha_ends_bounded(p["alpha_lo"], p["alpha_hi"])):
        return text, (Verdict.INCONCLUSIVE, Reason.RESOLUTION,
                      f"{text}: contains the α = 1 value but does not bound α")
    return text, (Verdict.REPRODUCED, Reason.NONE, f"{text} contains the α = 1 value")


def setting_verdict(depths, planned_depths, checked, failed, primary: dict | None, variants=(), *,
                    doubling_run=None) -> tuple[Verdict, Reason, str]:
    """A setting's verdict on the paper's ``c/L`` law (eq. 16, α = 1): ``(verdict, kind, reason)``.

    Every input is what ``certified-study.verdicts.json`` holds, so the verdict can be recomputed from the file.
    ``checked``: the depths whose step-doubling check ran and passed (the only ones the verdict rests on);
    ``failed``: ``(name, depth)`` of the failed certificates; ``primary``: :meth:`ContrastStat.to_dict` of the
    verdict's contrast on the checked depths (None without one); ``variants``: the gain-law fit's α interval on
    the checked depths under each analysis variant (dicts with ``name``, ``alpha_lo``, ``alpha_hi``);
    ``doubling_run``: the depths where the check ran (for the reason's words).

    ``kind`` says why a verdict is INCONCLUSIVE: ``budget`` (fewer than 3 depths, or not every planned depth
    done), ``checks`` (fewer than :data:`~numerics.experiments.criteria.MIN_CHECKED_DEPTHS` checked depths, or
    no contrast on them), ``training`` (a certificate fails at a checked depth), ``resolution`` (the contrast's
    interval contains the α = 1 value but does not bound α) or ``variants`` (the contrast excludes α = 1 but an
    analysis variant of the gain-law fit does not); ``''`` otherwise. CONTRADICTED needs every check it rests on
    run and passed and every variant to agree.

    Examples
    --------
    >>> p = {"name": "g2/gLmax", "L_max": 16, "value": 0.53, "lo": 0.51, "hi": 0.55, "reference": 0.5333,
    ...      "alpha_lo": 0.9, "alpha_hi": 1.2}
    >>> setting_verdict((1, 2, 4, 8, 16), (1, 2, 4, 8, 16), (1, 2, 4, 8, 16), [], p)[:2]
    (<Verdict.REPRODUCED: 'REPRODUCED'>, <Reason.NONE: ''>)
    >>> setting_verdict((1, 2, 4, 8, 16), (1, 2, 4, 8, 16), (1, 2), [], p, doubling_run=(1, 2, 4))
    (<Verdict.INCONCLUSIVE: 'INCONCLUSIVE'>, <Reason.CHECKS: 'checks'>, 'rests on 2 depths whose step-doubling check ran and passed (1, 2), fewer than 5; the check ran at 1, 2, 4 and failed at 4')
    >>> setting_verdict((1, 2, 4, 8, 16, 32), (1, 2, 4, 8, 16, 32), (2, 4, 8, 16, 32), [], None)[2]
    'rests on 5 depths whose step-doubling check ran and passed (2, 4, 8, 16, 32), but its contrast g2/gLmax uses L = 1, 2, 32, and the check did not pass at L = 1'
    """
    from ... import criteria  # read at call time: a patched rule is seen (the claims' mutation test)

    minimum = criteria.MIN_CHECKED_DEPTHS
    depths, planned_depths, checked = tuple(depths), tuple(planned_depths), tuple(checked)
    if len(depths) < 3:
        return Verdict.INCONCLUSIVE, Reason.BUDGET, f"only {len(depths)} depths"
    if planned_depths and depths != planned_depths:
        return Verdict.INCONCLUSIVE, Reason.BUDGET, (f"depths {depths[0]}–{depths[-1]} done of {planned_depths[0]}–"
                                                     f"{planned_depths[-1]}: the law is about the whole range, the "
                                                     "study goes on")
    # enough checked depths, but not those the contrast uses (e.g. the check failed at L = 1, which g_2/g_Lmax uses)
    used = contrast_depths(VERDICT_CONTRAST, checked[-1]) if checked else ()
    unpassed = [L for L in used if L not in checked]
    if len(checked) >= minimum and primary is None and unpassed:
        return Verdict.INCONCLUSIVE, Reason.CHECKS, (
            f"rests on {len(checked)} depths whose step-doubling check ran and passed ({depth_list(checked)}), but "
            f"its contrast {VERDICT_CONTRAST} uses L = {depth_list(used)}, and the check did not pass at L = "
            f"{depth_list(unpassed)}")
    if len(checked) < minimum or primary is None:
        ran = tuple(doubling_run) if doubling_run is not None else None
        where = ("" if ran is None else "; the check never ran" if not ran else
                 f"; the check ran at {depth_list(ran)}" + (f" and failed at {depth_list([L for L in ran if L not in checked])}"
                                                             if set(ran) - set(checked) else ""))
        return Verdict.INCONCLUSIVE, Reason.CHECKS, (f"rests on {len(checked)} depths whose step-doubling check ran "
                                                     f"and passed ({depth_list(checked)}), fewer than {minimum}{where}")
    blocking = [(name, depth) for name, depth in failed if depth in checked]
    if blocking:
        names = ", ".join(f"{name} at L = {depth}" for name, depth in blocking)
        return Verdict.INCONCLUSIVE, Reason.TRAINING, f"certificates fail: {names}"
    text, covering = _judge_contrast(primary, checked)
    if covering is not None:
        return covering
    agreeing = [v for v in variants if v["alpha_lo"] <= 1.0 <= v["alpha_hi"]]
    if agreeing:
        return Verdict.INCONCLUSIVE, Reason.VARIANTS, (f"{text} excludes the α = 1 value, but the gain-law fit with "
                                                       f"{agreeing[0]['name']} gives α in [{agreeing[0]['alpha_lo']:.2f}, "
                                                       f"{agreeing[0]['alpha_hi']:.2f}], which contains 1")
    return (Verdict.CONTRADICTED, Reason.NONE,
            f"{text} excludes the α = 1 value, and so does every variant of the gain-law fit")


def gain_law_gls(depths, gains, covariance, threshold: float) -> tuple[float, float, float, float, int]:
    """Profile fit of ``g_L = c (1 − L^-α)`` (paper eq. 16, the plateau cancels) with a full covariance.

    For each α of :data:`ALPHA_GRID`, ``c ≥ 0`` is the generalised least-squares solution and
    ``χ²(α) = rᵀ Σ⁻¹ r``; the interval is ``{α : χ²(α) ≤ χ²_min + threshold}``. Returns
    ``(alpha, alpha_lo, alpha_hi, chi2, dof)``.

    Examples
    --------
    >>> L = np.array([2.0, 4.0, 8.0, 16.0]); g = 1 - 1 / L
    >>> round(gain_law_gls(L, g, np.eye(4) * 1e-4, 4.0)[0], 2)
    1.0
    """
    L = np.asarray(depths, dtype=np.float64)
    g = np.asarray(gains, dtype=np.float64)
    W = np.linalg.pinv(np.asarray(covariance, dtype=np.float64), rcond=1e-10, hermitian=True)
    f = 1.0 - L[None, :] ** (-ALPHA_GRID[:, None])  # (alpha, depth)
    c = np.maximum(np.einsum("ad,de,e->a", f, W, g) / np.einsum("ad,de,ae->a", f, W, f), 0.0)
    r = g[None, :] - c[:, None] * f
    chi2 = np.einsum("ad,de,ae->a", r, W, r)
    best = int(np.argmin(chi2))
    inside = ALPHA_GRID[chi2 <= chi2[best] + threshold]
    return float(ALPHA_GRID[best]), float(inside.min()), float(inside.max()), float(chi2[best]), int(L.size - 2)


def gain_law_variants(depths, gains, covariance, threshold: float) -> tuple:
    """The gain-law fit (:func:`gain_law_gls`) under each analysis variant (:class:`FitVariant`).

    Full covariance with ``threshold``; diagonal weights (the covariance's diagonal) with ``threshold``; Birge
    widening: the full fit with ``threshold × max(1, χ²/dof)``.

    References
    ----------
    Paper eq. (16).

    Examples
    --------
    >>> L = np.array([2.0, 4.0, 8.0, 16.0]); g = 1 - 1 / L
    >>> [v.name for v in gain_law_variants(L, g, np.eye(4) * 1e-4, 4.0)]
    ['full covariance', 'diagonal weights', 'Birge widening']
    """
    cov = np.asarray(covariance, dtype=np.float64)
    full = gain_law_gls(depths, gains, cov, threshold)
    diagonal = gain_law_gls(depths, gains, np.diag(np.diag(cov)), threshold)
    birge = max(1.0, full[3] / full[4]) if full[4] > 0 else 1.0
    widened = gain_law_gls(depths, gains, cov, threshold * birge)
    return tuple(FitVariant(name, *fit) for name, fit in (("full covariance", full), ("diagonal weights", diagonal),
                                                           ("Birge widening", widened)))


def contrast_stat(name: str, estimate: str, depths, point, replicates, L_max: int, checked_set, t_quantile: float
                  ) -> ContrastStat:
    """:class:`ContrastStat` of contrast ``name`` on the curve ``point`` (per depth) and its ``replicates``.

    ``ValueError`` naming ``L_max`` (or the depth) when a depth the contrast needs was not run.

    Examples
    --------
    >>> reps = np.array([[2.0, 1.5, 1.0], [2.1, 1.55, 1.0]])
    >>> c = contrast_stat("g2/gLmax", "mean over seeds", (1, 2, 4), np.array([2.0, 1.5, 1.0]), reps, 4, {1, 2, 4}, 2.0)
    >>> c.value, c.checked
    (0.5, True)
    >>> contrast_stat("g2/gLmax", "mean over seeds", (1, 2, 4), np.array([2.0, 1.5, 1.0]), reps, 8, {1}, 2.0)
    Traceback (most recent call last):
    ...
    ValueError: L_max: depth 8 was not run (depths done: 1, 2, 4)
    """
    depths = tuple(int(L) for L in depths)
    if int(L_max) not in depths:
        raise ValueError(f"L_max: depth {L_max} was not run (depths done: {depth_list(depths)})")
    used = contrast_depths(name, L_max)
    missing = [L for L in used if L not in depths]
    if missing:
        raise ValueError(f"depth: the contrast {name} needs depth {missing[0]}, which was not run (depths done: "
                         f"{depth_list(depths)})")
    at = {L: i for i, L in enumerate(depths)}
    checked = all(L in checked_set for L in used)
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero gain gives an infinite ratio, dropped after
        value = float(contrast_value(name, {L: point[at[L]] for L in used}, L_max))
        reps = contrast_value(name, {L: replicates[:, at[L]] for L in used}, L_max)
    # the denominator (a gain): where its own interval holds 0, the ratio's confidence set is unbounded (Fieller)
    lower, upper = (used[i] for i in CONTRAST_DEPTHS[name][2])
    denominator = replicates[:, at[lower]] - replicates[:, at[upper]]
    d_value = float(point[at[lower]] - point[at[upper]])
    from scipy.stats import norm

    widen = t_quantile / float(norm.ppf(0.975))
    d_lo, d_hi = _widened(d_value, denominator, widen)
    reps = reps[np.isfinite(reps)]
    if reps.size < 2 or not (d_lo > 0 or d_hi < 0):
        q16, q84 = np.percentile(reps, [15.865, 84.135]) if reps.size >= 2 else (math.nan, math.nan)
        return ContrastStat(name, estimate, used, int(L_max), value, float((q84 - q16) / 2), -math.inf, math.inf,
                            checked, resolved=False)
    # a ratio's replicates have heavy tails: percentiles, not the SD; each side widened by t/z for the few seeds
    # (Student t with seeds − 1 degrees of freedom)
    q16, q84 = np.percentile(reps, [15.865, 84.135])
    lo, hi = _widened(value, reps, widen)
    return ContrastStat(name, estimate, used, int(L_max), value, float((q84 - q16) / 2), lo, hi, checked)


def _widened(value: float, replicates: np.ndarray, widen: float) -> tuple[float, float]:
    """The central 95 % of ``replicates``, each side's distance from ``value`` times ``widen``, holding ``value``."""
    q025, q975 = np.percentile(replicates, [2.5, 97.5])
    return (float(min(value, value - widen * (value - q025))), float(max(value, value + widen * (q975 - value))))


def range_depths(planned_depths, crossover: int | None) -> dict:
    """The planned depths of each range: ``atomic`` below ``crossover``, ``diffuse`` from it on (none without one).

    A range that holds no planned depth is left out.

    Examples
    --------
    >>> range_depths((1, 2, 4, 8, 16, 32, 64, 128), 32)
    {'atomic': (1, 2, 4, 8, 16), 'diffuse': (32, 64, 128)}
    >>> range_depths((1, 2), 32)
    {'atomic': (1, 2)}
    >>> range_depths((1, 2, 4), None)
    {}
    """
    if crossover is None:
        return {}
    planned = tuple(int(L) for L in planned_depths)
    ranges = {"atomic": tuple(L for L in planned if L < crossover), "diffuse": tuple(L for L in planned if L >= crossover)}
    return {name: depths for name, depths in ranges.items() if depths}


def range_contrast(range_name: str, depths) -> tuple[str, int] | None:
    """``(contrast name, L_max)`` a range is judged on, or None when the range is too short for one.

    The atomic range: ``g_2/g_Lmax`` to its deepest depth (from L = 1, which it holds); the diffuse range: the
    doubling ratio :data:`DOUBLING_RATIO` ending at its deepest depth (three doublings-apart depths).

    Examples
    --------
    >>> range_contrast("atomic", (1, 2, 4, 8, 16)), range_contrast("diffuse", (32, 64, 128))
    (('g2/gLmax', 16), ('(R_L-R_2L)/(R_2L-R_4L)', 128))
    >>> range_contrast("diffuse", (64, 128)) is None
    True
    """
    depths = tuple(int(L) for L in depths)
    if range_name == "atomic":
        return ("g2/gLmax", depths[-1]) if len(depths) >= 3 and depths[:2] == (1, 2) else None
    if range_name == "diffuse":
        return (DOUBLING_RATIO, depths[-1]) if len(depths) >= 3 and depths[-3] == depths[-1] // 4 else None
    raise ValueError(f"range must be one of {', '.join(RANGES)}; got {range_name!r}")


def range_verdict(range_name: str, depths, done, checked, failed, contrasts: dict) -> tuple[Verdict, Reason, str]:
    """The verdict on the paper's ``c/L`` law (α = 1) within one depth range: ``(verdict, kind, reason)``.

    ``depths``: the range's planned depths; ``done``: the depths done; ``checked``: those whose step-doubling
    check ran and passed; ``failed``: ``(name, depth)`` of failed certificates; ``contrasts``:
    :meth:`ContrastStat.to_dict` of the range's contrast (:func:`range_contrast`) by estimate (``'mean over
    seeds'``, ``'best seed'``). Every depth of the range must be done and checked (a range is short: none may be
    left out). REPRODUCED: the mean-over-seeds interval contains the α = 1 value and bounds α; CONTRADICTED: it
    and the best seed's both exclude it (the analysis variant of a range); else INCONCLUSIVE, with its kind
    (``budget``, ``checks``, ``training``, ``resolution``, ``variants``).

    Examples
    --------
    >>> c = {"name": "(R_L-R_2L)/(R_2L-R_4L)", "L_max": 128, "value": 1.2, "lo": 1.0, "hi": 1.4, "reference": 2.0,
    ...      "alpha_lo": 0.0, "alpha_hi": 0.49}
    >>> range_verdict("diffuse", (32, 64, 128), (32, 64, 128), (32, 64, 128), [],
    ...               {"mean over seeds": c, "best seed": c})[:2]
    (<Verdict.CONTRADICTED: 'CONTRADICTED'>, <Reason.NONE: ''>)
    >>> range_verdict("diffuse", (32, 64, 128), (32, 64, 128), (32, 64), [], {"mean over seeds": c})[2]
    'the step-doubling check did not run or failed at L = 128'
    """
    depths, done, checked = tuple(depths), tuple(done), tuple(checked)
    missing = [L for L in depths if L not in done]
    if missing:
        return Verdict.INCONCLUSIVE, Reason.BUDGET, f"L = {depth_list(missing)} not done yet"
    unchecked = [L for L in depths if L not in checked]
    if unchecked:
        return (Verdict.INCONCLUSIVE, Reason.CHECKS,
                f"the step-doubling check did not run or failed at L = {depth_list(unchecked)}")
    blocking = [(name, L) for name, L in failed if L in depths]
    if blocking:
        return (Verdict.INCONCLUSIVE, Reason.TRAINING,
                "certificates fail: " + ", ".join(f"{n} at L = {L}" for n, L in blocking))
    primary = contrasts.get("mean over seeds")
    if primary is None:
        return Verdict.INCONCLUSIVE, Reason.CHECKS, f"the range L = {depth_list(depths)} is too short for a contrast"
    text, covering = _judge_contrast(primary, depths)
    if covering is not None:
        return covering
    best = contrasts.get("best seed")
    if best is None or best["lo"] <= best["reference"] <= best["hi"]:
        return (Verdict.INCONCLUSIVE, Reason.VARIANTS,
                f"{text} excludes the α = 1 value, but the best seed's interval does not")
    return Verdict.CONTRADICTED, Reason.NONE, f"{text} excludes the α = 1 value, and so does the best seed's"

def long_pairs(members) -> list:
    """``(start, learning_rate, cap)`` of the longest-cap candidates whose half cap also ran (same start and rate).

    A cell with long caps (:attr:`~numerics.experiments.study.plan.Plan.long_caps`) trains some
    starts at S and 2S beyond the plan's usual caps; none elsewhere (the usual candidates of one start share a cap).

    Examples
    --------
    >>> from types import SimpleNamespace as R
    >>> rows = [R(start="cold", learning_rate=1e-3, steps=s, doubled=False) for s in (6000, 24000, 48000)]
    >>> long_pairs(rows)
    [('cold', 0.001, 48000)]
    """
    caps = {(r.start, r.learning_rate, r.steps) for r in members if not r.doubled and r.steps > 0}
    if not caps:
        return []
    top = max(steps for _, _, steps in caps)
    return sorted((a, b, top) for a, b, steps in caps if steps == top and (a, b, top // 2) in caps)


def long_picks(cells) -> dict:
    """The runs a long-cap doubling certificate compares: ``{cap: [row per seed]}`` at half the longest cap and at it.

    ``cells``: each seed's rows of one depth. Per seed and cap, the run of least selection-set loss among the starts
    run at both caps (:func:`long_pairs` of the first seed's cell; ties: the first); empty without long caps.

    Examples
    --------
    >>> from types import SimpleNamespace as R
    >>> cell = [R(start="cold", learning_rate=1e-3, steps=s, doubled=False, R_select=1 / s) for s in (24000, 48000)]
    >>> {cap: [r.steps for r in rows] for cap, rows in long_picks([cell, cell]).items()}
    {24000: [24000, 24000], 48000: [48000, 48000]}
    """
    pairs = long_pairs(cells[0])
    if not pairs:
        return {}
    full, starts = max(steps for _, _, steps in pairs), {(start, lr) for start, lr, _ in pairs}
    return {cap: [min((r for r in cell if not r.doubled and r.steps == cap and (r.start, r.learning_rate) in starts),
                      key=lambda r: r.R_select) for cell in cells] for cap in (full // 2, full)}


def doubling_passed(certificates) -> dict:
    """``{depth: passed}`` of the step-doubling certificates: a depth with several passes only if every one does.

    Examples
    --------
    >>> from types import SimpleNamespace as C
    >>> doubling_passed([C(name="doubling", depth=4, passed=True), C(name="doubling", depth=4, passed=False)])
    {4: False}
    """
    out: dict = {}
    for c in certificates:
        if c.name == "doubling":
            out[c.depth] = out.get(c.depth, True) and c.passed
    return out


def crossover_depth(setting: tuple) -> int | None:
    """The crossover depth of the setting's shipped ``U_L`` (:meth:`theory.expressible.ExpressibleLoss.crossover_depth`).

    None where no ``U_L`` is shipped (the setting gets no verdicts by range).

    Examples
    --------
    >>> crossover_depth((0.0, 0.0, 2, 16, 32, 128)) is None
    True
    """
    a, b, k, d, N, P = setting
    expressible = shipped_U(a, b, d, P, k)
    return None if expressible is None else expressible.crossover_depth()
