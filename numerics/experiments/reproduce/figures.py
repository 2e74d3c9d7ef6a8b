"""The paper's figures, redrawn from a reproduction's runs (PNG and PDF).

Every builder takes a :class:`numerics.experiments.reproduce.context.ReproductionContext`
and returns a :class:`Figure`: the files written under ``OUT/figures/`` and a
caption stating what is plotted and the key numbers. Conventions (issue 6):
labelled axes, log-log where the paper's are, one colour and legend entry per
spectrum ``(a, b)``, fitted laws dashed with their exponents in the legend, and
on every nonlinear depth plot the oracle bound of :mod:`numerics.experiments.bounds` (best
single softmax head at the same ``(d, P, k)``) as a dash-dotted horizontal
line in the spectrum's colour. Error bars are one standard error (over seeds,
or of the held-out mean with one seed). A family without data (not run, or
all runs failed) gives a figure that says so instead of failing.

Files are written atomically (temporary file, then :func:`os.replace`).
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from . import analysis
from .results import Curve, FitSummary, spectrum_label

__all__ = ["Figure", "BUILDERS", "build_figure"]


@dataclass(frozen=True)
class Figure:
    """A figure written by a builder.

    Attributes
    ----------
    id : str
        Artefact ID (``fig6a``).
    paths : tuple of Path
        The PNG and the PDF.
    caption : str
        What is shown, with the key numbers.

    References
    ----------
    The paper's figure of the same number.

    Examples
    --------
    >>> Figure("fig1", (Path("f.png"), Path("f.pdf")), "caption").png.name
    'f.png'
    """

    id: str
    paths: tuple
    caption: str

    @property
    def png(self) -> Path:
        return self.paths[0]


# ------------------------------------------------------------------------------------------- helpers


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _colours(n: int) -> list:
    plt = _plt()
    cmap = plt.get_cmap("tab10")
    return [cmap(i % 10) for i in range(max(n, 1))]


def _save(ctx, fig, artefact_id: str) -> tuple:
    """Write ``fig`` as PNG and PDF atomically; close it."""
    plt = _plt()
    paths = []
    try:
        for ext in ("png", "pdf"):
            target = ctx.figures_dir / f"{artefact_id}.{ext}"
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            os.close(fd)
            try:
                fig.savefig(tmp, format=ext, dpi=130)
                os.replace(tmp, target)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
            paths.append(target)
    finally:
        plt.close(fig)
    return tuple(paths)


def _no_data(ax, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, fontsize=9, wrap=True,
            color="0.35")


def _depth_axis(ax, depths, *, logy: bool = True) -> None:
    import matplotlib.ticker as ticker

    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    if len(depths):
        ax.set_xlim(min(depths) / 1.3, max(depths) * 1.3)
    ax.set_xlabel("depth L (number of layers)")
    ax.grid(True, which="major", alpha=0.3)


def _errorbar(ax, curve: Curve, colour, label: str, *, marker: str = "o", linestyle: str = "-") -> bool:
    c = curve.finite()
    if not len(c.depths):
        return False
    se = np.where(np.isfinite(c.se), c.se, 0.0)
    ax.errorbar(c.depths, c.mean, yerr=se, color=colour, marker=marker, ms=4, lw=1.3, ls=linestyle, capsize=2,
                label=label)
    return True


def _fit_label(fit: FitSummary, *, floor_fixed: bool = False) -> str:
    if not fit.ok:
        return "no fit"
    alpha, se = fit.value("alpha"), fit.se("alpha")
    text = f"α = {alpha:.2f}" + (f" ± {se:.2f}" if math.isfinite(se) else "")
    if not floor_fixed:
        text += f", L0 = {fit.value('L0'):.3g}"
    return text


def _plot_fit(ax, fit: FitSummary, depths, colour, label: str) -> None:
    if not fit.ok or not len(depths):
        return
    grid = np.unique(np.geomspace(min(depths), max(depths), 60).round().astype(int))
    ax.plot(grid, fit.fit.predict(grid), ls="--", lw=1.1, color=colour, label=label)


def _plot_bound(ax, bound: dict | None, colour, label: str | None) -> None:
    if not bound:
        return
    ax.axhline(bound["single_head_loss"], color=colour, ls="-.", lw=0.9, alpha=0.8, label=label)


def _legend(ax, **kwargs) -> None:
    """Legend inside the axes; outside on the right when it has many entries (so it never hides data)."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    if len(handles) > 5:
        kwargs = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0}
        figure = ax.figure
        if len(figure.axes) == 1 and not getattr(figure, "_idepth_widened", False):
            width, height = figure.get_size_inches()
            figure.set_size_inches(width * 1.4, height)  # room for the legend, the axes keep their size
            figure._idepth_widened = True
    ax.legend(fontsize=7, frameon=False, **kwargs)


