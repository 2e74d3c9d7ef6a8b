"""Input checks shared by the public API.

Every check raises :class:`ValueError` (or :class:`TypeError` for a wrong
type) whose message names the argument, the offending value and what is
allowed, so that the CLI can print it as a single line.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Iterable

import numpy as np

__all__ = [
    "check_choice",
    "check_depths",
    "check_finite_array",
    "check_nonnegative",
    "check_positive",
    "check_positive_int",
    "check_real",
    "check_level",
]


def check_choice(name: str, value: object, allowed: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``allowed``; raise ValueError otherwise."""
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(
            f"{name} must be one of {', '.join(repr(a) for a in allowed)}; got {value!r}"
        )
    return value


def _as_real(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number; got {value!r} ({type(value).__name__})")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite; got {value!r}")
    return value


def check_real(name: str, value: object) -> float:
    """Return ``float(value)`` if it is a finite real number."""
    return _as_real(name, value)


def check_level(level: object, name: str = "level") -> float:
    """Return a confidence level as a float in the open interval (0, 1)."""
    value = _as_real(name, level)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in the open interval (0, 1); got {value!r}")
    return value


def check_positive(name: str, value: object) -> float:
    """Return ``float(value)`` if it is a finite real number > 0."""
    value = _as_real(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be > 0; got {value!r}")
    return value


def check_nonnegative(name: str, value: object) -> float:
    """Return ``float(value)`` if it is a finite real number >= 0."""
    value = _as_real(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0; got {value!r}")
    return value


def check_positive_int(name: str, value: object, minimum: int = 1) -> int:
    """Return ``int(value)`` if it is an integer >= ``minimum`` (floats like 3.0 are refused)."""
    if isinstance(value, bool) or not isinstance(value, (Integral, np.integer)):
        raise TypeError(f"{name} must be an integer >= {minimum}; got {value!r} ({type(value).__name__})")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value}")
    return value


def check_finite_array(name: str, values: object, *, positive: bool = False, ndim: int | None = 1) -> np.ndarray:
    """Return ``values`` as a float64 array, refusing NaN/inf (and values <= 0 if ``positive``)."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers; got {values!r}") from exc
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional; got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must contain only finite values (no NaN or inf)")
    if positive and np.any(array <= 0):
        bad = array[array <= 0][0]
        raise ValueError(f"{name} must contain only values > 0; found {bad!r}")
    return array


def check_depths(values: object, name: str = "depth") -> np.ndarray:
    """Return depths as a 1-d int64 array of integers >= 1.

    Accepts a scalar or any array-like; floats are accepted only when they
    are integral (``4.0``), because depth counts layers.
    """
    array = np.asarray(values)
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise TypeError(f"{name} must be a positive integer or an array of them; got {values!r}")
    flat = np.atleast_1d(array).astype(np.float64).ravel()
    if flat.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(flat)) or np.any(flat != np.round(flat)) or np.any(flat < 1):
        bad = flat[~(np.isfinite(flat) & (flat == np.round(flat)) & (flat >= 1))][0]
        raise ValueError(f"{name} must be an integer >= 1 (number of layers L); got {float(bad):g}")
    return flat.astype(np.int64)
