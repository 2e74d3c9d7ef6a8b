"""Any study's page: one section vocabulary, and the pages written in it (rendering only).

A page is a list of :class:`Section` values (a heading, paragraphs, a table, figures) and one :func:`render_page`
call, so every page separates its blocks, writes its tables
(:func:`~numerics.experiments._markdown.markdown_table`) and links its figures one way. The pages written here:
the regime study's (:func:`regime_markdown`), the expressible check's (:func:`expressible_markdown`), the plateau
checks' (:func:`consistency_markdown`, :func:`sizes_markdown`); the certified plan's page
(:mod:`~numerics.experiments.study.certified.page`) is built of the same sections. Their figures are drawn by
:mod:`~numerics.experiments.study.figures`. This module computes nothing: it imports no module that trains,
evaluates a model or runs Monte Carlo (``tests/test_render_imports.py``).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .. import criteria
from .._markdown import fixed, fmt, markdown_table
from ..recipes import LAZY
from .curves import spectrum_label

__all__ = ["Section", "render_page", "written", "regime_markdown", "FIGURE", "LAZY_CSV", "LAZY_FIT_CSV", "PAGE",
           "csv_text", "expressible_markdown", "consistency_statement", "consistency_markdown", "sizes_markdown"]

#: the expressible check's page, figure and tables (relative to the output directory)
PAGE = "expressible.md"
FIGURE = "expressible/expressible.png"
LAZY_CSV = "expressible/lazy.csv"
LAZY_FIT_CSV = "expressible/lazy-fit.csv"


# --------------------------------------------------------------------------- the vocabulary

@dataclass(frozen=True)
class Section:
    """One part of a page: an optional heading, paragraphs, an optional table and figures, in that order.

    Attributes
    ----------
    title : str
        The heading's text ('' for none: the section continues the previous one).
    paragraphs : tuple of str
        Each one block (a multi-line string is one block: a bullet list, or two lines of one paragraph).
    table : tuple or None
        ``(header, rows)`` of :func:`~numerics.experiments._markdown.markdown_table`.
    figures : tuple of (str, str)
        ``(alt text, path)`` of each image, one per line in one block.
    level : int
        The heading's level (``#`` count).

    Examples
    --------
    >>> Section("Result", ("One sentence.",), (("L", "R_L"), [(1, 2.0)])).level
    2
    """

    title: str = ""
    paragraphs: tuple = ()
    table: tuple | None = None
    figures: tuple = ()
    level: int = 2

    def blocks(self) -> list[str]:
        """The section's blocks (heading, paragraphs, table, figures), each a string without blank lines around it.

        Examples
        --------
        >>> Section("Fit", ("α ≈ 1.",), figures=(("map", "figures/a.png"),), level=1).blocks()
        ['# Fit', 'α ≈ 1.', '![map](figures/a.png)']
        """
        out = [f"{'#' * self.level} {self.title}"] if self.title else []
        out += list(self.paragraphs)
        if self.table is not None:
            out.append("\n".join(markdown_table(*self.table)))
        if self.figures:
            out.append("\n".join(f"![{alt}]({path})" for alt, path in self.figures))
        return out


def written(lines: Sequence[str]) -> list[Section]:
    """Markdown already written as lines (a section of the facts' own) as one block of a page; none if empty.

    Examples
    --------
    >>> print(render_page([Section("A", ("x",)), *written(["### B", "", "y", ""]), *written([])]), end="")
    ## A
    <BLANKLINE>
    x
    <BLANKLINE>
    ### B
    <BLANKLINE>
    y
    """
    text = "\n".join(lines).strip("\n")
    return [Section(paragraphs=(text,))] if text else []


def render_page(sections: Sequence[Section]) -> str:
    """The Markdown of ``sections``: every block separated by one blank line, the text ending with a newline.

    Examples
    --------
    >>> print(render_page([Section("Fit", ("α ≈ 1.",)), Section(table=(("L", "R_L"), [(1, 2.0)]))]), end="")
    ## Fit
    <BLANKLINE>
    α ≈ 1.
    <BLANKLINE>
    | L | R_L |
    |---|---|
    | 1 | 2.0 |
    """
    return "\n\n".join(block for section in sections for block in section.blocks()) + "\n"


# --------------------------------------------------------------------------- the regime study

def regime_markdown(s, points, bounds, name: str, figure_files) -> str:
    """The ``study.md`` section "Where inverse-depth scaling appears": regimes, points, bounds, figures.

    ``s`` is the study's :class:`~numerics.experiments.study.regime_plans.StudyScale` (not imported here: a renderer
    imports nothing that computes).

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


