"""Checks of the theory of exchangeable heads against trained models: the rows (computed here).

:func:`numerics.experiments.study.expressible_page.write_expressible_checks` (``idepth expressible check``) writes
them as ``docs/results/expressible.md``, its figure and CSV tables (``docs/results/expressible/``); nothing
trains, the certified files are read through the study's own readers.

* **The certified envelope against U_L** (:mod:`theory.expressible`) at every depth of the Table 1 spectra.
  The two are measured on different contexts whose own sampling error (about 0.01) exceeds the gaps, so
  ``B_L`` is a control variate: ``envelope − U_L = (envelope − B_L^study) + (B_L^study − B_L^mine) −
  (U_L − B_L^mine)``, each piece paired on its own contexts (the middle one on fresh contexts: the study's
  heads and U_L's atomic ones are two fits of one allocation problem).
* **The lazy recipe against its exchangeable law**: the trained ``R_L`` of the certified contrasts against
  :func:`theory.head_families.exchangeable_law_from_reads` of the recipe's own *initial* heads (the
  per-layer reads ``p_ℓ·y`` of a deep model drawn with its initialisation, on fresh contexts); with the
  gain fixed at 1, as the recipe keeps it, the law is ``plateau + c/L`` with ``plateau = s − 2h + q``, ``c = v``.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import asdict, dataclass

import numpy as np

from ..criteria import mean_se, ses_word
from .certified.plan import CertifiedPlan
from .certified.bootstrap import replicates
from .certified.statistics import BOOTSTRAP

__all__ = ["EnvelopeRow", "LazyRow", "LazyFit", "control_variate_gap", "verdict", "summary_at", "fit_plateau_c",
           "lazy_law", "PAGE", "FIGURE", "VERDICTS"]

#: the page, figure and tables (relative to the output directory)
PAGE = "expressible.md"
FIGURE = "expressible/expressible.png"
ENVELOPE_CSV = "expressible/envelope.csv"
LAZY_CSV = "expressible/lazy.csv"
LAZY_FIT_CSV = "expressible/lazy-fit.csv"
#: the verdict words of a row of the envelope table (envelope − U_L beyond ± AGREEMENT_SIGMAS SEs, or not)
VERDICTS = ("U_L below envelope", "envelope below U_L", "indistinguishable")
#: the lazy recipe's initial heads: layers of one deep model (the pool), independent draws of the shared
#: weights (W_x), fresh contexts per draw; the root seed of these draws (not the study's streams)
LAW_LAYERS, LAW_DRAWS, LAW_CONTEXTS, LAW_SEED = 256, 8, 4096, 306


# --------------------------------------------------------------------------- envelope against U_L

@dataclass(frozen=True)
class EnvelopeRow:
    """One spectrum and depth: the certified envelope against ``U_L`` through the control variate ``B_L``.

    ``envelope``: the selected candidate's report-set loss, mean over seeds; ``gap`` (envelope − U_L) =
    ``study_gap + bound_difference − expressible_gap`` (:func:`control_variate_gap`).

    Examples
    --------
    >>> row = EnvelopeRow(0.0, 0.0, 128, 5, 1.97, 0.02, 1.99, -0.02, 0.004, 0.0, 0.0002, 2.02, 0.01, 2.06, -0.04,
    ...                   0.002, "combination", 0.02, 0.0045)
    >>> row.verdict
    'U_L below envelope'
    """

    a: float
    b: float
    depth: int
    seeds: int
    envelope: float
    envelope_se: float
    study_bound: float
    study_gap: float
    study_gap_se: float
    bound_difference: float
    bound_difference_se: float
    expressible: float
    expressible_se: float
    atomic: float
    expressible_gap: float
    expressible_gap_se: float
    branch: str
    gap: float
    gap_se: float

    verdict = property(lambda self: verdict(self.gap, self.gap_se), doc="The row's word (:func:`verdict`).")

    @property
    def envelope_on_expressible_contexts(self) -> float:
        """The envelope moved onto U_L's contexts: ``B_L^mine + (B_L^study − B_L^mine) + (envelope − B_L^study)``."""
        return self.atomic + self.bound_difference + self.study_gap


def verdict(gap: float, se: float) -> str:
    """The word for ``envelope − U_L = gap ± se``: beyond ``± AGREEMENT_SIGMAS`` SEs or not.

    Examples
    --------
    >>> verdict(0.021, 0.01), verdict(-0.021, 0.01), verdict(0.019, 0.01)
    ('U_L below envelope', 'envelope below U_L', 'indistinguishable')
    """
    return dict(zip(("above", "below", "indistinguishable"), VERDICTS))[ses_word(gap, se)]


