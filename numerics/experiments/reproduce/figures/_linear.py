"""Linear attention: Figs. 3a-b (easy task) and 5a-b (top-k task)."""

from __future__ import annotations

import math
import textwrap

import numpy as np

from .. import plotting as p
from .. import analysis
from ...study.curves import spectrum_label

#: Fig. 3a fixes a = 2 and varies b; Fig. 3b fixes b = 2 and varies a
_PANEL_EXPONENT = 2.0


def panel_grid(n: int, *, ncols: int, width: float = 3.3, height: float = 3.0, sharey: bool = False):
    """(figure, axes) of ``n`` small multiples in rows of ``ncols``."""
    n = max(n, 1)
    ncols = min(ncols, n)
    nrows = math.ceil(n / ncols)
    fig, axes = p.subplots(nrows, ncols, figsize=(width * ncols + 0.6, height * nrows + 0.5), squeeze=False,
                           sharey=sharey)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def unrun_table2_rows(ctx) -> list[tuple]:
    """``(a, b, upper, inside)`` of each Table 2 spectrum this scale does not run."""
    from theory.paper import paper_table

    family = ctx.family("linear_easy")
    rows = []
    for row in paper_table("table2"):
        a, b = float(row["a"]), float(row["b"])
        if (a, b) not in family.spectra:
            rows.append((a, b, *analysis.validity_window(family, a, b)))
    return rows


def _not_run_rows(ctx, fixed: str) -> list[str]:
    """The paper's Table 2 spectra of this panel that this scale does not run, and why."""
    family = ctx.family("linear_easy")
    out = []
    for a, b, upper, inside in unrun_table2_rows(ctx):
        if (a if fixed == "a" else b) != _PANEL_EXPONENT:
            continue
        why = (f"not resolvable at d = {family.d} (the window L ≤ d^a/10 = {upper:.2g} holds {inside} of the depths)"
               if inside < 3 else f"not run at scale {ctx.scale.name} (budget)")
        out.append(f"{spectrum_label(a, b)}: {why}")
    return out


def linear_easy_figure(ctx, *, fixed: str) -> tuple:
    """Figs. 3a (``fixed="a"``: a = 2, varying b) and 3b: R_L, its fit and the
    slopes ζ and 2ζ (eqs. 34, 40), one panel per spectrum."""
    family = ctx.family("linear_easy")
    spectra = analysis.spectra_of(ctx, "linear_easy", **{fixed: _PANEL_EXPONENT})
    title = f"linear attention, easy task, {fixed} = {_PANEL_EXPONENT:g}, varying {'b' if fixed == 'a' else 'a'}"
    missing = _not_run_rows(ctx, fixed)
    fig, axes = panel_grid(len(spectra) + bool(missing), ncols=2, width=3.6, height=3.1, sharey=True)
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
                # the constrained (ζ) and free (2ζ) laws as slopes through the first point
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
    caption = (f"{title}: R_L against depth, one panel per spectrum; dashed: fit R_L = c L^-α (L0 = 0) on the depths "
               "inside the validity window L ≤ (λ_1/λ_d)/10 (eq. 34, shaded outside); dotted and dash-dotted: the "
               "slopes ζ (constrained polynomial, eq. 34) and 2ζ (free polynomial, eq. 40) through the first point, "
               "between which the paper puts α. " + "; ".join(parts))
    if missing:
        caption += ". The paper's other spectra of this panel: " + "; ".join(missing)
    return fig, caption + "."


def fig5a(ctx) -> tuple:
    """Fig. 5a (eqs. 41-54): linear attention, top-2 task, R_L and the floor."""
    family = ctx.family("linear_difficult")
    fig, axes = panel_grid(len(family.spectra), ncols=3, width=3.1, height=2.8)
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
    return fig, ("Linear attention on the top-2 task: R_L against depth, one panel per spectrum; "
                 "dashed: the floor T − hᵀG†h of the best degree-L covariance polynomial at the same "
                 "(d, P) (eqs. 47-54). " + "; ".join(parts))


def fig5b(ctx) -> tuple:
    """Fig. 5b (Table 3, eq. 54): measured linear plateau against the floor."""
    import matplotlib.ticker as ticker

    fig, ax = p.subplots(figsize=(5.2, 4.8))
    xs, parts = [], []
    pairs = [(name, spectrum) for name in ("linear_difficult", "linear_difficult_k16")
             for spectrum in ctx.family(name).spectra]
    for colour, marker, _, (family_name, (a, b)) in p.styled(pairs):  # points may coincide: each its own marker
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
    return fig, ("Measured linear-attention plateau against the theory floor (Table 3, eq. 54). "
                 + "; ".join(parts))
