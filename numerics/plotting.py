"""Figures of the package's predictions, written atomically (:func:`numerics.io.save_figure`)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["plot_prediction"]


def plot_prediction(prediction, path, title: str = "") -> Path:
    """Log-log plot of a :class:`~theory.predict.LossPrediction` (its interval and asymptote when it has them).

    The path's suffix must be one matplotlib writes (:data:`numerics.io.FIGURE_FORMATS`);
    nothing is written otherwise. What ``idepth predict --plot`` calls.

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
    ax.set_title(f"{prediction.attention} attention, {prediction.task} task\n{title}", fontsize=9)
    ax.legend(fontsize=8)
    return save_figure(fig, path, dpi=120)
