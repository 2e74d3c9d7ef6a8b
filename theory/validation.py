"""Argument checks shared by ``theory`` and ``numerics`` (one contract per kind of argument).

Every check returns the normalised value or raises :class:`TypeError` (wrong
type) or :class:`ValueError` (right type, value not allowed) with a message
that starts with the argument's name and says what is allowed, so that the CLI
can print it as a single line.

Random generators (:func:`check_generator`): a ``numpy.random.Generator`` is
always accepted; a non-negative integer seed only where the caller says so
(``allow_seed=True``, turned into ``numpy.random.default_rng(seed)``), ``None``
only with ``allow_none=True``. Anything else is a TypeError, a negative seed a
ValueError.
"""

from __future__ import annotations

import math
import reprlib
from numbers import Integral, Real
from typing import Iterable

import numpy as np

__all__ = [
    "check_choice",
    "check_depths",
    "check_dtype",
    "check_finite_array",
    "check_generator",
    "check_level",
    "check_nonnegative",
    "check_positive",
    "check_positive_int",
    "check_real",
    "check_top_k",
]

#: the floating dtypes the numerics accept (:func:`check_dtype`)
FLOAT_DTYPES = (np.float32, np.float64)


def check_choice(name: str, value: object, allowed: Iterable[str]) -> str:
    """Return ``value`` if it is one of the strings ``allowed``; raise ValueError otherwise.

    Parameters
    ----------
    name : str
        The argument's name (starts the error message).
    value : object
        What the caller passed.
    allowed : iterable of str
        The allowed strings (listed in the error message).

    Returns
    -------
    str

    References
    ----------
    Paper eqs. (5)-(6) and (44): the task and the ranking rule are such choices.

    Examples
    --------
    >>> check_choice("task", "easy", ("easy", "difficult"))
    'easy'
    >>> check_choice("task", "medium", ("easy", "difficult"))
    Traceback (most recent call last):
    ...
    ValueError: task must be one of 'easy', 'difficult'; got 'medium'
    """
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
    """Return ``float(value)`` if it is a finite real number (not a bool).

    References
    ----------
    Paper eq. (16): the parameters of the fitted depth law are real numbers.

    Examples
    --------
    >>> check_real("c", 2)
    2.0
    """
    return _as_real(name, value)


def check_level(level: object, name: str = "level") -> float:
    """Return a confidence level as a float in the open interval (0, 1).

    References
    ----------
    Paper eqs. (88)-(89): confidence intervals of the fitted exponent.

    Examples
    --------
    >>> check_level(0.95)
    0.95
    """
    value = _as_real(name, level)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in the open interval (0, 1); got {value!r}")
    return value


