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

where ``p_ℓ`` is the test row of ``A^ℓ``. Its logits are ``ĥ_testᵀ (W_q^ℓ)ᵀ W_k^ℓ ĥ_j``,
computed as ``(ĥ_testᵀ C_ℓ) Ĥ_x`` with ``C_ℓ = (W_q^ℓ)ᵀ W_k^ℓ`` formed once per step:
``O(N² + P N)`` per layer and context instead of the dense ``O(P N² + P² N)``.
``loss_and_grad`` is a hand-written reverse pass through that engine.

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
from ._common import SHARED_INIT_DEFAULTS, BatchArrays, ForwardResult, check_batch, check_params, floats_per_context
from ._common import init_shared, layer_norm, layer_norm_backward, param_shapes as _param_shapes, resolve_init_options, softmax_

__all__ = ["INIT_DEFAULTS", "TRAIN_DEFAULTS", "param_shapes", "floats_per_context", "init_params", "reference_forward", "forward", "loss_and_grad"]

# facts (see the package docstring)
NAME = "nonlinear"
ATTENTION = "softmax"
LABEL_LINEAR = True  # the attention reads only the input stream
VALUES = "tied"
MASK = "M(0)"
PARAMETERS = ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o")
#: default initialisation options (see :func:`init_params`)
INIT_DEFAULTS = MappingProxyType(dict(SHARED_INIT_DEFAULTS))
#: Adam learning rate of :mod:`numerics.train` (measured there: above 1e-3 is worse); no init overrides
TRAIN_DEFAULTS = MappingProxyType({"learning_rate": 1e-3, "init": MappingProxyType({})})


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
    """Softmax test rows ``p_ℓ`` of all layers and what their reverse pass needs."""

    probs: np.ndarray  # p_ℓ, (B, L, P)
    H_ctx_hat: np.ndarray  # normed context inputs, (B, P, N)
    r_ctx: np.ndarray  # their 1/std, (B, P, 1)
    h_test_hat: np.ndarray  # normed test input, (B, N)
    r_test: np.ndarray  # its 1/std, (B, 1)
    C: np.ndarray  # C_ℓ = (W_q^ℓ)ᵀ W_k^ℓ, (L, N, N)
    u: np.ndarray  # ĥ_testᵀ C_ℓ, (L, B, N)


class _Parallel(NamedTuple):
    """The parallel forward pass ``ŷ_L = (1/L) Σ_ℓ f_ℓ`` (eqs. 59-60, 72)."""

    prediction: np.ndarray  # (B,)
    layer_predictors: np.ndarray  # f_ℓ, (B, L)
    label_reads: np.ndarray  # p_ℓ·y, (B, L)
    gains: np.ndarray  # g (shape ()) or g_ℓ (shape (L,))
    rows: _TestRows
    arrays: BatchArrays


def _test_row_attention(W_x, W_q, W_k, context_x, test_x) -> _TestRows:
    """Softmax test rows ``p_ℓ`` of all layers, (B, L, P), with the cache for the reverse pass."""
    H_ctx_hat, r_ctx = layer_norm(context_x @ W_x.T)  # (B, P, N)
    h_test_hat, r_test = layer_norm(test_x @ W_x.T)  # (B, N)
    C = np.swapaxes(W_q, -1, -2) @ W_k  # C_ℓ = (W_q^ℓ)ᵀ W_k^ℓ, (L, N, N)
    u = h_test_hat @ C  # ĥ_testᵀ C_ℓ, (L, B, N)
    logits = np.swapaxes(u, 0, 1) @ np.swapaxes(H_ctx_hat, -1, -2)  # (B, L, P)
    return _TestRows(softmax_(logits), H_ctx_hat, r_ctx, h_test_hat, r_test, C, u)


