"""Mode-wise exponential decay summing to a power law in depth (paper eqs. (55)-(56)).

If every mode k of the loss decays exponentially in depth with its own depth
scale τ_k, ``R_L = Σ_k w_k e^(-L/τ_k)`` (eq. 55), and the loss weight carried by
depth scales near τ has the density ``ρ(τ) = C τ^(-β)`` for ``τ >= τ_0``
(β > 1), then

``R_L ≈ ∫_{τ_0}^∞ C τ^(-β) e^(-L/τ) dτ = C L^(1-β) γ(β-1, L/τ_0)``

(:data:`MODEWISE_INTEGRAL`, γ the lower incomplete Gamma function, obtained
by the substitution u = L/τ), which tends to ``C Γ(β-1) L^(-(β-1))``
(:data:`MODEWISE_ASYMPTOTE`, eq. 56) once ``L >> τ_0``: a power law in depth
made of exponentials.
"""

from __future__ import annotations

from typing import Union

import numpy as np
import sympy as sp

from . import symbols as s
from .validation import check_depths, check_finite_array, check_positive

__all__ = [
    "MODE_WEIGHT",
    "MODE_TIMESCALE",
    "MODEWISE_SUM",
    "MODEWISE_DENSITY",
    "MODEWISE_INTEGRAND",
    "MODEWISE_INTEGRAL",
    "MODEWISE_ASYMPTOTE",
    "modewise_sum",
    "modewise_integral",
    "modewise_asymptote",
]

Depth = Union[int, np.ndarray]

#: mode weights w_k and depth scales τ_k of eq. (55), as indexed symbols
MODE_WEIGHT = sp.IndexedBase("w", positive=True)
MODE_TIMESCALE = sp.IndexedBase("tau", positive=True)
_d = sp.Symbol("d", positive=True, integer=True)
#: paper eq. (55): R_L = Σ_k w_k e^(-L/τ_k)
MODEWISE_SUM = sp.Sum(MODE_WEIGHT[s.k] * sp.exp(-s.L / MODE_TIMESCALE[s.k]), (s.k, 1, _d))
#: loss-weighted density of depth scales, ρ(τ) = C τ^(-β) for τ >= τ_0 (eq. 55)
MODEWISE_DENSITY = s.C * s.tau ** (-s.beta_exp)
#: the continuum of eq. (55): ρ(τ) e^(-L/τ)
MODEWISE_INTEGRAND = MODEWISE_DENSITY * sp.exp(-s.L / s.tau)
#: ∫_{τ_0}^∞ C τ^(-β) e^(-L/τ) dτ = C L^(1-β) γ(β-1, L/τ_0) (u = L/τ; needs β > 1)
MODEWISE_INTEGRAL = s.C * s.L ** (1 - s.beta_exp) * sp.lowergamma(s.beta_exp - 1, s.L / s.tau0)
#: paper eq. (56): R_L ~ C Γ(β-1) L^(-(β-1))
MODEWISE_ASYMPTOTE = s.C * sp.gamma(s.beta_exp - 1) * s.L ** (1 - s.beta_exp)

_MODULES = ["scipy", "numpy"]
_integral = sp.lambdify((s.L, s.C, s.beta_exp, s.tau0), MODEWISE_INTEGRAL, _MODULES)
_asymptote = sp.lambdify((s.L, s.C, s.beta_exp), MODEWISE_ASYMPTOTE, _MODULES)


def _shaped(depth: object, values: np.ndarray):
    shape = np.shape(depth)
    values = np.asarray(values, dtype=np.float64).ravel()
    return float(values[0]) if shape == () else values.reshape(shape)


def _check_beta(beta: object) -> float:
    beta = check_positive("beta", beta)
    if beta <= 1:
        raise ValueError(f"beta must be > 1 (the depth-scale density C τ^(-β) must be integrable, eq. 55); got {beta!r}")
    return beta


def modewise_sum(depth: Depth, weights: np.ndarray, timescales: np.ndarray):
    """Loss made of exponentially decaying modes, ``R_L = Σ_k w_k e^(-L/τ_k)``.

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) L >= 1.
    weights : array_like, shape (K,)
        Mode weights ``w_k >= 0``.
    timescales : array_like, shape (K,)
        Depth scales ``τ_k > 0`` (same length as ``weights``).

    Returns
    -------
    float or numpy.ndarray
        Shaped like ``depth``.

    References
    ----------
    Paper eq. (55).

    Examples
    --------
    >>> modewise_sum([1, 2], [1.0, 2.0], [1.0, 2.0]).round(6).tolist()
    [1.580941, 0.871094]
    """
    depths = check_depths(depth)
    weights = check_finite_array("weights", weights)
    if np.any(weights < 0):
        raise ValueError(f"weights must be >= 0; found {weights[weights < 0][0]!r}")
    timescales = check_finite_array("timescales", timescales, positive=True)
    if timescales.shape != weights.shape:
        raise ValueError(
            f"timescales must have the length of weights ({weights.size}); got {timescales.size}"
        )
    rates = 1.0 / timescales
    values = np.exp(-depths.astype(np.float64)[:, None] * rates[None, :]) @ weights
    return _shaped(depth, values)


def modewise_integral(depth: Depth, C: float, beta: float, tau0: float):
    """Continuum of eq. (55): ``∫_{τ_0}^∞ C τ^(-β) e^(-L/τ) dτ = C L^(1-β) γ(β-1, L/τ_0)``.

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) L >= 1.
    C : float
        Density prefactor, C > 0.
    beta : float
        Density exponent, β > 1.
    tau0 : float
        Smallest depth scale, τ_0 > 0.

    Returns
    -------
    float or numpy.ndarray
        Shaped like ``depth`` (:data:`MODEWISE_INTEGRAL`).

    References
    ----------
    Paper eqs. (55)-(56).

    Examples
    --------
    >>> round(modewise_integral(1, 1.0, 2.0, 1.0), 10)     # ∫_1^∞ τ^-2 e^(-1/τ) dτ = 1 - 1/e
    0.6321205588
    """
    depths = check_depths(depth)
    C = check_positive("C", C)
    beta = _check_beta(beta)
    tau0 = check_positive("tau0", tau0)
    return _shaped(depth, _integral(depths.astype(np.float64), C, beta, tau0))


def modewise_asymptote(depth: Depth, C: float, beta: float):
    """Power law ``C Γ(β-1) L^(-(β-1))`` of a mode-wise exponential loss (eq. 56).

    The ``L >> τ_0`` limit of :func:`modewise_integral`; the relative
    difference is ``Γ(β-1, L/τ_0)/Γ(β-1)``, exponentially small in ``L/τ_0``.

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) L >= 1.
    C : float
        Density prefactor, C > 0.
    beta : float
        Density exponent, β > 1.

    Returns
    -------
    float or numpy.ndarray
        Shaped like ``depth`` (:data:`MODEWISE_ASYMPTOTE`).

    References
    ----------
    Paper eq. (56).

    Examples
    --------
    >>> modewise_asymptote([1, 2, 4], 1.0, 3.0).tolist()     # Γ(2) L^-2
    [1.0, 0.25, 0.0625]
    """
    depths = check_depths(depth)
    C = check_positive("C", C)
    beta = _check_beta(beta)
    return _shaped(depth, _asymptote(depths.astype(np.float64), C, beta))