def control_variate_gap(envelope_errors, study_bound_errors, expressible_gap: float, expressible_gap_se: float, *,
                        bound_difference: float = 0.0, bound_difference_se: float = 0.0, rng,
                        n_bootstrap: int = BOOTSTRAP) -> tuple[float, float, float, float]:
    """``envelope − U_L`` through ``B_L``: ``(gap, se, study_gap, study_gap_se)``.

    ``envelope − U_L = (envelope − B_L^study) + (B_L^study − B_L^mine) − (U_L − B_L^mine)``: the first
    (``study_gap``) paired on each seed's report set from the per-context errors (seeds, contexts) of the
    envelope and the study's untrained heads, SE by the certified statistics' joint (seeds, contexts)
    bootstrap; the second (``bound_difference``) in the population, 0 when both are one function; the
    third (``expressible_gap``) paired on U_L's contexts. Independent draws: SEs add in quadrature.

    Examples
    --------
    >>> e = np.array([[2.0, 3.0], [2.0, 5.0]]); bound = np.array([[2.5, 3.0], [2.0, 4.0]])
    >>> gap, se, study, _ = control_variate_gap(e, bound, -0.1, 0.0, rng=0, n_bootstrap=10)
    >>> round(study, 6), round(gap, 6)
    (0.125, 0.225)
    """
    diff = np.atleast_2d(np.asarray(envelope_errors, dtype=np.float64) - np.asarray(study_bound_errors, dtype=np.float64))
    study_gap = float(diff.mean())
    boot = replicates(diff[None], np.random.default_rng(rng), n_bootstrap)[:, 0]
    study_se = float(np.std(boot, ddof=1)) if n_bootstrap > 1 else 0.0
    gap = study_gap + float(bound_difference) - float(expressible_gap)
    return gap, math.hypot(study_se, float(bound_difference_se), float(expressible_gap_se)), study_gap, study_se


def summary_at(rows, depth: int) -> dict:
    """At ``depth``: on how many spectra U_L is at or below the envelope (point estimate), and the others.

    Returns ``{"depth", "at_or_below", "spectra", "misses": [(a, b, gap, se), ...]}``.

    Examples
    --------
    >>> r = [EnvelopeRow(0.0, b, 128, 5, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, "atomic", g, 0.01)
    ...      for b, g in ((0, 0.02), (1, -0.01))]
    >>> s = summary_at(r, 128); s["at_or_below"], s["spectra"], s["misses"]
    (1, 2, [(0.0, 1, -0.01, 0.01)])
    """
    at = [r for r in rows if r.depth == depth]
    misses = [(r.a, r.b, r.gap, r.gap_se) for r in at if r.gap < 0]
    return {"depth": depth, "at_or_below": len(at) - len(misses), "spectra": len(at), "misses": misses}


def envelope_rows(rows, errors, expressible: dict, plan: CertifiedPlan, *, bound_differences=None,
                  rng=0) -> list[EnvelopeRow]:
    """One :class:`EnvelopeRow` per spectrum of ``expressible`` (``(a, b) -> ExpressibleLoss``) and shared depth.

    A depth is compared where every seed of the setting has its cell. ``bound_differences``: ``(a, b) ->
    {depth: (B_L^study − B_L^mine, se)}`` (:func:`bound_differences`; default 0 ± 0: the same heads).

    Notes
    -----
    No example: it needs the study's files (``tests/test_expressible_checks.py`` builds a fake one).
    """
    rng = np.random.default_rng(rng)
    bound_differences = bound_differences or {}
    out = []
    for (a, b), loss in expressible.items():
        shift = bound_differences.get((a, b), {})
        cells: dict = {}
        for i, r in enumerate(rows):
            if (r.a, r.b) == (a, b) and plan.is_main(r.a, r.b, r.P, r.k):
                cells.setdefault((r.depth, r.seed), []).append(i)
        seeds = sorted({s for _, s in cells})
        for j, L in enumerate(loss.depths):
            if not seeds or any((L, s) not in cells for s in seeds):
                continue
            env_i = [next(i for i in cells[L, s] if rows[i].selected) for s in seeds]
            bound_i = [next(i for i in cells[L, s] if rows[i].start == "oracle" and rows[i].steps == 0) for s in seeds]
            env = errors.values[env_i].astype(np.float64)
            bound = errors.values[bound_i].astype(np.float64)
            bd, bd_se = shift.get(int(L), (0.0, 0.0))
            gap, gap_se, study_gap, study_se = control_variate_gap(env, bound, loss.difference[j],
                                                                   loss.difference_se[j], bound_difference=bd,
                                                                   bound_difference_se=bd_se, rng=rng)
            env_boot = replicates(env[None], rng, BOOTSTRAP)[:, 0]
            out.append(EnvelopeRow(a, b, int(L), len(seeds), float(env.mean()), float(np.std(env_boot, ddof=1)),
                                   float(bound.mean()), study_gap, study_se, float(bd), float(bd_se),
                                   float(loss.loss[j]), float(loss.loss_se[j]), float(loss.atomic[j]),
                                   float(loss.difference[j]), float(loss.difference_se[j]), str(loss.branch[j]), gap,
                                   gap_se))
    return out


