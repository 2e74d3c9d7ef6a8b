"""Training the paper's models to convergence (paper eq. (12): R_L = E[(ŷ_L − y*)²]).

CONTRACT (shared with numerics/sweep.py -- keep these names):

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
package's choice, measured (see *Measured defaults*).

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
* **Result.** The trained weights are evaluated on the evaluation set:
  ``R_L``, ``A_L``, ``C_L`` of the exact decomposition
  ``R_L = C_L + (A_L − C_L)/L`` (eqs. 61-63, through
  :func:`theory.decomposition.decompose`), per-layer errors ``E e_ℓ²`` and
  the mode-wise loss (:mod:`numerics.diagnostics`).

Checkpoints
-----------
A checkpoint directory holds ``params.npz`` (weights), ``arrays.npz`` (loss
curves, per-layer and mode-wise errors), ``config.json`` and
``metrics.json``. Each file is written atomically (temporary file in the same
directory, ``fsync``, :func:`os.replace`) and ``metrics.json`` is written last
with the SHA-256 of the other three, so a checkpoint interrupted between two
files is detected on load instead of being read as a mixture.

Measured defaults
-----------------
Each model module's ``TRAIN_DEFAULTS`` holds its learning rate (the numbers below);
initial weights are the model's own ``INIT_DEFAULTS`` (``W_q^ℓ, W_k^ℓ = sqrt(κ)(I + 0.1 G/sqrt(N))``,
orthonormal ``W_x``, ``W_v = I``, ``g = W_o W_v W_y = 1``) except that the linear
model starts at ``κ = N/c_λ``, i.e. ``B_ℓ ≈ I/λ_1`` (eq. 20), the stable one-step
value of eq. (33) (:func:`numerics.models.linear.stable_qk_scale`). Schedule ``warmup_cosine`` (100 warm-up steps), batch 128,
Adam (0.9, 0.999, 1e-8), no clipping. All numbers below: single-threaded numpy on
a shared 2-core machine (wall times inflated by other jobs), float32, evaluation
on the fixed 1024-context set (standard error ≈ 3-5 %).

Top-2 task, d = N = 32, P = 128, a = b = 0 (target variance ≈ 19.5; the
prototype quoted in the issue: Gaussian ``W_q, W_k`` stayed at ≈ 18.9, the
identity initialisation reached 6.3, linear floor ≈ 13.3):

===============  ====  ======  ========  =====================  =======  ======
model            L     lr      steps     loss: initial → final  top-1    wall
===============  ====  ======  ========  =====================  =======  ======
nonlinear        1     1e-3    2000      8.30 → 6.54            0.63     68 s
nonlinear        1     3e-4    2000      8.30 → 6.61            0.65     65 s
nonlinear        4     1e-3    2000      7.57 → 6.52            0.65     70 s
nonlinear        4     3e-4    2000      7.57 → 6.46            0.66     74 s
nonlinear        16    1e-3    1500      6.52 → 5.91            0.65     37 s
untied_values    4     1e-3    1500      7.57 → 6.52            0.65     27 s
context_updates  4     1e-3    1500      7.57 → 6.52            0.65     735 s
single_stream    4     3e-4    1500      25.3 → 15.9            0.86     54 s
single_stream    4     1e-3    1500      25.3 → 12.3            0.83     60 s
single_stream    4     3e-3    1500      25.9 → 9.96            0.76     42 s
linear           4     1e-2    1500      15.0 → 13.9            --       43 s
===============  ====  ======  ========  =====================  =======  ======

At d = N = 16, P = 64, L = 1 (1500 steps) the softmax model ended at 3.31, 3.22,
3.16, 3.16 for lr = 1e-2, 3e-3, 1e-3, 3e-4 (initial 3.48): learning rates above
1e-3 are worse for the softmax models (lr = 1e-2 first *raises* the loss).

Easy task, linear attention, a = 2, b = 1 (600 steps, d = N = 8, P = 64, batch 64;
population optimum of the free polynomial 0.129 / 0.028 / 0.0015 at L = 1/2/4):
lr = 1e-2 with κ = 1 gave 0.161 / 0.085 / 0.044; lr = 1e-3 only 0.161 / 0.142 / 0.136;
with κ = N the defaults give 0.161 / 0.084 / 0.048 (3 s each). At d = N = 32,
P = 128, L = 4 (1500 steps): κ = 1 → 0.047, κ = N → 0.038 (lr 1e-2), 0.042 (lr 3e-3).

Easy task, one softmax layer started near uniform attention (``qk_scale=0.05``,
d = N = 8, P = 32, lr 0.03, 400 steps): 1.52 → 0.0036 with top-1 mass 0.96
(tests/test_train.py).

A limitation found while measuring (a property of the model, not of training):
the pre-norm is a LayerNorm, whose centring removes the direction of
``W_x^+ 1`` from the inputs. With N = d that direction is always inside the
input space, so the softmax model cannot rank by the true cosine similarity:
at d = N = 32 (untrained, ``qk_noise=0``, temperature 32) its top-2 loss is 7.56
against 5.61 for attention ``softmax(32 cos(x_i, x_test))``; with N = 33 and the
columns of ``W_x`` orthogonal to ``1`` it equals 5.61, with N = 64 and a random
orthonormal ``W_x`` it is 5.73. Prefer N > d for the softmax models.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from theory.data_law import check_stream
from theory.validation import check_choice, check_nonnegative, check_positive, check_positive_int

from .checkpoint import TRAINING_STATE_FILE, TrainingState, read_checkpoint, read_training_state, save_checkpoint
from .diagnostics import diagnose_batch
from .models import MODELS, chunk_size, get_model
from .optim import SCHEDULES, AdamState, adam_init, adam_update, clip_by_global_norm, schedule_value

__all__ = [
    "SCHEDULES",
    "TASKS",
    "DTYPES",
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
    "run_config",
    "evaluate",
    "evaluation_batch",
    "random_streams",
    "chunk_size",
    "save_checkpoint",
]

TASKS = ("easy", "difficult")
DTYPES = ("float32", "float64")

_JSON_SCALARS = (str, int, float, bool)
_SEED_INIT, _SEED_TRAIN, _SEED_EVAL = 0, 1, 2


# --------------------------------------------------------------------------- config


@dataclass(frozen=True)
class TrainConfig:
    """One training run: data (eqs. 1-6), model (eqs. 7-12), optimiser and stopping rule.

    Parameters
    ----------
    model : str
        One of :data:`numerics.models.MODELS` (``"linear"``, ``"nonlinear"``,
        ``"single_stream"``, ``"untied_values"``, ``"context_updates"``).
    task : {'easy', 'difficult'}
        Exact-match retrieval (eq. 5) or top-k aggregation (eq. 6).
    k : int
        Number of aggregated tokens of the difficult task (eq. 6), ``1 <= k <= P``.
    a, b : float
        Input and teacher spectrum exponents (eq. 2), ``>= 0``.
    d, N, P, depth : int
        Input dimension, hidden width (``N >= d``), context length, number of layers L.
    seed : int
        Seed of the initial weights and of the training batches.
    batch_size, max_steps : int
        Contexts per step; step cap.
    learning_rate : float or None
        Peak Adam step size; ``None`` takes the model's default from its
        ``TRAIN_DEFAULTS`` (resolved at construction, so ``to_dict`` always
        holds the number used).
    schedule : {'constant', 'warmup_constant', 'warmup_cosine'}
        Learning-rate schedule (see :func:`learning_rate_at`).
    warmup_steps : int
        Linear warm-up length ``w`` (``>= 0``).
    beta1, beta2, eps : float
        Adam moment decay rates (in ``[0, 1)``) and denominator offset (``> 0``).
    grad_clip : float or None
        Clip the global gradient norm to this value (``None``: no clipping).
    init : mapping or None
        Keyword options for the model's ``init_params`` (JSON scalars), merged
        over the model's ``TRAIN_DEFAULTS["init"]`` and its ``INIT_DEFAULTS``.
    eval_size, eval_every, eval_seed : int
        Size of the fixed held-out evaluation set, evaluation period in
        steps, and the seed the evaluation set is drawn from.
    tol, window : float, int
        Convergence: stop when the evaluation loss has not improved on its
        best value by a relative ``tol`` over ``window`` steps.
    dtype : {'float32', 'float64'}
        Floating-point type of weights, data and arithmetic.
    c_lambda, c_omega : float
        Spectrum prefactors of eq. (2) (default 1, as in the paper).
    frozen : tuple of str
        Parameters kept at their initial value (not updated by Adam), e.g.
        ``("W_o", "W_v", "W_y")`` keeps the gain ``g = W_o W_v W_y`` of eq. (60) fixed
        (the "lazy" regime of the package's regime study), and everything but
        ``W_o`` trains only the readout of frozen random heads.
    stream : {1, 2}
        Version of the data sampler (``numerics.tasks.sample(..., stream=...)``): 1 the original
        draws, 2 cheaper draws of the same law (eqs. 1-6). Omitted from the content hash when 1, so
        runs of stream 1 keep their hashes and a stream-2 run never reuses a stream-1 result.
    start : mapping or None
        ``None``: the model's ``init_params`` (a cold start). Otherwise a description of the
        initial weights given to :func:`train` as ``initial_params`` (string keys; JSON scalars or
        lists of them as values, e.g. ``{"kind": "nested", "parent": "<content hash>"}``): it enters
        the content hash, so two warm starts are two runs. Omitted from the hash when ``None``.

    References
    ----------
    Paper eqs. (1)-(12) (data, models, loss); the training protocol is not in
    the paper ("all models are trained until the loss has converged").

    Examples
    --------
    >>> cfg = TrainConfig(model="linear", task="easy", d=4, N=4, P=16, depth=2, max_steps=10)
    >>> cfg.depth, cfg.dtype
    (2, 'float32')
    >>> TrainConfig.from_dict(cfg.to_dict()) == cfg
    True
    >>> len(cfg.content_hash())
    64
    """

    model: str = "nonlinear"
    task: str = "difficult"
    k: int = 2
    a: float = 0.0
    b: float = 0.0
    d: int = 32
    N: int = 32
    P: int = 256
    depth: int = 1
    seed: int = 0
    batch_size: int = 128
    max_steps: int = 3000
    learning_rate: float | None = None
    schedule: str = "warmup_cosine"
    warmup_steps: int = 100
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    grad_clip: float | None = None
    init: Mapping[str, Any] | None = None
    eval_size: int = 1024
    eval_every: int = 100
    eval_seed: int = 0
    tol: float = 1e-3
    window: int = 1000
    dtype: str = "float32"
    c_lambda: float = 1.0
    c_omega: float = 1.0
    frozen: tuple[str, ...] = ()
    start: Mapping[str, Any] | None = None
    stream: int = 1

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        set_("model", check_choice("model", self.model, MODELS))
        set_("task", check_choice("task", self.task, TASKS))
        for name in ("d", "N", "P", "depth", "batch_size", "max_steps", "eval_size", "eval_every", "window"):
            set_(name, check_positive_int(name, getattr(self, name)))
        for name in ("seed", "eval_seed", "warmup_steps"):
            set_(name, check_positive_int(name, getattr(self, name), minimum=0))
        set_("k", check_positive_int("k", self.k))
        if self.k > self.P:
            raise ValueError(f"k must be <= P = {self.P}; got {self.k}")
        if self.N < self.d:
            raise ValueError(f"N must be >= d = {self.d} (hidden width at least the input dimension); got {self.N}")
        for name in ("a", "b", "tol"):
            set_(name, check_nonnegative(name, getattr(self, name)))
        for name in ("eps", "c_lambda", "c_omega"):
            set_(name, check_positive(name, getattr(self, name)))
        for name in ("beta1", "beta2"):
            value = check_nonnegative(name, getattr(self, name))
            if value >= 1:
                raise ValueError(f"{name} must be in [0, 1); got {value!r}")
            set_(name, value)
        if self.grad_clip is not None:
            set_("grad_clip", check_positive("grad_clip", self.grad_clip))
        set_("schedule", check_choice("schedule", self.schedule, SCHEDULES))
        set_("dtype", check_choice("dtype", self.dtype, DTYPES))
        model = MODELS[self.model]
        lr = model.TRAIN_DEFAULTS["learning_rate"] if self.learning_rate is None else self.learning_rate
        set_("learning_rate", check_positive("learning_rate", lr))
        set_("init", _freeze_init(model, _train_init(model, self), self.init))
        set_("frozen", _check_frozen(model, self.frozen))
        set_("start", _freeze_start(self.start))
        set_("stream", check_stream(self.stream))

    # -- serialisation -------------------------------------------------------------

    @property
    def init_options(self) -> dict[str, Any]:
        """The resolved ``init_params`` keyword options as a plain dict."""
        return dict(self.init)

    def to_dict(self) -> dict[str, Any]:
        """All fields as a JSON-able dict (``init`` as a plain dict, keys sorted).

        Examples
        --------
        >>> TrainConfig(model="linear", d=2, N=2, P=4).to_dict()["P"]
        4
        """
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["init"] = dict(self.init)  # already sorted by key
        out["frozen"] = list(self.frozen)
        out["start"] = None if self.start is None else {key: (list(v) if isinstance(v, tuple) else v)
                                                        for key, v in self.start}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TrainConfig":
        """Rebuild a config from :meth:`to_dict` output (or a TOML table).

        Missing keys take their defaults; an unknown key or a wrongly typed
        value raises ValueError naming it.

        Examples
        --------
        >>> TrainConfig.from_dict({"model": "linear", "d": 2, "N": 2, "P": 4}).N
        2
        >>> TrainConfig.from_dict({"depht": 3})
        Traceback (most recent call last):
        ...
        ValueError: unknown TrainConfig key 'depht'; allowed keys: model, task, ...
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"config must be a mapping (dict / TOML table); got {type(data).__name__}")
        names = [f.name for f in dataclasses.fields(cls)]
        for key in data:
            if key not in names:
                raise ValueError(f"unknown TrainConfig key {key!r}; allowed keys: {', '.join(names)}")
        try:
            return cls(**dict(data))
        except TypeError as exc:  # a wrongly typed value: one error type for the sweep's file readers
            raise ValueError(str(exc)) from None

    def content_hash(self) -> str:
        """SHA-256 of the canonical JSON of :meth:`to_dict` plus the package version.

        Stable across processes and Python versions (sorted keys, fixed separators);
        it changes with any field and with ``theory.__version__``.

        Examples
        --------
        >>> a = TrainConfig(model="linear", d=2, N=2, P=4)
        >>> a.content_hash() == TrainConfig(model="linear", d=2, N=2, P=4).content_hash()
        True
        >>> a.content_hash() == TrainConfig(model="linear", d=2, N=2, P=4, seed=1).content_hash()
        False
        """
        from theory import __version__

        config = self.to_dict()
        for name, absent in _UNHASHED_DEFAULTS.items():  # fields added later: old runs keep their hashes
            if config[name] == absent:
                del config[name]
        payload = json.dumps(
            {"config": config, "package_version": __version__},
            sort_keys=True,
            separators=(",", ":"),
            allow_nan=False,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def spectrum(self):
        """The :class:`theory.spectra.PowerLawSpectrum` of this run (eq. 2).

        Examples
        --------
        >>> TrainConfig(model="linear", a=1, b=0, d=4, N=4, P=8).spectrum().eigenvalues.tolist()
        [1.0, 0.5, 0.3333333333333333, 0.25]
        """
        from theory.spectra import PowerLawSpectrum

        return PowerLawSpectrum(self.a, self.b, self.d, self.c_lambda, self.c_omega)

    @property
    def numpy_dtype(self) -> type:
        """``numpy.float32`` or ``numpy.float64``."""
        return np.float32 if self.dtype == "float32" else np.float64


#: fields left out of the content hash at these values (added after stores were written)
_UNHASHED_DEFAULTS = {"start": None, "stream": 1}


def _freeze_start(start: object) -> tuple | None:
    """``start`` as sorted ``(key, value)`` pairs with lists as tuples (hashable, JSON-able); None stays None."""
    if start is None:
        return None
    if isinstance(start, tuple):  # already frozen (dataclasses.replace)
        start = dict(start)
    if not isinstance(start, Mapping) or not start:
        raise ValueError(f"start must be None or a non-empty mapping describing the initial weights; got {start!r}")
    out = []
    for key, value in start.items():
        if not isinstance(key, str):
            raise ValueError(f"start keys must be strings; got {key!r}")
        items = value if isinstance(value, (list, tuple)) else None
        ok = all(isinstance(v, _JSON_SCALARS) for v in items) if items is not None else isinstance(value, _JSON_SCALARS)
        if not ok:
            raise ValueError(f"start[{key!r}] must be a JSON scalar or a list of them; got {value!r}")
        out.append((key, tuple(items) if items is not None else value))
    return tuple(sorted(out))


def _check_frozen(model, frozen: object) -> tuple[str, ...]:
    """``frozen`` as a sorted tuple of names from ``model.PARAMETERS``."""
    allowed = model.PARAMETERS
    if isinstance(frozen, str) or not isinstance(frozen, (list, tuple)):
        raise ValueError(f"frozen must be a list of parameter names from {', '.join(allowed)}; got {frozen!r}")
    for name in frozen:
        if name not in allowed:
            raise ValueError(f"frozen names an unknown parameter {name!r} of model {model.NAME!r}; allowed: {', '.join(allowed)}")
    if len(set(frozen)) == len(allowed):
        raise ValueError("frozen must leave at least one parameter to train")
    return tuple(sorted(set(frozen)))


def _train_init(model, config: "TrainConfig") -> dict[str, Any]:
    """The model's ``TRAIN_DEFAULTS["init"]``, with size-dependent values evaluated at the config's sizes."""
    return {
        key: value(config.d, config.N, config.c_lambda) if callable(value) else value
        for key, value in model.TRAIN_DEFAULTS["init"].items()
    }


def _freeze_init(model, defaults: Mapping[str, Any], given: object) -> tuple[tuple[str, Any], ...]:
    """All of the model's init options, resolved and frozen (sorted pairs).

    Order of precedence: ``given`` > the model's ``TRAIN_DEFAULTS["init"]`` > the
    model's own ``INIT_DEFAULTS``. Every option is spelled out, so the content
    hash changes if a model's built-in default ever does; an integer given for
    a float option is stored as a float (``2`` and ``2.0`` are the same run).
    """
    if given is not None:
        if isinstance(given, tuple):  # already frozen (dataclasses.replace)
            given = dict(given)
        if not isinstance(given, Mapping):
            raise TypeError(f"init must be a mapping of init_params options; got {given!r} ({type(given).__name__})")
        for key, value in given.items():
            if not isinstance(key, str):
                raise TypeError(f"init keys must be strings; got {key!r}")
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"init[{key!r}] must be finite; got {value!r}")
            if value is not None and not isinstance(value, _JSON_SCALARS):
                raise TypeError(
                    f"init[{key!r}] must be a JSON scalar (str, int, float, bool or None); got {value!r} ({type(value).__name__})"
                )
    builtin = dict(model.INIT_DEFAULTS)
    merged = {**builtin, **defaults, **(given or {})}
    for key, value in merged.items():
        if isinstance(builtin.get(key), float) and isinstance(value, int) and not isinstance(value, bool):
            merged[key] = float(value)
    _check_init_options(model, merged)
    return tuple(sorted(merged.items()))


