"""The paper's figures, redrawn from a reproduction's runs (PNG and PDF).

A builder takes the context and returns the figure and a caption with its
numbers. Conventions: one colour, marker and line style per spectrum (or one
panel each, where curves coincide); fits dashed, exponents in the legend, not
drawn when they do not determine it (:func:`fit_problem`); the oracle bound
dash-dotted; error bars one SE; a family without data gives a figure saying so.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

from .. import plotting as p
from ..plotting import STYLES, Figure, fit_problem
from ._linear import fig5a, fig5b, linear_easy_figure
from ._modes import modewise_figure, reducible_mode_spread
from ._softmax import fig1, fig4a, fig4b, fig4c, fig6ab, fig6cd, fig11, fig12, fig13, fig14, model_figure

__all__ = ["Figure", "BUILDERS", "build_figure", "fit_problem", "reducible_mode_spread", "STYLES"]

_SOFTMAX_MODES = dict(family_name="nonlinear_lazy", title="softmax attention, top-2: normalised")

#: artefact ID → ``builder(ctx)``, which returns the figure and its caption
BUILDERS: dict[str, Callable] = {
    "fig1": fig1, "fig3a": partial(linear_easy_figure, fixed="a"), "fig3b": partial(linear_easy_figure, fixed="b"),
    "fig3c": partial(modewise_figure, family_name="linear_easy", reducible=False, prefer_a=2.0,
                     title="linear attention, easy task: normalised"),
    "fig4a": fig4a, "fig4b": fig4b, "fig4c": fig4c, "fig5a": fig5a, "fig5b": fig5b,
    "fig6a": partial(fig6ab, fixed="a"), "fig6b": partial(fig6ab, fixed="b"),
    "fig6c": partial(fig6cd, quantity="C_L", ylabel="shared error C_L"),
    "fig6d": partial(fig6cd, quantity="A_minus_C", ylabel="disagreement A_L − C_L"),
    "fig7a": partial(modewise_figure, reducible=False, **_SOFTMAX_MODES),
    "fig7b": partial(modewise_figure, reducible=True, **_SOFTMAX_MODES),
    "fig9": partial(model_figure, family_name="single_stream", name="single stream", paper="appendix C.1"),
    "fig10": partial(model_figure, family_name="untied_values", name="untied values", paper="appendix C.2"),
    "fig11": fig11, "fig12": fig12, "fig13": fig13, "fig14": fig14,
}


def build_figure(ctx, artefact_id: str) -> Figure:
    """Draw figure ``artefact_id`` and write it (PNG and PDF) under ``OUT/figures/``.

    Examples
    --------
    >>> sorted(BUILDERS)[:3]
    ['fig1', 'fig10', 'fig11']
    """
    if artefact_id not in BUILDERS:
        raise ValueError(f"artefact_id must be a figure ID ({', '.join(BUILDERS)}); got {artefact_id!r}")
    fig, caption = BUILDERS[artefact_id](ctx)
    return Figure(artefact_id, p.save(ctx, fig, artefact_id), caption)
