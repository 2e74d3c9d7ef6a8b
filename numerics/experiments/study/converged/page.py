"""The converged study's page and figures: nothing is fitted or decided here, each line formats
what :mod:`~numerics.experiments.study.converged.statistics` computes."""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from numerics.io import make_output_dir, save_figure, write_text

from ..._markdown import markdown_table
from ..._plotting import pyplot
from .statistics import GroupFindings, bound_at, group_findings, group_stats, paper_plateau, targets
from .table import as_rows

__all__ = ["FIGURE_STEM", "PAGE", "converged_markdown", "draw_decomposition_figure", "draw_figures", "draw_study_figure",
           "figure_groups", "write_converged_page"]


def _num(value: float) -> str:
    """A table cell: 4 decimals, or a dash where the quantity is undefined (C_L at L = 1)."""
    return "—" if not math.isfinite(value) else f"{value:.4f}"


def converged_markdown(rows: Sequence[Mapping], bounds: Mapping | None = None, *,
                       provenance_info: Mapping | None = None) -> str:
    """The docs page of the study, from its CSV rows and ``{(model, N, a, b, k): SoftmaxBounds}``.

    Examples
    --------
    >>> from numerics.experiments.study.converged.table import CSV_COLUMNS
    >>> row = dict.fromkeys(CSV_COLUMNS, 1.0) | {"model": "nonlinear", "norm": "layer", "converged": True, "N": 32,
    ...                                         "depth": 1, "steps": 4000, "seed": 0, "delta_R1_se": float("nan")}
    >>> print(converged_markdown([row]).splitlines()[4])
    Runs converged by the study's rule (held-out change over the last quarter < its own SE): **1 of 1**.
    """
    rows = as_rows(rows)
    stats = group_stats(rows)
    lines = ["# The converged softmax study", ""]
    if provenance_info:
        lines += [f"Generated from `converged-study.csv` ({len(rows)} runs; package "
                  f"{provenance_info.get('package_version')}, {provenance_info.get('date')}, last written by "
                  f"`{provenance_info.get('command')}`).", ""]
    lines += ["Regenerate this page from the CSV: `idepth study converged --out docs/results --report-only`; "
              "continue or extend the study (resumable): `idepth study converged --out docs/results --store DIR`. "
              "The method and its rules: `numerics.experiments.study.converged`.", ""]
    n_conv = sum(r.converged for r in rows)
    lines += [f"Runs converged by the study's rule (held-out change over the last quarter < its own SE): "
              f"**{n_conv} of {len(rows)}**.", ""]
    for key in sorted({k[:5] for k in stats}):
        model, N, a, b, k = key
        lines += [f"## {model}, top-{k}, N = {N}, (a, b) = ({a:g}, {b:g})", ""]
        bnd = None if bounds is None else bounds.get(key)
        table = []
        for depth in sorted(s[5] for s in stats if s[:5] == key):
            s = stats[key + (depth,)]
            B = bound_at(bnd, depth)
            table.append((depth, f"{s.n} ({s.converged})", "/".join(map(str, s.steps)), f"{s.R_L:.4f} ± {s.R_L_se:.4f}",
                          f"{s.delta_R1:+.4f} ± {s.delta_R1_se:.4f}", f"{B[0]:.4f} ± {B[1]:.4f}" if B else "—",
                          f"{s.R_L / B[0] - 1:+.2%}" if B else "—", _num(s.C_L), _num(s.A_L - s.C_L)))
        lines += markdown_table(("L", "seeds (converged)", "steps", "R_L ± SE", "R_1 − R_L ± paired SE", "B_L ± SE",
                                 "R_L / B_L − 1", "C_L", "A_L − C_L"), table)
        findings = group_findings(rows, stats, key, bnd)
        lines += [""] + _findings_lines(findings, stats, bnd) + [""]
    lines += _targets_lines(rows, stats, bounds)
    return "\n".join(lines)


def _depth_fit_lines(f: GroupFindings) -> list[str]:
    out = []
    paper = "" if f.paper is None else f"; the paper's {f.paper[0]} plateau: {f.paper[1]:.4g}"
    for fit in f.depth_fits:
        label = ("all depths, as the paper fits" if fit.start == 0 else
                 f"from the depth of the largest R_L (L = {fit.depths[0]}) on")
        if fit.fit is None:
            out.append(f"- Fit R_L = L0 + c L^-α, {label}: no fit ({fit.reason}).")
            continue
        ses = "bootstrap over seeds" if fit.bootstrap else "Gauss-Newton"
        out.append(f"- Fit R_L = L0 + c L^-α, {label} (L = {fit.depths[0]}–{fit.depths[-1]}, mean of "
                   f"{f.n_seeds} seeds; SEs {ses}): α = {fit.fit.alpha:.3g} ± {fit.alpha_se:.2g}, L0 = "
                   f"{fit.fit.L0:.4g} ± {fit.L0_se:.2g}, R² (log) = {fit.fit.r_squared:.4f}{paper}.")
    return out


