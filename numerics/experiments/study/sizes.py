"""Which sizes (d, P) do the paper's nonlinear plateaus come from? (inferred, as Table 3's P was)

The paper gives 14 nonlinear plateaus (Tables 1 and 4) but not their sizes. A converged
model cannot go below ``B_∞`` (the best mixture of cosine heads, eq. 60) and a deep one
should come close; so over a ``(d, P)`` grid, :func:`infer_sizes` computes ``B_∞`` and
``B_1`` of the 14 cells (:mod:`theory.softmax_bounds`) and

    χ²(d, P) = Σ_rows (paper − B(d, P))² / SE_B(d, P)²

(the MC error is the only one: the paper's values carry none). The best ``(d, P)``
minimises χ²; the data allow ``χ² ≤ χ²_min + Δ · max(1, χ²_min / dof)`` (``Δ`` =
:data:`~numerics.experiments.criteria.SIZE_REGION_DELTA`: two fitted sizes at 95 %, widened by the Birge
ratio; ``dof`` = rows − 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from numerics.io import json_text, save_figure, write_together

from .._markdown import markdown_table
from .._plotting import pyplot
from ..bounds import cached_softmax_bounds, softmax_bounds_key
from ..criteria import SIZE_REGION_DELTA
from ..execution import Execution, as_execution
from ..scales import SIZE_GRID_D, SIZE_GRID_P
from .consistency import paper_plateaus

__all__ = ["SIZE_GRID_D", "SIZE_GRID_P", "SizeInference", "infer_sizes", "sizes_markdown",
           "draw_size_map", "write_size_inference"]



@dataclass(frozen=True)
class SizeInference:
    """Result of :func:`infer_sizes`.

    Attributes
    ----------
    rows : tuple of dict
        The paper's plateaus (:func:`~numerics.experiments.study.consistency.paper_plateaus`).
    mixture, mixture_se, single, single_se : ndarray, shape (len(d_values), len(P_values), rows)
        ``B_∞`` and ``B_1`` of every row at every size, with their SEs.
    chi2_mixture, chi2_single : ndarray, shape (len(d_values), len(P_values))
    best_mixture, best_single, region_mixture, region_single : tuple
        Where each χ² is smallest, and the sizes the data allow (module docstring).

    Notes
    -----
    No example: it needs hundreds of Monte-Carlo bounds (minutes); see :func:`infer_sizes`.
    """

    d_values: tuple
    P_values: tuple
    rows: tuple
    mixture: np.ndarray
    mixture_se: np.ndarray
    single: np.ndarray
    single_se: np.ndarray
    chi2_mixture: np.ndarray
    chi2_single: np.ndarray
    best_mixture: tuple
    best_single: tuple
    region_mixture: tuple
    region_single: tuple
    n_contexts: int
    n_seeds: int

    def to_dict(self) -> dict:
        """A JSON-able dict."""
        return {key: value.tolist() if isinstance(value, np.ndarray) else value
                for key, value in self.__dict__.items()}


def chi_square(paper: np.ndarray, bound: np.ndarray, se: np.ndarray) -> np.ndarray:
    """``Σ (paper − bound)² / se²`` over the last axis (rows without a finite bound are skipped).

    Examples
    --------
    >>> round(float(chi_square(np.array([1.0, 2.0]), np.array([[1.1, 2.0]]), np.array([[0.1, 0.5]]))[0]), 12)
    1.0
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = (paper - bound) ** 2 / se**2
    return np.nansum(np.where(np.isfinite(terms), terms, np.nan), axis=-1)


def _region(chi2: np.ndarray, dof: int, d_values, P_values) -> tuple[tuple, tuple]:
    i, j = np.unravel_index(int(np.nanargmin(chi2)), chi2.shape)
    best = float(chi2[i, j])
    limit = best + SIZE_REGION_DELTA * max(1.0, best / max(dof, 1))
    allowed = tuple((int(d_values[a]), int(P_values[b])) for a, b in zip(*np.nonzero(chi2 <= limit)))
    return (int(d_values[i]), int(P_values[j])), allowed


