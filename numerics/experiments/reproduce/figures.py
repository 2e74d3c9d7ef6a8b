"""The paper's figures, redrawn from a reproduction's runs (PNG and PDF).

Every builder takes a :class:`numerics.experiments.reproduce.context.ReproductionContext`
and returns a :class:`Figure`: the files written under ``OUT/figures/`` and a
caption stating what is plotted and the key numbers. Conventions:
labelled axes, log-log where the paper's are, one colour, marker and line
style and one legend entry per spectrum ``(a, b)`` (so curves that coincide
stay distinguishable; where many would lie on top of each other, one panel per
spectrum), fitted laws dashed with their exponents in the legend, and on every
nonlinear depth plot the oracle bound of :mod:`numerics.experiments.bounds` (best single
softmax head at the same ``(d, P, k)``) as a dash-dotted horizontal line in
the spectrum's colour. A fit that does not determine its exponent (no fit, no
standard error, or ``α`` within one standard error of 0: a flat curve) is not
drawn; its legend entry says why (:func:`fit_problem`). Error bars are one
standard error (over seeds, or of the held-out mean with one seed). A family
without data (not run, or all runs failed) gives a figure that says so
instead of failing.

Files are written atomically by :func:`numerics.io.save_figure`.
"""

from __future__ import annotations

import math
import textwrap
from typing import Callable

import numpy as np

from . import _plot as p
from . import analysis
from ._plot import STYLES, Figure, fit_problem
from .results import Curve, int_list, spectrum_label

__all__ = ["Figure", "BUILDERS", "build_figure", "fit_problem", "reducible_mode_spread", "STYLES"]

# ------------------------------------------------------------------------------------------- nonlinear plots


def _nonlinear_depth_panel(ctx, ax, family_name: str, spectra, *, title: str, caption_parts: list,
                           quantity: str = "R_L", with_fit: bool = True, with_bound: bool = True) -> bool:
    family = ctx.family(family_name)
    colours = p.colours(len(spectra))
    drawn = False
    for index, (colour, (a, b)) in enumerate(zip(colours, spectra)):
        s = analysis.nonlinear_summary(ctx, family_name, a, b)
        curve = {"R_L": s.R, "C_L": s.C, "A_minus_C": s.gap}[quantity]
        marker, style = p.style(index)
        # with fits (dashed) on the plot the data stay solid; the marker tells the spectra apart
        if not p.errorbar(ax, curve, colour, f"{s.label}", marker=marker, linestyle="-" if quantity == "R_L" else style):
            continue
        drawn = True
        if quantity == "R_L":
            if with_fit:
                p.plot_fit(ax, s.fit, family.depths, colour, f"fit {s.label}")
                caption_parts.append(f"{s.label}: {p.fit_label(s.fit)}, R_1/R_Lmax = {s.depth_gain:.3g}")
            if with_bound and s.bound:
                p.plot_bound(ax, s.bound, colour, f"oracle single head {s.label}: {s.bound['single_head_loss']:.3g}")
        else:
            change = s.C_change if quantity == "C_L" else s.gap_change
            caption_parts.append(f"{s.label}: change over the last doubling {100 * change:.1f} %")
    p.depth_axis(ax, family.depths, logy=(quantity == "R_L"))
    ax.set_title(title, fontsize=9)
    if not drawn:
        p.no_data(ax, p.missing(ctx, family_name))
    return drawn


def _converged_panel(ctx, ax, quantity: str, select: Callable[[float, float], bool], caption_parts: list) -> bool:
    """The converged study's ``quantity`` (``R_L``, ``C_L``, ``A_minus_C``) against depth for the top-2 spectra
    ``select(a, b)`` of the table: mean over seeds ± 1 SE, with the paper's Table 1 plateau for ``R_L``/``C_L``."""
    from theory.paper import paper_table

    table = ctx.converged
    if table is None:
        p.no_data(ax, f"no converged-study table ({ctx.converged_error})")
        return False
    groups = [g for g in table.groups() if g[2] == 2 and select(g[0], g[1])]
    colours = p.colours(max(len(groups), 1))
    plateaus = {(float(r["a"]), float(r["b"])): r["nonlinear_L0"] for r in paper_table("table1")}
    for index, (colour, (a, b, k, N)) in enumerate(zip(colours, groups)):
        s = table.summary(a, b, k, N=N)
        values = {"R_L": (s.R, s.R_se), "C_L": (s.C, np.full_like(s.C, np.nan)),
                  "A_minus_C": (s.gap, np.full_like(s.gap, np.nan))}[quantity]
        mean, se = values
        curve = Curve(quantity, a, b, np.asarray(s.depths), mean[None, :], mean, se, np.full(len(s.depths), s.n_seeds),
                      "seeds")
        marker, style = p.style(index)
        p.errorbar(ax, curve, colour, s.label, marker=marker, linestyle=style)
        if quantity in ("R_L", "C_L") and (a, b) in plateaus:
            ax.axhline(plateaus[(a, b)], color=colour, lw=0.9, ls=(0, (1, 2)))
        if quantity == "R_L" and s.fit is not None:
            caption_parts.append(f"converged {s.label}: R_1 − R_{s.depths[-1]} = {s.gain[-1]:+.3f} ± {s.gain_se[-1]:.3f}, "
                                 f"α = {s.fit.alpha:.2g} (2σ {s.fit.interval_text()})")
    p.depth_axis(ax, sorted({L for g in groups for L in table.summary(*g[:3], N=g[3]).depths}) or [1],
                 logy=False)
    r = table.rows[0]
    ax.set_title(f"converged study, top-2 (d = {r['d']}, N = {2 * r['d']}, P = {r['P']})"
                 + ("\ndotted: the paper's L0" if quantity in ("R_L", "C_L") else ""), fontsize=9)
    if not groups:
        p.no_data(ax, "no such spectrum in the converged study")
    return bool(groups)


