"""Every study figure: the certified plan's (the envelope per setting, the recipes, the revised study against U_L,
eq. 63's decomposition, the excess over R*_∞), the regime study's, the expressible check's and the size map.

Split from the pages by job (:mod:`~numerics.experiments.study.page`, :mod:`~numerics.experiments.study.certified.page`
write text, this module draws); it draws what was measured and imports nothing that trains, evaluates or runs Monte
Carlo (``tests/test_render_imports.py``).
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np

from numerics.io import save_figure, savefig

from .._plotting import depth_ticks, excess_band, excess_floor, pyplot
from ..criteria import ALPHA_GRID, GAIN_LAW_MAX_CHI2_DOF
from .certified.formatting import RECIPE_LABELS, bounded, recipe_order, setting_label

__all__ = ["draw_certified_figure", "draw_decomposition_figure", "draw_excess_figure", "draw_recipe_figure",
           "draw_revised_figure", "draw_regime_figures", "draw_expressible_figure", "draw_size_map"]

_REGIME_COLOURS = {"lazy": "C0", "lazy_long": "C4", "converged": "C3", "frozen_heads": "C2", "separate_models": "C1"}


def _panels(n: int, width: float, height: float, margin: float, **options):
    """``(figure, axes)`` of ``n`` panels of ``width × height``, three a row at most; unused ones off."""
    plt = pyplot()
    cols = min(3, max(1, n))
    rows = (max(1, n) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows + margin), squeeze=False, **options)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    return fig, axes


def draw_recipe_figure(summaries, path) -> Path:
    """α with its interval for each training recipe and the envelope, one panel per setting.

    Notes
    -----
    No example: it writes a figure (``tests/test_certified.py``).
    """
    from matplotlib import ticker

    summaries = [s for s in summaries if any(np.isfinite(r.alpha) for r in s.recipes)]
    order = recipe_order(summaries)
    fig, axes = _panels(len(summaries), 4.4, 3.0, 0.9, sharey=True)
    x = np.arange(len(order))
    for ax, s in zip(axes.flat, summaries):
        by_name = {r.name: r for r in s.recipes}
        for i, name in enumerate(order):
            r = by_name.get(name)
            if r is None or not np.isfinite(r.alpha):
                continue
            colour = "C3" if name == "envelope" else ("C0" if name in ("lazy", "equal_budget") else "C7")
            # an unbounded interval, or a fit no single α describes, is drawn faint, its marker open
            resolved = bounded(r) and (r.dof <= 0 or r.fit_reported)
            ax.errorbar([i], [r.alpha], yerr=[[r.alpha - r.alpha_lo], [r.alpha_hi - r.alpha]], fmt="o",
                        color=colour, capsize=3, alpha=1.0 if resolved else 0.35,
                        markerfacecolor=colour if resolved else "white")
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_yscale("log")
        ax.set_ylim(ALPHA_GRID[0] * 0.8, ALPHA_GRID[-1] * 1.25)
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xticks(x)
        ax.set_xticklabels([RECIPE_LABELS.get(n, n) for n in order], rotation=35, ha="right", fontsize=7)
        ax.set_title(f"{setting_label(s.setting)}, L = {s.depths[0]}–{s.depths[-1]}", fontsize=9)
    for ax in axes[:, 0]:
        ax.set_ylabel("α (profile interval)")
    fig.suptitle("depth-law exponent by way of training, each recipe's finding (dashed: the paper's α = 1)\n"
                 "blue: the lazy and equal-budget recipes; grey: the cold starts and the heads; red: the certified "
                 "envelope; faint, open: the gains do not bound α, or no single α fits them "
                 f"(χ²/dof > {GAIN_LAW_MAX_CHI2_DOF:g})", fontsize=9)
    height = 3.0 * axes.shape[0] + 0.9
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.6 / height))  # room for the two-line title
    return save_figure(fig, path)


def draw_certified_figure(summaries, path) -> Path:
    """R*_L, B_L and the cold recipe against L, one panel per setting, one shared legend.

    Notes
    -----
    No example: it writes a figure (``tests/test_certified.py``).
    """
    from matplotlib import ticker

    fig, axes = _panels(len(summaries), 4.2, 3.3, 0.4)
    for ax, s in zip(axes.flat, summaries):
        L = np.asarray(s.depths)
        ax.errorbar(L, s.R.mean, yerr=s.R.se, marker="o", label="envelope R*_L (certified starts)")
        ax.plot(L, s.B, "k--", label="B_L: heads on the same contexts")
        ax.errorbar(L, s.recipe, yerr=s.recipe_se, marker="s", alpha=0.7, label="recipe: cold, lr 1e-3")
        depth_ticks(ax, L)
        ax.yaxis.set_major_formatter(ticker.ScalarFormatter(useOffset=False))  # as many decimals as the ticks need
        ax.set_title(f"{setting_label(s.setting)}\n{s.verdict}", fontsize=9)
        ax.set_ylabel("held-out loss")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.suptitle("error bars: ± one SE of the level, mostly the report set's own sampling error, common to every "
                 "depth; differences between depths are paired and far tighter (the page's certificates)", fontsize=9)
    height = 3.3 * axes.shape[0] + 0.4
    fig.tight_layout(rect=(0, 0.4 / height, 1, 1 - 0.3 / height))
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    return save_figure(fig, path)


def draw_revised_figure(facts: dict, path) -> Path | None:
    """The revised study against U_L: ``R*_L − U_L`` per depth (paired, ± SE), and each long-cap run, per spectrum.

    Zero is U_L's heads on the same contexts: a point below it is a trained model the theory's construction does
    not reach. None (nothing drawn) without a depth done.

    Notes
    -----
    No example: it writes a figure (``tests/test_certified_revised.py``).
    """
    spectra = sorted({(r["a"], r["b"]) for r in facts["envelope"]})
    if not spectra:
        return None
    fig, axes = _panels(len(spectra), 4.2, 3.2, 0.0)
    markers = {"cold": "v", "expressible": "^", "oracle": "s", "nested": "D", "diverse": "P"}
    for ax, (a, b) in zip(axes.flat, spectra):
        rows = [r for r in facts["envelope"] if (r["a"], r["b"]) == (a, b)]
        L = np.array([r["depth"] for r in rows], dtype=float)
        ax.axhline(0.0, color="k", lw=1, ls="--", label="U_L: the theory's heads, untrained (same contexts)")
        ax.errorbar(L, [r["gap"]["value"] for r in rows], yerr=[r["gap"]["se"] for r in rows], marker="o", capsize=3,
                    label="envelope R*_L − U_L (mean over seeds)")
        long = [r for r in facts["long"] if (r["a"], r["b"]) == (a, b)]
        steps = sorted({r["steps"] for r in long})
        for r in long:
            shift = 1.0 + 0.08 * (steps.index(r["steps"]) + 1) * (1 if r["start"] == "cold" else -1)
            ax.errorbar(r["depth"] * shift, r["gap"]["value"], yerr=r["gap"]["se"], ls="none", capsize=2,
                        marker=markers.get(r["start"], "x"), alpha=0.4 + 0.6 * (steps.index(r["steps"]) + 1) / len(steps),
                        color="C1" if r["start"] == "cold" else "C2",
                        label=f"long cap: {r['start']} lr={r['learning_rate']:g}, S={r['steps']}")
        depth_ticks(ax, L)
        ax.set_title(f"(a, b) = ({a:g}, {b:g})", fontsize=9)
        ax.set_ylabel("loss − U_L (paired)")
    return _save_with_legend(fig, axes, path, "below 0: a trained model beats the theory's best construction U_L; "
                                              "error bars: ± one paired SE (report contexts)")


def _legend_entries(axes) -> tuple[list, list]:
    """Every panel's legend handles and labels, each label once, in the order the panels first show them."""
    handles, labels = [], []
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    return handles, labels


