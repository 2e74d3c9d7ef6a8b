"""Mode-wise losses: Fig. 3c (linear: sequential), Figs. 7a-b (softmax: parallel)."""

from __future__ import annotations

import numpy as np

from .. import plotting as p
from .. import analysis
from ...study.curves import spectrum_label

#: the normalised reducible mode loss of Fig. 7b, ℓ_k the normalised mode loss
_REDUCIBLE = "(ℓ_k(L) − ℓ_k(L_max)) / (ℓ_k(1) − ℓ_k(L_max))"


def _reducible(matrix: np.ndarray) -> np.ndarray:
    """:data:`_REDUCIBLE` for every mode (rows: depths)."""
    base = matrix[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (matrix - base) / (matrix[0] - base)


def reducible_mode_spread(ctx, family_name: str, spectrum) -> tuple:
    """``(depths, spread)``: std over modes of the normalised reducible mode loss.

    At each intermediate depth; quoted by Fig. 7b and the verdict.

    References
    ----------
    Paper Fig. 7b.

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.reproduce.context import ReproductionContext
    >>> from numerics.experiments.reproduce.scales import get_scale
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
    if reducible:
        matrix = _reducible(matrix)
        mean, std = np.nanmean(matrix, axis=1), np.nanstd(matrix, axis=1)
        ax.fill_between(depths, mean - std, mean + std, color="0.8", lw=0,
                        label=f"mean ± std over all {d} modes (the spread tested)")
    for colour, marker, style, mode in p.styled(modes):
        ax.plot(depths, matrix[:, mode - 1], marker=marker, ms=3.5, ls=style, color=colour, label=f"mode k = {mode}")
    return modes


def _mode_spectrum(ctx, family_name: str, prefer_a: float | None = None):
    spectra = ctx.family(family_name).spectra
    if prefer_a is not None:
        for s in spectra:
            if s[0] == prefer_a:
                return s
    anisotropic = [s for s in spectra if s[0] > 0]  # modes differ only when the input spectrum is not flat
    return anisotropic[0] if anisotropic else (spectra[0] if spectra else None)


def modewise_figure(ctx, *, family_name: str, reducible: bool, title: str, prefer_a: float | None = None) -> tuple:
    """Normalised mode-wise loss by depth (Figs. 3c, 7a; eqs. 55-56), or its
    reducible part, whose collapse is parallel learning (Fig. 7b)."""
    family = ctx.family(family_name)
    spectrum = _mode_spectrum(ctx, family_name, prefer_a)
    title += " reducible mode-wise loss" if reducible else " mode-wise loss"
    fig, ax = p.subplots(figsize=(6.0, 4.3))
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
    # the formula is longer than the axis is high: a line of its own
    ax.set_ylabel(f"reducible mode loss\n{_REDUCIBLE}" if reducible else "normalised mode loss ℓ_k = E ẽ_k² / E t̃_k²",
                  fontsize=9 if reducible else None)
    p.legend(ax)
    if reducible:
        title += f" {_REDUCIBLE}, ℓ_k the normalised mode loss"
    return fig, title + ". " + caption