def _fig6ab(ctx, artefact_id: str, *, fixed: str) -> Figure:
    plt = p.pyplot()
    family = ctx.family("nonlinear_lazy")
    if fixed == "a":
        spectra = analysis.spectra_of(ctx, "nonlinear_lazy", a=0.0)
        title = f"softmax, top-{family.k}, a = 0, varying b ({p.sizes(family)}, {p.regime(family)})"
    else:
        spectra = analysis.spectra_of(ctx, "nonlinear_lazy", b=0.0)
        title = f"softmax, top-{family.k}, b = 0, varying a ({p.sizes(family)}, {p.regime(family)})"
    fig, (ax, right) = plt.subplots(1, 2, figsize=(12.0, 4.6), constrained_layout=True)
    parts: list[str] = []
    _converged_panel(ctx, right, "R_L", (lambda a, b: a == 0.0) if fixed == "a" else (lambda a, b: b == 0.0), parts)
    right.set_ylabel("held-out loss R_L")
    p.legend(right)
    _nonlinear_depth_panel(ctx, ax, "nonlinear_lazy", spectra, title="lazy contrast: " + title, caption_parts=parts)
    if artefact_id == "fig6a" and ctx.ran("nonlinear_converged"):
        conv = ctx.family("nonlinear_converged")
        for (a, b) in conv.spectra:
            if (a, b) not in spectra:
                continue
            curve = ctx.results.curve(conv, a, b, "R_L")
            if p.errorbar(ax, curve, "0.45", f"{spectrum_label(a, b)} equal step budget, every parameter", marker="s",
                         linestyle=":"):
                gain = curve.finite()
                parts.append(f"equal-budget training {spectrum_label(a, b)}: R_L = "
                             + ", ".join(f"{v:.3g}" for v in gain.mean) + f" at L = {int_list(gain.depths)}")
    ax.set_ylabel("held-out loss R_L")
    p.legend(ax, ncol=1, loc="upper right")
    paths = p.save(ctx, fig, artefact_id)
    caption = (f"R_L against depth, softmax attention on the top-{family.k} task. Right: the converged study (each "
               "depth trained to its own convergence rule, ±1 SE; dotted: the paper's Table 1 plateau). Left, the lazy "
               f"contrast, {family.regime}; dashed: fit of R_L = L0 + c L^-α (eq. 16); dash-dotted: best single softmax "
               "head (oracle bound). " + "; ".join(parts))
    return Figure(artefact_id, paths, caption)


def fig6a(ctx) -> Figure:
    """Fig. 6a: R_L against L at a = 0 for varying b (softmax, top-2), fits, oracle bounds, converged runs.

    References
    ----------
    Paper Fig. 6a; eqs. (16), (60).
    """
    return _fig6ab(ctx, "fig6a", fixed="a")


def fig6b(ctx) -> Figure:
    """Fig. 6b: R_L against L at b = 0 for varying a (softmax, top-2), fits and oracle bounds.

    References
    ----------
    Paper Fig. 6b; eqs. (16), (60).
    """
    return _fig6ab(ctx, "fig6b", fixed="b")


def _fig6cd(ctx, artefact_id: str, quantity: str, ylabel: str) -> Figure:
    plt = p.pyplot()
    family = ctx.family("nonlinear_lazy")
    fig, (ax, right) = plt.subplots(1, 2, figsize=(12.0, 4.4), constrained_layout=True)
    parts: list[str] = []
    _nonlinear_depth_panel(ctx, ax, "nonlinear_lazy", family.spectra, quantity=quantity, caption_parts=parts,
                           title=f"lazy contrast: softmax, top-{family.k} ({p.sizes(family)}, {p.regime(family)})")
    ax.set_ylabel(ylabel)
    p.legend(ax)
    _converged_panel(ctx, right, quantity, lambda a, b: True, parts)
    right.set_ylabel(ylabel)
    p.legend(right)
    paths = p.save(ctx, fig, artefact_id)
    conv = ""
    if ctx.converged is not None:
        conv = ("Right: the converged study (mean over seeds; dotted: the paper's Table 1 plateau, which C_L approaches "
                "in the paper's Fig. 6c). " if quantity == "C_L" else "Right: the converged study (mean over seeds). ")
    return Figure(artefact_id, paths, f"{ylabel} against depth (eqs. 61-63). {conv}Left: the lazy contrast. "
                  + "; ".join(parts))


def fig6c(ctx) -> Figure:
    """Fig. 6c: the shared error C_L against depth.

    References
    ----------
    Paper Fig. 6c; eqs. (61)-(63).
    """
    return _fig6cd(ctx, "fig6c", "C_L", "shared error C_L")


def fig6d(ctx) -> Figure:
    """Fig. 6d: the layer disagreement A_L − C_L against depth.

    References
    ----------
    Paper Fig. 6d; eqs. (61)-(63).
    """
    return _fig6cd(ctx, "fig6d", "A_minus_C", "disagreement A_L − C_L")


def _model_figure(ctx, artefact_id: str, family_name: str, name: str, paper: str) -> Figure:
    plt = p.pyplot()
    family = ctx.family(family_name)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 4.2), constrained_layout=True)
    parts: list[str] = []
    _nonlinear_depth_panel(ctx, left, family_name, family.spectra, caption_parts=parts,
                           title=f"{name}: R_L ({p.sizes(family)}, top-{family.k})")
    left.set_ylabel("held-out loss R_L")
    p.legend(left)
    colours = p.colours(len(family.spectra))
    drawn = False
    for colour, (a, b) in zip(colours, family.spectra):
        s = analysis.nonlinear_summary(ctx, family_name, a, b, with_bound=False)
        here = p.errorbar(right, s.C, colour, f"C_L {s.label}")
        here |= p.errorbar(right, s.gap, colour, f"A_L − C_L {s.label}", marker="^", linestyle="--")
        drawn |= here
        if here:
            parts.append(f"{s.label}: C_L changes {100 * s.C_change:.1f} %, A_L − C_L {100 * s.gap_change:.1f} % "
                         "over the last doubling")
    p.depth_axis(right, family.depths, logy=False)
    right.set_ylabel("C_L and A_L − C_L")
    right.set_title(f"{name}: decomposition R_L = C_L + (A_L − C_L)/L", fontsize=9)
    if not drawn:
        p.no_data(right, p.missing(ctx, family_name))
    p.legend(right)
    paths = p.save(ctx, fig, artefact_id)
    return Figure(artefact_id, paths, f"{name} ({paper}), {family.regime}. " + "; ".join(parts))


def fig9(ctx) -> Figure:
    """Fig. 9: single-stream model, R_L and its decomposition against depth.

    References
    ----------
    Paper Fig. 9; eqs. (64)-(70).
    """
    return _model_figure(ctx, "fig9", "single_stream", "single stream", "appendix C.1")


def fig10(ctx) -> Figure:
    """Fig. 10: untied values, R_L and its decomposition against depth.

    References
    ----------
    Paper Fig. 10; eqs. (71)-(74).
    """
    return _model_figure(ctx, "fig10", "untied_values", "untied values", "appendix C.2")


