"""Constrained and free polynomial laws of deep linear attention (paper eqs. (27)-(40)).

A depth-L linear-attention model predicts ``βᵀ 𝒫_L(S) q`` (eq. 24, see
:mod:`theory.linear`), so its population loss is ``Σ_k λ_k ω_k r_L(λ_k)²``
(eqs. 29-30) for a residual polynomial ``r_L = 1 - p_L`` of degree <= L with
``r_L(0) = 1``. Two families of residuals are compared:

* **constrained** (repeated update, eqs. 27, 33): ``r_L(λ) = (1 - γλ/L)^L``,
  stable for ``0 < γ < 2L/λ_1``; with the reference step ``γ* = L/λ_1`` the loss
  decays as ``L^(-ζ)`` (eq. 34);
* **free** (eqs. 35-40): the best residual of degree <= L, whose loss is
  ``[Σ_{n<=L} ψ_n(0)²]^(-1)`` for the polynomials ψ_n orthonormal with respect
  to ``Σ_k λ_k ω_k δ_{λ_k}``; in the continuum it decays as ``L^(-2ζ)`` (eq. 40).

Here ``ζ = (a + b - 1)/a`` (:data:`theory.spectra.ZETA`). Every law is written
once below as a sympy expression (rendered by the docs); the numeric functions
are lambdified from those expressions, or from an algebraically equal form
that stays finite for large arguments (rising factorials instead of ratios of
Gamma functions), and the tests check each numeric path against an mpmath
evaluation of the sympy expression.

Exact finite-d losses
    :func:`constrained_loss` (closed form, vectorised over depths) and
    :func:`free_loss` (float64 Krylov projection with full
    re-orthogonalisation; :func:`free_loss_mpmath` is the high-precision
    Stieltjes reference it is tested against).
Continuum references
    :func:`constrained_continuum_loss` (the exact continuum integral),
    :func:`constrained_asymptote` (eq. 34), :func:`phi_n_zero_squared`
    (eqs. 38-39), :func:`free_continuum_sum` (a closed form of ``Σ_{n<=L} φ_n(0)²``),
    :func:`free_continuum_loss` (eq. 37) and :func:`free_continuum_asymptote` (eq. 40).

What the exact losses show (numbers in the tests and function notes)
    The continuum step (eqs. 31-32) is exact for the constrained loss up to the
    cut at λ_d (Euler-Maclaurin, to ~1e-8 for L >= 1000), and the ratio to eq. (34)
    is ``1 - ζ(ζ+1)/(4L) - O((2Lλ_d/λ_1)^ζ)``: within 1e-5 only for L ~ 1e6 and
    λ_1/λ_d >~ 1e12. The exact *discrete* free optimum, by contrast, falls faster
    than the continuum ``L^(-2ζ)`` on power-law spectra (the isolated top
    eigenvalues can be annihilated by roots of r), see :func:`free_loss`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

import mpmath
import numpy as np
import sympy as sp

from . import symbols as s
from .validation import check_choice, check_depths, check_finite_array, check_positive, check_positive_int
from .spectra import ZETA, PowerLawSpectrum, SpectrumLike, as_spectrum

__all__ = [
    # sympy expressions
    "CONTINUUM_PREFACTOR",
    "MODE_INDEX_OF_EIGENVALUE",
    "MODE_DENSITY",
    "CONSTRAINED_RESIDUAL",
    "CONSTRAINED_CONTINUUM_LOSS",
    "CONSTRAINED_ASYMPTOTE",
    "PHI_N",
    "PHI_N_ZERO_SQUARED",
    "FREE_CONTINUUM_SUM",
    "FREE_CONTINUUM_SUM_ASYMPTOTE",
    "FREE_CONTINUUM_LOSS",
    "FREE_CONTINUUM_ASYMPTOTE",
    "derive_continuum_prefactor",
    # exact finite-d losses
    "constrained_loss",
    "free_loss",
    "free_loss_mpmath",
    # continuum references
    "constrained_continuum_loss",
    "constrained_asymptote",
    "phi_n_zero_squared",
    "free_continuum_sum",
    "free_continuum_loss",
    "free_continuum_asymptote",
    # exponents and windows
    "constrained_exponent",
    "free_exponent",
    "ValidityWindow",
    "validity_window",
]

Depth = Union[int, np.ndarray]

# --------------------------------------------------------------------------------------
# Symbolic formulas (written once; numeric code below is lambdified from them)
# --------------------------------------------------------------------------------------

#: paper eq. (31): mode index as a function of the eigenvalue, k = (c_λ/λ)^(1/a)
MODE_INDEX_OF_EIGENVALUE = (s.c_lambda / s.lam) ** (1 / s.a)
#: paper eq. (32): |dk/dλ| = (c_λ^(1/a)/a) λ^(-1-1/a)
MODE_DENSITY = s.c_lambda ** (1 / s.a) / s.a * s.lam ** (-1 - 1 / s.a)
#: K of the continuum step: Σ_k λ_k ω_k f(λ_k) ≈ K ∫_0^{λ_1} λ^(ζ-1) f(λ) dλ (eqs. 31-32, 34)
CONTINUUM_PREFACTOR = s.c_omega * s.c_lambda ** (1 - s.zeta) / s.a
#: paper eq. (33): the repeated-update residual r_L(λ) = (1 - γλ/L)^L
CONSTRAINED_RESIDUAL = (1 - s.gamma * s.lam / s.L) ** s.L
#: the exact continuum integral K ∫_0^{λ_1} λ^(ζ-1) (1 - λ/λ_1)^(2L) dλ = K λ_1^ζ B(ζ, 2L+1)
#: of the constrained loss at the reference step γ* = L/λ_1 (the step before eq. 34)
CONSTRAINED_CONTINUUM_LOSS = (
    CONTINUUM_PREFACTOR * s.lam1**s.zeta * sp.gamma(s.zeta) * sp.gamma(2 * s.L + 1) / sp.gamma(2 * s.L + 1 + s.zeta)
)
#: paper eq. (34): R_L^con ≈ (c_ω c_λ^(1-ζ)/a) Γ(ζ) (λ_1/(2L))^ζ
CONSTRAINED_ASYMPTOTE = CONTINUUM_PREFACTOR * sp.gamma(s.zeta) * (s.lam1 / (2 * s.L)) ** s.zeta
#: paper eq. (38): orthonormal shifted Jacobi polynomial for the weight λ^(ζ-1) on [0, λ_1]
PHI_N = sp.sqrt((2 * s.n + s.zeta) / s.lam1**s.zeta) * sp.jacobi(s.n, s.zeta - 1, 0, 1 - 2 * s.lam / s.lam1)
#: paper eq. (39): φ_n(0)² = ((2n+ζ)/λ_1^ζ) [Γ(n+ζ)/(Γ(ζ)Γ(n+1))]²
PHI_N_ZERO_SQUARED = (2 * s.n + s.zeta) / s.lam1**s.zeta * (sp.gamma(s.n + s.zeta) / (sp.gamma(s.zeta) * sp.gamma(s.n + 1))) ** 2
#: closed form of Σ_{n=0..L} φ_n(0)² (telescoping; proved symbolically in the tests)
FREE_CONTINUUM_SUM = sp.gamma(s.L + s.zeta + 1) ** 2 / (
    s.lam1**s.zeta * sp.gamma(s.zeta) * sp.gamma(s.zeta + 1) * sp.gamma(s.L + 1) ** 2
)
#: paper eq. (40): Σ_{n<=L} φ_n(0)² ~ L^(2ζ)/(ζ λ_1^ζ Γ(ζ)²)
FREE_CONTINUUM_SUM_ASYMPTOTE = s.L ** (2 * s.zeta) / (s.zeta * s.lam1**s.zeta * sp.gamma(s.zeta) ** 2)
#: paper eq. (37): R_L^free = K [Σ_{n<=L} φ_n(0)²]^(-1)
FREE_CONTINUUM_LOSS = CONTINUUM_PREFACTOR / FREE_CONTINUUM_SUM
#: paper eq. (40): R_L^free ≈ K ζ λ_1^ζ Γ(ζ)² L^(-2ζ)
FREE_CONTINUUM_ASYMPTOTE = CONTINUUM_PREFACTOR / FREE_CONTINUUM_SUM_ASYMPTOTE

# Numerically stable equal forms: Γ(x+m)/Γ(x) = rf(x, m) (scipy.special.poch stays
# accurate for x ~ 1e9, where exp(gammaln - gammaln) loses 6 digits). The tests check
# each against the paper form above with sympy.gammasimp and with mpmath.
_CONSTRAINED_CONTINUUM_STABLE = CONTINUUM_PREFACTOR * s.lam1**s.zeta * sp.gamma(s.zeta) / sp.rf(2 * s.L + 1, s.zeta)
_PHI_N_ZERO_SQUARED_STABLE = (2 * s.n + s.zeta) / s.lam1**s.zeta * (sp.rf(s.n + 1, s.zeta - 1) / sp.gamma(s.zeta)) ** 2
_FREE_CONTINUUM_SUM_STABLE = sp.rf(s.L + 1, s.zeta) ** 2 / (s.lam1**s.zeta * sp.gamma(s.zeta) * sp.gamma(s.zeta + 1))

_MODULES = ["scipy", "numpy"]
_prefactor = sp.lambdify((s.c_omega, s.c_lambda, s.zeta, s.a), CONTINUUM_PREFACTOR, _MODULES)
_constrained_continuum = sp.lambdify((s.L, s.zeta, s.lam1), _CONSTRAINED_CONTINUUM_STABLE / CONTINUUM_PREFACTOR, _MODULES)
_constrained_asymptote = sp.lambdify((s.L, s.zeta, s.lam1), CONSTRAINED_ASYMPTOTE / CONTINUUM_PREFACTOR, _MODULES)
_phi_n_zero_squared = sp.lambdify((s.n, s.zeta, s.lam1), _PHI_N_ZERO_SQUARED_STABLE, _MODULES)
_free_continuum_sum = sp.lambdify((s.L, s.zeta, s.lam1), _FREE_CONTINUUM_SUM_STABLE, _MODULES)
_free_continuum_sum_asymptote = sp.lambdify((s.L, s.zeta, s.lam1), FREE_CONTINUUM_SUM_ASYMPTOTE, _MODULES)


def derive_continuum_prefactor() -> sp.Expr:
    """Derive K from eqs. (2), (31)-(32): the continuum step of the population loss.

    With ``λ_k = c_λ k^(-a)``, ``ω_k = c_ω k^(-b)``, the summand ``λ_k ω_k f(λ_k)``
    times the mode density ``|dk/dλ|`` (eq. 32) equals ``K λ^(ζ-1) f(λ)``; this
    returns the simplified ``K`` obtained that way, expressed in ``a, b``.

    Returns
    -------
    sympy.Expr
        ``K(a, b, c_λ, c_ω)``; equal to :data:`CONTINUUM_PREFACTOR` with
        ``ζ = (a + b - 1)/a`` substituted.

    References
    ----------
    Paper eqs. (2), (31)-(32), (34).

    Examples
    --------
    >>> from theory import symbols as s
    >>> K = derive_continuum_prefactor()
    >>> sp.simplify(K - CONTINUUM_PREFACTOR.subs(s.zeta, ZETA)) == 0
    True
    """
    k_of_lam = MODE_INDEX_OF_EIGENVALUE
    omega_of_lam = s.c_omega * k_of_lam ** (-s.b)
    integrand = s.lam * omega_of_lam * MODE_DENSITY
    return sp.simplify(sp.powsimp(sp.expand_power_base(integrand / s.lam ** (ZETA - 1), force=True), force=True))


# --------------------------------------------------------------------------------------
# Argument helpers
# --------------------------------------------------------------------------------------


def _shaped(depth: object, values: np.ndarray):
    """Return ``values`` with the shape of ``depth`` (a float for a scalar depth)."""
    shape = np.shape(depth)
    if shape == ():
        return float(values[0])
    return np.asarray(values, dtype=np.float64).reshape(shape)


def _power_law(spectrum: object, name: str = "spectrum") -> PowerLawSpectrum:
    """The spectrum as a PowerLawSpectrum with ζ > 0 (a + b > 1), else a ValueError."""
    spectrum = as_spectrum(spectrum, name)
    if not isinstance(spectrum, PowerLawSpectrum) or spectrum.zeta is None:
        raise ValueError(
            f"{name} must be a PowerLawSpectrum with a > 0 (the law needs ζ = (a+b-1)/a); got {spectrum!r}"
        )
    if spectrum.zeta <= 0:
        raise ValueError(
            f"{name} must have ζ = (a+b-1)/a > 0, i.e. a + b > 1, for a power law in depth; "
            f"got a={spectrum.a}, b={spectrum.b} (ζ={spectrum.zeta:g})"
        )
    return spectrum


def _check_degrees(n: object) -> np.ndarray:
    """Polynomial degrees as a 1-d int64 array of integers >= 0."""
    array = np.atleast_1d(np.asarray(n))
    if array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"n must be an integer >= 0 or an array of them; got {n!r}")
    if array.size == 0 or np.any(array < 0):
        raise ValueError(f"n must be an integer >= 0 (a polynomial degree); got {n!r}")
    return array.ravel().astype(np.int64)


def _loss_weights(spectrum: SpectrumLike) -> np.ndarray:
    """w_k = λ_k ω_k, the weights of the population loss (eq. 30)."""
    return spectrum.eigenvalues * spectrum.teacher_eigenvalues


# --------------------------------------------------------------------------------------
# Constrained (repeated-update) loss, eqs. (27), (33)
# --------------------------------------------------------------------------------------

_BLOCK = 256  # consecutive depths handled by one matrix product in _weighted_power_sums
_CHUNK = 1 << 21  # elements per temporary array in the direct evaluation


def _log_abs_one_minus(u: np.ndarray) -> np.ndarray:
    """``log|1 - u|``: ``log1p(-u)`` where ``u < 1/2`` (no cancellation), ``log|1 - u|`` elsewhere.

    Each form is evaluated only on its own entries, so ``u >= 1`` (a residual
    ``1 - u <= 0``, allowed for ``γ`` up to ``2L/λ_1``) never meets ``log1p``'s
    domain; ``u = 1`` gives ``-inf``, a residual that vanishes.
    """
    out = np.empty_like(u)
    small = u < 0.5
    out[small] = np.log1p(-u[small])
    with np.errstate(divide="ignore"):
        out[~small] = np.log(np.abs(1.0 - u[~small]))
    return out


def _weighted_power_sums(weights: np.ndarray, log_base: np.ndarray, powers: np.ndarray) -> np.ndarray:
    """Σ_k w_k exp(p log_base_k) for each integer p >= 1 in ``powers``.

    Depths that fill a block of consecutive integers ``[p0, p0 + 256)`` are
    evaluated as one matrix product ``U Vᵀ`` with ``U_bk = w_k e^{p0_b ℓ_k}``
    and ``V_jk = e^{j ℓ_k}`` (all terms positive, so the product is accurate to
    round-off); isolated depths are evaluated directly.
    """
    finite = np.isfinite(log_base)  # log_base = -inf: a residual that vanishes (contributes 0 for p >= 1)
    weights, log_base = weights[finite], log_base[finite]
    if weights.size == 0:
        return np.zeros(powers.shape, dtype=np.float64)
    if powers.size > 1 and np.all(powers[1:] > powers[:-1]):  # the usual case: sorted distinct depths
        unique, inverse = powers, None
    else:
        unique, inverse = np.unique(powers, return_inverse=True)
    values = np.empty(unique.shape, dtype=np.float64)
    block_of = unique // _BLOCK
    counts = np.bincount(block_of)
    dense = np.flatnonzero(counts >= _BLOCK // 8)  # blocks holding at least 32 of their 256 depths
    row_of_block = np.full(counts.size, -1)
    row_of_block[dense] = np.arange(dense.size)
    rows = row_of_block[block_of]
    is_dense = rows >= 0
    if dense.size:
        offsets = np.arange(_BLOCK, dtype=np.float64)
        v_matrix = np.exp(np.multiply.outer(offsets, log_base))  # (J, d): e^{j ℓ_k}
        u_matrix = np.exp(np.multiply.outer((dense * _BLOCK).astype(np.float64), log_base))
        u_matrix *= weights  # (blocks, d): w_k e^{p0_b ℓ_k}
        table = u_matrix @ v_matrix.T  # (n_dense_blocks, J)
        values[is_dense] = table[rows[is_dense], unique[is_dense] - dense[rows[is_dense]] * _BLOCK]
    sparse = np.flatnonzero(~is_dense)
    step = max(1, _CHUNK // weights.size)
    for start in range(0, sparse.size, step):
        idx = sparse[start : start + step]
        values[idx] = np.exp(np.multiply.outer(unique[idx].astype(np.float64), log_base)) @ weights
    return values if inverse is None else values[inverse].reshape(powers.shape)


def constrained_loss(depth: Depth, spectrum: SpectrumLike, gamma: float | np.ndarray | None = None):
    """Exact finite-d population loss of the repeated-update (constrained) residual.

    ``R_L^con = Σ_k λ_k ω_k r_L(λ_k)²`` with ``r_L(λ) = (1 - γλ/L)^L``
    (:data:`CONSTRAINED_RESIDUAL`, eq. 33): every layer applies the same update
    ``B_ℓ = κI``, ``W_v W_y = v W_y``, ``γ = κv`` (eq. 27).

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) L >= 1.
    spectrum : Spectrum or PowerLawSpectrum
        Input/teacher eigenvalues (any spectrum).
    gamma : float, array_like or None, optional
        Effective step γ. ``None`` (default) uses the reference step
        ``γ* = L/λ_1`` at each depth, for which ``r_L(λ) = (1 - λ/λ_1)^L``.
        A scalar applies to all depths; an array must match ``depth``'s shape.
        Must lie in the stable range ``0 < γ < 2L/λ_1`` at every depth.

    Returns
    -------
    float or numpy.ndarray
        The loss, shaped like ``depth``.

    Notes
    -----
    At a fixed step ``γ <= 1/λ_1`` the loss *rises* with L towards
    ``Σ_k λ_k ω_k e^(-2γλ_k)``, because ``(1 - u/L)^L`` increases to ``e^(-u)`` for
    ``0 <= u <= 1 <= L``; the decay in L of eq. (34)
    is that of the step growing with depth, ``γ* ∝ L``. With the default step
    the whole depth sequence is computed as a few matrix products (10^5 depths
    at d = 1024 in tens of milliseconds).

    References
    ----------
    Paper eqs. (27), (29)-(30), (33)-(34).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> spec = PowerLawSpectrum(a=2.0, b=1.0, d=64)
    >>> constrained_loss([1, 2, 4], spec).round(5).tolist()
    [0.13643, 0.09678, 0.05634]
    >>> constrained_loss(4, spec, gamma=2.0) > constrained_loss(2, spec, gamma=2.0)
    True
    """
    depths = check_depths(depth)
    spectrum = as_spectrum(spectrum)
    lam = spectrum.eigenvalues
    weights = _loss_weights(spectrum)
    lam1 = spectrum.lambda_1
    if gamma is None:
        # r_L² = (1 - λ/λ_1)^(2L): a fixed base per mode, so the depth sequence is a power sum
        log_base = _log_abs_one_minus(lam / lam1)
        return _shaped(depth, _weighted_power_sums(weights, log_base, 2 * depths))

    gammas = np.asarray(gamma)
    if gammas.ndim == 0:
        gammas = np.full(depths.shape, check_positive("gamma", gamma))
    else:
        gammas = check_finite_array("gamma", gamma, ndim=None).ravel()
        if np.shape(gamma) != np.shape(depth):
            raise ValueError(
                f"gamma must be a scalar or have the shape of depth {np.shape(depth)}; got shape {np.shape(gamma)}"
            )
    limit = 2.0 * depths / lam1
    bad = ~((gammas > 0) & (gammas < limit))
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"gamma must lie in the stable range 0 < gamma < 2L/lambda_1 = {limit[i]:.6g} at depth L={depths[i]} "
            f"(eq. 33, lambda_1={lam1:.6g}); got gamma={gammas[i]:.6g}"
        )
    out = np.empty(depths.shape, dtype=np.float64)
    step = max(1, _CHUNK // lam.size)
    for start in range(0, depths.size, step):
        sl = slice(start, start + step)
        u = (gammas[sl] / depths[sl])[:, None] * lam[None, :]
        out[sl] = np.exp(2.0 * depths[sl, None] * _log_abs_one_minus(u)) @ weights
    return _shaped(depth, out)


# --------------------------------------------------------------------------------------
# Free (optimal) polynomial loss on the discrete spectrum, eqs. (35)-(37)
# --------------------------------------------------------------------------------------


def _merged_measure(spectrum: SpectrumLike) -> tuple[np.ndarray, np.ndarray]:
    """Distinct eigenvalues (descending) and their summed loss weights λω (exact merge)."""
    lam = spectrum.eigenvalues
    unique, inverse = np.unique(lam, return_inverse=True)
    weights = np.bincount(inverse.ravel(), weights=_loss_weights(spectrum))
    return unique[::-1].copy(), weights[::-1].copy()


def _free_loss_sequence(lam: np.ndarray, weights: np.ndarray, max_depth: int) -> np.ndarray:
    """min_{deg r <= L, r(0)=1} Σ w_k r(λ_k)² for L = 0..max_depth (float64).

    The minimum is ‖v - Π_L v‖² with v = sqrt(w) and Π_L the orthogonal projector
    onto the Krylov space span{Dv, ..., D^L v}, D = diag(λ). The basis is built by
    Arnoldi with classical Gram-Schmidt applied twice ("twice is enough"), which
    keeps it orthonormal to round-off; without the re-orthogonalisation (plain
    Lanczos), or with a Vandermonde least-squares fit, float64 loses the answer
    entirely by L ~ 16 on power-law spectra (see the tests).
    """
    n_distinct = lam.size
    out = np.zeros(max_depth + 1, dtype=np.float64)
    x = lam / lam[0]  # scale-free: r(λ) -> r(cλ) maps the problem to itself
    v = np.sqrt(weights)
    residual = v.copy()
    out[0] = residual @ residual
    steps = min(max_depth, n_distinct - 1)  # r = Π(1 - λ/λ_k) gives a zero loss for L >= n_distinct
    basis = np.empty((steps, n_distinct), dtype=np.float64)
    vector = x * v
    tiny = 16 * np.finfo(np.float64).eps
    for j in range(steps):
        norm_before = np.linalg.norm(vector)
        for _ in range(2):
            if j:
                vector = vector - (basis[:j] @ vector) @ basis[:j]
        norm = np.linalg.norm(vector)
        if not norm > tiny * norm_before:
            # numerically invariant Krylov space: the residual is at the round-off floor
            out[j + 1 : steps + 1] = out[j]
            break
        q = vector / norm
        basis[j] = q
        residual = residual - q * (q @ residual)
        out[j + 1] = residual @ residual
        vector = x * q
    return out


def free_loss(depth: Depth, spectrum: SpectrumLike):
    """Exact finite-d loss of the optimal (free) residual polynomial.

    ``R_L^free = min_{deg r <= L, r(0) = 1} Σ_k λ_k ω_k r(λ_k)² = [Σ_{n=0..L} ψ_n(0)²]^(-1)``
    with ψ_n orthonormal with respect to ``Σ_k λ_k ω_k δ_{λ_k}`` (Cauchy-Schwarz,
    eqs. 36-37, on the discrete spectrum instead of its continuum). It is zero once
    L reaches the number of distinct eigenvalues.

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) L >= 1; the whole sequence up to ``max(depth)`` is computed in one pass.
    spectrum : Spectrum or PowerLawSpectrum
        Input/teacher eigenvalues (any spectrum).

    Returns
    -------
    float or numpy.ndarray
        The loss, shaped like ``depth``.

    Notes
    -----
    Computed as the squared distance of ``v = (sqrt(λ_k ω_k))_k`` from the Krylov
    space ``span{Dv, ..., D^L v}`` with a basis orthonormalised twice (Arnoldi with
    full re-orthogonalisation), O(d L²) flops. Accuracy, measured against
    :func:`free_loss_mpmath`: relative error ~1e-14 while the loss is above
    ~1e-16 Σ_k λ_k ω_k, and an absolute error floor near 1e-27 Σ_k λ_k ω_k (values
    below it are round-off; use :func:`free_loss_mpmath` there). The basis needs
    ``8·d·min(L, d)`` bytes.

    On power-law spectra the exact discrete optimum falls *faster* than the
    continuum law ``L^(-2ζ)`` of eq. (40): a free polynomial can place roots on
    the isolated top eigenvalues, which the continuum density smears out.
    Measured local slopes ``-dlog R/dlog L`` (a = 2, b = 1, ζ = 1, d = 262144,
    where d no longer matters): 2.64, 3.17, 3.53, 3.75, 3.87 between L = 2, 4, ..,
    64, against 1.47, 1.70, 1.84, 1.91, 1.96 for :func:`free_continuum_loss`.

    References
    ----------
    Paper eqs. (29)-(30), (35)-(37).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> spec = PowerLawSpectrum(a=2.0, b=1.0, d=64)
    >>> free_loss([1, 2, 4], spec).round(5).tolist()
    [0.13562, 0.03398, 0.00535]
    >>> free_loss(64, spec)
    0.0
    """
    depths = check_depths(depth)
    spectrum = as_spectrum(spectrum)
    lam, weights = _merged_measure(spectrum)
    basis_bytes = 8.0 * lam.size * min(int(depths.max()), lam.size)
    if basis_bytes > 4e9:
        raise ValueError(
            f"depth must be small enough for the Krylov basis to fit in memory: max depth {int(depths.max())} at "
            f"d={lam.size} needs {basis_bytes / 1e9:.1f} GB (limit 4 GB)"
        )
    sequence = _free_loss_sequence(lam, weights, int(depths.max()))
    return _shaped(depth, sequence[depths])


def _stieltjes_free_loss(lam: list, weights: list, max_depth: int, dps: int) -> list:
    """Σ_{n<=L} ψ_n(0)² inverted, by the discretised Stieltjes procedure at ``dps`` digits."""
    with mpmath.workdps(dps):
        x = [mpmath.mpf(float(v)) for v in lam]
        w = [mpmath.mpf(float(v)) for v in weights]
        size = len(x)
        p_prev, p = [mpmath.mpf(0)] * size, [mpmath.mpf(1)] * size  # monic π_{n-1}, π_n at the nodes
        at_zero_prev, at_zero = mpmath.mpf(0), mpmath.mpf(1)  # π_{n-1}(0), π_n(0)
        norm_prev = None
        total = mpmath.mpf(0)
        out = []
        for degree in range(min(max_depth, size - 1) + 1):
            wp = [w[k] * p[k] * p[k] for k in range(size)]
            norm = mpmath.fsum(wp)
            total += at_zero * at_zero / norm  # ψ_n(0)² = π_n(0)²/‖π_n‖²
            out.append(1 / total)
            alpha = mpmath.fdot(wp, x) / norm
            beta = norm / norm_prev if norm_prev is not None else mpmath.mpf(0)
            p_prev, p = p, [(x[k] - alpha) * p[k] - beta * p_prev[k] for k in range(size)]
            at_zero_prev, at_zero = at_zero, -alpha * at_zero - beta * at_zero_prev
            norm_prev = norm
        out.extend([mpmath.mpf(0)] * (max_depth + 1 - len(out)))
        return out


def free_loss_mpmath(depth: Depth, spectrum: SpectrumLike, dps: int | None = None):
    """High-precision reference for :func:`free_loss`: Stieltjes procedure in mpmath.

    Builds the monic orthogonal polynomials π_n of ``Σ_k λ_k ω_k δ_{λ_k}`` by the
    three-term recurrence (discretised Stieltjes procedure) and returns
    ``[Σ_{n<=L} π_n(0)²/‖π_n‖²]^(-1)`` (eq. 37 on the discrete spectrum). The
    procedure loses up to about ``log10(λ_1/λ_d)/2`` digits per degree, so the
    working precision must grow with L: float64 (16 digits) is already wrong by
    tens of per cent at L = 16 for d = 4096, a = 1.5, b = 1.

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) L >= 1.
    spectrum : Spectrum or PowerLawSpectrum
        Input/teacher eigenvalues.
    dps : int, optional
        Decimal digits. ``None`` (default) chooses ``30 + L·log10(λ_1/λ_d)/2``,
        recomputes with 50 % more digits, and doubles the precision until the two
        agree to 1e-20 relative (RuntimeError beyond 20000 digits). A given
        ``dps`` is used as is, unchecked.

    Returns
    -------
    float or numpy.ndarray
        The loss, shaped like ``depth``.

    References
    ----------
    Paper eqs. (35)-(37).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> spec = PowerLawSpectrum(a=2.0, b=1.0, d=64)
    >>> round(free_loss_mpmath(4, spec), 5)
    0.00535
    """
    depths = check_depths(depth)
    spectrum = as_spectrum(spectrum)
    lam, weights = _merged_measure(spectrum)
    max_depth = int(depths.max())
    if dps is not None:
        digits = check_positive_int("dps", dps)
        values = _stieltjes_free_loss(list(lam), list(weights), max_depth, digits)
        return _shaped(depth, np.array([float(values[L]) for L in depths]))
    span = math.log10(lam[0] / lam[-1]) if lam.size > 1 else 0.0
    digits = 30 + int(math.ceil(min(max_depth, lam.size) * span / 2))
    previous = _stieltjes_free_loss(list(lam), list(weights), max_depth, digits)
    while digits <= 20000:
        more = digits + max(30, digits // 2)
        current = _stieltjes_free_loss(list(lam), list(weights), max_depth, more)
        with mpmath.workdps(more):
            worst = max(
                (abs(c - p) / abs(c) if c != 0 else abs(p)) for c, p in zip(current, previous)
            )
        if worst < mpmath.mpf("1e-20"):
            return _shaped(depth, np.array([float(current[L]) for L in depths]))
        previous, digits = current, 2 * more
    raise RuntimeError(f"free_loss_mpmath did not converge below 20000 digits for max depth {max_depth}")


# --------------------------------------------------------------------------------------
# Continuum references, eqs. (31)-(40)
# --------------------------------------------------------------------------------------


def _prefactor_of(spectrum: PowerLawSpectrum) -> float:
    return float(_prefactor(spectrum.c_omega, spectrum.c_lambda, spectrum.zeta, spectrum.a))


def _continuum_law(depth: Depth, spectrum: PowerLawSpectrum, law, *, reciprocal: bool = False):
    """``K law(L, ζ, λ_1)`` (or ``K / law`` for the free polynomial's sums) at each depth, shaped like ``depth``."""
    depths = check_depths(depth)
    spectrum = _power_law(spectrum)
    values = np.asarray(law(depths.astype(np.float64), spectrum.zeta, spectrum.lambda_1), dtype=np.float64)
    prefactor = _prefactor_of(spectrum)
    return _shaped(depth, prefactor / values if reciprocal else prefactor * values)


def constrained_continuum_loss(depth: Depth, spectrum: PowerLawSpectrum):
    """Continuum constrained loss at the reference step γ* = L/λ_1, before the large-L limit.

    ``K ∫_0^{λ_1} λ^(ζ-1) (1 - λ/λ_1)^(2L) dλ = K λ_1^ζ Γ(ζ) Γ(2L+1)/Γ(2L+1+ζ)``
    (:data:`CONSTRAINED_CONTINUUM_LOSS`), the exact integral of which eq. (34) is
    the ``L >> 1`` limit; the ratio to :func:`constrained_asymptote` is
    ``1 - ζ(ζ+1)/(4L) + O(L^-2)``.

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) L >= 1.
    spectrum : PowerLawSpectrum
        With ``a > 0`` and ``a + b > 1``.

    Returns
    -------
    float or numpy.ndarray
        The continuum loss (the exact integral, before the large-L limit), shaped like ``depth``.

    References
    ----------
    Paper eqs. (31)-(34).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> spec = PowerLawSpectrum(a=2.0, b=1.0, d=10**6)      # ζ = 1, K = 1/2
    >>> round(constrained_continuum_loss(1, spec), 12)        # K/(2L+1) at ζ = 1
    0.166666666667
    """
    return _continuum_law(depth, spectrum, _constrained_continuum)


def constrained_asymptote(depth: Depth, spectrum: PowerLawSpectrum):
    """Large-depth constrained law ``(c_ω c_λ^(1-ζ)/a) Γ(ζ) (λ_1/(2L))^ζ ∝ L^(-ζ)``.

    Valid for ``1 << L << λ_1/λ_d`` (:func:`validity_window`); see
    :data:`CONSTRAINED_ASYMPTOTE`.

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) L >= 1.
    spectrum : PowerLawSpectrum
        With ``a > 0`` and ``a + b > 1``.

    Returns
    -------
    float or numpy.ndarray
        The asymptotic loss ∝ L^(-ζ), shaped like ``depth``.

    References
    ----------
    Paper eq. (34).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> constrained_asymptote([1, 10], PowerLawSpectrum(a=2.0, b=1.0, d=1024)).tolist()
    [0.25, 0.025]
    """
    return _continuum_law(depth, spectrum, _constrained_asymptote)


def phi_n_zero_squared(n: int | np.ndarray, zeta: float, lambda_1: float):
    """φ_n(0)² for the orthonormal shifted Jacobi polynomials of the weight λ^(ζ-1) on [0, λ_1].

    ``φ_n(λ) = sqrt((2n+ζ)/λ_1^ζ) P_n^(ζ-1,0)(1 - 2λ/λ_1)`` (:data:`PHI_N`, eq. 38), so
    ``φ_n(0)² = ((2n+ζ)/λ_1^ζ) [Γ(n+ζ)/(Γ(ζ)Γ(n+1))]² ~ 2 n^(2ζ-1)/(λ_1^ζ Γ(ζ)²)``
    (:data:`PHI_N_ZERO_SQUARED`, eq. 39).

    Parameters
    ----------
    n : int or array_like of int
        Degree(s) n >= 0.
    zeta : float
        ζ > 0.
    lambda_1 : float
        Upper end λ_1 > 0 of the interval.

    Returns
    -------
    float or numpy.ndarray
        Shaped like ``n``.

    References
    ----------
    Paper eqs. (38)-(39).

    Examples
    --------
    >>> phi_n_zero_squared([0, 1, 2], 1.0, 1.0).tolist()     # ζ = 1: Legendre, 2n + 1
    [1.0, 3.0, 5.0]
    """
    degrees = _check_degrees(n)
    zeta = check_positive("zeta", zeta)
    lambda_1 = check_positive("lambda_1", lambda_1)
    values = _phi_n_zero_squared(degrees.astype(np.float64), zeta, lambda_1)
    return _shaped(n, np.asarray(values, dtype=np.float64) * np.ones(degrees.shape))


def free_continuum_sum(depth: Depth, zeta: float, lambda_1: float):
    """``Σ_{n=0..L} φ_n(0)²`` in closed form: ``Γ(L+ζ+1)²/(λ_1^ζ Γ(ζ) Γ(ζ+1) Γ(L+1)²)``.

    The closed form (:data:`FREE_CONTINUUM_SUM`) telescopes the sum of eq. (39);
    its large-L form is eq. (40), ``L^(2ζ)/(ζ λ_1^ζ Γ(ζ)²)``
    (:data:`FREE_CONTINUUM_SUM_ASYMPTOTE`).

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) L >= 1 (the degree bound).
    zeta : float
        ζ > 0.
    lambda_1 : float
        λ_1 > 0.

    Returns
    -------
    float or numpy.ndarray
        Shaped like ``depth``.

    References
    ----------
    Paper eqs. (37)-(40).

    Examples
    --------
    >>> free_continuum_sum([1, 2, 3], 1.0, 1.0).tolist()    # (L + 1)² at ζ = 1
    [4.0, 9.0, 16.0]
    """
    depths = check_depths(depth)
    zeta = check_positive("zeta", zeta)
    lambda_1 = check_positive("lambda_1", lambda_1)
    return _shaped(depth, np.asarray(_free_continuum_sum(depths.astype(np.float64), zeta, lambda_1), dtype=np.float64))


def free_continuum_loss(depth: Depth, spectrum: PowerLawSpectrum):
    """Continuum free-polynomial loss ``K [Σ_{n<=L} φ_n(0)²]^(-1)`` (eq. 37).

    The optimum of ``K ∫_0^{λ_1} λ^(ζ-1) r(λ)² dλ`` over residuals of degree <= L
    with ``r(0) = 1`` (:data:`FREE_CONTINUUM_LOSS`).

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) L >= 1.
    spectrum : PowerLawSpectrum
        With ``a > 0`` and ``a + b > 1``.

    Returns
    -------
    float or numpy.ndarray
        The continuum loss ``K / Σ_{n<=L} φ_n(0)²``, shaped like ``depth``.

    References
    ----------
    Paper eqs. (35)-(37).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> free_continuum_loss([1, 3], PowerLawSpectrum(a=2.0, b=1.0, d=1024)).tolist()  # K/(L+1)²
    [0.125, 0.03125]
    """
    return _continuum_law(depth, spectrum, _free_continuum_sum, reciprocal=True)


def free_continuum_asymptote(depth: Depth, spectrum: PowerLawSpectrum):
    """Large-depth free law ``K ζ λ_1^ζ Γ(ζ)² L^(-2ζ) ∝ L^(-2ζ)`` (eq. 40).

    Valid for ``1 << L << sqrt(λ_1/λ_d)`` (:func:`validity_window`); see
    :data:`FREE_CONTINUUM_ASYMPTOTE`.

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) L >= 1.
    spectrum : PowerLawSpectrum
        With ``a > 0`` and ``a + b > 1``.

    Returns
    -------
    float or numpy.ndarray
        The asymptotic loss ∝ L^(-2ζ), shaped like ``depth``.

    References
    ----------
    Paper eq. (40).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> free_continuum_asymptote([1, 10], PowerLawSpectrum(a=2.0, b=1.0, d=1024)).tolist()
    [0.5, 0.005]
    """
    return _continuum_law(depth, spectrum, _free_continuum_sum_asymptote, reciprocal=True)


# --------------------------------------------------------------------------------------
# Exponents and validity windows
# --------------------------------------------------------------------------------------


def constrained_exponent(spectrum: PowerLawSpectrum) -> float:
    """Exponent ζ of the constrained law ``R ∝ L^(-ζ)`` (eq. 34).

    Parameters
    ----------
    spectrum : PowerLawSpectrum
        With ``a > 0`` and ``a + b > 1``.

    Returns
    -------
    float
        ``ζ = (a + b - 1)/a``.

    References
    ----------
    Paper eq. (34); Table 2 (column ζ).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> constrained_exponent(PowerLawSpectrum(a=2.0, b=0.5, d=128))
    0.75
    """
    return float(_power_law(spectrum).zeta)


def free_exponent(spectrum: PowerLawSpectrum) -> float:
    """Exponent 2ζ of the free-polynomial law ``R ∝ L^(-2ζ)`` (eq. 40).

    Parameters
    ----------
    spectrum : PowerLawSpectrum
        With ``a > 0`` and ``a + b > 1``.

    Returns
    -------
    float
        ``2ζ = 2(a + b - 1)/a``.

    References
    ----------
    Paper eq. (40); Table 2 (column 2ζ).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> free_exponent(PowerLawSpectrum(a=2.0, b=0.5, d=128))
    1.5
    """
    return 2.0 * float(_power_law(spectrum).zeta)


@dataclass(frozen=True)
class ValidityWindow:
    """Depth range ``lower << L << upper`` in which a continuum law applies.

    Attributes
    ----------
    lower, upper : float
        The bounds of ``lower << L << upper``.
    statement : str
        The condition in words, with the numbers.
    margin : float
        How ``<<`` is read by :meth:`contains`: ``margin·lower <= L <= upper/margin``
        (default 10, one decade on each side).

    References
    ----------
    Paper eqs. (34), (40).

    Examples
    --------
    >>> w = ValidityWindow(1.0, 1000.0, "1 << L << 1000")
    >>> w.contains([5, 10, 100, 101]).tolist()
    [False, True, True, False]
    """

    lower: float
    upper: float
    statement: str
    margin: float = 10.0

    def contains(self, depth: Depth):
        """True where ``margin·lower <= depth <= upper/margin`` (a bool, or an array like ``depth``)."""
        depths = check_depths(depth)
        inside = (depths >= self.margin * self.lower) & (depths <= self.upper / self.margin)
        return bool(inside[0]) if np.shape(depth) == () else inside.reshape(np.shape(depth))


def validity_window(spectrum: PowerLawSpectrum, polynomial: str = "constrained", margin: float = 10.0) -> ValidityWindow:
    """Depth window of the constrained (eq. 34) or free (eq. 40) continuum law.

    Constrained: ``1 << L << λ_1/λ_d`` (the step γ*/L = 1/λ_1 must not yet resolve
    the smallest eigenvalue); free: ``1 << L << sqrt(λ_1/λ_d)`` (a degree-L
    polynomial resolves eigenvalues down to ~λ_1/L², beyond which the finite
    spectrum's edge λ_d makes the decay exponential). Both need ``a + b > 1``.

    Parameters
    ----------
    spectrum : PowerLawSpectrum
        With ``a > 0`` and ``a + b > 1`` (else ValueError).
    polynomial : {'constrained', 'free'}
        Which law.
    margin : float, optional
        Reading of ``<<`` used by :meth:`ValidityWindow.contains` (default 10).

    Returns
    -------
    ValidityWindow

    References
    ----------
    Paper eqs. (34), (40).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> spec = PowerLawSpectrum(a=1.5, b=1.0, d=4096)
    >>> window = validity_window(spec, "free")
    >>> round(window.upper, 1), window.contains([4, 16, 64]).tolist()
    (512.0, [False, True, False])
    """
    spectrum = _power_law(spectrum)
    polynomial = check_choice("polynomial", polynomial, ("constrained", "free"))
    margin = check_positive("margin", margin)
    ratio = spectrum.condition_number
    if polynomial == "constrained":
        upper = ratio
        statement = f"1 << L << lambda_1/lambda_d = {upper:.6g} (eq. 34), requires a + b > 1 (a={spectrum.a:g}, b={spectrum.b:g})"
    else:
        upper = math.sqrt(ratio)
        statement = (
            f"1 << L << sqrt(lambda_1/lambda_d) = {upper:.6g} (eq. 40), requires a + b > 1 (a={spectrum.a:g}, b={spectrum.b:g})"
        )
    return ValidityWindow(lower=1.0, upper=float(upper), statement=statement, margin=margin)