# --------------------------------------------------------------------------- the expressible check

def _label(a: float, b: float) -> str:
    return f"(a, b) = {spectrum_label(a, b)}"


def csv_text(records) -> str:
    """The rows (dataclasses) as CSV, floats written exactly (``repr``).

    Examples
    --------
    >>> from numerics.experiments.study.expressible_checks import LazyRow
    >>> print(csv_text([LazyRow(0.0, 0.5, 8, 5, 2.29, 0.06, 2.91, 0.05, 2.88, 0.05)]).splitlines()[1])
    0.0,0.5,8,5,2.29,0.06,2.91,0.05,2.88,0.05
    """
    records = [asdict(r) for r in records]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(records[0]) if records else [], lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: repr(v) if isinstance(v, float) else v for k, v in r.items()} for r in records)
    return buffer.getvalue()


def _opening(fits, missing: list) -> list[str]:
    lines = []
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


def expressible_markdown(lazy_rows, fits, *, missing=(), command: str = "idepth expressible check") -> str:
    """The page: opening sentences computed from the rows, the figure, then the lazy recipe's tables.

    Examples
    --------
    >>> print(expressible_markdown([], [], missing=[(0.0, 0.5)]).splitlines()[2])
    No shipped U_L yet at (a, b) = (0, 0.5): not compared.
    """
    law = (f"{fits[0].layers} layers, {fits[0].draws} independent draws, {fits[0].contexts} fresh contexts each"
           if fits else "–")
    return render_page([
        Section("Checks against trained models: the lazy recipe and its exchangeable law", (
            " ".join(_opening(fits, list(missing))),
            f"Regenerated by `{command}` from the certified study's contrast runs (`docs/results/certified/`) and "
            "the shipped U_L (`theory/data/expressible/`); nothing is trained."),
            figures=(("the lazy recipe against its exchangeable law", FIGURE),), level=1),
        Section("The lazy recipe against its exchangeable law", (
            f"Trained: the certified contrasts' lazy runs (gain frozen at 1, lr {LAZY['learning_rate']:g}), "
            "report-set loss, mean over seeds, joint-bootstrap SE; plateau + c/L fitted by weighted least squares, "
            "SEs from refitting each bootstrap replicate. Law: the per-layer reads p_ℓ·y of a model drawn with the "
            f"recipe's initialisation ({law}), fed to `theory.head_families.exchangeable_law_from_reads`; with the "
            "gain fixed at 1 the law is exactly plateau + c/L with plateau = s − 2h + q and c = v; SEs: spread over "
            "the draws.",),
            (("spectrum", "trained plateau", "law plateau (gain 1)", "plateau difference", "trained c",
              "law c (gain 1)", "c difference"),
             [(_label(f.a, f.b), fixed(f.plateau, f.plateau_se), fixed(f.law_plateau, f.law_plateau_se),
               fixed(*f.plateau_difference), fixed(f.c, f.c_se), fixed(f.law_c, f.law_c_se),
               fixed(*f.c_difference)) for f in fits])),
        Section(table=(("spectrum", "refitted law R_∞", "refitted law c", "refitted law L₀"),
                       [(_label(f.a, f.b), fixed(f.refit_plateau, f.refit_plateau_se),
                         fixed(f.refit_c, f.refit_c_se), fixed(f.refit_shift, None, 3)) for f in fits])),
        Section(table=(("spectrum", "L", "trained lazy R_L", "law, gain 1", "trained − law", "law, gain refitted"),
                       [(_label(r.a, r.b), r.depth, fixed(r.trained, r.trained_se),
                         fixed(r.law_fixed, r.law_fixed_se), fixed(r.difference, r.difference_se),
                         fixed(r.law_refit, r.law_refit_se)) for r in lazy_rows])),
    ])


# --------------------------------------------------------------------------- the plateau checks

