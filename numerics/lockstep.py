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
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence

import numpy as np

from .checkpoint import TrainingState, save_checkpoint
from .models import get_model
from .optim import adam_init, adam_update, clip_by_global_norm
from .train import (
    TrainConfig,
    TrainingDiverged,
    TrainProgress,
    TrainResult,
    _all_finite,
    _curve,
    _final_evaluation,
    evaluate,
    evaluation_batch,
    has_converged,
    learning_rate_at,
    random_streams,
)

__all__ = ["DATA_LAW_FIELDS", "ModelRun", "check_initial_params", "train_lockstep"]

#: the fields that fix the training batches (the data law of eqs. 1-6 and the batch stream)
DATA_LAW_FIELDS = ("task", "a", "b", "c_lambda", "c_omega", "d", "P", "k", "batch_size", "dtype", "seed")


def check_initial_params(model, config: TrainConfig, params: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``params`` as C-contiguous copies in the config's dtype, after checking names and shapes.

    Raises
    ------
    ValueError
        A missing or unknown parameter name, a wrong shape or a non-finite value (naming it).

    References
    ----------
    Paper eqs. (8)-(12) (the parameters).

    Examples
    --------
    >>> cfg = TrainConfig(model="linear", task="easy", d=2, N=2, P=4, start={"kind": "given"})
    >>> model = get_model("linear")
    >>> p = model.init_params(2, 2, 1, np.random.default_rng(0))
    >>> check_initial_params(model, cfg, p)["W_q"].dtype
    dtype('float32')
    """
    if not isinstance(params, Mapping):
        raise ValueError(f"initial_params must be a mapping of parameter name to array; got {type(params).__name__}")
    shapes = model.param_shapes(config.d, config.N, config.depth)
    if set(params) != set(shapes):
        raise ValueError(f"initial_params must have exactly the parameters {sorted(shapes)} of model "
                         f"{config.model!r}; got {sorted(params)}")
    out = {}
    for name, shape in shapes.items():
        value = np.require(np.asarray(params[name], dtype=config.numpy_dtype), requirements="C").copy()
        if value.shape != tuple(shape):
            raise ValueError(f"initial_params[{name!r}] must have shape {tuple(shape)} (d={config.d}, N={config.N}, "
                             f"depth={config.depth}); got {value.shape}")
        if not np.all(np.isfinite(value)):
            raise ValueError(f"initial_params[{name!r}] has non-finite values")
        out[name] = value
    return out


class ModelRun:
    """One model's training, advanced one batch at a time (:func:`train` and lockstep training share it).

    Everything a run owns lives here: its weights, Adam state, schedule, evaluations, convergence
    decision and curves; the batches come from outside (:meth:`draw_batch` draws the run's own
    next one), so several runs on one data stream see the same batches as each would alone
    (:func:`numerics.lockstep.train_lockstep`).

    Parameters
    ----------
    config : TrainConfig
    eval_batch : numerics.tasks.Batch, optional
        ``evaluation_batch(config)``, passed in by a caller that has drawn it.
    initial_params, resumed, checkpoint_dir, callback
        As in :func:`train` (``resumed``: ``_resume_point``'s value).

    References
    ----------
    Paper eq. (12).

    Examples
    --------
    >>> cfg = TrainConfig(model="linear", task="easy", d=2, N=2, P=8, batch_size=8, max_steps=4,
    ...                   eval_every=2, eval_size=8, warmup_steps=0)
    >>> run = ModelRun(cfg)
    >>> run.start()
    >>> while not run.done:
    ...     run.advance(run.draw_batch())
    >>> run.result().metrics["steps"]
    4
    """

    def __init__(self, config: TrainConfig, *, eval_batch=None, initial_params=None, resumed=None,
                 checkpoint_dir: str | None = None, callback=None) -> None:
        self.t_start, self.cpu_start = time.perf_counter(), time.process_time()
        self.config = config
        self.model = get_model(config.model)
        self.spectrum = config.spectrum()
        rng_init, self.rng_batches, _ = random_streams(config)
        if (initial_params is None) != (config.start is None):
            raise ValueError("initial_params and config.start go together: a warm start needs both its weights "
                             f"and their description; got initial_params {'absent' if initial_params is None else 'given'}"
                             f" and start={config.start!r}")
        self.ckpt = checkpoint_dir
        self.callback = callback
        self.on_eval = None
        self.eval_batch = evaluation_batch(config, self.spectrum) if eval_batch is None else eval_batch
        self.eval_steps: list[int] = []
        self.eval_losses: list[float] = []
        self.train_losses = np.full(config.max_steps, np.nan)
        self.last_good: int | None = None
        self.stopped_by_callback = False
        self.converged = False
        self.spent = (0.0, 0.0)  # wall and CPU seconds of earlier sessions of a resumed run
        if resumed is None:
            if initial_params is None:
                self.params = self.model.init_params(config.d, config.N, config.depth, rng_init,
                                                     dtype=config.numpy_dtype, **config.init_options)
            else:
                self.params = check_initial_params(self.model, config, initial_params)
            self.state = adam_init(self.params)
            self.first_step = 0
        else:
            self.params, training, curve = resumed
            self.state = training.adam
            self.rng_batches.bit_generator.state = training.rng_state
            self.first_step = training.steps
            self.train_losses[: self.first_step] = training.train_loss
            self.eval_steps += [int(step) for step in curve[:, 0]]
            self.eval_losses += [float(loss) for loss in curve[:, 1]]
            self.last_good = self.first_step
            self.spent = (training.elapsed, training.cpu_time)
        self.steps_done = self.first_step
        self.done = False

    def draw_batch(self):
        """The run's next training batch from its own stream (eqs. 1-6)."""
        from numerics.tasks import sample

        c = self.config
        return sample(c.task, self.spectrum, c.P, c.batch_size, self.rng_batches, k=c.k, dtype=c.numpy_dtype,
                      stream=c.stream)

    def _evaluate(self, step: int, train_loss: float) -> bool:
        with np.errstate(over="ignore", invalid="ignore"):
            loss = evaluate(self.model, self.params, self.eval_batch)
        if not math.isfinite(loss):
            raise TrainingDiverged(step, self.last_good, self.ckpt, "the evaluation loss")
        self.eval_steps.append(step)
        self.eval_losses.append(loss)
        if self.ckpt is not None:
            # everything the loop needs to continue from here exactly (``resume=True``)
            training = TrainingState(
                steps=step, adam=self.state, rng_state=self.rng_batches.bit_generator.state,
                train_loss=self.train_losses[:step].copy(), elapsed=self.spent[0] + time.perf_counter() - self.t_start,
                cpu_time=self.spent[1] + time.process_time() - self.cpu_start,
            )
            partial = {"step": step, "max_steps": self.config.max_steps, "eval_loss": loss, "complete": False}
            save_checkpoint(self.ckpt, self.config, self.params, partial,
                            {"loss_curve": _curve(self.eval_steps, self.eval_losses)}, training_state=training)
        self.last_good = step
        if self.on_eval is not None:
            self.on_eval(loss, train_loss)
        if self.callback is not None:
            info = TrainProgress(step, loss, train_loss, learning_rate_at(step, self.config), self.params)
            return bool(self.callback(info))
        return False

    def _has_converged(self) -> bool:
        return has_converged(np.asarray(self.eval_steps), np.asarray(self.eval_losses), self.config.tol,
                             self.config.window)

    def start(self) -> None:
        """The evaluation at step 0 (or, resumed, the convergence test the interrupt may have skipped)."""
        if self.first_step == 0 and not self.eval_steps:
            self.stopped_by_callback = self._evaluate(0, math.nan)
        elif self._has_converged():
            self.converged = True  # interrupted between the checkpoint and the convergence test
        self.done = self.stopped_by_callback or self.converged or self.steps_done >= self.config.max_steps

    def advance(self, batch) -> None:
        """One Adam step on ``batch``, then the evaluation and convergence test when one is due."""
        config, step = self.config, self.steps_done
        with np.errstate(over="ignore", invalid="ignore"):  # a non-finite loss is caught just below
            loss, grads = self.model.loss_and_grad(self.params, batch)
        loss = float(loss)
        if not math.isfinite(loss):
            raise TrainingDiverged(step, self.last_good, self.ckpt, "the training loss")
        if not _all_finite(grads):
            raise TrainingDiverged(step, self.last_good, self.ckpt, "the gradient")
        self.train_losses[step] = loss
        if config.frozen:  # zero gradients keep Adam's moments, hence the parameter, exactly at init
            grads = {name: (np.zeros_like(g) if name in config.frozen else g) for name, g in grads.items()}
        grads, _ = clip_by_global_norm(grads, config.grad_clip)
        self.params, self.state = adam_update(
            self.params, grads, self.state, learning_rate_at(step, config), config.beta1, config.beta2, config.eps
        )
        self.steps_done = done = step + 1
        if done % config.eval_every == 0 or done == config.max_steps:
            recent = float(np.mean(self.train_losses[max(0, done - config.eval_every) : done]))
            if self._evaluate(done, recent):
                self.stopped_by_callback = True
            elif self._has_converged():
                self.converged = True
        self.done = self.stopped_by_callback or self.converged or done >= config.max_steps

    def result(self) -> TrainResult:
        """The trained model evaluated on the held-out set (and saved to ``checkpoint_dir``)."""
        metrics, arrays = _final_evaluation(self.model, self.params, self.eval_batch, self.spectrum)
        arrays["loss_curve"] = _curve(self.eval_steps, self.eval_losses)
        steps_done, every = self.steps_done, self.config.eval_every
        arrays["train_loss"] = self.train_losses[:steps_done].copy()
        from theory import __version__

        metrics.update(
            complete=True,
            steps=steps_done,
            converged=self.converged,
            stopped_by_callback=self.stopped_by_callback,
            initial_eval_loss=self.eval_losses[0],
            best_eval_loss=float(min(self.eval_losses)),
            final_eval_loss=self.eval_losses[-1],
            final_train_loss=float(np.mean(self.train_losses[max(0, steps_done - every) : steps_done]))
            if steps_done
            else math.nan,
            label_variance=self.spectrum.label_variance,
            content_hash=self.config.content_hash(),
            package_version=__version__,
            wall_time=self.spent[0] + time.perf_counter() - self.t_start,
            cpu_time=self.spent[1] + time.process_time() - self.cpu_start,
            resumed_at=self.first_step,
        )
        result = TrainResult(config=self.config, params=self.params, metrics=metrics, arrays=arrays)
        if self.ckpt is not None:
            result.save(self.ckpt)
        return result


def _same_data_law(configs: Sequence[TrainConfig]) -> None:
    first = configs[0]
    for i, config in enumerate(configs[1:], start=1):
        for name in DATA_LAW_FIELDS + tuple(f for f in ("stream",) if hasattr(first, f)):
            if getattr(config, name) != getattr(first, name):
                raise ValueError(f"lockstep runs must share the data law: configs[{i}].{name} = "
                                 f"{getattr(config, name)!r} differs from configs[0].{name} = {getattr(first, name)!r}")


def train_lockstep(configs: Sequence[TrainConfig], *, initial_params: Sequence[Mapping | None] | None = None,
                   progress: bool = False) -> list:
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

    Returns
    -------
    list
        Per run, in order: its :class:`~numerics.train.TrainResult`, bitwise equal to
        ``train(config, initial_params=...)``, or the :class:`~numerics.train.TrainingDiverged`
        that stopped it.

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
    active = []
    for i, run in enumerate(runs):
        try:
            run.start()
        except TrainingDiverged as exc:
            out[i] = exc
            continue
        if not run.done:
            active.append(i)
    bar = tqdm(total=max(c.max_steps for c in configs), disable=not progress, desc=f"lockstep x{len(configs)}",
               unit="step")
    try:
        while active:
            batch = stream.draw_batch()
            for i in list(active):
                try:
                    runs[i].advance(batch)
                except TrainingDiverged as exc:
                    out[i] = exc
                    active.remove(i)
                    continue
                if runs[i].done:
                    active.remove(i)
            bar.update(1)
    finally:
        bar.close()
    for i, run in enumerate(runs):
        if out[i] is None:
            out[i] = run.result()
    return out
