"""Deep linear attention as a covariance polynomial (paper eqs. (19)-(26), (29)-(30)).

With ``U = [x_1..x_P]``, ``S = UUᵀ/P``, query ``q = x_test`` and the effective
query-key matrices ``B_ℓ = (1/N) W_xᵀ (W_k^ℓ)ᵀ W_q^ℓ W_x`` (eq. 20), the
label-stream context states of the linear model (eq. 11, mask ``M_linear`` of
eq. 75) stay of the form ``Z_ℓ = F_ℓ U`` with

``F_0 = W_y βᵀ``,  ``F_ℓ = F_{ℓ-1} - (1/L) W_v F_{ℓ-1} S B_ℓ``,  ``h_ℓ - h_{ℓ-1} = (F_{ℓ-1} - F_ℓ) q``  (eq. 22).

The minus sign is the mask's: context tokens read each other with sign -1,
the test token reads the context with +1 and starts from ``h_0 = 0``. Hence
``ŷ_L = W_o (F_0 - F_L) q = βᵀ 𝒫_L(S) q`` (eq. 23) with the covariance polynomial

``𝒫_L(S) = Σ_{r=1..L} ((-1)^(r-1) m_r / L^r) Σ_{ℓ_1<…<ℓ_r} S B_{ℓ_1} ⋯ S B_{ℓ_r}``,  ``m_r = W_o W_v^r W_y``  (eq. 24),

exact for any finite P and any weights. :func:`covariance_polynomial` evaluates
it by a recursion over layers in O(L²) matrix products;
:func:`symbolic_covariance_polynomial` and :func:`symbolic_f_recursion` are the
same objects in non-commuting sympy symbols (rendered by the docs).

At the population level (S → Σ, all B_ℓ ∝ I) the loss becomes
``Σ_k λ_k ω_k r_L(λ_k)²`` with ``r_L = 1 - p_L`` (eqs. 29-30):
:func:`population_loss`; the laws for r_L are in :mod:`theory.polynomial_laws`.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import sympy as sp

from . import symbols as s
from .validation import check_finite_array, check_positive_int
from .spectra import SpectrumLike, as_spectrum

__all__ = [
    "S_MATRIX",
    "W_V",
    "W_Y",
    "W_O",
    "BETA_T",
    "QUERY",
    "qk_symbol",
    "readout_symbol",
    "effective_qk",
    "readout_coefficients",
    "covariance_polynomial",
    "f_recursion",
    "population_loss",
    "symbolic_covariance_polynomial",
    "symbolic_f_recursion",
    "symbolic_readout",
]

# --------------------------------------------------------------------------------------
# Non-commuting symbols of eqs. (19)-(24)
# --------------------------------------------------------------------------------------

#: the context covariance S = UUᵀ/P (eq. 19)
S_MATRIX = sp.Symbol("S", commutative=False)
#: the shared value matrix W_v, label embedding W_y and readout W_o (eqs. 8, 12)
W_V = sp.Symbol("W_v", commutative=False)
W_Y = sp.Symbol("W_y", commutative=False)
W_O = sp.Symbol("W_o", commutative=False)
#: the teacher as a row, βᵀ, and the query q = x_test
BETA_T = sp.Symbol("beta^T", commutative=False)
QUERY = sp.Symbol("q", commutative=False)


def qk_symbol(layer: int) -> sp.Symbol:
    """Non-commuting symbol ``B_ℓ`` for the effective query-key matrix of layer ℓ (eq. 20).

    References
    ----------
    Paper eq. (20).

    Examples
    --------
    >>> qk_symbol(2), qk_symbol(2).is_commutative
    (B_2, False)
    """
    return _indexed_symbol("B", "layer", layer, commutative=False)


def readout_symbol(order: int) -> sp.Symbol:
    """Commuting scalar symbol ``m_r = W_o W_v^r W_y`` (eq. 24).

    References
    ----------
    Paper eq. (24).

    Examples
    --------
    >>> readout_symbol(3), readout_symbol(3).is_commutative
    (m_3, True)
    """
    return _indexed_symbol("m", "order", order, real=True)


def _indexed_symbol(letter: str, argument: str, index: object, **assumptions) -> sp.Symbol:
    """``letter_index`` with ``index`` checked as a positive integer named ``argument``."""
    return sp.Symbol(f"{letter}_{check_positive_int(argument, index)}", **assumptions)


# --------------------------------------------------------------------------------------
# Numeric
# --------------------------------------------------------------------------------------


def _matrix(name: str, value: object, ndim_min: int = 2) -> np.ndarray:
    array = check_finite_array(name, value, ndim=None)
    if array.ndim < ndim_min:
        raise ValueError(f"{name} must have at least {ndim_min} dimensions; got shape {array.shape}")
    return array


def _column(name: str, value: object, size: int) -> np.ndarray:
    """A length-``size`` vector from shape (size,), (size, 1) or (1, size)."""
    array = check_finite_array(name, value, ndim=None)
    if array.size != size or array.ndim > 2 or (array.ndim == 2 and 1 not in array.shape):
        raise ValueError(f"{name} must have shape ({size},), ({size}, 1) or (1, {size}); got {array.shape}")
    return array.reshape(size)


def effective_qk(W_x: np.ndarray, W_q: np.ndarray, W_k: np.ndarray) -> np.ndarray:
    """Effective query-key matrices ``B_ℓ = (1/N) W_xᵀ (W_k^ℓ)ᵀ W_q^ℓ W_x`` (eq. 20).

    Parameters
    ----------
    W_x : array_like, shape (N, d)
        Input embedding.
    W_q, W_k : array_like, shape (..., N, N)
        Query and key matrices, one per layer along the leading axes (e.g. (L, N, N)).

    Returns
    -------
    numpy.ndarray, shape (..., d, d)

    References
    ----------
    Paper eqs. (11), (20).

    Examples
    --------
    >>> W_x = np.eye(2); W_q = np.stack([np.eye(2), 2 * np.eye(2)]); W_k = np.eye(2)[None]
    >>> effective_qk(W_x, W_q, W_k)[:, 0, 0].tolist()          # 1/N · (1, 2), N = 2
    [0.5, 1.0]
    """
    W_x = _matrix("W_x", W_x)
    if W_x.ndim != 2:
        raise ValueError(f"W_x must have shape (N, d); got {W_x.shape}")
    N = W_x.shape[0]
    W_q = _matrix("W_q", W_q)
    W_k = _matrix("W_k", W_k)
    for name, value in (("W_q", W_q), ("W_k", W_k)):
        if value.shape[-2:] != (N, N):
            raise ValueError(f"{name} must have shape (..., {N}, {N}) to match W_x {W_x.shape}; got {value.shape}")
    return (W_x.T @ np.swapaxes(W_k, -1, -2) @ W_q @ W_x) / N


def readout_coefficients(W_o: np.ndarray, W_v: np.ndarray, W_y: np.ndarray, depth: int) -> np.ndarray:
    """Readout coefficients ``m_r = W_o W_v^r W_y`` for r = 1..L (eq. 24).

    Parameters
    ----------
    W_o : array_like, shape (N,) or (1, N)
        Readout.
    W_v : array_like, shape (N, N)
        Shared value matrix.
    W_y : array_like, shape (N,) or (N, 1)
        Label embedding.
    depth : int
        L >= 1, the number of coefficients.

    Returns
    -------
    numpy.ndarray, shape (depth,)
        ``m[r-1] = m_r``.

    References
    ----------
    Paper eq. (24).

    Examples
    --------
    >>> readout_coefficients(np.ones(2), 2 * np.eye(2), np.array([1.0, 0.0]), 3).tolist()
    [2.0, 4.0, 8.0]
    """
    depth = check_positive_int("depth", depth)
    W_v = _matrix("W_v", W_v)
    if W_v.ndim != 2 or W_v.shape[0] != W_v.shape[1]:
        raise ValueError(f"W_v must be a square (N, N) matrix; got shape {W_v.shape}")
    N = W_v.shape[0]
    W_o = _column("W_o", W_o, N)
    vector = _column("W_y", W_y, N)
    out = np.empty(depth, dtype=np.float64)
    for r in range(depth):
        vector = W_v @ vector
        out[r] = W_o @ vector
    return out


def _check_polynomial_inputs(S: object, B: object) -> tuple[np.ndarray, np.ndarray]:
    S = _matrix("S", S)
    d = S.shape[-1]
    if S.shape[-2] != d:
        raise ValueError(f"S must have shape (..., d, d); got {S.shape}")
    B = _matrix("B", B, ndim_min=3)
    if B.ndim != 3 or B.shape[1:] != (d, d):
        raise ValueError(f"B must have shape (L, {d}, {d}) to match S {S.shape}; got {B.shape}")
    return S, B


def covariance_polynomial(S: np.ndarray, B: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The covariance polynomial 𝒫_L(S) of a depth-L linear-attention model (eq. 24).

    ``𝒫_L(S) = Σ_{r=1..L} ((-1)^(r-1) m_r / L^r) Σ_{ℓ_1<…<ℓ_r} S B_{ℓ_1} ⋯ S B_{ℓ_r}``,
    so that the model predicts ``ŷ_L = βᵀ 𝒫_L(S) q`` (eq. 23) exactly.

    Parameters
    ----------
    S : array_like, shape (..., d, d)
        Context covariance(s) ``UUᵀ/P`` (batched along leading axes).
    B : array_like, shape (L, d, d)
        Effective query-key matrices ``B_ℓ`` (eq. 20, :func:`effective_qk`).
    m : array_like, shape (L,)
        ``m[r-1] = m_r = W_o W_v^r W_y`` (:func:`readout_coefficients`).

    Returns
    -------
    numpy.ndarray, shape (..., d, d)

    Notes
    -----
    The ordered elementary sums ``G_r^(ℓ) = Σ_{ℓ_1<…<ℓ_r<=ℓ} S B_{ℓ_1} ⋯ S B_{ℓ_r}``
    obey ``G_r^(ℓ) = G_r^(ℓ-1) + G_{r-1}^(ℓ-1) S B_ℓ`` with ``G_0 = I``; updating all
    r at every layer costs L(L-1)/2 matrix products instead of the 2^L terms of
    the sum.

    References
    ----------
    Paper eqs. (19)-(24).

    Examples
    --------
    >>> S = np.diag([1.0, 0.5]); B = np.stack([np.eye(2)] * 2); m = np.array([1.0, 1.0])
    >>> np.diag(covariance_polynomial(S, B, m)).tolist()    # s - s²/4 at L = 2
    [0.75, 0.4375]
    """
    S, B = _check_polynomial_inputs(S, B)
    depth = B.shape[0]
    m = check_finite_array("m", m)
    if m.shape != (depth,):
        raise ValueError(f"m must have shape ({depth},) (one m_r per layer, as B); got {m.shape}")
    d = S.shape[-1]
    identity = np.broadcast_to(np.eye(d), S.shape)
    sums = [identity] + [np.zeros(S.shape)] * depth  # G_0..G_L
    for layer in range(depth):
        step = S @ B[layer]
        for r in range(layer + 1, 1, -1):
            sums[r] = sums[r] + sums[r - 1] @ step
        sums[1] = sums[1] + step
    coefficients = [(-1.0) ** (r - 1) * m[r - 1] / depth**r for r in range(1, depth + 1)]
    return sum(c * g for c, g in zip(coefficients, sums[1:]))