def consistency_statement(r) -> str:
    """The plain sentence of one :class:`~numerics.experiments.study.plateaus.ConsistencyRow`: is the paper's value
    below what any non-negative mixture of cosine heads reaches at its sizes?

    Examples
    --------
    >>> from types import SimpleNamespace as Row
    >>> row = Row(source="Table 1 (nonlinear L0)", paper_value="2.007", a=0.0, b=0.0, d=16, P=64, mixture=4.0,
    ...           mixture_se=0.1, single_head=5.0, below_bound=True)
    >>> consistency_statement(row).split("reaches ")[1]
    "4 ± 0.1 (1.99× the paper's value, 20 SE above it; best single head 5). Unattainable at these sizes."
    """
    if r.below_bound:
        margin = criteria.below_bound(float(r.paper_value), r.mixture, r.mixture_se)[1]
        return (f"The paper's {r.source} = {r.paper_value} at (a, b) = ({r.a:g}, {r.b:g}) is below what any "
                f"non-negative mixture of softmax heads over exact cosine similarity (optimal temperatures and gains) "
                f"can reach at d = {r.d}, P = {r.P}: the best mixture reaches {r.mixture:.4g} ± {r.mixture_se:.2g} "
                f"({r.mixture / float(r.paper_value):.3g}× the paper's value, {margin:.0f} SE above it; best single "
                f"head {r.single_head:.4g}). Unattainable at these sizes.")
    return (f"The paper's {r.source} = {r.paper_value} at (a, b) = ({r.a:g}, {r.b:g}) is not below the bound at "
            f"d = {r.d}, P = {r.P} (best mixture {r.mixture:.4g} ± {r.mixture_se:.2g}).")


def consistency_markdown(rows: Sequence, *, below_as_table: bool = False) -> str:
    """The section "Consistency with the paper": every paper plateau against the oracle bounds, per row and per size.

    The values more than :data:`~numerics.experiments.criteria.BOUND_SIGMAS` SE below the bound close the section:
    one sentence each (the study's page), or, with ``below_as_table``, one table (``REPORT.md``).

    References
    ----------
    Paper Tables 1 and 4 (nonlinear L0) against the bound of eq. (60).

    Examples
    --------
    >>> from numerics.experiments.bounds import HeadBound
    >>> from numerics.experiments.study.plateaus import paper_consistency
    >>> fake = lambda a, b, d, P, k: HeadBound(5.0, 0.1, 10.0, 1.0, 4.0, 0.1, (), (), 60.0, "", P, k, "cosine", 64, 64, d)
    >>> rows = paper_consistency(P_values=(1024,), bound=fake).rows
    >>> text = consistency_markdown(rows, below_as_table=True)
    >>> "\\n- The paper's" in text, "| paper value | best mixture ± SE |" in text, "\\n- The paper's" in consistency_markdown(rows)
    (False, True, True)
    """
    n_below = sum(r.below_bound for r in rows)
    counts = sorted({r.n_contexts for r in rows})
    contexts = (f"{counts[0]} per bound" if len(counts) == 1
                else "per bound: " + " or ".join(map(str, counts)) + ", by size in the second table")
    intro = ("Each nonlinear plateau the paper reports (Table 1, nonlinear L0; Table 4, L0) against the oracle bound: "
             "the best loss of one softmax head over exact cosine similarity with optimal temperature and gain, and "
             "of a non-negative mixture of such heads (what the average of layers of the paper's parallel model, eq. "
             f"60, can express), Monte Carlo over contexts ({contexts}, ± one SE). 'below bound' = the paper's value "
             f"is more than {criteria.BOUND_SIGMAS:g} SE below the mixture bound at those sizes. "
             "d = 128, P ≈ 1024 are the sizes at which the package reproduces the paper's linear Table 3.")
    ratios = {}
    for r in rows:
        ratios.setdefault((r.d, r.P), []).append(r.mixture / float(r.paper_value))
    medians = {size: float(np.median(sub)) for size, sub in ratios.items()}
    closest = min(medians, key=lambda size: abs(math.log(medians[size])))
    sub = ratios[closest]
    below = [r for r in rows if r.below_bound]
    sections = [
        Section("Consistency with the paper", (intro, f"**{n_below} of {len(rows)} paper values are below the bound "
                                                      "at the sizes stated.**"),
                (("source", "(a, b)", "k", "d", "P", "paper", "best single head", "best mixture", "mixture / paper",
                  "E y*²", "package", "below bound"),
                 [(r.source, f"({r.a:g}, {r.b:g})", r.k, r.d, r.P, r.paper_value,
                   f"{r.single_head:.4g} ± {r.single_head_se:.2g}", f"{r.mixture:.4g} ± {r.mixture_se:.2g}",
                   f"{r.mixture / float(r.paper_value):.3g}", f"{r.target_second_moment:.4g}",
                   "—" if r.package_value is None else f"{r.package_value:.4g} ({r.package_label})",
                   "**yes**" if r.below_bound else "no") for r in rows])),
        Section(paragraphs=("Per size: how far the best mixture of cosine heads lies from the paper's values.",),
                table=(("d", "P", "contexts", "rows", "below bound", "mixture / paper: median", "min", "max"),
                       [(d, P, "/".join(map(str, sorted({r.n_contexts for r in rows if (r.d, r.P) == (d, P)}))),
                         len(sub), sum(r.below_bound for r in rows if (r.d, r.P) == (d, P)), f"{np.median(sub):.3g}",
                         f"{np.min(sub):.3g}", f"{np.max(sub):.3g}") for (d, P), sub in ratios.items()])),
        Section(paragraphs=(f"Of the sizes checked, the paper's values are closest to the bound at d = {closest[0]}, "
                            f"P = {closest[1]} (mixture / paper: median {medians[closest]:.3g}, range "
                            f"{min(sub):.3g}-{max(sub):.3g}).",)),
    ]
    if below and below_as_table:
        sections.append(Section(
            paragraphs=(f"The {len(below)} paper values below what any non-negative mixture of softmax heads over "
                        "exact cosine similarity (optimal temperatures and gains) reaches at the sizes stated — "
                        "unattainable there:",),
            table=(("source", "(a, b)", "d", "P", "paper value", "best mixture ± SE", "× paper", "SE above the paper",
                    "best single head"),
                   [(r.source, f"({r.a:g}, {r.b:g})", r.d, r.P, r.paper_value, f"{r.mixture:.4g} ± {r.mixture_se:.2g}",
                     f"{r.mixture / float(r.paper_value):.3g}",
                     f"{criteria.below_bound(float(r.paper_value), r.mixture, r.mixture_se)[1]:.0f}",
                     f"{r.single_head:.4g}") for r in below])))
    elif below:
        sections.append(Section(paragraphs=("\n".join(f"- {consistency_statement(r)}" for r in below),)))
    return render_page(sections)