def _check_init_options(model, options: dict[str, Any]) -> None:
    """Dry-run ``init_params`` at a tiny size so a bad option fails at construction."""
    try:
        model.init_params(2, 2, 1, np.random.default_rng(0), **options)
    except TypeError as exc:
        raise ValueError(f"init has an option that the {model.NAME!r} model's init_params does not accept: {exc}") from None


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
        :func:`time.process_time`, summed over the sessions of a resumed run),
        ``resumed_at`` (the step a resumed run continued from; 0 otherwise),
        ``final_train_loss`` (mean over the
        last ``eval_every`` steps), ``initial_eval_loss``, ``best_eval_loss``,
        ``final_eval_loss`` (the last curve point), ``label_variance``,
        ``top1_attention_mass`` (mean over layers; NaN for linear attention),
        ``content_hash``, ``package_version``, ``complete`` (True; the
        intermediate checkpoints written during training hold only ``step``,
        ``max_steps``, ``eval_loss`` and ``complete = False``, plus the training
        state that ``train(..., resume=True)`` continues from).
    arrays : dict of str to ndarray
        ``loss_curve`` (n_eval, 2): columns step, evaluation loss;
        ``train_loss`` (steps,): per-step training loss;
        ``layer_errors`` (L,): E e_ℓ²; ``top1_attention_mass`` (L,);
        ``modewise_loss`` (d,): ω_k E ẽ_k² (sums to the loss, see
        :func:`numerics.diagnostics.modewise_loss`);
        ``modewise_loss_normalised`` (d,): divided by ω_k E t̃_k².

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
    _eval_batch=None,
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
    # ``_eval_batch``: the caller's ``evaluation_batch(config)`` (numerics.experiments.runner draws it anyway)
    from .lockstep import ModelRun

    run = ModelRun(config, eval_batch=_eval_batch, initial_params=initial_params, resumed=resumed, checkpoint_dir=ckpt,
                   callback=callback)
    bar = tqdm(total=config.max_steps, initial=run.first_step, disable=not progress,
               desc=f"{config.model} {config.task} L={config.depth}", unit="step")
    run.on_eval = lambda loss, train_loss: bar.set_postfix(eval=f"{loss:.4g}", train=f"{train_loss:.4g}", refresh=False)
    try:
        run.start()
        while not run.done:
            run.advance(run.draw_batch())
            bar.update(1)
    finally:
        bar.close()
    return run.result()


def _resume_point(ckpt: str, config: TrainConfig):
    """``(params, TrainingState, loss_curve)`` of the intermediate checkpoint in ``ckpt``; None if there is none."""
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
    return params, training, np.asarray(arrays["loss_curve"], dtype=np.float64).reshape(-1, 2)


def _curve(steps: list[int], losses: list[float]) -> np.ndarray:
    return np.column_stack([np.asarray(steps, dtype=np.float64), np.asarray(losses, dtype=np.float64)]).reshape(-1, 2)


def _final_evaluation(model, params, batch, spectrum) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    diag = diagnose_batch(model, params, batch, spectrum)
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
