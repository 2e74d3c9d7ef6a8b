"""Single-stream softmax attention, paper appendix C.1, eqs. (64)-(70).

One residual stream carries inputs and labels together (eq. 64):

    H^0 = W_x X + W_y y_in,
    Ĥ^{ℓ−1} = norm(H^{ℓ−1}),
    Q^ℓ = W_q^ℓ Ĥ^{ℓ−1},  K^ℓ = W_k^ℓ Ĥ^{ℓ−1},  V^ℓ = W_v Ĥ^{ℓ−1},
    A^ℓ = M(0) ⊙ softmax((Q^ℓ)ᵀ K^ℓ),   H^ℓ = H^{ℓ−1} + (1/L) V^ℓ (A^ℓ)ᵀ,
    ŷ_L = W_o h^L_test.

Which quantities are normed (the paper does not say): standard pre-norm -- queries,
keys *and values* are computed from ``norm(H^{ℓ−1})`` (LayerNorm over the ``N`` features
of each token, no gain/bias, eps 1e-5); the residual stream ``H`` itself is never normed
and the read-out uses the un-normed ``h^L_test`` (eq. 12). With ``M(0)`` the context
columns never change, so their normed states ``Ĥ_ctx = norm(W_x x_j + W_y y_j)`` are
computed once; only the test column evolves, and its normed state ``norm(h^{ℓ−1}_test)``
is the query of layer ``ℓ`` (the test token attends only to the context).

Per-layer predictors (eqs. 67-70): ``z_ℓ = W_o h^ℓ_test``, ``b_L = z_0 = W_o W_x x_test``,
``d_ℓ = z_ℓ − z_{ℓ−1}``, ``f_ℓ = b_L + L d_ℓ``; then ``(1/L) Σ_ℓ f_ℓ = z_L = ŷ_L`` exactly.

Fast engine: per layer ``O(N² + P N)`` per context (the query is contracted with
``C_ℓ = (W_q^ℓ)ᵀ W_k^ℓ`` before meeting the keys, the values are read as ``W_v (Ĥ_ctxᵀ p_ℓ)``).
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from ._common import (
    SHARED_INIT_DEFAULTS,
    ForwardResult,
    allowed_positions,
    attention_mask,
    check_batch,
    check_params,
    dense_inputs,
    init_shared,
    layer_norm,
    layer_norm_backward,
    masked_softmax,
    norm_columns,
    resolve_init_options,
    softmax,
    softmax_backward,
)
from ._common import param_shapes as _param_shapes

__all__ = ["INIT_DEFAULTS", "param_shapes", "init_params", "reference_forward", "forward", "loss_and_grad"]

NAME = "single_stream"

#: default initialisation options (see :func:`init_params`)
INIT_DEFAULTS = MappingProxyType(dict(SHARED_INIT_DEFAULTS))


def param_shapes(d: int, N: int, depth: int) -> dict:
    """Shapes of the parameters (same names as the two-stream model).

    References
    ----------
    Paper eqs. (64)-(66).

    Examples
    --------
    >>> param_shapes(2, 3, 4)["W_x"]
    (3, 2)
    """
    return _param_shapes(d, N, depth)


def init_params(d: int, N: int, depth: int, rng: np.random.Generator, *, dtype=np.float64, **init_options) -> dict:
    """Draw initial parameters (options as :func:`numerics.models.nonlinear.init_params`).

    References
    ----------
    Paper eqs. (64)-(66); initialisation is not stated in the paper.

    Examples
    --------
    >>> p = init_params(4, 8, 3, np.random.default_rng(0), qk_scale=0.5)
    >>> sorted(p)
    ['W_k', 'W_o', 'W_q', 'W_v', 'W_x', 'W_y']
    """
    options = resolve_init_options(INIT_DEFAULTS, init_options)
    return init_shared(d, N, depth, rng, dtype, options)


def reference_forward(params: dict, batch) -> np.ndarray:
    """Literal transcription of eqs. (64)-(66), (12) with the full (P+1)x(P+1) attention.

    Returns
    -------
    ndarray, shape (B,)

    References
    ----------
    Paper eqs. (7), (12), (64)-(66), (76).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(0)
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 2, rng)
    >>> p = init_params(4, 4, 3, rng)
    >>> np.allclose(reference_forward(p, batch), forward(p, batch).prediction)
    True
    """
    d, N, L, dtype = check_params(params, model=NAME)
    context_x, context_y, test_x, _ = check_batch(batch, d, dtype)
    P = context_y.shape[1]
    W_x, W_y, W_q, W_k, W_v, W_o = (params[k] for k in ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o"))
    X, y_in = dense_inputs(context_x, context_y, test_x)  # eq. (7)
    H = W_x @ X + W_y @ y_in  # eq. (64)
    M = attention_mask(P, 0.0, dtype)  # M(0)
    allowed = allowed_positions(P, context_block=False)
    for ell in range(L):
        H_hat = norm_columns(H)  # pre-norm of the evolving stream
        Q = W_q[ell] @ H_hat
        K = W_k[ell] @ H_hat
        V = W_v @ H_hat
        A = M * masked_softmax(np.swapaxes(Q, -1, -2) @ K, allowed)
        H = H + (V @ np.swapaxes(A, -1, -2)) / L  # residual stream, un-normed
    return (W_o @ H[:, :, -1:])[:, 0, 0]


def _forward(params, batch):
    d, N, L, dtype = check_params(params, model=NAME)
    context_x, context_y, test_x, target = check_batch(batch, d, dtype)
    W_x, W_y, W_q, W_k, W_v, W_o = (params[k] for k in ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o"))
    H_ctx = context_x @ W_x.T + context_y[:, :, None] * W_y[:, 0]  # frozen context columns of H^0
    H_ctx_hat, r_ctx = layer_norm(H_ctx)  # (B, P, N)
    C = np.swapaxes(W_q, -1, -2) @ W_k  # (W_q^ℓ)ᵀ W_k^ℓ
    B, P = context_y.shape
    h = test_x @ W_x.T  # h^0_test (y_in is 0 at the test token)
    states = np.empty((L + 1, B, N), dtype=dtype)  # h^0 .. h^L
    hats = np.empty((L, B, N), dtype=dtype)
    inv_stds = np.empty((L, B, 1), dtype=dtype)
    queries = np.empty((L, B, N), dtype=dtype)  # ĥ_testᵀ C_ℓ
    probs = np.empty((L, B, P), dtype=dtype)
    reads = np.empty((L, B, N), dtype=dtype)  # Ĥ_ctxᵀ p_ℓ
    states[0] = h
    for ell in range(L):
        hats[ell], inv_stds[ell] = layer_norm(h)
        queries[ell] = hats[ell] @ C[ell]
        logits = (H_ctx_hat @ queries[ell][:, :, None])[..., 0]
        probs[ell] = softmax(logits)
        reads[ell] = (probs[ell][:, None, :] @ H_ctx_hat)[:, 0]
        h = h + (reads[ell] @ W_v.T) / L
        states[ell + 1] = h
    readouts = states @ W_o[0]  # z_ℓ = W_o h^ℓ_test, (L+1, B)
    cache = dict(
        H_ctx_hat=H_ctx_hat, r_ctx=r_ctx, C=C, states=states, hats=hats, inv_stds=inv_stds,
        queries=queries, probs=probs, reads=reads, arrays=(context_x, context_y, test_x, target),
    )
    return readouts, cache


def forward(params: dict, batch) -> ForwardResult:
    """Fast forward pass; ``layer_predictors`` are ``f_ℓ = b_L + L d_ℓ`` (eqs. 67-70).

    Returns
    -------
    ForwardResult
        ``attention`` is the test token's softmax row ``p_ℓ`` (L, B, P); ``context_attention`` None.

    References
    ----------
    Paper eqs. (64)-(70).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(1)
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 3, rng)
    >>> out = forward(init_params(4, 8, 5, rng), batch)
    >>> np.allclose(out.layer_predictors.mean(0), out.prediction)
    True
    """
    readouts, cache = _forward(params, batch)
    L = readouts.shape[0] - 1
    layer_predictors = readouts[0] + L * np.diff(readouts, axis=0)  # b_L + L d_ℓ, eqs. (67)-(70)
    return ForwardResult(
        prediction=readouts[-1].copy(),
        layer_predictors=layer_predictors,
        attention=cache["probs"],
        context_attention=None,
    )


def loss_and_grad(params: dict, batch) -> tuple[float, dict]:
    """Mean squared error of :func:`forward` and its exact gradient (hand-written reverse pass).

    Returns
    -------
    loss : float
    grads : dict
        Same keys and shapes as ``params``.

    References
    ----------
    Paper eqs. (12), (64)-(66).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(2)
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 3, rng)
    >>> loss, grads = loss_and_grad(init_params(4, 8, 2, rng), batch)
    >>> grads["W_x"].shape
    (8, 4)
    """
    readouts, cache = _forward(params, batch)
    context_x, context_y, test_x, target = cache["arrays"]
    W_x, W_y, W_q, W_k, W_v, W_o = (params[k] for k in ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o"))
    L, B, N = cache["hats"].shape
    P = context_y.shape[1]
    H_ctx_hat, C = cache["H_ctx_hat"], cache["C"]
    residual = readouts[-1] - target
    loss = float(np.mean(residual * residual))
    grad_h = (2.0 / B) * residual[:, None] * W_o[0]  # dℒ/dh^L_test, (B, N)
    grad_W_o = ((2.0 / B) * residual) @ cache["states"][-1]
    grad_W_v = np.zeros_like(W_v)
    grad_C = np.zeros_like(C)
    # Ĥ_ctx receives rank-one terms p_ℓ ⊗ dr_ℓ and dlogits_ℓ ⊗ query_ℓ from every layer:
    # collected here and summed by one batched matmul after the loop
    row_factors = np.empty((B, 2 * L, P), dtype=W_x.dtype)
    column_factors = np.empty((B, 2 * L, N), dtype=W_x.dtype)
    for ell in range(L - 1, -1, -1):
        probs, reads, query, h_hat = cache["probs"][ell], cache["reads"][ell], cache["queries"][ell], cache["hats"][ell]
        # h^ℓ = h^{ℓ-1} + (1/L) W_v r_ℓ,  r_ℓ = Ĥ_ctxᵀ p_ℓ
        grad_W_v += grad_h.T @ reads / L
        grad_reads = grad_h @ W_v / L  # (B, N)
        grad_probs = (H_ctx_hat @ grad_reads[:, :, None])[..., 0]
        grad_logits = softmax_backward(probs, grad_probs)  # (B, P)
        # logits_j = ĥ_jᵀ (C_ℓᵀ ĥ_test) = (ĥ_testᵀ C_ℓ) ĥ_j
        row_factors[:, 2 * ell], column_factors[:, 2 * ell] = probs, grad_reads
        row_factors[:, 2 * ell + 1], column_factors[:, 2 * ell + 1] = grad_logits, query
        grad_query = (grad_logits[:, None, :] @ H_ctx_hat)[:, 0]  # (B, N)
        grad_C[ell] = h_hat.T @ grad_query
        grad_h_hat = grad_query @ C[ell].T
        grad_h = grad_h + layer_norm_backward(h_hat, cache["inv_stds"][ell], grad_h_hat)
    grad_H_ctx_hat = np.swapaxes(row_factors, 1, 2) @ column_factors  # (B, P, N)
    # h^0_test = W_x x_test;  H_ctx = W_x x_j + W_y y_j
    grad_H_ctx = layer_norm_backward(H_ctx_hat, cache["r_ctx"], grad_H_ctx_hat)
    d = W_x.shape[1]
    grad_W_x = grad_h.T @ test_x + grad_H_ctx.reshape(-1, N).T @ context_x.reshape(-1, d)
    grad_W_y = (grad_H_ctx.reshape(-1, N).T @ context_y.reshape(-1))[:, None]
    grads = {
        "W_x": grad_W_x,
        "W_y": grad_W_y,
        "W_q": W_k @ np.swapaxes(grad_C, -1, -2),
        "W_k": W_q @ grad_C,
        "W_v": grad_W_v,
        "W_o": grad_W_o[None, :],
    }
    dtype = W_x.dtype
    return loss, {key: np.require(value, dtype=dtype, requirements="C") for key, value in grads.items()}
