"""Figures and Markdown of the regime study (the ``study.md`` section of a report; its page is
:class:`~numerics.experiments.study.render.Section` values and one
:func:`~numerics.experiments.study.render.render_page`)."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np

from numerics.io import savefig

from .. import criteria
from .._markdown import fmt
from .._plotting import depth_ticks, pyplot
from .regime_plans import StudyScale
from .render import Section, render_page

__all__ = ["draw_figures", "study_markdown"]


_COLOURS = {"lazy": "C0", "lazy_long": "C4", "converged": "C3", "frozen_heads": "C2", "separate_models": "C1"}


def draw_figures(s: StudyScale, points, bounds) -> dict:
    """One figure per (size, spectrum): each regime's ``R_L``, fit and bounds; ``C_L``, ``A_L − C_L``.

    Returns ``{file name: its bytes}``, a PNG and a PDF (names relative to the study's directory) per figure,
    for :func:`~numerics.experiments.study.regimes.write_regime_study` to write with the page; each figure is
    closed once rendered.

    Notes
    -----
    No example: it needs a study's points and bounds (minutes); see ``run_regime_study``.
    """
    from theory.fitting import depth_law

    plt = pyplot()
    files = {}
    for (d, P, N) in s.sizes:
        for (a, b) in s.all_spectra:
            pts = [p for p in points if (*p.size, p.a, p.b) == (d, P, N, a, b)]
            fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
            for p in pts:
                L = np.asarray(p.depths, dtype=float)
                colour, label = _COLOURS[p.name], p.name.replace("_", " ")
                se = np.nan_to_num(p.R.se, nan=0.0)
                ax.errorbar(L, p.R.mean, yerr=se, fmt="o", color=colour, ms=4, capsize=2, label=label)
                if math.isfinite(p.alpha):
                    grid = np.unique(np.round(np.geomspace(L.min(), L.max(), 60)).astype(int))
                    ax.plot(grid, depth_law(grid, p.L0, p.c, p.alpha), "--", color=colour, lw=1,
                            label=f"{label} fit: α = {p.alpha:.2f}")
                ax2.plot(L, p.C.mean, "o-", color=colour, ms=3, label=f"C_L {label}")
                ax2.plot(L, p.gap.mean, "s:", color=colour, ms=3, label=f"A_L − C_L {label}")
            cos, pre = (bounds[(d, P, N, a, b)][sim] for sim in ("cosine", "prenorm"))
            ax.axhline(cos.single_head_loss, color="k", lw=1,
                       label=f"best cosine head {cos.single_head_loss:.3g}")
            ax.axhline(cos.mixture_loss, color="k", lw=1, ls=":",
                       label=f"best cosine mixture {cos.mixture_loss:.3g}")
            ax.axhline(pre.single_head_loss, color="0.5", lw=1, ls="-.",
                       label=f"best pre-norm head (N={N}) {pre.single_head_loss:.3g}")
            all_depths = sorted({L for p in pts for L in p.depths})
            ax.set_title(f"nonlinear, top-{s.k}: d={d}, P={P}, N={N}, (a, b) = ({a:g}, {b:g})", fontsize=9)
            ylabels = ("loss R_L", "C_L (shared) and A_L − C_L (disagreement)")
            for axis, ylabel in zip((ax, ax2), ylabels):
                depth_ticks(axis, all_depths)
                axis.set_yscale("log")
                axis.set_ylabel(ylabel)
                axis.legend(fontsize=6, ncol=2)
            fig.tight_layout()
            stem = f"regime_d{d}_P{P}_N{N}_a{a:g}_b{b:g}"
            for ext in ("png", "pdf"):
                buffer = io.BytesIO()
                savefig(fig, buffer, dpi=120, fmt=ext)  # a PNG records its smallest text size
                files[f"figures/{stem}.{ext}"] = buffer.getvalue()
            plt.close(fig)
    return files


def study_markdown(s: StudyScale, points, bounds, name: str, figure_files) -> str:
    """The ``study.md`` section "Where inverse-depth scaling appears": regimes, points, bounds, figures.

    Notes
    -----
    No example: it needs a study's points and bounds (minutes); see ``run_regime_study``.
    """
    regimes = "\n".join(f"- **{regime.replace('_', ' ')}** — {s.describe(regime)}." for regime in s.regimes)
    rules = ("Depth gain = R_1 / R_{L_max}; α fitted to R_L = L0 + c L^(−α) (eq. 16) with its 95 % interval; "
             f"'settles' = C_L and A_L − C_L change by less than {criteria.SETTLING_TOLERANCE:.0%} over the last "
             f"doubling of depth. Verdict: 'flat' if the depth gain is below {criteria.DEPTH_GAIN_THRESHOLD}, "
             f"'inverse-depth' if α ∈ [{criteria.ALPHA_WINDOW[0]}, {criteria.ALPHA_WINDOW[1]}] and it settles. "
             "Bounds (Monte Carlo, ± SE): best single softmax head over exact cosine "
             "similarity with optimal temperature and gain, best non-negative mixture of such heads (what an average "
             "of layers can express, eq. 60), and the best head over the model's own pre-norm similarity at width N.")
    curves = (("d", "P", "N", "(a, b)", "regime", "R_1", "R_Lmax", "gain", "α [95 % CI]", "ΔC_L", "Δ(A−C)", "settles",
               "verdict"),
              [(*p.size, p.label, p.name.replace("_", " "), f"{fmt(p.R.mean[0], digits=4)} ± {fmt(p.R.se[0], digits=2)}",
                f"{fmt(p.R.mean[-1], digits=4)} ± {fmt(p.R.se[-1], digits=2)} (L={p.depths[-1]})",
                f"{fmt(p.depth_gain, digits=3)} ± {fmt(p.depth_gain_se, digits=2)}",
                f"{fmt(p.alpha, digits=3)} [{', '.join(fmt(v, digits=3) for v in p.alpha_interval)}]",
                f"{fmt(100 * p.C_change, digits=2)} %", f"{fmt(100 * p.gap_change, digits=2)} %",
                "yes" if p.settled else "no", p.verdict) for p in points])
    oracle = (("d", "P", "N", "(a, b)", "E y*²", "best cosine head", "best cosine mixture", "best pre-norm head (N)"),
              [(d, P, N, f"({a:g}, {b:g})", f"{bd['cosine'].target_second_moment:.4g}",
                f"{bd['cosine'].single_head_loss:.4g} ± {bd['cosine'].single_head_standard_error:.2g} "
                f"(τ = {bd['cosine'].temperature:.3g})",
                f"{bd['cosine'].mixture_loss:.4g} ± {bd['cosine'].mixture_standard_error:.2g}",
                f"{bd['prenorm'].single_head_loss:.4g} ± {bd['prenorm'].single_head_standard_error:.2g}")
               for (d, P, N, a, b), bd in bounds.items()])
    return render_page([
        Section("Where inverse-depth scaling appears", (
            f"**Regime: {name}.**",
            f"Nonlinear model (eqs. 9-10, M(0)), top-{s.k} task, the package's engine and sweep layer; "
            f"{len(s.seeds)} seeds per point (separate models: {len(s.seeds)} disjoint groups); depths {list(s.depths)} "
            f"(converged: {list(s.converged_depths)}; separate models: {list(s.separate_depths)}). Regimes:",
            regimes, rules), curves),
        Section(table=oracle),
        Section(paragraphs=(_study_findings(points, bounds),),
                figures=tuple((Path(f).stem, f) for f in figure_files if f.endswith(".png"))),
    ])


def _study_findings(points, bounds) -> str:
    """Sentences stating the numbers: which regime reaches what, against which bound."""
    out = []
    for p in points:
        bd = bounds.get((*p.size, p.a, p.b))
        if bd is None:
            continue
        best = float(np.nanmin(p.R.mean))
        cos = bd["cosine"]
        rel = best / cos.single_head_loss
        out.append(
            f"{p.name.replace('_', ' ')} (d={p.size[0]}, P={p.size[1]}, N={p.size[2]}, {p.label}): lowest loss {best:.4g} "
            f"= {rel:.2f} × the best single cosine head ({cos.single_head_loss:.4g}); {p.verdict}."
        )
    return " ".join(out)
