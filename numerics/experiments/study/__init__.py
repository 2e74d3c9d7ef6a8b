"""Where does inverse-depth scaling appear, and is the paper's plateau attainable? (the study the paper does not give)

The paper reports ``R_L = L0 + c L^(−alpha)`` with ``alpha ≈ 1`` for the nonlinear
model on the top-k task (paper eq. 16, Tables 1, 4, 5) and reads it through the
exact decomposition ``R_L = C_L + (A_L − C_L)/L`` (eqs. 61-63). The decomposition
alone does not imply ``1/L``: it gives ``1/L`` when the layers' errors are
exchangeable with a depth-independent disagreement ``A − C``. This module measures
*where* that happens, with the package's own engine (:mod:`numerics.models`),
training (:mod:`numerics.train`) and sweep layer (:mod:`numerics.experiments.sweep`, every run
cached in a SQLite store):

========================  ====================================================================
regime                    what is trained
========================  ====================================================================
``lazy``                  gain ``g = W_o W_v W_y`` fixed at 1 (``W_o, W_v, W_y`` frozen), Adam
                          1e-4 constant, 1000 steps, ``W_q = W_k = √0.6 (I + 0.5 G/√N)``
``lazy_long``             the same for 4000 steps
``converged``             every parameter, Adam 1e-3, warm-up + cosine decay, stopped when the
                          held-out loss no longer improves (same initialisation)
``frozen_heads``          the random heads of the lazy initialisation, only the gain trained —
                          solved exactly (the loss is quadratic in ``g``: least squares on
                          fresh contexts, the optimum Adam on ``W_o`` alone converges to)
``separate_models``       the average of ``L`` independently trained (``converged``) ``L = 1``
                          models, each with its own ``W_x``, on a common evaluation set
========================  ====================================================================

For every size ``(d, P, N)``, spectrum and regime: ``R_L`` over depths and seeds,
the depth gain ``R_1/R_{L_max}``, the fitted ``alpha`` with its interval
(:func:`theory.fit_depth_law`), and whether ``C_L`` and ``A_L − C_L`` settle
(relative change < 10 % over the last doubling of depth). Each depth plot carries
the oracle bounds of :mod:`numerics.experiments.bounds` as horizontal lines: the best single
softmax head over exact cosine similarity and the best non-negative mixture of
such heads, and the best head over the model's own pre-norm similarity at its
width ``N``.

:func:`paper_consistency` confronts the paper's nonlinear plateaus (Table 1,
Table 4) with those bounds at ``d = 128``, ``P ∈ {1024, 2048}`` (the sizes at which
the package reproduces the paper's linear Table 3) and at the study's sizes.
:func:`make_softmax_defaults` turns the measured runs into the data file read by
:mod:`theory.softmax_defaults` (and so by :func:`theory.predict_loss`).

Entry points: :func:`run_regime_study` (``idepth study regime``),
:func:`paper_consistency`, :func:`make_softmax_defaults` (``idepth study defaults``),
:func:`regime_config` (the :class:`~numerics.train.TrainConfig` of a regime, for
callers that share the store) and :func:`study_runner` (the sweep runner).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from theory._validation import check_choice, check_positive_int

__all__ = [
    "REGIMES",
    "TRAINED_REGIMES",
    "REGIME_DESCRIPTIONS",
    "LAZY_INIT",
    "SETTLE_TOLERANCE",
    "StudyScale",
    "SCALES",
    "RegimePoint",
    "RegimeStudy",
    "ConsistencyRow",
    "ConsistencyReport",
    "regime_config",
    "study_runner",
    "frozen_heads_control",
    "separate_models_average",
    "summarise_point",
    "classify_point",
    "name_regime",
    "cached_bound",
    "run_regime_study",
    "paper_consistency",
    "make_softmax_defaults",
    "fit_inverse_depth",
]

#: the regimes of the study (module table)
REGIMES = ("lazy", "lazy_long", "converged", "frozen_heads", "separate_models")
#: regimes that are training runs through the sweep layer
TRAINED_REGIMES = ("lazy", "lazy_long", "converged")
#: initialisation shared by every regime: W_q = W_k = √0.6 (I + 0.5 G/√N), W_v = I, g = 1
LAZY_INIT = {"qk_scale": 0.6, "qk_noise": 0.5}
#: parameters kept at their initial value in the lazy regimes (the gain g = W_o W_v W_y stays 1)
GAIN_PARAMETERS = ("W_o", "W_v", "W_y")
#: "settles": relative change of C_L and of A_L − C_L over the last doubling of depth below this
SETTLE_TOLERANCE = 0.10
#: a regime "gains from depth" when R_1 / R_{L_max} exceeds this
DEPTH_GAIN_THRESHOLD = 1.10
#: alpha counted as inverse-depth (the issue's target window)
ALPHA_WINDOW = (0.85, 1.15)
#: a paper value is "below the bound" when it is more than this many standard errors under it
BOUND_SIGMAS = 3.0

REGIME_DESCRIPTIONS = {
    "lazy": (
        "lazy training: gain g = W_o W_v W_y fixed at 1 (W_o, W_v, W_y frozen), Adam 1e-4 constant, "
        "{lazy_steps} steps, batch {batch_size}, W_q = W_k = √0.6 (I + 0.5 G/√N)"
    ),
    "lazy_long": "the lazy regime trained for {lazy_long_steps} steps",
    "converged": (
        "trained to convergence: every parameter, Adam 1e-3 with {converged_warmup} warm-up steps and cosine decay to 0, "
        "{converged_stop}, batch {batch_size}, {converged_init_text}"
    ),
    "frozen_heads": (
        "frozen random heads (the lazy initialisation; depth L uses the first L of the deepest model's heads), only "
        "the gain trained — solved exactly by least squares on {fit_size} fresh contexts (the loss is quadratic in g); "
        "the optimal gain grows with L, so A_L and C_L (measured at that gain) depend on L"
    ),
    "separate_models": (
        "averages of L fully separate models: independently trained (converged) L = 1 models, each with its own W_x, "
        "averaged on a common evaluation set ({separate_models} models, disjoint groups)"
    ),
}

# --------------------------------------------------------------------------- scales


@dataclass(frozen=True)
class StudyScale:
    """Sizes and budgets of one study run.

    Parameters
    ----------
    name : str
    sizes : tuple of (d, P, N)
        Input dimension, context length, hidden width.
    spectra : tuple of (a, b)
        Spectrum exponents (eq. 2) of every regime.
    depths : tuple of int
        Depth grid of the lazy and frozen-heads regimes.
    seeds : tuple of int
        Training seeds (>= 3 for a real study).
    regimes : tuple of str
        Subset of :data:`REGIMES`.
    k : int
        Top-k of the task (eq. 6).
    extra_spectra : tuple of (a, b)
        Further spectra for the cheap regimes only (lazy, frozen heads).
    converged_depths : tuple of int, optional
        Depth grid of the converged regime (default ``depths``).
    separate_depths : tuple of int, optional
        Depths of the separate-models average (default: those ``<= separate_models / len(seeds)``).
    separate_models : int
        Independent ``L = 1`` (converged) models trained for the separate-models average.
    batch_size, eval_size, eval_every : int
        Training batch, held-out evaluation-set size, evaluation period.
    lazy_steps, lazy_long_steps : int
        Step budgets of the lazy regimes.
    converged_steps, converged_warmup : int
        Step cap and warm-up of the converged regime (cosine decay to 0 at the cap).
    converged_window : int or None
        Early stop when the held-out loss has not improved by 0.1 % for this many steps;
        None: no early stop (the whole cosine schedule is run).
    converged_init : {'default', 'lazy'}
        Initialisation of the converged regime: the model's default or :data:`LAZY_INIT`.
    fit_size : int
        Contexts on which the frozen-heads gain is fitted.
    bound_contexts : int
        Monte-Carlo contexts of each oracle bound.
    dtype : {'float32', 'float64'}

    References
    ----------
    Paper eqs. (12), (16), (61)-(63).

    Examples
    --------
    >>> SCALES["quick"].k
    2
    >>> SCALES["full"].sizes[:2]
    ((16, 64, 16), (16, 64, 32))
    """

    name: str
    sizes: tuple
    spectra: tuple
    depths: tuple
    seeds: tuple
    regimes: tuple = REGIMES
    k: int = 2
    extra_spectra: tuple = ()
    converged_depths: tuple | None = None
    separate_depths: tuple | None = None
    separate_models: int = 24
    batch_size: int = 64
    eval_size: int = 1024
    eval_every: int = 100
    lazy_steps: int = 1000
    lazy_long_steps: int = 4000
    converged_steps: int = 3000
    converged_warmup: int = 100
    converged_window: int | None = None
    converged_init: str = "default"
    fit_size: int = 2048
    bound_contexts: int = 8192
    dtype: str = "float32"

    def __post_init__(self) -> None:
        for name in ("sizes", "spectra", "depths", "seeds", "regimes"):
            value = tuple(getattr(self, name))
            if not value:
                raise ValueError(f"StudyScale.{name} must not be empty")
            object.__setattr__(self, name, value)
        sizes = []
        for size in self.sizes:
            if len(size) != 3:
                raise ValueError(f"StudyScale.sizes entries must be (d, P, N); got {size!r}")
            d, P, N = (check_positive_int(n, v) for n, v in zip(("d", "P", "N"), size))
            if N < d:
                raise ValueError(f"StudyScale.sizes: N must be >= d; got (d={d}, P={P}, N={N})")
            if self.k > P:
                raise ValueError(f"StudyScale.sizes: k={self.k} must be <= P; got P={P}")
            sizes.append((d, P, N))
        object.__setattr__(self, "sizes", tuple(sizes))
        object.__setattr__(self, "spectra", tuple((float(a), float(b)) for a, b in self.spectra))
        extra = tuple((float(a), float(b)) for a, b in self.extra_spectra if (float(a), float(b)) not in self.spectra)
        object.__setattr__(self, "extra_spectra", extra)
        for regime in self.regimes:
            check_choice("regime", regime, REGIMES)
        check_choice("converged_init", self.converged_init, ("default", "lazy"))
        depths = tuple(sorted({check_positive_int("depth", L) for L in self.depths}))
        object.__setattr__(self, "depths", depths)
        conv = depths if self.converged_depths is None else tuple(sorted({check_positive_int("depth", L) for L in self.converged_depths}))
        object.__setattr__(self, "converged_depths", conv)
        n_seeds = len(self.seeds)
        sep = self.separate_depths
        if sep is None:
            sep = tuple(L for L in depths if L * n_seeds <= self.separate_models)
        object.__setattr__(self, "separate_depths", tuple(sorted({check_positive_int("depth", L) for L in sep})))
        if "separate_models" in self.regimes and max(self.separate_depths) > self.separate_models:
            raise ValueError(
                f"StudyScale.separate_depths up to {max(self.separate_depths)} need at least that many separate models; "
                f"got separate_models={self.separate_models}"
            )

    def depths_of(self, regime: str) -> tuple:
        """The depth grid of ``regime``."""
        if regime == "converged":
            return self.converged_depths
        if regime == "separate_models":
            return self.separate_depths
        return self.depths

    def spectra_of(self, regime: str) -> tuple:
        """The spectra of ``regime`` (the cheap regimes also get :attr:`extra_spectra`)."""
        return self.spectra + (self.extra_spectra if regime in ("lazy", "frozen_heads") else ())

    def describe(self, regime: str) -> str:
        """Plain-words description of ``regime`` at this scale."""
        values = dataclasses.asdict(self)
        values["converged_stop"] = (
            f"stopped when the held-out loss has not improved by 0.1 % for {self.converged_window} steps (cap "
            f"{self.converged_steps} steps)" if self.converged_window is not None
            else f"the whole schedule of {self.converged_steps} steps"
        )
        values["converged_init_text"] = (
            "the lazy initialisation" if self.converged_init == "lazy" else "the model's default initialisation"
        )
        return REGIME_DESCRIPTIONS[regime].format(**values)

    def to_dict(self) -> dict:
        """JSON-able dict."""
        return {key: (list(map(list, v)) if key in ("sizes", "spectra", "extra_spectra") else (list(v) if isinstance(v, tuple) else v))
                for key, v in dataclasses.asdict(self).items()}


#: named scales: ``smoke`` (tests and the reproduction's CI scale, seconds); ``quick`` (d = N = 32,
#: P = 128: 81 training runs, about 15 minutes on 2 busy cores from an empty store; its lazy and
#: converged runs are those of ``idepth reproduce --scale quick``'s nonlinear difficult families, so
#: with a shared store only 21 extra converged runs are trained); ``full`` (d ∈ {16, 32, 64},
#: P/d ∈ {4, 16}, N ∈ {d, 2d}: thousands of runs, for a Dask cluster)
SCALES: dict[str, StudyScale] = {
    "smoke": StudyScale(
        name="smoke", sizes=((4, 16, 4),), spectra=((0.0, 0.0),), depths=(1, 2, 4), seeds=(0, 1, 2),
        separate_models=6, batch_size=8, eval_size=64, eval_every=10, lazy_steps=20, lazy_long_steps=40,
        converged_steps=20, converged_warmup=0, fit_size=128, bound_contexts=256,
        regimes=("lazy", "converged", "frozen_heads", "separate_models"),
    ),
    "quick": StudyScale(
        name="quick", sizes=((32, 128, 32),), spectra=((0.0, 0.0),), extra_spectra=((0.0, 0.5), (0.5, 0.0)),
        depths=(1, 2, 4, 8, 16, 32), seeds=(0, 1, 2), regimes=("lazy", "converged", "frozen_heads", "separate_models"),
        separate_models=12, separate_depths=(1, 2, 3, 4), batch_size=32, converged_steps=2000, converged_init="lazy",
        bound_contexts=8192,
    ),
    "full": StudyScale(
        name="full",
        sizes=tuple((d, r * d, n * d) for d in (16, 32, 64) for r in (4, 16) for n in (1, 2)),
        spectra=((0.0, 0.0), (0.5, 0.0), (0.0, 0.5)), depths=(1, 2, 4, 8, 16, 32, 64), seeds=(0, 1, 2),
        regimes=REGIMES, separate_models=48, separate_depths=(1, 2, 4, 8, 16), batch_size=128, eval_size=2048,
        converged_steps=8000, converged_window=1000, bound_contexts=16384,
    ),
}


def _scale(scale: str | StudyScale) -> StudyScale:
    if isinstance(scale, StudyScale):
        return scale
    check_choice("scale", scale, tuple(SCALES))
    return SCALES[scale]


# --------------------------------------------------------------------------- configs and runner


def _train_config_type():
    from numerics.train import TrainConfig

    return TrainConfig


def _has_frozen_field() -> bool:
    return "frozen" in {f.name for f in dataclasses.fields(_train_config_type())}


def regime_config(
    regime: str,
    *,
    d: int,
    N: int,
    P: int,
    depth: int,
    seed: int,
    a: float = 0.0,
    b: float = 0.0,
    k: int = 2,
    scale: str | StudyScale = "quick",
):
    """The :class:`~numerics.train.TrainConfig` of one run of a trained regime.

    Use it (with :func:`study_runner`) to share a store with the study: the same
    arguments give the same content hash, so a run is trained once.

    Parameters
    ----------
    regime : {'lazy', 'lazy_long', 'converged'}
    d, N, P, depth, seed : int
    a, b : float
        Spectrum exponents (eq. 2).
    k : int
        Top-k (eq. 6).
    scale : str or StudyScale
        Supplies step budgets, batch and evaluation sizes.

    Returns
    -------
    numerics.train.TrainConfig

    Raises
    ------
    ValueError
        Unknown regime; a lazy regime while ``TrainConfig`` has no ``frozen`` field.

    References
    ----------
    Paper eqs. (9)-(12) (model, loss); the training protocols are this package's.

    Examples
    --------
    >>> cfg = regime_config("converged", d=4, N=4, P=8, depth=2, seed=0, scale="smoke")
    >>> cfg.learning_rate, cfg.schedule, cfg.max_steps
    (0.001, 'warmup_cosine', 20)
    """
    regime = check_choice("regime", regime, TRAINED_REGIMES)
    s = _scale(scale)
    common = dict(
        model="nonlinear", task="difficult", k=k, a=float(a), b=float(b), d=d, N=N, P=P, depth=depth, seed=seed,
        batch_size=s.batch_size, eval_size=s.eval_size, eval_every=s.eval_every, dtype=s.dtype,
    )
    if regime in ("lazy", "lazy_long"):
        if not _has_frozen_field():
            raise ValueError(
                "the lazy regimes keep the gain at 1 by freezing W_o, W_v, W_y, but numerics.train.TrainConfig has no "
                "'frozen' field yet; run the other regimes (regimes=...) until it exists"
            )
        steps = s.lazy_steps if regime == "lazy" else s.lazy_long_steps
        return _train_config_type()(
            **common, max_steps=steps, learning_rate=1e-4, schedule="constant", warmup_steps=0, init=dict(LAZY_INIT),
            window=steps + s.eval_every, frozen=GAIN_PARAMETERS,
        )
    window = s.converged_steps + s.eval_every if s.converged_window is None else s.converged_window
    return _train_config_type()(
        **common, max_steps=s.converged_steps, learning_rate=1e-3, schedule="warmup_cosine",
        warmup_steps=s.converged_warmup, init=dict(LAZY_INIT) if s.converged_init == "lazy" else {},
        tol=1e-3, window=window,
    )


def _predict_in_chunks(model, params, batch, chunk: int = 256) -> np.ndarray:
    n = batch.target.shape[0]
    out = [np.asarray(model.forward(params, batch.slice(s, s + chunk)).prediction, dtype=np.float64)
           for s in range(0, n, chunk)]
    return np.concatenate(out)


def study_runner(config):
    """Sweep runner: :func:`numerics.train.run_config` plus the predictions on the evaluation set.

    Adds ``arrays["eval_prediction"]`` (``ŷ_L`` for each context of the run's fixed
    evaluation set, which every depth and seed of a size and spectrum share), used
    to average separately trained models.

    References
    ----------
    Paper eqs. (12), (59).

    Examples
    --------
    >>> cfg = regime_config("converged", d=4, N=4, P=8, depth=1, seed=0, scale="smoke")
    >>> study_runner(cfg).arrays["eval_prediction"].shape  # the smoke scale's 64 evaluation contexts
    (64,)
    """
    from numerics.models import get_model
    from numerics.train import evaluation_batch, run_config

    result = run_config(config)
    prediction = _predict_in_chunks(get_model(config.model), result.params, evaluation_batch(config))
    arrays = dict(result.arrays)
    arrays["eval_prediction"] = prediction
    return dataclasses.replace(result, arrays=arrays)


def _grid_of(configs: Sequence) -> Any:
    from numerics.experiments.sweep import Grid

    def fixed(value):
        return [value] if isinstance(value, list) else value  # a list-valued field is one value, not an axis

    return Grid(*[{key: fixed(value) for key, value in cfg.to_dict().items()} for cfg in configs],
                config_type=_train_config_type())


# --------------------------------------------------------------------------- controls without training


def frozen_heads_control(
    *, d: int, N: int, P: int, depths: Sequence[int], seed: int, a: float = 0.0, b: float = 0.0, k: int = 2,
    scale: str | StudyScale = "quick",
) -> list[dict]:
    """Random heads kept at the lazy initialisation with only the gain trained (solved exactly), at several depths.

    ``L_max = max(depths)`` heads are drawn as :func:`numerics.models.get_model` ``("nonlinear").init_params``
    draws them for the lazy run of this seed (:data:`LAZY_INIT`, same seed stream); the depth-``L``
    model uses the first ``L`` of them (the parallel model, eq. 59, makes that exact: layer ``ℓ``'s
    read ``p_ℓ·y`` depends only on its own ``W_q^ℓ, W_k^ℓ`` and the shared ``W_x``). ``ŷ = g ū`` with
    ``ū = (1/L) Σ_ℓ p_ℓ·y`` is linear in ``g``, so training the gain alone converges to
    ``g* = E[ū y*]/E[ū²]``, fitted here on ``fit_size`` contexts from the run's training stream;
    the loss and its decomposition are measured on the run's evaluation set.

    Returns
    -------
    list of dict
        Per depth: ``R_L, A_L, C_L, R_L_se, A_L_se, C_L_se, gain``.

    References
    ----------
    Paper eqs. (59)-(63).

    Examples
    --------
    >>> out = frozen_heads_control(d=4, N=4, P=8, depths=[1, 2], seed=0, scale="smoke")
    >>> out[1]["R_L"] <= out[1]["A_L"] + 1e-12
    True
    """
    from numerics.models import get_model
    from numerics.tasks import sample
    from numerics.train import _generators, evaluation_batch
    from theory.decomposition import decompose

    s = _scale(scale)
    depths = [check_positive_int("depth", L) for L in depths]
    L_max = max(depths)
    config = regime_config("converged", d=d, N=N, P=P, depth=L_max, seed=seed, a=a, b=b, k=k, scale=s)
    config = dataclasses.replace(config, dtype="float64", init=dict(LAZY_INIT))  # the lazy run's initial heads
    model = get_model(config.model)
    rng_init, rng_batches, _ = _generators(config)
    params = model.init_params(d, N, L_max, rng_init, dtype=np.float64, **config.init_options)
    gain0 = float((params["W_o"] @ params["W_v"] @ params["W_y"]).item())

    def layer_reads(batch):
        parts = [np.asarray(model.forward(params, batch.slice(i, i + 256)).layer_predictors) / gain0
                 for i in range(0, batch.target.shape[0], 256)]
        return np.concatenate(parts, axis=1)  # (L_max, B): p_ℓ·y

    fit = sample(config.task, config.spectrum(), P, s.fit_size, rng_batches, k=k, dtype=np.float64)
    fit_reads, fit_target = layer_reads(fit), np.asarray(fit.target)
    evaluation = evaluation_batch(config)
    eval_reads, eval_target = layer_reads(evaluation), np.asarray(evaluation.target, dtype=np.float64)
    out = []
    for L in depths:
        mean_read = fit_reads[:L].mean(axis=0)
        gain = float(mean_read @ fit_target / max(mean_read @ mean_read, 1e-300))
        dec = decompose(gain * eval_reads[:L], eval_target)
        out.append({"R_L": dec.R, "A_L": dec.A, "C_L": dec.C, "R_L_se": dec.R_se, "A_L_se": dec.A_se,
                    "C_L_se": dec.C_se, "gain": gain})
    return out


def separate_models_average(predictions: np.ndarray, target: np.ndarray, depth: int, max_groups: int | None = None) -> list[dict]:
    """Loss of averages of ``depth`` separately trained models, over disjoint groups of models.

    Parameters
    ----------
    predictions : ndarray, shape (M, B)
        Each model's predictions on a common evaluation set.
    target : ndarray, shape (B,)
    depth : int
        Models per average (the ``L`` of ``(1/L) Σ_ℓ f_ℓ``, eq. 59).
    max_groups : int, optional
        Use at most this many groups.

    Returns
    -------
    list of dict
        Per group: ``R_L, A_L, C_L`` and their SEs (eqs. 61-63).

    References
    ----------
    Paper eqs. (59), (61)-(63).

    Examples
    --------
    >>> f = np.array([[1.0, 2.0], [3.0, 2.0], [1.0, 0.0], [1.0, 0.0]])
    >>> [round(g["R_L"], 6) for g in separate_models_average(f, np.array([1.0, 1.0]), 2)]  # means (2, 2), (1, 0)
    [1.0, 0.5]
    """
    from theory.decomposition import decompose

    predictions = np.asarray(predictions, dtype=np.float64)
    depth = check_positive_int("depth", depth)
    n_groups = predictions.shape[0] // depth
    if n_groups < 1:
        raise ValueError(f"depth must be <= the number of models {predictions.shape[0]}; got {depth}")
    if max_groups is not None:
        n_groups = min(n_groups, max_groups)
    out = []
    for g in range(n_groups):
        dec = decompose(predictions[g * depth:(g + 1) * depth], np.asarray(target, dtype=np.float64))
        out.append({"R_L": dec.R, "A_L": dec.A, "C_L": dec.C, "R_L_se": dec.R_se, "A_L_se": dec.A_se, "C_L_se": dec.C_se})
    return out


# --------------------------------------------------------------------------- analysis


@dataclass(frozen=True)
class RegimePoint:
    """The depth dependence of one (size, spectrum, regime) point.

    Attributes
    ----------
    d, P, N, k : int
    a, b : float
    regime : str
    depths : tuple of int
    n_seeds : int
        Seeds (or disjoint groups of separate models) per depth.
    R, R_se, A, C : tuple of float
        Means over seeds per depth (``R_se``: SE over seeds; ``C`` NaN at L = 1).
    depth_gain, depth_gain_se : float
        ``R_1 / R_{L_max}`` and its delta-method SE.
    alpha, alpha_low, alpha_high : float
        Fitted exponent of ``R_L = L0 + c L^(−alpha)`` (eq. 16) and its 95 % interval.
    L0, c : float
        The fitted floor and coefficient.
    plateau_change, gap_change : float
        Relative change of ``C_L`` and of ``A_L − C_L`` over the last doubling of depth.
    settles : bool
        Both changes below :data:`SETTLE_TOLERANCE`.
    verdict : str
        ``'inverse-depth'``, ``'flat'`` or ``'improves (alpha = …)'`` (see :func:`classify_point`).

    References
    ----------
    Paper eqs. (16), (61)-(63).

    Examples
    --------
    >>> p = summarise_point("lazy", (16, 64, 16), (0.0, 0.0), 2, [1, 2, 4, 8],
    ...                     [[4.0, 3.0, 2.5, 2.25]] * 3, [[4.0, 4.0, 4.0, 4.0]] * 3, [[np.nan, 2.0, 2.0, 2.0]] * 3)
    >>> round(p.depth_gain, 6), round(p.alpha, 6), p.settles, p.verdict
    (1.777778, 1.0, True, 'inverse-depth')
    """

    d: int
    P: int
    N: int
    k: int
    a: float
    b: float
    regime: str
    depths: tuple
    n_seeds: int
    R: tuple
    R_se: tuple
    A: tuple
    C: tuple
    depth_gain: float
    depth_gain_se: float
    alpha: float
    alpha_low: float
    alpha_high: float
    L0: float
    c: float
    plateau_change: float
    gap_change: float
    settles: bool
    verdict: str

    @property
    def gap(self) -> tuple:
        """``A_L − C_L`` per depth."""
        return tuple(a - c for a, c in zip(self.A, self.C))

    def to_dict(self) -> dict:
        """JSON-able dict (NaN as None)."""
        return {key: _json_clean(value) for key, value in dataclasses.asdict(self).items()}


def _json_clean(value):
    if isinstance(value, (list, tuple)):
        return [_json_clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (np.floating, np.integer)):
        return _json_clean(value.item())
    return value


def _relative_change(values: Sequence[float], depths: Sequence[int]) -> float:
    """|v(L_max) − v(L')| / |v(L')| with L' the largest depth <= L_max/2 (the last doubling)."""
    depths = list(depths)
    L_max = depths[-1]
    earlier = [i for i, L in enumerate(depths) if 2 * L <= L_max and math.isfinite(values[i])]
    if not earlier or not math.isfinite(values[-1]):
        return math.nan
    ref = values[earlier[-1]]
    return abs(values[-1] - ref) / abs(ref) if ref != 0 else math.inf