def check_positive(name: str, value: object) -> float:
    """Return ``float(value)`` if it is a finite real number > 0.

    References
    ----------
    Paper eq. (2) (prefactors ``c_λ, c_ω > 0``) and eq. (33) (the step ``γ > 0``).

    Examples
    --------
    >>> check_positive("gamma", 0.5)
    0.5
    """
    value = _as_real(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be > 0; got {value!r}")
    return value


def check_nonnegative(name: str, value: object) -> float:
    """Return ``float(value)`` if it is a finite real number >= 0.

    References
    ----------
    Paper eq. (2): the spectral exponents ``a, b >= 0``.

    Examples
    --------
    >>> check_nonnegative("a", 0)
    0.0
    """
    value = _as_real(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0; got {value!r}")
    return value


def check_positive_int(name: str, value: object, minimum: int = 1) -> int:
    """Return ``int(value)`` if it is an integer >= ``minimum`` (floats like 3.0 are refused).

    References
    ----------
    Paper eqs. (1)-(12): the sizes d, P, N, k and the depth L are positive integers.

    Examples
    --------
    >>> check_positive_int("P", 8)
    8
    >>> check_positive_int("P", 8.0)
    Traceback (most recent call last):
    ...
    TypeError: P must be an integer >= 1; got 8.0 (float)
    """
    if isinstance(value, bool) or not isinstance(value, (Integral, np.integer)):
        raise TypeError(f"{name} must be an integer >= {minimum}; got {value!r} ({type(value).__name__})")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value}")
    return value


def check_top_k(k: object, P: int, name: str = "k") -> int:
    """Return ``int(k)`` if it is an integer with ``1 <= k <= P`` (the top-k of a context of P tokens).

    ``P`` is taken as already checked (:func:`check_positive_int`).

    References
    ----------
    Paper eq. (6): ``S_k`` is the top k of the P context tokens.

    Examples
    --------
    >>> check_top_k(2, 8)
    2
    >>> check_top_k(9, 8)
    Traceback (most recent call last):
    ...
    ValueError: k must be an integer in [1, P] = [1, 8]; got 9
    """
    if isinstance(k, bool) or not isinstance(k, (Integral, np.integer)):
        raise TypeError(f"{name} must be an integer in [1, P] = [1, {P}]; got {k!r} ({type(k).__name__})")
    k = int(k)
    if not 1 <= k <= P:
        raise ValueError(f"{name} must be an integer in [1, P] = [1, {P}]; got {k}")
    return k


def check_generator(
    rng: object, name: str = "rng", *, allow_none: bool = False, allow_seed: bool = False
) -> np.random.Generator | None:
    """Return a ``numpy.random.Generator`` for ``rng`` (the one contract for random sources).

    Parameters
    ----------
    rng : object
        A ``numpy.random.Generator`` (returned as is, its stream untouched); with
        ``allow_seed`` also a non-negative integer seed (not a bool), returned as
        ``numpy.random.default_rng(seed)``; with ``allow_none`` also ``None``
        (returned as is).
    name : str, default 'rng'
        The argument's name (starts the error message).
    allow_none, allow_seed : bool, default False
        What the caller accepts besides a Generator.

    Returns
    -------
    numpy.random.Generator or None

    Raises
    ------
    TypeError
        Anything else (a seed where seeds are not allowed, a float, a string, ...).
    ValueError
        A negative integer seed.

    References
    ----------
    Paper eqs. (3)-(4): the random rotations and Gaussian draws a generator feeds.

    Examples
    --------
    >>> bool(check_generator(5, allow_seed=True).integers(10) == np.random.default_rng(5).integers(10))
    True
    >>> check_generator(None, allow_none=True) is None
    True
    >>> check_generator(5)
    Traceback (most recent call last):
    ...
    TypeError: rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)); got 5 (int)
    """
    if isinstance(rng, np.random.Generator) or (rng is None and allow_none):
        return rng
    if allow_seed and isinstance(rng, (Integral, np.integer)) and not isinstance(rng, bool):
        if int(rng) < 0:
            raise ValueError(f"{name} must be a non-negative integer seed (or a numpy.random.Generator); got {int(rng)}")
        return np.random.default_rng(int(rng))
    allowed = ["a numpy.random.Generator"] + ["a non-negative integer seed"] * allow_seed + ["None"] * allow_none
    what = allowed[0] if len(allowed) == 1 else ", ".join(allowed[:-1]) + " or " + allowed[-1]
    hint = "" if allow_seed else " (e.g. numpy.random.default_rng(seed))"
    raise TypeError(f"{name} must be {what}{hint}; got {reprlib.repr(rng)} ({type(rng).__name__})")


def check_dtype(dtype: object, name: str = "dtype") -> type:
    """Return ``dtype`` as ``numpy.float32`` or ``numpy.float64``.

    Raises TypeError for something that is no dtype and ValueError for any other dtype.

    References
    ----------
    Paper eqs. (7)-(12): the precision the data and the models are computed in (not stated there).

    Examples
    --------
    >>> check_dtype("float32")
    <class 'numpy.float32'>
    """
    try:
        resolved = np.dtype(dtype).type
    except TypeError as exc:
        raise TypeError(f"{name} must be numpy.float32 or numpy.float64; got {dtype!r}") from exc
    if resolved not in FLOAT_DTYPES:
        raise ValueError(f"{name} must be numpy.float32 or numpy.float64; got {np.dtype(dtype).name}")
    return resolved


def check_finite_array(name: str, values: object, *, positive: bool = False, ndim: int | None = 1) -> np.ndarray:
    """Return ``values`` as a float64 array, refusing NaN/inf (and values <= 0 if ``positive``).

    Parameters
    ----------
    name : str
        The argument's name.
    values : array_like
    positive : bool, default False
        Require every value > 0.
    ndim : int or None, default 1
        Required number of dimensions (None: any).

    Returns
    -------
    numpy.ndarray

    References
    ----------
    Paper eq. (2): spectra are arrays of positive eigenvalues.

    Examples
    --------
    >>> check_finite_array("eigenvalues", [2, 1], positive=True).tolist()
    [2.0, 1.0]
    """
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

    Accepts a scalar or a 1-d array-like (a 2-d array is refused, not flattened); floats
    are accepted only when they are integral (``4.0``), because depth counts layers.

    References
    ----------
    Paper eqs. (9)-(12): the depth L is the number of residual layers.

    Examples
    --------
    >>> check_depths([1, 2.0, 4]).tolist()
    [1, 2, 4]
    """
    array = np.asarray(values)
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise TypeError(f"{name} must be a positive integer or an array of them; got {values!r}")
    if array.ndim > 1:
        raise ValueError(f"{name} must be a scalar or a 1-d array of depths; got an array of shape {array.shape}")
    flat = np.atleast_1d(array).astype(np.float64)
    if flat.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(flat)) or np.any(flat != np.round(flat)) or np.any(flat < 1):
        bad = flat[~(np.isfinite(flat) & (flat == np.round(flat)) & (flat >= 1))][0]
        raise ValueError(f"{name} must be an integer >= 1 (number of layers L); got {float(bad):g}")
    return flat.astype(np.int64)