def f_recursion(
    S: np.ndarray, B: np.ndarray, W_v: np.ndarray, W_y: np.ndarray, beta: np.ndarray, depth: int
) -> np.ndarray:
    """The label-stream recursion ``F_0 = W_y βᵀ``, ``F_ℓ = F_{ℓ-1} - (1/L) W_v F_{ℓ-1} S B_ℓ`` (eq. 22).

    The context label states are ``Z_ℓ = F_ℓ U`` and the prediction is
    ``ŷ_L = W_o (F_0 - F_L) q`` (eq. 23), which equals ``βᵀ 𝒫_L(S) q``.

    Parameters
    ----------
    S : array_like, shape (..., d, d)
        Context covariance(s).
    B : array_like, shape (L, d, d)
        Effective query-key matrices.
    W_v : array_like, shape (N, N)
        Shared value matrix.
    W_y : array_like, shape (N,) or (N, 1)
        Label embedding.
    beta : array_like, shape (..., d)
        Teacher(s), broadcast against ``S``'s leading axes.
    depth : int
        L, which must equal ``len(B)`` (it sets the 1/L residual scale).

    Returns
    -------
    numpy.ndarray, shape (L + 1, ..., N, d)
        ``F_0, …, F_L``.

    References
    ----------
    Paper eqs. (21)-(23).

    Examples
    --------
    >>> F = f_recursion(np.eye(1), np.ones((2, 1, 1)), np.eye(1), np.ones(1), np.ones(1), 2)
    >>> F[:, 0, 0].tolist()                                   # (1 - 1/2)^ℓ
    [1.0, 0.5, 0.25]
    """
    S, B = _check_polynomial_inputs(S, B)
    depth = check_positive_int("depth", depth)
    if B.shape[0] != depth:
        raise ValueError(f"depth must equal the number of layers in B ({B.shape[0]}); got {depth}")
    W_v = _matrix("W_v", W_v)
    if W_v.ndim != 2 or W_v.shape[0] != W_v.shape[1]:
        raise ValueError(f"W_v must be a square (N, N) matrix; got shape {W_v.shape}")
    N, d = W_v.shape[0], S.shape[-1]
    W_y = _column("W_y", W_y, N)
    beta = check_finite_array("beta", beta, ndim=None)
    if beta.ndim < 1 or beta.shape[-1] != d:
        raise ValueError(f"beta must have shape (..., {d}); got {beta.shape}")
    F = W_y[:, None] * beta[..., None, :]  # (..., N, d)
    F = np.broadcast_to(F, np.broadcast_shapes(F.shape, S.shape[:-2] + (N, d)))
    out = [F]
    for layer in range(depth):
        F = F - (W_v @ F @ S @ B[layer]) / depth
        out.append(F)
    return np.stack(out)


