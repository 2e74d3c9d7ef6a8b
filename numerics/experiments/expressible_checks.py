"""Checks of the theory of exchangeable heads against trained models: one page, one figure.

:func:`write_expressible_checks` (``idepth expressible check``) writes ``docs/results/expressible.md``, its
figure and CSV tables (``docs/results/expressible/``); nothing trains, the certified files are read through
the study's own readers.

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
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from numerics.io import commit, discard, make_output_dir, stage

from ._markdown import markdown_table
from ._plotting import pyplot
from .criteria import AGREEMENT_SIGMAS, standard_error
from .recipes import LAZY
from .study.certified.contrasts import collect_contrasts
from .study.certified.plan import TABLE1_SPECTRA, CertifiedPlan
from .study.certified.statistics import BOOTSTRAP, _replicates
from .study.certified.table import collect

__all__ = ["EnvelopeRow", "LazyRow", "LazyFit", "control_variate_gap", "verdict", "summary_at", "fit_plateau_c",
           "lazy_law", "write_expressible_checks", "PAGE", "FIGURE", "VERDICTS"]

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
    if gap > AGREEMENT_SIGMAS * se:
        return VERDICTS[0]
    if gap < -AGREEMENT_SIGMAS * se:
        return VERDICTS[1]
    return VERDICTS[2]


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
    boot = _replicates(diff[None], np.random.default_rng(rng), n_bootstrap)[:, 0]
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
            env_boot = _replicates(env[None], rng, BOOTSTRAP)[:, 0]
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

    from .study.certified.statistics import _heads

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

    from .study.regimes import regime_config

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


def _draw_mean_se(values: np.ndarray) -> tuple:
    values = np.asarray(values, dtype=np.float64)
    return values.mean(axis=0), np.asarray(standard_error(values, axis=0))


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
        boot = _replicates(cube, rng, BOOTSTRAP)
        ses = boot.std(axis=0, ddof=1)
        index = [list(law_depths).index(L) for L in depths]
        fixed, fixed_se = _draw_mean_se(law["fixed"][:, index])
        refit, refit_se = _draw_mean_se(law["refit"][:, index])
        for i, L in enumerate(depths):
            rows.append(LazyRow(a, b, int(L), len(seeds), float(means[i]), float(ses[i]), float(fixed[i]),
                                float(fixed_se[i]), float(refit[i]), float(refit_se[i])))
        plateau, c = fit_plateau_c(depths, means, ses)
        replicate_fits = np.array([fit_plateau_c(depths, rep, ses) for rep in boot])
        p_se, c_se = replicate_fits.std(axis=0, ddof=1)
        consts = [float(v) for key in ("law_plateau", "law_c", "refit_plateau", "refit_c")
                  for v in _draw_mean_se(law[key])]
        fits.append(LazyFit(a, b, plateau, float(p_se), c, float(c_se), *consts, float(np.mean(law["refit_shift"])),
                            int(law["fixed"].shape[0]), int(law["layers"]), int(law["contexts"])))
    return rows, fits


# --------------------------------------------------------------------------- figure, tables, page

def _label(a: float, b: float) -> str:
    return f"(a, b) = ({a:g}, {b:g})"


def _num(value: float, se: float | None = None, digits: int = 4) -> str:
    if not math.isfinite(value):
        return "–"
    text = f"{value:.{digits}f}"
    return text if se is None or not math.isfinite(se) else f"{text} ± {se:.{digits}f}"


def _csv(records) -> str:
    records = [asdict(r) | ({"verdict": r.verdict} if isinstance(r, EnvelopeRow) else {}) for r in records]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(records[0]) if records else [], lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: repr(v) if isinstance(v, float) else v for k, v in r.items()} for r in records)
    return buffer.getvalue()


def _depth_axis(ax, depths, ticker) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(depths)
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.tick_params(labelsize=8)


def draw_figure(envelope: list, expressible: dict, lazy_rows: list):
    """The figure (not written): one panel per spectrum, the eighth the lazy recipe against its law.

    Per spectrum, on U_L's report contexts: B_L (its atomic branch), U_L with its SE paired against B_L,
    the certified envelope moved there by the control variate (with its paired SE), and the α = 1 law
    ``plateau + c/L`` through U_L's first and last depth.

    Notes
    -----
    No example: it needs the checks' rows.
    """
    from matplotlib import ticker

    fig, axes = pyplot().subplots(2, 4, figsize=(12.5, 7.2))
    spectra = list(expressible)
    for ax, (a, b) in zip(axes.flat, spectra):
        loss = expressible[a, b]
        L = np.asarray(loss.depths, dtype=np.float64)
        U, B = np.asarray(loss.loss), np.asarray(loss.atomic)
        ax.plot(L, B, "k--", lw=1.2, label="B_L (best cosine-head allocation)")
        ax.errorbar(L, U, yerr=loss.difference_se, color="C0", marker="o", ms=4, capsize=2,
                    label="U_L (best expressible found)")
        c = (U[0] - U[-1]) / (1.0 / L[0] - 1.0 / L[-1])
        fine = np.geomspace(L[0], L[-1], 64)
        ax.plot(fine, U[-1] + c * (1.0 / fine - 1.0 / L[-1]), ":", color="C0", lw=1.2,
                label=f"α = 1: plateau + c/L through U_{L[0]:g}, U_{L[-1]:g}")
        rows = sorted((r for r in envelope if (r.a, r.b) == (a, b)), key=lambda r: r.depth)
        env = np.array([[r.depth, r.envelope_on_expressible_contexts, math.hypot(r.study_gap_se, r.bound_difference_se)]
                        for r in rows]).reshape(-1, 3)
        ax.errorbar(env[:, 0], env[:, 1], yerr=env[:, 2], color="C3", marker="s", ms=4, capsize=2, alpha=0.85,
                    label="certified envelope R*_L (via B_L)")
        top = max(U[1:].max(), B[1:].max(), *(env[1:, 1] + env[1:, 2]))
        bottom = min(U.min(), *(env[:, 1] - env[:, 2]))
        pad = 0.12 * (top - bottom)
        ax.set_ylim(bottom - pad, top + 2 * pad)  # L = 1 is far above: its point is off the top, the gaps are the story
        _depth_axis(ax, L, ticker)
        ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%.3f"))
        ax.set_title(_label(a, b), fontsize=10)
    for ax in axes.flat[len(spectra):7]:
        ax.axis("off")
    lazy_ax = axes.flat[7]
    for i, (a, b) in enumerate(spectra):
        rows = sorted((r for r in lazy_rows if (r.a, r.b) == (a, b)), key=lambda r: r.depth)
        if not rows:
            continue
        L = [r.depth for r in rows]
        colour = ("C1", "C2", "C4", "C5", "C6", "C8", "C9")[i % 7]  # not the other panels' C0 (U_L), C3 (envelope)
        lazy_ax.errorbar(L, [r.trained for r in rows], yerr=[r.trained_se for r in rows], color=colour, marker="o",
                         ms=3, ls="none", capsize=2)
        lazy_ax.plot(L, [r.law_fixed for r in rows], color=colour, lw=1.2, label=f"({a:g}, {b:g})")
    _depth_axis(lazy_ax, sorted({r.depth for r in lazy_rows})[::2], ticker)
    lazy_ax.set_yscale("log")
    lazy_ax.yaxis.set_major_locator(ticker.FixedLocator([0.2, 0.3, 0.5, 1, 2, 3, 5, 10]))
    lazy_ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    lazy_ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    lazy_ax.set_title("lazy recipe: trained (dots) vs\nits exchangeable law, gain 1 (lines)", fontsize=9)
    for ax in axes.flat:
        ax.set(xlabel="depth L" if ax in axes[1] else "", ylabel="loss" if ax in axes[:, 0] else "")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    level = np.median([se / v for loss in expressible.values() for v, se in zip(loss.loss, loss.loss_se)] or [np.nan])
    fig.suptitle("U_L and the certified envelope, on U_L's report contexts (L = 1 may lie above the top)\nError bars: SE "
                 f"paired against B_L; the level's own context SE (≈ {100 * level:.1f} %) is common to every curve",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.11, 1, 0.95))
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.06), ncol=4, fontsize=9, frameon=False)
    lazy_handles, lazy_labels = lazy_ax.get_legend_handles_labels()
    fig.legend(lazy_handles, lazy_labels, loc="lower center", ncol=8, fontsize=9, frameon=False,
               title="lazy panel, (a, b):", title_fontsize=9, alignment="left")
    return fig


def _envelope_table(rows) -> list[str]:
    """Two tables, so each fits a page: the paired differences with the verdict, then the levels."""
    header = ("spectrum", "L", "envelope − B_L^study", "B_L^study − B_L (population)", "U_L − B_L",
              "envelope − U_L", "U_L's branch", "verdict")
    body = [(_label(r.a, r.b), r.depth, _num(r.study_gap, r.study_gap_se), _num(r.bound_difference,
             r.bound_difference_se), _num(r.expressible_gap, r.expressible_gap_se), _num(r.gap, r.gap_se), r.branch,
             r.verdict) for r in rows]
    level_header = ("spectrum", "L", "envelope R*_L (study contexts)", "B_L^study (same)", "B_L (U_L's contexts)",
                    "U_L (same)")
    level_body = [(_label(r.a, r.b), r.depth, _num(r.envelope, r.envelope_se), _num(r.study_bound), _num(r.atomic),
                   _num(r.expressible, r.expressible_se)) for r in rows]
    return (["The differences and the verdict:", ""] + markdown_table(header, body)
            + ["", "The levels, each on its own contexts:", ""] + markdown_table(level_header, level_body))


def _lazy_tables(rows, fits) -> list[str]:
    """The fits against the gain-1 law, the refitted law, then the per-depth rows: three tables that fit a page."""
    header = ("spectrum", "L", "trained lazy R_L", "law, gain 1", "trained − law", "law, gain refitted")
    body = [(_label(r.a, r.b), r.depth, _num(r.trained, r.trained_se), _num(r.law_fixed, r.law_fixed_se),
             _num(r.difference, r.difference_se), _num(r.law_refit, r.law_refit_se)) for r in rows]
    fit_header = ("spectrum", "trained plateau", "law plateau (gain 1)", "plateau difference", "trained c",
                  "law c (gain 1)", "c difference")
    fit_body = [(_label(f.a, f.b), _num(f.plateau, f.plateau_se), _num(f.law_plateau, f.law_plateau_se),
                 _num(*f.plateau_difference), _num(f.c, f.c_se), _num(f.law_c, f.law_c_se), _num(*f.c_difference))
                for f in fits]
    refit_header = ("spectrum", "refitted law R_∞", "refitted law c", "refitted law L₀")
    refit_body = [(_label(f.a, f.b), _num(f.refit_plateau, f.refit_plateau_se), _num(f.refit_c, f.refit_c_se),
                   _num(f.refit_shift, None, 3)) for f in fits]
    return (markdown_table(fit_header, fit_body) + [""] + markdown_table(refit_header, refit_body) + [""]
            + markdown_table(header, body))


def _opening(envelope, fits, deepest: int, missing: list) -> list[str]:
    s = summary_at(envelope, deepest)
    words = {v: sum(r.verdict == v for r in envelope) for v in VERDICTS}
    text = (f"At L = {deepest}, U_L is at or below the certified envelope (point estimate) at {s['at_or_below']} of "
            f"{s['spectra']} spectra")
    if s["misses"]:
        text += "; where it is not, the envelope lies below U_L by " + ", ".join(
            f"{-g:.4f} ± {se:.4f} at {_label(a, b)}" for a, b, g, se in s["misses"])
    text += (f". Over all {len(envelope)} spectrum-depth pairs: {words[VERDICTS[0]]} with U_L more than "
             f"{AGREEMENT_SIGMAS:g} SE below the envelope, {words[VERDICTS[1]]} with the envelope more than "
             f"{AGREEMENT_SIGMAS:g} SE below U_L, {words[VERDICTS[2]]} indistinguishable.")
    lines = [text]
    if envelope:
        lines.append("The study's B_L heads and U_L's differ in the population by at most "
                     f"{max(abs(r.bound_difference) for r in envelope):.4f} in absolute value at any depth, and that "
                     "difference is part of each estimate.")
    if fits:
        pd, cd = [f.plateau_difference for f in fits], [f.c_difference for f in fits]
        lines.append(f"The lazy recipe's trained curve, fitted as plateau + c/L, has its plateau "
                     f"{min(p for p, _ in pd):+.3f} to {max(p for p, _ in pd):+.3f} and its c "
                     f"{min(c for c, _ in cd):+.3f} to {max(c for c, _ in cd):+.3f} away from the exchangeable law of "
                     f"its own initial heads with the gain fixed at 1 (per-spectrum SEs in the table), over "
                     f"{len(fits)} spectra.")
    if missing:
        lines.append("No shipped U_L yet at " + ", ".join(_label(a, b) for a, b in missing) + ": not compared.")
    return lines


def expressible_markdown(envelope, lazy_rows, fits, *, missing=(), command: str = "idepth expressible check") -> str:
    """The page: opening sentences computed from the rows, the figure, the caveat, then the tables.

    Notes
    -----
    No example: it needs the checks' rows.
    """
    deepest = max((r.depth for r in envelope), default=0)
    lines = ["# Checks against trained models: U_L and the exchangeable law", "",
             " ".join(_opening(envelope, fits, deepest, list(missing))), "",
             f"Regenerated by `{command}` from the certified study's files (`docs/results/certified/`) and the "
             "shipped U_L (`theory/data/expressible/`); nothing is trained.", "",
             f"![U_L, B_L, the certified envelope and the lazy recipe]({FIGURE})", "",
             "## The certified envelope against U_L", "",
             "The envelope is the selected candidate's loss on the study's report set (one per spectrum, shared by "
             "the seeds; mean over seeds); U_L is on its own, larger report set. envelope − U_L is estimated with B_L "
             "as a control variate: envelope − U_L = (envelope − B_L^study) + (B_L^study − B_L) − (U_L − B_L), each "
             "piece paired on its own contexts: the study's report set (SE: joint bootstrap over seeds and "
             "contexts), fresh contexts (population Monte Carlo), U_L's report set (U_L's paired SE); independent "
             f"draws and their SEs add in quadrature. Verdict: beyond ± {AGREEMENT_SIGMAS:g} SE or not.", "",
             "Caveat: B_L^study (the study's untrained oracle heads, fitted on its bound contexts) and B_L "
             "(U_L's atomic branch, fitted on U_L's fit contexts) are two fits of the same allocation problem; "
             "the middle term measures their population difference, so the estimate does not assume they are equal. "
             "The level columns (envelope, B_L^study; B_L, U_L) are each on their own contexts, whose sampling error "
             "(the ± of the levels) is common to every depth: compare differences, not levels across the two sets.", "",
             *_envelope_table(envelope), "",
             "## The lazy recipe against its exchangeable law", "",
             f"Trained: the certified contrasts' lazy runs (gain frozen at 1, lr {LAZY['learning_rate']:g}), "
             "report-set loss, mean over seeds, joint-bootstrap SE; plateau + c/L fitted by weighted least squares, "
             "SEs from refitting each bootstrap replicate. Law: the per-layer reads p_ℓ·y of a model drawn with the recipe's initialisation "
             "(" + (f"{fits[0].layers} layers, {fits[0].draws} independent draws, {fits[0].contexts} fresh contexts "
                    "each" if fits else "–") + "), fed to `theory.head_families.exchangeable_law_from_reads`; with the "
             "gain fixed at 1 the law is exactly plateau + c/L with plateau = s − 2h + q and c = v; SEs: spread over "
             "the draws.", "",
             *_lazy_tables(lazy_rows, fits), ""]
    return "\n".join(lines)


def write_expressible_checks(out_dir=None, *, progress=print, certified_dir=None, expressible_dir=None,
                             spectra=TABLE1_SPECTRA, law_draws: int = LAW_DRAWS, law_layers: int = LAW_LAYERS,
                             law_contexts: int = LAW_CONTEXTS, plan: CertifiedPlan | None = None) -> list[Path]:
    """Compute both checks and write the page, its figure and two CSV tables; nothing is written on failure.

    ``certified_dir``: the certified study's files (default ``out_dir/certified``: ``cells/`` and
    ``contrasts/``); ``expressible_dir``: the shipped U_L (default ``theory/data/expressible``). A spectrum
    without a shipped U_L is left out and named on the page. Returns the written paths.

    Notes
    -----
    No example: it reads the study's files (``tests/test_expressible_checks.py``).
    """
    from theory.expressible import ExpressibleLoss

    from .expressible import SETTINGS, data_dir, file_name

    if out_dir is None:
        from .shipped import shipped_path

        out_dir = shipped_path()
    out_dir = Path(out_dir)
    plan = plan or CertifiedPlan()
    certified_dir = Path(certified_dir) if certified_dir is not None else out_dir / "certified"
    expressible_dir = Path(expressible_dir) if expressible_dir is not None else data_dir()
    expressible, missing = {}, []
    for a, b in spectra:
        path = expressible_dir / file_name(a, b, SETTINGS)
        if path.is_file():
            expressible[float(a), float(b)] = ExpressibleLoss.from_dict(json.loads(path.read_text())["result"])
        else:
            missing.append((float(a), float(b)))
    progress(f"U_L shipped at {len(expressible)} of {len(spectra)} spectra" +
             (f" (missing: {', '.join(_label(a, b) for a, b in missing)})" if missing else ""))
    rows, errors = collect(certified_dir / "cells")
    contrasts = collect_contrasts(certified_dir / "contrasts")
    progress(f"certified study: {len(rows)} candidates, {len(contrasts)} contrast runs")
    shifts, laws = {}, {}
    for (a, b), loss in expressible.items():
        progress(f"{_label(a, b)}: the study's B_L heads against U_L's atomic ones; the lazy initial heads' law "
                 f"({law_draws} draws of {law_layers} layers on {law_contexts} contexts)")
        shifts[a, b] = bound_differences(a, b, loss, plan)
        laws[a, b] = (loss.depths, lazy_law(a, b, plan, loss.depths, layers=law_layers, draws=law_draws,
                                            contexts=law_contexts))
    envelope = envelope_rows(rows, errors, expressible, plan, bound_differences=shifts, rng=0)
    lazy_rows, fits = lazy_checks(contrasts, laws, plan, rng=1)
    # everything computed and drawn before anything is written; then all files replace the old ones together
    page = expressible_markdown(envelope, lazy_rows, fits, missing=missing)
    fig = draw_figure(envelope, expressible, lazy_rows)
    make_output_dir(out_dir / Path(FIGURE).parent)
    outputs = [(out_dir / FIGURE, lambda fh: fig.savefig(fh, format="png", dpi=100)),
               (out_dir / ENVELOPE_CSV, lambda fh: fh.write(_csv(envelope).encode())),
               (out_dir / LAZY_CSV, lambda fh: fh.write(_csv(lazy_rows).encode())),
               (out_dir / LAZY_FIT_CSV, lambda fh: fh.write(_csv(fits).encode())),
               (out_dir / PAGE, lambda fh: fh.write(page.encode()))]
    staged = []
    try:
        for path, write in outputs:
            staged.append((stage(path, write)[0], path))
    except BaseException:
        discard(staged)
        raise
    finally:
        pyplot().close(fig)
    commit(staged)
    for path, _ in outputs:
        progress(f"wrote {path}")
    return [path for path, _ in outputs]