def _gain_fit_lines(f: GroupFindings) -> list[str]:
    g = f.gain_fit
    if g is None:
        return [f"- Gain law: no fit ({f.gain_reason})."] if f.gain_reason else []
    resolved = "." if g.bounded or not g.covers(1.0) else " (the data do not bound α: no resolved depth law)."
    return [f"- Gain law R_1 − R_L = c (1 − L^-α) on the paired gains (eq. 16 with L0 cancelled; "
            f"theory.fit_gain_law): α = {g.alpha:.3g}, two-sigma interval {g.interval_text()}, c = "
            f"{g.c:.4g} ± {g.c_se:.2g}, χ² = {g.chi2:.1f} for {g.dof} dof; the paper's α ≈ 1 is "
            f"{'inside' if g.covers(1.0) else 'outside'} the interval" + resolved]


def _gap_fit_lines(f: GroupFindings) -> list[str]:
    if f.gap is None:
        return []
    L0, C = f.paper[1], f.gap_C[-1]
    last = f"C_{f.gap_depths[-1]} = {C:.4g} ({C / L0 - 1:+.1%} from the paper's L0)"
    if not f.gap.ok:
        return [f"- Gap fit with the paper's L0 = {L0:.4g}: impossible, {f.gap.reason}; {last}."]
    return [f"- Gap fit L0 − C_L = c L^-α with the paper's L0 = {L0:.4g} (eqs. 92-93, Table 5): "
            f"α = {f.gap.alpha:.3g} ± {f.gap.alpha_se:.2g}, R² (log) = {f.gap.r_squared:.4f}; {last}."]


def _findings_lines(f: GroupFindings, stats: Mapping, bnd) -> list[str]:
    """Numbers of one (model, N, spectrum): fits, depth gain against the bounds' ceiling, R_L below B_L."""
    out = _depth_fit_lines(f) + _gain_fit_lines(f) + _gap_fit_lines(f)
    if f.failures:
        out.append(f"- **Training failure** at L = {', '.join(map(str, f.failures))}: R_L above R_1 by more "
                   "than two paired SE, although converged by the rule. A depth-L model can express the L = 1 "
                   "solution (every layer the same head, eqs. 59-60), so these runs stopped at a worse point; "
                   "the rule (the loss has stopped moving) is necessary for convergence to the optimum, not "
                   "sufficient.")
    if 1 in f.depths and len(f.depths) > 1:
        deepest = stats[f.key + (f.depths[-1],)]
        ceiling = "" if bnd is None else f"; the cosine-head ceiling B_1 − B_∞ = {bnd.single - bnd.mixture:.4f}"
        out.append(f"- Depth gain R_1 − R_{f.depths[-1]} = {deepest.delta_R1:+.4f} ± {deepest.delta_R1_se:.4f} "
                   f"(paired over the common held-out contexts, mean over seeds){ceiling}.")
    if f.doubling:
        parts = [f"L = {g.depth}: {g.gain:+.4f} ± {g.se:.4f} ({g.n_seeds} seeds, {g.steps} → {2 * g.steps} steps)"
                 for g in f.doubling]
        out.append("- Doubling the step cap (paired R(S) − R(2S) on the same held-out contexts; > 0: the longer "
                   "run is better): " + "; ".join(parts) + ".")
    if bnd is not None:
        below = ", ".join(map(str, f.below_bound))
        caveat = (" — these bounds are not proven bounds of the model: each layer learns its own quadratic "
                  "form D_ℓ = (W_q^ℓ A)ᵀ(W_k^ℓ A), not only a temperature." if f.below_bound else ".")
        out.append(f"- B_1 = {bnd.single:.4f} ± {bnd.single_se:.4f}, B_∞ = {bnd.mixture:.4f} ± "
                   f"{bnd.mixture_se:.4f} (heads over exact cosine similarity, one temperature each). Depths "
                   f"where the trained R_L is more than 2 SE below B_L: {below or 'none'}" + caveat)
    return out


