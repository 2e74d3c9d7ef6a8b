"""Statistics of the certified study: the envelope R*_L, its certificates and each setting's summary.

Within a setting every candidate is reported on the same contexts and a seed's depths share its
stream, so errors come from a **joint bootstrap over contexts and seeds**: depth differences are
paired and the covariance of the gains ``g_L = R*_1 − R*_L`` is kept; intervals use Student's t with
``seeds − 1`` degrees of freedom. Certificates: **nesting** ``R*_L ≤ R*_{L/2} + 2 SE`` (eq. 60),
**reachability** ``R*_L ≤ B_L + 2 SE``, **doubling** (twice the cap gains less than one SE).

:func:`summarise` also computes what the verdict needs (:mod:`~numerics.experiments.study.certified.verdict`):
the depths whose step-doubling check ran and passed, the fit-free contrasts with their bootstrap intervals,
the best seed beside the mean over seeds, and the gain-law fit with its analysis variants.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ...criteria import (
    CERTIFICATE_SES,
    DOUBLING_SES,
    MIN_CHECKED_DEPTHS,
    MIN_COMPLETE_SEEDS,
    certificate_allowance,
    checked_depths,
)
from ..curves import Curve, CurveSummary, RecipeAlpha
from .bootstrap import contrast_bootstrap, replicates
from .targets import HEADS_SETS, PREDICT_SAMPLES
from .table import Errors
from .verdict import (
    ALPHA_GRID,
    VERDICT_CONTRAST,
    ContrastStat,
    FitVariant,
    contrast_stat,
    crossover_depth,
    doubling_passed,
    fit_reported,
    gain_law_gls,
    gain_law_variants,
    implied_alpha,
    long_picks,
    range_contrast,
    range_depths,
    range_verdict,
    setting_verdict,
)

__all__ = ["ALPHA_GRID", "BOOTSTRAP", "Certificate", "ContrastStat", "FitVariant", "HeadsRecheck", "PredictionCheck",
           "RecipeAlpha", "contrast_bootstrap", "judge", "contrast_stat", "setting_verdict", "summarise",
           "gain_law_gls", "gain_law_variants", "PREDICT_SAMPLES",
           "HEADS_SETS", "VERDICT_CONTRAST", "judged_cells", "fit_reported", "implied_alpha"]

#: bootstrap replicates of the joint (contexts, seeds) resampling
BOOTSTRAP = 2000


@dataclass(frozen=True)
class Certificate:
    """A certificate at one depth: ``excess`` (what must be small) against ``allowed`` (SEs times its SE).

    ``pair``: what a doubling certificate compares, ``doubled`` (the cell's candidates at twice their cap) or
    ``long`` (the best long-cap run at the longest cap against the best at half of it); empty for the others.

    Examples
    --------
    >>> Certificate("nesting", 4, excess=0.01, se=0.004, allowed=0.008).passed
    False
    """

    name: str
    depth: int
    excess: float
    se: float
    allowed: float
    pair: str = ""

    def __post_init__(self) -> None:
        for name in ("excess", "se", "allowed"):
            object.__setattr__(self, name, float(getattr(self, name)))

    @property
    def passed(self) -> bool:
        return self.excess <= self.allowed


def judge(summary: CurveSummary) -> CurveSummary:
    """``summary`` with what its evidence decides filled in: the depths whose step-doubling check ran
    (``doubling_run``) and passed (``checked``, :func:`~numerics.experiments.criteria.checked_depths`), the verdict's
    contrast (``primary``: :data:`VERDICT_CONTRAST` of the mean over seeds to the deepest checked depth, every depth
    it uses checked), ``verdict``, ``kind``, ``reason`` (:func:`setting_verdict`), the verdict per depth range
    (``ranges``, :func:`~numerics.experiments.study.certified.verdict.range_verdict`, split at the crossover) and
    whether the gain law's α is reported (``fit_reported``).

    :func:`summarise` judges every summary; judge again after changing the evidence (certificates, planned depths,
    the fit).

    Examples
    --------
    >>> from numerics.experiments.study.curves import Curve
    >>> R = Curve.over_seeds("R_L", 0, 0, [1, 2], [[2.0, 1.5], [2.2, 1.7]])
    >>> s = judge(CurveSummary("envelope", 0.0, 0.0, R, size=(16, 64, 16), k=2, planned_depths=(1, 2)))
    >>> s.verdict.value, s.checked
    ('INCONCLUSIVE', ())
    """
    depths = summary.depths
    failed = [(c.name, c.depth) for c in summary.failed]
    checked = checked_depths(depths, doubling_passed(summary.certificates))
    doubling_run = tuple(sorted({c.depth for c in summary.certificates if c.name == "doubling"}))
    primary = next((dataclasses.replace(c, checked=True).to_dict() for c in summary.ladder if checked and
                    c.L_max == checked[-1] and all(L in checked for L in c.depths)), None)
    variants = [dataclasses.asdict(v) for v in summary.variants]
    verdict, kind, reason = setting_verdict(depths, summary.planned_depths, checked, failed, primary, variants,
                                            doubling_run=doubling_run)
    ranges = []
    for name, planned in range_depths(summary.planned_depths or depths, summary.crossover).items():
        found = {c.estimate: c.to_dict() for n, c in summary.range_contrasts if n == name}
        ranges.append(dict(zip(("range", "depths", "verdict", "kind", "reason", "contrasts"), (
            name, list(planned), *range_verdict(name, planned, depths, checked, failed, found), list(found.values())))))
    return dataclasses.replace(summary, checked=checked, doubling_run=doubling_run, primary=primary, verdict=verdict,
                               kind=kind, reason=reason, ranges=tuple(ranges),
                               fit_reported=fit_reported(summary.chi2, summary.dof))


def judged_cells(members, planned_depths: tuple) -> tuple[dict, list]:
    """A setting's rows by (depth, seed), and the seeds it is judged on (every function of a setting uses these).

    The seeds: those with every planned depth done, if :data:`~numerics.experiments.criteria.MIN_COMPLETE_SEEDS`
    or more are; else all of them. Seeds finish in the
    order they were started, not by their results, so judging on the complete ones while others still run
    selects nothing; with fewer complete seeds the common depths of all seeds decide (and a setting short of
    its planned depths gets no verdict).

    Examples
    --------
    >>> from types import SimpleNamespace as R
    >>> judged_cells([R(depth=L, seed=s) for L in (1, 2) for s in (0, 1)], (1, 2))[1]
    [0, 1]
    """
    by_cell: dict = {}
    for r in members:
        by_cell.setdefault((r.depth, r.seed), []).append(r)
    seeds = sorted({r.seed for r in members})
    complete = [s for s in seeds if planned_depths and all((L, s) in by_cell for L in planned_depths)]
    return by_cell, complete if len(complete) >= MIN_COMPLETE_SEEDS else seeds


def summarise(rows, errors: Errors, *, recipe: tuple = ("cold", 1e-3), rng=0, n_bootstrap: int = BOOTSTRAP,
              planned_depths: tuple = (), contrasts=(), contrast_depth: int | None = None) -> list:
    """One :class:`~numerics.experiments.study.curves.CurveSummary` per setting (``name`` ``"envelope"``): the
    envelope with its errors, certificates, verdict, the recipe's curve and the gain-law fit, over the depths done
    for every seed it is judged on.

    ``recipe``: the (start, learning rate) of the labelled recipe finding (default the shipped cells' recipe's, cold
    at 1e-3). ``planned_depths``: a setting with fewer done gets no verdict; where two or more seeds have every
    planned depth done, the setting is judged on those seeds alone (seeds added to a plan later join when
    done). ``contrasts`` (:class:`~numerics.experiments.study.certified.contrasts.Contrast`): a recipe with
    every depth and seed of a setting gets its α in
    :attr:`~numerics.experiments.study.curves.CurveSummary.recipes`, beside the envelope, the heads and each cold
    rate. ``contrast_depth``: the deepest depth of the descriptive contrasts (default each
    setting's deepest; ``ValueError`` naming it at a setting that did not run it); the verdict's contrast ends
    at the deepest checked depth.

    Notes
    -----
    No example: it needs a table (``tests/test_certified.py``).
    """
    from scipy.stats import t

    # the contrasts draw from a stream of their own: the certificates' bootstrap is the same with or without them
    contrast_rng = (rng.spawn(1)[0] if isinstance(rng, np.random.Generator) else np.random.default_rng([int(rng), 1]))
    rng = np.random.default_rng(rng)
    contrast_errors = {(c.setting, c.recipe, c.depth, c.seed): c.errors for c in contrasts}
    contrast_names = sorted({c.recipe for c in contrasts})
    settings: dict = {}
    for row in rows:
        settings.setdefault(row.setting, []).append(row)
    out = []
    for setting, members in sorted(settings.items()):
        by_cell, seeds = judged_cells(members, planned_depths)
        depths = sorted(L for L in {r.depth for r in members} if all((L, s) in by_cell for s in seeds))
        if not depths or depths[0] != 1:
            continue

        def pick(depth, seed, test):
            return [r for r in by_cell[depth, seed] if test(r)][0]

        kinds = {
            "envelope": lambda r: r.selected,
            "bound": lambda r: r.start == "oracle" and r.steps == 0,
            "recipe": lambda r: (r.start, r.learning_rate) == recipe and not r.doubled,
        }
        for lr in sorted({r.learning_rate for r in members if r.start == "cold"}):
            kinds[f"cold lr={lr:g}"] = lambda r, lr=lr: (r.start, r.learning_rate) == ("cold", lr) and not r.doubled
        complete = [name for name in contrast_names
                    if all((setting, name, L, s) in contrast_errors for L in depths for s in seeds)]
        cube = {}  # (kind, depth) -> per seed, the report-set errors
        for L in depths:
            for kind, test in kinds.items():
                cube[kind, L] = [errors.of(pick(L, s, test)) for s in seeds]
            for name in complete:
                cube[name, L] = [contrast_errors[setting, name, L, s] for s in seeds]
            doubled = [[r for r in by_cell[L, s] if r.doubled or r.steps == 0] for s in seeds]
            if all(any(r.doubled for r in d) for d in doubled):
                cube["doubled", L] = [errors.of(min(d, key=lambda r: r.R_select)) for d in doubled]
            # long caps: the best at the longest cap against the best at half of it, same starts
            for label, picks in zip(("long half", "long full"), long_picks([by_cell[L, s] for s in seeds]).values()):
                cube[label, L] = [errors.of(r) for r in picks]
        at = {label: i for i, label in enumerate(cube)}
        cube = np.asarray(list(cube.values()), dtype=np.float64)
        means = cube.mean(axis=(1, 2))
        boot = replicates(cube, rng, n_bootstrap)

        def diff_se(i, j):
            return float(np.std(boot[:, i] - boot[:, j], ddof=1))

        def certificate(name, L, kind, other, ses, pair=""):  # ``kind`` against ``other``, within ``ses`` paired SEs
            i, j = at[kind], at[other]
            return Certificate(name, L, means[i] - means[j], diff_se(i, j),
                               certificate_allowance(diff_se(i, j), means[j], ses), pair)

        certificates = []
        for L in depths:
            if L > 1:
                certificates.append(certificate("nesting", L, ("envelope", L), ("envelope", L // 2), CERTIFICATE_SES))
            certificates.append(certificate("reachability", L, ("envelope", L), ("bound", L), CERTIFICATE_SES))
            if ("doubled", L) in at:
                certificates.append(certificate("doubling", L, ("envelope", L), ("doubled", L), DOUBLING_SES,
                                                "doubled"))
            if ("long full", L) in at:  # the envelope holds the long runs: their own doubling is its check
                certificates.append(certificate("doubling", L, ("long half", L), ("long full", L), DOUBLING_SES,
                                                "long"))
        t2 = float(t.ppf(0.975, max(1, len(seeds) - 1))) ** 2

        def gains(kind, at_depths):  # R_1 − R_L at ``at_depths`` and their bootstrap covariance
            first, cols = at[kind, 1], [at[kind, L] for L in at_depths]
            cov = np.cov((boot[:, [first]] - boot[:, cols]).T, ddof=1).reshape(len(cols), len(cols))
            return means[first] - means[cols], cov

        def fit(kind):
            if len(depths) < 3:
                return (math.nan,) * 4 + (0,)
            return gain_law_gls(depths[1:], *gains(kind, depths[1:]), t2)

        alpha, lo, hi, chi2, dof = fit("envelope")
        se = boot.std(axis=0, ddof=1)
        deepest = depths[-1]

        def gain(kind):  # R_1 − R_Lmax and its paired SE
            i, j = at[kind, 1], at[kind, deepest]
            return float(means[i] - means[j]), diff_se(i, j)

        def first_shortfall():  # (B_1 − B_2) − (R*_1 − R*_2): how much of the heads' first gain the envelope misses
            if 2 not in depths:
                return math.nan, math.nan
            cols = [at["bound", 1], at["bound", 2], at["envelope", 1], at["envelope", 2]]
            sign = np.array([1.0, -1.0, -1.0, 1.0])
            return float(means[cols] @ sign), float(np.std(boot[:, cols] @ sign, ddof=1))

        shortfall, shortfall_se = first_shortfall()
        winners = tuple(tuple(pick(L, s, kinds["envelope"]).start for s in seeds) for L in depths)
        names = {"envelope": "envelope", "bound": "heads", **{k: k for k in kinds if k.startswith("cold")},
                 **{name: name for name in complete}}
        fits = {kind: fit(kind) for kind in names}
        recipes = tuple(RecipeAlpha(label, *fits[kind][:3], *gain(kind), *fits[kind][3:], fit_reported(*fits[kind][3:]))
                        for kind, label in names.items())
        # the verdict's evidence: the depths whose step-doubling check ran and passed, and fit-free contrasts
        checked = checked_depths(depths, doubling_passed(certificates))
        cells = {}
        for L in depths:
            for s in seeds:
                eligible = [r for r in by_cell[L, s] if not r.doubled]
                cells[L, s] = (np.stack([errors.of(r) for r in eligible]),
                               np.array([r.R_select for r in eligible]), np.array([r.R_select_se for r in eligible]),
                               next(i for i, r in enumerate(eligible) if r.selected))
        curves = contrast_bootstrap(cells, depths, seeds, contrast_rng, n_bootstrap)
        def stat(name, estimate, L_max):  # contrast ``name`` to ``L_max`` of one estimate, with its interval
            point, reps = curves[estimate]
            return contrast_stat(name, estimate, depths, point, reps, L_max, set(checked), math.sqrt(t2))

        estimates = ("mean over seeds", "best seed")
        stats = []
        for estimate in estimates:
            stats.append(stat("g2/gLmax", estimate, contrast_depth if contrast_depth is not None else deepest))
            if {1, 2, 16} <= set(depths):
                stats.append(stat("(R2-R16)/(R1-R2)", estimate, 16))
        # g_2/g_L to every depth L ≥ 4: the verdict's is the one to the deepest checked depth
        ladder = tuple(stat("g2/gLmax", "mean over seeds", L) for L in depths if L >= 4)
        crossover = crossover_depth(setting)
        range_stats = []
        for name, range_planned in range_depths(planned_depths or depths, crossover).items():
            spec = range_contrast(name, range_planned)
            if spec is not None and all(L in depths for L in range_planned):
                range_stats += [(name, stat(spec[0], estimate, spec[1])) for estimate in estimates]
        variants = ()
        if len(checked) >= MIN_CHECKED_DEPTHS and checked[0] == 1:
            variants = gain_law_variants(checked[1:], *gains("envelope", checked[1:]), t2)
        a, b, k, d, N, P = setting
        rows_R = [at["envelope", L] for L in depths]  # the per-seed values, their mean and the bootstrap SE
        R = Curve("R_L", a, b, np.array(depths), cube[rows_R].mean(axis=2).T, means[rows_R], se[rows_R],
                  np.full(len(depths), len(seeds)), "bootstrap")
        out.append(judge(CurveSummary(
            name="envelope", a=a, b=b, R=R, size=(d, P, N), k=k, alpha=alpha, alpha_lo=lo, alpha_hi=hi, chi2=chi2,
            dof=dof, B=tuple(means[at["bound", L]] for L in depths), gain=gain("envelope")[0],
            gain_se=gain("envelope")[1], gains_se=tuple(diff_se(at["envelope", 1], at["envelope", L]) for L in depths),
            bound_gain=gain("bound")[0], recipe=tuple(means[at["recipe", L]] for L in depths),
            recipe_se=tuple(se[at["recipe", L]] for L in depths), recipe_gain=gain("recipe")[0],
            recipe_gain_se=gain("recipe")[1], recipes=recipes, planned_depths=tuple(planned_depths),
            certificates=tuple(certificates), winners=winners, first_shortfall=shortfall,
            first_shortfall_se=shortfall_se, contrasts=tuple(stats), ladder=ladder, variants=variants,
            best_seed=tuple(float(v) for v in curves["best seed"][0]), best_seed_ids=curves["best seeds"],
            crossover=crossover, range_contrasts=tuple(range_stats),
        )))
    return out



@dataclass(frozen=True)
class PredictionCheck:
    """``theory.predict_loss`` (the default softmax prediction, B_L) against the envelope, per depth of a setting.

    The envelope is measured on one report set shared by every depth, whose own sampling error
    (about 3 % at 4096 contexts) is larger than the agreement to check. The population envelope is
    therefore estimated with a control variate: ``R*_L ≈ E[B_L^h] + (R*_L − B_L^h)``, the paired gap
    between the envelope and the study's untrained heads ``h`` on the report set (joint-bootstrap SE,
    the reachability certificate's) plus the heads' population loss on fresh contexts
    (:func:`theory.softmax_bounds.allocation_losses`). The three pieces are independent draws.

    Examples
    --------
    >>> c = PredictionCheck((1,), (2.0,), (0.01,), (2.02,), (0.01,), (0.0,), (0.0,))
    >>> round(c.deviation[0], 4), round(c.deviation_se[0], 4)
    (-0.0099, 0.007)
    """

    depths: tuple
    predicted: tuple
    predicted_se: tuple
    heads: tuple
    heads_se: tuple
    gap: tuple
    gap_se: tuple

    @property
    def estimate(self) -> tuple:
        """The population envelope ``E[B_L^h] + (R*_L − B_L^h)`` per depth."""
        return tuple(h + g for h, g in zip(self.heads, self.gap))

    @property
    def deviation(self) -> tuple:
        """``predict_loss / R*_L − 1`` per depth, on the control-variate estimate of ``R*_L``."""
        return tuple(p / e - 1.0 for p, e in zip(self.predicted, self.estimate))

    @property
    def deviation_se(self) -> tuple:
        """Its SE (delta method over the three independent pieces)."""
        return tuple(math.sqrt(ps**2 + (p / e) ** 2 * (hs**2 + gs**2)) / e for p, ps, e, hs, gs in
                     zip(self.predicted, self.predicted_se, self.estimate, self.heads_se, self.gap_se))


@dataclass(frozen=True)
class HeadsRecheck:
    """A failed nesting certificate whose two envelopes are the untrained B_L heads, repeated in the population.

    ``report`` ± ``report_se``: ``R*_L − R*_{L/2}`` on the report set (the certificate's excess);
    ``population`` ± ``population_se``: the same two fixed functions, paired on fresh contexts
    (:func:`theory.softmax_bounds.allocation_loss_difference`).

    Examples
    --------
    >>> r = HeadsRecheck((0.0, 0.0, 2, 16, 32, 64), 4, 0.015, 0.006, -0.002, 0.001)
    >>> round(r.sigmas, 1)
    2.8
    """

    setting: tuple
    depth: int
    report: float
    report_se: float
    population: float
    population_se: float

    @property
    def sigmas(self) -> float:
        """How far the report set's excess is from the population's, in SEs of their difference."""
        return (self.report - self.population) / math.hypot(self.report_se, self.population_se)
