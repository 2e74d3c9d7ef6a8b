"""Values the commands parse from their flags, one parser each (``--spectra`` of expressible, bracket and study;
the size and depth lists of study)."""

from __future__ import annotations

__all__ = ["positive_ints", "spectra"]


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


def positive_ints(text: str, flag: str) -> tuple[int, ...]:
    """``'8,16,32'`` as ``(8, 16, 32)``: at least one integer, each >= 1 (empty items skipped).

    Examples
    --------
    >>> positive_ints("8, 16,", "--d")
    (8, 16)
    >>> positive_ints("8,x", "--d")
    Traceback (most recent call last):
    ...
    ValueError: --d must be comma-separated integers; got '8,x'
    >>> positive_ints("0", "--P")
    Traceback (most recent call last):
    ...
    ValueError: --P must list integers >= 1; got '0'
    """
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"{flag} must be comma-separated integers; got {text!r}") from None
    if not values:
        raise ValueError(f"{flag} must list at least one size; got {text!r}")
    if min(values) < 1:
        raise ValueError(f"{flag} must list integers >= 1; got {text!r}")
    return values