def fig14(ctx) -> Figure:
    """Fig. 14: softmax attention on the top-16 task for broader spectra, fits and oracle bounds.

    References
    ----------
    Paper Fig. 14; Table 4.
    """
    plt = p.pyplot()
    family = ctx.family("nonlinear_k16")
    fig, ax = plt.subplots(figsize=(6.4, 4.6), constrained_layout=True)
    parts: list[str] = []
    _nonlinear_depth_panel(ctx, ax, "nonlinear_k16", family.spectra, caption_parts=parts,
                           title=f"softmax, top-{family.k} ({p.sizes(family)}, {p.regime(family)})")
    ax.set_ylabel("held-out loss R_L")
    p.legend(ax)
    paths = p.save(ctx, fig, "fig14")
    return Figure("fig14", paths, f"R_L against depth on the top-{family.k} task; dashed: fits of eq. (16); "
                                  "dash-dotted: oracle single-head bound. " + "; ".join(parts))


def fig11(ctx) -> Figure:
    """Fig. 11: context updates M(m), R_L against depth for top-2 and top-16, fits and oracle bounds.

    A fit that does not determine its exponent (flat curves) is not drawn; the
    legend says why (:func:`fit_problem`).

    References
    ----------
    Paper Fig. 11; eqs. (75)-(82).
    """
    plt = p.pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.6), constrained_layout=True)
    parts: list[str] = []
    drawn = False
    colours = p.colours(4)
    index = 0
    for family_name in ("context_updates", "context_updates_k16"):
        family = ctx.family(family_name)
        for (a, b) in family.spectra:
            colour = colours[index % 4]
            marker, _ = p.style(index)
            index += 1
            s = analysis.nonlinear_summary(ctx, family_name, a, b)
            label = f"top-{family.k} {s.label}"
            if not p.errorbar(ax, s.R, colour, label, marker=marker):
                continue
            drawn = True
            p.plot_fit(ax, s.fit, family.depths, colour, f"fit top-{family.k}")
            p.plot_bound(ax, s.bound, colour, f"oracle single head top-{family.k}: "
                                             f"{s.bound['single_head_loss']:.3g}" if s.bound else None)
            parts.append(f"top-{family.k} {s.label}: {p.fit_label(s.fit)}, R_1/R_Lmax = {s.depth_gain:.3g}")
    family = ctx.family("context_updates")
    p.depth_axis(ax, family.depths)
    ax.set_ylabel("held-out loss R_L")
    ax.set_title(f"context updates M(m), learned m ({p.sizes(family)}, {p.regime(family)})", fontsize=9)
    if not drawn:
        p.no_data(ax, p.missing(ctx, "context_updates"))
    p.legend(ax)
    paths = p.save(ctx, fig, "fig11")
    return Figure("fig11", paths, "Context-update model: R_L against depth for top-2 and top-16 (paper: top-2 keeps "
                                  "a 1/L trend, top-16 saturates); dashed: fits of eq. (16) where they determine α "
                                  "(a fit that does not is not drawn, the legend says why). " + "; ".join(parts))


def fig12(ctx) -> Figure:
    """Fig. 12: learned m against depth, and layer 1's context attention A_1 (top-2 and top-16).

    References
    ----------
    Paper Fig. 12; eqs. (83)-(84).
    """
    plt = p.pyplot()
    fig = plt.figure(figsize=(8.0, 7.0), constrained_layout=True)
    grid = fig.add_gridspec(2, 2)
    axes = [fig.add_subplot(grid[0, :]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])]
    parts: list[str] = []
    drawn = False
    for colour, family_name in zip(p.colours(2), ("context_updates", "context_updates_k16")):
        family = ctx.family(family_name)
        (a, b) = family.spectra[0]
        # at L = 1 no later layer reads the updated context: m gets no gradient and stays at its initial 0
        m_curve = _without_depth_1(ctx.results.curve(family, a, b, "m"))
        rho_curve = ctx.results.curve(family, a, b, "rho")
        marker, style = p.style(len(parts))
        if p.errorbar(axes[0], m_curve, colour, f"m, top-{family.k}", marker=marker, linestyle=style):
            drawn = True
            last = m_curve.finite()
            rho = rho_curve.finite()
            parts.append(f"top-{family.k}: learned m = " + ", ".join(f"{v:.3g}" for v in last.mean)
                         + f" at L = {int_list(last.depths)}; ρ = "
                         + ", ".join(f"{v:.3g}" for v in rho.mean) + f" at L = {int_list(rho.depths)}")
    p.depth_axis(axes[0], ctx.family("context_updates").depths, logy=False)
    axes[0].axhline(0.0, color="0.6", lw=0.8)
    if 1 in ctx.family("context_updates").depths:
        p.note(axes[0], "L = 1 not shown: m is not used there")
    axes[0].set_ylabel("learned context-update scalar m")
    axes[0].set_title("m (paper: ≈ −2.3 for top-16)", fontsize=9)
    if not drawn:
        p.no_data(axes[0], p.missing(ctx, "context_updates"))
    p.legend(axes[0])
    for ax, family_name in zip(axes[1:], ("context_updates", "context_updates_k16")):
        family = ctx.family(family_name)
        (a, b) = family.spectra[0]
        depth = max(family.depths)
        config = family.config(a, b, depth, family.seeds[0])
        A1 = ctx.results.arrays(config).get("A1_example")
        rho = ctx.results.metrics(config).get("rho", math.nan)
        if A1 is None:
            p.no_data(ax, p.missing(ctx, family_name))
            ax.set_axis_off()
            continue
        image = ax.imshow(np.asarray(A1), cmap="viridis", aspect="equal")
        fig.colorbar(image, ax=ax, shrink=0.8)
        ax.set_title(f"A_1, top-{family.k}, L = {depth}, one context\n(ρ = {float(rho):.3g})", fontsize=9)
        ax.set_xlabel("key token j")
        ax.set_ylabel("query token i")
    paths = p.save(ctx, fig, "fig12")
    return Figure("fig12", paths, "Learned m (depths L ≥ 2: at L = 1 no later layer reads the updated context, so m "
                                  "is not learned) and layer 1's context attention A_1 ≈ ρ I + (1 − ρ) J (eq. 83; "
                                  "paper: ρ_2 = 0.9999, ρ_16 = 0.0989, m ≈ −2.3 for top-16). " + "; ".join(parts))


