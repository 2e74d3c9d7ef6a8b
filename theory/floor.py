"""The linear-attention floor on the top-k task (paper eqs. (41)-(54), Table 3).

On the difficult task the target is ``y* = βᵀt`` with ``t = (1/k) Σ_{i∈S_k} x_i``
and ``S_k`` the top k context tokens by cosine similarity to the query ``q``
(eq. 6). A depth-L linear-attention model predicts ``βᵀ p_L(S) q`` with a
polynomial ``p_L`` of degree <= L and ``p_L(0) = 0`` (eq. 24); in the population
limit ``S -> Σ`` the best such polynomial leaves the floor (eqs. 43, 47-53)

    R_irr(L) = T - hᵀ G† h,   T = E[tᵀΩt],   h_r = E[(Σ^r q)ᵀ Ω t],
    G_rs = tr(Ω Σ^(r+s+1)),   r, s = 1..L.

How the degree enters. ``hᵀG†h`` is the squared length of the projection of
``t`` onto the span of ``{Σq, ..., Σ^L q}`` in the inner product
``<u, v> = E[uᵀΩv]``; in the eigenbasis that span is ``{p(λ) ⊙ q : p(0) = 0,
deg p <= L}``, so ``R_irr(L)`` is non-increasing in L and constant once L
reaches the number of distinct eigenvalues (the Krylov dimension). We never
form the ill-conditioned monomial ``G``: the polynomials ``π_1..π_L`` with
``π_j(0) = 0`` orthonormal for ``<π_i, π_j> = Σ_k ω_k λ_k π_i(λ_k) π_j(λ_k)``
(which is G's inner product) come from a Lanczos run with full
re-orthogonalisation on the discrete measure ``ω_k λ_k^3`` at the nodes
``λ_k``; in that basis G is the identity, ``b_j = E[(π_j(Σ)q)ᵀΩt]`` and
``R_irr(L) = T - Σ_{j<=L} b_j²`` for every L at once.

Why the eigenbasis suffices. Cosine similarity and inner products are
invariant under ``x -> Ox``, and ``tᵀΩt``, ``(Σ^r q)ᵀΩt`` and
``tr(ΩΣ^(r+s+1))`` are invariant under ``(x, Σ, Ω) -> (Ox, OΣOᵀ, OΩOᵀ)``.
The data of eq. (3)-(4) are ``x = O Λ^(1/2) z`` with z standard normal
independent of O, so every per-context quantity equals its value at
``O = I``: the Haar average over O is trivial and all sampling is done with
``Σ = diag(λ)``, ``Ω = diag(ω)``. (``frame='haar'`` re-does the computation
with a fresh Haar rotation per context, to check this.)

Two routes:

* :func:`linear_floor_monte_carlo` -- eq. (54): T and h by Monte Carlo over
  contexts, G exact; a delta-method standard error; optional control
  variates in the query (exact means from one-dimensional quadratures).
* :func:`linear_floor_semi_analytic` -- not in the paper: with inner-product
  ranking the Gaussian conditioning of eq. (44) gives ``E[t | q]`` and
  ``E[ttᵀ | q]`` in closed form given moments of the top-k order statistics
  of P standard normals (:func:`top_k_moments`), and the remaining average
  over ``q`` reduces to one-dimensional integrals -- a deterministic result.
  For an isotropic input spectrum the cosine ranking of the task is also
  exact (cosines are iid, independent of the token norms).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import sympy as sp
from scipy import integrate, special

from . import symbols as s
from .data_law import RANKINGS, eigenbasis_normal, haar_rotations, ranking_scores, rotate, select_top_k, top_k_mean
from .validation import check_choice, check_finite_array, check_generator, check_nonnegative, check_positive_int, check_top_k
from .spectra import SpectrumLike, as_spectrum

__all__ = [
    "RANKINGS",
    "FRAMES",
    "VARIANCE_REDUCTIONS",
    "ORDER_STATISTIC_DENSITY",
    "NORMAL_TAIL_MEAN",
    "MEAN_DIRECTION_COEFFICIENT",
    "INNER_PRODUCT_TOTAL",
    "ISOTROPIC_COSINE_TOTAL",
    "ISOTROPIC_COSINE_PROJECTION",
    "ISOTROPIC_COSINE_FLOOR",
    "TopKMoments",
    "top_k_moments",
    "gamma_top_k",
    "mean_direction_coefficient",
    "conditional_top_k_mean",
    "floor_polynomial_basis",
    "floor_from_moments",
    "sample_top_k_targets",
    "FloorEstimate",
    "linear_floor_monte_carlo",
    "linear_floor_semi_analytic",
]

#: coordinates of the Monte Carlo: ``'eigen'`` (Σ, Ω diagonal) or ``'haar'`` (a fresh Haar O per context, eq. 3)
FRAMES = ("eigen", "haar")
#: ``'none'`` (plain eq. 54) or ``'control_variates'`` (regression on query features with exact means)
VARIANCE_REDUCTIONS = ("none", "control_variates")

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


# ---------------------------------------------------------------------------
# G-orthonormal polynomial basis (replaces G† on the monomials)
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _FloorBasis:
    values: np.ndarray  # (d, L') π_j(λ_k), j = 1..L'
    alpha: np.ndarray  # Lanczos recurrence for ψ_j = π_{j+1}/λ
    beta: np.ndarray  # beta[j] couples ψ_j and ψ_{j+1}
    psi0: float  # the constant ψ_0

    @property
    def degree(self) -> int:
        return int(self.values.shape[1])


_BREAKDOWN = 1e-10  # relative size of a Lanczos coefficient below which the Krylov space is exhausted


@lru_cache(maxsize=64)
def _floor_basis_cached(lam_bytes: bytes, omega_bytes: bytes, depth: int) -> _FloorBasis:
    lam = np.frombuffer(lam_bytes, dtype=np.float64)
    omega = np.frombuffer(omega_bytes, dtype=np.float64)
    # ψ_j (deg j) orthonormal for the measure ω λ³; π_{j+1}(λ) = λ ψ_j(λ) is then G-orthonormal
    root_measure = np.sqrt(omega * lam**3)
    norm0 = float(np.linalg.norm(root_measure))
    vectors = [root_measure / norm0]
    alpha: list[float] = []
    beta: list[float] = []
    scale = float(np.max(lam))
    while len(vectors) < depth:
        v = vectors[-1]
        w = lam * v
        alpha.append(float(v @ w))
        w = w - alpha[-1] * v - (beta[-1] * vectors[-2] if beta else 0.0)
        basis = np.array(vectors)
        for _ in range(2):  # full re-orthogonalisation, twice
            w = w - basis.T @ (basis @ w)
        size = float(np.linalg.norm(w))
        if size <= _BREAKDOWN * scale:
            break
        beta.append(size)
        vectors.append(w / size)
    basis = np.array(vectors).T  # (d, L'), columns ψ_j(λ_k) sqrt(ω_k λ_k³)
    values = basis / np.sqrt(omega * lam)[:, None]  # π_{j+1}(λ_k) = λ_k ψ_j(λ_k)
    values.setflags(write=False)
    return _FloorBasis(values=values, alpha=np.array(alpha), beta=np.array(beta), psi0=1.0 / norm0)


def _floor_basis(spectrum: SpectrumLike, depth: int) -> _FloorBasis:
    return _floor_basis_cached(
        np.ascontiguousarray(spectrum.eigenvalues).tobytes(),
        np.ascontiguousarray(spectrum.teacher_eigenvalues).tobytes(),
        depth,
    )


def floor_polynomial_basis(spectrum: SpectrumLike, depth: int) -> np.ndarray:
    """Values ``π_j(λ_k)`` of the G-orthonormal basis of ``{p : p(0) = 0, deg p <= depth}``.

    The columns satisfy ``Σ_k ω_k λ_k π_i(λ_k) π_j(λ_k) = δ_ij``, i.e. the
    matrix ``G_rs = tr(ΩΣ^(r+s+1))`` (eq. 52) becomes the identity. Built by
    Lanczos with full re-orthogonalisation (a stable QR of the weighted
    Vandermonde matrix); fewer than ``depth`` columns are returned when the
    Krylov space is exhausted (number of distinct eigenvalues), which is where
    ``G`` becomes singular and ``G†`` is needed.

    Parameters
    ----------
    spectrum : Spectrum or PowerLawSpectrum
    depth : int
        Maximal polynomial degree L >= 1.

    Returns
    -------
    numpy.ndarray, shape (d, L') with ``L' <= depth`` (read-only)

    References
    ----------
    Paper eqs. (47)-(53).

    Examples
    --------
    >>> from theory.spectra import PowerLawSpectrum
    >>> spec = PowerLawSpectrum(1, 1, d=8)
    >>> basis = floor_polynomial_basis(spec, 3)
    >>> gram = basis.T @ ((spec.teacher_eigenvalues * spec.eigenvalues)[:, None] * basis)
    >>> bool(np.allclose(gram, np.eye(3)))
    True
    >>> floor_polynomial_basis(PowerLawSpectrum(0, 0, d=8), 5).shape   # Σ = I: rank 1
    (8, 1)
    """
    spectrum = as_spectrum(spectrum)
    depth = check_positive_int("depth", depth)
    return _floor_basis(spectrum, depth).values


def floor_from_moments(spectrum: SpectrumLike, total_second_moment: float, cross_moments: object, depth: int) -> np.ndarray:
    """``R_irr(L) = T - hᵀG†h`` for L = 1..depth from ``T`` and the mode moments ``E[q_k t_k]``.

    In the eigenbasis ``h_r = Σ_k ω_k λ_k^r E[q_k t_k]``; the projection is
    computed in the G-orthonormal basis of :func:`floor_polynomial_basis`
    (numerically stable where the monomial G is not), so that
    ``hᵀG†h = Σ_j b_j²`` with ``b_j = Σ_k ω_k π_j(λ_k) E[q_k t_k]``.

    Parameters
    ----------
    spectrum : Spectrum or PowerLawSpectrum
    total_second_moment : float
        ``T = E[tᵀΩt]`` (eq. 50).
    cross_moments : array_like, shape (d,)
        ``E[q_k t_k]`` in the eigenbasis.
    depth : int
        Maximal degree L >= 1.

    Returns
    -------
    numpy.ndarray, shape (depth,)
        The floor for L = 1..depth (non-increasing).

    References
    ----------
    Paper eqs. (47)-(53).

    Examples
    --------
    >>> from theory.spectra import Spectrum
    >>> spec = Spectrum([2.0, 1.0], [1.0, 1.0])
    >>> # t = q (T = tr ΩΣ = 3, E[q_k t_k] = λ_k): p = 1 on {2, 1} with p(0) = 0 needs degree 2
    >>> floor_from_moments(spec, 3.0, [2.0, 1.0], 2).round(6).tolist()
    [0.222222, 0.0]
    """
    spectrum = as_spectrum(spectrum)
    depth = check_positive_int("depth", depth)
    total = check_nonnegative("total_second_moment", total_second_moment)
    cross = check_finite_array("cross_moments", cross_moments)
    if cross.shape != (spectrum.d,):
        raise ValueError(f"cross_moments must have shape ({spectrum.d},); got {cross.shape}")
    basis = _floor_basis(spectrum, depth)
    projections = (spectrum.teacher_eigenvalues * cross) @ basis.values
    return _floors_by_degree(total, projections, depth)


def _floors_by_degree(total: float, projections: np.ndarray, depth: int) -> np.ndarray:
    floors = total - np.cumsum(projections**2)
    return np.concatenate([floors, np.full(depth - floors.size, floors[-1])]) if floors.size < depth else floors


# ---------------------------------------------------------------------------
# Monte Carlo (eq. 54)
# ---------------------------------------------------------------------------
def _select_mean(x: np.ndarray, q: np.ndarray, k: int, ranking: str) -> np.ndarray:
    """t = mean of the top-k tokens by cosine or inner product; x (B, P, d), q (B, m, d) -> (B, m, d)."""
    if k == x.shape[1]:
        return np.broadcast_to(x.mean(axis=1)[:, None, :], q.shape).copy()
    return top_k_mean(x, select_top_k(ranking_scores(x, q, ranking), k, ordered=False))


def sample_top_k_targets(
    spectrum: SpectrumLike,
    P: int,
    k: int,
    size: int,
    rng: np.random.Generator | int,
    *,
    ranking: str = "cosine",
    query: object = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw queries ``q`` and top-k means ``t`` of the difficult task (eqs. 4, 6) in the eigenbasis.

    ``x_1..x_P, q ~ N(0, diag λ)`` iid; ``t`` is the mean of the k tokens
    with the largest cosine similarity (or inner product) to ``q``. The
    eigenbasis is exact for every rotation-invariant statistic (module
    docstring).

    Parameters
    ----------
    spectrum : Spectrum or PowerLawSpectrum
    P, k : int
        Context size and number of selected tokens.
    size : int
        Number of contexts.
    rng : numpy.random.Generator or int
        Source of randomness (or a seed).
    ranking : {'cosine', 'inner_product'}
        Selection rule: the task's cosine (eq. 6) or the inner product of eq. (44).
    query : array_like, shape (d,), optional
        Hold the query fixed (for conditional expectations given q).

    Returns
    -------
    (q, t) : tuple of numpy.ndarray, each shape (size, d)

    References
    ----------
    Paper eqs. (3)-(6).

    Examples
    --------
    >>> from theory.spectra import PowerLawSpectrum
    >>> q, t = sample_top_k_targets(PowerLawSpectrum(0.5, 0.5, d=4), 16, 2, 3, np.random.default_rng(0))
    >>> q.shape, t.shape
    ((3, 4), (3, 4))
    """
    spectrum = as_spectrum(spectrum)
    P, k = _check_P_k(P, k)
    size = check_positive_int("size", size)
    ranking = check_choice("ranking", ranking, RANKINGS)
    rng = check_generator(rng, allow_seed=True)
    if query is None:
        q = eigenbasis_normal(rng, (size, spectrum.d), spectrum.eigenvalues)
    else:
        fixed = np.asarray(query, dtype=np.float64)
        if fixed.shape != (spectrum.d,) or not np.all(np.isfinite(fixed)):
            raise ValueError(f"query must be a finite array of shape ({spectrum.d},); got {fixed.shape}")
        q = np.broadcast_to(fixed, (size, spectrum.d)).copy()
    x = eigenbasis_normal(rng, (size, P, spectrum.d), spectrum.eigenvalues)
    return q, _select_mean(x, q[:, None, :], k, ranking)[:, 0, :]


@dataclass(frozen=True, eq=False)
class FloorEstimate:
    """The linear-attention floor ``R_irr = T - hᵀG†h`` for degrees L = 1..depth.

    Attributes
    ----------
    estimate : float
        ``R_irr`` at ``L = depth``.
    standard_error : float
        Its Monte Carlo standard error (0 for the semi-analytic route).
    floor_by_degree, standard_error_by_degree : numpy.ndarray, shape (depth,)
        The same for every L = 1..depth.
    total_second_moment : float
        ``T = E[tᵀΩt]`` (plain sample mean for Monte Carlo).
    projections : numpy.ndarray, shape (effective_degree,)
        ``b_j = E[(π_j(Σ)q)ᵀΩt]``: h in the G-orthonormal basis, so ``hᵀG†h = Σ b_j²``.
    plug_in_bias : numpy.ndarray, shape (depth,)
        Estimated upward bias of ``Σ b̂_j²`` (``Σ Var(b_j)/n``): the plug-in
        floor is biased low by this much (0 for the semi-analytic route).
    effective_degree : int
        Number of G-orthonormal directions (``min(depth, Krylov dimension)``).
    P, k, depth : int
    n_samples : int
        Contexts sampled (0 for the semi-analytic route).
    queries_per_context : int
        Independent queries per sampled context (0 for the semi-analytic route).
    method : {'monte_carlo', 'semi_analytic'}
    ranking : {'cosine', 'inner_product'}
    variance_reduction : {'none', 'control_variates'}
    spectrum : Spectrum or PowerLawSpectrum

    References
    ----------
    Paper eqs. (47)-(54).

    Examples
    --------
    >>> from theory.spectra import PowerLawSpectrum
    >>> est = linear_floor_semi_analytic(PowerLawSpectrum(1, 1, d=16), 64, 2, 3)
    >>> est.floor_by_degree.shape, est.standard_error, est.method
    ((3,), 0.0, 'semi_analytic')
    >>> bool(np.isclose(est.estimate, est.total_second_moment - np.sum(est.projections**2)))
    True
    """

    estimate: float
    standard_error: float
    floor_by_degree: np.ndarray
    standard_error_by_degree: np.ndarray
    total_second_moment: float
    projections: np.ndarray
    plug_in_bias: np.ndarray
    effective_degree: int
    P: int
    k: int
    depth: int
    n_samples: int
    queries_per_context: int
    method: str
    ranking: str
    variance_reduction: str
    spectrum: SpectrumLike = field(repr=False)

    @property
    def relative_standard_error(self) -> float:
        """standard_error / estimate."""
        return self.standard_error / self.estimate

    def __post_init__(self) -> None:
        for name in ("floor_by_degree", "standard_error_by_degree", "projections", "plug_in_bias"):
            array = np.array(getattr(self, name), dtype=np.float64)
            array.setflags(write=False)
            object.__setattr__(self, name, array)


def _context_statistics(q, t, lam, omega, basis: _FloorBasis, sigma=None, omega_matrix=None):
    """Per-query a = tᵀΩt, b_j = (π_j(Σ)q)ᵀΩt and the query features φ_0, φ_j; q, t of shape (B, m, d).

    Eigen frame (``sigma is None``): Σ, Ω diagonal, π_j(λ_k) from the basis.
    Rotated frame: Σ, Ω full, shape (B, d, d); π_j(Σ)q by the Lanczos three-term recurrence.
    """
    if sigma is None:
        omega_t = omega * t
        variance = np.sum(lam * q * q, axis=-1)
        a = np.sum(t * omega_t, axis=-1)
        b = (q * omega_t) @ basis.values
        phi0 = np.sum(omega * (lam * q) ** 2, axis=-1) / variance
        phi = (omega * lam * q * q) @ basis.values / np.sqrt(variance)[..., None]
        return a, b, phi0, phi

    def apply(matrix, vectors):  # (B, d, d) acting on (B, m, d)
        return np.matmul(vectors, np.swapaxes(matrix, -1, -2))

    omega_t = apply(omega_matrix, t)
    sigma_q = apply(sigma, q)
    omega_sigma_q = apply(omega_matrix, sigma_q)
    variance = np.sum(q * sigma_q, axis=-1)
    a = np.sum(t * omega_t, axis=-1)
    phi0 = np.sum(sigma_q * omega_sigma_q, axis=-1) / variance
    b = np.empty(q.shape[:-1] + (basis.degree,))
    phi = np.empty_like(b)
    previous, current = np.zeros_like(q), basis.psi0 * q  # ψ_{-1}(Σ)q, ψ_0(Σ)q
    for j in range(basis.degree):
        pi_q = apply(sigma, current)  # π_{j+1}(Σ)q = Σ ψ_j(Σ) q
        b[..., j] = np.sum(pi_q * omega_t, axis=-1)
        phi[..., j] = np.sum(pi_q * omega_sigma_q, axis=-1)
        if j + 1 < basis.degree:
            nxt = pi_q - basis.alpha[j] * current - (basis.beta[j - 1] * previous if j > 0 else 0.0)
            previous, current = current, nxt / basis.beta[j]
    return a, b, phi0, phi / np.sqrt(variance)[..., None]


def _query_ratio_moments(spectrum: SpectrumLike) -> tuple[np.ndarray, np.ndarray]:
    """``E[z_k² / V]`` and ``E[z_k² / sqrt(V)]``, ``V = Σ_j λ_j² z_j²``, z ~ N(0, I_d).

    Exact one-dimensional integrals from ``V^(-p) = Γ(p)^(-1) ∫_0^∞ u^(p-1) e^(-uV) du``
    and the Gaussian ``E[z_k² e^(-uV)] = (1 + 2uλ_k²)^(-1) Π_j (1 + 2uλ_j²)^(-1/2)``;
    integrated over ``log u``.
    """
    weights = spectrum.eigenvalues**2
    return _ratio_moments_cached(np.ascontiguousarray(weights).tobytes())


@lru_cache(maxsize=64)
def _ratio_moments_cached(weights_bytes: bytes) -> tuple[np.ndarray, np.ndarray]:
    weights = np.frombuffer(weights_bytes, dtype=np.float64)
    smallest = float(weights.min())
    grid = np.linspace(-math.log(weights.max()) - 200.0, -math.log(smallest) + 400.0, 3001)
    log_product = -0.5 * np.sum(np.log1p(2.0 * np.exp(grid)[:, None] * weights), axis=1)
    results = []
    for power in (1.0, 0.5):
        # every mode's integrand is below exp(bound); integrate where bound is within e^-80 of its peak
        bound = power * grid + log_product - np.log1p(2.0 * np.exp(grid) * smallest)
        keep = np.nonzero(bound > bound.max() - 80.0)[0]
        lo, hi = grid[max(keep[0] - 1, 0)], grid[min(keep[-1] + 1, grid.size - 1)]

        def integrand(y: float, power: float = power) -> np.ndarray:
            u = math.exp(y)
            log_common = power * y - 0.5 * float(np.sum(np.log1p(2.0 * u * weights)))
            return math.exp(log_common) / (1.0 + 2.0 * u * weights)

        value, _ = integrate.quad_vec(
            integrand, lo, hi, points=[float(grid[int(np.argmax(bound))])], epsabs=1e-300, epsrel=1e-12, limit=2000
        )
        results.append(np.asarray(value) / math.gamma(power))
    return results[0], results[1]


def _control_variate(values: np.ndarray, feature: np.ndarray, feature_mean) -> np.ndarray:
    """``values - β (feature - E feature)`` per trailing coordinate, β the least-squares slope.

    The adjusted values have the same expectation and a smaller variance; the
    estimated β costs an O(1/n) bias. Features without spread are left out.
    """
    centred = feature - feature_mean
    flat_values = values.reshape(-1, *values.shape[2:])
    flat_feature = centred.reshape(-1, *centred.shape[2:])
    f_dev = flat_feature - flat_feature.mean(axis=0)
    v_dev = flat_values - flat_values.mean(axis=0)
    spread = np.sum(f_dev**2, axis=0)
    # a feature that is constant up to round-off (e.g. φ_0 when ΩΣ² ∝ Σ) carries no information
    scale = np.max(np.abs(feature.reshape(flat_feature.shape)), axis=0) + np.abs(feature_mean)
    usable = spread > (1e-10 * scale) ** 2 * flat_feature.shape[0]
    slope = np.where(usable, np.sum(f_dev * v_dev, axis=0) / np.where(usable, spread, 1.0), 0.0)
    return values - slope * centred


def _floor_statistics(a, b, phi0, phi, feature_means, depth):
    """Plug-in floor T - Σ b̄_j² per L, its delta-method SE and the plug-in bias.

    Arrays are grouped by context: ``a``, ``phi0`` of shape (G, m) and ``b``, ``phi`` of
    shape (G, m, L'), m queries per sampled context. With ``feature_means`` given,
    ``a`` and each ``b_j`` are first replaced by their control-variate versions
    (features ``φ_0`` and ``φ_j``). Contexts are iid, so standard errors come from
    the G context means (queries sharing a context may correlate).
    """
    if feature_means is not None:
        a = _control_variate(a, phi0, feature_means[0])
        b = _control_variate(b, phi, feature_means[1])
    groups = a.shape[0]
    b_mean = b.mean(axis=(0, 1))
    floors = _floors_by_degree(float(a.mean()), b_mean, depth)
    # delta method: R̂ - R ≈ mean(z_L) - E z_L with z_L = a - 2 Σ_{j<=L} b̄_j b_j
    z = a[..., None] - 2.0 * np.cumsum(b * b_mean, axis=-1)
    errors = z.mean(axis=1).std(axis=0, ddof=1) / math.sqrt(groups)
    bias = np.cumsum(b.mean(axis=1).var(axis=0, ddof=1) / groups)
    if errors.size < depth:
        errors = np.concatenate([errors, np.full(depth - errors.size, errors[-1])])
        bias = np.concatenate([bias, np.full(depth - bias.size, bias[-1])])
    return floors, errors, bias, float(a.mean()), b_mean


def linear_floor_monte_carlo(
    spectrum: SpectrumLike,
    P: int,
    k: int,
    depth: int,
    n_samples: int,
    rng: np.random.Generator | int,
    *,
    queries_per_context: int = 1,
    batch: int = 16,
    ranking: str = "cosine",
    frame: str = "eigen",
    variance_reduction: str = "none",
) -> FloorEstimate:
    """Monte Carlo estimate of the linear-attention floor ``T - hᵀG†h`` (eq. 54).

    Samples ``n_samples`` contexts (P tokens), queries each with
    ``queries_per_context`` independent queries, forms the top-k target mean t
    per query, averages ``tᵀΩt`` and ``(π_j(Σ)q)ᵀΩt`` and uses the exact G
    (the identity in the G-orthonormal basis, :func:`floor_polynomial_basis`);
    vectorised over batches of contexts. The standard error is the delta
    method on the linearisation ``z_L = tᵀΩt - 2 Σ_j b̄_j (π_j(Σ)q)ᵀΩt``,
    computed from per-context means (contexts are iid; queries of one context
    share its tokens, so they may correlate).

    ``queries_per_context = 1`` is eq. (54) literally. Larger values reuse the
    costly part of a sample (P·d normal draws) for several queries: every
    (context, query) pair is still exactly distributed as in eqs. (4)-(6), the
    estimate stays unbiased, and as two independent queries rarely pick the
    same tokens the variance per unit time drops roughly in proportion.

    ``variance_reduction='control_variates'`` replaces ``tᵀΩt`` and each
    ``(π_j(Σ)q)ᵀΩt`` by its residual after a least-squares fit on one query
    feature whose mean is known exactly (one-dimensional quadratures):
    ``φ_0 = (Σq)ᵀΩΣq/qᵀΣq`` and ``φ_j = (π_j(Σ)q)ᵀΩΣq/sqrt(qᵀΣq)``, to which
    ``E[tᵀΩt | q]`` and ``E[b_j | q]`` are exactly affine under
    inner-product ranking (eq. 44). This removes most of the query-to-query
    noise (unbiased up to O(1/n)) and keeps the floor non-increasing in L.

    Parameters
    ----------
    spectrum : Spectrum or PowerLawSpectrum
        Input (λ) and teacher (ω) spectra, eq. (2).
    P : int
        Context size.
    k : int
        Tokens averaged by the target (top-k), ``1 <= k <= P``.
    depth : int
        Polynomial degree L (number of layers), ``>= 1``; the result also
        holds every L' < depth.
    n_samples : int
        Number of contexts, ``>= 4``.
    rng : numpy.random.Generator or int
        Source of randomness (or a seed).
    queries_per_context : int, default 1
        Independent queries per sampled context.
    batch : int, default 16
        Contexts per vectorised batch (memory ~ 2·batch·P·(d + queries)·8 bytes).
    ranking : {'cosine', 'inner_product'}, default 'cosine'
        Token selection: the task's cosine similarity (eq. 6) or the inner
        product of eq. (44).
    frame : {'eigen', 'haar'}, default 'eigen'
        ``'eigen'`` samples with Σ, Ω diagonal (exact by rotation invariance);
        ``'haar'`` draws a Haar rotation per context (eq. 3) from a separate
        stream, so the two frames see the same data and must agree to round-off.
    variance_reduction : {'none', 'control_variates'}, default 'none'

    Returns
    -------
    FloorEstimate

    References
    ----------
    Paper eqs. (3)-(6), (47)-(54).

    Examples
    --------
    >>> from theory.spectra import PowerLawSpectrum
    >>> est = linear_floor_monte_carlo(PowerLawSpectrum(0.5, 0.5, d=8), 32, 2, 3, 200, np.random.default_rng(0))
    >>> bool(est.estimate > 0), est.floor_by_degree.shape, est.effective_degree
    (True, (3,), 3)
    """
    spectrum = as_spectrum(spectrum)
    P, k = _check_P_k(P, k)
    depth = check_positive_int("depth", depth)
    n_samples = check_positive_int("n_samples", n_samples, minimum=4)
    queries = check_positive_int("queries_per_context", queries_per_context)
    batch = check_positive_int("batch", batch)
    ranking = check_choice("ranking", ranking, RANKINGS)
    frame = check_choice("frame", frame, FRAMES)
    variance_reduction = check_choice("variance_reduction", variance_reduction, VARIANCE_REDUCTIONS)
    rng = check_generator(rng, allow_seed=True)
    data_rng, rotation_rng = rng.spawn(2)

    lam, omega, d = spectrum.eigenvalues, spectrum.teacher_eigenvalues, spectrum.d
    basis = _floor_basis(spectrum, depth)
    a = np.empty((n_samples, queries))
    b = np.empty((n_samples, queries, basis.degree))
    phi0 = np.empty((n_samples, queries))
    phi = np.empty((n_samples, queries, basis.degree))
    for start in range(0, n_samples, batch):
        m = min(batch, n_samples - start)
        q = eigenbasis_normal(data_rng, (m, queries, d), lam)  # the queries first, then the tokens
        x = eigenbasis_normal(data_rng, (m, P, d), lam)
        if frame == "eigen":
            t = _select_mean(x, q, k, ranking)
            per_query = _context_statistics(q, t, lam, omega, basis)
        else:
            rotation = haar_rotations(d, m, rotation_rng)
            sigma, omega_matrix = spectrum.covariances(rotation)
            q_rot, x_rot = rotate(rotation, q), rotate(rotation, x)
            t = _select_mean(x_rot, q_rot, k, ranking)
            per_query = _context_statistics(q_rot, t, lam, omega, basis, sigma=sigma, omega_matrix=omega_matrix)
        rows = slice(start, start + m)
        a[rows], b[rows], phi0[rows], phi[rows] = per_query

    feature_means = None
    if variance_reduction == "control_variates":
        e1, e_half = _query_ratio_moments(spectrum)
        feature_means = (float(np.sum(omega * lam**3 * e1)), (omega * lam**2 * e_half) @ basis.values)
    floors, errors, bias, total, b_mean = _floor_statistics(a, b, phi0, phi, feature_means, depth)
    return FloorEstimate(
        estimate=float(floors[-1]),
        standard_error=float(errors[-1]),
        floor_by_degree=floors,
        standard_error_by_degree=errors,
        total_second_moment=total,
        projections=b_mean,
        plug_in_bias=bias,
        effective_degree=basis.degree,
        P=P,
        k=k,
        depth=depth,
        n_samples=n_samples,
        queries_per_context=queries,
        method="monte_carlo",
        ranking=ranking,
        variance_reduction=variance_reduction,
        spectrum=spectrum,
    )


# ---------------------------------------------------------------------------
# Semi-analytic route (not in the paper)
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
