"""Values the commands parse from their flags, one parser each (``--spectra`` of expressible, bracket and study)."""

from __future__ import annotations

__all__ = ["spectra"]


def spectra(text: str, flag: str = "--spectra") -> list[tuple[float, float]]:
    """``'a,b;a,b'`` as ``[(a, b), ...]`` (paper eq. 2's exponents, each >= 0; empty items skipped).

    Examples
    --------
    >>> spectra("0,0; 0.5,0;")
    [(0.0, 0.0), (0.5, 0.0)]
    >>> spectra("0,-1")
    Traceback (most recent call last):
    ...
    ValueError: --spectra exponents must be >= 0; got (0, -1)
    """
    out = []
    for item in text.split(";"):
        if not item.strip():
            continue
        try:
            a, b = (float(v) for v in item.split(","))
        except ValueError:
            raise ValueError(f"{flag} must look like 'a,b;a,b' (e.g. '0,0;0,0.25'); got {text!r}") from None
        if not (a >= 0 and b >= 0):
            raise ValueError(f"{flag} exponents must be >= 0; got ({a:g}, {b:g})")
        out.append((a, b))
    if not out:
        raise ValueError(f"{flag} must list at least one 'a,b'; got {text!r}")
    return out