def _without_depth_1(curve: Curve) -> Curve:
    keep = np.asarray(curve.depths) != 1
    return Curve(curve.quantity, curve.a, curve.b, np.asarray(curve.depths)[keep], np.asarray(curve.values)[:, keep],
                 np.asarray(curve.mean)[keep], np.asarray(curve.se)[keep], np.asarray(curve.n_seeds)[keep],
                 curve.se_kind)


def _panel_grid(n: int, *, ncols: int, width: float = 3.3, height: float = 3.0, sharey: bool = False):
    """``n`` small multiples in rows of ``ncols`` (unused cells hidden); returns (figure, list of axes)."""
    plt = p.pyplot()
    n = max(n, 1)
    ncols = min(ncols, n)
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols + 0.6, height * nrows + 0.5), squeeze=False,
                             sharey=sharey, constrained_layout=True)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def fig13(ctx) -> Figure:
    """Fig. 13: selection-error percentiles Q_L(q), L = 1 against the deepest model, one panel per spectrum.

    References
    ----------
    Paper Fig. 13; eqs. (90)-(91).
    """
    family = ctx.family("nonlinear_lazy")
    levels = (0.5, 0.9, 0.95, 0.99)
    deepest = max(family.depths)
    shallow = min(family.depths)
    spectra = family.spectra
    # one panel per spectrum: the spectra's percentiles nearly coincide, on one axes they hide each other
    fig, axes = _panel_grid(len(spectra), ncols=3, sharey=True)
    parts: list[str] = []
    drawn = False
    x = np.arange(len(levels))
    for ax, colour, (a, b) in zip(axes, p.colours(len(spectra)), spectra):
        here = False
        for index, depth in enumerate((shallow, deepest)):
            marker, style = p.style(index)
            mean, se = analysis.selection_quantiles(ctx, "nonlinear_lazy", a, b, depth, levels)
            if not np.any(np.isfinite(mean)):
                continue
            here = drawn = True
            ax.errorbar(x, mean, yerr=np.where(np.isfinite(se), se, 0.0), color=colour if index else "0.35",
                        ls=style, marker=marker, ms=4, capsize=2, label=f"L = {depth}")
        m1, _ = analysis.selection_quantiles(ctx, "nonlinear_lazy", a, b, shallow, levels)
        mL, _ = analysis.selection_quantiles(ctx, "nonlinear_lazy", a, b, deepest, levels)
        if np.all(np.isfinite(m1)) and np.all(np.isfinite(mL)):
            parts.append(f"{spectrum_label(a, b)}: ΔQ(q) = Q_{shallow} − Q_{deepest} = "
                         + ", ".join(f"{d:.3g}" for d in (m1 - mL)) + f" at q = {', '.join(map(str, levels))}")
        ax.set_xticks(x, [f"{q:g}" for q in levels])
        ax.set_yscale("log")
        ax.set_xlabel("percentile level q")
        ax.set_title(f"spectrum {spectrum_label(a, b)}", fontsize=9)
        ax.grid(True, which="major", alpha=0.3)
        if not here:
            p.no_data(ax, p.missing(ctx, "nonlinear_lazy"))
        p.legend(ax, loc="upper left")
    axes[0].set_ylabel("selection error percentile Q_L(q)\n(quantile of ‖p̄_L − p*‖² over contexts)")
    fig.suptitle(f"token selection, softmax top-{family.k} ({p.sizes(family)}, {p.regime(family)})", fontsize=10)
    if not drawn and not spectra:
        p.no_data(axes[0], p.missing(ctx, "nonlinear_lazy"))
    paths = p.save(ctx, fig, "fig13")
    return Figure("fig13", paths, "Percentiles of the selection error E_L(c) = ‖p̄_L(c) − p*‖² (eqs. 90-91), one panel "
                                  f"per spectrum; grey solid circles: L = {shallow}, coloured dashed squares: "
                                  f"L = {deepest}. " + "; ".join(parts))


