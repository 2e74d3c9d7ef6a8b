"""The optimiser of the training loop: Adam, gradient clipping and learning-rate schedules.

Pure functions: :func:`adam_update` returns new parameters and state (its inputs
are untouched) and :func:`schedule_value` is a function of the step alone. The
paper states no optimiser ("all models are trained until the loss has
converged", after eq. (12)); these are the package's documented choices, used by
:func:`numerics.train.train`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from theory.validation import check_choice

__all__ = ["SCHEDULES", "AdamState", "adam_init", "adam_update", "clip_by_global_norm", "schedule_value"]

#: learning-rate schedules of :func:`schedule_value`
SCHEDULES = ("constant", "warmup_constant", "warmup_cosine")


@dataclass(frozen=True)
class AdamState:
    """Adam's first and second moment estimates and the step count.

    References
    ----------
    Kingma & Ba (2015), Algorithm 1; used on the loss of paper eq. (12).

    Examples
    --------
    >>> state = adam_init({"w": np.zeros(3)})
    >>> state.step, state.m["w"].tolist()
    (0, [0.0, 0.0, 0.0])
    """

    m: Mapping[str, np.ndarray]
    v: Mapping[str, np.ndarray]
    step: int = 0


def adam_init(params: Mapping[str, np.ndarray]) -> AdamState:
    """Zero moments shaped like ``params`` (same dtype).

    References
    ----------
    Kingma & Ba (2015), Algorithm 1.

    Examples
    --------
    >>> adam_init({"w": np.ones(2, dtype=np.float32)}).v["w"].dtype
    dtype('float32')
    """
    return AdamState(
        m={k: np.zeros_like(v) for k, v in params.items()},
        v={k: np.zeros_like(v) for k, v in params.items()},
        step=0,
    )


def adam_update(
    params: Mapping[str, np.ndarray],
    grads: Mapping[str, np.ndarray],
    state: AdamState,
    learning_rate: float,
    beta1: float = 0.9,
    beta2: float = 0.999,
    eps: float = 1e-8,
) -> tuple[dict[str, np.ndarray], AdamState]:
    """One bias-corrected Adam step; returns new params and state (inputs untouched).

    ``m ← β1 m + (1 − β1) g``, ``v ← β2 v + (1 − β2) g²``,
    ``θ ← θ − η m̂/(√v̂ + ε)`` with ``m̂ = m/(1 − β1^t)``, ``v̂ = v/(1 − β2^t)``.

    References
    ----------
    Kingma & Ba (2015), Algorithm 1.

    Examples
    --------
    >>> p, s = adam_update({"w": np.array([1.0])}, {"w": np.array([0.5])}, adam_init({"w": np.zeros(1)}), 0.1)
    >>> p["w"].round(6).tolist(), s.step   # first step moves by ~ η sign(g)
    ([0.9], 1)
    """
    t = state.step + 1
    c1 = 1.0 - beta1**t
    c2 = 1.0 - beta2**t
    new_params, new_m, new_v = {}, {}, {}
    for key, theta in params.items():
        g = grads[key]
        if np.shape(g) != theta.shape:
            raise ValueError(f"grads[{key!r}] must have the shape of params[{key!r}], {theta.shape}; got {np.shape(g)}")
        dtype = theta.dtype
        m = (beta1 * state.m[key] + (1.0 - beta1) * g).astype(dtype, copy=False)
        v = (beta2 * state.v[key] + (1.0 - beta2) * (g * g)).astype(dtype, copy=False)
        step = (learning_rate / c1) * m / (np.sqrt(v / c2) + eps)
        new_params[key] = (theta - step).astype(dtype, copy=False)
        new_m[key], new_v[key] = m, v
    return new_params, AdamState(m=new_m, v=new_v, step=t)


def clip_by_global_norm(grads: Mapping[str, np.ndarray], max_norm: float | None) -> tuple[dict[str, np.ndarray], float]:
    """Scale all gradients by ``min(1, max_norm/‖g‖)`` (global norm); return them and ‖g‖.

    References
    ----------
    Pascanu, Mikolov & Bengio (2013); applied to the gradient of paper eq. (12).

    Examples
    --------
    >>> g, norm = clip_by_global_norm({"a": np.array([3.0]), "b": np.array([4.0])}, 1.0)
    >>> norm, g["a"].tolist(), g["b"].tolist()
    (5.0, [0.6], [0.8])
    """
    norm = math.sqrt(sum(float(np.vdot(g, g)) for g in grads.values()))
    if max_norm is None or norm <= max_norm or not math.isfinite(norm):
        return dict(grads), norm
    scale = max_norm / norm
    return {k: (g * scale).astype(g.dtype, copy=False) for k, g in grads.items()}, norm


def schedule_value(schedule: str, step: int, peak: float, warmup_steps: int, max_steps: int) -> float:
    """Step size η_t of ``schedule`` at step ``t`` (0-based).

    ``constant``: η; ``warmup_constant``: η min(1, (t+1)/w);
    ``warmup_cosine``: the warm-up, then η (1 + cos(π (t − w)/(T − w)))/2 with
    T = ``max_steps`` (reaching 0 at the cap).

    References
    ----------
    Loshchilov & Hutter (2017) for the cosine decay; not specified by the paper
    (training of eq. 12).

    Examples
    --------
    >>> [round(schedule_value("warmup_cosine", t, 1.0, 10, 110), 3) for t in (0, 9, 10, 60, 110)]
    [0.1, 1.0, 1.0, 0.5, 0.0]
    >>> schedule_value("constant", 5, 0.1, 10, 100)
    0.1
    """
    check_choice("schedule", schedule, SCHEDULES)
    if schedule == "constant":
        return peak
    if step < warmup_steps:
        return peak * (step + 1) / warmup_steps
    if schedule == "warmup_constant":
        return peak
    span = max(max_steps - warmup_steps, 1)
    progress = min(max((step - warmup_steps) / span, 0.0), 1.0)
    return peak * 0.5 * (1.0 + math.cos(math.pi * progress))
