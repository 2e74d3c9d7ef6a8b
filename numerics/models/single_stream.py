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
from typing import NamedTuple

import numpy as np

from . import reference
from ._common import SHARED_INIT_DEFAULTS, BatchArrays, ForwardResult, check_batch, check_params, floats_per_context
from ._common import init_shared, layer_norm, layer_norm_backward, resolve_init_options, softmax_, softmax_backward
from ._common import param_shapes as _param_shapes
from .cost import StepCost

__all__ = ["INIT_DEFAULTS", "TRAIN_DEFAULTS", "param_shapes", "floats_per_context", "init_params", "reference_forward", "forward", "loss_and_grad"]

# facts (see the package docstring)
NAME = "single_stream"
ATTENTION = "softmax"
LABEL_LINEAR = False  # labels enter the queries, keys and (normed) values
VALUES = "tied"
MASK = "M(0)"
NORM = "layer"
PARAMETERS = ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o")
#: default initialisation options (see :func:`init_params`)
INIT_DEFAULTS = MappingProxyType(dict(SHARED_INIT_DEFAULTS))
#: Adam learning rate of :mod:`numerics.train` (measured there: 3e-3 beat 1e-3 and 3e-4); no init overrides
TRAIN_DEFAULTS = MappingProxyType({"learning_rate": 3e-3, "init": MappingProxyType({})})
#: CPU ms per Adam step, term by term (numerics.models.cost); fitted to benchmarks/bench_training.py
STEP_COST = StepCost(fixed=0.3, per_input=2.2e-5, per_layer=0.05, per_layer_size=3.0e-8, layer_size="BP2N",
                     per_gram=0.0)


def param_shapes(d: int, N: int, depth: int) -> dict:
    """Shapes of the parameters, named as in the two-stream models.

    Here ``W_x`` and ``W_y`` write into the same stream ``H^0`` (eq. 64), and ``W_v``
    reads its normed state.

    References
    ----------
    Paper eqs. (64)-(66).

    Examples
    --------
    >>> shapes = param_shapes(2, 3, 4)
    >>> shapes["W_x"], shapes["W_y"], shapes["W_v"]
    ((3, 2), (3, 1), (3, 3))
    """
    return _param_shapes(d, N, depth, values=VALUES, mask=MASK)


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
    return init_shared(d, N, depth, rng, dtype, options, values=VALUES)


class _Trace(NamedTuple):
    """The forward pass of the test column, kept for the reverse pass."""

    H_ctx_hat: np.ndarray  # normed frozen context columns, (B, P, N)
    r_ctx: np.ndarray  # their 1/std, (B, P, 1)
    C: np.ndarray  # C_ℓ = (W_q^ℓ)ᵀ W_k^ℓ, (L, N, N)
    states: np.ndarray  # h^0_test .. h^L_test, (L+1, B, N)
    hats: np.ndarray  # norm(h^{ℓ-1}_test), (L, B, N)
    inv_stds: np.ndarray  # their 1/std, (L, B, 1)
    queries: np.ndarray  # ĥ_testᵀ C_ℓ, (L, B, N)
    probs: np.ndarray  # p_ℓ, (L, B, P)
    reads: np.ndarray  # Ĥ_ctxᵀ p_ℓ, (L, B, N)
    arrays: BatchArrays


def _forward(params, batch) -> tuple[np.ndarray, _Trace]:
    d, N, L, dtype = check_params(params, model=NAME, values=VALUES, mask=MASK)
    arrays = check_batch(batch, d, dtype)
    context_x, context_y, test_x, _ = arrays
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
        probs[ell] = softmax_(logits)
        reads[ell] = (probs[ell][:, None, :] @ H_ctx_hat)[:, 0]
        h = h + (reads[ell] @ W_v.T) / L
        states[ell + 1] = h
    readouts = states @ W_o[0]  # z_ℓ = W_o h^ℓ_test, (L+1, B)
    return readouts, _Trace(H_ctx_hat, r_ctx, C, states, hats, inv_stds, queries, probs, reads, arrays)


#: the literal transcription of the paper's equations (slow, for checking :func:`forward`)
reference_forward = reference.single_stream


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
    readouts, trace = _forward(params, batch)
    L = readouts.shape[0] - 1
    layer_predictors = readouts[0] + L * np.diff(readouts, axis=0)  # b_L + L d_ℓ, eqs. (67)-(70)
    return ForwardResult(
        prediction=readouts[-1].copy(),
        layer_predictors=layer_predictors,
        attention=trace.probs,
        context_attention=None,
    )


def loss_and_grad(params: dict, batch) -> tuple[float, dict]:
    """Mean squared error of :func:`forward` (eq. 12) and its exact gradient, keyed like ``params``.

    A hand-written reverse pass down the test column; the frozen context columns
    collect their gradient from every layer and pass it to ``W_x`` and ``W_y`` through
    one norm (eq. 64).

    References
    ----------
    Paper eqs. (12), (64)-(66).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 3, np.random.default_rng(2))
    >>> params = init_params(4, 8, 2, np.random.default_rng(3))
    >>> loss, grads = loss_and_grad(params, batch)
    >>> bool(np.isclose(loss, np.mean((forward(params, batch).prediction - batch.target) ** 2)))
    True
    """
    readouts, trace = _forward(params, batch)
    context_x, context_y, test_x, target = trace.arrays
    W_x, W_y, W_q, W_k, W_v, W_o = (params[k] for k in ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o"))
    L, B, N = trace.hats.shape
    P = context_y.shape[1]
    H_ctx_hat, C = trace.H_ctx_hat, trace.C
    residual = readouts[-1] - target
    loss = float(np.mean(residual * residual))
    grad_h = (2.0 / B) * residual[:, None] * W_o[0]  # dℒ/dh^L_test, (B, N)
    grad_W_o = ((2.0 / B) * residual) @ trace.states[-1]
    grad_W_v = np.zeros_like(W_v)
    grad_C = np.zeros_like(C)
    # Ĥ_ctx receives rank-one terms p_ℓ ⊗ dr_ℓ and dlogits_ℓ ⊗ query_ℓ from every layer:
    # collected here and summed by one batched matmul after the loop
    row_factors = np.empty((B, 2 * L, P), dtype=W_x.dtype)
    column_factors = np.empty((B, 2 * L, N), dtype=W_x.dtype)
    for ell in range(L - 1, -1, -1):
        probs, reads, query, h_hat = trace.probs[ell], trace.reads[ell], trace.queries[ell], trace.hats[ell]
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
        grad_h = grad_h + layer_norm_backward(h_hat, trace.inv_stds[ell], grad_h_hat)
    grad_H_ctx_hat = np.swapaxes(row_factors, 1, 2) @ column_factors  # (B, P, N)
    # h^0_test = W_x x_test;  H_ctx = W_x x_j + W_y y_j
    grad_H_ctx = layer_norm_backward(H_ctx_hat, trace.r_ctx, grad_H_ctx_hat)
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
