"""Training several models on one data stream, in lockstep (paper eq. 12 for each).

A *run* (:class:`ModelRun`) owns one model's weights, Adam state, schedule, step cap,
evaluations and convergence decision and is advanced one batch at a time; :func:`numerics.train.train`
drives one run with its own batches. :func:`train_lockstep` drives ``K`` runs that share the data
law (task, spectrum, ``P``, ``k``, batch size, dtype) and the batch stream (``seed``): each step
draws one batch, and every run still going takes its Adam step on it. The batches are exactly
those each run would draw alone, so every run's result equals, bitwise, training it alone
(``tests/test_lockstep.py``); the sampler and the held-out set are paid once per group instead
of once per run, and the runs see common random numbers, which sharpens comparisons between
them (different starts or learning rates of one cell of a study). A run that has finished
(converged, stopped, at its cap) drops out; a run whose loss is not finite stops alone, with
its :class:`~numerics.train.TrainingDiverged` in its place of the result list.

With ``engine="jax"`` (every config of the group) the ``K`` runs are the candidates of one
:class:`~numerics.engines.jax_engine.JaxTrainer`: one jitted step, ``vmap``-ed over the candidates,
draws the shared batch on the device and takes every active candidate's Adam step; a finished
candidate stays in the vmapped state with its update masked. The runs must then also share one
shape and model (:data:`numerics.engines.jax_engine.GROUP_FIELDS`). Each run's result equals its
single JAX run's (same batches, same step) to round-off, not bitwise: XLA may fuse a vmapped
step differently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .train import ModelRun, TrainConfig, TrainingDiverged, evaluation_batch

__all__ = ["DATA_LAW_FIELDS", "train_lockstep"]

#: the fields that fix the training batches (the data law of eqs. 1-6 and the batch stream)
DATA_LAW_FIELDS = ("task", "a", "b", "c_lambda", "c_omega", "d", "P", "k", "batch_size", "dtype", "seed")


def _same_data_law(configs: Sequence[TrainConfig]) -> None:
    first = configs[0]
    for i, config in enumerate(configs[1:], start=1):
        for name in DATA_LAW_FIELDS + tuple(f for f in ("stream", "engine") if hasattr(first, f)):
            if getattr(config, name) != getattr(first, name):
                raise ValueError(f"lockstep runs must share the data law: configs[{i}].{name} = "
                                 f"{getattr(config, name)!r} differs from configs[0].{name} = {getattr(first, name)!r}")


def train_lockstep(configs: Sequence[TrainConfig], *, initial_params: Sequence[Mapping | None] | None = None,
                   progress: bool = False, on_done: Callable[[int, Any], None] | None = None) -> list:
    """Train the runs of ``configs`` on one shared batch per step (each as :func:`numerics.train.train` alone).

    Parameters
    ----------
    configs : sequence of TrainConfig
        Runs sharing :data:`DATA_LAW_FIELDS`; they may differ in everything else (model, depth,
        width, learning rate, schedule, step cap, start, evaluation set).
    initial_params : sequence of (mapping or None), optional
        Per run, the warm-start weights (with ``config.start`` describing them) or None.
    progress : bool
        A tqdm bar over the longest cap.
    on_done : callable, optional
        ``on_done(i, result)`` as soon as run ``i`` stops (its result as returned below), while the others
        go on: a caller keeps finished runs on disk, so an interrupt loses only the unfinished ones.

    Returns
    -------
    list
        Per run, in order: its :class:`~numerics.train.TrainResult` (with the diagnostics listed
        there), bitwise equal to ``train(config, initial_params=...)``, or the
        :class:`~numerics.train.TrainingDiverged` that stopped it.

    Raises
    ------
    ValueError
        Runs that differ in a field of the data law (naming it), an empty ``configs``,
        ``initial_params`` of another length.

    References
    ----------
    Paper eq. (12) (each run's loss), eqs. (1)-(6) (the shared batches).

    Examples
    --------
    >>> base = dict(model="linear", task="easy", d=2, N=2, P=8, batch_size=8, max_steps=6, eval_every=3,
    ...             eval_size=8, warmup_steps=0)
    >>> results = train_lockstep([TrainConfig(**base, learning_rate=1e-2), TrainConfig(**base, learning_rate=1e-3)])
    >>> [r.metrics["steps"] for r in results]
    [6, 6]
    """
    from tqdm.auto import tqdm

    configs = list(configs)
    if not configs or not all(isinstance(c, TrainConfig) for c in configs):
        raise ValueError("configs must be a non-empty sequence of TrainConfig")
    _same_data_law(configs)
    starts = [None] * len(configs) if initial_params is None else list(initial_params)
    if len(starts) != len(configs):
        raise ValueError(f"initial_params must have one entry per config ({len(configs)}); got {len(starts)}")
    eval_batches: dict = {}
    runs, out = [], [None] * len(configs)
    for i, (config, start) in enumerate(zip(configs, starts)):
        key = (config.eval_seed, config.eval_size, getattr(config, "stream", 1))
        if key not in eval_batches:  # one held-out set per evaluation seed, drawn once
            eval_batches[key] = evaluation_batch(config)
        runs.append(ModelRun(config, eval_batch=eval_batches[key], initial_params=start))
    stream = runs[0]  # every run's own batch stream is this one (same seed): draw from one of them
    jax_group = None
    if configs[0].engine == "jax":  # one vmapped device step for all candidates
        from .engines.jax_engine import JaxTrainer

        jax_group = JaxTrainer(configs, [run.params for run in runs], [run.state for run in runs])
        for i, run in enumerate(runs):
            run.attach_jax(jax_group, i)
    active = []
    def stopped(i: int, result) -> None:
        out[i] = result
        if on_done is not None:
            on_done(i, result)

    for i, run in enumerate(runs):
        try:
            run.start()
        except TrainingDiverged as exc:
            stopped(i, exc)
            continue
        if run.done:
            stopped(i, run.result())
        else:
            active.append(i)
    if jax_group is not None:
        for i in set(range(len(runs))) - set(active):
            jax_group.retire(i)  # stopped at its first evaluation: it reads no losses
    bar = tqdm(total=max(c.max_steps for c in configs), disable=not progress, desc=f"lockstep x{len(configs)}",
               unit="step")
    try:
        while active:
            if jax_group is not None:
                # the active runs advance together, so they are all at one step
                jax_group.step(runs[active[0]].steps_done, [i in active for i in range(len(runs))])
            else:
                batch = stream.draw_batch()
            for i in list(active):
                try:
                    if jax_group is not None:
                        runs[i].took_jax_step()
                    else:
                        runs[i].advance(batch)
                except TrainingDiverged as exc:
                    active.remove(i)
                    stopped(i, exc)
                    continue
                if runs[i].done:
                    active.remove(i)
                    stopped(i, runs[i].result())
            bar.update(1)
    finally:
        bar.close()
    return out
