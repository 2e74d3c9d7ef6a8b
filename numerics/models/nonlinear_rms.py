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

import numpy as np

from . import reference
from ._common import (
    SHARED_INIT_DEFAULTS,
    ForwardResult,
    floats_per_context,
    init_shared,
    resolve_init_options,
)
from ._common import param_shapes as _param_shapes
from .nonlinear import _parallel_loss_and_grad, _parallel_result

__all__ = ["INIT_DEFAULTS", "TRAIN_DEFAULTS", "floats_per_context", "forward", "init_params", "loss_and_grad", "param_shapes",
           "reference_forward"]

# facts (see the package docstring)
NAME = "nonlinear_rms"
ATTENTION = "softmax"
LABEL_LINEAR = True  # the attention reads only the input stream
VALUES = "tied"
MASK = "M(0)"
NORM = "rms"
PARAMETERS = ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o")
#: default initialisation options (see :func:`init_params`)
INIT_DEFAULTS = MappingProxyType(dict(SHARED_INIT_DEFAULTS))
#: as the nonlinear model
TRAIN_DEFAULTS = MappingProxyType({"learning_rate": 1e-3, "init": MappingProxyType({})})


def param_shapes(d: int, N: int, depth: int) -> dict:
    """Shapes of the parameters (those of :func:`numerics.models.nonlinear.param_shapes`).

    References
    ----------
    Paper eqs. (8)-(12).

    Examples
    --------
    >>> param_shapes(2, 3, 4)["W_q"]
    (4, 3, 3)
    """
    return _param_shapes(d, N, depth, values=VALUES, mask=MASK)


def init_params(d: int, N: int, depth: int, rng: np.random.Generator, *, dtype=np.float64, **init_options) -> dict:
    """Draw initial parameters (options and defaults as :func:`numerics.models.nonlinear.init_params`).

    References
    ----------
    Paper eqs. (8)-(12); initialisation is not stated in the paper.

    Examples
    --------
    >>> sorted(init_params(2, 3, 1, np.random.default_rng(0)))
    ['W_k', 'W_o', 'W_q', 'W_v', 'W_x', 'W_y']
    """
    options = resolve_init_options(INIT_DEFAULTS, init_options)
    return init_shared(d, N, depth, rng, dtype, options, values=VALUES)


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