def _reducible(matrix: np.ndarray) -> np.ndarray:
    """``(ℓ_k(L) − ℓ_k(L_max)) / (ℓ_k(1) − ℓ_k(L_max))`` for every mode (rows: depths)."""
    base = matrix[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (matrix - base) / (matrix[0] - base)


def reducible_mode_spread(ctx, family_name: str, spectrum) -> tuple:
    """``(depths, spread)``: std over all modes of the normalised reducible mode loss at each intermediate depth.

    The one computation of this number: the Fig. 7b caption and the verdict on
    parallel learning (:mod:`numerics.experiments.reproduce.report`) both quote it.
    Empty when fewer than three depths have every mode finite.

    References
    ----------
    Paper Fig. 7b.

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.reproduce.context import ReproductionContext
    >>> from numerics.experiments.scales import get_scale
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     reducible_mode_spread(ReproductionContext.open(get_scale("smoke"), tmp), "nonlinear_lazy", (0.5, 0.0))
    ((), array([], dtype=float64))
    """
    depths, matrix = analysis.modewise_matrix(ctx, family_name, *spectrum)
    if matrix.shape[0] < 3 or not np.all(np.isfinite(matrix)):
        return (), np.array([])
    return tuple(int(L) for L in depths[1:-1]), np.nanstd(_reducible(matrix)[1:-1], axis=1)


def _modewise_lines(ax, depths, matrix, *, reducible: bool) -> list:
    d = matrix.shape[1]
    modes = sorted({1, 2, 4, 8, 16, 32, 64, 128, d} & set(range(1, d + 1)))
    colours = p.colours(len(modes))
    if reducible:
        matrix = _reducible(matrix)
        mean, std = np.nanmean(matrix, axis=1), np.nanstd(matrix, axis=1)
        ax.fill_between(depths, mean - std, mean + std, color="0.8", lw=0,
                        label=f"mean ± std over all {d} modes (the spread tested)")
    for index, (colour, mode) in enumerate(zip(colours, modes)):
        marker, style = p.style(index)
        ax.plot(depths, matrix[:, mode - 1], marker=marker, ms=3.5, ls=style, color=colour, label=f"mode k = {mode}")
    return modes


def _modewise_figure(ctx, artefact_id: str, family_name: str, spectrum, *, reducible: bool, title: str) -> Figure:
    plt = p.pyplot()
    family = ctx.family(family_name)
    fig, ax = plt.subplots(figsize=(6.0, 4.3), constrained_layout=True)
    caption = ""
    if spectrum is None:
        p.no_data(ax, f"{family_name}: no spectrum")
    else:
        a, b = spectrum
        depths, matrix = analysis.modewise_matrix(ctx, family_name, a, b)
        if not np.any(np.isfinite(matrix)):
            p.no_data(ax, p.missing(ctx, family_name))
        else:
            modes = _modewise_lines(ax, depths, matrix, reducible=reducible)
            caption = f"spectrum {spectrum_label(a, b)}, modes {modes} drawn"
            spread_depths, spreads = reducible_mode_spread(ctx, family_name, spectrum) if reducible else ((), [])
            if len(spreads):
                caption += (f"; grey band: mean ± std over all {matrix.shape[1]} modes; the spread (std over all "
                            "modes) at the intermediate depths, as in the verdict: "
                            + ", ".join(f"{v:.3f} at L = {L}" for L, v in zip(spread_depths, spreads)))
        p.depth_axis(ax, family.depths, logy=not reducible)
        ax.set_title(title + "\n" + (f"spectrum {spectrum_label(*spectrum)}, " if spectrum else "") + p.sizes(family),
                     fontsize=9)
    ax.set_ylabel("reducible mode loss (ℓ_k(L) − ℓ_k(L_max)) / (ℓ_k(1) − ℓ_k(L_max))" if reducible
                  else "normalised mode loss ℓ_k = E ẽ_k² / E t̃_k²", fontsize=9 if reducible else None)
    p.legend(ax)
    paths = p.save(ctx, fig, artefact_id)
    if reducible:
        title += " (ℓ_k(L) − ℓ_k(L_max)) / (ℓ_k(1) − ℓ_k(L_max)), ℓ_k the normalised mode loss"
    return Figure(artefact_id, paths, title + ". " + caption)


def _mode_spectrum(ctx, family_name: str, prefer_a: float | None = None):
    spectra = ctx.family(family_name).spectra
    if prefer_a is not None:
        for s in spectra:
            if s[0] == prefer_a:
                return s
    anisotropic = [s for s in spectra if s[0] > 0]  # modes differ only when the input spectrum is not flat
    return anisotropic[0] if anisotropic else (spectra[0] if spectra else None)


def fig3c(ctx) -> Figure:
    """Fig. 3c: linear attention, normalised mode-wise loss against depth (strong modes first).

    References
    ----------
    Paper Fig. 3c; eqs. (55)-(56).
    """
    return _modewise_figure(ctx, "fig3c", "linear_easy", _mode_spectrum(ctx, "linear_easy", 2.0), reducible=False,
                            title="linear attention, easy task: normalised mode-wise loss")


def fig7a(ctx) -> Figure:
    """Fig. 7a: softmax attention, normalised mode-wise loss against depth.

    References
    ----------
    Paper Fig. 7a.
    """
    return _modewise_figure(ctx, "fig7a", "nonlinear_lazy", _mode_spectrum(ctx, "nonlinear_lazy"), reducible=False,
                            title="softmax attention, top-2: normalised mode-wise loss")


def fig7b(ctx) -> Figure:
    """Fig. 7b: softmax attention, normalised mode-wise reducible loss against depth (collapse = parallel).

    References
    ----------
    Paper Fig. 7b.
    """
    return _modewise_figure(ctx, "fig7b", "nonlinear_lazy", _mode_spectrum(ctx, "nonlinear_lazy"), reducible=True,
                            title="softmax attention, top-2: normalised reducible mode-wise loss")


# ------------------------------------------------------------------------------------------- linear plots


def _not_run_rows(ctx, fixed: str, value: float) -> list[str]:
    """The paper's Table 2 spectra of this panel that this scale does not run, and why."""
    from theory import PowerLawSpectrum
    from theory.paper import paper_table

    family = ctx.family("linear_easy")
    out = []
    for row in paper_table("table2"):
        a, b = float(row["a"]), float(row["b"])
        if (a if fixed == "a" else b) != value or (a, b) in family.spectra:
            continue
        upper = PowerLawSpectrum(a, b, family.d).condition_number / analysis.WINDOW_MARGIN
        inside = sum(1 for L in family.depths if L <= upper)
        why = (f"not resolvable at d = {family.d} (the window L ≤ d^a/10 = {upper:.2g} holds {inside} of the depths)"
               if inside < 3 else f"not run at scale {ctx.scale.name} (budget)")
        out.append(f"{spectrum_label(a, b)}: {why}")
    return out


def _linear_easy_figure(ctx, artefact_id: str, spectra, title: str, *, fixed: str, value: float) -> Figure:
    """One panel per spectrum: R_L, the fit inside the window, and reference slopes ζ and 2ζ (eq. 34, 40)."""
    family = ctx.family("linear_easy")
    missing = _not_run_rows(ctx, fixed, value)
    fig, axes = _panel_grid(len(spectra) + bool(missing), ncols=2, width=3.6, height=3.1, sharey=True)
    if missing:  # a panel that says which of the paper's spectra are not here, and why
        note = axes.pop()
        note.set_axis_off()
        note.text(0.0, 0.95, "The paper's other spectra of this panel:\n\n" + "\n\n".join(
            textwrap.fill(line, 44) for line in missing), transform=note.transAxes, va="top", ha="left", fontsize=8)
    parts: list[str] = []
    drawn = False
    for ax, colour, (a, b) in zip(axes, p.colours(len(spectra)), spectra):
        s = analysis.linear_easy_summary(ctx, a, b)
        zeta = f"ζ = {s.zeta:.3g}" if s.zeta is not None else "ζ undefined"
        here = p.errorbar(ax, s.R, colour, "measured R_L")
        if here:
            drawn = True
            p.plot_fit(ax, s.fit, s.fit_depths, colour, "fit", floor_fixed=True)
            data = s.R.finite()
            if s.zeta is not None and len(data.depths):
                # the constrained (ζ) and free (2ζ) polynomial laws as slopes through the first measured point
                L = np.geomspace(min(family.depths), max(family.depths), 30)
                L1, R1 = float(data.depths[0]), float(data.mean[0])
                ax.plot(L, R1 * (L / L1) ** (-s.zeta), ls=":", lw=1.2, color="0.35", label=f"slope ζ = {s.zeta:.3g}")
                ax.plot(L, R1 * (L / L1) ** (-2 * s.zeta), ls="-.", lw=1.2, color="0.6",
                        label=f"slope 2ζ = {2 * s.zeta:.3g}")
            if s.window_upper < max(family.depths):
                ax.axvspan(max(s.window_upper, min(family.depths) / 1.3), max(family.depths) * 1.3, color="0.93",
                           lw=0, label=f"outside the window L ≤ {s.window_upper:.3g}")
            where = f" on L ≤ {s.window_upper:.3g}" if p.fit_problem(s.fit) is None else ""
            parts.append(f"{s.label}: {p.fit_label(s.fit, floor_fixed=True)}{where} (ζ = {s.zeta:.3g}, 2ζ = "
                         f"{2 * s.zeta:.3g})" if s.zeta else f"{s.label}: ζ undefined")
        p.depth_axis(ax, family.depths)
        ax.set_title(f"spectrum {s.label}, {zeta}", fontsize=9)
        if not here:
            p.no_data(ax, p.missing(ctx, "linear_easy"))
        p.legend(ax, loc="lower left")
    if axes:
        axes[0].set_ylabel("held-out loss R_L")
    heading = f"{title} ({p.sizes(family)})"
    if len(spectra) == 1:
        heading = f"{title}\nonly {spectrum_label(*spectra[0])} is run at this scale ({p.sizes(family)})"
    fig.suptitle(heading, fontsize=10)
    if axes and not drawn:
        p.no_data(axes[0], p.missing(ctx, "linear_easy"))
    paths = p.save(ctx, fig, artefact_id)
    caption = (f"{title}: R_L against depth, one panel per spectrum; dashed: fit R_L = c L^-α (L0 = 0) on the depths "
               "inside the validity window L ≤ (λ_1/λ_d)/10 (eq. 34, shaded outside); dotted and dash-dotted: the "
               "slopes ζ (constrained polynomial, eq. 34) and 2ζ (free polynomial, eq. 40) through the first point, "
               "between which the paper puts α. " + "; ".join(parts))
    if missing:
        caption += ". The paper's other spectra of this panel: " + "; ".join(missing)
    return Figure(artefact_id, paths, caption + ".")


def fig3a(ctx) -> Figure:
    """Fig. 3a: linear attention, easy task, a = 2 with varying b: R_L, fitted exponents, slopes ζ and 2ζ.

    References
    ----------
    Paper Fig. 3a; eqs. (34), (40).
    """
    return _linear_easy_figure(ctx, "fig3a", analysis.spectra_of(ctx, "linear_easy", a=2.0),
                               "linear attention, easy task, a = 2, varying b", fixed="a", value=2.0)


def fig3b(ctx) -> Figure:
    """Fig. 3b: linear attention, easy task, b = 2 with varying a (the title says which a are run).

    References
    ----------
    Paper Fig. 3b; eqs. (34), (40).
    """
    return _linear_easy_figure(ctx, "fig3b", analysis.spectra_of(ctx, "linear_easy", b=2.0),
                               "linear attention, easy task, b = 2, varying a", fixed="b", value=2.0)


def fig5a(ctx) -> Figure:
    """Fig. 5a: linear attention on the top-2 task, R_L against depth with the theory floor by degree.

    One panel per spectrum: plateaus and floors of different spectra nearly coincide.

    References
    ----------
    Paper Fig. 5a; eqs. (41)-(54).
    """
    family = ctx.family("linear_difficult")
    fig, axes = _panel_grid(len(family.spectra), ncols=3, width=3.1, height=2.8)
    parts: list[str] = []
    drawn = False
    for ax, colour, (a, b) in zip(axes, p.colours(len(family.spectra)), family.spectra):
        s = analysis.linear_difficult_summary(ctx, "linear_difficult", a, b)
        here = p.errorbar(ax, s.R, colour, "measured R_L")
        if here:
            drawn = True
            floor = ctx.linear_floor(family, a, b)
            degrees = np.arange(1, len(floor["floor_by_degree"]) + 1)
            keep = np.isin(degrees, family.depths)
            values = np.asarray(floor["floor_by_degree"])[keep]
            ax.plot(degrees[keep], values, ls="--", marker="s", ms=3, color="0.3", lw=1.1,
                    label=f"theory floor ({floor['method'].replace('_', '-')})")
            se = float(s.floor_se) if math.isfinite(s.floor_se) else 0.0
            if se > 0:
                ax.fill_between(degrees[keep], values - 2 * se, values + 2 * se, color="0.85", lw=0, label="floor ± 2 SE")
            parts.append(f"{s.label}: plateau {s.plateau:.4g} ± {s.plateau_se:.2g} at L = {s.depth}, floor "
                         f"{s.floor:.4g} ± {s.floor_se:.2g} ({100 * s.deviation:.1f} % apart)")
        p.depth_axis(ax, family.depths, logy=False)
        ax.set_title(f"spectrum {s.label}", fontsize=9)
        if not here:
            p.no_data(ax, p.missing(ctx, "linear_difficult"))
        p.legend(ax, loc="best")
    for ax in axes[:: min(3, len(axes))]:
        ax.set_ylabel("held-out loss R_L")
    fig.suptitle(f"linear attention, top-{family.k} task ({p.sizes(family)})", fontsize=10)
    if not drawn and not family.spectra:
        p.no_data(axes[0], p.missing(ctx, "linear_difficult"))
    paths = p.save(ctx, fig, "fig5a")
    return Figure("fig5a", paths, "Linear attention on the top-2 task: R_L against depth, one panel per spectrum; "
                                  "dashed: the floor T − hᵀG†h of the best degree-L covariance polynomial at the same "
                                  "(d, P) (eqs. 47-54). " + "; ".join(parts))


def fig5b(ctx) -> Figure:
    """Fig. 5b: measured linear plateau against the theory floor (k = 2 and k = 16), with ±10 %.

    References
    ----------
    Paper Fig. 5b; Table 3; eq. (54).
    """
    import matplotlib.ticker as ticker

    plt = p.pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 4.8), constrained_layout=True)
    xs, parts = [], []
    pairs = [(marker, name, spectrum) for marker, name in (("o", "linear_difficult"), ("s", "linear_difficult_k16"))
             for spectrum in ctx.family(name).spectra]
    for index, (colour, (_, family_name, (a, b))) in enumerate(zip(p.colours(len(pairs)), pairs)):
        marker = p.style(index)[0]  # points of different spectra may coincide: each its own marker
        family = ctx.family(family_name)
        s = analysis.linear_difficult_summary(ctx, family_name, a, b)
        if not math.isfinite(s.plateau):
            continue
        xs += [s.floor, s.plateau]
        ax.errorbar([s.floor], [s.plateau], xerr=[s.floor_se], yerr=[0 if math.isnan(s.plateau_se) else s.plateau_se],
                    marker=marker, color=colour, ms=7, mfc="none", mew=1.5, capsize=2, ls="none",
                    label=f"top-{family.k} {s.label}")
        parts.append(f"top-{family.k} {s.label}: {s.plateau:.4g} vs {s.floor:.4g} ({100 * s.deviation:.1f} %)")
    if xs:
        lo, hi = min(xs) / 1.5, max(xs) * 1.5
        grid = np.geomspace(lo, hi, 20)
        ax.plot(grid, grid, color="0.3", lw=0.9, label="measured = theory")
        ax.fill_between(grid, 0.9 * grid, 1.1 * grid, color="0.85", label="±10 %")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_minor_formatter(ticker.NullFormatter())
            axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    else:
        p.no_data(ax, p.missing(ctx, "linear_difficult"))
    ax.set_xlabel("theory floor T − hᵀG†h at the same (d, P, k)")
    ax.set_ylabel("measured plateau R_L at the deepest model")
    ax.set_title("linear attention, difficult task: plateau vs theory", fontsize=9)
    p.legend(ax)
    paths = p.save(ctx, fig, "fig5b")
    return Figure("fig5b", paths, "Measured linear-attention plateau against the theory floor (Table 3, eq. 54). "
                                  + "; ".join(parts))


