"""Training the paper's models to convergence (paper eq. (12): R_L = E[(ŷ_L − y*)²]).

CONTRACT (shared with numerics/experiments/sweep.py -- keep these names):

* ``TrainConfig`` -- frozen dataclass describing one run; ``to_dict()`` gives a
  JSON-able dict, ``TrainConfig.from_dict(d)`` rebuilds it and raises ValueError
  on an unknown key or a wrongly typed value.
* ``run_config(config) -> TrainResult`` -- train one model as configured and
  evaluate it; deterministic for a given config (seed inside the config).
* ``TrainResult`` -- frozen dataclass with ``metrics`` (dict of JSON scalars:
  at least ``R_L``, ``A_L``, ``C_L``, ``steps``, ``converged``) and ``arrays``
  (dict of numpy arrays: at least ``loss_curve``, ``layer_errors``,
  ``modewise_loss``), plus ``params`` (the trained weights).

What a run does
---------------
The paper trains "until the loss has converged" (after eq. (12)) and states no
optimiser, schedule, initialisation or step budget; everything below is this
package's choice (see *Defaults*).

* **Online data.** Every step draws a fresh batch of contexts with
  :func:`numerics.tasks.sample` from a :class:`numpy.random.Generator` seeded
  from ``config.seed`` through :class:`numpy.random.SeedSequence`
  (``spawn_key=(0,)``: initial weights, ``(1,)``: training batches). The
  evaluation set is drawn once, from ``config.eval_seed`` with
  ``spawn_key=(2,)``, so it is disjoint in stream from the training data and
  identical for every depth and training seed (paired comparisons across L).
  Runs are bitwise reproducible for a given config (single-threaded BLAS).
* **Adam** (Kingma & Ba 2015, bias-corrected) on the mean squared error of
  eq. (12), with optional global-norm gradient clipping.
* **Schedule** (``config.schedule``; ``warmup_steps`` = w, ``max_steps`` = T):

  - ``"constant"``: ``η_t = η``;
  - ``"warmup_constant"``: ``η_t = η min(1, (t + 1)/w)``;
  - ``"warmup_cosine"``: linear warm-up as above, then
    ``η_t = η (1 + cos(π (t − w)/(T − w)))/2``, decaying to 0 at the step cap.

* **Convergence.** The loss on the fixed evaluation set is measured every
  ``eval_every`` steps. The run has *converged* when the evaluation loss has
  not improved on its best value by a relative ``tol`` during the last
  ``window`` steps; it stops then, or at the cap ``max_steps``
  (``metrics["converged"]`` says which).
* **Divergence.** A NaN/inf training or evaluation loss stops the run with
  :class:`TrainingDiverged` naming the step; the last good checkpoint in
  ``checkpoint_dir`` (written at every evaluation) is left untouched.
* **Result.** The trained weights are evaluated on the evaluation set, in one
  pass of :func:`numerics.diagnostics.diagnose_batch`: ``R_L``, ``A_L``, ``C_L``
  of the exact decomposition ``R_L = C_L + (A_L − C_L)/L`` (eqs. 61-63, through
  :func:`theory.decomposition.decompose`), per-layer errors ``E e_ℓ²``, the
  mode-wise loss, the per-context predictions and, for the softmax models, the
  selection errors (eqs. 90-91) and ρ (eq. 83); every evaluation also records the
  top-1 attention mass on the first :data:`PROBE_CONTEXTS` held-out contexts
  (Fig. 4c). :class:`TrainResult` lists them.

Checkpoints
-----------
A checkpoint directory holds ``params.npz`` (weights), ``arrays.npz`` (loss
curves, per-layer and mode-wise errors), ``config.json`` and
``metrics.json``. Each file is written atomically (temporary file in the same
directory, ``fsync``, :func:`os.replace`) and ``metrics.json`` is written last
with the SHA-256 of the other three, so a checkpoint interrupted between two
files is detected on load instead of being read as a mixture.

Defaults
--------
Each model module's ``TRAIN_DEFAULTS`` holds its learning rate; initial weights are the
model's own ``INIT_DEFAULTS`` (``W_q^ℓ, W_k^ℓ = sqrt(κ)(I + 0.1 G/sqrt(N))``, orthonormal ``W_x``,
``W_v = I``, ``g = W_o W_v W_y = 1``) except that the linear model starts at ``κ = N/c_λ``
(:func:`numerics.models.linear.stable_qk_scale`, the stable one-step value of eq. 33).
Schedule ``warmup_cosine`` (100 warm-up steps), batch 128, Adam (0.9, 0.999, 1e-8), no
clipping. The measurements behind these choices are in ``benchmarks/README.md`` (*Training
defaults*). Prefer ``N > d`` for the softmax models: LayerNorm's centring removes the direction
of ``W_x^+ 1`` from the inputs, which at ``N = d`` lies inside the input space.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np


from .checkpoint import TRAINING_STATE_FILE, TrainingState, read_checkpoint, read_training_state, save_checkpoint
from .diagnostics import context_diagnostics, diagnose_batch, selection_percentiles
from .config import DTYPES, TASKS, TrainConfig
from .models import check_initial_params, chunk_size, get_model
from .optim import SCHEDULES, AdamState, adam_init, adam_update, clip_by_global_norm, schedule_value
from .progress import format_value

__all__ = [
    "SCHEDULES",
    "TASKS",
    "DTYPES",
    "PROBE_CONTEXTS",
    "CONTEXT_BLOCK",
    "TrainConfig",
    "TrainResult",
    "TrainProgress",
    "TrainingDiverged",
    "AdamState",
    "adam_init",
    "adam_update",
    "clip_by_global_norm",
    "learning_rate_at",
    "has_converged",
    "train",
    "ModelRun",
    "run_config",
    "evaluate",
    "evaluation_batch",
    "random_streams",
    "chunk_size",
    "save_checkpoint",
]

_SEED_INIT, _SEED_TRAIN, _SEED_EVAL = 0, 1, 2

#: held-out contexts (the first ones) on which every evaluation measures the top-1 attention mass
PROBE_CONTEXTS = 256
#: contexts per forward pass of the per-context results (``eval_prediction``, ``selection_error``,
#: ``A1_example``; ``rho`` is fitted on the first block). The final evaluation's one pass gives
#: them when its chunks are these blocks; otherwise they are recomputed in these blocks, since a
#: forward pass is equal only to round-off across chunkings and stored results must not move.
CONTEXT_BLOCK = 512


def learning_rate_at(step: int, config: TrainConfig) -> float:
    """Step size η_t of ``config.schedule`` at step ``t`` (0-based); see :func:`numerics.optim.schedule_value`.

    References
    ----------
    Loshchilov & Hutter (2017) for the cosine decay; not specified by the paper.

    Examples
    --------
    >>> cfg = TrainConfig(model="linear", d=2, N=2, P=4, learning_rate=1.0, warmup_steps=10, max_steps=110)
    >>> [round(learning_rate_at(t, cfg), 3) for t in (0, 9, 10, 60, 110)]
    [0.1, 1.0, 1.0, 0.5, 0.0]
    """
    return schedule_value(config.schedule, step, config.learning_rate, config.warmup_steps, config.max_steps)


def has_converged(eval_steps: np.ndarray, eval_losses: np.ndarray, tol: float, window: int) -> bool:
    """True when the loss has not improved on its running best by a relative ``tol`` for ``window`` steps.

    The running best is updated only by an improvement larger than ``tol``
    relative (``loss < best (1 − tol)``); the run has converged once the last
    such improvement is at least ``window`` steps old.

    References
    ----------
    The paper's "trained until the loss has converged" (after eq. 12), made operational.

    Examples
    --------
    >>> has_converged(np.array([0, 100, 200, 300]), np.array([5.0, 1.0, 0.9999, 0.9998]), 1e-3, 200)
    True
    >>> has_converged(np.array([0, 100, 200, 300]), np.array([5.0, 1.0, 0.9, 0.8]), 1e-3, 200)
    False
    """
    last = _last_improvement(eval_steps, eval_losses, tol)
    return last is not None and int(eval_steps[-1]) - last >= window


def _last_improvement(eval_steps: np.ndarray, eval_losses: np.ndarray, tol: float) -> int | None:
    best, at = math.inf, None
    for s, loss in zip(eval_steps, eval_losses):
        if loss < best * (1.0 - tol) or at is None:
            best, at = float(loss), int(s)
    return at


# --------------------------------------------------------------------------- results


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; names the step and the last good checkpoint.

    Attributes
    ----------
    step : int
        Step at which the non-finite loss appeared.
    last_good_step : int or None
        Step of the last checkpoint written (``None`` if none was).
    checkpoint_dir : str or None
        Where that checkpoint is.

    References
    ----------
    Loss of paper eq. (12).

    Examples
    --------
    >>> str(TrainingDiverged(7, 5, None))
    'training diverged at step 7: the loss is not finite (last good evaluation at step 5; no checkpoint_dir given)'
    """

    def __init__(self, step: int, last_good_step: int | None, checkpoint_dir: str | None, what: str = "the loss") -> None:
        self.step = step
        self.last_good_step = last_good_step
        self.checkpoint_dir = checkpoint_dir
        where = f"checkpoint kept in {checkpoint_dir}" if checkpoint_dir else "no checkpoint_dir given"
        good = "none" if last_good_step is None else f"step {last_good_step}"
        super().__init__(f"training diverged at step {step}: {what} is not finite (last good evaluation at {good}; {where})")


