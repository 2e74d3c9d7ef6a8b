"""The converged study's statistics: means over seeds, paired gains and the findings of each depth curve.

Pure computations on :class:`~.table.StudyRow` rows returning frozen results; the fits are
:mod:`theory.fitting`'s and the decision rules :mod:`numerics.experiments.criteria`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from theory.fitting import DepthLawRangeFit, GainFit, GapFit, fit_depth_law_ranges, fit_gain_law, gap_fit

from ...criteria import mean_over_seeds, standard_error, training_failures
from ..consistency import paper_plateaus
from .plan import _text_seed
from .table import StudyRow, as_rows

__all__ = ["DoublingGain", "GroupFindings", "GroupStats", "Target", "bound_at", "group_findings", "group_stats",
           "paired_depth_gains", "paired_difference", "paper_plateau", "predicted_single", "targets"]

#: Monte-Carlo contexts per seed of the page's ``predict_loss`` column (4× the API default: its
#: interval, not the model, would otherwise decide the 3 % comparison)
PREDICT_SAMPLES = 16384
#: bootstrap resamples over seeds of the depth-law fits
N_BOOTSTRAP = 200


def paired_difference(first: np.ndarray, second: np.ndarray) -> tuple[float, float]:
    """Mean of ``first − second`` over the same contexts and its SE (NaN for one context).

    Examples
    --------
    >>> paired_difference(np.array([2.0, 3.0, 4.0]), np.array([1.5, 2.0, 4.0]))[0]
    0.5
    """
    diff = first - second
    return float(diff.mean()), standard_error(diff)


def paired_depth_gains(errors: Mapping[int, np.ndarray]) -> dict:
    """``R_1 − R_L`` and its SE from ``{depth: squared errors}`` on the same contexts.

    Examples
    --------
    >>> e = {1: np.array([2.0, 3.0, 4.0]), 2: np.array([1.5, 2.0, 4.0])}
    >>> gains = paired_depth_gains(e)
    >>> round(gains[2][0], 6), round(gains[2][1], 6), gains[1]
    (0.5, 0.288675, (0.0, 0.0))
    """
    if 1 not in errors:
        return {}
    return {depth: paired_difference(errors[1], e) for depth, e in errors.items()}


@dataclass(frozen=True)
class GroupStats:
    """Means over seeds of one (model, N, a, b, k, depth), each with its SE.

    Attributes
    ----------
    n, converged : int
        Seeds; runs converged by the study's rule.
    R_L, R_L_se, A_L, C_L, delta_R1, delta_R1_se : float
        Means (and SEs) of the rows' columns of the same names.
    steps : tuple of int
        The distinct step caps of the runs.

    Examples
    --------
    >>> GroupStats(1, 1.0, 0.1, 1.0, math.nan, 0.0, 0.0, 1, (100,)).steps
    (100,)
    """

    n: int
    R_L: float
    R_L_se: float
    A_L: float
    C_L: float
    delta_R1: float
    delta_R1_se: float
    converged: int
    steps: tuple


def group_stats(rows: Sequence[Mapping]) -> dict[tuple, GroupStats]:
    """:class:`GroupStats` per (model, N, a, b, k, depth) of ``rows``.

    Means and SEs over seeds are :func:`~numerics.experiments.criteria.mean_over_seeds`: the seeds'
    standard error, never below what the runs' held-out SEs allow; NaN with one seed.

    References
    ----------
    Paper eqs. (12), (61)-(63).

    Examples
    --------
    >>> from numerics.experiments.study.converged.table import CSV_COLUMNS
    >>> base = dict.fromkeys(CSV_COLUMNS, 0.0) | {"model": "nonlinear", "N": 8, "k": 2, "depth": 1,
    ...                                          "R_L_se": 0.01, "delta_R1_se": float("nan"), "steps": 100}
    >>> stats = group_stats([base | {"R_L": r} for r in (1.0, 1.2)])[("nonlinear", 8, 0.0, 0.0, 2, 1)]
    >>> round(stats.R_L, 6), round(stats.R_L_se, 6), stats.n
    (1.1, 0.1, 2)
    """
    groups: dict = {}
    for r in as_rows(rows):
        groups.setdefault(r.group + (r.depth,), []).append(r)
    out = {}
    for key, rs in groups.items():
        R, R_se = mean_over_seeds([r.R_L for r in rs], [r.R_L_se for r in rs])
        finite_se = [r.delta_R1_se for r in rs if math.isfinite(r.delta_R1_se)]
        gain, gain_se = mean_over_seeds([r.delta_R1 for r in rs], finite_se)
        out[key] = GroupStats(
            n=len(rs), R_L=R, R_L_se=R_se, A_L=float(np.mean([r.A_L for r in rs])),
            C_L=float(np.mean([r.C_L for r in rs])), delta_R1=gain, delta_R1_se=gain_se,
            converged=sum(r.converged for r in rs), steps=tuple(sorted({r.steps for r in rs})))
    return out


def bound_at(bounds, depth: int) -> tuple[float, float] | None:
    """``(B_L, SE)`` of a :class:`theory.softmax_bounds.SoftmaxBounds` at ``depth``, or None.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> bounds = SimpleNamespace(depths=(1, 2), average=(2.0, 1.5), average_se=(0.01, 0.02))
    >>> bound_at(bounds, 2), bound_at(bounds, 4), bound_at(None, 1)
    ((1.5, 0.02), None, None)
    """
    if bounds is None or depth not in bounds.depths:
        return None
    i = list(bounds.depths).index(depth)
    return bounds.average[i], bounds.average_se[i]


def paper_plateau(a: float, b: float, k: int) -> tuple[str, float] | None:
    """``(source, L0)`` of the paper's nonlinear plateau at ``(a, b, k)`` (Tables 1, 4), or None.

    Examples
    --------
    >>> paper_plateau(0.0, 0.0, 2), paper_plateau(9.0, 0.0, 2)
    (('Table 1', 2.007), None)
    """
    for row in paper_plateaus():
        if (row["a"], row["b"], row["k"]) == (a, b, k):
            return row["source"].split(" (")[0], row["value"]
    return None


@dataclass(frozen=True)
class DoublingGain:
    """The doubling check at one depth: paired ``R(S) − R(2S)`` (mean over seeds ± SE) and its caps.

    Examples
    --------
    >>> DoublingGain(depth=16, gain=0.002, se=0.001, n_seeds=3, steps=6000).steps
    6000
    """

    depth: int
    gain: float
    se: float
    n_seeds: int
    steps: int


def _doubling_gains(group: Sequence[StudyRow]) -> tuple[DoublingGain, ...]:
    by_depth: dict = {}
    for r in group:
        if math.isfinite(r.doubling_gain):
            by_depth.setdefault(r.depth, []).append(r)
    out = []
    for L, rs in sorted(by_depth.items()):
        gain, se = mean_over_seeds([r.doubling_gain for r in rs], [r.doubling_gain_se for r in rs])
        out.append(DoublingGain(L, gain, se, len(rs), rs[0].steps))
    return tuple(out)


@dataclass(frozen=True)
class GroupFindings:
    """What one depth curve (model, N, a, b, k) shows: the fits, the failures, the checks.

    Attributes
    ----------
    key : tuple
        ``(model, N, a, b, k)``.
    paper : (str, float) or None
        The paper's plateau at this spectrum (:func:`paper_plateau`).
    depth_fits : tuple of DepthLawRangeFit
        Eq. (16) over all depths and from the peak on (empty with fewer than three depths
        or a missing (depth, seed)).
    gain_fit, gain_reason : GainFit or None, str
        The gain law on the paired gains; None with the reason it failed, or with an empty
        reason when not attempted (no L = 1, fewer than three depths).
    gap_depths, gap_C, gap : tuple, tuple, GapFit or None
        Depths ``L ≥ 2`` with ``C_L`` defined, ``C_L`` there, the gap fit with the paper's L0.
    failures : tuple of int
        Depths above 1 that are training failures (``criteria.training_failures``).
    below_bound : tuple of int or None
        Depths where ``R_L`` is more than two combined SE below ``B_L`` (None without bounds).

    References
    ----------
    Paper eqs. (16), (59)-(60), (92)-(93).

    Notes
    -----
    No example: made by :func:`group_findings`, which fits (``tests/test_converged.py`` renders a page).
    """

    key: tuple
    depths: tuple
    n_seeds: int
    paper: tuple | None
    depth_fits: tuple[DepthLawRangeFit, ...]
    gain_fit: GainFit | None
    gain_reason: str
    gap_depths: tuple
    gap_C: tuple
    gap: GapFit | None
    failures: tuple
    doubling: tuple[DoublingGain, ...]
    below_bound: tuple | None


def _depth_fits(group: Sequence[StudyRow], key: tuple, depths: list, seeds: list) -> tuple:
    complete = all(any(r.depth == L and r.seed == s for r in group) for L in depths for s in seeds)
    if len(depths) < 3 or not complete:
        return ()
    losses = np.array([[next(r.R_L for r in group if r.depth == L and r.seed == s) for L in depths]
                       for s in seeds])
    seed = _text_seed(repr(key))
    return fit_depth_law_ranges(depths, losses, n_bootstrap=N_BOOTSTRAP, rng=seed)


def group_findings(rows: Sequence[Mapping], stats: Mapping, key: tuple, bounds=None) -> GroupFindings:
    """The :class:`GroupFindings` of the group ``key`` (``stats``: :func:`group_stats`; ``bounds``:
    its :class:`theory.softmax_bounds.SoftmaxBounds` or None).

    Notes
    -----
    No example: it fits (``tests/test_converged.py`` renders a page).
    """
    model, N, a, b, k = key
    group = [r for r in as_rows(rows) if r.group == key]
    depths = sorted({r.depth for r in group})
    seeds = sorted({r.seed for r in group})
    at = {L: stats[key + (L,)] for L in depths}
    gains, ses = [at[L].delta_R1 for L in depths], [at[L].delta_R1_se for L in depths]
    gain_fit, gain_reason = None, ""
    if 1 in depths and len(depths) >= 3:
        try:
            gain_fit = fit_gain_law(depths, gains, ses)
        except ValueError as exc:
            gain_reason = str(exc)
    paper = paper_plateau(a, b, k)
    gap_depths = tuple(L for L in depths if L >= 2 and math.isfinite(at[L].C_L))
    gap_C = tuple(at[L].C_L for L in gap_depths)
    gap = gap_fit(gap_depths, gap_C, paper[1]) if paper is not None and len(gap_depths) >= 3 else None
    failures = training_failures(depths, gains, ses)
    below = None
    if bounds is not None:
        B = {L: bound_at(bounds, L) for L in depths}
        below = tuple(L for L in depths if B[L] is not None
                      and at[L].R_L < B[L][0] - 2 * math.hypot(at[L].R_L_se, B[L][1]))
    return GroupFindings(
        key=key, depths=tuple(depths), n_seeds=len(seeds), paper=paper,
        depth_fits=_depth_fits(group, key, depths, seeds), gain_fit=gain_fit, gain_reason=gain_reason,
        gap_depths=gap_depths, gap_C=gap_C, gap=gap, failures=tuple(L for L in failures if L != 1),
        doubling=_doubling_gains(group), below_bound=below)


def predicted_single(a: float, b: float, k: int, d: int, P: int) -> tuple[float, float]:
    """``theory.predict_loss(1, ..., regime='heads')`` (B_1) at ``(d, P)`` and the half-width of its interval.

    :data:`PREDICT_SAMPLES` contexts, the seed derived from the spectrum and sizes.

    Notes
    -----
    No example: a Monte-Carlo computation of 16384 contexts (``tests/test_converged.py`` renders a page).
    """
    from theory import PowerLawSpectrum, predict_loss

    seed = _text_seed(f"predict {a!r} {b!r} {k} {d} {P}")
    pred = predict_loss(1, PowerLawSpectrum(a, b, d), attention="softmax", task="difficult", P=P, k=k,
                        regime="heads", rng=seed, n_samples=PREDICT_SAMPLES)
    return float(pred.loss), float(pred.upper - pred.loss)


@dataclass(frozen=True)
class Target:
    """The study's targets for one main-width group: L = 1 against ``B_1`` and the prediction,
    the deepest depth against ``B_∞``, the largest paired SE against the cosine-head ceiling.

    Examples
    --------
    >>> t = Target(("nonlinear", 32, 0.0, 0.0, 2), 2.0, 1.96, 2.01, 0.02, 128, 1.9, 1.85, 0.004)
    >>> round(t.R_1 / t.B_1 - 1, 4)
    0.0204
    """

    key: tuple
    R_1: float
    B_1: float
    predicted: float
    predicted_half_width: float
    deepest: int
    R_deepest: float
    B_inf: float
    max_gain_se: float


def targets(rows: Sequence[Mapping], stats: Mapping, bounds: Mapping | None) -> tuple[Target, ...] | None:
    """A :class:`Target` per main-width nonlinear group (``N > d``) with bounds and an L = 1 run.

    None without bounds or without such a group.

    Notes
    -----
    No example: it runs ``theory.predict_loss`` (``tests/test_converged.py`` renders a page).
    """
    rows = as_rows(rows)
    if bounds is None or not rows:
        return None
    d_min = min(r.d for r in rows)
    main = sorted({k[:5] for k in stats if k[0] == "nonlinear" and k[1] > d_min})
    if not main:
        return None
    out = []
    for key in main:
        bnd = bounds.get(key)
        depths = sorted(k[5] for k in stats if k[:5] == key)
        if bnd is None or 1 not in depths:
            continue
        ses = [stats[key + (L,)].delta_R1_se for L in depths if L != 1]
        _, _, a, b, k = key
        predicted, half_width = predicted_single(a, b, k, rows[0].d, rows[0].P)
        out.append(Target(key, stats[key + (1,)].R_L, bnd.single, predicted, half_width, depths[-1],
                          stats[key + (depths[-1],)].R_L, bnd.mixture, max(ses) if ses else math.nan))
    return tuple(out)
