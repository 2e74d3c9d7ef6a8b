"""The page and figure of the checks against trained models (:mod:`numerics.experiments.study.expressible_checks`).

Split from the checks by job: they compute the rows, this module writes them as Markdown and draws them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from numerics.io import savefig, write_together

from .._markdown import fixed, markdown_table
from .._plotting import depth_ticks, pyplot
from ..criteria import AGREEMENT_SIGMAS
from .expressible_checks import (
    ENVELOPE_CSV,
    FIGURE,
    LAW_CONTEXTS,
    LAW_DRAWS,
    LAW_LAYERS,
    LAZY_CSV,
    LAZY_FIT_CSV,
    PAGE,
    VERDICTS,
    _csv,
    _label,
    bound_differences,
    envelope_rows,
    lazy_checks,
    lazy_law,
    summary_at,
)
from ..recipes import LAZY
from .certified.contrasts import collect_contrasts
from .certified.plan import TABLE1_SPECTRA, CertifiedPlan
from .certified.table import collect

__all__ = ["check_results_dir", "draw_figure", "expressible_markdown", "write_expressible_checks"]


def check_results_dir(out_dir, name: str = "out_dir", *, certified_dir=None) -> Path:
    """``out_dir`` as a path if it is a writable results directory holding the certified study's cells.

    The checks run before any Monte Carlo (the lazy heads' law takes CPU minutes): ``out_dir`` must be a
    writable directory, and the certified study's exported cells (``certified_dir/cells``, default
    ``out_dir/certified/cells``) must be there, since every row of the page compares one of them.

    Raises
    ------
    ValueError
        Naming ``name``, the path and what it lacks.

    Examples
    --------
    >>> check_results_dir("/no/such/results", "--out")
    Traceback (most recent call last):
    ...
    ValueError: --out '/no/such/results' holds no certified study: '/no/such/results/certified/cells' is not a directory (a results directory is docs/results of a checkout, or $IDEPTH_RESULTS, holding certified/cells)
    """
    from numerics.io import check_output_dir

    out = check_output_dir(out_dir, name)
    cells = (Path(certified_dir) if certified_dir is not None else out / "certified") / "cells"
    if not cells.is_dir():
        raise ValueError(f"{name} {str(out)!r} holds no certified study: {str(cells)!r} is not a directory (a results "
                         "directory is docs/results of a checkout, or $IDEPTH_RESULTS, holding certified/cells)")
    if not any(cells.iterdir()):
        raise ValueError(f"{name} {str(out)!r} holds no certified study: {str(cells)!r} is empty")
    return out


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
        depth_ticks(ax, L, label=None)
        ax.tick_params(labelsize=8)
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
    depth_ticks(lazy_ax, sorted({r.depth for r in lazy_rows})[::2], label=None)
    lazy_ax.tick_params(labelsize=8)
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
    body = [(_label(r.a, r.b), r.depth, fixed(r.study_gap, r.study_gap_se), fixed(r.bound_difference,
             r.bound_difference_se), fixed(r.expressible_gap, r.expressible_gap_se), fixed(r.gap, r.gap_se), r.branch,
             r.verdict) for r in rows]
    level_header = ("spectrum", "L", "envelope R*_L (study contexts)", "B_L^study (same)", "B_L (U_L's contexts)",
                    "U_L (same)")
    level_body = [(_label(r.a, r.b), r.depth, fixed(r.envelope, r.envelope_se), fixed(r.study_bound), fixed(r.atomic),
                   fixed(r.expressible, r.expressible_se)) for r in rows]
    return (["The differences and the verdict:", ""] + markdown_table(header, body)
            + ["", "The levels, each on its own contexts:", ""] + markdown_table(level_header, level_body))


def _lazy_tables(rows, fits) -> list[str]:
    """The fits against the gain-1 law, the refitted law, then the per-depth rows: three tables that fit a page."""
    header = ("spectrum", "L", "trained lazy R_L", "law, gain 1", "trained − law", "law, gain refitted")
    body = [(_label(r.a, r.b), r.depth, fixed(r.trained, r.trained_se), fixed(r.law_fixed, r.law_fixed_se),
             fixed(r.difference, r.difference_se), fixed(r.law_refit, r.law_refit_se)) for r in rows]
    fit_header = ("spectrum", "trained plateau", "law plateau (gain 1)", "plateau difference", "trained c",
                  "law c (gain 1)", "c difference")
    fit_body = [(_label(f.a, f.b), fixed(f.plateau, f.plateau_se), fixed(f.law_plateau, f.law_plateau_se),
                 fixed(*f.plateau_difference), fixed(f.c, f.c_se), fixed(f.law_c, f.law_c_se), fixed(*f.c_difference))
                for f in fits]
    refit_header = ("spectrum", "refitted law R_∞", "refitted law c", "refitted law L₀")
    refit_body = [(_label(f.a, f.b), fixed(f.refit_plateau, f.refit_plateau_se), fixed(f.refit_c, f.refit_c_se),
                   fixed(f.refit_shift, None, 3)) for f in fits]
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
        from ..shipped import shipped_path

        out_dir = shipped_path()
    out_dir = check_results_dir(out_dir, "out_dir", certified_dir=certified_dir)  # before any Monte Carlo
    plan = plan or CertifiedPlan()
    certified_dir = Path(certified_dir) if certified_dir is not None else out_dir / "certified"
    expressible_dir = Path(expressible_dir) if expressible_dir is not None else data_dir()
    rows, errors = collect(certified_dir / "cells")  # a corrupt cell is named before anything else is said or done
    contrasts = collect_contrasts(certified_dir / "contrasts")
    expressible, missing = {}, []
    for a, b in spectra:
        path = expressible_dir / file_name(a, b, SETTINGS)
        if path.is_file():
            expressible[float(a), float(b)] = ExpressibleLoss.from_dict(json.loads(path.read_text())["result"])
        else:
            missing.append((float(a), float(b)))
    progress(f"U_L shipped at {len(expressible)} of {len(spectra)} spectra" +
             (f" (missing: {', '.join(_label(a, b) for a, b in missing)})" if missing else ""))
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
    try:
        written = write_together(out_dir, {FIGURE: lambda path: savefig(fig, path, dpi=100),
                                           ENVELOPE_CSV: _csv(envelope), LAZY_CSV: _csv(lazy_rows),
                                           LAZY_FIT_CSV: _csv(fits), PAGE: page})
    finally:
        pyplot().close(fig)
    for path in written:
        progress(f"wrote {path}")
    return written
