"""Which engine computes a training step: the numpy engine (the default) or the JAX engine.

An *engine* is how a run's step is computed, not what is computed: both train the same models
on the same data law (paper eqs. 1-6) with the same loss (eq. 12), optimiser and schedules
(:mod:`numerics.optim`). The model modules (:mod:`numerics.models`) hold the numpy engine of
each model; :mod:`numerics.engines.jax_engine` holds the JAX engine of the softmax family that
the studies train (``"nonlinear"`` and ``"nonlinear_rms"``: M(0) mask, LayerNorm or RMSNorm
pre-norm). They are kept apart because an engine cuts across the models: one JAX module serves
both norms, and the numpy package (``import numerics``) never imports jax.

========  =====================================================================================
engine    what a step is
========  =====================================================================================
numpy     :func:`numerics.tasks.sample` + the model's hand-written ``loss_and_grad`` + Adam
jax       one jitted step: the batch drawn inside it from a counter-based key
          (``jax.random.fold_in(key, step)``), ``jax.grad`` of the loss, Adam; the K candidates
          of a lockstep group in one ``vmap``-ed step; on JAX's default device (GPU when present)
========  =====================================================================================

This module only names and checks engines; it imports no jax (``pip install -e ".[jax]"``
installs it).
"""

from __future__ import annotations

import importlib.util

from theory.validation import check_choice

__all__ = ["ENGINES", "JAX_MODELS", "JAX_EXTRA", "jax_available", "check_engine"]

#: the engines a :class:`numerics.config.TrainConfig` may name; ``"numpy"`` is the default
ENGINES = ("numpy", "jax")
#: the models the JAX engine implements (the softmax family of the studies, both pre-norms)
JAX_MODELS = ("nonlinear", "nonlinear_rms")
#: how to install the JAX engine's dependency
JAX_EXTRA = 'pip install -e ".[jax]"'


def jax_available() -> bool:
    """Whether jax can be imported (looked up without importing it).

    Examples
    --------
    >>> isinstance(jax_available(), bool)
    True
    """
    return importlib.util.find_spec("jax") is not None


def check_engine(engine: object, model: str) -> str:
    """``engine`` if it is one of :data:`ENGINES` and can train ``model`` here; ValueError otherwise.

    Parameters
    ----------
    engine : str
        ``"numpy"`` or ``"jax"``.
    model : str
        The config's model (a key of :data:`numerics.models.MODELS`).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        An unknown engine (naming the choices); ``"jax"`` when jax is not installed (naming the extra to
        install); ``"jax"`` with a model the JAX engine does not implement (naming :data:`JAX_MODELS`).

    Examples
    --------
    >>> check_engine("numpy", "linear")
    'numpy'
    >>> check_engine("torch", "nonlinear")
    Traceback (most recent call last):
    ...
    ValueError: engine must be one of 'numpy', 'jax'; got 'torch'
    """
    engine = check_choice("engine", engine, ENGINES)
    if engine == "jax":
        if not jax_available():
            raise ValueError(f"engine='jax' needs jax, which is not installed: {JAX_EXTRA}")
        if model not in JAX_MODELS:
            raise ValueError(f"engine='jax' implements the models {', '.join(repr(m) for m in JAX_MODELS)}; "
                             f"got model={model!r} (use engine='numpy' for it)")
    return engine
