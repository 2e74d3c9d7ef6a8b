"""Progress bars of the experiments layer (one place, so every long job reports the same way)."""

from __future__ import annotations

import sys

__all__ = ["progress_bar"]


def progress_bar(total: int, *, desc: str, unit: str = "it", enabled: bool | None = None, initial: int = 0):
    """A tqdm bar over ``total`` items (``enabled=None``: when stderr is a terminal).

    Examples
    --------
    >>> bar = progress_bar(3, desc="demo", enabled=False)
    >>> bar.update(1); bar.close()
    """
    from tqdm.auto import tqdm

    if enabled is None:
        enabled = sys.stderr.isatty()
    return tqdm(total=total, initial=initial, desc=desc, unit=unit, disable=not enabled)