def _targets_lines(rows, stats, bounds) -> list[str]:
    """The study's targets (:func:`~numerics.experiments.study.converged.statistics.targets`) as a table."""
    found = targets(rows, stats, bounds)
    if found is None:
        return []
    out = ["## Targets", ""] + markdown_table(
        ("model, top-k, N, (a, b)", "R_1 / B_1 − 1", "predict_loss(1) / R_1 − 1 (± 1.96 SE)", "deepest L",
         "R_L / B_∞ − 1", "max paired SE of R_1 − R_L", "(B_1 − B_∞)/4"),
        [(f"{t.key[0]}, top-{t.key[4]}, {t.key[1]}, ({t.key[2]:g}, {t.key[3]:g})", f"{t.R_1 / t.B_1 - 1:+.2%}",
          f"{t.predicted / t.R_1 - 1:+.2%} (± {t.predicted_half_width / t.R_1:.1%})", t.deepest,
          f"{t.R_deepest / t.B_inf - 1:+.2%}", f"{t.max_gain_se:.4f}", f"{(t.B_1 - t.B_inf) / 4:.4f}") for t in found])
    out += ["", "predict_loss(1): `theory.predict_loss(1, spectrum, attention='softmax', task='difficult', P, k, "
            "regime='heads', n_samples=16384)` (its own Monte Carlo, independent of the B_1 column's). "
            "Targets of the study: predict_loss(1) within 3 % of R_1; R_1 within 2 % of B_1 and the deepest "
            "model within 2 % of B_∞ (both unpaired: the bounds are Monte Carlo on other contexts, SEs in the "
            "tables above); the paired SE of R_1 − R_L below a quarter of B_1 − B_∞.", ""]
    return out


#: the page's file name in a study's output directory
PAGE = "converged-study.md"
#: the pre-norms as the figures name them (the CSV's ``norm`` column)
_NORM_NAMES = {"layer": "LayerNorm", "rms": "RMSNorm"}
#: what a study figure's two rows of panels show
_PANELS = "upper panels R_L, lower panels the depth gain R_1 − R_L"
#: a study figure's legend in three columns: each line of an upper panel above its lower counterpart
_LEGEND = ("trained $R_L$ (upper)", "$R_1 - R_L$, paired (lower)",
           "$B_L$, cosine heads (upper)", "$B_1 - B_L$ (lower)",
           r"$B_\infty$ (upper)", "α = 1 law through the same total gain (lower)")
#: the figures' files: ``FIGURE_STEM-<group>.png``, ``FIGURE_STEM-decomposition.png``
FIGURE_STEM = "converged-study"


def figure_groups(rows: Sequence[Mapping]) -> list[tuple[str, str, list]]:
    """``(name, title, keys)`` of the figures: one per top-k of the main model, then the contrasts.

    The main ``(model, N)`` has the most spectra; every other one is a contrast, drawn beside
    the main runs of its spectrum. ``keys`` are ``(model, N, a, b, k)``.

    Examples
    --------
    >>> from numerics.experiments.study.converged.table import CSV_COLUMNS
    >>> base = dict.fromkeys(CSV_COLUMNS, 1.0) | {"model": "nonlinear", "norm": "layer",
    ...     "converged": True, "N": 32, "depth": 1, "steps": 100, "seed": 0, "k": 2}
    >>> rows = [base | {"a": 0.0}, base | {"a": 0.5}, base | {"a": 0.0, "k": 16},
    ...         base | {"a": 0.0, "N": 16}]
    >>> [(name, len(keys)) for name, _, keys in figure_groups(rows)]
    [('top2', 2), ('top16', 1), ('contrasts', 2)]
    """
    rows = as_rows(rows)
    keys = sorted({k[:5] for k in group_stats(rows)})
    widths = [key[:2] for key in keys]
    main = max(sorted(set(widths)), key=widths.count)
    model, N = main
    norm = {r.model: _NORM_NAMES.get(r.norm, r.norm) for r in rows}[model]
    sizes = f"d = {rows[0].d}, P = {rows[0].P}"
    groups = []
    for k in sorted({key[4] for key in keys if key[:2] == main}):
        title = f"{model} ({norm}), top-{k}, N = {N}, {sizes}"
        groups.append((f"top{k}", title, [key for key in keys if key[:2] == main and key[4] == k]))
    spectra = sorted({key[2:] for key in keys if key[:2] != main})
    if spectra:
        shown = [key for key in keys if key[2:] in spectra]
        shown.sort(key=lambda key: (key[2:], key[:2] != main, key))
        a, b, k = spectra[0]
        where = f"(a, b) = ({a:g}, {b:g}), top-{k}, " if len(spectra) == 1 else ""
        title = f"Contrasts of model and width at {where}{sizes}"
        groups.append(("contrasts", title, shown))
    return groups