@dataclass(frozen=True)
class TrainProgress:
    """What the ``callback`` of :func:`train` receives at every evaluation.

    References
    ----------
    Loss of paper eq. (12).

    Examples
    --------
    >>> TrainProgress(step=0, eval_loss=1.0, train_loss=float("nan"), learning_rate=0.0, params={}).step
    0
    """

    step: int
    eval_loss: float
    train_loss: float
    learning_rate: float
    params: Mapping[str, np.ndarray]


@dataclass(frozen=True, eq=False)
class TrainResult:
    """A trained model with its config, scalar metrics and arrays.

    Attributes
    ----------
    config : TrainConfig
    params : dict of str to ndarray
        Trained weights (keys of the model's ``init_params``).
    metrics : dict of str to JSON scalar
        ``R_L``, ``A_L``, ``C_L`` (NaN for L = 1) and their standard errors
        ``R_L_se``, ``A_L_se``, ``C_L_se`` on the evaluation set; ``steps``,
        ``converged``, ``wall_time`` and ``cpu_time`` (s: wall clock and
        :func:`time.process_time` of the whole run -- drawing the held-out set,
        training, evaluations and the final diagnostics -- summed over the
        sessions of a resumed run; in lockstep training a run's clocks also
        count the steps of the other runs of its group),
        ``resumed_at`` (the step a resumed run continued from; 0 otherwise),
        ``final_train_loss`` (mean over the
        last ``eval_every`` steps), ``initial_eval_loss``, ``best_eval_loss``,
        ``final_eval_loss`` (the last curve point), ``label_variance``,
        ``top1_attention_mass`` (mean over layers; NaN for linear attention),
        ``content_hash``, ``package_version``, ``complete`` (True; the
        intermediate checkpoints written during training hold only ``step``,
        ``max_steps``, ``eval_loss`` and ``complete = False``, plus the training
        state that ``train(..., resume=True)`` continues from). Softmax models
        also: ``selection_Q(q)`` for q = 0.5, 0.9, 0.95, 0.99, the percentiles of
        ``selection_error`` (eq. 91); context-update models also ``rho``, ρ of
        ``A_1 ≈ ρ I + (1 − ρ) J`` fitted on the first :data:`CONTEXT_BLOCK`
        held-out contexts (eq. 83), and ``m``, the learned scalar of ``M(m)``.
    arrays : dict of str to ndarray
        ``loss_curve`` (n_eval, 2): columns step, evaluation loss;
        ``train_loss`` (steps,): per-step training loss;
        ``layer_errors`` (L,): E e_ℓ²; ``top1_attention_mass`` (L,);
        ``modewise_loss`` (d,): ω_k E ẽ_k² (sums to the loss, see
        :func:`numerics.diagnostics.modewise_loss`);
        ``modewise_loss_normalised`` (d,): divided by ω_k E t̃_k²;
        ``eval_prediction`` (eval_size,): ``ŷ_L`` on every held-out context.
        Softmax models also: ``top1_mass_curve`` (n_eval, 2): step and the top-1
        attention mass of the test token, averaged over layers and over the first
        :data:`PROBE_CONTEXTS` held-out contexts, at every evaluation (Fig. 4c);
        ``selection_error`` (eval_size,): ``E_L(c) = ‖p̄_L(c) − p*‖²`` per held-out
        context (eq. 90, Fig. 13). Context-update models also ``A1_example``
        (P, P): layer 1's context attention on the first held-out context (Fig. 12).

    References
    ----------
    Paper eqs. (12), (61)-(63).

    Examples
    --------
    >>> cfg = TrainConfig(model="linear", task="easy", d=2, N=2, P=4, max_steps=3, eval_size=8, batch_size=4)
    >>> result = TrainResult(cfg, {"w": np.zeros(2)}, {"R_L": 1.0}, {})
    >>> result.metrics["R_L"]
    1.0
    """

    config: TrainConfig
    params: Mapping[str, np.ndarray]
    metrics: Mapping[str, Any]
    arrays: Mapping[str, np.ndarray] = field(default_factory=dict)

    def save(self, directory: str | os.PathLike) -> Path:
        """Write the checkpoint files atomically into ``directory`` (created if missing).

        Returns the directory. See the module docstring for the layout.

        Examples
        --------
        >>> import tempfile
        >>> cfg = TrainConfig(model="linear", task="easy", d=2, N=2, P=4)
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     _ = TrainResult(cfg, {"w": np.arange(2.0)}, {"R_L": 0.5}, {}).save(tmp)
        ...     TrainResult.load(tmp).params["w"].tolist()
        [0.0, 1.0]
        """
        return save_checkpoint(directory, self.config, self.params, self.metrics, self.arrays)

    @classmethod
    def load(cls, directory: str | os.PathLike) -> "TrainResult":
        """Read a checkpoint written by :meth:`save`, checking it is complete and consistent.

        Raises FileNotFoundError if a file is missing and ValueError if the
        files do not belong together (an interrupted save).

        Examples
        --------
        See :meth:`save`.
        """
        config_data, params, metrics, arrays = read_checkpoint(directory)
        config = TrainConfig.from_dict(config_data)
        return cls(config=config, params=params, metrics=metrics, arrays=arrays)


