"""The paper's five attention models in numpy (paper eqs. (7)-(12), appendix C).

========================  ===========================================================
``"linear"``              linear attention, mask ``M_linear`` (eqs. 11, 19-24, 75)
``"nonlinear"``           softmax attention, pre-normed fixed input stream, ``M(0)`` (eqs. 9-10, 59-60, 76)
``"single_stream"``       one residual stream, Q, K, V from the evolving state (C.1, eqs. 64-70)
``"untied_values"``       per-layer value matrices ``W_v^ℓ`` (C.2, eqs. 71-74)
``"context_updates"``     mask ``M(m)`` with a learned scalar ``m`` (C.3, eqs. 77-83)
========================  ===========================================================

Every model module has the same functions, so models are swapped freely:

* ``init_params(d, N, depth, rng, *, dtype=np.float64, **init_options) -> dict`` (defaults
  in the module's ``INIT_DEFAULTS``), ``param_shapes(d, N, depth) -> dict``;
* ``reference_forward(params, batch) -> ndarray (B,)`` -- a literal transcription of the
  paper's equations with the full ``(P+1) x (P+1)`` attention (slow, for checking);
* ``forward(params, batch) -> ForwardResult`` -- the fast engine, equal to the reference
  to round-off;
* ``loss_and_grad(params, batch) -> (float, dict)`` -- mean squared error and its exact
  gradient by a hand-written reverse pass through the fast engine.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from theory.validation import check_choice

from ._common import LAYER_NORM_EPS, ForwardResult

__all__ = ["MODELS", "get_model", "ForwardResult", "LAYER_NORM_EPS"]

#: names of the five models, in the order of the paper
MODELS = ("linear", "nonlinear", "single_stream", "untied_values", "context_updates")


def get_model(name: str) -> ModuleType:
    """The module implementing model ``name``.

    Parameters
    ----------
    name : {'linear', 'nonlinear', 'single_stream', 'untied_values', 'context_updates'}

    Returns
    -------
    module
        With ``init_params``, ``param_shapes``, ``reference_forward``, ``forward``,
        ``loss_and_grad`` and ``INIT_DEFAULTS``.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the allowed names).

    References
    ----------
    Paper eqs. (7)-(12), (64)-(83).

    Examples
    --------
    >>> get_model("nonlinear").__name__
    'numerics.models.nonlinear'
    >>> sorted(get_model("context_updates").param_shapes(2, 3, 4))
    ['W_k', 'W_o', 'W_q', 'W_v', 'W_x', 'W_y', 'm']
    """
    check_choice("name", name, MODELS)
    return importlib.import_module(f"{__name__}.{name}")