# ------------------------------------------------------------------------------------------- easy softmax


def _easy_runs(ctx):
    family = ctx.family("nonlinear_easy")
    depth = min(family.depths)
    return family, depth, [(a, b, family.config(a, b, depth, family.seeds[0])) for (a, b) in family.spectra]


def fig4a(ctx) -> Figure:
    """Fig. 4a: softmax attention, easy task, held-out loss during training at L = 1 (normalised).

    References
    ----------
    Paper Fig. 4a; section 3.2.
    """
    plt = p.pyplot()
    family, depth, runs = _easy_runs(ctx)
    fig, ax = plt.subplots(figsize=(6.0, 4.2), constrained_layout=True)
    parts, drawn = [], False
    for index, (colour, (a, b, config)) in enumerate(zip(p.colours(len(runs)), runs)):
        curve = ctx.results.arrays(config).get("loss_curve")
        if curve is None or len(curve) == 0:
            continue
        curve = np.asarray(curve)
        drawn = True
        marker, style = p.style(index)
        ax.plot(curve[:, 0], curve[:, 1] / curve[0, 1], color=colour, marker=marker, ms=3.5, ls=style,
                label=spectrum_label(a, b))
        parts.append(f"{spectrum_label(a, b)}: final/initial = {curve[-1, 1] / curve[0, 1]:.3g}")
    ax.axhline(0.01, color="0.5", ls=":", lw=0.9, label="1 % of the initial loss")
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("held-out loss / initial loss")
    ax.set_title(f"softmax attention, easy task, L = {depth} ({p.sizes(family)})", fontsize=9)
    if not drawn:
        p.no_data(ax, p.missing(ctx, "nonlinear_easy"))
    p.legend(ax)
    paths = p.save(ctx, fig, "fig4a")
    return Figure("fig4a", paths, "Easy task, one softmax layer: held-out loss during training, relative to its "
                                  "initial value. " + "; ".join(parts))