def _sizes(family) -> str:
    return f"d = {family.d}, N = {family.N}, P = {family.P}"


def _regime(family) -> str:
    """The regime's short name ("lazy", "converged", ...) for titles."""
    return family.regime.split(":")[0] + " training" if ":" in family.regime else family.regime


def _missing(ctx, family_name: str) -> str:
    if not ctx.ran(family_name):
        return f"{family_name}: not run (not requested with --only)"
    return f"{family_name}: no finished runs in the store"


# ------------------------------------------------------------------------------------------- nonlinear plots


def _nonlinear_depth_panel(ctx, ax, family_name: str, spectra, *, title: str, caption_parts: list,
                           quantity: str = "R_L", with_fit: bool = True, with_bound: bool = True) -> bool:
    family = ctx.family(family_name)
    colours = _colours(len(spectra))
    drawn = False
    for colour, (a, b) in zip(colours, spectra):
        s = analysis.nonlinear_summary(ctx, family_name, a, b)
        curve = {"R_L": s.R, "C_L": s.C, "A_minus_C": s.gap}[quantity]
        if not _errorbar(ax, curve, colour, f"{s.label}"):
            continue
        drawn = True
        if quantity == "R_L":
            if with_fit:
                _plot_fit(ax, s.fit, family.depths, colour, f"fit {s.label}: {_fit_label(s.fit)}")
                caption_parts.append(f"{s.label}: {_fit_label(s.fit)}, R_1/R_Lmax = {s.depth_gain:.3g}")
            if with_bound and s.bound:
                _plot_bound(ax, s.bound, colour, f"oracle single head {s.label}: {s.bound['single_head_loss']:.3g}")
        else:
            change = s.C_change if quantity == "C_L" else s.gap_change
            caption_parts.append(f"{s.label}: change over the last doubling {100 * change:.1f} %")
    _depth_axis(ax, family.depths, logy=(quantity == "R_L"))
    ax.set_title(title, fontsize=9)
    if not drawn:
        _no_data(ax, _missing(ctx, family_name))
    return drawn


