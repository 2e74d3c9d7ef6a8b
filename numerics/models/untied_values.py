"""Nonlinear attention with untied values ``W_v^ℓ`` per layer, paper appendix C.2, eqs. (71)-(74).

Identical to :mod:`numerics.models.nonlinear` (two streams, pre-normed fixed input
stream, mask ``M(0)``) except that layer ``ℓ`` uses its own value matrix:
``V^ℓ = W_v^ℓ H_y^{ℓ−1}`` (eq. 71). The context states stay frozen, so the model is
still an exact average of per-layer predictors (eq. 72):

    ŷ_L = (1/L) Σ_ℓ f_ℓ,   f_ℓ = g_ℓ p_ℓ·y,   g_ℓ = W_o W_v^ℓ W_y.

The fast engine and its reverse pass are those of the nonlinear model with the
gain ``g`` replaced by ``g_ℓ``.
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
    masked_softmax,
    norm_columns,
    resolve_init_options,
)
from ._common import param_shapes as _param_shapes
from .nonlinear import _parallel_loss_and_grad, _parallel_result

__all__ = ["INIT_DEFAULTS", "param_shapes", "init_params", "reference_forward", "forward", "loss_and_grad"]

NAME = "untied_values"

#: default initialisation options (see :func:`init_params`)
INIT_DEFAULTS = MappingProxyType(dict(SHARED_INIT_DEFAULTS))


def param_shapes(d: int, N: int, depth: int) -> dict:
    """Shapes of the parameters; ``W_v`` is ``(L, N, N)`` (one per layer, eq. (71)).

    References
    ----------
    Paper eqs. (8)-(12), (71).

    Examples
    --------
    >>> param_shapes(2, 3, 4)["W_v"]
    (4, 3, 3)
    """
    return _param_shapes(d, N, depth, untied_values=True)


def init_params(d: int, N: int, depth: int, rng: np.random.Generator, *, dtype=np.float64, **init_options) -> dict:
    """Draw initial parameters (options as :func:`numerics.models.nonlinear.init_params`).

    With ``value_init='identity'`` every ``W_v^ℓ = I``, so ``g_ℓ = readout_gain`` for all ``ℓ``.

    References
    ----------
    Paper eqs. (8)-(12), (71); initialisation is not stated in the paper.

    Examples
    --------
    >>> p = init_params(4, 8, 3, np.random.default_rng(0))
    >>> (p["W_o"] @ p["W_v"] @ p["W_y"]).ravel().round(12).tolist()
    [1.0, 1.0, 1.0]
    """
    options = resolve_init_options(INIT_DEFAULTS, init_options)
    return init_shared(d, N, depth, rng, dtype, options, untied_values=True)


def reference_forward(params: dict, batch) -> np.ndarray:
    """Literal transcription of eqs. (7)-(10), (12) with ``V^ℓ = W_v^ℓ H_y^{ℓ−1}`` (eq. 71).

    Returns
    -------
    ndarray, shape (B,)

    References
    ----------
    Paper eqs. (7)-(10), (12), (71), (76).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(0)
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 2, rng)
    >>> p = init_params(4, 4, 2, rng, value_init="gaussian")
    >>> np.allclose(reference_forward(p, batch), forward(p, batch).prediction)
    True
    """
    d, N, L, dtype = check_params(params, model=NAME, untied_values=True)
    context_x, context_y, test_x, _ = check_batch(batch, d, dtype)
    P = context_y.shape[1]
    W_x, W_y, W_q, W_k, W_v, W_o = (params[k] for k in ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o"))
    X, y_in = dense_inputs(context_x, context_y, test_x)  # eq. (7)
    H_x = W_x @ X  # eq. (8)
    H_y = W_y @ y_in
    H_x_hat = norm_columns(H_x)  # eq. (9)
    M = attention_mask(P, 0.0, dtype)  # M(0), eq. (76)
    allowed = allowed_positions(P, context_block=False)
    for ell in range(L):
        Q = W_q[ell] @ H_x_hat
        K = W_k[ell] @ H_x_hat
        V = W_v[ell] @ H_y  # untied values, eq. (71)
        A = M * masked_softmax(np.swapaxes(Q, -1, -2) @ K, allowed)
        H_y = H_y + (V @ np.swapaxes(A, -1, -2)) / L
    return (W_o @ H_y[:, :, -1:])[:, 0, 0]  # eq. (12)


def forward(params: dict, batch) -> ForwardResult:
    """Fast forward pass ``ŷ_L = (1/L) Σ_ℓ g_ℓ p_ℓ·y``.

    Returns
    -------
    ForwardResult
        ``layer_predictors`` are ``f_ℓ = g_ℓ p_ℓ·y`` (eq. 72); ``context_attention`` None.

    References
    ----------
    Paper eqs. (71)-(72).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(1)
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 3, rng)
    >>> out = forward(init_params(4, 8, 2, rng, value_init="gaussian"), batch)
    >>> np.allclose(out.layer_predictors.mean(0), out.prediction)
    True
    """
    return _parallel_result(params, batch, untied_values=True, model=NAME)


def loss_and_grad(params: dict, batch) -> tuple[float, dict]:
    """Mean squared error of :func:`forward` and its exact gradient (hand-written reverse pass).

    Returns
    -------
    loss : float
    grads : dict
        Same keys and shapes as ``params`` (``W_v`` of shape (L, N, N)).

    References
    ----------
    Paper eqs. (12), (71)-(72).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(2)
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 3, rng)
    >>> loss, grads = loss_and_grad(init_params(4, 8, 2, rng), batch)
    >>> grads["W_v"].shape
    (2, 8, 8)
    """
    return _parallel_loss_and_grad(params, batch, untied_values=True, model=NAME)