def fig4b(ctx) -> Figure:
    """Fig. 4b: softmax attention, easy task, final loss (relative to initial) against depth.

    References
    ----------
    Paper Fig. 4b; section 3.2.
    """
    plt = p.pyplot()
    family = ctx.family("nonlinear_easy")
    fig, ax = plt.subplots(figsize=(6.0, 4.2), constrained_layout=True)
    parts, drawn = [], False
    for index, (colour, (a, b)) in enumerate(zip(p.colours(len(family.spectra)), family.spectra)):
        s = analysis.easy_softmax_summary(ctx, a, b)
        keep = np.isfinite(s.ratio)
        if not np.any(keep):
            continue
        drawn = True
        marker, style = p.style(index)
        ax.plot(np.asarray(s.depths)[keep], s.ratio[keep], marker=marker, ls=style, color=colour, label=s.label)
        parts.append(f"{s.label}: final/initial = " + ", ".join(f"{r:.3g}" for r in s.ratio[keep])
                     + f" at L = {int_list(np.asarray(s.depths)[keep])}")
    ax.axhline(0.01, color="0.5", ls=":", lw=0.9, label="1 % of the initial loss")
    p.depth_axis(ax, family.depths)
    ax.set_ylabel("final held-out loss / initial loss")
    ax.set_title(f"softmax attention, easy task ({p.sizes(family)})", fontsize=9)
    if not drawn:
        p.no_data(ax, p.missing(ctx, "nonlinear_easy"))
    p.legend(ax)
    paths = p.save(ctx, fig, "fig4b")
    return Figure("fig4b", paths, "Easy task: final held-out loss relative to the initial loss, against depth. "
                                  + "; ".join(parts))


def fig4c(ctx) -> Figure:
    """Fig. 4c: softmax attention, easy task, top-1 attention mass during training.

    Left the mass itself (as in the paper); right ``1 − mass`` on a log scale, which
    separates the spectra whose masses all approach 1 and would hide each other.

    References
    ----------
    Paper Fig. 4c.
    """
    plt = p.pyplot()
    family, depth, runs = _easy_runs(ctx)
    fig, (ax, gap) = plt.subplots(1, 2, figsize=(9.0, 3.8), constrained_layout=True)
    parts, drawn = [], False
    for index, (colour, (a, b, config)) in enumerate(zip(p.colours(len(runs)), runs)):
        curve = ctx.results.arrays(config).get("top1_mass_curve")
        if curve is None or len(curve) == 0:
            continue
        curve = np.asarray(curve)
        drawn = True
        marker, style = p.style(index)
        for target, values in ((ax, curve[:, 1]), (gap, np.clip(1.0 - curve[:, 1], 1e-6, None))):
            target.plot(curve[:, 0], values, color=colour, marker=marker, ms=4, mfc="none", ls=style, lw=1.4,
                        label=spectrum_label(a, b))
        parts.append(f"{spectrum_label(a, b)}: top-1 mass {curve[0, 1]:.3g} → {curve[-1, 1]:.3g}")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("top-1 attention mass of the test token")
    ax.set_title(f"softmax attention, easy task, L = {depth} ({p.sizes(family)})", fontsize=9)
    gap.set_yscale("log")
    gap.set_ylabel("1 − top-1 attention mass (log scale)")
    gap.set_title("the same, distance from 1 (curves near 1 separated)", fontsize=9)
    for target in (ax, gap):
        target.set_xlabel("training step")
        target.grid(True, which="major", alpha=0.3)
        if not drawn:
            p.no_data(target, p.missing(ctx, "nonlinear_easy"))
    p.legend(ax, loc="lower right")
    paths = p.save(ctx, fig, "fig4c")
    return Figure("fig4c", paths, "Top-1 attention mass (largest weight of the test token's attention row, mean over "
                                  "256 held-out contexts) during training; right: 1 − mass on a log scale. "
                                  + "; ".join(parts))


