"""The one way the experiments layer gets matplotlib: headless (Agg), imported only when a figure is drawn."""

from __future__ import annotations

__all__ = ["pyplot"]


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