# --------------------------------------------------------------------------- training


def random_streams(config: TrainConfig) -> tuple[np.random.Generator, np.random.Generator, np.random.Generator]:
    """Independent streams of a run: initial weights, training batches, the evaluation set.

    ``SeedSequence(config.seed, spawn_key=(0,))`` and ``(1,)``, and
    ``SeedSequence(config.eval_seed, spawn_key=(2,))`` (see the module docstring).

    References
    ----------
    Paper eqs. (1)-(6) (the data the streams draw).

    Examples
    --------
    >>> cfg = TrainConfig(model="linear", d=2, N=2, P=4)
    >>> a, b, c = random_streams(cfg)
    >>> a.random() != b.random()
    True
    """
    init = np.random.default_rng(np.random.SeedSequence(config.seed, spawn_key=(_SEED_INIT,)))
    batches = np.random.default_rng(np.random.SeedSequence(config.seed, spawn_key=(_SEED_TRAIN,)))
    evaluation = np.random.default_rng(np.random.SeedSequence(config.eval_seed, spawn_key=(_SEED_EVAL,)))
    return init, batches, evaluation


def evaluation_batch(config: TrainConfig, spectrum=None):
    """The fixed held-out evaluation set of ``config`` (``eval_size`` contexts from ``eval_seed``).

    ``spectrum``: ``config.spectrum()``, passed in by a caller that has built it already
    (a run builds its spectrum once).

    References
    ----------
    Paper eqs. (1)-(6).

    Examples
    --------
    >>> cfg = TrainConfig(model="linear", task="easy", d=2, N=2, P=4, eval_size=3)
    >>> evaluation_batch(cfg).context_x.shape
    (3, 4, 2)
    """
    from numerics.tasks import sample

    rng = random_streams(config)[2]
    spectrum = config.spectrum() if spectrum is None else spectrum
    return sample(config.task, spectrum, config.P, config.eval_size, rng, k=config.k, dtype=config.numpy_dtype,
                  stream=config.stream)