# ------------------------------------------------------------------------------------------- overview


def fig1(ctx) -> Figure:
    """Fig. 1: overview — linear attention's power law (easy task) against softmax attention on the top-2 task,
    each panel titled with the training regime it shows.

    Middle: the converged study (each depth trained to its own convergence rule), the regime the verdict on
    the inverse-depth law is about; right: the lazy recipe (gain frozen, short equal step budget), a contrast of
    the package's, with linear attention and its floor at the same sizes.

    References
    ----------
    Paper Fig. 1; eqs. (16), (34), (41)-(54).
    """
    plt = p.pyplot()
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(16.5, 4.8), constrained_layout=True)
    parts: list[str] = []
    family = ctx.family("linear_easy")
    spectrum = (2.0, 1.0) if (2.0, 1.0) in family.spectra else family.spectra[0]
    s = analysis.linear_easy_summary(ctx, *spectrum)
    if p.errorbar(left, s.R, "C0", f"linear attention {s.label}"):
        p.plot_fit(left, s.fit, s.fit_depths, "C0", "fit", floor_fixed=True)
        from theory import PowerLawSpectrum, constrained_loss, free_loss

        spec = PowerLawSpectrum(*spectrum, family.d)
        grid = np.asarray(family.depths)
        left.plot(grid, constrained_loss(grid, spec), ":", color="0.4", label=f"theory, constrained (ζ = {s.zeta:.3g})")
        left.plot(grid, np.maximum(free_loss(grid, spec), 1e-12), "-.", color="0.6",
                  label=f"theory, free polynomial (2ζ = {2 * s.zeta:.3g})")
        parts.append(f"linear easy {s.label}: {p.fit_label(s.fit, floor_fixed=True)}")
    else:
        p.no_data(left, p.missing(ctx, "linear_easy"))
    p.depth_axis(left, family.depths)
    lo = np.nanmin(s.R.mean) if not s.R.empty else None
    if lo is not None and np.isfinite(lo):
        left.set_ylim(lo / 5, None)
    left.set_ylabel("held-out loss R_L")
    left.set_title(f"linear attention, easy task: power law in depth\n({p.sizes(family)}, {p.regime(family)})",
                   fontsize=9)
    p.legend(left)

    # the regime the inverse-depth verdict is about
    _converged_panel(ctx, middle, "R_L", lambda a, b: (a, b) == (0.0, 0.0), parts)
    middle.set_ylabel("held-out loss R_L")
    r = ctx.converged.rows[0] if ctx.converged is not None else None
    middle.set_title("softmax, top-2 task: CONVERGED TRAINING\n(each depth to its own convergence rule"
                     + (f"; d = {r['d']}, N = {2 * r['d']}, P = {r['P']})" if r is not None else ")")
                     + "\nthe regime of the inverse-depth verdict; dotted: the paper's L0", fontsize=9)
    p.legend(middle)

    lazy = ctx.family("nonlinear_lazy")
    spectrum = (0.0, 0.0) if (0.0, 0.0) in lazy.spectra else lazy.spectra[0]
    s = analysis.nonlinear_summary(ctx, "nonlinear_lazy", *spectrum)
    if p.errorbar(right, s.R, "C3", f"softmax attention {s.label}"):
        p.plot_fit(right, s.fit, lazy.depths, "C3", "fit")
        p.plot_bound(right, s.bound, "C3", "oracle single head" if s.bound else None)
        parts.append(f"lazy contrast, softmax difficult {s.label}: {p.fit_label(s.fit)}")
    else:
        p.no_data(right, p.missing(ctx, "nonlinear_lazy"))
    linear = ctx.family("linear_difficult")
    if spectrum in linear.spectra:
        t = analysis.linear_difficult_summary(ctx, "linear_difficult", *spectrum)
        if p.errorbar(right, t.R, "C0", f"linear attention {t.label} (d = {linear.d}, P = {linear.P})", marker="s"):
            right.axhline(t.floor, color="C0", ls="--", lw=0.9, label=f"linear theory floor {t.floor:.3g}")
            parts.append(f"linear difficult {t.label}: plateau {t.plateau:.4g}, floor {t.floor:.4g}")
    p.depth_axis(right, lazy.depths)
    right.set_ylabel("held-out loss R_L")
    right.set_title(f"softmax vs linear, top-2 task: LAZY CONTRAST\n(gain frozen, short equal step budget; {p.sizes(lazy)})"
                    "\nthe package's contrast, not the paper's regime", fontsize=9)
    p.legend(right)
    paths = p.save(ctx, fig, "fig1")
    return Figure("fig1", paths, "Overview; each panel's title names its training regime. Left: linear attention on "
                                 "the easy task decays as a power law in depth between the constrained (ζ) and free "
                                 "(2ζ) polynomial laws. Middle: softmax attention on the top-2 task in the converged "
                                 "study (every depth trained to its own convergence rule), the regime the verdict on "
                                 "the inverse-depth law is about. Right: the package's lazy-training contrast "
                                 f"({lazy.regime}), softmax against linear attention and its floor. " + "; ".join(parts))


#: artefact ID → builder
BUILDERS: dict[str, Callable] = {
    "fig1": fig1, "fig3a": fig3a, "fig3b": fig3b, "fig3c": fig3c, "fig4a": fig4a, "fig4b": fig4b, "fig4c": fig4c,
    "fig5a": fig5a, "fig5b": fig5b, "fig6a": fig6a, "fig6b": fig6b, "fig6c": fig6c, "fig6d": fig6d,
    "fig7a": fig7a, "fig7b": fig7b, "fig9": fig9, "fig10": fig10, "fig11": fig11, "fig12": fig12,
    "fig13": fig13, "fig14": fig14,
}


def build_figure(ctx, artefact_id: str) -> Figure:
    """Draw figure ``artefact_id`` (one of :data:`BUILDERS`).

    References
    ----------
    The paper's figure of the same number.

    Examples
    --------
    >>> sorted(BUILDERS)[:3]
    ['fig1', 'fig10', 'fig11']
    """
    if artefact_id not in BUILDERS:
        raise ValueError(f"artefact_id must be a figure ID ({', '.join(BUILDERS)}); got {artefact_id!r}")
    return BUILDERS[artefact_id](ctx)