def classify_point(depth_gain: float, alpha: float, settles: bool) -> str:
    """Name the depth dependence of a point from its numbers.

    * ``'flat'``: ``R_1 / R_{L_max} < 1.10`` (depth removes less than a tenth of the loss);
    * ``'inverse-depth'``: it gains, the fitted alpha is in [0.85, 1.15] and ``C_L``,
      ``A_L − C_L`` settle;
    * ``'improves (alpha = …)'`` otherwise (with ``', not settled'`` when they do not settle).

    References
    ----------
    Paper eqs. (16), (63).

    Examples
    --------
    >>> classify_point(1.05, 1.0, True), classify_point(1.5, 0.95, True), classify_point(1.5, 0.6, False)
    ('flat', 'inverse-depth', 'improves (alpha = 0.6, not settled)')
    """
    if not (depth_gain >= DEPTH_GAIN_THRESHOLD):
        return "flat"
    if ALPHA_WINDOW[0] <= alpha <= ALPHA_WINDOW[1] and settles:
        return "inverse-depth"
    return f"improves (alpha = {alpha:.2g}{'' if settles else ', not settled'})"


def summarise_point(regime, size, spectrum, k, depths, R, A, C) -> RegimePoint:
    """Fit and classify one point from per-seed ``R_L``, ``A_L``, ``C_L`` arrays (seeds x depths).

    Notes
    -----
    No example: it needs trained runs or Monte-Carlo bounds (minutes); see :class:`RegimePoint`.

    References
    ----------
    Paper eqs. (16), (61)-(63).
    """
    from theory.fitting import fit_depth_law

    depths = [int(L) for L in depths]
    R, A, C = (np.atleast_2d(np.asarray(x, dtype=np.float64)) for x in (R, A, C))
    n = R.shape[0]
    R_mean, A_mean = R.mean(axis=0), A.mean(axis=0)
    with np.errstate(invalid="ignore"):
        C_mean = np.array([np.nan if np.all(np.isnan(col)) else np.nanmean(col) for col in C.T])
    R_se = R.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.full(len(depths), np.nan)
    gain = float(R_mean[0] / R_mean[-1]) if depths[0] == 1 else math.nan
    gain_se = float(gain * math.hypot(R_se[0] / R_mean[0], R_se[-1] / R_mean[-1])) if n > 1 else math.nan
    alpha = lo = hi = L0 = c = math.nan
    if len(set(depths)) >= 3 and np.all(R > 0):
        try:
            fit = fit_depth_law(depths, R if n > 1 else R[0])
            alpha, L0, c = fit.alpha, fit.L0, fit.c
            lo, hi = fit.interval("alpha")
        except (ValueError, np.linalg.LinAlgError, OverflowError, FloatingPointError):
            pass  # no fit (reported as "—"); theory.fit_depth_law can overflow on non-monotone data
    plateau_change = _relative_change(list(C_mean), depths)
    gap_change = _relative_change(list(A_mean - C_mean), depths)
    settles = bool(plateau_change < SETTLE_TOLERANCE and gap_change < SETTLE_TOLERANCE)
    d, P, N = size
    return RegimePoint(
        d=int(d), P=int(P), N=int(N), k=int(k), a=float(spectrum[0]), b=float(spectrum[1]), regime=regime,
        depths=tuple(depths), n_seeds=int(n), R=tuple(map(float, R_mean)), R_se=tuple(map(float, R_se)),
        A=tuple(map(float, A_mean)), C=tuple(map(float, C_mean)), depth_gain=gain, depth_gain_se=gain_se,
        alpha=float(alpha), alpha_low=float(lo), alpha_high=float(hi), L0=float(L0), c=float(c),
        plateau_change=float(plateau_change), gap_change=float(gap_change), settles=settles,
        verdict=classify_point(gain, alpha, settles),
    )


