"""The one way the experiments layer gets matplotlib: headless (Agg), imported only when a figure is drawn; and
the one depth axis of its figures (:func:`depth_ticks`)."""

from __future__ import annotations

__all__ = ["depth_ticks", "pyplot"]


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
