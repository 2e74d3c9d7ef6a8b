"""The CPU cost of one training step of a model: the coefficients of the run-time estimate.

Every model module declares ``STEP_COST``, a :class:`StepCost`;
:func:`numerics.experiments.reproduce.plan.step_milliseconds` adds its terms up for a
config with ``B`` contexts of ``P`` tokens, input dimension ``d``, width ``N`` and depth ``L``::

    fixed + per_input · B P d + per_gram · B P d²
          + L · (per_layer + per_layer_per_Bd · B d + per_layer_size · u)

in milliseconds, where ``u`` is the mean over the ``L`` layers of the model's layer size
(:meth:`StepCost.layer_size_of`, one of :data:`LAYER_SIZES`). The terms: a fixed part per
step; drawing the batch, ``∝ B P d`` (Gaussian inputs, labels and top-k); a per-run term
``∝ B P d²`` (the pre-norm's Gram form in the ``d``-space engine of the two-stream softmax
models, the linear model's ``S``); per layer a fixed part, for the linear model one ``∝ B d``
(its per-context products), and a size term. The coefficients are fitted to the benchmark
scripts named beside each model's ``STEP_COST`` (``benchmarks/``), on one core, float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theory.validation import check_choice, check_nonnegative

__all__ = ["LAYER_SIZES", "StepCost"]

#: the size of one layer ``ℓ`` of ``L``: ``"krylov"`` ``B m_ℓ d (d + m_ℓ)`` with ``m_ℓ = min(ℓ, N)``
#: (the rows of ``C_{ℓ-1}`` in the linear model's Krylov coordinates, eq. 24), ``"BPd"`` ``B P d``
#: (the ``d``-space softmax engine, eqs. 59-60), ``"BP2N"`` ``B P² N`` (attention over the
#: context tokens in the ``N``-space engines)
LAYER_SIZES = ("krylov", "BPd", "BP2N")


@dataclass(frozen=True)
class StepCost:
    """Milliseconds of CPU time per Adam step of one model, term by term (module docstring).

    Attributes
    ----------
    fixed : float
        Per step.
    per_input : float
        Per input number drawn, ``B P d``.
    per_layer : float
        Per layer.
    per_layer_size : float
        Per unit of the layer size ``layer_size``.
    layer_size : {'krylov', 'BPd', 'BP2N'}
        How one layer's size grows (:data:`LAYER_SIZES`).
    per_gram : float
        Per ``B P d²``, once a step.
    per_layer_per_Bd : float
        Per layer and ``B d`` (default 0).

    References
    ----------
    Bookkeeping only; the layer sizes follow paper eqs. (24), (59)-(60).

    Examples
    --------
    >>> cost = StepCost(fixed=0.3, per_input=4.0e-6, per_layer=0.01, per_layer_size=2.5e-7,
    ...                 layer_size="BPd", per_gram=5.5e-8)
    >>> cost.layer_size_of(B=256, P=64, N=32, d=16, L=4)
    262144.0
    """

    fixed: float
    per_input: float
    per_layer: float
    per_layer_size: float
    layer_size: str
    per_gram: float
    per_layer_per_Bd: float = 0.0

    def __post_init__(self):
        check_choice("layer_size", self.layer_size, LAYER_SIZES)
        for name in ("fixed", "per_input", "per_layer", "per_layer_size", "per_gram", "per_layer_per_Bd"):
            check_nonnegative(name, getattr(self, name))

    def layer_size_of(self, B: int, P: int, N: int, d: int, L: int) -> float:
        """The size term of one layer, averaged over the ``L`` layers."""
        if self.layer_size == "krylov":
            m = np.minimum(np.arange(1, L + 1), N)
            return float(np.sum(B * m * d * (d + m))) / L
        if self.layer_size == "BPd":
            return float(B * P * d)
        return float(B * P * P * N)