def expressible_atomic_heads(a: float, b: float, loss) -> list:
    """U_L's atomic heads (``B_L^mine``) per depth as ``HeadAllocation``, refitted on U_L's own fit set.

    The shipped file keeps only each depth's winner, so the atomic allocation is recomputed as
    :func:`theory.expressible.best_expressible` fits it (its seed, fit set, atoms and doubling starts);
    where the atomic branch won, it must equal the stored winner, else ``ValueError``.

    Notes
    -----
    No example: about 15 s of CPU per spectrum.
    """
    from theory import PowerLawSpectrum
    from theory.expressible import _doubled, _gain
    from theory.head_families import draw_contexts, form_reads
    from theory.softmax_bounds import HeadAllocation, average_of_heads

    from .expressible import SETTINGS

    d, P, k, n_fit = (loss.setting[key] for key in ("d", "P", "k", "n_fit"))
    fit = draw_contexts(PowerLawSpectrum(a, b, d), P, k, n_fit, np.random.default_rng(SETTINGS.seed).spawn(4)[0])
    atoms = np.asarray(loss.dictionary.atoms, dtype=np.float64)
    reads = form_reads(atoms[:, None, None] * np.eye(d), fit)
    G, h, s2 = reads.T @ reads / fit.n, reads.T @ fit.target / fit.n, float(fit.target @ fit.target / fit.n)
    out, previous = [], None
    for j, L in enumerate(loss.depths):
        counts, _, _ = average_of_heads(G, h, s2, L, _doubled(previous, L))
        previous = counts
        on = np.flatnonzero(counts)
        if loss.branch[j] == "atomic" and (on.tolist() != list(loss.allocations[j]["columns"])
                                           or counts[on].tolist() != list(loss.allocations[j]["counts"])):
            raise ValueError(f"{_label(a, b)}, L = {L}: the refitted atomic heads differ from the shipped winner")
        out.append(HeadAllocation(int(L), tuple(atoms[on]), tuple(int(c) for c in counts[on]), _gain(G, h, counts)))
    return out


def bound_differences(a: float, b: float, loss, plan: CertifiedPlan, *, n_contexts: int = 16384,
                      n_sets: int = 8) -> dict:
    """``{depth: (B_L^study − B_L^mine, se)}``: the study's heads against U_L's atomic ones, in the population.

    The study's heads: those its oracle start wrote into the weights (the certified statistics' anchor,
    ``_heads``); paired on fresh contexts (:func:`theory.softmax_bounds.allocation_loss_difference`).

    Notes
    -----
    No example: about 45 s of CPU per spectrum.
    """
    from theory import PowerLawSpectrum
    from theory.softmax_bounds import allocation_loss_difference

    from .certified.statistics import _heads

    study = _heads((float(a), float(b), plan.k, plan.d, plan.N, plan.P), plan, loss.depths)
    spectrum, out = PowerLawSpectrum(a, b, plan.d), {}
    for L, theirs, ours in zip(loss.depths, study, expressible_atomic_heads(a, b, loss)):
        rng = np.random.default_rng([LAW_SEED, 1, int(round(a * 1000)), int(round(b * 1000)), int(L)])
        out[int(L)] = allocation_loss_difference(theirs, ours, spectrum, plan.P, plan.k, n_contexts=n_contexts,
                                                 n_seeds=n_sets, rng=rng)
    return out


# --------------------------------------------------------------------------- the lazy recipe against its law

