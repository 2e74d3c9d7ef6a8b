"""Figures of the package's predictions, written atomically (:func:`numerics.io.save_figure`), and the plain
tick labels every figure of the package uses on its log axes (:func:`plain_log_ticks`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

__all__ = ["plain_log_ticks", "plain_number", "plot_prediction", "wrap_title"]


def plain_number(value: float) -> str:
    """A tick label as a reader writes it: ``0.2``, ``1``, ``30``, ``0.0001`` -- never ``2×10⁻¹``.

    Examples
    --------
    >>> [plain_number(v) for v in (0.2, 1.0, 30.0, 1e-4, 2.18, 250000.0)]
    ['0.2', '1', '30', '0.0001', '2.18', '250000']
    """
    import numpy as np

    return np.format_float_positional(float(value), precision=3, unique=True, fractional=False, trim="-")


def _plain_log_formatter(base: float, *, minor: bool):
    """matplotlib's choice of which log ticks to label (decades; sub-decades on a short axis), printed plainly."""
    import matplotlib.ticker as ticker

    class PlainLogFormatter(ticker.LogFormatter):
        def __call__(self, x, pos=None):
            return plain_number(x) if super().__call__(x, pos) else ""

    return PlainLogFormatter(base=base, labelOnlyBase=not minor)


def plain_log_ticks(fig) -> None:
    """Every log axis of ``fig`` labelled with plain numbers (:func:`plain_number`), major and minor ticks.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots(); _ = ax.loglog([1, 2], [0.2, 0.6]); plain_log_ticks(fig); fig.canvas.draw()
    >>> sorted({t.get_text() for t in ax.yaxis.get_ticklabels(which="both")} - {""})[:3]
    ['0.1', '0.2', '0.3']
    >>> plt.close(fig)
    """
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() != "log":
                continue
            base = getattr(axis.get_transform(), "base", 10.0)
            axis.set_major_formatter(_plain_log_formatter(base, minor=False))
            axis.set_minor_formatter(_plain_log_formatter(base, minor=True))


def wrap_title(text: str, fig, *, fontsize: float) -> str:
    """``text`` wrapped so that each line fits the width of ``fig`` at ``fontsize`` (a title is never clipped).

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig = plt.figure(figsize=(2, 2)); wrap_title("a b c d e f g h i j k l m n o p", fig, fontsize=10).count("\\n") > 0
    True
    >>> plt.close(fig)
    """
    # an average character of a sans-serif font is about 0.6 em wide; keep a margin for the axes' padding
    chars = max(int(0.9 * fig.get_figwidth() * 72 / (0.6 * fontsize)), 10)
    return "\n".join(textwrap.fill(line, chars, break_long_words=True) for line in text.splitlines())


def plot_prediction(prediction, path, title: str = "") -> Path:
    """Log-log plot of a :class:`~theory.predict.LossPrediction` (its interval and asymptote when it has them).

    The path's suffix must be one matplotlib writes (:data:`numerics.io.FIGURE_FORMATS`);
    nothing is written otherwise. What ``idepth predict --plot`` calls. The title is wrapped to
    the figure's width and the tick labels are plain numbers.

    Returns
    -------
    pathlib.Path

    References
    ----------
    Paper eqs. (16), (29)–(40), (41)–(54), (60)–(63) (the laws plotted).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from theory import PowerLawSpectrum, predict_loss
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     plot_prediction(predict_loss([1, 2, 4], PowerLawSpectrum(2, 1, 64)), pathlib.Path(tmp) / "p.png").suffix
    '.png'
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from numerics.io import FIGURE_FORMATS, check_output_file, save_figure

    path = check_output_file(path, "--plot", suffixes=FIGURE_FORMATS)
    fig, ax = plt.subplots(figsize=(5.5, 4.0), layout="constrained")
    positive = prediction.loss > 0
    ax.loglog(prediction.depth[positive], prediction.loss[positive], "o-", label="predicted $R_L$")
    if prediction.lower is not None:
        ax.fill_between(prediction.depth, prediction.lower, prediction.upper, alpha=0.25, label="95% interval")
    if prediction.exponent is not None and prediction.coefficient is not None:
        L = prediction.depth.astype(float)
        ax.loglog(L, prediction.plateau + prediction.coefficient * L ** (-prediction.exponent), "--",
                  label=f"asymptote $\\propto L^{{-{prediction.exponent:.3g}}}$")
    ax.set_xlabel("depth $L$")
    ax.set_ylabel("loss $R_L$")
    heading = f"{prediction.attention} attention, {prediction.task} task" + (f"\n{title}" if title else "")
    ax.set_title(wrap_title(heading, fig, fontsize=9), fontsize=9)
    ax.legend(fontsize=8)
    plain_log_ticks(fig)
    return save_figure(fig, path, dpi=120)
