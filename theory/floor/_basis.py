"""What both routes to the floor share (paper eqs. (47)-(53)); part of :mod:`theory.floor`.

The G-orthonormal polynomial basis that replaces ``G†`` on the monomials, the
floor from the moments ``T`` and ``E[q_k t_k]``, the exact query moments
``E[z_k²/V]`` and ``E[z_k²/sqrt(V)]`` (control variates of the Monte Carlo,
closed forms of the semi-analytic route) and the result type
:class:`FloorEstimate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy import integrate

from ..spectra import SpectrumLike, as_spectrum
from ..validation import check_finite_array, check_nonnegative, check_positive_int


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
# The result of either route
# ---------------------------------------------------------------------------
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
    method : {'monte_carlo', 'semi_analytic', 'finite_p', 'population_least_squares'}
        The last two come from :func:`~theory.floor.linear_floor_finite_p`
        (polynomial in the empirical S, or in Σ by the same least squares); there
        ``estimate`` is a held-out loss (SE from independent seeds) and
        ``plug_in_bias`` the O(1/n) amount by which it is biased HIGH.
    ranking : {'cosine', 'inner_product'}
    variance_reduction : {'none', 'control_variates'}
    spectrum : Spectrum or PowerLawSpectrum

    References
    ----------
    Paper eqs. (47)-(54).

    Examples
    --------
    >>> from theory.floor import linear_floor_semi_analytic
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


# ---------------------------------------------------------------------------
# Exact moments of the query (eigenbasis, q = Λ^(1/2) z)
# ---------------------------------------------------------------------------
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