@dataclass(frozen=True)
class LazyRow:
    """The lazy recipe at one spectrum and depth: trained ``R_L`` against its exchangeable law.

    ``law_fixed``: the law with the gain held at 1 (the recipe freezes it); ``law_refit``: gain refitted per
    depth. SEs: trained, joint (seeds, contexts) bootstrap; law, spread over independent draws.

    Examples
    --------
    >>> round(LazyRow(0.0, 0.0, 8, 5, 2.29, 0.06, 2.91, 0.05, 2.88, 0.05).difference, 2)
    -0.62
    """

    a: float
    b: float
    depth: int
    seeds: int
    trained: float
    trained_se: float
    law_fixed: float
    law_fixed_se: float
    law_refit: float
    law_refit_se: float

    @property
    def difference(self) -> float:
        """Trained − the fixed-gain law."""
        return self.trained - self.law_fixed

    difference_se = property(lambda self: math.hypot(self.trained_se, self.law_fixed_se), doc="Its SE.")


@dataclass(frozen=True)
class LazyFit:
    """``plateau + c/L`` fitted to the trained lazy curve (WLS), against the law's computed constants.

    ``law_plateau, law_c``: fixed gain 1 (``s − 2h + q`` and ``v``); ``refit_plateau, refit_c, refit_shift``:
    the refitted-gain law ``R_∞ + c/(L + L₀)``. Each with its SE.

    Examples
    --------
    >>> f = LazyFit(0.0, 0.0, 2.15, 0.03, 0.9, 0.05, 2.4, 0.04, 4.1, 0.1, 2.2, 0.04, 5.3, 0.1, 0.7, 8, 256, 4096)
    >>> [round(v, 2) for v in f.plateau_difference + f.c_difference]
    [-0.25, 0.05, -3.2, 0.11]
    """

    a: float
    b: float
    plateau: float
    plateau_se: float
    c: float
    c_se: float
    law_plateau: float
    law_plateau_se: float
    law_c: float
    law_c_se: float
    refit_plateau: float
    refit_plateau_se: float
    refit_c: float
    refit_c_se: float
    refit_shift: float
    draws: int
    layers: int
    contexts: int

    @property
    def plateau_difference(self) -> tuple[float, float]:
        """Trained plateau − the fixed-gain law's, with its SE."""
        return self.plateau - self.law_plateau, math.hypot(self.plateau_se, self.law_plateau_se)

    @property
    def c_difference(self) -> tuple[float, float]:
        """Trained c − the fixed-gain law's, with its SE."""
        return self.c - self.law_c, math.hypot(self.c_se, self.law_c_se)


def fit_plateau_c(depths, values, ses) -> tuple[float, float]:
    """Weighted least squares of ``values ≈ plateau + c/L`` (weights ``1/se²``): ``(plateau, c)``.

    Examples
    --------
    >>> L = np.array([1.0, 2.0, 4.0, 8.0])
    >>> [round(v, 6) for v in fit_plateau_c(L, 2.0 + 0.5 / L, np.ones(4))]
    [2.0, 0.5]
    """
    x = 1.0 / np.asarray(depths, dtype=np.float64)
    w = 1.0 / np.asarray(ses, dtype=np.float64) ** 2
    design = np.stack([np.ones_like(x), x], axis=1) * np.sqrt(w)[:, None]
    coef, *_ = np.linalg.lstsq(design, np.asarray(values, dtype=np.float64) * np.sqrt(w), rcond=None)
    return float(coef[0]), float(coef[1])


