"""The controlled nonlinear (softmax) attention model, paper eqs. (7)-(10), (12), (59)-(60).

Two streams: the input stream ``H_x = W_x X`` is fixed across layers and pre-normed,
``Ĥ_x = norm(H_x)``; the label stream starts at ``H_y^0 = W_y y_in`` (eq. 8). Layer ``ℓ``:

    Q^ℓ = W_q^ℓ Ĥ_x,  K^ℓ = W_k^ℓ Ĥ_x,  V^ℓ = W_v H_y^{ℓ−1},
    A^ℓ = M(0) ⊙ softmax((Q^ℓ)ᵀ K^ℓ),   H_y^ℓ = H_y^{ℓ−1} + (1/L) V^ℓ (A^ℓ)ᵀ      (eqs. 9-10)

with the softmax only over the positions ``M(0)`` allows (eq. 76): the test token
reads the ``P`` context tokens, context tokens receive nothing (their states stay
frozen). The read-out is ``ŷ_L = W_o h^L_{y,test}`` (eq. 12); there is no ``1/sqrt(N)``
temperature (the paper writes ``softmax(QᵀK)``).

Fast engine (``forward``/``loss_and_grad``). Because the context states never change,
the model is exactly parallel (eqs. 59-60):

    ŷ_L = (1/L) Σ_ℓ f_ℓ,   f_ℓ = g p_ℓ·y,   g = W_o W_v W_y,

where ``p_ℓ`` is the test row of ``A^ℓ``. The pre-norm keeps every token in a
``d``-dimensional subspace of the ``N`` hidden dimensions: with ``A`` = ``W_x`` minus its
column means (LayerNorm's centring), ``ĥ_j = r_j A x_j``, ``r_j = 1/sqrt(|A x_j|²/N + eps)``,
so the logits are exactly

    ĥ_testᵀ (W_q^ℓ)ᵀ W_k^ℓ ĥ_j = (D_ℓᵀ z_test)·z_j,   z = r x,   D_ℓ = (W_q^ℓ A)ᵀ (W_k^ℓ A)  (d × d),

formed once per step: ``O(d² + P d)`` per layer and context instead of the dense
``O(P N² + P² N)``, and no ``(B, P, N)`` hidden state is formed. The softmax keeps its rows
unnormalised (``p_ℓ = e_ℓ / Σ_j e_ℓj``; the sum and the read ``e_ℓ·y`` come from one small
product with ``[1, y]``). ``loss_and_grad`` is a hand-written reverse pass through that
engine; :mod:`numerics.models.reference` is the literal transcription it is tested against.

Initialisation (:data:`INIT_DEFAULTS`): ``W_q^ℓ, W_k^ℓ = sqrt(κ)(I + 0.1 G/sqrt(N))``, κ = 1,
orthonormal ``W_x``, ``W_v = I``, ``g = 1``. After the norm the logits start at ≈ ``N cos(x_j, x_test)``,
so every layer starts as a soft nearest-neighbour read-out. An independent prototype
(d = N = 32, P = 128, top-2, Adam lr 1e-2) saw small Gaussian ``W_q, W_k`` learn nothing and
this identity initialisation reach 6.3. Measured with this code (same sizes, L = 4, B = 128,
Adam lr 1e-3, 1000 steps, flat spectra, target variance 18.07; eval on 2000 contexts):
identity κ = 1 starts at 6.85 and ends at 6.6; κ = 0.3: 9.1 → 6.6; κ = 3: 9.7 → 7.2;
Gaussian std 1/sqrt(N): 22.0 → 12.9; Gaussian std 0.3/sqrt(N): 17.9 → 7.9 (so at lr 1e-3 the
Gaussian inits do learn, more slowly). The trainer owns the final choice.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from . import reference
from ._common import (
    LAYER_NORM_EPS,
    SHARED_INIT_DEFAULTS,
    BatchArrays,
    ForwardResult,
    check_batch,
    check_params,
    floats_per_context,
    init_shared,
    resolve_init_options,
)
from ._common import param_shapes as _param_shapes
from .cost import StepCost

__all__ = ["INIT_DEFAULTS", "TRAIN_DEFAULTS", "floats_per_context", "forward", "init_params", "label_weights", "loss_and_grad",
           "param_shapes", "reference_forward"]

# facts (see the package docstring)
NAME = "nonlinear"
ATTENTION = "softmax"
LABEL_LINEAR = True  # the attention reads only the input stream
VALUES = "tied"
MASK = "M(0)"
NORM = "layer"  # the pre-norm (LayerNorm without gain or bias; the RMSNorm variant is ``nonlinear_rms``)
PARAMETERS = ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o")
#: default initialisation options (see :func:`init_params`)
INIT_DEFAULTS = MappingProxyType(dict(SHARED_INIT_DEFAULTS))
#: Adam learning rate of :mod:`numerics.train` (measured there: above 1e-3 is worse); no init overrides
TRAIN_DEFAULTS = MappingProxyType({"learning_rate": 1e-3, "init": MappingProxyType({})})
#: CPU ms per Adam step, term by term (numerics.models.cost); fitted to benchmarks/bench_peer.py at its
#: default sizes and benchmarks/bench_sampler.py
STEP_COST = StepCost(fixed=0.3, per_input=4.0e-6, per_layer=0.01, per_layer_size=2.5e-7, layer_size="BPd",
                     per_gram=5.5e-8)


def param_shapes(d: int, N: int, depth: int) -> dict:
    """Shapes of the parameters: ``W_x (N,d)``, ``W_y (N,1)``, ``W_q, W_k (L,N,N)``, ``W_v (N,N)``, ``W_o (1,N)``.

    References
    ----------
    Paper eqs. (8)-(12).

    Examples
    --------
    >>> param_shapes(2, 3, 4)["W_v"]
    (3, 3)
    """
    return _param_shapes(d, N, depth, values=VALUES, mask=MASK)


def init_params(d: int, N: int, depth: int, rng: np.random.Generator, *, dtype=np.float64, **init_options) -> dict:
    """Draw initial parameters.

    Parameters
    ----------
    d, N, depth : int
        Input dimension, hidden width (``N >= d``) and number of layers ``L``.
    rng : numpy.random.Generator
    dtype : {numpy.float64, numpy.float32}
    **init_options
        ``w_x``, ``qk_init``, ``qk_scale`` (κ: the logits start at ``≈ κ N cos(x_j, x_test)``
        after the norm), ``qk_noise``, ``value_init``, ``readout_gain``: see
        :mod:`numerics.models`; defaults in :data:`INIT_DEFAULTS`.

    Returns
    -------
    dict
        ``W_x, W_y, W_q, W_k, W_v, W_o`` (see :func:`param_shapes`).

    Raises
    ------
    ValueError
        If ``N < d``, a size is < 1 or an option value is not allowed.
    TypeError
        For an unknown option or a non-Generator ``rng``.

    References
    ----------
    Paper eqs. (8)-(12); initialisation is not stated in the paper.

    Examples
    --------
    >>> p = init_params(4, 8, 3, np.random.default_rng(0))
    >>> p["W_q"].shape, float((p["W_o"] @ p["W_v"] @ p["W_y"]).item())
    ((3, 8, 8), 1.0)
    """
    options = resolve_init_options(INIT_DEFAULTS, init_options)
    return init_shared(d, N, depth, rng, dtype, options, values=VALUES)


# ----------------------------------------------------------------------------- shared engine
class _TestRows(NamedTuple):
    """Softmax test rows ``p_ℓ`` of all layers, kept unnormalised, and what their reverse pass needs.

    Everything lives in the ``d`` input dimensions (see :func:`_test_row_attention`).
    """

    weights: np.ndarray  # e_ℓj = exp(logit_ℓj − max_j logit_ℓj), so p_ℓj = e_ℓj / Σ_j e_ℓj; (B, L, P)
    totals: np.ndarray  # Σ_j e_ℓj (>= 1), (B, L)
    reads: np.ndarray  # p_ℓ·y, (B, L)
    z_ctx: np.ndarray  # r_j x_j, (B, P, d)
    r_ctx: np.ndarray  # 1/std of the hidden context tokens, (B, P)
    z_test: np.ndarray  # r_test x_test, (B, d)
    r_test: np.ndarray  # (B,)
    A: np.ndarray  # centred W_x, (N, d)
    Q: np.ndarray  # W_q^ℓ A, (L, N, d)
    K: np.ndarray  # W_k^ℓ A, (L, N, d)
    D: np.ndarray  # D_ℓ = Qᵀ_ℓ K_ℓ, (L, d, d)
    u: np.ndarray  # ũ_ℓ = D_ℓᵀ z_test, (B, L, d)


class _Parallel(NamedTuple):
    """The parallel forward pass ``ŷ_L = (1/L) Σ_ℓ f_ℓ`` (eqs. 59-60, 72)."""

    prediction: np.ndarray  # (B,)
    layer_predictors: np.ndarray  # f_ℓ, (B, L)
    gains: np.ndarray  # g (shape ()) or g_ℓ (shape (L,))
    rows: _TestRows
    arrays: BatchArrays


def _norm_scales(x: np.ndarray, gram: np.ndarray, N: int) -> np.ndarray:
    """``r = 1/sqrt(|A x|²/N + eps)`` of each input, from the Gram matrix ``AᵀA`` (d, d)."""
    flat = x.reshape(-1, x.shape[-1])
    quad = np.einsum("ij,ij->i", flat @ gram, flat).reshape(x.shape[:-1])  # |A x|² = xᵀ AᵀA x, one product
    return 1.0 / np.sqrt(quad / N + LAYER_NORM_EPS)


def _test_row_attention(W_x, W_q, W_k, context_x, context_y, test_x, norm: str = "layer") -> _TestRows:
    """Softmax test rows of all layers and their label reads ``p_ℓ·y``, with the cache for the reverse pass.

    The pre-norm keeps every token in a ``d``-dimensional subspace: with ``A = W_x`` minus its
    column means (the centring of the LayerNorm; ``A = W_x`` for ``norm="rms"``), ``ĥ_j = r_j A x_j`` and
    ``r_j = 1/sqrt(|A x_j|²/N + eps)``, so the logit of eq. (10) is

        ĥ_testᵀ (W_q^ℓ)ᵀ W_k^ℓ ĥ_j = (D_ℓᵀ z_test)·z_j,   z = r x,   D_ℓ = (W_q^ℓ A)ᵀ (W_k^ℓ A)  (d × d),

    exactly: contractions over the ``d`` input dimensions instead of the ``N`` hidden ones,
    and no ``(B, P, N)`` hidden state is formed. Three passes over the ``(B, L, P)``
    logits: the row maximum, the shift and the exp (in place). The normalisation
    ``Σ_j e_ℓj`` and the read ``Σ_j e_ℓj y_j`` come out of one small matrix product with
    ``[1, y]``; the probabilities themselves are never formed.
    """
    N, d = W_x.shape
    A = W_x - W_x.mean(axis=0, keepdims=True) if norm == "layer" else W_x  # (I − 11ᵀ/N) W_x, or W_x (RMSNorm)
    gram = A.T @ A
    r_ctx = _norm_scales(context_x, gram, N)  # (B, P)
    r_test = _norm_scales(test_x, gram, N)  # (B,)
    z_ctx = context_x * r_ctx[..., None]
    z_test = test_x * r_test[:, None]
    Q, K = W_q @ A, W_k @ A  # (L, N, d)
    D = np.swapaxes(Q, -1, -2) @ K  # (L, d, d)
    L, B = D.shape[0], test_x.shape[0]
    # ũ[b, ℓ] = D_ℓᵀ z_test[b] as one product: (B, d) @ (d, L·d)
    u = (z_test @ np.swapaxes(D, 0, 1).reshape(d, L * d)).reshape(B, L, d)
    weights = u @ np.swapaxes(z_ctx, -1, -2)  # logits, (B, L, P)
    # max-subtracted exp in place; fmax's reduction is several times faster than max's over a short
    # last axis (a NaN logit still makes its row NaN through the exp, hence the loss)
    weights -= np.fmax.reduce(weights, axis=-1, keepdims=True)
    np.exp(weights, out=weights)
    ones_and_labels = np.stack([np.ones_like(context_y), context_y], axis=-1)  # (B, P, 2)
    sums = weights @ ones_and_labels  # (B, L, 2): Σ_j e_ℓj and Σ_j e_ℓj y_j
    totals = sums[..., 0]
    return _TestRows(weights, totals, sums[..., 1] / totals, z_ctx, r_ctx, z_test, r_test, A, Q, K, D, u)


def _test_row_attention_backward(rows: _TestRows, grad_reads, context_y, W_x, W_q, W_k, context_x, test_x, norm: str = "layer") -> tuple:
    """Gradients of ``W_x, W_q, W_k`` given ``dℒ/d(p_ℓ·y)`` (B, L), through the ``d``-space form.

    The softmax backward ``∂(p·y)/∂logit_j = p_j (y_j − p·y)`` is formed as
    ``e_ℓj (y_j − p_ℓ·y)`` in place of the weights (two passes); its per-row factor
    ``dℒ/d(p_ℓ·y) / Σ_j e_ℓj`` is applied to the small operands of the two products that
    follow instead of to the ``(B, L, P)`` array. Overwrites ``rows.weights``.
    """
    weights, z_ctx, z_test, A, Q, K, D, u = rows.weights, rows.z_ctx, rows.z_test, rows.A, rows.Q, rows.K, rows.D, rows.u
    N, d = W_x.shape
    L, B = D.shape[0], test_x.shape[0]
    centred = np.subtract(context_y[:, None, :], rows.reads[..., None])  # y_j − p_ℓ·y, (B, L, P)
    weights *= centred  # e ⊙ (y − p·y): the logit gradient up to the row factor
    row_factor = (grad_reads / rows.totals)[..., None]  # (B, L, 1)
    grad_u = (weights @ z_ctx) * row_factor  # (B, L, d)
    grad_z_ctx = np.swapaxes(weights, -1, -2) @ (u * row_factor)  # (B, P, d)
    flat_grad_u = grad_u.reshape(B, L * d)
    grad_D = np.swapaxes((z_test.T @ flat_grad_u).reshape(d, L, d), 0, 1)  # Σ_b z_test ⊗ grad ũ_ℓ, (L, d, d)
    grad_z_test = flat_grad_u @ np.swapaxes(D, -1, -2).reshape(L * d, d)  # Σ_ℓ D_ℓ grad ũ_ℓ, (B, d)
    # D_ℓ = Q_ℓᵀ K_ℓ with Q_ℓ = W_q^ℓ A, K_ℓ = W_k^ℓ A
    grad_Q = K @ np.swapaxes(grad_D, -1, -2)  # (L, N, d)
    grad_K = Q @ grad_D
    At = A.T
    grad_W_q = grad_Q @ At
    grad_W_k = grad_K @ At
    grad_A = np.sum(np.swapaxes(W_q, -1, -2) @ grad_Q + np.swapaxes(W_k, -1, -2) @ grad_K, axis=0)  # (N, d)
    # z = r x with r = (xᵀ AᵀA x / N + eps)^(-1/2): dr/d(xᵀAᵀAx) = −r³/(2N)
    grad_quad_ctx = np.einsum("...i,...i->...", grad_z_ctx, context_x) * (rows.r_ctx**3 * (-0.5 / N))  # (B, P)
    grad_quad_test = np.einsum("...i,...i->...", grad_z_test, test_x) * (rows.r_test**3 * (-0.5 / N))  # (B,)
    grad_gram = (context_x * grad_quad_ctx[..., None]).reshape(-1, d).T @ context_x.reshape(-1, d)
    grad_gram += (test_x * grad_quad_test[:, None]).T @ test_x  # Σ ∂/∂q · x xᵀ, symmetric (d, d)
    grad_A += 2.0 * (A @ grad_gram)  # gram = AᵀA
    if norm == "rms":
        return grad_A, grad_W_q, grad_W_k
    grad_W_x = grad_A - grad_A.mean(axis=0, keepdims=True)  # A = (I − 11ᵀ/N) W_x
    return grad_W_x, grad_W_q, grad_W_k


def _gains(params):
    """g = W_o W_v W_y (eq. 60), or g_ℓ = W_o W_v^ℓ W_y (eq. 72); shape () or (L,)."""
    return (params["W_o"] @ params["W_v"] @ params["W_y"])[..., 0, 0]


def _parallel_forward(params, batch, *, values: str, model: str, norm: str = "layer") -> _Parallel:
    d, _, _, dtype = check_params(params, model=model, values=values, mask="M(0)")
    arrays = check_batch(batch, d, dtype)
    rows = _test_row_attention(params["W_x"], params["W_q"], params["W_k"], arrays.context_x, arrays.context_y, arrays.test_x, norm)
    gains = _gains(params)
    layer_predictors = rows.reads * gains  # f_ℓ = g p_ℓ·y, (B, L)
    prediction = layer_predictors.mean(axis=1)  # ŷ_L = (1/L) Σ_ℓ f_ℓ (eq. 59)
    return _Parallel(prediction, layer_predictors, gains, rows, arrays)


def _parallel_result(params, batch, *, values: str, model: str, norm: str = "layer") -> ForwardResult:
    run = _parallel_forward(params, batch, values=values, model=model, norm=norm)
    probs = run.rows.weights / run.rows.totals[..., None]  # p_ℓ, (B, L, P)
    return ForwardResult(
        prediction=run.prediction,
        layer_predictors=np.ascontiguousarray(run.layer_predictors.T),
        attention=np.ascontiguousarray(np.swapaxes(probs, 0, 1)),
        context_attention=None,
    )


def _parallel_loss_and_grad(params, batch, *, values: str, model: str, norm: str = "layer") -> tuple[float, dict]:
    prediction, _, gains, rows, arrays = _parallel_forward(params, batch, values=values, model=model, norm=norm)
    context_x, context_y, test_x, target = arrays
    label_reads = rows.reads
    B, L = label_reads.shape
    residual = prediction - target
    loss = float(np.mean(residual * residual))
    grad_f = (2.0 / (B * L)) * residual[:, None]  # dℒ/df_ℓ, the same for every ℓ: (B, 1)
    grad_gains = np.sum(grad_f * label_reads, axis=0)  # (L,)
    grad_reads = np.broadcast_to(grad_f * gains, label_reads.shape)  # dℒ/d(p_ℓ·y), (B, L)
    grad_W_x, grad_W_q, grad_W_k = _test_row_attention_backward(
        rows, grad_reads, context_y, params["W_x"], params["W_q"], params["W_k"], context_x, test_x, norm
    )
    W_y, W_v, W_o = params["W_y"], params["W_v"], params["W_o"]
    if values == "untied":
        grad_g = grad_gains[:, None, None]  # (L, 1, 1)
        grad_W_o = np.sum(grad_g * np.swapaxes(W_v @ W_y, -1, -2), axis=0)
        grad_W_v = grad_g * (W_o.T @ W_y.T)
        grad_W_y = np.sum(grad_g * np.swapaxes(W_o @ W_v, -1, -2), axis=0)
    else:
        grad_g = np.sum(grad_gains)
        grad_W_o = grad_g * (W_v @ W_y).T
        grad_W_v = grad_g * (W_o.T @ W_y.T)
        grad_W_y = grad_g * (W_o @ W_v).T
    grads = {"W_x": grad_W_x, "W_y": grad_W_y, "W_q": grad_W_q, "W_k": grad_W_k, "W_v": grad_W_v, "W_o": grad_W_o}
    dtype = params["W_x"].dtype
    return loss, {key: np.require(value, dtype=dtype, requirements="C") for key, value in grads.items()}


# ----------------------------------------------------------------------------- public engine
#: the literal transcription of the paper's equations (slow, for checking :func:`forward`)
reference_forward = reference.nonlinear


def forward(params: dict, batch) -> ForwardResult:
    """Fast forward pass through the parallel form ``ŷ_L = (1/L) Σ_ℓ g p_ℓ·y``.

    Parameters
    ----------
    params : dict
        See :func:`param_shapes`.
    batch : numerics.tasks.Batch

    Returns
    -------
    ForwardResult
        ``prediction`` (B,), ``layer_predictors`` ``f_ℓ = g p_ℓ·y`` (L, B),
        ``attention`` ``p_ℓ`` (L, B, P), ``context_attention`` None.

    References
    ----------
    Paper eqs. (9)-(10), (12), (59)-(60).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(1)
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 3, rng)
    >>> out = forward(init_params(4, 8, 2, rng), batch)
    >>> out.attention.shape, np.allclose(out.attention.sum(-1), 1.0)
    ((2, 3, 6), True)
    >>> np.allclose(out.layer_predictors.mean(0), out.prediction)
    True
    """
    return _parallel_result(params, batch, values=VALUES, model=NAME)


def label_weights(params: dict, result: ForwardResult) -> np.ndarray:
    """Weights ``w`` (B, P) with ``ŷ = Σ_i w_i y_i`` for every labelling ``y`` of the contexts of ``result``.

    With M(0) and fixed ``H_x`` the attention rows ``p_ℓ`` read only the inputs, so the
    prediction is linear in the labels: ``w = (1/L) Σ_ℓ g_ℓ p_ℓ`` (eqs. 59-60; ``g_ℓ = g`` tied,
    eq. 72 untied). :func:`numerics.diagnostics.error_vectors` uses it instead of ``d`` extra
    forward passes.

    Parameters
    ----------
    params : dict
    result : ForwardResult
        :func:`forward` of ``params`` on the batch.

    Returns
    -------
    ndarray, shape (B, P), float64

    References
    ----------
    Paper eqs. (59)-(60), (72).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(2)
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 3, rng)
    >>> params = init_params(4, 8, 2, rng)
    >>> out = forward(params, batch)
    >>> bool(np.allclose(np.einsum("bp,bp->b", label_weights(params, out), batch.context_y), out.prediction))
    True
    """
    gains = np.asarray(_gains(params), dtype=np.float64)
    attention = np.asarray(result.attention, dtype=np.float64)  # (L, B, P)
    gains = np.broadcast_to(gains, (attention.shape[0],))
    return np.einsum("l,lbp->bp", gains, attention) / attention.shape[0]


def loss_and_grad(params: dict, batch) -> tuple[float, dict]:
    """Mean squared error ``mean_b (ŷ_b − y*_b)²`` of :func:`forward` (eq. 12) and its exact gradient, keyed like ``params``.

    A hand-written reverse pass through the parallel form (eqs. 59-60): through the
    gain ``g`` to ``W_o, W_v, W_y`` and through the softmax rows to ``W_q, W_k, W_x``,
    in the params' dtype.

    References
    ----------
    Paper eqs. (12), (59)-(60).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(2)
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 3, rng)
    >>> loss, grads = loss_and_grad(init_params(4, 8, 2, rng), batch)
    >>> loss > 0, grads["W_q"].shape
    (True, (2, 8, 8))
    """
    return _parallel_loss_and_grad(params, batch, values=VALUES, model=NAME)