def _save_with_legend(fig, axes, path, title: str) -> Path:
    """One legend below the panels (each label once, two a row), ``title`` above them; the figure saved."""
    handles, labels = _legend_entries(axes)
    legend = 0.2 + 0.2 * ((len(labels) + 1) // 2)  # inches: two legend entries a row
    height = 3.2 * axes.shape[0] + 0.3 + legend
    fig.set_size_inches(fig.get_size_inches()[0], height)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, legend / height, 1, 1 - 0.3 / height))
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8, frameon=False)
    return save_figure(fig, path)


def draw_decomposition_figure(facts: dict, path) -> Path | None:
    """The winners' ``C_L`` and ``A_L − C_L`` per depth (eq. 63; the paper's Fig. 6c/d), per spectrum.

    The c/L law needs both flat in L; the dotted line holds ``A_L − C_L`` at its L = 2 value. Error bars:
    ± one SE over seeds. None (nothing drawn) without a depth ≥ 2 done.

    Notes
    -----
    No example: it writes a figure (``tests/test_certified_revised.py``).
    """
    rows = [r for r in facts.get("decomposition", ()) if r["A_minus_C"] is not None]
    spectra = sorted({(r["a"], r["b"]) for r in rows})
    if not spectra:
        return None
    fig, axes = _panels(len(spectra), 4.2, 3.2, 0.0)
    for ax, (a, b) in zip(axes.flat, spectra):
        mine = [r for r in rows if (r["a"], r["b"]) == (a, b)]
        L = np.array([r["depth"] for r in mine], dtype=float)
        for key, label, color in (("A_minus_C", "A_L − C_L (layers' disagreement)", "C0"),
                                  ("C", "C_L (shared error)", "C3")):
            ax.errorbar(L, [r[key]["value"] for r in mine], yerr=[r[key]["se"] for r in mine], marker="o", capsize=3,
                        color=color, label=label)
        ax.axhline(mine[0]["A_minus_C"]["value"], color="C0", ls=":", lw=1,
                   label="A_L − C_L held at its first depth (what c/L needs)")
        depth_ticks(ax, L)
        ax.set_title(f"(a, b) = ({a:g}, {b:g})", fontsize=9)
        ax.set_ylabel("loss terms of eq. 63")
    return _save_with_legend(fig, axes, path, "R*_L = C_L + (A_L − C_L)/L of the winners; error bars: ± one SE over "
                                              "seeds")