def _fig6ab(ctx, artefact_id: str, *, fixed: str) -> Figure:
    plt = _plt()
    family = ctx.family("nonlinear_lazy")
    if fixed == "a":
        spectra = analysis.spectra_of(ctx, "nonlinear_lazy", a=0.0)
        title = f"softmax, top-{family.k}, a = 0, varying b ({_sizes(family)}, {_regime(family)})"
    else:
        spectra = analysis.spectra_of(ctx, "nonlinear_lazy", b=0.0)
        title = f"softmax, top-{family.k}, b = 0, varying a ({_sizes(family)}, {_regime(family)})"
    fig, ax = plt.subplots(figsize=(6.4, 4.6), constrained_layout=True)
    parts: list[str] = []
    _nonlinear_depth_panel(ctx, ax, "nonlinear_lazy", spectra, title=title, caption_parts=parts)
    if artefact_id == "fig6a" and ctx.ran("nonlinear_converged"):
        conv = ctx.family("nonlinear_converged")
        for (a, b) in conv.spectra:
            if (a, b) not in spectra:
                continue
            curve = ctx.results.curve(conv, a, b, "R_L")
            if _errorbar(ax, curve, "0.45", f"{spectrum_label(a, b)} trained to convergence", marker="s",
                         linestyle=":"):
                gain = curve.finite()
                parts.append(f"converged training {spectrum_label(a, b)}: R_L = "
                             + ", ".join(f"{v:.3g}" for v in gain.mean) + f" at L = {list(map(int, gain.depths))}")
    ax.set_ylabel("held-out loss R_L")
    _legend(ax, ncol=1, loc="upper right")
    paths = _save(ctx, fig, artefact_id)
    caption = (f"R_L against depth, softmax attention on the top-{family.k} task, {family.regime}; dashed: fit of "
               "R_L = L0 + c L^-α (eq. 16); dash-dotted: best single softmax head (oracle bound). " + "; ".join(parts))
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
    plt = _plt()
    family = ctx.family("nonlinear_lazy")
    fig, ax = plt.subplots(figsize=(6.0, 4.2), constrained_layout=True)
    parts: list[str] = []
    _nonlinear_depth_panel(ctx, ax, "nonlinear_lazy", family.spectra, quantity=quantity, caption_parts=parts,
                           title=f"softmax, top-{family.k} ({_sizes(family)}, {_regime(family)})")
    ax.set_ylabel(ylabel)
    _legend(ax)
    paths = _save(ctx, fig, artefact_id)
    return Figure(artefact_id, paths, f"{ylabel} against depth (eqs. 61-63). " + "; ".join(parts))


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
    plt = _plt()
    family = ctx.family(family_name)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 4.2), constrained_layout=True)
    parts: list[str] = []
    _nonlinear_depth_panel(ctx, left, family_name, family.spectra, caption_parts=parts,
                           title=f"{name}: R_L ({_sizes(family)}, top-{family.k})")
    left.set_ylabel("held-out loss R_L")
    _legend(left)
    colours = _colours(len(family.spectra))
    drawn = False
    for colour, (a, b) in zip(colours, family.spectra):
        s = analysis.nonlinear_summary(ctx, family_name, a, b, with_bound=False)
        here = _errorbar(right, s.C, colour, f"C_L {s.label}")
        here |= _errorbar(right, s.gap, colour, f"A_L − C_L {s.label}", marker="^", linestyle="--")
        drawn |= here
        if here:
            parts.append(f"{s.label}: C_L changes {100 * s.C_change:.1f} %, A_L − C_L {100 * s.gap_change:.1f} % "
                         "over the last doubling")
    _depth_axis(right, family.depths, logy=False)
    right.set_ylabel("C_L and A_L − C_L")
    right.set_title(f"{name}: decomposition R_L = C_L + (A_L − C_L)/L", fontsize=9)
    if not drawn:
        _no_data(right, _missing(ctx, family_name))
    _legend(right)
    paths = _save(ctx, fig, artefact_id)
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
    plt = _plt()
    family = ctx.family("nonlinear_k16")
    fig, ax = plt.subplots(figsize=(6.4, 4.6), constrained_layout=True)
    parts: list[str] = []
    _nonlinear_depth_panel(ctx, ax, "nonlinear_k16", family.spectra, caption_parts=parts,
                           title=f"softmax, top-{family.k} ({_sizes(family)}, {_regime(family)})")
    ax.set_ylabel("held-out loss R_L")
    _legend(ax)
    paths = _save(ctx, fig, "fig14")
    return Figure("fig14", paths, f"R_L against depth on the top-{family.k} task; dashed: fits of eq. (16); "
                                  "dash-dotted: oracle single-head bound. " + "; ".join(parts))


