"""The controlled softmax model with a parameter-free RMSNorm as its pre-norm (a variant of paper eqs. 9-10).

Everything is :mod:`numerics.models.nonlinear` (two streams, mask ``M(0)``, the parallel form
of eqs. 59-60, the same parameters, initialisation and training defaults) except the norm of the
input stream: ``ĥ = h / sqrt(mean(h²) + eps)`` (no centring, no gain) instead of LayerNorm.
The paper writes only "pre-norm"; the authors' related public code uses a parameter-free
RMSNorm. With LayerNorm at ``N = d`` the centring removes one input direction; RMSNorm does
not, and with an orthonormal ``W_x`` its logits are ``|x|``-free cosines exactly.

The fast engine is the nonlinear one with ``A = W_x`` (no column centring) in its ``d``-space
form; :func:`numerics.models.reference.nonlinear_rms` is the literal transcription.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np  # noqa: F401 (the doctests use it)

from . import reference
from ._common import ForwardResult, floats_per_context
from .nonlinear import (
    INIT_DEFAULTS,
    STEP_COST,
    _parallel_loss_and_grad,
    _parallel_result,
    init_params,
    label_weights,
    param_shapes,
)

__all__ = ["INIT_DEFAULTS", "TRAIN_DEFAULTS", "floats_per_context", "forward", "init_params", "label_weights",
           "loss_and_grad", "param_shapes", "reference_forward"]

# facts (see the package docstring)
NAME = "nonlinear_rms"
ATTENTION = "softmax"
LABEL_LINEAR = True  # the attention reads only the input stream
VALUES = "tied"
MASK = "M(0)"
NORM = "rms"
PARAMETERS = ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o")
# INIT_DEFAULTS, param_shapes and init_params are the nonlinear model's own (same parameters, same initialisation),
# and so is STEP_COST (the same engine, numerics.models.cost)
#: as the nonlinear model
TRAIN_DEFAULTS = MappingProxyType({"learning_rate": 1e-3, "init": MappingProxyType({})})


#: the literal transcription (slow, for checking :func:`forward`)
reference_forward = reference.nonlinear_rms


def forward(params: dict, batch) -> ForwardResult:
    """Fast forward pass, as :func:`numerics.models.nonlinear.forward` with the RMS pre-norm.

    References
    ----------
    Paper eqs. (9)-(10), (12), (59)-(60).

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(1)
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 3, rng)
    >>> params = init_params(4, 8, 2, rng)
    >>> bool(np.allclose(forward(params, batch).prediction, reference_forward(params, batch)))
    True
    """
    return _parallel_result(params, batch, values=VALUES, model=NAME, norm=NORM)


def loss_and_grad(params: dict, batch) -> tuple[float, dict]:
    """Mean squared error of :func:`forward` (eq. 12) and its exact gradient, keyed like ``params``.

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
    >>> loss > 0, grads["W_x"].shape
    (True, (8, 4))
    """
    return _parallel_loss_and_grad(params, batch, values=VALUES, model=NAME, norm=NORM)