def _test_row_attention_backward(rows: _TestRows, grad_logits, W_x, W_q, W_k, context_x, test_x) -> tuple:
    """Gradients of ``W_x, W_q, W_k`` given the gradient of the test-row logits (B, L, P)."""
    H_ctx_hat, h_test_hat, C, u = rows.H_ctx_hat, rows.h_test_hat, rows.C, rows.u
    grad_u = np.swapaxes(grad_logits @ H_ctx_hat, 0, 1)  # (L, B, N)
    grad_H_ctx_hat = np.swapaxes(grad_logits, -1, -2) @ np.swapaxes(u, 0, 1)  # (B, P, N)
    grad_C = h_test_hat.T @ grad_u  # (L, N, N)
    grad_h_test_hat = np.sum(grad_u @ np.swapaxes(C, -1, -2), axis=0)  # (B, N)
    grad_W_q = W_k @ np.swapaxes(grad_C, -1, -2)
    grad_W_k = W_q @ grad_C
    grad_H_ctx = layer_norm_backward(H_ctx_hat, rows.r_ctx, grad_H_ctx_hat)
    grad_h_test = layer_norm_backward(h_test_hat, rows.r_test, grad_h_test_hat)
    N, d = W_x.shape
    grad_W_x = grad_H_ctx.reshape(-1, N).T @ context_x.reshape(-1, d) + grad_h_test.T @ test_x
    return grad_W_x, grad_W_q, grad_W_k


def _parallel_forward(params, batch, *, values: str, model: str) -> _Parallel:
    d, N, L, dtype = check_params(params, model=model, values=values, mask="M(0)")
    arrays = check_batch(batch, d, dtype)
    rows = _test_row_attention(params["W_x"], params["W_q"], params["W_k"], arrays.context_x, arrays.test_x)
    # g = W_o W_v W_y (eq. 60), or g_ℓ = W_o W_v^ℓ W_y (eq. 72); shape () or (L,)
    gains = (params["W_o"] @ params["W_v"] @ params["W_y"])[..., 0, 0]
    label_reads = (rows.probs @ arrays.context_y[:, :, None])[..., 0]  # p_ℓ·y, (B, L)
    layer_predictors = label_reads * gains  # f_ℓ, (B, L)
    prediction = layer_predictors.mean(axis=1)  # ŷ_L = (1/L) Σ_ℓ f_ℓ (eq. 59)
    return _Parallel(prediction, layer_predictors, label_reads, gains, rows, arrays)


def _parallel_result(params, batch, *, values: str, model: str) -> ForwardResult:
    run = _parallel_forward(params, batch, values=values, model=model)
    return ForwardResult(
        prediction=run.prediction,
        layer_predictors=np.ascontiguousarray(run.layer_predictors.T),
        attention=np.ascontiguousarray(np.swapaxes(run.rows.probs, 0, 1)),
        context_attention=None,
    )


def _parallel_loss_and_grad(params, batch, *, values: str, model: str) -> tuple[float, dict]:
    prediction, _, label_reads, gains, rows, arrays = _parallel_forward(params, batch, values=values, model=model)
    context_x, context_y, test_x, target = arrays
    B, L = label_reads.shape
    residual = prediction - target
    loss = float(np.mean(residual * residual))
    grad_f = np.broadcast_to((2.0 / (B * L)) * residual[:, None], label_reads.shape)  # dℒ/df_ℓ
    grad_gains = np.sum(grad_f * label_reads, axis=0)  # (L,)
    grad_reads = grad_f * gains  # dℒ/d(p_ℓ·y), (B, L)
    # softmax backward with dℒ/dp_ℓj = grad_reads y_j:  p ⊙ (dp − p·dp)
    # (p ⊙ g) ⊙ (y − p·y), evaluated in that order into one buffer (the probabilities are not needed after)
    centred = np.subtract(context_y[:, None, :], label_reads[..., None])
    grad_logits = np.multiply(rows.probs, grad_reads[..., None], out=rows.probs)
    grad_logits *= centred
    grad_W_x, grad_W_q, grad_W_k = _test_row_attention_backward(
        rows, grad_logits, params["W_x"], params["W_q"], params["W_k"], context_x, test_x
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