def sizes_markdown(result, figure: str | None = None) -> str:
    """The Markdown page "Which sizes the paper's nonlinear plateaus come from", of a
    :class:`~numerics.experiments.study.plateaus.SizeInference` ``result``.

    Notes
    -----
    No example: it needs a :class:`~numerics.experiments.study.plateaus.SizeInference` (minutes).
    """
    d_best, P_best = result.best_mixture
    i, j = result.d_values.index(d_best), result.P_values.index(P_best)
    best = (f"**Best size for B_∞ (best mixture of cosine heads): d = {d_best}, P = {P_best}** "
            f"(χ² = {result.chi2_mixture[i, j]:.4g} for {len(result.rows) - 2} degrees of freedom); allowed region: "
            + ", ".join(f"({d}, {P})" for d, P in result.region_mixture) + ".\n"
            f"Best size for B_1 (best single head): d = {result.best_single[0]}, P = {result.best_single[1]}; "
            "allowed: " + ", ".join(f"({d}, {P})" for d, P in result.region_single) + ".")
    by_row = [(r["source"], f"({r['a']:g}, {r['b']:g})", r["k"], r["verbatim"],
               f"{result.mixture[i, j, n]:.4g} ± {result.mixture_se[i, j, n]:.2g}",
               f"{result.single[i, j, n]:.4g} ± {result.single_se[i, j, n]:.2g}",
               f"{r['value'] / result.mixture[i, j, n]:.3f}") for n, r in enumerate(result.rows)]
    return render_page([
        Section("Which sizes the paper's nonlinear plateaus come from", (
            f"χ² between the paper's {len(result.rows)} nonlinear plateaus (Tables 1 and 4) and the oracle bounds "
            f"(theory.softmax_bounds: {result.n_seeds} seeds × {result.n_contexts} fit + held-out contexts each) over "
            f"d ∈ {list(result.d_values)}, P ∈ {list(result.P_values)}.", best, "χ² of B_∞ (rows d, columns P):"),
            (("d \\ P", *result.P_values),
             [(d, *(f"{v:.3g}" for v in result.chi2_mixture[a])) for a, d in enumerate(result.d_values)]), level=1),
        Section(paragraphs=(f"At d = {d_best}, P = {P_best}, row by row:",),
                table=(("source", "(a, b)", "k", "paper", "B_∞", "B_1", "paper / B_∞"), by_row),
                figures=(("χ² map", figure),) if figure else ()),
    ])