_REGIME_PHRASES = {
    "lazy": "under lazy training",
    "lazy_long": "under longer lazy training",
    "converged": "at convergence",
    "frozen_heads": "for frozen random heads",
    "separate_models": "for averages of separate models",
}


def name_regime(points: Sequence[RegimePoint]) -> str:
    """One line naming where inverse-depth scaling appears, from the points' verdicts.

    A regime is named by the verdict most of its points share (ties: the first
    in order inverse-depth, improves, flat).

    References
    ----------
    Paper eqs. (16), (63).

    Examples
    --------
    >>> pts = [summarise_point("lazy", (8, 32, 8), (0, 0), 2, [1, 2, 4], [[3, 2, 1.5]] * 3, [[3, 3, 3]] * 3,
    ...                        [[np.nan, 1, 1]] * 3),
    ...        summarise_point("converged", (8, 32, 8), (0, 0), 2, [1, 2, 4], [[3, 3, 3]] * 3, [[3, 3, 3]] * 3,
    ...                        [[np.nan, 3, 3]] * 3)]
    >>> name_regime(pts)
    'inverse-depth under lazy training; flat at convergence'
    """
    parts = []
    for regime in REGIMES:
        verdicts = [p.verdict for p in points if p.regime == regime]
        if not verdicts:
            continue
        kinds = ["inverse-depth" if v == "inverse-depth" else "flat" if v == "flat" else "improves (not 1/L)" for v in verdicts]
        order = ["inverse-depth", "improves (not 1/L)", "flat"]
        best = max(order, key=lambda kind: (kinds.count(kind), -order.index(kind)))
        count = kinds.count(best)
        share = "" if count == len(kinds) else f" ({count} of {len(kinds)} points)"
        parts.append(f"{best} {_REGIME_PHRASES[regime]}{share}")
    return "; ".join(parts)


