"""Deep linear attention, paper eqs. (7)-(8), (11)-(12), (19)-(24), (75).

Two streams ``H_x = W_x X`` (fixed, *not* normed: eq. (11) states no norm) and
``H_y^0 = W_y y_in``. Layer ``ℓ``:

    Q^ℓ = W_q^ℓ H_x,  K^ℓ = W_k^ℓ H_x,  V^ℓ = W_v H_y^{ℓ−1},
    A^ℓ = (1/(P N)) M_linear ⊙ ((Q^ℓ)ᵀ K^ℓ),   H_y^ℓ = H_y^{ℓ−1} + (1/L) V^ℓ (A^ℓ)ᵀ,

with ``M_linear = [[−1_P 1_Pᵀ, 0], [1_Pᵀ, 0]]`` (eq. 75): context tokens update each
other with sign −1, the test token reads the context, nobody reads the test token.

Fast engine (exact for any weights and any finite ``P``). With ``U = [x_1..x_P]``,
``S = UUᵀ/P``, ``B_ℓ = (1/N) W_xᵀ (W_k^ℓ)ᵀ W_q^ℓ W_x`` (eq. 20), the context states obey
``Z_ℓ = F_ℓ U`` (eq. 22). The engine tracks the ``N x d`` matrix ``Y_ℓ = Z_ℓ Uᵀ/P``
(``= F_ℓ S``), which needs only the labels, not ``β``:

    Y_0 = W_y cᵀ,  c = U y/P,
    Y_ℓ = Y_{ℓ−1} − (1/L) W_v Y_{ℓ−1} B_ℓ S,
    h_ℓ = h_{ℓ−1} + (1/L) W_v Y_{ℓ−1} B_ℓ x_test,    ŷ_L = W_o h_L.

After forming ``S`` and ``c`` (``O(P d²)`` once), a layer costs nothing in ``P``.
Per-layer predictors use the ``b + L d_ℓ`` construction of eqs. (67)-(70):
``z_ℓ = W_o h_ℓ``, ``b = z_0 = 0``, ``f_ℓ = L (z_ℓ − z_{ℓ−1})``.

Krylov coordinates. Every ``Y_ℓ`` is ``Σ_{r ≤ ℓ} W_v^r W_y u_{ℓ,r}ᵀ`` (the recursion multiplies by
``W_v`` on the left once a layer), so ``Y_ℓ = Q C_ℓ`` with ``Q`` an orthonormal basis of the Krylov
space ``K_{L+1}(W_v, W_y)`` (Arnoldi, float64, ``R = min(L + 1, N)`` columns, fewer when the space
is invariant, e.g. ``W_v = I``) and ``H = Qᵀ W_v Q``:

    C_0 = |W_y| e_0 cᵀ,   C_ℓ = C_{ℓ−1} − (1/L) H C_{ℓ−1} B_ℓ S,   W_o W_v Y_{ℓ−1} r_ℓ = (W_o Q) H C_{ℓ−1} r_ℓ.

``C_{ℓ−1}`` has only ``min(ℓ, R)`` non-zero rows, so layer ``ℓ`` costs ``O(ℓ d (ℓ + d))`` a context
instead of the ``O(N d (N + d))`` of ``Y_ℓ`` itself. The change of basis is orthogonal, so the
recursion is as well conditioned as the ``Y`` recursion (no powers of ``S`` are expanded).
The adjoints ``dℒ/dY_ℓ`` lie in ``K_{L+1}(W_vᵀ, W_oᵀ)`` and are kept in its basis ``P̂`` the same way;
the gradients are the ``Y`` recursion's, written in the two bases (``W_v``'s is
``P̂ (Σ_ℓ Σ_b E_ℓ C_{ℓ−1}ᵀ) Qᵀ``). No derivative is taken through the bases. The forward keeps every
``C_ℓ`` for the reverse pass (``Σ_ℓ min(ℓ, R)`` rows of ``d`` numbers a context). The ``N x d``
recursion itself is kept as ``_dense_loss_and_grad``, the tests' independent check.

The prediction equals ``βᵀ 𝒫_L(S) x_test`` of eq. (24) with ``m_r = W_o W_v^r W_y``
whenever ``y = Uᵀβ`` (checked in the tests against ``theory.linear``).
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from . import reference
from ._common import SHARED_INIT_DEFAULTS, BatchArrays, ForwardResult, check_batch, check_params, floats_per_context
from ._common import init_shared, param_shapes as _param_shapes, resolve_init_options
from .cost import StepCost

__all__ = [
    "INIT_DEFAULTS", "TRAIN_DEFAULTS", "param_shapes", "floats_per_context", "stable_qk_scale", "init_params",
    "effective_qk", "reference_forward", "forward", "label_readout", "loss_and_grad",
]


def stable_qk_scale(d: int, N: int, c_lambda: float) -> float:
    """The training start ``κ = N/c_λ`` of ``qk_scale``: ``B_ℓ ≈ (κ/N) I = I/λ_1``.

    ``B_ℓ = (1/N) W_xᵀ W_kᵀ W_q W_x ≈ (qk_scale/N) I`` at initialisation (eq. 20); this
    starts at the stable one-step value ``γ = 1/λ_1`` of eq. (33), with ``λ_1 = c_λ``
    for the spectra of eq. (2). ``d`` is unused (all size-dependent defaults take
    ``(d, N, c_lambda)``).

    References
    ----------
    Paper eqs. (2), (20), (33).

    Examples
    --------
    >>> stable_qk_scale(8, 16, 2.0)
    8.0
    """
    return N / c_lambda


# facts (see the package docstring)
NAME = "linear"
ATTENTION = "linear"
LABEL_LINEAR = True  # ŷ = βᵀ 𝒫_L(S) x_test, eq. (24)
VALUES = "tied"
MASK = "M_linear"
NORM = None  # no norm (eq. 11)
PARAMETERS = ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o")
#: default initialisation options (see :func:`init_params`)
INIT_DEFAULTS = MappingProxyType(dict(SHARED_INIT_DEFAULTS))
#: Adam learning rate of :mod:`numerics.train` (measured there) and qk_scale = :func:`stable_qk_scale`
TRAIN_DEFAULTS = MappingProxyType({"learning_rate": 1e-2, "init": MappingProxyType({"qk_scale": stable_qk_scale})})
#: CPU ms per Adam step, term by term (numerics.models.cost); fitted to benchmarks/bench_linear.py over its
#: depths and L = 128 at its default sizes, and benchmarks/bench_sampler.py
STEP_COST = StepCost(fixed=0.3, per_input=3.6e-6, per_layer=0.05, per_layer_size=1.43e-7, layer_size="krylov",
                     per_gram=1.29e-8, per_layer_per_Bd=8.0e-5)


def param_shapes(d: int, N: int, depth: int) -> dict:
    """Shapes of the parameters: ``W_x (N,d)``, ``W_y (N,1)``, ``W_q, W_k (L,N,N)``, ``W_v (N,N)``, ``W_o (1,N)``.

    References
    ----------
    Paper eqs. (8), (11)-(12).

    Examples
    --------
    >>> param_shapes(2, 3, 4)["W_o"]
    (1, 3)
    """
    return _param_shapes(d, N, depth, values=VALUES, mask=MASK)


def init_params(d: int, N: int, depth: int, rng: np.random.Generator, *, dtype=np.float64, **init_options) -> dict:
    """Draw initial parameters (options as :func:`numerics.models.nonlinear.init_params`).

    With the defaults (orthonormal ``W_x``, ``W_q = W_k = sqrt(κ)(I + noise)``, ``W_v = I``)
    ``B_ℓ ≈ (κ/N) I`` and ``g = W_o W_v W_y = readout_gain``; the depth-``L`` model then
    starts near the repeated update ``r_L(λ) = (1 − γλ/L)^L`` with ``γ ≈ κ g/N`` (eq. 27).

    References
    ----------
    Paper eqs. (8), (11), (20), (27); initialisation is not stated in the paper.

    Examples
    --------
    >>> p = init_params(4, 8, 3, np.random.default_rng(0), qk_noise=0.0)
    >>> np.allclose(effective_qk(p), np.eye(4) / 8)
    True
    """
    options = resolve_init_options(INIT_DEFAULTS, init_options)
    return init_shared(d, N, depth, rng, dtype, options, values=VALUES)


def effective_qk(params: dict) -> np.ndarray:
    """``B_ℓ = (1/N) W_xᵀ (W_k^ℓ)ᵀ W_q^ℓ W_x`` for every layer, shape (L, d, d).

    References
    ----------
    Paper eq. (20).

    Examples
    --------
    >>> p = init_params(2, 3, 4, np.random.default_rng(0))
    >>> effective_qk(p).shape
    (4, 2, 2)
    """
    _, N, _, _ = check_params(params, model=NAME, values=VALUES, mask=MASK)
    return _effective_qk(params["W_x"], params["W_q"], params["W_k"], N)


def _effective_qk(W_x, W_q, W_k, N):
    return np.swapaxes(W_k @ W_x, -1, -2) @ (W_q @ W_x) / N


class _Prepared(NamedTuple):
    """What every layer of the ``Y`` recursion reads (computed once per batch)."""

    S: np.ndarray  # UUᵀ/P, (B, d, d), eq. (19)
    c: np.ndarray  # U y/P, (B, d)
    B_eff: np.ndarray  # B_ℓ, (L, d, d), eq. (20)
    r: np.ndarray  # r_ℓ = B_ℓ x_test, (B, L, d)
    arrays: BatchArrays


def _prepare(params, batch) -> _Prepared:
    d, N, L, dtype = check_params(params, model=NAME, values=VALUES, mask=MASK)
    arrays = check_batch(batch, d, dtype)
    context_x, context_y, test_x, _ = arrays
    P = context_y.shape[1]
    S = np.swapaxes(context_x, -1, -2) @ context_x / P  # (B, d, d), eq. (19)
    c = (context_y[:, None, :] @ context_x)[:, 0] / P  # U y / P, (B, d)
    B_eff = _effective_qk(params["W_x"], params["W_q"], params["W_k"], N)  # (L, d, d), eq. (20)
    r = np.swapaxes(test_x @ np.swapaxes(B_eff, -1, -2), 0, 1)  # r_ℓ = B_ℓ x_test, (B, L, d)
    return _Prepared(S, c, B_eff, r, arrays)


def _layer(Y, W_v, B_ell, S, r_ell, L):
    """One layer: returns (W_v Y_{ℓ-1}, read W_v Y_{ℓ-1} r_ℓ (B,N), Y_ℓ)."""
    WvY = W_v @ Y
    read = (WvY @ r_ell[:, :, None])[..., 0]
    return WvY, read, Y - (WvY @ B_ell) @ S / L


def _run(params, prep: _Prepared, start: int, stop: int, Y: np.ndarray, kept: list | None = None):
    """Layers ``start .. stop−1`` from ``Y = Y_start``: returns ``(Y_stop, [read_ℓ])``; appends each ``Y_{ℓ−1}`` to ``kept`` if given."""
    S, B_eff, r = prep.S, prep.B_eff, prep.r
    L = B_eff.shape[0]
    W_v = params["W_v"]
    reads = []
    for ell in range(start, stop):
        if kept is not None:
            kept.append(Y)
        _, read, Y = _layer(Y, W_v, B_eff[ell], S, r[:, ell], L)
        reads.append(read)
    return Y, reads


#: the literal transcription of the paper's equations (slow, for checking :func:`forward`)
reference_forward = reference.linear


# --------------------------------------------------------------------------- Krylov engine
class _Basis(NamedTuple):
    """An orthonormal basis ``Q`` (N, R) of a Krylov space of ``A`` from ``start`` and ``Qᵀ A Q``."""

    Q: np.ndarray  # (N, R), float64
    H: np.ndarray  # (R, R) = Qᵀ A Q, float64
    norm: float  # |start|; Q[:, 0] = start / |start|


def _krylov_basis(A: np.ndarray, start: np.ndarray, size: int) -> _Basis:
    """Arnoldi (Gram-Schmidt twice) for ``span{start, A start, .., A^(size−1) start}``, in float64.

    Stops early when the space is invariant (the next direction's norm is at round-off
    of ``|A|``): then ``A Q = Q H`` holds exactly and ``R < size``. Otherwise
    ``A Q[:, :R−1] = Q H[:, :R−1]`` (the Arnoldi relation), which is all the engine reads.
    """
    A = np.asarray(A, dtype=np.float64)
    v = np.asarray(start, dtype=np.float64).reshape(-1)
    n = v.shape[0]
    size = min(size, n)
    norm = float(np.linalg.norm(v))
    Q = np.zeros((n, size))
    if norm == 0.0 or size == 0:
        return _Basis(Q[:, :0], np.zeros((0, 0)), norm)
    tol = 64 * np.finfo(np.float64).eps * max(float(np.linalg.norm(A)), np.finfo(np.float64).tiny)
    Q[:, 0] = v / norm
    R = size
    for j in range(1, size):
        w = A @ Q[:, j - 1]
        for _ in range(2):  # twice is enough (Giraud et al. 2005)
            w -= Q[:, :j] @ (Q[:, :j].T @ w)
        w_norm = float(np.linalg.norm(w))
        if w_norm <= tol:
            R = j
            break
        Q[:, j] = w / w_norm
    Q = Q[:, :R]
    return _Basis(Q, Q.T @ (A @ Q), norm)


def _forward_basis(params: dict, L: int) -> _Basis:
    """``K_{L+1}(W_v, W_y)``: the label-state ``Y_ℓ = Σ_r W_v^r W_y u_{ℓ,r}ᵀ`` lies in its span."""
    return _krylov_basis(params["W_v"], params["W_y"][:, 0], L + 1)


def _adjoint_basis(params: dict, L: int) -> _Basis:
    """``K_{L+1}(W_vᵀ, W_oᵀ)``: the adjoints ``dℒ/dY_ℓ`` lie in its span."""
    return _krylov_basis(np.asarray(params["W_v"]).T, params["W_o"][0], L + 1)


def _krylov_forward(prep: _Prepared, basis: _Basis, W_o: np.ndarray, keep: bool = False):
    """The ``Y`` recursion in Krylov coordinates ``Y_ℓ = Q C_ℓ``.

    ``C_0 = |W_y| e_0 cᵀ``, ``C_ℓ = C_{ℓ−1} − (1/L) H C_{ℓ−1} B_ℓ S``, ``read_ℓ = Q H C_{ℓ−1} r_ℓ``;
    ``C_{ℓ−1}`` has only its first ``min(ℓ, R)`` rows non-zero, so layer ``ℓ`` costs
    ``O(ℓ d (ℓ + d))`` a context instead of ``O(N d (N + d))``.

    Returns ``(f (L, B), hc (B, R), kept)``: the layer predictors, ``Σ_ℓ H C_{ℓ−1} r_ℓ`` (so
    ``h_L = Q hc / L``) and, if ``keep``, the list of ``C_{ℓ−1}`` (B, min(ℓ, R), d).
    """
    S, c, B_eff, r = prep.S, prep.c, prep.B_eff, prep.r
    L, d = B_eff.shape[:2]
    batch = c.shape[0]
    dtype = c.dtype
    R = basis.Q.shape[1]
    H = basis.H.astype(dtype)
    o = (np.asarray(W_o, dtype=np.float64) @ basis.Q)[0].astype(dtype)  # W_o Q, (R,)
    f = np.zeros((L, batch), dtype=dtype)
    hc = np.zeros((batch, R), dtype=dtype)
    kept = [] if keep else None
    if R == 0:  # W_y = 0: every label state is zero
        return f, hc, ([np.zeros((batch, 0, d), dtype)] * L if keep else None)
    C = (basis.norm * c)[:, None, :].astype(dtype)  # C_0, (B, 1, d)
    for ell in range(L):
        m, m1 = C.shape[1], min(C.shape[1] + 1, R)
        if keep:
            kept.append(C)
        HC = H[:m1, :m] @ C  # Qᵀ W_v Y_{ℓ−1}, (B, m1, d)
        read = (HC @ r[:, ell, :, None])[..., 0]  # (B, m1)
        f[ell] = read @ o[:m1]
        hc[:, :m1] += read
        if ell < L - 1:  # Y_L is not read
            update = (HC.reshape(-1, d) @ B_eff[ell]).reshape(batch, m1, d) @ S
            update *= -1.0 / L
            update[:, :m] += C
            C = update
    return f, hc, kept


def _krylov_adjoint(prep: _Prepared, basis: _Basis, adjoint: _Basis, rho: np.ndarray, kept=None):
    """The reverse pass in the adjoint Krylov coordinates ``dℒ/dY_ℓ = P̂ D_ℓ``.

    ``rho`` (B,) is ``dℒ/dŷ``. With ``E_ℓ = (|W_o| e_0 ρ r_ℓᵀ − D_ℓ S B_ℓᵀ)/L`` (``dℒ/d(W_v Y_{ℓ−1}) = P̂ E_ℓ``),
    ``D_{ℓ−1} = D_ℓ + K E_ℓ`` with ``K = P̂ᵀ W_vᵀ P̂``, ``D_L = 0``. Returns ``D_0`` and, if
    ``kept`` (the forward's ``C_{ℓ−1}``) is given, ``(grad_B (L, d, d), Σ_ℓ Σ_b E_ℓ C_{ℓ−1}ᵀ (R', R))``.
    """
    S, B_eff, r = prep.S, prep.B_eff, prep.r
    test_x = prep.arrays.test_x
    L, d = B_eff.shape[:2]
    batch = rho.shape[0]
    dtype = S.dtype
    Rp = adjoint.Q.shape[1]
    K = adjoint.H.astype(dtype)
    D = np.zeros((batch, min(1, Rp), d), dtype=dtype)
    grads = kept is not None
    if grads:
        R = basis.Q.shape[1]
        H = basis.H.astype(dtype)
        M = (basis.Q.T @ adjoint.Q).astype(dtype)  # Qᵀ P̂, (R, R')
        grad_B = np.zeros_like(B_eff)
        inner = np.zeros((Rp, R), dtype=dtype)
    if Rp == 0:  # W_o = 0: every adjoint is zero
        return (D, grad_B, inner) if grads else D
    scaled_rho = ((adjoint.norm / L) * rho).astype(dtype)
    for ell in range(L - 1, -1, -1):
        n = D.shape[1]
        DS = D @ S  # (B, n, d)
        E = (DS.reshape(-1, d) @ B_eff[ell].T).reshape(batch, n, d)
        E *= -1.0 / L
        E[:, 0] += scaled_rho[:, None] * r[:, ell]
        if grads:
            C = kept[ell]
            m = C.shape[1]
            m1 = min(m + 1, R)
            HC = H[:m1, :m] @ C  # (B, m1, d)
            grad_r = (np.swapaxes(HC, -1, -2) @ (M[:m1, 0] * adjoint.norm))  # HCᵀ Qᵀ W_oᵀ, (B, d)
            grad_r *= (rho / L).astype(dtype)[:, None]
            X = M[:m1, :n] @ DS  # Qᵀ P̂ D_ℓ S, (B, m1, d)
            grad_B[ell] = grad_r.T @ test_x - (HC.reshape(-1, d).T @ X.reshape(-1, d)) / L
            inner[:n, :m] += np.tensordot(E, C, axes=([0, 2], [0, 2]))
        n1 = min(n + 1, Rp)
        step = K[:n1, :n] @ E
        step[:, :n] += D
        D = step
    return (D, grad_B, inner) if grads else D


def forward(params: dict, batch) -> ForwardResult:
    """Fast forward pass through ``Y_ℓ = Z_ℓ Uᵀ/P`` in Krylov coordinates (cost independent of ``P`` after ``S``).

    Returns
    -------
    ForwardResult
        ``layer_predictors`` ``f_ℓ = W_o W_v Y_{ℓ−1} B_ℓ x_test`` (``b + L d_ℓ`` with ``b = 0``),
        ``attention`` the signed test row ``(1/(P N)) q_testᵀ k_j = x_jᵀ B_ℓ x_test / P``
        (L, B, P), ``context_attention`` None.

    References
    ----------
    Paper eqs. (11)-(12), (19)-(23).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(1)
    >>> batch = sample("easy", PowerLawSpectrum(1, 1, 4), 6, 3, rng)
    >>> out = forward(init_params(4, 8, 5, rng), batch)
    >>> out.attention.shape, np.allclose(out.layer_predictors.mean(0), out.prediction)
    ((5, 3, 6), True)
    """
    prep = _prepare(params, batch)
    L = prep.B_eff.shape[0]
    f, _, _ = _krylov_forward(prep, _forward_basis(params, L), params["W_o"])
    context_x = prep.arrays.context_x
    P = context_x.shape[1]
    attention = np.swapaxes(context_x @ np.swapaxes(prep.r, -1, -2), -1, -2).transpose(1, 0, 2) / P  # (L, B, P)
    return ForwardResult(
        prediction=f.sum(axis=0) / L,
        layer_predictors=f,
        attention=np.ascontiguousarray(attention),
        context_attention=None,
    )


def label_readout(params: dict, batch) -> np.ndarray:
    """``(ŷ(β = e_1), .., ŷ(β = e_d))`` per context: the predictions for the unit-teacher labels ``y_i = x_{i,j}``.

    The prediction is linear in ``c = U y/P``: ``ŷ = cᵀ v`` with ``v = dŷ/dc``, one adjoint
    pass (no forward). The unit teachers have ``c = S e_j``, so the readout is ``S v``.
    :func:`numerics.diagnostics.error_vectors` uses it instead of ``d`` forward passes.

    Returns
    -------
    ndarray, shape (B, d), float64

    References
    ----------
    Paper eqs. (19)-(24): the readout is ``𝒫_L(S) x_test`` of eq. (24).

    Examples
    --------
    >>> import dataclasses
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(3)
    >>> batch = sample("easy", PowerLawSpectrum(1, 1, 4), 6, 3, rng)
    >>> params = init_params(4, 8, 3, rng)
    >>> unit = dataclasses.replace(batch, context_y=batch.context_x[:, :, 2].copy())
    >>> bool(np.allclose(label_readout(params, batch)[:, 2], forward(params, unit).prediction))
    True
    """
    prep = _prepare(params, batch)
    L = prep.B_eff.shape[0]
    adjoint = _adjoint_basis(params, L)
    ones = np.ones(prep.c.shape[0], dtype=prep.c.dtype)
    D0 = _krylov_adjoint(prep, None, adjoint, ones)
    w_y = adjoint.Q.T @ np.asarray(params["W_y"][:, 0], dtype=np.float64)  # P̂ᵀ W_y
    v = np.einsum("bnd,n->bd", np.asarray(D0, dtype=np.float64), w_y[: D0.shape[1]])  # dŷ/dc = G_0ᵀ W_y
    return (np.asarray(prep.S, dtype=np.float64) @ v[:, :, None])[..., 0]


def loss_and_grad(params: dict, batch) -> tuple[float, dict]:
    """Mean squared error of :func:`forward` (eq. 12) and its exact gradient, keyed like ``params``.

    A hand-written reverse pass through the ``Y`` recursion in Krylov coordinates (the
    label states in ``K(W_v, W_y)``, their adjoints in ``K(W_vᵀ, W_oᵀ)``), then through
    ``B_ℓ = (1/N) W_xᵀ (W_k^ℓ)ᵀ W_q^ℓ W_x`` to ``W_x, W_q, W_k``.

    References
    ----------
    Paper eqs. (11)-(12), (19)-(23).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(2)
    >>> batch = sample("easy", PowerLawSpectrum(1, 1, 4), 6, 3, rng)
    >>> loss, grads = loss_and_grad(init_params(4, 8, 2, rng), batch)
    >>> grads["W_x"].shape
    (8, 4)
    """
    prep = _prepare(params, batch)
    S, c, B_eff, r, (context_x, context_y, test_x, target) = prep
    W_x, W_y, W_q, W_k, W_v, W_o = (params[k] for k in ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o"))
    L = B_eff.shape[0]
    N = W_x.shape[0]
    B = target.shape[0]
    basis, adjoint = _forward_basis(params, L), _adjoint_basis(params, L)
    f, hc, kept = _krylov_forward(prep, basis, W_o, keep=True)
    residual = f.sum(axis=0) / L - target
    loss = float(np.mean(residual * residual))
    rho = (2.0 / B) * residual
    D0, grad_B, inner = _krylov_adjoint(prep, basis, adjoint, rho, kept)
    P_hat, Q = adjoint.Q, basis.Q
    grad_W_o = (Q @ (np.asarray(hc, dtype=np.float64).T @ rho) / L)[None, :]  # Σ_b ρ_b h_L
    grad_W_v = P_hat @ np.asarray(inner, dtype=np.float64) @ Q.T  # Σ_ℓ Σ_b dℒ/d(W_v Y_{ℓ−1}) Y_{ℓ−1}ᵀ
    grad_W_y = P_hat[:, : D0.shape[1]] @ np.tensordot(D0, c, axes=([0, 2], [0, 1]))[:, None]  # Y_0 = W_y cᵀ
    grads = {"W_y": grad_W_y, "W_v": grad_W_v, "W_o": grad_W_o}
    grads.update(_qk_grads(grad_B, W_x, W_q, W_k, N))
    dtype = W_x.dtype
    return loss, {key: np.require(grads[key], dtype=dtype, requirements="C") for key in PARAMETERS}


def _qk_grads(grad_B, W_x, W_q, W_k, N) -> dict:
    """Chain ``dℒ/dB_ℓ`` through ``B_ℓ = (1/N) (W_k W_x)ᵀ (W_q W_x)`` (eq. 20) to ``W_x, W_q, W_k``."""
    WkX, WqX = W_k @ W_x, W_q @ W_x  # (L, N, d)
    grad_WqX = WkX @ grad_B / N
    grad_WkX = WqX @ np.swapaxes(grad_B, -1, -2) / N
    return {
        "W_q": grad_WqX @ W_x.T,
        "W_k": grad_WkX @ W_x.T,
        "W_x": np.sum(np.swapaxes(W_q, -1, -2) @ grad_WqX + np.swapaxes(W_k, -1, -2) @ grad_WkX, axis=0),
    }


# --------------------------------------------------------------------------- the dense Y recursion (checks)
def _dense_loss_and_grad(params: dict, batch) -> tuple[float, dict]:
    """The same loss and gradient through the ``N x d`` states ``Y_ℓ`` themselves (``O(N d (N + d))`` a layer).

    The engine before the Krylov coordinates; kept as an independent exact check of
    :func:`loss_and_grad` (``tests/test_models.py``). ``≈ sqrt(L)`` checkpoints of ``Y_ℓ``.
    """
    prep = _prepare(params, batch)
    S, c, B_eff, r, (context_x, context_y, test_x, target) = prep
    Y0 = params["W_y"][:, 0][None, :, None] * c[:, None, :]  # W_y cᵀ, (B, N, d)
    W_x, W_y, W_q, W_k, W_v, W_o = (params[k] for k in ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o"))
    L, d = B_eff.shape[:2]
    N = W_x.shape[0]
    B = target.shape[0]
    # forward, keeping Y at checkpoints every `segment` layers
    segment = math.isqrt(L - 1) + 1  # ≈ sqrt(L) layers per checkpoint
    checkpoints = {}
    Y = Y0
    total_read = np.zeros((B, N), dtype=W_x.dtype)
    for start in range(0, L, segment):
        checkpoints[start] = Y
        Y, reads = _run(params, prep, start, min(start + segment, L), Y)
        total_read += sum(reads)
    h_final = total_read / L
    residual = h_final @ W_o[0] - target
    loss = float(np.mean(residual * residual))
    # reverse pass
    grad_h = (2.0 / B) * residual[:, None] * W_o[0]  # dℒ/dh_ℓ for every ℓ
    grad_W_o = (((2.0 / B) * residual) @ h_final)[None, :]
    grad_Y = np.zeros_like(Y0)  # dℒ/dY_ℓ; Y_L is not read
    grad_W_v = np.zeros_like(W_v)
    grad_B = np.zeros_like(B_eff)
    for start in sorted(checkpoints, reverse=True):
        stop = min(start + segment, L)
        kept: list = []
        _run(params, prep, start, stop, checkpoints[start], kept=kept)
        for ell in range(stop - 1, start - 1, -1):
            Y_prev = kept[ell - start]
            WvY = W_v @ Y_prev
            r_ell = r[:, ell]
            # read_ℓ = W_v Y r_ℓ (into h with 1/L);  Y_ℓ = Y_{ℓ-1} − (1/L) W_v Y_{ℓ-1} B_ℓ S
            grad_WvY = (grad_h[:, :, None] * r_ell[:, None, :] - grad_Y @ (S @ B_eff[ell].T)) / L
            grad_r = (np.swapaxes(WvY, -1, -2) @ grad_h[:, :, None])[..., 0] / L  # (B, d)
            grad_B[ell] = grad_r.T @ test_x - np.sum(np.swapaxes(WvY, -1, -2) @ grad_Y @ S, axis=0) / L
            grad_W_v += np.sum(grad_WvY @ np.swapaxes(Y_prev, -1, -2), axis=0)
            grad_Y = grad_Y + W_v.T @ grad_WvY
    grad_W_y = np.sum(grad_Y @ c[:, :, None], axis=0)  # Y_0 = W_y cᵀ, (N, 1)
    grads = {"W_y": grad_W_y, "W_v": grad_W_v, "W_o": grad_W_o, **_qk_grads(grad_B, W_x, W_q, W_k, N)}
    dtype = W_x.dtype
    return loss, {key: np.require(value, dtype=dtype, requirements="C") for key, value in grads.items()}