def evaluate(model, params: Mapping[str, np.ndarray], batch, chunk: int | None = None) -> float:
    """Mean squared error ``mean((ŷ_L − y*)²)`` of ``params`` on ``batch`` (eq. 12), accumulated in float64.

    References
    ----------
    Paper eq. (12).

    Examples
    --------
    >>> from numerics.models import get_model
    >>> cfg = TrainConfig(model="linear", task="easy", d=2, N=2, P=4, eval_size=5)
    >>> model = get_model("linear")
    >>> params = model.init_params(2, 2, 1, np.random.default_rng(0))
    >>> evaluate(model, params, evaluation_batch(cfg)) >= 0
    True
    """
    total, count = 0.0, 0
    n = batch.target.shape[0]
    chunk = chunk_size(model, params, batch) if chunk is None else chunk
    for start in range(0, n, chunk):
        part = batch.slice(start, start + chunk)
        prediction = np.asarray(model.forward(params, part).prediction, dtype=np.float64)
        total += float(np.sum((prediction - part.target.astype(np.float64)) ** 2))
        count += prediction.shape[0]
    return total / count


def _all_finite(grads: Mapping[str, np.ndarray]) -> bool:
    return all(bool(np.all(np.isfinite(g))) for g in grads.values())


def train(
    config: TrainConfig,
    *,
    progress: bool = False,
    checkpoint_dir: str | os.PathLike | None = None,
    callback: Callable[[TrainProgress], object] | None = None,
    resume: bool = False,
    initial_params: Mapping[str, np.ndarray] | None = None,
) -> TrainResult:
    """Train ``config.model`` online with Adam until convergence or ``max_steps`` (eq. 12).

    Parameters
    ----------
    config : TrainConfig
    progress : bool
        Show a tqdm progress bar with the evaluation and training losses.
    checkpoint_dir : path or None
        If given, a checkpoint is written there (atomically) at every
        evaluation and at the end; after divergence the last good one stays.
    callback : callable or None
        Called with a :class:`TrainProgress` at every evaluation (step 0
        included); a truthy return value stops training (``converged`` False).
    resume : bool
        Continue from the intermediate checkpoint in ``checkpoint_dir`` (the
        last evaluation before an interrupt): weights, Adam state, batch
        generator, curves. The result equals that of an uninterrupted run of
        the same config, bitwise. Without a checkpoint there, training starts
        from step 0.
    initial_params : mapping of str to ndarray, optional
        Start from these weights instead of the model's ``init_params`` (a warm
        start); ``config.start`` must then describe them (it enters the content hash).

    Returns
    -------
    TrainResult

    Raises
    ------
    TrainingDiverged
        When a training or evaluation loss (or gradient) is NaN or infinite.
    ValueError
        ``resume`` with a checkpoint of another config, a finished checkpoint
        or one without a training state; ``initial_params`` without ``config.start``
        (or the reverse) or of the wrong names or shapes.

    References
    ----------
    Paper eq. (12) and "all models are trained until the loss has converged";
    decomposition eqs. (61)-(63).

    Examples
    --------
    >>> cfg = TrainConfig(model="linear", task="easy", d=2, N=2, P=8, depth=1, batch_size=8,
    ...                   max_steps=20, eval_every=10, eval_size=16, warmup_steps=0)
    >>> result = train(cfg)
    >>> result.metrics["steps"], result.arrays["loss_curve"].shape
    (20, (3, 2))
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig; got {type(config).__name__}")
    from tqdm.auto import tqdm

    ckpt = None if checkpoint_dir is None else str(checkpoint_dir)
    if resume and ckpt is None:
        raise ValueError("resume=True needs the checkpoint_dir to resume from")
    resumed = _resume_point(ckpt, config) if resume else None
    run = ModelRun(config, initial_params=initial_params, resumed=resumed, checkpoint_dir=ckpt, callback=callback)
    bar = tqdm(total=config.max_steps, initial=run.first_step, disable=not progress,
               desc=f"{config.model} {config.task} L={config.depth}", unit="step")
    # no training loss exists at the evaluation of step 0: "train=–" until one does
    run.on_eval = lambda loss, train_loss: bar.set_postfix(eval=format_value(loss), train=format_value(train_loss),
                                                           refresh=False)
    try:
        run.start()
        while not run.done:
            run.advance(run.draw_batch())
            bar.update(1)
    finally:
        bar.close()
    return run.result()


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
        # the top-1 mass is defined for a softmax row only (Fig. 4c)
        softmax = self.model.ATTENTION == "softmax"
        self.probe = self.eval_batch.slice(0, min(PROBE_CONTEXTS, config.eval_size)) if softmax else None
        self.eval_steps: list[int] = []
        self.eval_losses: list[float] = []
        self.top1_curve: list[tuple[float, float]] = []
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
                self.params = check_initial_params(self.model, initial_params, config.d, config.N, config.depth, config.numpy_dtype)
            self.state = adam_init(self.params)
            self.first_step = 0
        else:
            self.params, training, curve, top1_curve = resumed
            self.state = training.adam
            self.rng_batches.bit_generator.state = training.rng_state
            self.first_step = training.steps
            self.train_losses[: self.first_step] = training.train_loss
            self.eval_steps += [int(step) for step in curve[:, 0]]
            self.eval_losses += [float(loss) for loss in curve[:, 1]]
            if self.probe is not None:  # NaN where a checkpoint of an older version kept no curve
                top1_curve = np.column_stack([curve[:, 0], np.full(len(curve), np.nan)]) if top1_curve is None else top1_curve
                self.top1_curve += [(float(step), float(mass)) for step, mass in top1_curve]
            self.last_good = self.first_step
            self.spent = (training.elapsed, training.cpu_time)
        self.steps_done = self.first_step
        self.done = False
        self._jax = None  # (JaxTrainer, index) once the JAX engine holds the weights (engine="jax")

    def draw_batch(self):
        """The run's next training batch from its own stream (eqs. 1-6); None for the JAX engine, which draws its own."""
        from numerics.tasks import sample

        c = self.config
        if c.engine == "jax":
            return None
        return sample(c.task, self.spectrum, c.P, c.batch_size, self.rng_batches, k=c.k, dtype=c.numpy_dtype,
                      stream=c.stream)

    def _evaluate(self, step: int, train_loss: float) -> bool:
        with np.errstate(over="ignore", invalid="ignore"):
            loss = evaluate(self.model, self.params, self.eval_batch)
        if not math.isfinite(loss):
            raise TrainingDiverged(step, self.last_good, self.ckpt, "the evaluation loss")
        self.eval_steps.append(step)
        self.eval_losses.append(loss)
        if self.probe is not None:
            attention = np.asarray(self.model.forward(self.params, self.probe).attention, dtype=np.float64)
            self.top1_curve.append((float(step), float(np.mean(np.max(attention, axis=2)))))
        if self.ckpt is not None:
            # everything the loop needs to continue from here exactly (``resume=True``)
            training = TrainingState(
                steps=step, adam=self.state, rng_state=self.rng_batches.bit_generator.state,
                train_loss=self.train_losses[:step].copy(), elapsed=self.spent[0] + time.perf_counter() - self.t_start,
                cpu_time=self.spent[1] + time.process_time() - self.cpu_start,
            )
            partial = {"step": step, "max_steps": self.config.max_steps, "eval_loss": loss, "complete": False}
            save_checkpoint(self.ckpt, self.config, self.params, partial, self._curves(), training_state=training)
        self.last_good = step
        if self.on_eval is not None:
            self.on_eval(loss, train_loss)
        if self.callback is not None:
            info = TrainProgress(step, loss, train_loss, learning_rate_at(step, self.config), self.params)
            return bool(self.callback(info))
        return False

    def _curves(self) -> dict[str, np.ndarray]:
        curves = {"loss_curve": _curve(self.eval_steps, self.eval_losses)}
        if self.probe is not None:
            curves["top1_mass_curve"] = np.asarray(self.top1_curve, dtype=np.float64).reshape(-1, 2)
        return curves

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
        """One Adam step on ``batch``, then the evaluation and convergence test when one is due.

        With ``config.engine == "jax"`` the batch is drawn inside the JAX engine's step (``batch`` is
        None, :meth:`draw_batch`'s value) and the step runs on JAX's device.
        """
        if self.config.engine == "jax":
            self.jax_trainer().step(self.steps_done)
            self.took_jax_step()
            return
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
        self._finish_step(step + 1)

    def jax_trainer(self):
        """The JAX engine holding this run's weights on the device (a group of one unless :meth:`attach_jax` gave one)."""
        if self._jax is None:
            from .engines.jax_engine import JaxTrainer

            self._jax = (JaxTrainer([self.config], [self.params], [self.state]), 0)
        return self._jax[0]

    def attach_jax(self, trainer, index: int) -> None:
        """Let candidate ``index`` of a lockstep :class:`~numerics.engines.jax_engine.JaxTrainer` hold this run's weights."""
        self._jax = (trainer, index)

    def took_jax_step(self) -> None:
        """Bookkeeping after the JAX engine took this run's step ``steps_done`` (the evaluation when one is due)."""
        self._finish_step(self.steps_done + 1)

    def _pull_jax(self) -> None:
        """Weights, Adam state and training losses from the JAX device; a non-finite step raises TrainingDiverged."""
        trainer, index = self._jax
        steps, losses, finite = trainer.pull_losses(index)
        self.train_losses[steps] = losses
        if not finite.all():
            bad = int(steps[np.argmin(finite)])
            trainer.retire(index)
            raise TrainingDiverged(bad, self.last_good, self.ckpt, "the training loss or gradient")
        self.params, self.state = trainer.weights(index), trainer.adam_state(index)

    def _finish_step(self, done: int) -> None:
        config = self.config
        self.steps_done = done
        if done % config.eval_every == 0 or done == config.max_steps:
            if self._jax is not None:
                self._pull_jax()
            recent = float(np.mean(self.train_losses[max(0, done - config.eval_every) : done]))
            if self._evaluate(done, recent):
                self.stopped_by_callback = True
            elif self._has_converged():
                self.converged = True
        self.done = self.stopped_by_callback or self.converged or done >= config.max_steps
        if self.done and self._jax is not None:
            self._jax[0].retire(self._jax[1])

    def result(self) -> TrainResult:
        """The trained model evaluated on the held-out set, in one diagnostics pass (and saved to ``checkpoint_dir``).

        The per-context results take a second pass only where the final evaluation's chunks are not
        :data:`CONTEXT_BLOCK` blocks (see there).
        """
        chunk = chunk_size(self.model, self.params, self.eval_batch)
        diag = diagnose_batch(self.model, self.params, self.eval_batch, self.spectrum, chunk=chunk)
        n = self.config.eval_size
        per_context = diag if min(chunk, n) == min(CONTEXT_BLOCK, n) else context_diagnostics(
            self.model, self.params, self.eval_batch, chunk=CONTEXT_BLOCK)
        metrics, arrays = _final_evaluation(diag)
        curves = self._curves()
        arrays["loss_curve"] = curves.pop("loss_curve")
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
        if self.probe is not None:  # the softmax row's diagnostics (Figs. 4c, 12, 13; eqs. 83, 90-91)
            metrics.update(selection_percentiles(per_context.selection_error))
            arrays.update(curves, selection_error=per_context.selection_error)
            if per_context.A1_example is not None:
                metrics.update(rho=float(np.mean(per_context.context_rho[:CONTEXT_BLOCK])), m=diag.m)
                arrays["A1_example"] = per_context.A1_example
        arrays["eval_prediction"] = per_context.prediction
        result = TrainResult(config=self.config, params=self.params, metrics=metrics, arrays=arrays)
        if self.ckpt is not None:
            result.save(self.ckpt)
        return result