def population_loss(residual_values: np.ndarray, spectrum: SpectrumLike):
    """Population loss ``Σ_k λ_k ω_k r(λ_k)²`` of a residual polynomial (eqs. 29-30).

    Parameters
    ----------
    residual_values : array_like, shape (..., d)
        ``r(λ_k)`` at the spectrum's eigenvalues, in the order of
        ``spectrum.eigenvalues`` (descending).
    spectrum : Spectrum or PowerLawSpectrum
        Input/teacher eigenvalues λ_k, ω_k.

    Returns
    -------
    float or numpy.ndarray, shape (...)

    References
    ----------
    Paper eqs. (26), (29)-(30).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> spec = PowerLawSpectrum(a=1.0, b=0.0, d=2)             # λ = (1, 1/2), ω = (1, 1)
    >>> population_loss(1 - spec.eigenvalues, spec)           # r(λ) = 1 - λ
    0.125
    """
    spectrum = as_spectrum(spectrum)
    values = check_finite_array("residual_values", residual_values, ndim=None)
    if values.ndim < 1 or values.shape[-1] != spectrum.d:
        raise ValueError(f"residual_values must have shape (..., {spectrum.d}) (one value per mode); got {values.shape}")
    loss = (values**2) @ (spectrum.eigenvalues * spectrum.teacher_eigenvalues)
    return float(loss) if np.ndim(loss) == 0 else loss


