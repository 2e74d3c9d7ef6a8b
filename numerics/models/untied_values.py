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

from . import reference
from ._common import SHARED_INIT_DEFAULTS, ForwardResult, floats_per_context, init_shared, resolve_init_options
from ._common import param_shapes as _param_shapes
from .cost import StepCost
from .nonlinear import _parallel_loss_and_grad, _parallel_result, label_weights

__all__ = ["INIT_DEFAULTS", "TRAIN_DEFAULTS", "param_shapes", "floats_per_context", "init_params", "reference_forward", "forward", "loss_and_grad",
           "label_weights"]

# facts (see the package docstring)
NAME = "untied_values"
ATTENTION = "softmax"
LABEL_LINEAR = True  # the attention reads only the input stream
VALUES = "untied"
MASK = "M(0)"
NORM = "layer"
PARAMETERS = ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o")  # W_v of shape (L, N, N)
#: default initialisation options (see :func:`init_params`)
INIT_DEFAULTS = MappingProxyType(dict(SHARED_INIT_DEFAULTS))
#: as the nonlinear model (measured in :mod:`numerics.train`)
TRAIN_DEFAULTS = MappingProxyType({"learning_rate": 1e-3, "init": MappingProxyType({})})
#: CPU ms per Adam step (numerics.models.cost): the nonlinear engine with a heavier layer (its own W_v^ℓ),
#: fitted to benchmarks/bench_training.py
STEP_COST = StepCost(fixed=0.3, per_input=4.0e-6, per_layer=0.02, per_layer_size=2.5e-7, layer_size="BPd",
                     per_gram=5.5e-8)


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
    return _param_shapes(d, N, depth, values=VALUES, mask=MASK)


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
    return init_shared(d, N, depth, rng, dtype, options, values=VALUES)


#: the literal transcription of the paper's equations (slow, for checking :func:`forward`)
reference_forward = reference.untied_values


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
    return _parallel_result(params, batch, values=VALUES, model=NAME)


def loss_and_grad(params: dict, batch) -> tuple[float, dict]:
    """Mean squared error of :func:`forward` (eq. 12) and its exact gradient; ``grads["W_v"]`` has one ``(N, N)`` block per layer.

    The reverse pass of :func:`numerics.models.nonlinear.loss_and_grad` with the gain
    ``g`` replaced by ``g_ℓ = W_o W_v^ℓ W_y`` (eq. 72).

    References
    ----------
    Paper eqs. (12), (71)-(72).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> params = init_params(4, 8, 2, np.random.default_rng(2), value_init="gaussian")
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 3, np.random.default_rng(3))
    >>> loss, grads = loss_and_grad(params, batch)
    >>> grads["W_v"].shape
    (2, 8, 8)
    """
    return _parallel_loss_and_grad(params, batch, values=VALUES, model=NAME)