def infer_sizes(d_values=SIZE_GRID_D, P_values=SIZE_GRID_P, *, n_contexts: int = 2048, n_seeds: int = 4,
                execution: Execution | None = None) -> SizeInference:
    """χ² of ``B_∞`` and ``B_1`` against the paper's 14 nonlinear plateaus over a ``(d, P)`` grid.

    Cells with ``P < k`` are skipped; ``n_contexts``, ``n_seeds``: the Monte Carlo of each
    bound (:func:`theory.softmax_bounds.softmax_bounds`), cached in the execution's
    ``cache_dir`` (none by default) and computed by its ``workers`` (default 1).

    Notes
    -----
    No example: it needs hundreds of Monte-Carlo bounds (minutes); ``idepth study sizes`` runs it.
    """
    rows = tuple(paper_plateaus())
    d_values, P_values = tuple(int(d) for d in d_values), tuple(int(P) for P in P_values)
    cells = [(d, P, r) for d in d_values for P in P_values for r in rows if r["k"] <= P]
    keys = [softmax_bounds_key(r["a"], r["b"], d, P, r["k"], n_contexts=n_contexts, n_seeds=n_seeds)
            for d, P, r in cells]
    execution = as_execution(execution)
    values = cached_softmax_bounds(keys, execution.cache_dir,
                                   workers=execution.pool_size(default=1),
                                   progress=execution.progress)
    shape = (len(d_values), len(P_values), len(rows))
    mixture, mixture_se, single, single_se = (np.full(shape, np.nan) for _ in range(4))
    for (d, P, r), bound in zip(cells, values):
        idx = (d_values.index(d), P_values.index(P), rows.index(r))
        mixture[idx], mixture_se[idx] = bound.mixture, bound.mixture_se
        single[idx], single_se[idx] = bound.single, bound.single_se
    paper = np.array([r["value"] for r in rows])
    chi2_mix, chi2_single = chi_square(paper, mixture, mixture_se), chi_square(paper, single, single_se)
    dof = len(rows) - 2
    best_mix, region_mix = _region(chi2_mix, dof, d_values, P_values)
    best_single, region_single = _region(chi2_single, dof, d_values, P_values)
    return SizeInference(d_values=d_values, P_values=P_values, rows=rows, mixture=mixture, mixture_se=mixture_se,
                         single=single, single_se=single_se, chi2_mixture=chi2_mix, chi2_single=chi2_single,
                         best_mixture=best_mix, best_single=best_single, region_mixture=region_mix,
                         region_single=region_single, n_contexts=n_contexts, n_seeds=n_seeds)


def sizes_markdown(result: SizeInference, figure: str | None = None) -> str:
    """The Markdown section "Which sizes the paper's nonlinear plateaus come from".

    Notes
    -----
    No example: it needs a :class:`SizeInference` (minutes).
    """
    d_best, P_best = result.best_mixture
    i, j = result.d_values.index(d_best), result.P_values.index(P_best)
    lines = [
        "# Which sizes the paper's nonlinear plateaus come from",
        "",
        f"χ² between the paper's {len(result.rows)} nonlinear plateaus (Tables 1 and 4) and the oracle bounds "
        f"(theory.softmax_bounds: {result.n_seeds} seeds × {result.n_contexts} fit + held-out contexts each) over "
        f"d ∈ {list(result.d_values)}, P ∈ {list(result.P_values)}.",
        "",
        f"**Best size for B_∞ (best mixture of cosine heads): d = {d_best}, P = {P_best}** "
        f"(χ² = {result.chi2_mixture[i, j]:.4g} for {len(result.rows) - 2} degrees of freedom); allowed region: "
        + ", ".join(f"({d}, {P})" for d, P in result.region_mixture) + ".",
        f"Best size for B_1 (best single head): d = {result.best_single[0]}, P = {result.best_single[1]}; allowed: "
        + ", ".join(f"({d}, {P})" for d, P in result.region_single) + ".",
        "",
        "χ² of B_∞ (rows d, columns P):",
        "",
    ]
    lines += markdown_table(("d \\ P", *result.P_values),
                            [(d, *(f"{v:.3g}" for v in result.chi2_mixture[a])) for a, d in enumerate(result.d_values)])
    lines += ["", f"At d = {d_best}, P = {P_best}, row by row:", ""]
    table = []
    for r_index, r in enumerate(result.rows):
        mix, mix_se = result.mixture[i, j, r_index], result.mixture_se[i, j, r_index]
        one, one_se = result.single[i, j, r_index], result.single_se[i, j, r_index]
        table.append((r["source"], f"({r['a']:g}, {r['b']:g})", r["k"], r["verbatim"], f"{mix:.4g} ± {mix_se:.2g}",
                      f"{one:.4g} ± {one_se:.2g}", f"{r['value'] / mix:.3f}"))
    lines += markdown_table(("source", "(a, b)", "k", "paper", "B_∞", "B_1", "paper / B_∞"), table)
    if figure:
        lines += ["", f"![χ² map]({figure})"]
    return "\n".join(lines) + "\n"


def draw_size_map(result: SizeInference, path) -> Path:
    """χ² maps of B_∞ and B_1 over the (d, P) grid (log colour scale), the best size marked.

    Notes
    -----
    No example: it needs a :class:`SizeInference` (minutes).
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


def write_size_inference(result: SizeInference, out_dir) -> str:
    """Write ``OUT/sizes.md``, ``OUT/sizes.json`` and ``OUT/figures/sizes_chi2.png`` of :func:`infer_sizes`'s result.

    What ``idepth study sizes`` calls after :func:`infer_sizes` (it computes nothing); returns the Markdown.

    Notes
    -----
    No example: it needs a size inference (hundreds of Monte-Carlo bounds, minutes).
    """
    markdown = sizes_markdown(result, "figures/sizes_chi2.png")
    write_together(out_dir, {"figures/sizes_chi2.png": lambda path: draw_size_map(result, path),
                             "sizes.md": markdown, "sizes.json": json_text(result.to_dict())})
    return markdown
