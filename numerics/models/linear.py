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

After forming ``S`` and ``c`` (``O(P d²)`` once), a layer costs ``O(N d (N + d))``,
independent of ``P``. Per-layer predictors use the ``b + L d_ℓ`` construction of
eqs. (67)-(70): ``z_ℓ = W_o h_ℓ``, ``b = z_0 = 0``, ``f_ℓ = L (z_ℓ − z_{ℓ−1})``.
The reverse pass stores ``Y_ℓ`` only at ``≈ sqrt(L)`` checkpoints and recomputes the
layers in between (memory ``O(sqrt(L) B N d)``, one extra forward).

The prediction equals ``βᵀ 𝒫_L(S) x_test`` of eq. (24) with ``m_r = W_o W_v^r W_y``
whenever ``y = Uᵀβ`` (checked in the tests against ``theory.linear``).
"""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np

from ._common import (
    SHARED_INIT_DEFAULTS,
    ForwardResult,
    attention_mask,
    check_batch,
    check_params,
    dense_inputs,
    init_shared,
    resolve_init_options,
)
from ._common import param_shapes as _param_shapes

__all__ = ["INIT_DEFAULTS", "param_shapes", "init_params", "effective_qk", "reference_forward", "forward", "loss_and_grad"]

NAME = "linear"

#: default initialisation options (see :func:`init_params`)
INIT_DEFAULTS = MappingProxyType(dict(SHARED_INIT_DEFAULTS))


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
    return _param_shapes(d, N, depth)


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
    return init_shared(d, N, depth, rng, dtype, options)


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
    _, N, _, _ = check_params(params, model=NAME)
    return _effective_qk(params["W_x"], params["W_q"], params["W_k"], N)


def _effective_qk(W_x, W_q, W_k, N):
    return np.swapaxes(W_k @ W_x, -1, -2) @ (W_q @ W_x) / N


def reference_forward(params: dict, batch) -> np.ndarray:
    """Literal transcription of eqs. (7)-(8), (11)-(12) with the full (P+1)x(P+1) attention and ``M_linear``.

    Returns
    -------
    ndarray, shape (B,)

    References
    ----------
    Paper eqs. (7)-(8), (11)-(12), (75).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(0)
    >>> batch = sample("easy", PowerLawSpectrum(1, 1, 4), 6, 2, rng)
    >>> p = init_params(4, 4, 3, rng, qk_scale=8.0)
    >>> np.allclose(reference_forward(p, batch), forward(p, batch).prediction)
    True
    """
    d, N, L, dtype = check_params(params, model=NAME)
    context_x, context_y, test_x, _ = check_batch(batch, d, dtype)
    P = context_y.shape[1]
    W_x, W_y, W_q, W_k, W_v, W_o = (params[k] for k in ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o"))
    X, y_in = dense_inputs(context_x, context_y, test_x)  # eq. (7)
    H_x = W_x @ X  # eq. (8), fixed, no norm
    H_y = W_y @ y_in
    M = attention_mask(P, -1.0, dtype)  # M_linear, eq. (75)
    for ell in range(L):
        Q = W_q[ell] @ H_x
        K = W_k[ell] @ H_x
        V = W_v @ H_y
        A = M * (np.swapaxes(Q, -1, -2) @ K) / (P * N)  # eq. (11)
        H_y = H_y + (V @ np.swapaxes(A, -1, -2)) / L
    return (W_o @ H_y[:, :, -1:])[:, 0, 0]  # eq. (12)


def _prepare(params, batch):
    d, N, L, dtype = check_params(params, model=NAME)
    context_x, context_y, test_x, target = check_batch(batch, d, dtype)
    P = context_y.shape[1]
    S = np.swapaxes(context_x, -1, -2) @ context_x / P  # (B, d, d), eq. (19)
    c = (context_y[:, None, :] @ context_x)[:, 0] / P  # U y / P, (B, d)
    B_eff = _effective_qk(params["W_x"], params["W_q"], params["W_k"], N)  # (L, d, d), eq. (20)
    r = np.swapaxes(test_x @ np.swapaxes(B_eff, -1, -2), 0, 1)  # r_ℓ = B_ℓ x_test, (B, L, d)
    Y0 = params["W_y"][:, 0][None, :, None] * c[:, None, :]  # W_y cᵀ, (B, N, d)
    return S, c, B_eff, r, Y0, (context_x, context_y, test_x, target)


def _layer(Y, W_v, B_ell, S, r_ell, L):
    """One layer: returns (W_v Y_{ℓ-1}, read W_v Y_{ℓ-1} r_ℓ (B,N), Y_ℓ)."""
    WvY = W_v @ Y
    read = (WvY @ r_ell[:, :, None])[..., 0]
    return WvY, read, Y - (WvY @ B_ell) @ S / L


def _run(params, S, B_eff, r, Y0, start, stop, Y=None, keep=False):
    L = B_eff.shape[0]
    Y = Y0 if Y is None else Y
    W_v = params["W_v"]
    reads, kept = [], []
    for ell in range(start, stop):
        if keep:
            kept.append(Y)
        _, read, Y = _layer(Y, W_v, B_eff[ell], S, r[:, ell], L)
        reads.append(read)
    return Y, reads, kept


def forward(params: dict, batch) -> ForwardResult:
    """Fast forward pass through ``Y_ℓ = Z_ℓ Uᵀ/P`` (cost independent of ``P`` after ``S``).

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
    S, _, B_eff, r, Y0, arrays = _prepare(params, batch)
    L = B_eff.shape[0]
    _, reads, _ = _run(params, S, B_eff, r, Y0, 0, L)
    layer_predictors = np.stack(reads) @ params["W_o"][0]  # L d_ℓ = W_o W_v Y_{ℓ-1} r_ℓ, (L, B)
    context_x = arrays[0]
    P = context_x.shape[1]
    attention = np.swapaxes(context_x @ np.swapaxes(r, -1, -2), -1, -2).transpose(1, 0, 2) / P  # (L, B, P)
    return ForwardResult(
        prediction=layer_predictors.sum(axis=0) / L,
        layer_predictors=layer_predictors,
        attention=np.ascontiguousarray(attention),
        context_attention=None,
    )