def fig11(ctx) -> Figure:
    """Fig. 11: context updates M(m), R_L against depth for top-2 and top-16, fits and oracle bounds.

    References
    ----------
    Paper Fig. 11; eqs. (75)-(82).
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.6), constrained_layout=True)
    parts: list[str] = []
    drawn = False
    colours = _colours(4)
    index = 0
    for family_name in ("context_updates", "context_updates_k16"):
        family = ctx.family(family_name)
        for (a, b) in family.spectra:
            colour = colours[index % 4]
            index += 1
            s = analysis.nonlinear_summary(ctx, family_name, a, b)
            label = f"top-{family.k} {s.label}"
            if not _errorbar(ax, s.R, colour, label):
                continue
            drawn = True
            _plot_fit(ax, s.fit, family.depths, colour, f"fit top-{family.k}: {_fit_label(s.fit)}")
            _plot_bound(ax, s.bound, colour, f"oracle single head top-{family.k}: "
                                             f"{s.bound['single_head_loss']:.3g}" if s.bound else None)
            parts.append(f"top-{family.k} {s.label}: {_fit_label(s.fit)}, R_1/R_Lmax = {s.depth_gain:.3g}")
    family = ctx.family("context_updates")
    _depth_axis(ax, family.depths)
    ax.set_ylabel("held-out loss R_L")
    ax.set_title(f"context updates M(m), learned m ({_sizes(family)}, {_regime(family)})", fontsize=9)
    if not drawn:
        _no_data(ax, _missing(ctx, "context_updates"))
    _legend(ax)
    paths = _save(ctx, fig, "fig11")
    return Figure("fig11", paths, "Context-update model: R_L against depth for top-2 and top-16 (paper: top-2 keeps "
                                  "a 1/L trend, top-16 saturates). " + "; ".join(parts))


def fig12(ctx) -> Figure:
    """Fig. 12: learned m against depth, and layer 1's context attention A_1 (top-2 and top-16).

    References
    ----------
    Paper Fig. 12; eqs. (83)-(84).
    """
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(12.0, 3.9), constrained_layout=True)
    parts: list[str] = []
    drawn = False
    for colour, family_name in zip(_colours(2), ("context_updates", "context_updates_k16")):
        family = ctx.family(family_name)
        (a, b) = family.spectra[0]
        m_curve = ctx.results.curve(family, a, b, "m")
        rho_curve = ctx.results.curve(family, a, b, "rho")
        if _errorbar(axes[0], m_curve, colour, f"m, top-{family.k}"):
            drawn = True
            last = m_curve.finite()
            parts.append(f"top-{family.k}: learned m = " + ", ".join(f"{v:.3g}" for v in last.mean)
                         + f" at L = {list(map(int, last.depths))}; ρ = "
                         + ", ".join(f"{v:.3g}" for v in rho_curve.finite().mean))
    _depth_axis(axes[0], ctx.family("context_updates").depths, logy=False)
    axes[0].axhline(0.0, color="0.6", lw=0.8)
    axes[0].set_ylabel("learned context-update scalar m")
    axes[0].set_title("m (paper: ≈ −2.3 for top-16)", fontsize=9)
    if not drawn:
        _no_data(axes[0], _missing(ctx, "context_updates"))
    _legend(axes[0])
    for ax, family_name in zip(axes[1:], ("context_updates", "context_updates_k16")):
        family = ctx.family(family_name)
        (a, b) = family.spectra[0]
        depth = max(family.depths)
        config = family.config(a, b, depth, family.seeds[0])
        A1 = ctx.results.arrays(config).get("A1_example")
        rho = ctx.results.metrics(config).get("rho", math.nan)
        if A1 is None:
            _no_data(ax, _missing(ctx, family_name))
            ax.set_axis_off()
            continue
        image = ax.imshow(np.asarray(A1), cmap="viridis", aspect="equal")
        fig.colorbar(image, ax=ax, shrink=0.8)
        ax.set_title(f"A_1, top-{family.k}, L = {depth}, one context (ρ = {float(rho):.3g})", fontsize=9)
        ax.set_xlabel("key token j")
        ax.set_ylabel("query token i")
    paths = _save(ctx, fig, "fig12")
    return Figure("fig12", paths, "Learned m and layer 1's context attention A_1 ≈ ρ I + (1 − ρ) J (eq. 83; paper: "
                                  "ρ_2 = 0.9999, ρ_16 = 0.0989, m ≈ −2.3 for top-16). " + "; ".join(parts))


def fig13(ctx) -> Figure:
    """Fig. 13: selection-error percentiles Q_L(q), L = 1 against the deepest model.

    References
    ----------
    Paper Fig. 13; eqs. (90)-(91).
    """
    plt = _plt()
    family = ctx.family("nonlinear_lazy")
    levels = (0.5, 0.9, 0.95, 0.99)
    deepest = max(family.depths)
    shallow = min(family.depths)
    fig, ax = plt.subplots(figsize=(6.4, 4.4), constrained_layout=True)
    parts: list[str] = []
    drawn = False
    x = np.arange(len(levels))
    for colour, (a, b) in zip(_colours(len(family.spectra)), family.spectra):
        for depth, style, marker in ((shallow, "-", "o"), (deepest, "--", "s")):
            mean, se = analysis.selection_quantiles(ctx, "nonlinear_lazy", a, b, depth, levels)
            if not np.any(np.isfinite(mean)):
                continue
            drawn = True
            ax.errorbar(x, mean, yerr=np.where(np.isfinite(se), se, 0.0), color=colour, ls=style, marker=marker,
                        ms=4, capsize=2, label=f"{spectrum_label(a, b)}, L = {depth}")
        m1, _ = analysis.selection_quantiles(ctx, "nonlinear_lazy", a, b, shallow, levels)
        mL, _ = analysis.selection_quantiles(ctx, "nonlinear_lazy", a, b, deepest, levels)
        if np.all(np.isfinite(m1)) and np.all(np.isfinite(mL)):
            parts.append(f"{spectrum_label(a, b)}: ΔQ(q) = Q_{shallow} − Q_{deepest} = "
                         + ", ".join(f"{d:.3g}" for d in (m1 - mL)) + f" at q = {', '.join(map(str, levels))}")
    ax.set_xticks(x, [f"{q:g}" for q in levels])
    ax.set_yscale("log")
    ax.set_xlabel("percentile level q")
    ax.set_ylabel("selection error percentile Q_L(q) = quantile of ‖p̄_L − p*‖²")
    ax.set_title(f"token selection, softmax top-{family.k} ({_sizes(family)})", fontsize=9)
    if not drawn:
        _no_data(ax, _missing(ctx, "nonlinear_lazy"))
    _legend(ax)
    paths = _save(ctx, fig, "fig13")
    return Figure("fig13", paths, "Percentiles of the selection error E_L(c) = ‖p̄_L(c) − p*‖² (eqs. 90-91); solid: "
                                  f"L = {shallow}, dashed: L = {deepest}. " + "; ".join(parts))


def _modewise_lines(ax, depths, matrix, *, reducible: bool) -> tuple:
    d = matrix.shape[1]
    modes = sorted({1, 2, 4, 8, 16, 32, 64, 128, d} & set(range(1, d + 1)))
    colours = _colours(len(modes))
    spreads = []
    if reducible:
        base = matrix[-1]
        with np.errstate(invalid="ignore", divide="ignore"):
            matrix = (matrix - base) / (matrix[0] - base)
        if matrix.shape[0] > 2:
            spreads = np.nanstd(matrix[1:-1, [m - 1 for m in modes]], axis=1)
    for colour, mode in zip(colours, modes):
        ax.plot(depths, matrix[:, mode - 1], marker="o", ms=3, color=colour, label=f"mode k = {mode}")
    return modes, spreads


def _modewise_figure(ctx, artefact_id: str, family_name: str, spectrum, *, reducible: bool, title: str) -> Figure:
    plt = _plt()
    family = ctx.family(family_name)
    fig, ax = plt.subplots(figsize=(6.0, 4.3), constrained_layout=True)
    caption = ""
    if spectrum is None:
        _no_data(ax, f"{family_name}: no spectrum")
    else:
        a, b = spectrum
        depths, matrix = analysis.modewise_matrix(ctx, family_name, a, b)
        if not np.any(np.isfinite(matrix)):
            _no_data(ax, _missing(ctx, family_name))
        else:
            modes, spreads = _modewise_lines(ax, depths, matrix, reducible=reducible)
            caption = f"spectrum {spectrum_label(a, b)}, modes {modes}"
            if reducible and len(spreads):
                caption += ("; spread (std over modes) of the normalised reducible loss at intermediate depths: "
                            + ", ".join(f"L = {L}: {s:.3g}" for L, s in zip(depths[1:-1], spreads)))
        _depth_axis(ax, family.depths, logy=not reducible)
        ax.set_title(title + "\n" + (f"spectrum {spectrum_label(*spectrum)}, " if spectrum else "") + _sizes(family),
                     fontsize=9)
    ax.set_ylabel("normalised reducible mode loss" if reducible else "normalised mode loss E ẽ_k² / E t̃_k²")
    _legend(ax)
    paths = _save(ctx, fig, artefact_id)
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
                            title="softmax attention, top-2: normalised reducible mode-wise loss "
                                  "(ℓ_k(L) − ℓ_k(L_max)) / (ℓ_k(1) − ℓ_k(L_max))")


# ------------------------------------------------------------------------------------------- linear plots


def _linear_easy_figure(ctx, artefact_id: str, spectra, title: str) -> Figure:
    plt = _plt()
    family = ctx.family("linear_easy")
    fig, ax = plt.subplots(figsize=(6.4, 4.6), constrained_layout=True)
    parts: list[str] = []
    drawn = False
    for colour, (a, b) in zip(_colours(len(spectra)), spectra):
        s = analysis.linear_easy_summary(ctx, a, b)
        zeta = f"ζ = {s.zeta:.3g}" if s.zeta is not None else "ζ undefined"
        if not _errorbar(ax, s.R, colour, f"{s.label}, {zeta}"):
            continue
        drawn = True
        _plot_fit(ax, s.fit, s.fit_depths, colour, f"fit {s.label}: {_fit_label(s.fit, floor_fixed=True)}")
        parts.append(f"{s.label}: {_fit_label(s.fit, floor_fixed=True)} on L ≤ {s.window_upper:.3g} "
                     f"(ζ = {s.zeta:.3g}, 2ζ = {2 * s.zeta:.3g})" if s.zeta else f"{s.label}: ζ undefined")
    _depth_axis(ax, family.depths)
    ax.set_ylabel("held-out loss R_L")
    ax.set_title(f"{title} ({_sizes(family)})", fontsize=9)
    if not drawn:
        _no_data(ax, _missing(ctx, "linear_easy") if spectra else "no spectrum of this panel is run at this scale")
    _legend(ax)
    paths = _save(ctx, fig, artefact_id)
    return Figure(artefact_id, paths, f"{title}: R_L against depth; dashed: fit R_L = c L^-α (L0 = 0) on the depths "
                                      "inside the validity window L ≤ (λ_1/λ_d)/10 (eq. 34). " + "; ".join(parts))


def fig3a(ctx) -> Figure:
    """Fig. 3a: linear attention, easy task, a = 2 with varying b: R_L against depth and fitted exponents.

    References
    ----------
    Paper Fig. 3a; eqs. (34), (40).
    """
    return _linear_easy_figure(ctx, "fig3a", analysis.spectra_of(ctx, "linear_easy", a=2.0),
                               "linear attention, easy task, a = 2, varying b")


def fig3b(ctx) -> Figure:
    """Fig. 3b: linear attention, easy task, b = 2 with varying a.

    References
    ----------
    Paper Fig. 3b; eqs. (34), (40).
    """
    return _linear_easy_figure(ctx, "fig3b", analysis.spectra_of(ctx, "linear_easy", b=2.0),
                               "linear attention, easy task, b = 2, varying a")


def fig5a(ctx) -> Figure:
    """Fig. 5a: linear attention on the top-2 task, R_L against depth with the theory floor by degree.

    References
    ----------
    Paper Fig. 5a; eqs. (41)-(54).
    """
    plt = _plt()
    family = ctx.family("linear_difficult")
    fig, ax = plt.subplots(figsize=(6.4, 4.6), constrained_layout=True)
    parts: list[str] = []
    drawn = False
    for colour, (a, b) in zip(_colours(len(family.spectra)), family.spectra):
        s = analysis.linear_difficult_summary(ctx, "linear_difficult", a, b)
        if not _errorbar(ax, s.R, colour, s.label):
            continue
        drawn = True
        floor = ctx.linear_floor(family, a, b)
        degrees = np.arange(1, len(floor["floor_by_degree"]) + 1)
        keep = np.isin(degrees, family.depths)
        ax.plot(degrees[keep], np.asarray(floor["floor_by_degree"])[keep], ls="--", color=colour, lw=1.1,
                label=f"theory floor {s.label} ({floor['method'].replace('_', '-')})")
        parts.append(f"{s.label}: plateau {s.plateau:.4g} ± {s.plateau_se:.2g} at L = {s.depth}, floor "
                     f"{s.floor:.4g} ± {s.floor_se:.2g} ({100 * s.deviation:.1f} % apart)")
    _depth_axis(ax, family.depths)
    ax.set_ylabel("held-out loss R_L")
    ax.set_title(f"linear attention, top-{family.k} task ({_sizes(family)})", fontsize=9)
    if not drawn:
        _no_data(ax, _missing(ctx, "linear_difficult"))
    _legend(ax)
    paths = _save(ctx, fig, "fig5a")
    return Figure("fig5a", paths, "Linear attention on the top-2 task: R_L against depth; dashed: the floor "
                                  "T − hᵀG†h of the best degree-L covariance polynomial at the same (d, P) "
                                  "(eqs. 47-54). " + "; ".join(parts))


def fig5b(ctx) -> Figure:
    """Fig. 5b: measured linear plateau against the theory floor (k = 2 and k = 16), with ±10 %.

    References
    ----------
    Paper Fig. 5b; Table 3; eq. (54).
    """
    import matplotlib.ticker as ticker

    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.2, 4.8), constrained_layout=True)
    xs, parts = [], []
    pairs = [(marker, name, spectrum) for marker, name in (("o", "linear_difficult"), ("s", "linear_difficult_k16"))
             for spectrum in ctx.family(name).spectra]
    for colour, (marker, family_name, (a, b)) in zip(_colours(len(pairs)), pairs):
        family = ctx.family(family_name)
        s = analysis.linear_difficult_summary(ctx, family_name, a, b)
        if not math.isfinite(s.plateau):
            continue
        xs += [s.floor, s.plateau]
        ax.errorbar([s.floor], [s.plateau], xerr=[s.floor_se], yerr=[0 if math.isnan(s.plateau_se) else s.plateau_se],
                    marker=marker, color=colour, ms=6, capsize=2, ls="none", label=f"top-{family.k} {s.label}")
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
        _no_data(ax, _missing(ctx, "linear_difficult"))
    ax.set_xlabel("theory floor T − hᵀG†h at the same (d, P, k)")
    ax.set_ylabel("measured plateau R_L at the deepest model")
    ax.set_title("linear attention, difficult task: plateau vs theory", fontsize=9)
    _legend(ax)
    paths = _save(ctx, fig, "fig5b")
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
    plt = _plt()
    family, depth, runs = _easy_runs(ctx)
    fig, ax = plt.subplots(figsize=(6.0, 4.2), constrained_layout=True)
    parts, drawn = [], False
    for colour, (a, b, config) in zip(_colours(len(runs)), runs):
        curve = ctx.results.arrays(config).get("loss_curve")
        if curve is None or len(curve) == 0:
            continue
        curve = np.asarray(curve)
        drawn = True
        ax.plot(curve[:, 0], curve[:, 1] / curve[0, 1], color=colour, label=spectrum_label(a, b))
        parts.append(f"{spectrum_label(a, b)}: final/initial = {curve[-1, 1] / curve[0, 1]:.3g}")
    ax.axhline(0.01, color="0.5", ls=":", lw=0.9, label="1 % of the initial loss")
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("held-out loss / initial loss")
    ax.set_title(f"softmax attention, easy task, L = {depth} ({_sizes(family)})", fontsize=9)
    if not drawn:
        _no_data(ax, _missing(ctx, "nonlinear_easy"))
    _legend(ax)
    paths = _save(ctx, fig, "fig4a")
    return Figure("fig4a", paths, "Easy task, one softmax layer: held-out loss during training, relative to its "
                                  "initial value. " + "; ".join(parts))


def fig4b(ctx) -> Figure:
    """Fig. 4b: softmax attention, easy task, final loss (relative to initial) against depth.

    References
    ----------
    Paper Fig. 4b; section 3.2.
    """
    plt = _plt()
    family = ctx.family("nonlinear_easy")
    fig, ax = plt.subplots(figsize=(6.0, 4.2), constrained_layout=True)
    parts, drawn = [], False
    for colour, (a, b) in zip(_colours(len(family.spectra)), family.spectra):
        s = analysis.easy_softmax_summary(ctx, a, b)
        keep = np.isfinite(s.ratio)
        if not np.any(keep):
            continue
        drawn = True
        ax.plot(np.asarray(s.depths)[keep], s.ratio[keep], marker="o", color=colour, label=s.label)
        parts.append(f"{s.label}: final/initial = " + ", ".join(f"{r:.3g}" for r in s.ratio[keep])
                     + f" at L = {list(np.asarray(s.depths)[keep])}")
    ax.axhline(0.01, color="0.5", ls=":", lw=0.9, label="1 % of the initial loss")
    _depth_axis(ax, family.depths)
    ax.set_ylabel("final held-out loss / initial loss")
    ax.set_title(f"softmax attention, easy task ({_sizes(family)})", fontsize=9)
    if not drawn:
        _no_data(ax, _missing(ctx, "nonlinear_easy"))
    _legend(ax)
    paths = _save(ctx, fig, "fig4b")
    return Figure("fig4b", paths, "Easy task: final held-out loss relative to the initial loss, against depth. "
                                  + "; ".join(parts))


def fig4c(ctx) -> Figure:
    """Fig. 4c: softmax attention, easy task, top-1 attention mass during training.

    References
    ----------
    Paper Fig. 4c.
    """
    plt = _plt()
    family, depth, runs = _easy_runs(ctx)
    fig, ax = plt.subplots(figsize=(6.0, 4.2), constrained_layout=True)
    parts, drawn = [], False
    for colour, (a, b, config) in zip(_colours(len(runs)), runs):
        curve = ctx.results.arrays(config).get("top1_mass_curve")
        if curve is None or len(curve) == 0:
            continue
        curve = np.asarray(curve)
        drawn = True
        ax.plot(curve[:, 0], curve[:, 1], color=colour, label=spectrum_label(a, b))
        parts.append(f"{spectrum_label(a, b)}: top-1 mass {curve[0, 1]:.3g} → {curve[-1, 1]:.3g}")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("training step")
    ax.set_ylabel("top-1 attention mass of the test token")
    ax.set_title(f"softmax attention, easy task, L = {depth} ({_sizes(family)})", fontsize=9)
    if not drawn:
        _no_data(ax, _missing(ctx, "nonlinear_easy"))
    _legend(ax)
    paths = _save(ctx, fig, "fig4c")
    return Figure("fig4c", paths, "Top-1 attention mass (largest weight of the test token's attention row, mean over "
                                  "256 held-out contexts) during training. " + "; ".join(parts))


# ------------------------------------------------------------------------------------------- overview


def fig1(ctx) -> Figure:
    """Fig. 1: overview — linear attention's power law (easy task) against softmax attention's 1/L (top-2 task).

    References
    ----------
    Paper Fig. 1; eqs. (16), (34).
    """
    plt = _plt()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.5, 4.3), constrained_layout=True)
    parts: list[str] = []
    family = ctx.family("linear_easy")
    spectrum = (2.0, 1.0) if (2.0, 1.0) in family.spectra else family.spectra[0]
    s = analysis.linear_easy_summary(ctx, *spectrum)
    if _errorbar(left, s.R, "C0", f"linear attention {s.label}"):
        _plot_fit(left, s.fit, s.fit_depths, "C0", f"fit: {_fit_label(s.fit, floor_fixed=True)}")
        from theory import PowerLawSpectrum, constrained_loss, free_loss

        spec = PowerLawSpectrum(*spectrum, family.d)
        grid = np.asarray(family.depths)
        left.plot(grid, constrained_loss(grid, spec), ":", color="0.4", label=f"theory, constrained (ζ = {s.zeta:.3g})")
        left.plot(grid, np.maximum(free_loss(grid, spec), 1e-12), "-.", color="0.6",
                  label=f"theory, free polynomial (2ζ = {2 * s.zeta:.3g})")
        parts.append(f"linear easy {s.label}: {_fit_label(s.fit, floor_fixed=True)}")
    else:
        _no_data(left, _missing(ctx, "linear_easy"))
    _depth_axis(left, family.depths)
    lo = np.nanmin(s.R.mean) if not s.R.empty else None
    if lo is not None and np.isfinite(lo):
        left.set_ylim(lo / 5, None)
    left.set_ylabel("held-out loss R_L")
    left.set_title(f"easy task: linear attention, power law ({_sizes(family)})", fontsize=9)
    _legend(left)

    lazy = ctx.family("nonlinear_lazy")
    spectrum = (0.0, 0.0) if (0.0, 0.0) in lazy.spectra else lazy.spectra[0]
    s = analysis.nonlinear_summary(ctx, "nonlinear_lazy", *spectrum)
    if _errorbar(right, s.R, "C3", f"softmax attention {s.label}"):
        _plot_fit(right, s.fit, lazy.depths, "C3", f"fit: {_fit_label(s.fit)}")
        _plot_bound(right, s.bound, "C3", "oracle single head" if s.bound else None)
        parts.append(f"softmax difficult {s.label}: {_fit_label(s.fit)}")
    else:
        _no_data(right, _missing(ctx, "nonlinear_lazy"))
    linear = ctx.family("linear_difficult")
    if spectrum in linear.spectra:
        t = analysis.linear_difficult_summary(ctx, "linear_difficult", *spectrum)
        if _errorbar(right, t.R, "C0", f"linear attention {t.label} (d = {linear.d}, P = {linear.P})"):
            right.axhline(t.floor, color="C0", ls="--", lw=0.9, label=f"linear theory floor {t.floor:.3g}")
            parts.append(f"linear difficult {t.label}: plateau {t.plateau:.4g}, floor {t.floor:.4g}")
    _depth_axis(right, lazy.depths)
    right.set_ylabel("held-out loss R_L")
    right.set_title(f"top-{lazy.k} task: softmax ({_sizes(lazy)}, {_regime(lazy)}) vs linear", fontsize=9)
    _legend(right)
    paths = _save(ctx, fig, "fig1")
    return Figure("fig1", paths, "Overview. Left: linear attention on the easy task decays as a power law in depth "
                                 "between the constrained (ζ) and free (2ζ) polynomial laws. Right: softmax attention on "
                                 "the top-2 task against linear attention and its floor. " + "; ".join(parts))


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