def _resume_point(ckpt: str, config: TrainConfig):
    """``(params, TrainingState, loss_curve, top1_mass_curve or None)`` of the checkpoint in ``ckpt``; None if none."""
    from .checkpoint import checkpoint_status

    status = checkpoint_status(ckpt)
    if status is None:
        if Path(ckpt).is_dir() and any(Path(ckpt).iterdir()):
            raise ValueError(f"cannot resume: {ckpt!r} holds no checkpoint (no readable metrics.json)")
        return None
    config_data, params, metrics, arrays = read_checkpoint(ckpt)
    stored = TrainConfig.from_dict(config_data)
    if stored.content_hash() != config.content_hash():
        differing = [f.name for f in dataclasses.fields(TrainConfig) if getattr(stored, f.name) != getattr(config, f.name)]
        detail = f"differs in {', '.join(differing)}" if differing else "was written by another package version"
        raise ValueError(f"cannot resume: the checkpoint in {ckpt!r} is of another config ({detail}); "
                         "give the same options as the interrupted run")
    if metrics.get("complete"):
        raise ValueError(f"cannot resume: the checkpoint in {ckpt!r} is of a finished run (nothing to continue)")
    training = read_training_state(ckpt)
    if training is None:
        raise ValueError(f"cannot resume: the checkpoint in {ckpt!r} has no training state "
                         f"({TRAINING_STATE_FILE} is missing; written by an older version?)")
    top1 = arrays.get("top1_mass_curve")
    top1 = None if top1 is None else np.asarray(top1, dtype=np.float64).reshape(-1, 2)
    return params, training, np.asarray(arrays["loss_curve"], dtype=np.float64).reshape(-1, 2), top1