def draw_excess_figure(rows, path) -> Path:
    """The excess over the infinite-mixture limit, ``R_L − R*_∞``, against L on log–log axes, one panel a spectrum.

    ``rows`` (one a spectrum, from :func:`~numerics.experiments.study.certified.excess.excess_rows`): the trained
    envelope ``R*_L`` with its SE, ``U_L`` (models built by hand) and ``R*_∞``'s bracket. ``R*_∞`` lies between
    its lower estimate (the fit-set optimum minus the Frank–Wolfe gap) and the least of its upper estimate (the
    fitted mixture's report-set loss) and every ``U_L`` (each depth is a mixture of heads, so ``R*_∞ ≤ U_L``):
    :func:`~numerics.experiments.study.certified.excess.plateau_bracket`. Each curve's excess is therefore a
    band: its markers are the excess over the lower end (the largest it can be), the band reaches down to the
    excess over the upper end (clipped at the panel's floor where it is not positive). A power law
    ``c L^-α`` is a straight line: dashed, α = 1 through the envelope's L = 1 marker; dotted, the α the head
    kernel's eigen-decay predicts for balanced heads.

    References
    ----------
    Paper eq. (16) (``R_L = L0 + c L^-α``); eqs. (59)-(63) (the model as an average of heads).

    Notes
    -----
    No example: it writes a figure (``tests/test_certified_excess.py``).
    """
    from .certified.excess import plateau_bracket

    fig, axes = _panels(len(rows), 3.8, 3.1, 1.0)
    for ax, row in zip(axes.flat, rows):
        ax.set_title(row["label"], fontsize=10)
        if row.get("plateau") is None:
            ax.text(0.5, 0.5, "R*_∞ not shipped\n(idepth bracket compute)", ha="center", va="center",
                    transform=ax.transAxes, fontsize=9)
            ax.axis("off")
            continue
        depth_ticks(ax, row["depths"])
        L = np.asarray(row["depths"], dtype=float)
        low, high = plateau_bracket(row)
        curves = [("trained envelope R*_L", "C0", "o", np.asarray(row["envelope"]), np.asarray(row["envelope_se"]))]
        if row.get("U") is not None:
            curves.append(("U_L (built by hand)", "C1", "s", np.asarray(row["U"]), np.asarray(row["U_se"])))
        floor = excess_floor([R - low for _, _, _, R, _ in curves])
        for name, colour, marker, R, se in curves:
            excess_band(ax, L, R, se, low, high, floor, colour=colour, marker=marker, label=name)
        first = row["envelope"][0] - low
        if first > 0:
            ax.plot(L, first / L, "k--", lw=0.9, label="α = 1")
            alpha = row.get("alpha_predicted")
            if alpha is not None and np.isfinite(alpha):
                ax.plot(L, first * L ** -alpha, "k:", lw=1.1, label="α predicted by the head kernel")
        ax.set_yscale("log")
        ax.set_ylim(bottom=floor * 0.8)
        ax.set_ylabel(r"$R_L - R^*_\infty$")
    handles, labels = _legend_entries(axes)
    fig.legend(handles, labels, loc="lower center", ncol=4, frameon=False, fontsize=9)
    height = 3.1 * axes.shape[0] + 1.0
    fig.tight_layout(rect=(0, 0.7 / height, 1, 1))
    return save_figure(fig, path)