def draw_figures(rows: Sequence[Mapping], bounds: Mapping, directory) -> str:
    """Draw the study's figures into ``directory``; return the Markdown (in its parent) embedding them.

    Notes
    -----
    No example: it draws files (``tests/test_converged.py`` draws them).
    """
    directory = Path(directory)
    rows = as_rows(rows)
    lines = ["## Figures", "", "Mean over seeds with ±1.96 SE; the depth gain R_1 − R_L is "
             "paired over the common held-out contexts; the bounds are those of the tables.", ""]
    for name, title, keys in figure_groups(rows):
        path = directory / f"{FIGURE_STEM}-{name}.png"
        draw_study_figure(rows, bounds, path, keys=keys, title=title)
        lines += [f"![{title}: {_PANELS}]({directory.name}/{path.name})", ""]
    path = draw_decomposition_figure(rows, directory / f"{FIGURE_STEM}-decomposition.png")
    lines += [f"![C_L and A_L − C_L against depth]({directory.name}/{path.name})", ""]
    return "\n" + "\n".join(lines)


def draw_study_figure(rows: Sequence[Mapping], bounds: Mapping, path, *,
                      keys: Sequence[tuple] | None = None, title: str | None = None) -> Path:
    """Per group: ``R_L`` with ``B_L`` and ``B_∞`` above, the paired gain ``R_1 − R_L`` below.

    The gain panel also shows the cosine-head ceiling ``B_1 − B_L`` and, dotted, eq. (16) with
    ``α = 1`` through the same total gain. ``keys`` (default every group) are drawn in this
    order, four to a row, with one legend below.

    Notes
    -----
    No example: it draws a file (``tests/test_converged.py`` draws one).
    """
    plt = pyplot()
    stats = group_stats(rows)
    keys = sorted({k[:5] for k in stats}) if keys is None else list(keys)
    if not keys:
        raise ValueError("no runs to draw: the study has no finished run yet")
    cols = min(4, len(keys))
    grid_rows = math.ceil(len(keys) / cols)
    fig = plt.figure(figsize=(3.5 * cols, 4.7 * grid_rows + 1.0), layout="constrained")
    cells = np.atleast_2d(fig.subfigures(grid_rows, cols, wspace=0.02, hspace=0.03))
    norms = {r.model: _NORM_NAMES.get(r.norm, r.norm) for r in as_rows(rows)}
    one_model = len({key[:2] for key in keys}) == 1
    one_spectrum = len({key[2:] for key in keys}) == 1
    for j, key in enumerate(keys):
        cell = cells[divmod(j, cols)]
        top, bottom = cell.subplots(2, 1, sharex=True)
        _draw_group(top, bottom, stats, key, bounds.get(key))
        model, N, a, b, k = key
        model_text = f"{model} ({norms[model]}), N = {N}"
        spectrum_text = f"(a, b) = ({a:g}, {b:g})"
        label = f"{model_text}, {spectrum_text}, top-{k}"
        label = spectrum_text if one_model else model_text if one_spectrum else label
        cell.suptitle(label, fontsize=10)
    heading = f"{title}: {_PANELS}" if title else _PANELS
    heading = re.sub(" ([=−]) ", "\u00a0\\1\u00a0", heading)  # "N = 32", "R_1 − R_L" not wrapped
    fig.suptitle("\n".join(textwrap.wrap(heading, 36 * cols)), fontsize=11)
    handles = {}
    for ax in fig.get_axes():
        handles.update(zip(*reversed(ax.get_legend_handles_labels())))
    order = _LEGEND if cols >= 3 else _LEGEND[0::2] + _LEGEND[1::2]  # upper lines, then lower
    shown = [text for text in order if text in handles]
    fig.legend([handles[text] for text in shown], shown, loc="outside lower center",
               ncol=min(cols, 3), fontsize=9, frameon=False)
    return save_figure(fig, path)