# --------------------------------------------------------------------------------------
# Symbolic (non-commuting sympy), for small L
# --------------------------------------------------------------------------------------


def symbolic_covariance_polynomial(depth: int) -> sp.Expr:
    """𝒫_L(S) of eq. (24) in non-commuting symbols S, B_1..B_L, with commuting m_r and L.

    Parameters
    ----------
    depth : int
        Number of layers (1..8; the sum has 2^L - 1 terms).

    Returns
    -------
    sympy.Expr
        ``Σ_r ((-1)^(r-1) m_r / L^r) Σ_{ℓ_1<…<ℓ_r} S B_{ℓ_1} ⋯ S B_{ℓ_r}``, with L the
        symbol :data:`theory.symbols.L` (substitute ``L = depth`` for the model).

    References
    ----------
    Paper eqs. (23)-(24).

    Examples
    --------
    >>> symbolic_covariance_polynomial(1)
    m_1*S*B_1/L
    >>> from theory import symbols as s
    >>> symbolic_covariance_polynomial(2).subs(s.L, 2)
    m_1*S*B_1/2 + m_1*S*B_2/2 - m_2*S*B_1*S*B_2/4
    """
    depth = _check_symbolic_depth(depth)
    steps = [S_MATRIX * qk_symbol(layer) for layer in range(1, depth + 1)]
    terms = []
    for r in range(1, depth + 1):
        coefficient = (-1) ** (r - 1) * readout_symbol(r) / s.L**r
        for subset in combinations(steps, r):
            terms.append(coefficient * sp.Mul(*subset))
    return sp.Add(*terms)


