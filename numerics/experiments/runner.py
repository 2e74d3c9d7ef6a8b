"""The one sweep runner: a training run, with the diagnostics the figures and the study read.

:func:`run` is the runner of every sweep of the package
(:func:`numerics.experiments.sweep.run_sweep`'s default; the reproduction, the regime
study and ``idepth study defaults`` use it, so one store serves them all and a run
is trained once whoever asks for it). It is :func:`numerics.train.run_config`: the
training result already carries what the paper's figures and the study read (per-context
predictions, the top-1 attention-mass curve, selection errors, ρ, ``m`` and ``A_1``;
listed in :class:`numerics.train.TrainResult`), measured in the final evaluation's one
pass over the held-out contexts. A store records its runner by name (``module.qualname``,
:func:`numerics.experiments.sweep.runner_name`), so this function keeps its name and home.
"""

from __future__ import annotations

__all__ = ["run"]


def run(config):
    """Train ``config`` as :func:`numerics.train.run_config` (no progress bar); the sweep's runner.

    Parameters
    ----------
    config : numerics.train.TrainConfig

    Returns
    -------
    numerics.train.TrainResult
        With the metrics and arrays listed there (figure diagnostics included).

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
