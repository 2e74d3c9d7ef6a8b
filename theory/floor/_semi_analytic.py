"""The semi-analytic route to the floor (not in the paper); part of :mod:`theory.floor`.

With inner-product ranking the Gaussian conditioning of eq. (44) gives ``E[t | q]``
and ``E[ttᵀ | q]`` in closed form given the top-k order statistics, and the
average over ``q`` reduces to one-dimensional integrals; for an isotropic input
spectrum the task's cosine ranking is exact too (the ISOTROPIC_COSINE_*
expressions). Deterministic: no sampling.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import sympy as sp
from scipy import special

from .. import symbols as s
from ..data_law import RANKINGS
from ..spectra import SpectrumLike, as_spectrum
from ..validation import check_choice, check_positive_int
from ._basis import FloorEstimate, _floor_basis, _floors_by_degree, _query_ratio_moments
from ._order_statistics import _check_P_k, _kth_largest_expectation, top_k_moments


# ---------------------------------------------------------------------------
# Symbolic formulas (written once; numeric code is lambdified or tested against them)
# ---------------------------------------------------------------------------
#: T = E[tᵀΩt] under inner-product ranking (eq. 44): E[M²] A + (tr ΩΣ - A)/k, A = E[(Σq)ᵀΩΣq / qᵀΣq]
second_moment_sym = sp.Symbol("EM2", positive=True)
aligned_sym = sp.Symbol("A", nonnegative=True)
trace_omega_sigma_sym = sp.Symbol("trOmegaSigma", positive=True)
INNER_PRODUCT_TOTAL = second_moment_sym * aligned_sym + (trace_omega_sigma_sym - aligned_sym) / s.k
_inner_product_total = sp.lambdify(
    (second_moment_sym, aligned_sym, trace_omega_sigma_sym, s.k), INNER_PRODUCT_TOTAL, "numpy"
)

#: Σ = λ₀ I with cosine ranking (derived in linear_floor_semi_analytic): with m1 = E Σ_top cos,
#: m2 = E Σ_top cos², m11 = E (Σ_top cos)² and χ̄ = E‖z‖ for z ~ N(0, I_d),
#: T = λ₀ tr Ω [d k + χ̄² (m11 - m2)] / (d k²) and b_1² = λ₀ tr Ω χ̄⁴ m1² / (d² k²); floor = T - b_1²
d_sym = sp.Symbol("d", positive=True, integer=True)
lambda0_sym = sp.Symbol("lambda_0", positive=True)
trace_omega_sym = sp.Symbol("trOmega", positive=True)
m1_sym, m2_sym, m11_sym = sp.symbols("m1 m2 m11", nonnegative=True)
chi_mean_sym = sp.Symbol("chibar", positive=True)
ISOTROPIC_COSINE_TOTAL = lambda0_sym * trace_omega_sym * (d_sym * s.k + chi_mean_sym**2 * (m11_sym - m2_sym)) / (d_sym * s.k**2)
ISOTROPIC_COSINE_PROJECTION = sp.sqrt(lambda0_sym * trace_omega_sym) * chi_mean_sym**2 * m1_sym / (d_sym * s.k)
ISOTROPIC_COSINE_FLOOR = ISOTROPIC_COSINE_TOTAL - ISOTROPIC_COSINE_PROJECTION**2
_isotropic_cosine = sp.lambdify(
    (lambda0_sym, trace_omega_sym, d_sym, s.k, m1_sym, m2_sym, m11_sym, chi_mean_sym),
    (ISOTROPIC_COSINE_TOTAL, ISOTROPIC_COSINE_PROJECTION),
    "math",
)


# ---------------------------------------------------------------------------
# Cosine order statistics and the floor
# ---------------------------------------------------------------------------
class _Cosine:
    """Cosine of a uniform direction in R^d with a fixed axis: (1 + C)/2 ~ Beta((d-1)/2, (d-1)/2)."""

    def __init__(self, d: int) -> None:
        self.d = d
        self.half = (d - 1) / 2.0
        self._log_norm = -special.betaln(self.half, self.half) - math.log(2.0)
        self._log_b = special.betaln(0.5, self.half)
        self._log_b_up = special.betaln(0.5, self.half + 1)

    def logpdf(self, c: float) -> float:
        return (self.half - 1) * (math.log1p(c) + math.log1p(-c) - 2 * math.log(2.0)) + self._log_norm

    def logcdf(self, c: float) -> float:
        return math.log(float(special.betainc(self.half, self.half, (1 + c) / 2)))

    def logsf(self, c: float, half: float | None = None) -> float:
        h = self.half if half is None else half
        return math.log(float(special.betaincc(h, h, (1 + c) / 2)))

    def ppf(self, u: float) -> float:
        return float(2.0 * special.betaincinv(self.half, self.half, u) - 1.0)

    def isf(self, u: float) -> float:
        return float(2.0 * special.betaincinv(self.half, self.half, 1.0 - u) - 1.0)

    def tail_moments(self, c: float) -> tuple[float, float]:
        """E[C | C > c] and E[C² | C > c] in closed form (integration by parts)."""
        log_sf = self.logsf(c)
        log_edge = self.half * math.log1p(-c * c) - math.log(self.d - 1) - self._log_b  # (1-c²)^((d-1)/2)/((d-1)B)
        mean = math.exp(log_edge - log_sf)
        # ∫_c^1 (1-x²)^((d-1)/2) dx = B(1/2, (d+1)/2) P(C_{d+2} > c)
        up = math.exp(self._log_b_up - self._log_b + self.logsf(c, self.half + 1) - log_sf) / (self.d - 1)
        return mean, c * mean + up


@lru_cache(maxsize=64)
def _cosine_top_k_moments(P: int, k: int, d: int) -> tuple[float, float, float]:
    """E Σ_top cos, E Σ_top cos², E (Σ_top cos)² for the top k of P iid cosines in R^d."""
    dist = _Cosine(d)

    def integrand(c: float) -> np.ndarray:
        tail_mean, tail_second = dist.tail_moments(c) if k > 1 else (0.0, 0.0)
        return np.array([
            c + (k - 1) * tail_mean,
            c * c + (k - 1) * tail_second,
            c * c + 2 * (k - 1) * c * tail_mean + (k - 1) * tail_second + (k - 1) * (k - 2) * tail_mean**2,
        ])

    m1, m2, m11 = _kth_largest_expectation(P, k, dist, integrand)
    return float(m1), float(m2), float(m11)


def linear_floor_semi_analytic(
    spectrum: SpectrumLike, P: int, k: int, depth: int, *, ranking: str = "inner_product"
) -> FloorEstimate:
    """Deterministic floor ``T - hᵀG†h`` from Gaussian conditioning and order statistics.

    ``ranking='inner_product'`` (any spectrum; eq. 44): with ``V = qᵀΣq`` and
    ``M`` the mean of the top k of P standard normals,
    ``t = (Σq/sqrt(V)) M + r̄``, ``r̄ ~ N(0, (Σ - ΣqqᵀΣ/V)/k)`` independent of M, so

        E[t | q]   = γ_{P,k} Σq / sqrt(V),
        E[ttᵀ | q] = E[M²] ΣqqᵀΣ/V + (Σ - ΣqqᵀΣ/V)/k,
        T   = E[M²] A + (tr ΩΣ - A)/k,        A = Σ_k ω_k λ_k³ E[z_k²/V],
        b_j = γ_{P,k} Σ_k ω_k λ_k² π_j(λ_k) E[z_k²/sqrt(V)],

    with ``q = Λ^(1/2) z``. The two ratio moments are exact one-dimensional
    integrals (Laplace transform of ``V^(-p)``), so no average over q is
    approximated and no sampling is done.

    ``ranking='cosine'`` (the task's rule) is exact for an isotropic input
    spectrum ``Σ = λ₀ I`` (any ω). Take λ₀ = 1 (T and b² scale with λ₀).
    Each token is ``x_i = ‖x_i‖ (c_i q̂ + sqrt(1 - c_i²) e_i)`` with the
    cosine ``c_i``, the norm ``‖x_i‖ ~ χ_d`` and the direction ``e_i``
    (uniform on the unit sphere of ``q⊥``) independent; ranking uses only the
    ``c_i``, iid with ``(1 + c)/2 ~ Beta((d-1)/2, (d-1)/2)``. With
    ``m1 = E Σ_top c``, ``m2 = E Σ_top c²``, ``m11 = E (Σ_top c)²`` (order
    statistics by the same quadrature as :func:`top_k_moments`, closed-form
    truncated moments), ``χ̄ = E‖z‖`` and ``t = ū q̂ + r̄``:
    ``E ū² = (d m2 + χ̄²(m11 - m2))/k²``, ``E Σ_top ‖r_i‖² = d (k - m2)``,
    ``E[q̂ᵀΩq̂] = E[e_iᵀΩe_i] = tr Ω/d`` and the cross terms vanish, so
    :data:`ISOTROPIC_COSINE_TOTAL`; the single direction ``π_1(Σ)q ∝ q`` gives
    ``b_1 = E‖q‖ E ū tr Ω/(d sqrt(tr Ω))`` (:data:`ISOTROPIC_COSINE_PROJECTION`)
    and the floor :data:`ISOTROPIC_COSINE_FLOOR`, the same for every L. For an
    anisotropic spectrum the cosine ranking couples the score to the token
    norm in a mode-dependent way; it is not reduced here and a ValueError is
    raised (use :func:`linear_floor_monte_carlo`).

    Parameters
    ----------
    spectrum : Spectrum or PowerLawSpectrum
    P, k : int
        Context size and number of selected tokens.
    depth : int
        Polynomial degree L >= 1.
    ranking : {'inner_product', 'cosine'}, default 'inner_product'

    Returns
    -------
    FloorEstimate
        With ``standard_error = 0`` and ``method = 'semi_analytic'``.

    References
    ----------
    Paper eqs. (43)-(53).

    Examples
    --------
    >>> from theory.spectra import PowerLawSpectrum
    >>> spec = PowerLawSpectrum(0, 0, d=128)
    >>> round(linear_floor_semi_analytic(spec, 1024, 2, 1, ranking="cosine").estimate, 4)
    59.3802
    >>> round(linear_floor_semi_analytic(spec, 1024, 2, 1).estimate, 4)   # inner-product ranking
    63.6103
    """
    spectrum = as_spectrum(spectrum)
    P, k = _check_P_k(P, k)
    depth = check_positive_int("depth", depth)
    ranking = check_choice("ranking", ranking, RANKINGS)
    lam, omega, d = spectrum.eigenvalues, spectrum.teacher_eigenvalues, spectrum.d
    basis = _floor_basis(spectrum, depth)

    if ranking == "cosine":
        if not np.all(lam == lam[0]):
            raise ValueError(
                "ranking='cosine' is exact only for an isotropic input spectrum (all eigenvalues equal); "
                f"got eigenvalues from {spectrum.lambda_1:.6g} to {spectrum.lambda_d:.6g} "
                "(use ranking='inner_product' or linear_floor_monte_carlo)"
            )
        if d < 2:
            raise ValueError(f"ranking='cosine' needs spectrum.d >= 2; got {d}")
        m1, m2, m11 = _cosine_top_k_moments(P, k, d)
        chi_mean = math.exp(0.5 * math.log(2.0) + special.gammaln((d + 1) / 2) - special.gammaln(d / 2))
        total, projection = _isotropic_cosine(float(lam[0]), float(np.sum(omega)), d, k, m1, m2, m11, chi_mean)
        total, projections = float(total), np.array([float(projection)])
    else:
        moments = top_k_moments(P, k)
        e1, e_half = _query_ratio_moments(spectrum)
        aligned = float(np.sum(omega * lam**3 * e1))
        total = float(_inner_product_total(moments.second_moment, aligned, float(np.sum(omega * lam)), k))
        projections = moments.mean * ((omega * lam**2 * e_half) @ basis.values)
    floors = _floors_by_degree(total, projections, depth)
    zeros = np.zeros(depth)
    return FloorEstimate(
        estimate=float(floors[-1]),
        standard_error=0.0,
        floor_by_degree=floors,
        standard_error_by_degree=zeros,
        total_second_moment=total,
        projections=projections,
        plug_in_bias=zeros,
        effective_degree=int(projections.size),
        P=P,
        k=k,
        depth=depth,
        n_samples=0,
        queries_per_context=0,
        method="semi_analytic",
        ranking=ranking,
        variance_reduction="none",
        spectrum=spectrum,
    )
