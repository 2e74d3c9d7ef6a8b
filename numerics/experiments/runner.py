"""The one sweep runner: a training run, with the diagnostics the figures and the study read.

:func:`run` is :func:`numerics.experiments.sweep.run_sweep`'s default runner: the one-run runner of
:func:`~numerics.experiments.study.run.run_plan` (a one-run plan, as the regime study's regimes) and of the
reproduction, so one store serves them all and a run is trained once. A plan of cells runs
:func:`~numerics.experiments.study.run.run_cell`. A store
records its runner by name (:func:`numerics.experiments.sweep.runner_name`): keep its name and home.
"""

from __future__ import annotations

__all__ = ["run"]


def run(config):
    """Train ``config`` (a :class:`numerics.train.TrainConfig`) as :func:`numerics.train.run_config`.

    The :class:`numerics.train.TrainResult` carries the figure diagnostics too (per-context
    predictions, the top-1 attention-mass curve, selection errors), from the final evaluation.

    References
    ----------
    Paper eq. (12) (training), eqs. (83), (90)-(91) and Figs. 4c, 12, 13 (the diagnostics).

    Examples
    --------
    >>> import numpy as np
    >>> from numerics.train import TrainConfig, evaluation_batch
    >>> cfg = TrainConfig(model="nonlinear", task="easy", d=2, N=2, P=8, batch_size=8, max_steps=4,
    ...                   eval_every=2, eval_size=16, warmup_steps=0)
    >>> result = run(cfg)
    >>> result.arrays["top1_mass_curve"].shape, result.arrays["selection_error"].shape
    ((3, 2), (16,))
    >>> target = evaluation_batch(cfg).target.astype(float)
    >>> bool(np.isclose(np.mean((result.arrays["eval_prediction"] - target) ** 2), result.metrics["R_L"], rtol=1e-4))
    True
    """
    from numerics.train import run_config

    return run_config(config)
