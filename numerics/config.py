"""The configuration of one training run (:class:`TrainConfig`): data, model, optimiser and stopping rule.

:mod:`numerics.train` trains it (and re-exports it); this module holds the config, its
validation, serialisation and content hash.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from theory.data_law import check_stream
from theory.validation import check_choice, check_nonnegative, check_positive, check_positive_int

from .engines import check_engine
from .models import MODELS
from .optim import SCHEDULES

__all__ = ["DTYPES", "TASKS", "TrainConfig"]

TASKS = ("easy", "difficult")
DTYPES = ("float32", "float64")

_JSON_SCALARS = (str, int, float, bool)


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
    stream : {1, 2, 3}
        Version of the data sampler (``numerics.tasks.sample(..., stream=...)``): 1 the original
        draws, 2 and 3 cheaper draws of the same law (eqs. 1-6). Omitted from the content hash when
        1, so runs of stream 1 keep their hashes and a run never reuses a result of another stream.
    start : mapping or None
        ``None``: the model's ``init_params`` (a cold start). Otherwise a description of the
        initial weights given to :func:`train` as ``initial_params`` (string keys; JSON scalars or
        lists of them as values, e.g. ``{"kind": "nested", "parent": "<content hash>"}``): it enters
        the content hash, so two warm starts are two runs. Omitted from the hash when ``None``.
    engine : {'numpy', 'jax'}
        What computes a step (:mod:`numerics.engines`): the numpy engine (default) or the JAX
        engine (``pip install -e ".[jax]"``; the models ``"nonlinear"`` and ``"nonlinear_rms"``),
        which draws its batches from its own stream of the same law (so ``stream`` does not apply
        to it). Omitted from the content hash when ``"numpy"``.

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
    engine: str = "numpy"

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
        set_("engine", check_engine(self.engine, self.model))

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
_UNHASHED_DEFAULTS = {"start": None, "stream": 1, "engine": "numpy"}


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


