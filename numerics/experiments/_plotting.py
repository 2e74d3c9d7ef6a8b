"""The one way the experiments layer gets matplotlib: headless (Agg), imported only when a figure is drawn; the
one depth axis of its figures (:func:`depth_ticks`); and the one drawing of a loss's excess over a bracketed
plateau on a log axis (:func:`excess_floor`, :func:`excess_band`)."""

from __future__ import annotations

__all__ = ["depth_ticks", "excess_band", "excess_floor", "pyplot"]


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display needed; importing this module imports no matplotlib).

    Examples
    --------
    >>> pyplot().get_backend().lower()
    'agg'
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def depth_ticks(ax, depths, *, label: str | None = "depth L", **label_options) -> None:
    """Depths on a log-2 x axis: a tick at each of ``depths``, labelled as numbers, no minor ticks.

    ``label`` (None: none) is the axis label, with matplotlib's ``label_options`` (``fontsize=8``).

    Examples
    --------
    >>> fig, ax = pyplot().subplots()
    >>> depth_ticks(ax, [1, 2, 4])
    >>> ax.get_xscale(), [t.get_text() for t in ax.get_xticklabels()], ax.get_xlabel()
    ('log', ['1', '2', '4'], 'depth L')
    >>> pyplot().close(fig)
    """
    from matplotlib import ticker

    ax.set_xscale("log", base=2)
    ax.set_xticks(depths)
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    if label is not None:
        ax.set_xlabel(label, **label_options)


def excess_floor(excesses) -> float:
    """The lowest value a log axis of excesses shows: a thirtieth of the least positive one (at least 1e-6; 1e-4
    where none is positive), so an excess that is not positive is drawn at the panel's floor, not dropped.

    Examples
    --------
    >>> excess_floor([[0.3, 0.03], [-0.01]])
    0.001
    >>> excess_floor([[-0.1]])
    0.0001
    """
    import numpy as np

    values = np.concatenate([np.ravel(np.asarray(e, dtype=float)) for e in excesses])
    return max(float(np.min(values[values > 0])) / 30.0, 1e-6) if np.any(values > 0) else 1e-4


def excess_band(ax, depths, loss, se, low: float, high: float, floor: float, *, colour, marker: str,
                label: str | None, band_alpha: float = 0.18) -> None:
    """Draw ``loss − plateau`` against ``depths`` where the plateau is only known to lie in ``[low, high]``.

    The markers, joined by a line with ± ``se`` error bars, are the excess over ``low`` (the largest it can be); a
    shaded band of the same colour (opacity ``band_alpha``) reaches down to the excess over ``high``. Values under ``floor`` (an excess
    that is not positive) are drawn at ``floor``; an error bar never reaches below zero on the log axis. A power
    law ``loss = plateau + c L^-α`` (paper eq. 16) is then a straight line of slope ``−α`` on log–log axes.

    Examples
    --------
    >>> fig, ax = pyplot().subplots()
    >>> excess_band(ax, [1, 2, 4], [2.2, 2.1, 2.05], [0.01, 0.01, 0.01], 2.0, 2.04, 1e-3, colour="C0", marker="o",
    ...             label="envelope")
    >>> ax.set_yscale("log")
    >>> [round(float(v), 6) for v in ax.get_lines()[0].get_ydata()]
    [0.2, 0.1, 0.05]
    >>> pyplot().close(fig)
    """
    import numpy as np

    L = np.asarray(depths, dtype=float)
    most, least = np.asarray(loss, dtype=float) - low, np.asarray(loss, dtype=float) - high
    ax.fill_between(L, np.maximum(least, floor), np.maximum(most, floor), color=colour, alpha=band_alpha, lw=0)
    ax.errorbar(L, np.maximum(most, floor), yerr=np.minimum(se, 0.999 * np.maximum(most, floor)),
                fmt=marker + "-", color=colour, ms=4, lw=1, capsize=2, label=label)