def lazy_law(a: float, b: float, plan: CertifiedPlan, depths, *, layers: int = LAW_LAYERS, draws: int = LAW_DRAWS,
             contexts: int = LAW_CONTEXTS, seed: int = LAW_SEED) -> dict:
    """The exchangeable law of the lazy recipe's initial heads at (a, b), over ``draws`` independent models.

    Each draw: a ``layers``-deep model with the contrast run's initialisation, its per-layer reads
    ``p_ℓ·y = f_ℓ/g`` on ``contexts`` fresh contexts (a stream of ``seed``, not the study's), fed to
    :func:`theory.head_families.exchangeable_law_from_reads`. Returns per-draw arrays ``fixed``, ``refit``
    (draws, depths) and constants ``law_plateau, law_c`` (gain 1), ``refit_plateau, refit_c, refit_shift``.

    Notes
    -----
    No example: about 7 s of CPU per draw at the defaults.
    """
    from numerics.models import get_model
    from numerics.tasks import sample
    from theory.head_families import exchangeable_law_from_reads

    from .regimes import regime_config

    config = regime_config("lazy", d=plan.d, N=plan.N, P=plan.P, depth=1, seed=0, a=a, b=b, k=plan.k)
    model = get_model(config.model)
    spectrum = config.spectrum()
    L = np.asarray(depths, dtype=np.float64)
    out: dict = {key: [] for key in ("fixed", "refit", "law_plateau", "law_c", "refit_plateau", "refit_c", "refit_shift")}
    for draw in range(draws):
        rng = np.random.default_rng([seed, int(round(a * 1000)), int(round(b * 1000)), draw])
        params = model.init_params(plan.d, plan.N, layers, rng, dtype=np.float32, **config.init_options)
        gain = float((params["W_o"] @ params["W_v"] @ params["W_y"]).item())
        batch = sample(config.task, spectrum, plan.P, contexts, rng, k=plan.k, dtype=np.float32, stream=plan.stream)
        reads = np.concatenate([np.asarray(model.forward(params, batch.slice(i, min(i + 256, contexts)))
                                           .layer_predictors, dtype=np.float64) / gain
                                for i in range(0, contexts, 256)], axis=1).T  # (contexts, layers): p_ℓ·y
        law = exchangeable_law_from_reads(reads, np.asarray(batch.target, dtype=np.float64))
        m = law.moments
        for key, value in (("fixed", law.fixed_gain_loss(L, gain=1.0)), ("refit", law.loss(L)),
                           ("law_plateau", m["s"] - 2 * m["h"] + m["q"]), ("law_c", m["v"]),
                           ("refit_plateau", law.plateau), ("refit_c", law.coefficient), ("refit_shift", law.shift)):
            out[key].append(value)
    return {key: np.asarray(value) for key, value in out.items()} | {"layers": layers, "contexts": contexts}


def lazy_checks(contrasts, laws: dict, plan: CertifiedPlan, *, rng=0) -> tuple[list, list]:
    """``(rows, fits)``: :class:`LazyRow` per spectrum and depth, :class:`LazyFit` per spectrum of ``laws``.

    ``laws``: ``(a, b) -> (depths, lazy_law(...))``. The trained curve: every depth with a lazy contrast of
    every seed of the main setting; its WLS fit's SEs come from refitting each joint bootstrap replicate.

    Notes
    -----
    No example: it needs the contrast runs.
    """
    rng = np.random.default_rng(rng)
    rows, fits = [], []
    for (a, b), (law_depths, law) in laws.items():
        runs = {(c.depth, c.seed): c.errors for c in contrasts
                if c.recipe == "lazy" and c.setting[:2] == (a, b) and plan.is_main(a, b, c.setting[5], c.setting[2])}
        seeds = sorted({s for _, s in runs})
        depths = [L for L in law_depths if seeds and all((L, s) in runs for s in seeds)]
        if not depths:
            continue
        cube = np.asarray([[runs[L, s] for s in seeds] for L in depths], dtype=np.float64)
        means = cube.mean(axis=(1, 2))
        boot = replicates(cube, rng, BOOTSTRAP)
        ses = boot.std(axis=0, ddof=1)
        index = [list(law_depths).index(L) for L in depths]
        fixed, fixed_se = mean_se(law["fixed"][:, index], axis=0)
        refit, refit_se = mean_se(law["refit"][:, index], axis=0)
        for i, L in enumerate(depths):
            rows.append(LazyRow(a, b, int(L), len(seeds), float(means[i]), float(ses[i]), float(fixed[i]),
                                float(fixed_se[i]), float(refit[i]), float(refit_se[i])))
        plateau, c = fit_plateau_c(depths, means, ses)
        replicate_fits = np.array([fit_plateau_c(depths, rep, ses) for rep in boot])
        p_se, c_se = replicate_fits.std(axis=0, ddof=1)
        consts = [float(v) for key in ("law_plateau", "law_c", "refit_plateau", "refit_c")
                  for v in mean_se(law[key], axis=0)]
        fits.append(LazyFit(a, b, plateau, float(p_se), c, float(c_se), *consts, float(np.mean(law["refit_shift"])),
                            int(law["fixed"].shape[0]), int(law["layers"]), int(law["contexts"])))
    return rows, fits


# --------------------------------------------------------------------------- figure, tables, page

def _label(a: float, b: float) -> str:
    return f"(a, b) = ({a:g}, {b:g})"


def _csv(records) -> str:
    records = [asdict(r) | ({"verdict": r.verdict} if isinstance(r, EnvelopeRow) else {}) for r in records]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(records[0]) if records else [], lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: repr(v) if isinstance(v, float) else v for k, v in r.items()} for r in records)
    return buffer.getvalue()
