"""Nonlinear attention with context updates, mask ``M(m)`` with a learned scalar ``m``,
paper appendix C.3, eqs. (77)-(87).

The two-stream model of :mod:`numerics.models.nonlinear` (fixed pre-normed input
stream ``Ĥ_x``, label stream ``H_y``, shared ``W_v``) with the mask (eq. 77)

    M(m) = [[m 1_P 1_Pᵀ, 0], [1_Pᵀ, 0]]      (rows = receiving token, last = test),

so the context label states now update each other with weight ``m`` (one scalar shared
by all layers). The softmax runs over the positions ``M(m)`` allows, which are the
same for every ``m``: a context row is normalised over the ``P`` context columns (the
test column is masked for context rows) and is then multiplied by ``m``; the test row
is normalised over the ``P`` context columns, as in ``M(0)``. With ``Z_ℓ`` the context
columns of ``H_y^ℓ``, ``h_ℓ`` its test column, ``A_ℓ`` the row-stochastic P x P context
softmax and ``p_ℓ`` the test row, one layer is

    Z_ℓ = Z_{ℓ−1} + (m/L) W_v Z_{ℓ−1} A_ℓᵀ,    h_ℓ = h_{ℓ−1} + (1/L) W_v Z_{ℓ−1} p_ℓᵀ,

with ``Z_0 = W_y yᵀ``, ``h_0 = 0``, ``ŷ_L = W_o h_L``. The paper's eq. (81),
``Z_ℓ = Z_{ℓ−1}(I_P + (m/L) A_ℓᵀ)``, ``h_ℓ = h_{ℓ−1} + (1/L) Z_{ℓ−1} p_ℓᵀ``, is this
recursion with ``W_v`` acting as the identity on the label direction (``W_v W_y = W_y``,
e.g. ``W_v = I``); the code keeps a general ``W_v``. At ``m = 0`` the model is the
nonlinear model exactly.

Per-layer predictors (same construction as the single stream, eqs. 67-70):
``z_ℓ = W_o h_ℓ``, ``b = z_0 = 0``, ``f_ℓ = b + L (z_ℓ − z_{ℓ−1}) = W_o W_v Z_{ℓ−1} p_ℓᵀ``;
their mean is ``ŷ_L`` exactly.

Fast engine: the test column is never read, so the (P+1)x(P+1) attention reduces to
its ``(P+1) x P`` block; the logits of all ``P+1`` queries are ``Ĥ (C_ℓ Ĥ_ctxᵀ)`` with
``C_ℓ = (W_q^ℓ)ᵀ W_k^ℓ``. The context block is inherently ``O(P² N)`` per layer. The
reverse pass stores ``Z_{ℓ}`` per layer (``O(L B P N)`` memory) and each layer's attention
while all of them fit in :data:`KEEP_ATTENTION_ENTRIES` entries (recomputing it otherwise);
batches are processed in chunks of contexts so that one attention array has at most
:data:`MAX_ATTENTION_ENTRIES` entries.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from . import _common, reference
from ._common import SHARED_INIT_DEFAULTS, BatchArrays, ForwardResult, check_batch, check_params, init_shared
from ._common import layer_norm, layer_norm_backward, resolve_init_options
from ._common import param_shapes as _param_shapes
from .cost import StepCost

__all__ = ["INIT_DEFAULTS", "TRAIN_DEFAULTS", "param_shapes", "floats_per_context", "init_params", "reference_forward", "forward", "loss_and_grad"]

# facts (see the package docstring)
NAME = "context_updates"
ATTENTION = "softmax"
LABEL_LINEAR = True  # the attention reads only the input stream; labels mix linearly through M(m)
VALUES = "tied"
MASK = "M(m)"
NORM = "layer"
PARAMETERS = ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o", "m")
#: default initialisation options (see :func:`init_params`); ``m_init = 0`` starts at the nonlinear model
INIT_DEFAULTS = MappingProxyType({**SHARED_INIT_DEFAULTS, "m_init": 0.0})
#: as the nonlinear model (measured in :mod:`numerics.train`)
TRAIN_DEFAULTS = MappingProxyType({"learning_rate": 1e-3, "init": MappingProxyType({})})
#: CPU ms per Adam step, term by term (numerics.models.cost); fitted to benchmarks/bench_training.py
STEP_COST = StepCost(fixed=0.3, per_input=2.2e-5, per_layer=0.20, per_layer_size=4.4e-7, layer_size="BP2N",
                     per_gram=0.0)


def floats_per_context(P: int, N: int, depth: int) -> int:
    """Numbers one context holds in a forward pass: those of the nonlinear model plus the
    ``P x P`` context-to-context attention of one layer (eq. 81).

    References
    ----------
    Paper eqs. (77), (81).

    Examples
    --------
    >>> floats_per_context(128, 32, 4)
    20992
    """
    return _common.floats_per_context(P, N, depth) + P * P


def param_shapes(d: int, N: int, depth: int) -> dict:
    """Shapes of the parameters: those of the nonlinear model plus the scalar ``m`` (shape ``()``).

    References
    ----------
    Paper eq. (77).

    Examples
    --------
    >>> param_shapes(2, 3, 4)["m"]
    ()
    """
    return _param_shapes(d, N, depth, values=VALUES, mask=MASK)


def init_params(d: int, N: int, depth: int, rng: np.random.Generator, *, dtype=np.float64, **init_options) -> dict:
    """Draw initial parameters (options as :func:`numerics.models.nonlinear.init_params`, plus ``m_init``).

    ``m_init`` (default 0.0) is the initial context-update weight ``m``; at 0 the model
    equals the nonlinear model with the same weights.

    References
    ----------
    Paper eq. (77); initialisation is not stated in the paper.

    Examples
    --------
    >>> p = init_params(4, 8, 3, np.random.default_rng(0), m_init=-1.0)
    >>> float(p["m"]), p["m"].shape
    (-1.0, ())
    """
    options = resolve_init_options(INIT_DEFAULTS, init_options)
    params = init_shared(d, N, depth, rng, dtype, options, values=VALUES)
    params["m"] = np.array(options["m_init"], dtype=params["W_x"].dtype)
    return params


def _attention(H_hat_all: np.ndarray, C_ell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Softmax rows of all P+1 queries over the P context keys; returns (probs (B,P+1,P), queries (B,P+1,N)).

    The logits are formed key-major, ``(B, P, P+1)``, and normalised over their middle axis: a
    reduction across rows runs vectorised (the max of 32 x 33 x 32 float32 logits: 28 µs against
    46 µs over a short last axis). ``probs`` is the transposed view of that array.
    """
    queries = H_hat_all @ C_ell  # ĥ_iᵀ C_ℓ
    logits = H_hat_all[:, :-1] @ np.swapaxes(queries, -1, -2)  # (B, P keys, P+1 queries)
    logits -= np.fmax.reduce(logits, axis=-2, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(axis=-2, keepdims=True)
    return np.swapaxes(logits, -1, -2), queries


#: at most this many entries in one (contexts x (P+1) x P) attention array; larger batches
#: are processed in chunks of contexts (the context block is O(B P²) memory per layer)
MAX_ATTENTION_ENTRIES = 1 << 22
#: the reverse pass keeps every layer's attention when all layers together hold at most this many
#: entries (128 MiB in float32), and recomputes it layer by layer otherwise
KEEP_ATTENTION_ENTRIES = 1 << 25


def _chunks(params, batch) -> tuple[list[BatchArrays], int]:
    """Validated arrays of ``batch`` split into chunks of contexts bounded by :data:`MAX_ATTENTION_ENTRIES`."""
    d, N, L, dtype = check_params(params, model=NAME, values=VALUES, mask=MASK)
    arrays = check_batch(batch, d, dtype)
    B, P = arrays.context_y.shape
    size = max(1, MAX_ATTENTION_ENTRIES // ((P + 1) * P))
    return [BatchArrays(*(a[start : start + size] for a in arrays)) for start in range(0, B, size)], B


class _Pass(NamedTuple):
    """One forward pass over a chunk of contexts, with what the reverse pass needs."""

    prediction: np.ndarray  # (B,)
    layer_reads: np.ndarray  # W_v Z_{ℓ-1} p_ℓᵀ, (L, B, N)
    probs_test: np.ndarray  # p_ℓ, (L, B, P)
    context_attention: np.ndarray  # A_1, (B, P, P)
    H_hat_all: np.ndarray  # Ĥ_x as token rows, (B, P+1, N)
    inv_std: np.ndarray  # its 1/std, (B, P+1, 1)
    C: np.ndarray  # C_ℓ = (W_q^ℓ)ᵀ W_k^ℓ, (L, N, N)
    tokens: np.ndarray  # [x_1..x_P, x_test] as rows, (B, P+1, d)


def _forward(params, arrays: BatchArrays, states: np.ndarray | None = None, kept: list | None = None) -> _Pass:
    """Forward pass; if ``states`` (L, B, P, N) is given, ``Z_{ℓ−1}`` of every layer is written into it,
    if ``kept`` is a list, each layer's ``(probs, queries)`` is appended to it."""
    context_x, context_y, test_x, target = arrays
    W_x, W_y, W_q, W_k, W_v, W_o = (params[k] for k in ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o"))
    m = params["m"]
    dtype = W_x.dtype
    N, L = W_x.shape[0], W_q.shape[0]
    B, P = context_y.shape
    tokens = np.concatenate([context_x, test_x[:, None, :]], axis=1)  # (B, P+1, d)
    H_hat_all, inv_std = layer_norm(tokens @ W_x.T)  # Ĥ_x, token rows, (B, P+1, N)
    C = np.swapaxes(W_q, -1, -2) @ W_k
    Z = context_y[:, :, None] * W_y[:, 0]  # Z_0ᵀ as token rows, (B, P, N)
    probs_test = np.empty((L, B, P), dtype=dtype)
    layer_reads = np.empty((L, B, N), dtype=dtype)  # W_v Z_{ℓ-1} p_ℓᵀ
    context_attention = None
    for ell in range(L):
        if states is not None:
            states[ell] = Z
        probs, queries = _attention(H_hat_all, C[ell])
        if kept is not None:
            kept.append((probs, queries))
        if ell == 0:
            context_attention = probs[:, :-1].copy()
        values = Z @ W_v.T  # V rows, (B, P, N)
        probs_test[ell] = probs[:, -1]
        out = probs @ values  # rows :-1 the context update A_ℓ V, row -1 the read p_ℓ V
        layer_reads[ell] = out[:, -1]
        mixed = out[:, :-1]
        mixed *= m / L
        mixed += Z
        Z = mixed  # Z_ℓ = Z_{ℓ-1} + (m/L) A_ℓ V, eq. (81) with W_v
    prediction = layer_reads.sum(axis=0) @ W_o[0] / L  # ŷ = W_o h_L, h_L = (1/L) Σ_ℓ W_v Z_{ℓ-1} p_ℓᵀ
    return _Pass(prediction, layer_reads, probs_test, context_attention, H_hat_all, inv_std, C, tokens)


#: the literal transcription of the paper's equations (slow, for checking :func:`forward`)
reference_forward = reference.context_updates


def forward(params: dict, batch) -> ForwardResult:
    """Fast forward pass of the ``M(m)`` model.

    Returns
    -------
    ForwardResult
        ``layer_predictors`` ``f_ℓ = W_o W_v Z_{ℓ−1} p_ℓᵀ`` (the ``b + L d_ℓ`` construction,
        ``b = 0``), ``attention`` the test rows ``p_ℓ`` (L, B, P), ``context_attention``
        layer 1's row-stochastic P x P context softmax ``A_1`` (before the factor ``m``).

    References
    ----------
    Paper eqs. (77), (81), (83).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(1)
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 3, rng)
    >>> out = forward(init_params(4, 8, 2, rng, m_init=-1.0), batch)
    >>> out.context_attention.shape, np.allclose(out.context_attention.sum(-1), 1.0)
    ((3, 6, 6), True)
    """
    chunks, _ = _chunks(params, batch)
    parts = [_forward(params, arrays) for arrays in chunks]
    return ForwardResult(
        prediction=np.concatenate([part.prediction for part in parts]),
        layer_predictors=np.concatenate([part.layer_reads for part in parts], axis=1) @ params["W_o"][0],
        attention=np.concatenate([part.probs_test for part in parts], axis=1),
        context_attention=np.concatenate([part.context_attention for part in parts]),
    )


def loss_and_grad(params: dict, batch) -> tuple[float, dict]:
    """Mean squared error of :func:`forward` (eq. 12) and its exact gradient, keyed like ``params`` (``grads["m"]`` of shape ``()``).

    The reverse pass stores ``Z_ℓ`` per layer and recomputes each layer's attention;
    chunks of contexts (see the module docstring) combine with weights ``B_chunk/B``.

    References
    ----------
    Paper eqs. (12), (77), (81).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(2)
    >>> params = init_params(4, 8, 2, rng, m_init=-1.0)
    >>> _, grads = loss_and_grad(params, sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 3, rng))
    >>> grads["m"].shape, grads["m"].dtype
    ((), dtype('float64'))
    """
    chunks, B_total = _chunks(params, batch)
    loss, grads = 0.0, None
    for arrays in chunks:  # the loss is a mean over contexts: chunks combine with weights B_c/B
        weight = arrays.context_y.shape[0] / B_total
        chunk_loss, chunk_grads = _loss_and_grad(params, arrays)
        loss += weight * chunk_loss
        if grads is None:
            grads = {key: weight * value for key, value in chunk_grads.items()}
        else:
            for key, value in chunk_grads.items():
                grads[key] += weight * value
    dtype = params["W_x"].dtype
    return loss, {key: np.require(value, dtype=dtype, requirements="C") for key, value in grads.items()}


def _loss_and_grad(params, arrays: BatchArrays) -> tuple[float, dict]:
    context_x, context_y, test_x, target = arrays
    W_x, W_y, W_q, W_k, W_v, W_o = (params[k] for k in ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o"))
    m = params["m"]
    (B, P), N, L = context_y.shape, W_x.shape[0], W_q.shape[0]
    states = np.empty((L, B, P, N), dtype=W_x.dtype)  # Z_{ℓ-1} of every layer
    kept = [] if L * B * (P + 1) * P <= KEEP_ATTENTION_ENTRIES else None
    run = _forward(params, arrays, states, kept)
    prediction, layer_reads, H_hat_all, C = run.prediction, run.layer_reads, run.H_hat_all, run.C
    residual = prediction - target
    loss = float(np.mean(residual * residual))
    grad_h = (2.0 / B) * residual[:, None] * W_o[0]  # dℒ/dh_ℓ for every ℓ (h_L = h_ℓ + later terms)
    grad_W_o = (((2.0 / B) * residual) @ layer_reads.sum(axis=0) / L)[None, :]
    grad_Z = np.zeros((B, P, N), dtype=W_x.dtype)  # dℒ/dZ_ℓ (token rows); Z_L is not read
    grad_W_v = np.zeros_like(W_v)
    grad_C = np.zeros_like(C)
    grad_H_hat_all = np.zeros_like(H_hat_all)
    grad_m = 0.0
    H_ctx = H_hat_all[:, :-1]
    G = np.empty((B, P + 1, N), dtype=W_x.dtype)  # dℒ/d(probs @ V): rows :-1 (m/L) dℒ/dZ_ℓ, row -1 dℒ/dh /L
    for ell in range(L - 1, -1, -1):
        Z = states[ell]  # Z_{ℓ-1}
        probs, queries = kept[ell] if kept is not None else _attention(H_hat_all, C[ell])
        values = Z @ W_v.T
        # h_ℓ += (1/L) p_ℓ V ;  Z_ℓ = Z_{ℓ-1} + (m/L) A_ℓ V
        grad_m += float(np.vdot(grad_Z, probs[:, :-1] @ values)) / L
        np.multiply(grad_Z, m / L, out=G[:, :-1])
        np.divide(grad_h, L, out=G[:, -1])
        probs_t = np.swapaxes(probs, -1, -2)  # key-major, contiguous (see _attention)
        grad_values = probs_t @ G  # (B, P, N)
        grad_probs_t = values @ np.swapaxes(G, -1, -2)  # (B, P, P+1)
        grad_probs_t -= np.sum(probs_t * grad_probs_t, axis=-2, keepdims=True)
        grad_probs_t *= probs_t
        grad_logits = np.swapaxes(grad_probs_t, -1, -2)  # softmax backward, (B, P+1, P) view
        # logits_ij = (ĥ_iᵀ C_ℓ) ĥ_j, i over all P+1 tokens, j over the P context tokens
        T = grad_logits @ H_ctx  # (B, P+1, N)
        grad_H_hat_all += (T.reshape(-1, N) @ C[ell].T).reshape(B, P + 1, N)
        grad_H_hat_all[:, :-1] += np.swapaxes(grad_logits, -1, -2) @ queries
        grad_C[ell] = H_hat_all.reshape(-1, N).T @ T.reshape(-1, N)
        grad_W_v += grad_values.reshape(-1, N).T @ Z.reshape(-1, N)
        grad_Z = grad_Z + grad_values @ W_v
    grad_W_y = (grad_Z.reshape(-1, N).T @ context_y.reshape(-1))[:, None]  # Z_0 = W_y yᵀ
    grad_H = layer_norm_backward(H_hat_all, run.inv_std, grad_H_hat_all)
    d = W_x.shape[1]
    grad_W_x = grad_H.reshape(-1, N).T @ run.tokens.reshape(-1, d)
    grads = {
        "W_x": grad_W_x,
        "W_y": grad_W_y,
        "W_q": W_k @ np.swapaxes(grad_C, -1, -2),
        "W_k": W_q @ grad_C,
        "W_v": grad_W_v,
        "W_o": grad_W_o,
        "m": np.array(grad_m, dtype=W_x.dtype),
    }
    return loss, grads