# --------------------------------------------------------------------------- the other studies

def draw_regime_figures(s, points, bounds) -> dict:
    """One figure per (size, spectrum): each regime's ``R_L``, fit and bounds; ``C_L``, ``A_L − C_L``.

    ``s``: the study's :class:`~numerics.experiments.study.regime_plans.StudyScale`.

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
                colour, label = _REGIME_COLOURS[p.name], p.name.replace("_", " ")
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


def draw_expressible_figure(lazy_rows: list):
    """The figure (not written): per spectrum, the lazy recipe's trained ``R_L`` (dots) and its law, gain 1 (lines).

    Notes
    -----
    No example: it needs the checks' rows.
    """
    from matplotlib import ticker

    fig, ax = pyplot().subplots(figsize=(6.4, 4.4))
    for i, (a, b) in enumerate(dict.fromkeys((r.a, r.b) for r in lazy_rows)):
        rows = sorted((r for r in lazy_rows if (r.a, r.b) == (a, b)), key=lambda r: r.depth)
        L, colour = [r.depth for r in rows], f"C{i % 10}"
        ax.errorbar(L, [r.trained for r in rows], yerr=[r.trained_se for r in rows], color=colour, marker="o",
                    ms=3, ls="none", capsize=2)
        ax.plot(L, [r.law_fixed for r in rows], color=colour, lw=1.2, label=f"({a:g}, {b:g})")
    depth_ticks(ax, sorted({r.depth for r in lazy_rows}))
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(ticker.FixedLocator([0.2, 0.3, 0.5, 1, 2, 3, 5, 10]))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set(ylabel="loss", title="lazy recipe: trained (dots) vs its exchangeable law, gain 1 (lines)")
    if lazy_rows:
        ax.legend(title="(a, b)", fontsize=8, ncol=2)
    fig.tight_layout()
    return fig


def draw_size_map(result, path) -> Path:
    """χ² maps of B_∞ and B_1 over the (d, P) grid (log colour scale) of a
    :class:`~numerics.experiments.study.plateaus.SizeInference` ``result``, the best size marked.

    Notes
    -----
    No example: it needs a :class:`~numerics.experiments.study.plateaus.SizeInference` (minutes).
    """
    from matplotlib.colors import LogNorm

    fig, axes = pyplot().subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    panels = ((result.chi2_mixture, result.best_mixture, result.region_mixture, "B_∞ (best mixture of heads)"),
              (result.chi2_single, result.best_single, result.region_single, "B_1 (best single head)"))
    for ax, (chi2, best, region, name) in zip(axes, panels):
        finite = chi2[np.isfinite(chi2) & (chi2 > 0)]
        norm = LogNorm(vmin=max(finite.min(), 1e-3), vmax=finite.max()) if finite.size else None
        image = ax.imshow(np.where(chi2 > 0, chi2, np.nan), origin="lower", aspect="auto", cmap="viridis_r",
                          norm=norm)
        ax.set_xticks(range(len(result.P_values)), [str(P) for P in result.P_values])
        ax.set_yticks(range(len(result.d_values)), [str(d) for d in result.d_values])
        ax.set_xlabel("context length P")
        ax.set_ylabel("input dimension d")
        for d, P in region:
            ax.plot(result.P_values.index(P), result.d_values.index(d), "s", ms=14, mfc="none", mec="w",
                    mew=1.2)
        ax.plot(result.P_values.index(best[1]), result.d_values.index(best[0]), "r*", ms=14,
                label=f"best: d = {best[0]}, P = {best[1]}")
        ax.set_title(f"χ² of {name}\nvs the paper's 14 nonlinear plateaus", fontsize=9)
        ax.legend(loc="upper right", fontsize=8)
        fig.colorbar(image, ax=ax, label="χ²")
    return save_figure(fig, path, dpi=120)