def symbolic_f_recursion(depth: int) -> tuple[sp.Expr, ...]:
    """The recursion of eq. (22) in non-commuting symbols: ``F_0, …, F_L`` expanded.

    ``F_0 = W_y βᵀ`` and ``F_ℓ = F_{ℓ-1} - (1/L) W_v F_{ℓ-1} S B_ℓ``.

    Parameters
    ----------
    depth : int
        Number of layers (1..8).

    Returns
    -------
    tuple of sympy.Expr
        ``(F_0, …, F_L)``.

    References
    ----------
    Paper eq. (22).

    Examples
    --------
    >>> symbolic_f_recursion(1)[1]
    W_y*beta^T - W_v*W_y*beta^T*S*B_1/L
    """
    depth = _check_symbolic_depth(depth)
    F = W_Y * BETA_T
    out = [F]
    for layer in range(1, depth + 1):
        F = sp.expand(F - W_V * F * S_MATRIX * qk_symbol(layer) / s.L)
        out.append(F)
    return tuple(out)


def symbolic_readout(depth: int) -> sp.Expr:
    """``ŷ_L = W_o (F_0 - F_L) q`` from eqs. (22)-(23), with ``W_o W_v^r W_y`` replaced by m_r.

    Expanding the recursion and collecting the scalars ``m_r = W_o W_v^r W_y``
    gives ``βᵀ 𝒫_L(S) q`` term by term (the content of eqs. 23-24).

    Parameters
    ----------
    depth : int
        Number of layers (1..8).

    Returns
    -------
    sympy.Expr
        An expanded sum of terms ``c m_r βᵀ S B_{ℓ_1} ⋯ S B_{ℓ_r} q``.

    References
    ----------
    Paper eqs. (22)-(24).

    Examples
    --------
    >>> sp.expand(symbolic_readout(2) - BETA_T * symbolic_covariance_polynomial(2) * QUERY)
    0
    """
    depth = _check_symbolic_depth(depth)
    F = symbolic_f_recursion(depth)
    readout = sp.expand(W_O * (F[0] - F[-1]) * QUERY)
    return sp.Add(*[_collect_readout_scalar(term) for term in sp.Add.make_args(readout)])


def _collect_readout_scalar(term: sp.Expr) -> sp.Expr:
    """Replace the leading ``W_o W_v^r W_y`` of one expanded term by the scalar m_r."""
    commuting, factors = term.args_cnc()
    order = 0
    if len(factors) >= 3 and factors[0] == W_O:
        rest = factors[1:]
        if rest[0] == W_V:
            order, rest = 1, rest[1:]
        elif isinstance(rest[0], sp.Pow) and rest[0].base == W_V:
            order, rest = int(rest[0].exp), rest[1:]
        if order >= 1 and rest and rest[0] == W_Y:
            return sp.Mul(*commuting) * readout_symbol(order) * sp.Mul(*rest[1:])
    raise ValueError(f"term must start with W_o W_v^r W_y (r >= 1); got {term}")


def _check_symbolic_depth(depth: object) -> int:
    depth = check_positive_int("depth", depth)
    if depth > 8:
        raise ValueError(f"depth must be <= 8 for the symbolic expansion (2^L terms); got {depth}")
    return depth
