"""The one sweep runner: a training run plus the diagnostics the figures and the study need.

:func:`run` is the runner of every sweep of the package
(:func:`numerics.experiments.sweep.run_sweep`'s default; the reproduction, the regime
study and ``idepth study defaults`` use it, so one store serves them all and a run
is trained once whoever asks for it). It trains exactly like
:func:`numerics.train.run_config` (same config, same result, bitwise) and adds what
the paper's figures and the study need but a plain training result does not keep:

* ``top1_mass_curve`` (n_eval, 2): step and the top-1 attention mass of the
  test token, averaged over layers and over the first 256 held-out contexts,
  at every evaluation (paper Fig. 4c);
* ``selection_error`` (eval_size,): ``E_L(c) = ‖p̄_L(c) − p*‖²`` per held-out
  context, and its percentiles ``selection_Q(q)`` as metrics (paper eqs. 90-91, Fig. 13);
* context-update models: ``A1_example`` (P, P), layer 1's context attention
  on the first held-out context, the fitted ``rho`` of ``A_1 ≈ ρ I + (1 − ρ) J``
  (eq. 83, fitted on the first 512 held-out contexts) and the learned scalar
  ``m`` as metrics (Fig. 12);
* ``eval_prediction`` (eval_size,): ``ŷ_L`` on every held-out context (the regime
  study averages separately trained models on the common held-out set).

Linear attention has no softmax row: those entries are absent for it.

``cpu_time`` (metric) is the CPU time (:func:`time.process_time`) of the whole
call, training and these diagnostics, in the worker process; ``wall_time``
stays the training's.
"""

from __future__ import annotations

import math
import time

import numpy as np

__all__ = ["PROBE_CONTEXTS", "run"]

#: held-out contexts used for the top-1 attention mass during training
PROBE_CONTEXTS = 256


def run(config):
    """Train ``config`` (as :func:`numerics.train.run_config`) and add the figure diagnostics.

    Parameters
    ----------
    config : numerics.train.TrainConfig

    Returns
    -------
    numerics.train.TrainResult
        The training result with the extra metrics and arrays listed in the module docstring.

    References
    ----------
    Paper eq. (12) (training), eqs. (83), (90)-(91) and Figs. 4c, 12, 13 (the extras).

    Examples
    --------
    >>> from numerics.train import TrainConfig
    >>> cfg = TrainConfig(model="nonlinear", task="easy", d=2, N=2, P=8, batch_size=8, max_steps=4,
    ...                   eval_every=2, eval_size=16, warmup_steps=0)
    >>> result = run(cfg)
    >>> result.arrays["top1_mass_curve"].shape, result.arrays["selection_error"].shape
    ((3, 2), (16,))
    >>> from numerics.train import evaluation_batch
    >>> target = evaluation_batch(cfg).target.astype(float)
    >>> bool(np.isclose(np.mean((result.arrays["eval_prediction"] - target) ** 2), result.metrics["R_L"], rtol=1e-4))
    True
    """
    from numerics.diagnostics import fit_rho, selection_error, selection_quantiles
    from numerics.models import get_model
    from numerics.tasks import top_k_indices
    from numerics.train import TrainResult, evaluation_batch, train

    cpu_started = time.process_time()
    model = get_model(config.model)
    softmax = model.ATTENTION == "softmax"
    eval_batch = evaluation_batch(config)
    probe = eval_batch.slice(0, min(PROBE_CONTEXTS, config.eval_size))
    curve: list[tuple[float, float]] = []

    def record_top1(progress) -> bool:
        out = model.forward(progress.params, probe)
        mass = float(np.mean(np.max(np.asarray(out.attention, dtype=np.float64), axis=2)))
        curve.append((float(progress.step), mass))
        return False

    result = train(config, callback=record_top1 if softmax else None, _eval_batch=eval_batch)
    metrics = dict(result.metrics)
    arrays = dict(result.arrays)
    predictions = []
    if not softmax:
        for start in range(0, config.eval_size, 512):
            part = eval_batch.slice(start, start + 512)
            predictions.append(np.asarray(model.forward(result.params, part).prediction, dtype=np.float64))
    if softmax:
        arrays["top1_mass_curve"] = np.asarray(curve, dtype=np.float64).reshape(-1, 2)
        errors, first = [], None
        for start in range(0, config.eval_size, 512):
            part = eval_batch.slice(start, start + 512)
            out = model.forward(result.params, part)
            predictions.append(np.asarray(out.prediction, dtype=np.float64))
            k = 1 if config.task == "easy" else config.k
            selected = top_k_indices(part.context_x, part.test_x, k)
            errors.append(selection_error(out.attention, selected))
            if first is None:
                first = out
        errors = np.concatenate(errors)
        arrays["selection_error"] = errors
        levels = (0.5, 0.9, 0.95, 0.99)
        for q, value in zip(levels, selection_quantiles(errors, levels)):
            metrics[f"selection_Q({q:g})"] = float(value)
        if first is not None and first.context_attention is not None:
            A = np.asarray(first.context_attention, dtype=np.float64)
            arrays["A1_example"] = A[0]
            metrics["rho"] = fit_rho(A)
            metrics["m"] = float(np.asarray(result.params["m"]).reshape(-1)[0]) if "m" in result.params else math.nan
    arrays["eval_prediction"] = np.concatenate(predictions)
    metrics["cpu_time"] = time.process_time() - cpu_started
    return TrainResult(config=result.config, params=result.params, metrics=metrics, arrays=arrays)