def _curve(steps: list[int], losses: list[float]) -> np.ndarray:
    return np.column_stack([np.asarray(steps, dtype=np.float64), np.asarray(losses, dtype=np.float64)]).reshape(-1, 2)


def _final_evaluation(diag) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    metrics = {
        "R_L": diag.R_L,
        "A_L": diag.A_L,
        "C_L": diag.C_L,
        "R_L_se": diag.R_L_se,
        "A_L_se": diag.A_L_se,
        "C_L_se": diag.C_L_se,
        "top1_attention_mass": float(np.mean(diag.top1_attention_mass)),
    }
    arrays = {
        "layer_errors": np.asarray(diag.layer_errors, dtype=np.float64),
        "top1_attention_mass": np.asarray(diag.top1_attention_mass, dtype=np.float64),
        "modewise_loss": np.asarray(diag.modewise_loss, dtype=np.float64),
        "modewise_loss_normalised": np.asarray(diag.modewise_loss_normalised, dtype=np.float64),
    }
    return metrics, arrays


def run_config(config: TrainConfig) -> TrainResult:
    """Train and evaluate one configured run (the sweep layer's entry point; no progress bar).

    References
    ----------
    Paper eq. (12).

    Examples
    --------
    >>> cfg = TrainConfig(model="linear", task="easy", d=2, N=2, P=8, batch_size=8, max_steps=5,
    ...                   eval_every=5, eval_size=8, warmup_steps=0)
    >>> sorted({"R_L", "A_L", "C_L", "steps", "converged"} - set(run_config(cfg).metrics))
    []
    """
    return train(config, progress=False)