# --------------------------------------------------------------------------- bounds (cached)


def _atomic_json(path: Path, data: Any) -> None:
    from numerics.io import atomic_write

    text = json.dumps(data, indent=1, sort_keys=True, allow_nan=False).encode("utf-8")
    atomic_write(path, lambda fh: fh.write(text))


def _bound_key(a, b, d, P, k, similarity, width, n_contexts, seed) -> str:
    from theory import __version__

    return f"a={a:g},b={b:g},d={d},P={P},k={k},sim={similarity},N={width},n={n_contexts},seed={seed},v={__version__}"


def cached_bound(a: float, b: float, d: int, P: int, k: int = 2, *, similarity: str = "cosine", width: int | None = None,
                 n_contexts: int = 8192, seed: int = 0, cache: str | os.PathLike | None = None):
    """:func:`numerics.experiments.bounds.softmax_head_bound` for a power-law spectrum, cached in a JSON file.

    Parameters
    ----------
    a, b : float
    d, P, k : int
    similarity : {'cosine', 'dot', 'prenorm'}
    width : int, optional
        Hidden width (``'prenorm'`` only).
    n_contexts, seed : int
        Monte-Carlo contexts and seed.
    cache : path, optional
        JSON file of cached bounds (read, and rewritten atomically with the new entry).

    Returns
    -------
    numerics.experiments.bounds.HeadBound

    References
    ----------
    Paper eqs. (6), (12), (60).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     first = cached_bound(0, 0, 4, 8, n_contexts=64, cache=pathlib.Path(tmp) / "b.json")
    ...     again = cached_bound(0, 0, 4, 8, n_contexts=64, cache=pathlib.Path(tmp) / "b.json")
    >>> first == again
    True
    """
    from theory import PowerLawSpectrum

    from numerics.experiments.bounds import HeadBound, softmax_head_bound

    key = _bound_key(a, b, d, P, k, similarity, width, n_contexts, seed)
    data = {}
    if cache is not None and Path(cache).is_file():
        try:
            data = json.loads(Path(cache).read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            data = {}
        if key in data:
            return HeadBound.from_dict(data[key])
    bound = softmax_head_bound(PowerLawSpectrum(a, b, d), P, k, similarity=similarity, width=width,
                               n_contexts=n_contexts, rng=np.random.default_rng([seed, d, P, k]))
    if cache is not None:
        if Path(cache).is_file():  # re-read: another process may have added entries meanwhile
            try:
                data = json.loads(Path(cache).read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                data = {}
        data[key] = bound.to_dict()
        _atomic_json(Path(cache), data)
    return bound


def _bound_job(args: tuple) -> tuple:
    a, b, d, P, k, similarity, width, n_contexts, seed = args
    from numerics.experiments.bounds import softmax_head_bound
    from theory import PowerLawSpectrum

    bound = softmax_head_bound(PowerLawSpectrum(a, b, d), P, k, similarity=similarity, width=width,
                               n_contexts=n_contexts, rng=np.random.default_rng([seed, d, P, k]))
    return args, bound.to_dict()


def _bounds_many(jobs: Sequence[tuple], cache: Path | None, workers: int, progress: bool) -> dict:
    """Compute (or read from ``cache``) many bounds, in ``workers`` processes; returns {job: HeadBound}."""
    from tqdm.auto import tqdm

    from numerics.experiments.bounds import HeadBound

    data = {}
    if cache is not None and cache.is_file():
        try:
            data = json.loads(cache.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            data = {}
    out, todo = {}, []
    for job in dict.fromkeys(jobs):
        key = _bound_key(*job)
        if key in data:
            out[job] = HeadBound.from_dict(data[key])
        else:
            todo.append(job)
    if todo:
        bar = tqdm(total=len(todo), desc="oracle bounds", unit="bound", disable=not progress)
        try:
            if workers > 1 and len(todo) > 1:
                import concurrent.futures as cf
                import multiprocessing

                from numerics.experiments.sweep import BLAS_THREAD_VARIABLES

                saved = {name: os.environ.get(name) for name in BLAS_THREAD_VARIABLES}
                os.environ.update({name: "1" for name in BLAS_THREAD_VARIABLES})
                try:
                    ctx = multiprocessing.get_context("spawn")
                    with cf.ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=ctx) as pool:
                        for job, result in pool.map(_bound_job, todo):
                            out[job] = HeadBound.from_dict(result)
                            data[_bound_key(*job)] = result
                            bar.update(1)
                finally:
                    for name, value in saved.items():
                        if value is None:
                            os.environ.pop(name, None)
                        else:
                            os.environ[name] = value
            else:
                for job in todo:
                    _, result = _bound_job(job)
                    out[job] = HeadBound.from_dict(result)
                    data[_bound_key(*job)] = result
                    bar.update(1)
        finally:
            bar.close()
            if cache is not None:
                _atomic_json(cache, data)
    return out


# --------------------------------------------------------------------------- the study


@dataclass(frozen=True)
class RegimeStudy:
    """Result of :func:`run_regime_study`.

    Attributes
    ----------
    scale : StudyScale
    points : tuple of RegimePoint
    bounds : Mapping
        ``(d, P, N, a, b) -> {'cosine': HeadBound, 'prenorm': HeadBound}``.
    regime_name : str
        The plain-words name of where inverse-depth appears (:func:`name_regime`).
    markdown : str
        The REPORT.md section "Where inverse-depth scaling appears" (figures linked
        relative to ``out_dir``).
    figures : tuple of str
        Figure files (PNG and PDF), relative to ``out_dir``.
    out_dir : str
    wall_time : float
        Seconds.
    runs : int
        Training runs in the study's grid.

    Notes
    -----
    No example: it needs trained runs or Monte-Carlo bounds (minutes); see :func:`run_regime_study`.

    References
    ----------
    Paper eqs. (16), (60)-(63).
    """

    scale: StudyScale
    points: tuple
    bounds: Mapping
    regime_name: str
    markdown: str
    figures: tuple
    out_dir: str
    wall_time: float
    runs: int

    def point(self, regime: str, size: tuple | None = None, spectrum: tuple | None = None) -> RegimePoint:
        """The point of ``regime`` (at ``size`` and ``spectrum``; default the first ones)."""
        size = tuple(self.scale.sizes[0] if size is None else size)
        spectrum = tuple(map(float, self.scale.spectra[0] if spectrum is None else spectrum))
        for p in self.points:
            if p.regime == regime and (p.d, p.P, p.N) == size and (p.a, p.b) == spectrum:
                return p
        raise KeyError(f"no point for regime={regime!r}, size={size}, spectrum={spectrum}")

    def to_dict(self) -> dict:
        """JSON-able summary (points, bounds, name, scale)."""
        return {
            "scale": self.scale.to_dict(),
            "regime_name": self.regime_name,
            "points": [p.to_dict() for p in self.points],
            "bounds": [
                {"size": list(key[:3]), "spectrum": list(key[3:]), **{sim: b.to_dict() for sim, b in value.items()}}
                for key, value in self.bounds.items()
            ],
            "figures": list(self.figures),
            "wall_time": self.wall_time,
            "runs": self.runs,
        }


def _check_out_dir(out_dir) -> Path:
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"output directory {str(out)!r} is an existing file, not a directory")
    out.mkdir(parents=True, exist_ok=True)
    if not os.access(out, os.W_OK):
        raise PermissionError(f"output directory {str(out)!r} is not writable")
    return out


def _control_key(s: StudyScale, size, spectrum, depth, seed) -> str:
    from theory import __version__

    return (f"d,P,N={size}|a,b={spectrum}|k={s.k}|L={depth}/{max(s.depths)}|seed={seed}|fit={s.fit_size}|"
            f"eval={s.eval_size}|{s.dtype}|v={__version__}")


def _all_spectra(s: StudyScale) -> tuple:
    return tuple(dict.fromkeys(s.spectra + s.extra_spectra))


def _trained_configs(s: StudyScale) -> dict:
    """{(regime, size, spectrum, depth, seed): TrainConfig} of every training run the study needs."""
    configs = {}
    for size in s.sizes:
        d, P, N = size
        for spectrum in _all_spectra(s):
            a, b = spectrum
            for regime in ("lazy", "lazy_long", "converged"):
                if regime not in s.regimes or spectrum not in s.spectra_of(regime):
                    continue
                for depth in s.depths_of(regime):
                    for seed in s.seeds:
                        configs[(regime, size, spectrum, depth, seed)] = regime_config(
                            regime, d=d, N=N, P=P, depth=depth, seed=seed, a=a, b=b, k=s.k, scale=s)
            if "separate_models" in s.regimes and spectrum in s.spectra_of("separate_models"):
                for seed in range(s.separate_models):
                    configs[("separate", size, spectrum, 1, seed)] = regime_config(
                        "converged", d=d, N=N, P=P, depth=1, seed=seed, a=a, b=b, k=s.k, scale=s)
    return configs


def _metric_arrays(rows: Sequence[Mapping]) -> tuple:
    R = [r["R_L"] for r in rows]
    A = [r["A_L"] for r in rows]
    C = [np.nan if r.get("C_L") is None else r["C_L"] for r in rows]
    return R, A, C


def run_regime_study(
    scale: str | StudyScale = "quick",
    out_dir: str | os.PathLike = "study",
    *,
    backend: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    store_dir: str | os.PathLike | None = None,
    progress: bool | None = None,
    figures: bool = True,
) -> RegimeStudy:
    """Run the regime study: trained regimes through the sweep layer, controls, bounds, fits, figures, Markdown.

    Parameters
    ----------
    scale : {'smoke', 'quick', 'full'} or StudyScale
        ``quick`` is sized for about five minutes on two cores; ``full`` covers
        d ∈ {16, 32, 64}, P/d ∈ {4, 16}, N ∈ {d, 2d} (hours; use Dask).
    out_dir : path
        Where figures, ``study.json``, ``study.md`` and the bound cache go.
    backend : {'local', 'dask'}
    workers : int, optional
        Worker processes (default: the usable cores).
    scheduler : str, optional
        Dask scheduler address (``backend='dask'``).
    store_dir : path, optional
        Sweep store (default ``out_dir/store``); pass the reproduction's store to share runs.
    progress : bool, optional
        tqdm bars (default: when stderr is a terminal).
    figures : bool
        Draw the depth plots.

    Returns
    -------
    RegimeStudy

    Raises
    ------
    ValueError, TypeError, NotADirectoryError, PermissionError
        Unknown scale or backend, an output directory that is a file or not writable.

    References
    ----------
    Paper eqs. (12), (16), (59)-(63); the study itself is this package's.

    Examples
    --------
    >>> import tempfile  # doctest: +SKIP
    >>> study = run_regime_study("smoke", tempfile.mkdtemp(), workers=1)  # doctest: +SKIP
    >>> study.regime_name  # doctest: +SKIP
    'flat under lazy training; ...'
    """
    import sys

    from numerics.experiments.store import load_arrays, load_results
    from numerics.experiments.sweep import run_sweep

    started = time.perf_counter()
    s = _scale(scale)
    skipped = ()
    if not _has_frozen_field() and any(r in s.regimes for r in ("lazy", "lazy_long")):
        # the lazy regimes freeze the gain through TrainConfig.frozen; without it they cannot be run as specified
        skipped = tuple(r for r in s.regimes if r in ("lazy", "lazy_long"))
        s = dataclasses.replace(s, regimes=tuple(r for r in s.regimes if r not in skipped))
    out = _check_out_dir(out_dir)
    store = Path(store_dir) if store_dir is not None else out / "store"
    if progress is None:
        progress = sys.stderr.isatty()
    workers = (os.cpu_count() or 1) if workers is None else check_positive_int("workers", workers)

    configs = _trained_configs(s)
    unique = list(dict.fromkeys(sorted(configs.values(), key=lambda c: -c.depth)))  # deepest first: shorter tail
    summary = None
    if unique:
        kwargs = dict(backend=backend, progress=progress, runner=study_runner)
        if backend == "dask" and scheduler is not None:
            kwargs["scheduler"] = scheduler
        else:
            kwargs["workers"] = workers
        summary = run_sweep(_grid_of(unique), store, **kwargs)
        if not summary.ok:
            failed = [r for r in load_results(store, status="failed")]
            detail = failed[0]["error"] if failed else "runs still pending"
            raise RuntimeError(f"the study's sweep did not finish: {summary.failed} failed, {summary.pending} pending ({detail})")
    by_hash = {r["hash"]: r for r in load_results(store, status="done")} if unique else {}

    # oracle bounds (cached): exact cosine and the model's pre-norm similarity at its width N
    jobs = []
    for (d, P, N) in s.sizes:
        for (a, b) in _all_spectra(s):
            jobs.append((a, b, d, P, s.k, "cosine", None, s.bound_contexts, 0))
            jobs.append((a, b, d, P, s.k, "prenorm", N, s.bound_contexts, 0))
    computed = _bounds_many(jobs, out / "bounds_cache.json", workers, progress)
    bounds = {}
    for (d, P, N) in s.sizes:
        for (a, b) in _all_spectra(s):
            bounds[(d, P, N, a, b)] = {
                "cosine": computed[(a, b, d, P, s.k, "cosine", None, s.bound_contexts, 0)],
                "prenorm": computed[(a, b, d, P, s.k, "prenorm", N, s.bound_contexts, 0)],
            }

    # frozen-heads control (no training; cached)
    control_cache = out / "frozen_heads_cache.json"
    control = json.loads(control_cache.read_text(encoding="utf-8")) if control_cache.is_file() else {}
    if "frozen_heads" in s.regimes:
        from tqdm.auto import tqdm

        todo = [(size, spectrum, seed) for size in s.sizes for spectrum in s.spectra_of("frozen_heads") for seed in s.seeds]
        for size, spectrum, seed in tqdm(todo, desc="frozen heads", disable=not progress):
            if _control_key(s, size, spectrum, s.depths[-1], seed) not in control:
                d, P, N = size
                rows = frozen_heads_control(d=d, N=N, P=P, depths=s.depths, seed=seed, a=spectrum[0], b=spectrum[1],
                                            k=s.k, scale=s)
                for L, row in zip(s.depths, rows):
                    control[_control_key(s, size, spectrum, L, seed)] = row
        _atomic_json(control_cache, _json_clean_dict(control))

    points = []
    for size in s.sizes:
        for spectrum in _all_spectra(s):
            for regime in REGIMES:
                if regime not in s.regimes or spectrum not in s.spectra_of(regime):
                    continue
                depths = s.depths_of(regime)
                if regime in TRAINED_REGIMES:
                    R, A, C = [], [], []
                    for seed in s.seeds:
                        rows = [by_hash[configs[(regime, size, spectrum, L, seed)].content_hash()]["metrics"] for L in depths]
                        r, a_, c_ = _metric_arrays(rows)
                        R.append(r), A.append(a_), C.append(c_)
                elif regime == "frozen_heads":
                    R, A, C = [], [], []
                    for seed in s.seeds:
                        rows = [control[_control_key(s, size, spectrum, L, seed)] for L in depths]
                        r, a_, c_ = _metric_arrays(rows)
                        R.append(r), A.append(a_), C.append(c_)
                else:  # separate models: disjoint groups of L = 1 models
                    R, A, C = _separate_point(s, size, spectrum, configs, store, load_arrays)
                points.append(summarise_point(regime, size, spectrum, s.k, depths, R, A, C))

    name = name_regime(points)
    figure_files = _draw_figures(s, points, bounds, out) if figures else ()
    markdown = _study_markdown(s, points, bounds, name, figure_files, skipped)
    result = RegimeStudy(scale=s, points=tuple(points), bounds=bounds, regime_name=name, markdown=markdown,
                         figures=tuple(figure_files), out_dir=str(out), wall_time=time.perf_counter() - started,
                         runs=len(unique))
    _atomic_json(out / "study.json", _json_clean_dict(result.to_dict()))
    from numerics.io import atomic_write

    atomic_write(out / "study.md", lambda fh: fh.write(markdown.encode("utf-8")))
    return result


def _json_clean_dict(data):
    if isinstance(data, Mapping):
        return {str(k): _json_clean_dict(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_json_clean_dict(v) for v in data]
    return _json_clean(data)


def _separate_point(s: StudyScale, size, spectrum, configs, store, load_arrays):
    """Per-group R, A, C of averages of separately trained L = 1 models (groups x depths)."""
    from numerics.train import evaluation_batch

    first = configs[("separate", size, spectrum, 1, 0)]
    target = np.asarray(evaluation_batch(first).target, dtype=np.float64)
    predictions = []
    for seed in range(s.separate_models):
        cfg = configs[("separate", size, spectrum, 1, seed)]
        try:
            predictions.append(load_arrays(store, cfg.content_hash(), ["eval_prediction"])["eval_prediction"])
        except KeyError:  # trained into a shared store by another runner: retrain it here (deterministic)
            predictions.append(study_runner(cfg).arrays["eval_prediction"])
    predictions = np.asarray(predictions)
    n_groups = len(s.seeds)
    R, A, C = [], [], []
    for g in range(n_groups):
        r_row, a_row, c_row = [], [], []
        for L in s.separate_depths:
            groups = separate_models_average(predictions, target, L)
            # group g of depth L (disjoint); reuse groups cyclically only if there are fewer groups than seeds
            chosen = groups[g % len(groups)]
            r_row.append(chosen["R_L"]), a_row.append(chosen["A_L"]), c_row.append(chosen["C_L"])
        R.append(r_row), A.append(a_row), C.append(c_row)
    return R, A, C


_COLOURS = {"lazy": "C0", "lazy_long": "C4", "converged": "C3", "frozen_heads": "C2", "separate_models": "C1"}


def _draw_figures(s: StudyScale, points, bounds, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from theory.fitting import depth_law

    fig_dir = out / "figures"
    fig_dir.mkdir(exist_ok=True)
    files = []
    for (d, P, N) in s.sizes:
        for (a, b) in _all_spectra(s):
            pts = [p for p in points if (p.d, p.P, p.N, p.a, p.b) == (d, P, N, a, b)]
            fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
            for p in pts:
                L = np.asarray(p.depths, dtype=float)
                colour = _COLOURS[p.regime]
                se = np.nan_to_num(np.asarray(p.R_se), nan=0.0)
                label = f"{p.regime.replace('_', ' ')}"
                ax.errorbar(L, p.R, yerr=se, fmt="o", color=colour, ms=4, capsize=2, label=label)
                if math.isfinite(p.alpha):
                    grid = np.unique(np.round(np.geomspace(L.min(), L.max(), 60)).astype(int))
                    ax.plot(grid, depth_law(grid, p.L0, p.c, p.alpha), "--", color=colour, lw=1,
                            label=f"{label} fit: α = {p.alpha:.2f}")
                ax2.plot(L, p.C, "o-", color=colour, ms=3, label=f"C_L {p.regime.replace('_', ' ')}")
                ax2.plot(L, p.gap, "s:", color=colour, ms=3, label=f"A_L − C_L {p.regime.replace('_', ' ')}")
            bd = bounds[(d, P, N, a, b)]
            ax.axhline(bd["cosine"].single_head_loss, color="k", lw=1, label=f"best cosine head {bd['cosine'].single_head_loss:.3g}")
            ax.axhline(bd["cosine"].mixture_loss, color="k", lw=1, ls=":", label=f"best cosine mixture {bd['cosine'].mixture_loss:.3g}")
            ax.axhline(bd["prenorm"].single_head_loss, color="0.5", lw=1, ls="-.",
                       label=f"best pre-norm head (N={N}) {bd['prenorm'].single_head_loss:.3g}")
            all_depths = sorted({L for p in pts for L in p.depths})
            for axis in (ax, ax2):
                axis.set_xscale("log", base=2)
                axis.set_xticks(all_depths)
                axis.set_xticklabels([str(L) for L in all_depths])
            ax.set_yscale("log")
            ax.set_xlabel("depth L")
            ax.set_ylabel("loss R_L")
            ax.set_title(f"nonlinear, top-{s.k}: d={d}, P={P}, N={N}, (a, b) = ({a:g}, {b:g})", fontsize=9)
            ax.legend(fontsize=6, ncol=2)
            ax2.set_yscale("log")
            ax2.set_xlabel("depth L")
            ax2.set_ylabel("C_L (shared) and A_L − C_L (disagreement)")
            ax2.legend(fontsize=6, ncol=2)
            fig.tight_layout()
            stem = f"regime_d{d}_P{P}_N{N}_a{a:g}_b{b:g}"
            for ext in ("png", "pdf"):
                fig.savefig(fig_dir / f"{stem}.{ext}", dpi=120)
                files.append(f"figures/{stem}.{ext}")
            plt.close(fig)
    return files


def _fmt(value: float, digits: int = 3) -> str:
    return "—" if value is None or not math.isfinite(value) else f"{value:.{digits}g}"


def _study_markdown(s: StudyScale, points, bounds, name: str, figure_files, skipped=()) -> str:
    lines = [
        "## Where inverse-depth scaling appears",
        "",
        f"**Regime: {name}.**",
        "",
    ]
    if skipped:
        lines += [
            f"**Not run: {', '.join(skipped)}** — these regimes keep the gain at 1 by freezing W_o, W_v, W_y, and "
            "this version's numerics.train.TrainConfig has no 'frozen' field; the regime name above rests on the "
            "other regimes only.",
            "",
        ]
    lines += [
        f"Nonlinear model (eqs. 9-10, M(0)), top-{s.k} task, the package's engine and sweep layer; "
        f"{len(s.seeds)} seeds per point (separate models: {len(s.seeds)} disjoint groups); depths {list(s.depths)} "
        f"(converged: {list(s.converged_depths)}; separate models: {list(s.separate_depths)}). Regimes:",
        "",
    ]
    for regime in s.regimes:
        lines.append(f"- **{regime.replace('_', ' ')}** — {s.describe(regime)}.")
    lines += [
        "",
        "Depth gain = R_1 / R_{L_max}; α fitted to R_L = L0 + c L^(−α) (eq. 16) with its 95 % interval; "
        f"'settles' = C_L and A_L − C_L change by less than {SETTLE_TOLERANCE:.0%} over the last doubling of depth. "
        f"Verdict: 'flat' if the depth gain is below {DEPTH_GAIN_THRESHOLD}, 'inverse-depth' if α ∈ [{ALPHA_WINDOW[0]}, "
        f"{ALPHA_WINDOW[1]}] and it settles. Bounds (Monte Carlo, ± SE): best single softmax head over exact cosine "
        "similarity with optimal temperature and gain, best non-negative mixture of such heads (what an average of "
        "layers can express, eq. 60), and the best head over the model's own pre-norm similarity at width N.",
        "",
        "| d | P | N | (a, b) | regime | R_1 | R_Lmax | gain | α [95 % CI] | ΔC_L | Δ(A−C) | settles | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        ci = f"{_fmt(p.alpha)} [{_fmt(p.alpha_low)}, {_fmt(p.alpha_high)}]"
        lines.append(
            f"| {p.d} | {p.P} | {p.N} | ({p.a:g}, {p.b:g}) | {p.regime.replace('_', ' ')} | "
            f"{_fmt(p.R[0], 4)} ± {_fmt(p.R_se[0], 2)} | {_fmt(p.R[-1], 4)} ± {_fmt(p.R_se[-1], 2)} (L={p.depths[-1]}) | "
            f"{_fmt(p.depth_gain)} ± {_fmt(p.depth_gain_se, 2)} | {ci} | {_fmt(100 * p.plateau_change, 2)} % | "
            f"{_fmt(100 * p.gap_change, 2)} % | {'yes' if p.settles else 'no'} | {p.verdict} |"
        )
    lines += ["", "| d | P | N | (a, b) | E y*² | best cosine head | best cosine mixture | best pre-norm head (N) |",
              "|---|---|---|---|---|---|---|---|"]
    for (d, P, N, a, b), bd in bounds.items():
        cos, pre = bd["cosine"], bd["prenorm"]
        lines.append(
            f"| {d} | {P} | {N} | ({a:g}, {b:g}) | {cos.target_second_moment:.4g} | "
            f"{cos.single_head_loss:.4g} ± {cos.single_head_standard_error:.2g} (τ = {cos.temperature:.3g}) | "
            f"{cos.mixture_loss:.4g} ± {cos.mixture_standard_error:.2g} | "
            f"{pre.single_head_loss:.4g} ± {pre.single_head_standard_error:.2g} |"
        )
    lines += ["", _study_findings(points, bounds), ""]
    for f in figure_files:
        if f.endswith(".png"):
            lines.append(f"![{Path(f).stem}]({f})")
    lines.append("")
    return "\n".join(lines)


def _study_findings(points, bounds) -> str:
    """Sentences stating the numbers: which regime reaches what, against which bound."""
    out = []
    for p in points:
        bd = bounds.get((p.d, p.P, p.N, p.a, p.b))
        if bd is None:
            continue
        best = min(p.R)
        cos = bd["cosine"]
        rel = best / cos.single_head_loss
        out.append(
            f"{p.regime.replace('_', ' ')} (d={p.d}, P={p.P}, N={p.N}, ({p.a:g}, {p.b:g})): lowest loss {best:.4g} "
            f"= {rel:.2f} × the best single cosine head ({cos.single_head_loss:.4g}); {p.verdict}."
        )
    return " ".join(out)


# --------------------------------------------------------------------------- paper consistency


@dataclass(frozen=True)
class ConsistencyRow:
    """One paper number confronted with the oracle bounds at given sizes.

    Attributes
    ----------
    source : str
        E.g. ``'Table 1 (nonlinear L0)'``.
    a, b : float
    k, d, P : int
    paper_value : str
        As the paper prints it.
    single_head, single_head_se, mixture, mixture_se : float
        The bounds and their SEs at (d, P, k).
    target_second_moment : float
        ``E y*²`` (the loss of predicting 0).
    package_value : float or None
        The package's measured plateau at these sizes (when the study measured this spectrum).
    package_label : str
    below_bound : bool
        The paper value lies more than :data:`BOUND_SIGMAS` SEs below the mixture bound.
    statement : str
        The plain sentence for the report.

    Notes
    -----
    No example: it needs trained runs or Monte-Carlo bounds (minutes); see :func:`paper_consistency`.

    References
    ----------
    Paper Tables 1 and 4; eqs. (16), (60).
    """

    source: str
    a: float
    b: float
    k: int
    d: int
    P: int
    paper_value: str
    single_head: float
    single_head_se: float
    mixture: float
    mixture_se: float
    target_second_moment: float
    package_value: float | None
    package_label: str
    below_bound: bool
    statement: str


@dataclass(frozen=True)
class ConsistencyReport:
    """Result of :func:`paper_consistency`: the rows and the Markdown section.

    Attributes
    ----------
    rows : tuple of ConsistencyRow
    markdown : str
        The REPORT.md section "Consistency with the paper".
    n_below : int
        Rows whose paper value lies below the bound.

    Notes
    -----
    No example: it needs trained runs or Monte-Carlo bounds (minutes); see :func:`paper_consistency`.

    References
    ----------
    Paper Tables 1 and 4.
    """

    rows: tuple
    markdown: str
    n_below: int


def _paper_rows() -> list[dict]:
    from theory.paper import paper_table

    rows = []
    verbatim1 = paper_table("table1", as_float=False)
    for raw, row in zip(verbatim1, paper_table("table1")):
        rows.append(dict(source="Table 1 (nonlinear L0)", a=row["a"], b=row["b"], k=2, value=row["nonlinear_L0"],
                         verbatim=str(raw["nonlinear_L0"])))
    verbatim4 = paper_table("table4", as_float=False)
    for raw, row in zip(verbatim4, paper_table("table4")):
        rows.append(dict(source=f"Table 4 (top-{int(row['k'])} L0)", a=row["a"], b=row["b"], k=int(row["k"]), value=row["L0"],
                         verbatim=str(raw["L0"])))
    return rows


def paper_consistency(
    *,
    study: RegimeStudy | None = None,
    d: int = 128,
    P_values: Sequence[int] = (1024, 2048),
    n_contexts: int = 8192,
    seed: int = 0,
    out_dir: str | os.PathLike | None = None,
    workers: int = 1,
    progress: bool = False,
    bound: Callable | None = None,
    extra_sizes: Sequence[tuple] = (),
) -> ConsistencyReport:
    """Each paper plateau the package cannot reach: Table 1's nonlinear L0 and Table 4's L0 vs the oracle bounds.

    The bound at each size is the best non-negative mixture of softmax heads over
    exact cosine similarity (what an average of layers with the paper's
    parallel structure, eq. 60, can express; also the best single head). A paper
    value more than :data:`BOUND_SIGMAS` Monte-Carlo SEs below the mixture bound is
    stated as unattainable by such heads at those sizes.

    Parameters
    ----------
    study : RegimeStudy, optional
        Adds rows at the study's sizes, with the package's measured plateau where the
        study ran the same spectrum.
    d : int, default 128
    P_values : sequence of int, default (1024, 2048)
        The sizes at which the package reproduces the paper's linear Table 3.
    n_contexts, seed : int
        Monte-Carlo contexts and seed of each bound.
    out_dir : path, optional
        Bounds are cached in ``out_dir/bounds_cache.json`` (re-running is cheap).
    workers : int
        Processes computing bounds in parallel.
    progress : bool
    bound : callable, optional
        ``bound(a, b, d, P, k) -> HeadBound`` replacing the Monte-Carlo computation (tests).
    extra_sizes : sequence of (d, P)
        Further sizes (e.g. a scan over d) to locate where the paper's values become attainable.

    Returns
    -------
    ConsistencyReport

    References
    ----------
    Paper Tables 1, 3, 4; eqs. (6), (16), (60).

    Examples
    --------
    >>> from numerics.experiments.bounds import HeadBound
    >>> fake = lambda a, b, d, P, k: HeadBound(5.0, 0.1, 10.0, 1.0, 4.0, 0.1, (), (), 60.0, "", P, k, "cosine", 64, 64, d)
    >>> report = paper_consistency(P_values=(1024,), bound=fake)
    >>> report.rows[0].paper_value, report.rows[0].below_bound
    ('2.007', True)
    """
    d = check_positive_int("d", d)
    P_values = tuple(check_positive_int("P", P) for P in P_values)
    out = _check_out_dir(out_dir) if out_dir is not None else None
    paper = _paper_rows()
    sizes = [(d, P) for P in P_values]
    if study is not None:
        sizes += [(sd, sP) for (sd, sP, _) in study.scale.sizes if (sd, sP) not in sizes]
    for extra in extra_sizes:
        sd, sP = (check_positive_int(name, value) for name, value in zip(("d", "P"), extra))
        if (sd, sP) not in sizes:
            sizes.append((sd, sP))
    if bound is None:
        jobs = [(r["a"], r["b"], sd, sP, r["k"], "cosine", None, n_contexts, seed) for (sd, sP) in sizes for r in paper
                if r["k"] <= sP]
        computed = _bounds_many(jobs, None if out is None else out / "bounds_cache.json", workers, progress)

        def bound(a, b, d_, P_, k_):  # noqa: F811 - the default provider
            return computed[(a, b, d_, P_, k_, "cosine", None, n_contexts, seed)]

    rows = []
    for (sd, sP) in sizes:
        for r in paper:
            if r["k"] > sP:
                continue
            hb = bound(r["a"], r["b"], sd, sP, r["k"])
            package_value, package_label = None, ""
            if study is not None:
                pts = [p for p in study.points if (p.d, p.P, p.a, p.b, p.k) == (sd, sP, r["a"], r["b"], r["k"])]
                measured = [(min(p.R), p) for p in pts]
                if measured:
                    value, p = min(measured, key=lambda item: item[0])
                    package_value = float(value)
                    package_label = f"lowest measured R_L ({p.regime.replace('_', ' ')}, N={p.N}, L={p.depths[int(np.argmin(p.R))]})"
            margin = (hb.mixture_loss - r["value"]) / max(hb.mixture_standard_error, 1e-300)
            below = bool(margin > BOUND_SIGMAS)
            ratio = hb.mixture_loss / r["value"]
            if below:
                statement = (
                    f"The paper's {r['source']} = {r['verbatim']} at (a, b) = ({r['a']:g}, {r['b']:g}) is below what any "
                    f"non-negative mixture of softmax heads over exact cosine similarity (optimal temperatures and gains) "
                    f"can reach at d = {sd}, P = {sP}: the best mixture "
                    f"reaches {hb.mixture_loss:.4g} ± {hb.mixture_standard_error:.2g} ({ratio:.3g}× the paper's value, "
                    f"{margin:.0f} SE above it; best single head {hb.single_head_loss:.4g}). Unattainable at these sizes."
                )
            else:
                statement = (
                    f"The paper's {r['source']} = {r['verbatim']} at (a, b) = ({r['a']:g}, {r['b']:g}) is not below the "
                    f"bound at d = {sd}, P = {sP} (best mixture {hb.mixture_loss:.4g} ± {hb.mixture_standard_error:.2g})."
                )
            rows.append(ConsistencyRow(
                source=r["source"], a=float(r["a"]), b=float(r["b"]), k=int(r["k"]), d=sd, P=sP, paper_value=r["verbatim"],
                single_head=hb.single_head_loss, single_head_se=hb.single_head_standard_error, mixture=hb.mixture_loss,
                mixture_se=hb.mixture_standard_error, target_second_moment=hb.target_second_moment,
                package_value=package_value, package_label=package_label, below_bound=below, statement=statement,
            ))
    markdown = _consistency_markdown(rows, n_contexts)
    return ConsistencyReport(rows=tuple(rows), markdown=markdown, n_below=sum(r.below_bound for r in rows))


def _consistency_markdown(rows: Sequence[ConsistencyRow], n_contexts: int) -> str:
    n_below = sum(r.below_bound for r in rows)
    lines = [
        "## Consistency with the paper",
        "",
        "Each nonlinear plateau the paper reports (Table 1, nonlinear L0; Table 4, L0) against the oracle bound: the "
        "best loss of one softmax head over exact cosine similarity with optimal temperature and gain, and of a "
        "non-negative mixture of such heads (what the average of layers of the paper's parallel model, eq. 60, can "
        f"express), Monte Carlo over contexts ({n_contexts} per bound, ± one SE). 'below bound' = the paper's value is "
        f"more than {BOUND_SIGMAS:g} SE below the mixture bound at those sizes. d = 128, P ≈ 1024 are the sizes at which "
        "the package reproduces the paper's linear Table 3.",
        "",
        f"**{n_below} of {len(rows)} paper values are below the bound at the sizes stated.**",
        "",
        "| source | (a, b) | k | d | P | paper | best single head | best mixture | mixture / paper | E y*² | package | below bound |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        pkg = "—" if r.package_value is None else f"{r.package_value:.4g} ({r.package_label})"
        lines.append(
            f"| {r.source} | ({r.a:g}, {r.b:g}) | {r.k} | {r.d} | {r.P} | {r.paper_value} | "
            f"{r.single_head:.4g} ± {r.single_head_se:.2g} | {r.mixture:.4g} ± {r.mixture_se:.2g} | "
            f"{r.mixture / float(r.paper_value):.3g} | {r.target_second_moment:.4g} | {pkg} | {'**yes**' if r.below_bound else 'no'} |"
        )
    lines += ["", "Per size: how far the best mixture of cosine heads lies from the paper's values.", "",
              "| d | P | rows | below bound | mixture / paper: median | min | max |", "|---|---|---|---|---|---|---|"]
    for size in dict.fromkeys((r.d, r.P) for r in rows):
        sub = [r for r in rows if (r.d, r.P) == size]
        ratios = np.array([r.mixture / float(r.paper_value) for r in sub])
        lines.append(f"| {size[0]} | {size[1]} | {len(sub)} | {sum(r.below_bound for r in sub)} | "
                     f"{np.median(ratios):.3g} | {ratios.min():.3g} | {ratios.max():.3g} |")
    medians = {size: float(np.median([r.mixture / float(r.paper_value) for r in rows if (r.d, r.P) == size]))
               for size in dict.fromkeys((r.d, r.P) for r in rows)}
    closest = min(medians, key=lambda size: abs(math.log(medians[size])))
    sub = [r.mixture / float(r.paper_value) for r in rows if (r.d, r.P) == closest]
    lines += ["", f"Of the sizes checked, the paper's values are closest to the bound at d = {closest[0]}, P = {closest[1]} "
              f"(mixture / paper: median {medians[closest]:.3g}, range {min(sub):.3g}-{max(sub):.3g}).", ""]
    lines += [*[f"- {r.statement}" for r in rows if r.below_bound], ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- measured defaults


def fit_inverse_depth(depths: Sequence[int], losses) -> tuple[float, float, np.ndarray]:
    """Least-squares ``(L0, c)`` of ``R_L = L0 + c/L`` (paper eq. 63 read with fixed A, C; eq. 16 with alpha = 1).

    ``losses`` may be (seeds x depths); the seed means are fitted, and the
    covariance is the usual ``s² (XᵀX)⁻¹`` with ``s²`` from the residuals (plus
    the seed-to-seed variance of the means when there are several seeds).

    Returns
    -------
    L0, c : float
    covariance : ndarray, shape (2, 2)

    References
    ----------
    Paper eqs. (16), (63).

    Examples
    --------
    >>> L0, c, cov = fit_inverse_depth([1, 2, 4, 8], [3.0, 2.0, 1.5, 1.25])
    >>> round(L0, 9), round(c, 9)
    (1.0, 2.0)
    """
    depths = np.asarray(depths, dtype=np.float64)
    values = np.atleast_2d(np.asarray(losses, dtype=np.float64))
    mean = values.mean(axis=0)
    # the design of R = C + (A − C)/L in (C, A − C): columns [1, 1/L] (tests check it against exchangeable_loss)
    X = np.column_stack([np.ones_like(depths), 1.0 / depths])
    coef, *_ = np.linalg.lstsq(X, mean, rcond=None)
    resid = mean - X @ coef
    dof = max(len(depths) - 2, 1)
    s2 = float(resid @ resid) / dof
    XtX_inv = np.linalg.inv(X.T @ X)
    cov = s2 * XtX_inv
    if values.shape[0] > 1:  # seed scatter of the means, propagated through the linear fit
        var_mean = values.var(axis=0, ddof=1) / values.shape[0]
        H = XtX_inv @ X.T
        cov = cov + H @ np.diag(var_mean) @ H.T
    return float(coef[0]), float(coef[1]), cov


def make_softmax_defaults(
    out_path: str | os.PathLike,
    *,
    scale: str | StudyScale = "quick",
    spectra: Sequence[tuple] | None = None,
    regimes: Sequence[str] = ("lazy", "converged"),
    default_regime: str = "lazy",
    store_dir: str | os.PathLike | None = None,
    backend: str = "local",
    workers: int | None = None,
    progress: bool | None = None,
    command: str | None = None,
) -> dict:
    """Train (through the sweep layer, cached) and fit ``(L0, c)`` over a spectrum grid; write the defaults JSON.

    For each size of ``scale`` (N = the scale's width), each spectrum and each regime:
    the trained runs at the regime's depths and seeds, the fit of ``R_L = L0 + c/L``
    (:func:`fit_inverse_depth`), and the measured ``C_L``, ``A_L − C_L`` at the largest
    depth. The file (format :data:`theory.softmax_defaults.DEFAULTS_FORMAT`) is what
    :func:`theory.predict_loss` reads.

    Parameters
    ----------
    out_path : path
        The JSON file to write (e.g. ``theory/data/softmax_defaults.json``).
    scale : str or StudyScale
    spectra : sequence of (a, b), optional
        Default: the scale's spectra and extra spectra (at ``quick``: (0, 0), (0, 0.5), (0.5, 0), the
        spectra of ``idepth reproduce --scale quick``'s nonlinear difficult runs).
    regimes : sequence of {'lazy', 'lazy_long', 'converged'}
    default_regime : str
        The regime :func:`theory.predict_loss` uses without a calibration.
    store_dir : path, optional
        Sweep store (default ``./idepth-defaults-store``; a cache, not part of the provenance).
    backend, workers, progress
        As in :func:`run_regime_study`.
    command : str, optional
        The command line recorded as provenance (default: the equivalent ``idepth study defaults``
        command; the store and worker count are left out, they do not change the numbers).

    Returns
    -------
    dict
        The data written.

    References
    ----------
    Paper eqs. (16), (61)-(63).

    Examples
    --------
    >>> import tempfile, pathlib  # doctest: +SKIP
    >>> data = make_softmax_defaults(pathlib.Path(tempfile.mkdtemp()) / "d.json", scale="smoke",
    ...                              regimes=("converged",), default_regime="converged", workers=1)  # doctest: +SKIP
    """
    import sys

    from numerics.experiments.store import load_results
    from numerics.experiments.sweep import run_sweep
    from theory import __version__

    s = _scale(scale)
    regimes = tuple(check_choice("regime", r, TRAINED_REGIMES) for r in regimes)
    if default_regime not in regimes:
        raise ValueError(f"default_regime must be one of the regimes {regimes}; got {default_regime!r}")
    spectra = tuple((float(a), float(b)) for a, b in (_all_spectra(s) if spectra is None else spectra))
    out_path = Path(out_path)
    if out_path.exists() and out_path.is_dir():
        raise IsADirectoryError(f"out_path {str(out_path)!r} is a directory; give a .json file path")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    store = Path(store_dir) if store_dir is not None else Path.cwd() / "idepth-defaults-store"
    if progress is None:
        progress = sys.stderr.isatty()
    workers = (os.cpu_count() or 1) if workers is None else check_positive_int("workers", workers)

    configs = {}
    for (d, P, N) in s.sizes:
        for (a, b) in spectra:
            for regime in regimes:
                for L in s.depths_of(regime):
                    for seed in s.seeds:
                        configs[(regime, d, P, N, a, b, L, seed)] = regime_config(
                            regime, d=d, N=N, P=P, depth=L, seed=seed, a=a, b=b, k=s.k, scale=s)
    unique = list(dict.fromkeys(sorted(configs.values(), key=lambda c: -c.depth)))
    summary = run_sweep(_grid_of(unique), store, backend=backend, workers=workers, progress=progress, runner=study_runner)
    if not summary.ok:
        raise RuntimeError(f"the defaults sweep did not finish: {summary.failed} failed, {summary.pending} pending")
    by_hash = {r["hash"]: r for r in load_results(store, status="done")}

    entries = []
    for (d, P, N) in s.sizes:
        for (a, b) in spectra:
            for regime in regimes:
                depths = s.depths_of(regime)
                R = [[by_hash[configs[(regime, d, P, N, a, b, L, seed)].content_hash()]["metrics"]["R_L"] for L in depths]
                     for seed in s.seeds]
                A = [[by_hash[configs[(regime, d, P, N, a, b, L, seed)].content_hash()]["metrics"]["A_L"] for L in depths]
                     for seed in s.seeds]
                C = [[by_hash[configs[(regime, d, P, N, a, b, L, seed)].content_hash()]["metrics"]["C_L"] for L in depths]
                     for seed in s.seeds]
                L0, c, cov = fit_inverse_depth(depths, R)
                point = summarise_point(regime, (d, P, N), (a, b), s.k, depths, R, A,
                                        [[np.nan if v is None else v for v in row] for row in C])
                entries.append(_json_clean_dict({
                    "a": a, "b": b, "d": d, "N": N, "P": P, "k": s.k, "regime": regime, "L0": L0, "c": c,
                    "covariance": cov.tolist(), "depths": list(depths), "R_mean": list(point.R), "R_se": list(point.R_se),
                    "C_at_Lmax": point.C[-1], "A_minus_C_at_Lmax": point.gap[-1], "alpha_free_fit": point.alpha,
                    "alpha_interval": [point.alpha_low, point.alpha_high], "verdict": point.verdict,
                }))
    if command is None:
        spectra_arg = ";".join(f"{a:g},{b:g}" for a, b in spectra)
        command = (f"idepth study defaults --scale {s.name} --spectra '{spectra_arg}' --regimes {','.join(regimes)} "
                   f"--default-regime {default_regime} --out {out_path}")
    data = {
        "format": "idepth-softmax-defaults/1",
        "default_regime": default_regime,
        "provenance": {
            "package_version": __version__,
            "date": _dt.date.today().isoformat(),
            "command": command,
            "model": "nonlinear (eqs. 9-10, M(0)), task 'difficult' (eq. 6)",
            "fit": "R_L = L0 + c/L by least squares on the seed means (eq. 16 with alpha = 1; eq. 63 with fixed A, C); "
                   "covariance from residuals plus seed scatter",
            "sizes": [list(size) for size in s.sizes],
            "spectra": [list(sp) for sp in spectra],
            "seeds": list(s.seeds),
            "depths": {r: list(s.depths_of(r)) for r in regimes},
            "regimes": {r: s.describe(r) for r in regimes},
            "c_lambda": 1.0,
            "c_omega": 1.0,
        },
        "entries": entries,
    }
    _atomic_json(out_path, data)
    return data
