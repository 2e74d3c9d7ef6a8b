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

The builders live by figure group (``_softmax``, ``_modes``, ``_linear``); what each
figure redraws of the paper is in :data:`numerics.experiments.reproduce.plan.ARTEFACTS`.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

from .. import _plot as p
from .._plot import STYLES, Figure, fit_problem
from ._linear import fig5a, fig5b, linear_easy_figure
from ._modes import modewise_figure, reducible_mode_spread
from ._softmax import fig1, fig4a, fig4b, fig4c, fig6ab, fig6cd, fig11, fig12, fig13, fig14, model_figure

__all__ = ["Figure", "BUILDERS", "build_figure", "fit_problem", "reducible_mode_spread", "STYLES"]

_SOFTMAX_MODES = dict(family_name="nonlinear_lazy", title="softmax attention, top-2: normalised")

#: artefact ID → builder: ``builder(ctx)`` draws the figure and returns it with its caption
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
    """Draw figure ``artefact_id`` (one of :data:`BUILDERS`) and write it (PNG and PDF) under ``OUT/figures/``.

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
    fig, caption = BUILDERS[artefact_id](ctx)
    return Figure(artefact_id, p.save(ctx, fig, artefact_id), caption)
