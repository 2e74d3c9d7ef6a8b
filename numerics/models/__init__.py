"""The paper's five attention models in numpy (paper eqs. (7)-(12), appendix C).

========================  ===========================================================
``"linear"``              linear attention, mask ``M_linear`` (eqs. 11, 19-24, 75)
``"nonlinear"``           softmax attention, pre-normed fixed input stream, ``M(0)`` (eqs. 9-10, 59-60, 76)
``"single_stream"``       one residual stream, Q, K, V from the evolving state (C.1, eqs. 64-70)
``"untied_values"``       per-layer value matrices ``W_v^ℓ`` (C.2, eqs. 71-74)
``"context_updates"``     mask ``M(m)`` with a learned scalar ``m`` (C.3, eqs. 77-83)
``"nonlinear_rms"``       ``"nonlinear"`` with a parameter-free RMSNorm as the pre-norm (the paper
                          says only "pre-norm")
========================  ===========================================================

:data:`MODELS` maps each name to its module, in the order of the paper. Every model
module has the same functions, so models are swapped freely:

* ``init_params(d, N, depth, rng, *, dtype=np.float64, **init_options) -> dict`` (options
  below) and ``param_shapes(d, N, depth) -> dict``;
* ``reference_forward(params, batch) -> ndarray (B,)`` -- the literal transcription of the
  paper's equations with the full ``(P+1) x (P+1)`` attention, from
  :mod:`numerics.models.reference` (slow, for checking);
* ``forward(params, batch) -> ForwardResult`` -- the fast engine, equal to the reference
  to round-off (its derivation is in the module docstring);
* ``loss_and_grad(params, batch) -> (float, dict)`` -- mean squared error (eq. 12) and its
  exact gradient by a hand-written reverse pass through the fast engine.
* optionally ``label_weights(params, forward_result) -> (B, P)`` -- for a model whose prediction
  is ``Σ_i w_i y_i`` with weights that do not depend on the labels (the M(0) softmax models,
  eqs. 59-60, 72): :func:`numerics.diagnostics.error_vectors` reads the error vectors from one
  forward pass instead of ``d`` more;
* optionally ``label_readout(params, batch) -> (B, d)`` -- the predictions for the ``d`` unit
  teachers ``y_i = x_{i,j}`` at once (the linear model: one adjoint pass, eq. 24), used the same way.

Every model module also declares its *facts*; the rest of the package (training,
diagnostics, experiments) reads them instead of knowing models by name:

====================================  ===================================================================
``NAME``                              its key in :data:`MODELS`
``ATTENTION``                         ``"linear"`` or ``"softmax"``: whether the test token's attention
                                      row is a softmax distribution over the context (so top-1 mass and
                                      selection error, Fig. 4c and eq. (90), are defined)
``LABEL_LINEAR``                      whether the prediction is linear in the context labels ``y``
                                      (attention from the input stream only), so the unit-teacher error
                                      vectors of :func:`numerics.diagnostics.error_vectors` are exact
``VALUES``                            ``"tied"`` (one ``W_v``, eq. 9) or ``"untied"`` (``W_v^ℓ``, eq. 71)
``MASK``                              ``"M_linear"``, ``"M(0)"`` or ``"M(m)"`` (eqs. 75-77)
``NORM``                              the pre-norm: ``"layer"`` (LayerNorm, no gain or bias), ``"rms"``
                                      (RMSNorm, no gain) or ``None`` (the linear model has none)
``PARAMETERS``                        the parameter names, the keys of ``init_params``
``INIT_DEFAULTS``                     the ``init_params`` options and their defaults
``TRAIN_DEFAULTS``                    ``{"learning_rate": float, "init": {option: value}}`` that
                                      :class:`numerics.train.TrainConfig` uses when a config gives none
                                      (measured, see :mod:`numerics.train`); an ``init`` value may be a
                                      function ``(d, N, c_lambda) -> value`` of the run's sizes
``floats_per_context(P, N, depth)``   numbers one context holds in a forward pass (memory), from
                                      which :func:`chunk_size` bounds the contexts per pass
``STEP_COST``                         the CPU time of one training step, term by term
                                      (:class:`numerics.models.cost.StepCost`), which the run-time
                                      estimate of a reproduction reads
====================================  ===================================================================

Initialisation options, the same for every model (defaults in the module's ``INIT_DEFAULTS``;
the paper states no initialisation):

* ``w_x``: ``"orthonormal"`` -- ``W_x`` has orthonormal columns (QR of a Gaussian
  ``N x d`` matrix); ``"gaussian"`` -- iid ``N(0, 1/d)`` entries.
* ``qk_init``: ``"identity"`` -- ``W_q^ℓ, W_k^ℓ = sqrt(κ)(I + σ G/sqrt(N))`` with ``G``
  standard Gaussian, ``κ = qk_scale``, ``σ = qk_noise`` (so ``W_k^ᵀ W_q ≈ κ I``);
  ``"gaussian"`` -- iid ``N(0, κ/N)`` entries.
* ``value_init``: ``"identity"`` -- ``W_v = I`` (every ``W_v^ℓ = I`` when untied);
  ``"gaussian"`` -- iid ``N(0, 1/N)``.
* ``readout_gain``: ``W_y`` is a random unit vector and ``W_o = readout_gain · W_yᵀ``,
  so ``g = W_o W_v W_y = readout_gain`` when ``W_v = I`` (paper eq. (60)).
* ``m_init`` (context-updates model only): the initial scalar ``m`` of ``M(m)``.

The modelling choices the paper leaves open and all models share (which norm, how the
softmax is taken) are stated once, in the docstring of ``numerics/models/_common.py``.
"""