def loss_and_grad(params: dict, batch) -> tuple[float, dict]:
    """Mean squared error of :func:`forward` and its exact gradient (hand-written reverse pass).

    Reverse pass through the ``Y`` recursion with ``≈ sqrt(L)`` checkpoints, then
    through ``B_ℓ = (1/N) W_xᵀ (W_k^ℓ)ᵀ W_q^ℓ W_x`` to ``W_x, W_q, W_k``.

    Returns
    -------
    loss : float
    grads : dict
        Same keys and shapes as ``params``.

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
    S, c, B_eff, r, Y0, arrays = _prepare(params, batch)
    context_x, context_y, test_x, target = arrays
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
        Y, reads, _ = _run(params, S, B_eff, r, Y0, start, min(start + segment, L), Y=Y)
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
        _, _, kept = _run(params, S, B_eff, r, Y0, start, stop, Y=checkpoints[start], keep=True)
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
    # B_ℓ = (1/N) (W_k W_x)ᵀ (W_q W_x)
    WkX, WqX = W_k @ W_x, W_q @ W_x  # (L, N, d)
    grad_WqX = WkX @ grad_B / N
    grad_WkX = WqX @ np.swapaxes(grad_B, -1, -2) / N
    grad_W_q = grad_WqX @ W_x.T
    grad_W_k = grad_WkX @ W_x.T
    grad_W_x = np.sum(np.swapaxes(W_q, -1, -2) @ grad_WqX + np.swapaxes(W_k, -1, -2) @ grad_WkX, axis=0)
    grads = {"W_x": grad_W_x, "W_y": grad_W_y, "W_q": grad_W_q, "W_k": grad_W_k, "W_v": grad_W_v, "W_o": grad_W_o}
    dtype = W_x.dtype
    return loss, {key: np.require(value, dtype=dtype, requirements="C") for key, value in grads.items()}