def _draw_group(top, bottom, stats: Mapping, key: tuple, bnd) -> None:
    from matplotlib.ticker import FixedLocator, NullLocator

    depths = sorted(k[5] for k in stats if k[:5] == key)

    def get(name):
        return np.array([getattr(stats[key + (L,)], name) for L in depths])

    top.errorbar(depths, get("R_L"), yerr=1.96 * get("R_L_se"), fmt="o-", ms=3, capsize=2,
                 label=_LEGEND[0])
    if bnd is not None:
        BL = np.array([(bound_at(bnd, L) or (math.nan, math.nan))[0] for L in depths])
        top.plot(depths, BL, "s--", ms=3, color="C2", label=_LEGEND[2])
        top.axhline(bnd.mixture, color="C3", lw=1, ls=":", label=_LEGEND[4])
    bottom.errorbar(depths, get("delta_R1"), yerr=1.96 * get("delta_R1_se"), fmt="o-", ms=3,
                    capsize=2, label=_LEGEND[1])
    bottom.axhline(0.0, color="0.6", lw=0.8)
    if bnd is not None:
        bottom.plot(depths, bnd.single - BL, "s--", ms=3, color="C2", label=_LEGEND[3])
    gains = get("delta_R1")
    if len(depths) > 2 and depths[0] == 1:  # eq. (16) with α = 1 through the same total gain
        L = np.asarray(depths, dtype=np.float64)
        bottom.plot(depths, gains[-1] * (1 - 1 / L) / (1 - 1 / L[-1]), ":", color="0.35", lw=1.2,
                    label=_LEGEND[5])
    top.set_ylabel("held-out loss", fontsize=9)
    bottom.set_ylabel("depth gain", fontsize=9)
    bottom.set_xlabel("depth L", fontsize=9)
    bottom.set_xscale("log", base=2)
    bottom.xaxis.set_major_locator(FixedLocator(depths))
    bottom.xaxis.set_minor_locator(NullLocator())
    bottom.set_xticklabels([str(L) for L in depths])
    for ax in (top, bottom):
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)


def draw_decomposition_figure(rows: Sequence[Mapping], path) -> Path:
    """Fig. 6c, d: ``C_L`` over the paper's plateau (else the deepest ``C_L``), and ``A_L − C_L``.

    Notes
    -----
    No example: it draws a file (``tests/test_converged.py`` draws one).
    """
    plt = pyplot()
    rows = as_rows(rows)
    stats = group_stats(rows)
    widest: dict = {}
    for model, N, a, b, k, _ in stats:
        if model == "nonlinear":
            widest[(a, b, k)] = max(widest.get((a, b, k), 0), N)
    keys = sorted(("nonlinear", N, a, b, k) for (a, b, k), N in widest.items())
    if not keys:
        raise ValueError("no nonlinear runs to draw")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.5, 5.4), constrained_layout=True)
    for index, key in enumerate(keys):
        depths = [L for L in sorted(k[5] for k in stats if k[:5] == key) if L >= 2]
        if not depths:
            continue
        C = np.array([stats[key + (L,)].C_L for L in depths])
        gap = np.array([stats[key + (L,)].A_L - stats[key + (L,)].C_L for L in depths])
        _, _, a, b, k = key
        paper = paper_plateau(a, b, k)
        scale, scale_text = (paper[1], "paper L0") if paper is not None else (C[-1], f"C_{depths[-1]}")
        style = dict(marker="os^vD<>p*hX"[index % 11], ms=3.5, lw=1.2, ls="-" if k == 2 else "--")
        left.plot(depths, C / scale, label=f"top-{k} ({a:g}, {b:g}) / {scale_text}", **style)
        right.plot(depths, gap, label=f"top-{k} ({a:g}, {b:g})", **style)
    left.axhline(1.0, color="0.4", lw=0.9, ls=":")
    left.set_ylabel("shared error C_L / plateau")
    right.set_ylabel("disagreement A_L − C_L")
    right.set_yscale("log")
    for ax, title in ((left, "Fig. 6c: C_L against depth (dotted: the plateau)"),
                      (right, "Fig. 6d: A_L − C_L against depth")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("depth L")
        ax.set_title(f"{title}; d = {rows[0].d}, P = {rows[0].P}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
    fig.legend(*left.get_legend_handles_labels(), loc="outside lower center", ncol=4, fontsize=8,
               frameon=False)
    return save_figure(fig, path)


def write_converged_page(out_dir, rows, bounds: Mapping | None, provenance_info: Mapping | None = None) -> str:
    """Write ``converged-study.md`` and its figures (``figures/``) into ``out_dir``; returns the Markdown.

    The page of a finished table (``rows``) and its bounds: nothing is trained or computed here but the fits.

    Notes
    -----
    No example: it writes files (``tests/test_converged.py``).
    """
    out = Path(out_dir)
    markdown = converged_markdown(rows, bounds, provenance_info=provenance_info)
    if rows:
        make_output_dir(out / "figures")
        markdown += draw_figures(rows, bounds, out / "figures")
    write_text(out / PAGE, markdown)
    return markdown