from __future__ import annotations

from types import MappingProxyType, ModuleType
from typing import Mapping

import numpy as np

from theory.validation import check_choice

from . import context_updates, linear, nonlinear, nonlinear_rms, single_stream, untied_values
from ._common import LAYER_NORM_EPS, ForwardResult
from .heads import HEAD_MODELS, form_average_params, head_average_params

__all__ = ["MODELS", "get_model", "get", "chunk_size", "check_initial_params", "ForwardResult", "LAYER_NORM_EPS", "HEAD_MODELS",
           "form_average_params", "head_average_params"]

#: the five models by name, in the order of the paper, then the RMSNorm variant of the nonlinear one
MODELS: Mapping[str, ModuleType] = MappingProxyType(
    {
        "linear": linear,
        "nonlinear": nonlinear,
        "single_stream": single_stream,
        "untied_values": untied_values,
        "context_updates": context_updates,
        "nonlinear_rms": nonlinear_rms,
    }
)


def get_model(name: str) -> ModuleType:
    """The module implementing model ``name``.

    Parameters
    ----------
    name : {'linear', 'nonlinear', 'single_stream', 'untied_values', 'context_updates', 'nonlinear_rms'}

    Returns
    -------
    module
        With the functions and facts listed in the package docstring.

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
    >>> get_model("single_stream").ATTENTION, get_model("single_stream").LABEL_LINEAR
    ('softmax', False)
    """
    check_choice("name", name, MODELS)
    return MODELS[name]


#: short alias of :func:`get_model` (``numerics.models.get("linear")``)
get = get_model


def chunk_size(model: ModuleType, params: Mapping[str, np.ndarray], batch, budget: int = 1 << 23) -> int:
    """Contexts per forward pass so that the large intermediates stay near ``budget`` numbers.

    ``budget // model.floats_per_context(P, N, L)``, clipped to ``[1, 512]``: about
    ``P (N + L)`` numbers per context (hidden states and attention rows), plus ``P²`` for
    the context-to-context attention of the context-updates model (eq. 81).

    Parameters
    ----------
    model : module
        From :func:`get_model`.
    params : dict
        Its parameters (``N`` and ``L`` are read from ``W_x`` and ``W_q``).
    batch : numerics.tasks.Batch
        Anything with ``context_x`` of shape (B, P, d).
    budget : int

    References
    ----------
    Paper eqs. (9)-(12), (81).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> batch = SimpleNamespace(context_x=np.zeros((1, 1024, 8)))
    >>> chunk_size(get_model("context_updates"), {"W_x": np.zeros((64, 8)), "W_q": np.zeros((16, 64, 64))}, batch)
    7
    """
    P = np.shape(batch.context_x)[1]
    N = np.shape(params["W_x"])[0]
    L = np.shape(params["W_q"])[0]
    return int(min(512, max(1, budget // model.floats_per_context(P, N, L))))


def check_initial_params(model: ModuleType, params: Mapping[str, np.ndarray], d: int, N: int, depth: int,
                         dtype) -> dict[str, np.ndarray]:
    """``params`` as C-contiguous copies in ``dtype``, after checking names and shapes for ``(d, N, depth)``.

    Raises
    ------
    ValueError
        A missing or unknown parameter name, a wrong shape or a non-finite value (naming it).

    References
    ----------
    Paper eqs. (8)-(12) (the parameters).

    Examples
    --------
    >>> model = get_model("linear")
    >>> p = model.init_params(2, 2, 1, np.random.default_rng(0))
    >>> check_initial_params(model, p, 2, 2, 1, np.float32)["W_q"].dtype
    dtype('float32')
    """
    if not isinstance(params, Mapping):
        raise ValueError(f"initial_params must be a mapping of parameter name to array; got {type(params).__name__}")
    shapes = model.param_shapes(d, N, depth)
    if set(params) != set(shapes):
        raise ValueError(f"initial_params must have exactly the parameters {sorted(shapes)} of model "
                         f"{model.NAME!r}; got {sorted(params)}")
    out = {}
    for name, shape in shapes.items():
        value = np.require(np.asarray(params[name], dtype=dtype), requirements="C").copy()
        if value.shape != tuple(shape):
            raise ValueError(f"initial_params[{name!r}] must have shape {tuple(shape)} (d={d}, N={N}, "
                             f"depth={depth}); got {value.shape}")
        if not np.all(np.isfinite(value)):
            raise ValueError(f"initial_params[{name!r}] has non-finite values")
        out[name] = value
    return out
