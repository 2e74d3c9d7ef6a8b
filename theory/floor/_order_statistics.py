"""Order statistics of the top k of P standard normals (paper eqs. (44)-(46)); part of :mod:`theory.floor`.

γ_{P,k}, the second moment of the top-k mean and ``E[t | q]`` under
inner-product ranking, by deterministic quadrature over the density of the
k-th largest value (no Monte Carlo). The quadrature
(:func:`_kth_largest_expectation`) is shared with the cosine order statistics
of the semi-analytic route.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp
from scipy import integrate, special

from .. import symbols as s
from ..spectra import SpectrumLike, as_spectrum
from ..validation import check_positive_int, check_top_k


# ---------------------------------------------------------------------------
# Symbolic formulas (written once; numeric code is lambdified or tested against them)
# ---------------------------------------------------------------------------
#: number of context tokens P and the order-statistic variable x
P_sym = sp.Symbol("P", positive=True, integer=True)
x_sym = sp.Symbol("x", real=True)
_phi = sp.exp(-x_sym**2 / 2) / sp.sqrt(2 * sp.pi)
_Phi = (1 + sp.erf(x_sym / sp.sqrt(2))) / 2

#: density of the k-th largest of P iid N(0, 1) (defines γ_{P,k} of eq. 45)
ORDER_STATISTIC_DENSITY = (
    sp.factorial(P_sym) / (sp.factorial(s.k - 1) * sp.factorial(P_sym - s.k))
    * _Phi ** (P_sym - s.k) * (1 - _Phi) ** (s.k - 1) * _phi
)
#: E[X | X > x] for X ~ N(0, 1) (inverse Mills ratio); E[X² | X > x] = 1 + x·(this)
NORMAL_TAIL_MEAN = _phi / (1 - _Phi)

#: γ_{P,k}, tr Σ², and eq. (46): c = γ_{P,k} / sqrt(tr Σ²)
gamma_sym = sp.Symbol("gamma_Pk", positive=True)
trace_sigma2_sym = sp.Symbol("trSigma2", positive=True)
MEAN_DIRECTION_COEFFICIENT = gamma_sym / sp.sqrt(trace_sigma2_sym)
_mean_direction_coefficient = sp.lambdify((gamma_sym, trace_sigma2_sym), MEAN_DIRECTION_COEFFICIENT, "math")


# ---------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------
def _check_P_k(P: object, k: object) -> tuple[int, int]:
    P = check_positive_int("P", P)
    return P, check_top_k(k, P)


# ---------------------------------------------------------------------------
# Order statistics of the top k (deterministic quadrature)
# ---------------------------------------------------------------------------
_TAIL_QUANTILE = 1e-25  # integration window: the k-th largest lies outside it with probability 2e-25


class _StandardNormal:
    """N(0, 1) with scalar log-density, log-cdf and log-survival from scipy.special (fast, stable)."""

    _LOG_ROOT_2PI = 0.5 * math.log(2 * math.pi)

    def logpdf(self, x: float) -> float:
        return -0.5 * x * x - self._LOG_ROOT_2PI

    def logcdf(self, x: float) -> float:
        return float(special.log_ndtr(x))

    def logsf(self, x: float) -> float:
        return float(special.log_ndtr(-x))

    def ppf(self, u: float) -> float:
        return float(special.ndtri(u))

    def isf(self, u: float) -> float:
        return -float(special.ndtri(u))


def _kth_largest_expectation(P: int, k: int, dist, integrand) -> np.ndarray:
    """∫ f_(k)(τ) integrand(τ) dτ, f_(k) the density of the k-th largest of P iid draws of ``dist``.

    ``f_(k) = P!/((k-1)!(P-k)!) F^(P-k) S^(k-1) f`` is evaluated in log space so
    that P up to ~10^5 is stable. ``S(τ_(k))`` is Beta(k, P-k+1), which fixes a
    window that holds all but ~10^-25 of the mass.
    """
    log_norm = special.gammaln(P + 1) - special.gammaln(k) - special.gammaln(P - k + 1)
    lo = float(dist.ppf(special.betaincinv(P - k + 1, k, _TAIL_QUANTILE)))
    hi = float(dist.isf(special.betaincinv(k, P - k + 1, _TAIL_QUANTILE)))
    median = float(dist.isf(special.betaincinv(k, P - k + 1, 0.5)))

    def weighted(tau: float) -> np.ndarray:
        log_f = log_norm + dist.logpdf(tau)
        if P > k:
            log_f += (P - k) * dist.logcdf(tau)
        if k > 1:
            log_f += (k - 1) * dist.logsf(tau)
        return math.exp(log_f) * np.asarray(integrand(tau), dtype=np.float64)

    points = [median] if lo < median < hi else None
    value, _ = integrate.quad_vec(weighted, lo, hi, points=points, epsabs=1e-300, epsrel=1e-12, limit=2000)
    return np.asarray(value)


def _normal_tail_moments(tau: float) -> tuple[float, float]:
    """E[X | X > τ] and E[X² | X > τ] for X ~ N(0, 1), in log space (see NORMAL_TAIL_MEAN)."""
    mean = math.exp(-0.5 * tau * tau - _StandardNormal._LOG_ROOT_2PI - float(special.log_ndtr(-tau)))
    return mean, 1.0 + tau * mean


@dataclass(frozen=True)
class TopKMoments:
    """Moments of the mean ``M`` of the top k of P iid standard normals.

    Attributes
    ----------
    P, k : int
        Sample size and number of top values averaged.
    mean : float
        ``γ_{P,k} = E[M]`` (eq. 45).
    second_moment : float
        ``E[M²]``.

    References
    ----------
    Paper eqs. (44)-(46).

    Examples
    --------
    >>> m = top_k_moments(2, 1)
    >>> round(m.mean, 10), round(m.second_moment, 10)
    (0.5641895835, 1.0)
    """

    P: int
    k: int
    mean: float
    second_moment: float

    @property
    def variance(self) -> float:
        """Var(M) = E[M²] - γ²."""
        return self.second_moment - self.mean**2


@lru_cache(maxsize=256)
def _top_k_moments_cached(P: int, k: int) -> TopKMoments:
    def integrand(tau: float) -> np.ndarray:
        tail_mean, tail_second = _normal_tail_moments(tau) if k > 1 else (0.0, 0.0)
        # given the k-th largest τ, the other k-1 top values are iid N(0,1) truncated to (τ, ∞)
        sum_mean = tau + (k - 1) * tail_mean
        sum_second = tau**2 + 2 * (k - 1) * tau * tail_mean + (k - 1) * tail_second + (k - 1) * (k - 2) * tail_mean**2
        return np.array([sum_mean, sum_second])

    sum_mean, sum_second = _kth_largest_expectation(P, k, _StandardNormal(), integrand)
    return TopKMoments(P=P, k=k, mean=float(sum_mean) / k, second_moment=float(sum_second) / k**2)


def top_k_moments(P: int, k: int) -> TopKMoments:
    """Mean and second moment of the mean of the top k of P iid N(0, 1), by quadrature.

    Conditioning on the k-th largest value ``τ`` (density
    :data:`ORDER_STATISTIC_DENSITY`), the other ``k - 1`` top values are iid
    N(0, 1) truncated to ``(τ, ∞)`` with mean ``μ(τ) = φ(τ)/(1 - Φ(τ))`` and
    second moment ``1 + τ μ(τ)``, so ``E[Σ_top]`` and ``E[(Σ_top)²]`` are one
    integral each over τ (no Monte Carlo). The density is evaluated in log
    space (``log_ndtr``), stable for P up to ~10^5.

    Parameters
    ----------
    P : int
        Number of iid standard normals, ``P >= 1``.
    k : int
        How many of the largest are averaged, ``1 <= k <= P``.

    Returns
    -------
    TopKMoments

    References
    ----------
    Paper eqs. (44)-(46) (γ_{P,k}).

    Examples
    --------
    >>> round(top_k_moments(3, 3).second_moment, 10)   # mean of all 3: variance 1/3
    0.3333333333
    """
    P, k = _check_P_k(P, k)
    return _top_k_moments_cached(P, k)


def gamma_top_k(P: int, k: int) -> float:
    """γ_{P,k}: the expected mean of the top k of P iid standard normals.

    Computed from order statistics by deterministic quadrature (see
    :func:`top_k_moments`).

    Parameters
    ----------
    P : int
        Number of iid standard normals, ``P >= 1``.
    k : int
        Number of largest values averaged, ``1 <= k <= P``.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``P < 1`` or ``k`` is outside ``1..P``.

    References
    ----------
    Paper eq. (45).

    Examples
    --------
    >>> round(gamma_top_k(2, 1), 10)        # E max(X1, X2) = 1/sqrt(pi)
    0.5641895835
    >>> round(gamma_top_k(1024, 2), 6)
    3.104856
    """
    return top_k_moments(P, k).mean


def mean_direction_coefficient(spectrum: SpectrumLike, P: int, k: int) -> float:
    """The coefficient ``c = γ_{P,k} / sqrt(tr Σ²)`` in ``t̄ ≈ c Σ q`` (eq. 46).

    Eq. (46) replaces ``sqrt(qᵀΣq)`` in the exact inner-product-ranking mean
    ``γ Σq / sqrt(qᵀΣq)`` (eq. 45, :func:`conditional_top_k_mean`) by the square
    root of its mean ``E[qᵀΣq] = tr Σ²``.

    Parameters
    ----------
    spectrum : Spectrum or PowerLawSpectrum
        Input spectrum (λ).
    P, k : int
        Context size and number of selected tokens, ``1 <= k <= P``.

    Returns
    -------
    float

    References
    ----------
    Paper eqs. (45)-(46).

    Examples
    --------
    >>> from theory.spectra import PowerLawSpectrum
    >>> c = mean_direction_coefficient(PowerLawSpectrum(0, 0, d=128), 1024, 2)
    >>> round(c, 6), round(gamma_top_k(1024, 2) / 128 ** 0.5, 6)
    (0.274433, 0.274433)
    """
    spectrum = as_spectrum(spectrum)
    P, k = _check_P_k(P, k)
    return float(_mean_direction_coefficient(gamma_top_k(P, k), float(np.sum(spectrum.eigenvalues**2))))


def conditional_top_k_mean(spectrum: SpectrumLike, query: object, P: int, k: int) -> np.ndarray:
    """``E[t | q] = γ_{P,k} Σq / sqrt(qᵀΣq)`` under inner-product ranking (eqs. 44-45), eigenbasis.

    With ``s_i = x_iᵀq ~ N(0, V)``, ``V = qᵀΣq``, Gaussian conditioning gives
    ``x_i = (Σq/V) s_i + r_i`` with ``r_i ~ N(0, Σ - ΣqqᵀΣ/V)`` independent of
    ``s_i`` (eq. 44). Selecting the top k by ``s_i`` leaves the ``r_i``
    untouched, so ``E[t | q] = (Σq/sqrt(V)) E[M]`` exactly, ``M`` the mean of
    the top k of P standard normals. (For cosine ranking this is only an
    approximation; see the module docstring.)

    Parameters
    ----------
    spectrum : Spectrum or PowerLawSpectrum
        Input spectrum; ``Σ = diag(λ)``.
    query : array_like, shape (..., d)
        Query vectors ``q`` in the eigenbasis (not all zero).
    P, k : int
        Context size and number of selected tokens.

    Returns
    -------
    numpy.ndarray, shape (..., d)

    References
    ----------
    Paper eqs. (44)-(45).

    Examples
    --------
    >>> from theory.spectra import Spectrum
    >>> conditional_top_k_mean(Spectrum([1.0, 1.0], [1.0, 1.0]), [3.0, 4.0], 2, 1).round(6).tolist()
    [0.338514, 0.451352]
    """
    spectrum = as_spectrum(spectrum)
    P, k = _check_P_k(P, k)
    q = np.asarray(query, dtype=np.float64)
    if q.ndim == 0 or q.shape[-1] != spectrum.d or not np.all(np.isfinite(q)):
        raise ValueError(f"query must be a finite array of shape (..., {spectrum.d}); got shape {q.shape}")
    lam = spectrum.eigenvalues
    variance = np.sum(lam * q * q, axis=-1, keepdims=True)
    if np.any(variance <= 0):
        raise ValueError("query must not be the zero vector")
    return gamma_top_k(P, k) * lam * q / np.sqrt(variance)
