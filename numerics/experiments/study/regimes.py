"""The regimes of the study: the configs of the trained ones (:func:`regime_config`: a run of the regime's
:class:`~numerics.experiments.study.plan.Plan`, :meth:`~numerics.experiments.study.regime_plans.StudyScale.family`), the two
controls that need no training, and the study itself (:func:`run_regime_study`, which trains; its page is
:func:`write_regime_study`, which does not)."""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from numerics.io import json_text, make_output_dir, write_together
from theory.validation import check_choice, check_positive_int

from .curves import CurveSummary, summarise_seeds
from ..criteria import DepthDependence
from ..execution import Execution, as_execution
from ..recipes import LAZY_INIT
from .regime_plans import REGIMES, STUDY_FAMILIES, TRAINED_REGIMES, StudyScale
from .plateaus import paper_consistency
from .figures import draw_regime_figures
from .page import regime_markdown

__all__ = [
    "RegimeStudy",
    "regime_config",
    "frozen_heads_control",
    "separate_models_average",
    "name_regime",
    "run_regime_study",
    "train_regimes",
    "trained_configs",
    "metric_arrays",
    "write_regime_study",
]


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

    The same arguments give the same content hash, so a store shared with the study trains a
    run once. ``a, b``: spectrum (eq. 2); ``k``: top-k (eq. 6); ``scale`` supplies step
    budgets, batch and evaluation sizes. Raises ``ValueError`` for an unknown regime.

    References
    ----------
    Paper eqs. (9)-(12) (model, loss); the training protocols are this package's.

    Examples
    --------
    >>> cfg = regime_config("converged", d=4, N=4, P=8, depth=2, seed=0, scale="smoke")
    >>> cfg.learning_rate, cfg.schedule, cfg.max_steps
    (0.001, 'warmup_cosine', 20)
    """
    check_choice("regime", regime, TRAINED_REGIMES)
    family = StudyScale.of(scale).family(regime, (d, P, N))
    return dataclasses.replace(family, k=k).config(a, b, depth, seed)


def frozen_heads_control(
    *, d: int, N: int, P: int, depths: Sequence[int], seed: int, a: float = 0.0, b: float = 0.0, k: int = 2,
    scale: str | StudyScale = "quick",
) -> list[dict]:
    """Random heads of the lazy initialisation, only the gain trained (solved exactly), per depth.

    The ``max(depths)`` heads of the lazy run of this seed are drawn once; depth ``L`` uses the
    first ``L`` (exact for the parallel model, eq. 59). ``ŷ = g ū`` is linear in ``g``, so the
    trained gain is ``g* = E[ū y*]/E[ū²]``, fitted on ``fit_size`` training contexts; the
    loss is measured on the run's evaluation set. Returns per depth ``R_L, A_L, C_L``, their
    SEs and ``gain``.

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
    from numerics.train import evaluation_batch, random_streams
    from theory.decomposition import decompose

    s = StudyScale.of(scale)
    depths = [check_positive_int("depth", L) for L in depths]
    L_max = max(depths)
    config = regime_config("converged", d=d, N=N, P=P, depth=L_max, seed=seed, a=a, b=b, k=k, scale=s)
    config = dataclasses.replace(config, dtype="float64", init=dict(LAZY_INIT))  # the lazy run's initial heads
    model = get_model(config.model)
    rng_init, rng_batches, _ = random_streams(config)
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
        out.append(_decomposition(dec) | {"gain": gain})
    return out


def _decomposition(dec) -> dict:
    return {"R_L": dec.R, "A_L": dec.A, "C_L": dec.C,
            "R_L_se": dec.R_se, "A_L_se": dec.A_se, "C_L_se": dec.C_se}


def separate_models_average(predictions: np.ndarray, target: np.ndarray, depth: int,
                            max_groups: int | None = None) -> list[dict]:
    """Loss of averages of ``depth`` separately trained models, over disjoint groups of models.

    ``predictions`` (M, B): each model's on a common evaluation set; ``depth`` models per
    average (the ``L`` of eq. 59), at most ``max_groups`` groups. Returns per group ``R_L,
    A_L, C_L`` and their SEs (eqs. 61-63).

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
    target = np.asarray(target, dtype=np.float64)
    return [_decomposition(decompose(predictions[g * depth:(g + 1) * depth], target))
            for g in range(n_groups)]


_REGIME_PHRASES = {
    "lazy": "under lazy training",
    "lazy_long": "under longer lazy training",
    "converged": "at convergence",
    "frozen_heads": "for frozen random heads",
    "separate_models": "for averages of separate models",
}


def name_regime(points: Sequence[CurveSummary]) -> str:
    """One line naming where inverse-depth scaling appears: each regime by its most common verdict.

    Ties go to the first of inverse-depth, improves, flat.

    References
    ----------
    Paper eqs. (16), (63).

    Examples
    --------
    >>> import numpy as np
    >>> from numerics.experiments.study.curves import summarise_seeds
    >>> pts = [summarise_seeds("lazy", (8, 32, 8), (0, 0), 2, [1, 2, 4], [[3, 2, 1.5]] * 3, [[3, 3, 3]] * 3,
    ...                        [[np.nan, 1, 1]] * 3),
    ...        summarise_seeds("converged", (8, 32, 8), (0, 0), 2, [1, 2, 4], [[3, 3, 3]] * 3, [[3, 3, 3]] * 3,
    ...                        [[np.nan, 3, 3]] * 3)]
    >>> name_regime(pts)
    'inverse-depth under lazy training; flat at convergence'
    """
    parts = []
    for regime in REGIMES:
        verdicts = [p.verdict for p in points if p.name == regime]
        if not verdicts:
            continue
        kinds = [DepthDependence.of(v) for v in verdicts]
        order = list(DepthDependence)
        best = max(order, key=lambda kind: (kinds.count(kind), -order.index(kind)))
        count = kinds.count(best)
        share = "" if count == len(kinds) else f" ({count} of {len(kinds)} points)"
        word = "improves (not 1/L)" if best is DepthDependence.IMPROVES else best
        parts.append(f"{word} {_REGIME_PHRASES[regime]}{share}")
    return "; ".join(parts)


@dataclass(frozen=True)
class RegimeStudy:
    """Result of :func:`run_regime_study`.

    Attributes
    ----------
    bounds : Mapping
        ``(d, P, N, a, b) -> {'cosine': HeadBound, 'prenorm': HeadBound}``.
    points : tuple of CurveSummary
        One per (size, spectrum, regime); ``name`` is the regime.
    regime_name, markdown : str
        :func:`name_regime`; the report section (figures relative to ``out_dir``), empty until
        :func:`write_regime_study` has written it.
    figures : tuple of str
        PNG and PDF files, relative to ``out_dir`` (none until written).
    runs, trained : int
        Training runs in the study's grid; those trained by this call.
    consistency : ConsistencyReport or None
        The paper's plateaus against the bounds (:func:`~numerics.experiments.study.plateaus.paper_consistency`),
        if the study was asked to check them; not part of :meth:`to_dict`.

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
    out_dir: str
    wall_time: float
    runs: int
    trained: int = 0
    markdown: str = ""
    figures: tuple = ()
    consistency: object = None

    def point(self, regime: str, size: tuple | None = None, spectrum: tuple | None = None) -> CurveSummary:
        """The point of ``regime`` (at ``size`` and ``spectrum``; default the first ones)."""
        size = tuple(self.scale.sizes[0] if size is None else size)
        spectrum = tuple(map(float, self.scale.spectra[0] if spectrum is None else spectrum))
        for p in self.points:
            if p.name == regime and p.size == size and (p.a, p.b) == spectrum:
                return p
        raise KeyError(f"no point for regime={regime!r}, size={size}, spectrum={spectrum}")

    def to_dict(self) -> dict:
        """JSON-able summary (points, bounds, name, scale)."""
        return {
            "scale": self.scale.to_dict(),
            "regime_name": self.regime_name,
            "points": [p.to_dict() for p in self.points],
            "bounds": [
                {"size": list(key[:3]), "spectrum": list(key[3:]),
                 **{sim: b.to_dict() for sim, b in value.items()}}
                for key, value in self.bounds.items()
            ],
            "figures": list(self.figures),
            "wall_time": self.wall_time,
            "runs": self.runs,
            "trained": self.trained,
        }


def _frozen_heads_rows(key: dict) -> list:
    """:func:`frozen_heads_control` of one cache key (every input of the result)."""
    d, P, N = key["size"]
    budget = StudyScale(name="frozen-heads", sizes=(tuple(key["size"]),), spectra=(tuple(key["spectrum"]),),
                        depths=tuple(key["depths"]), seeds=(key["seed"],), k=key["k"], fit_size=key["fit_size"],
                        eval_size=key["eval_size"], regimes=("frozen_heads",))
    return frozen_heads_control(d=d, N=N, P=P, depths=key["depths"], seed=key["seed"], a=key["spectrum"][0],
                                b=key["spectrum"][1], k=key["k"], scale=budget)


def trained_configs(s: StudyScale) -> dict:
    """``{(regime, size, spectrum, depth, seed): TrainConfig}`` of every training run the study needs.

    Examples
    --------
    >>> from numerics.experiments.study.regime_plans import STUDY_SCALES
    >>> configs = trained_configs(STUDY_SCALES["smoke"])
    >>> len(configs) > 0, next(iter(configs))[0]
    (True, 'lazy')
    """
    configs = {}
    for size in s.sizes:
        families = {regime: s.family(regime, size)
                    for regime in STUDY_FAMILIES if regime in s.regimes}
        for spectrum in s.all_spectra:
            for regime, family in families.items():
                if spectrum not in family.spectra:
                    continue
                key = "separate" if regime == "separate_models" else regime
                for depth in family.depths:
                    for seed in family.seeds:
                        configs[(key, size, spectrum, depth, seed)] = family.config(*spectrum, depth, seed)
    return configs


def metric_arrays(rows: Sequence[Sequence[Mapping]]) -> tuple:
    """``R_L``, ``A_L``, ``C_L`` of metrics given seeds x depths (None read as NaN): three nested lists.

    Examples
    --------
    >>> metric_arrays([[{"R_L": 2.0, "A_L": 3.0, "C_L": None}]])
    ([[2.0]], [[3.0]], [[nan]])
    """
    return tuple([[np.nan if r.get(name) is None else r[name] for r in seed] for seed in rows]
                 for name in ("R_L", "A_L", "C_L"))


def train_regimes(s: StudyScale, store, execution: Execution) -> tuple[dict, dict, int, int]:
    """Train every run of :func:`trained_configs` through the store (finished runs are not retrained).

    Each trained regime at each size is a one-run plan (:meth:`StudyScale.family`), run by the one driver
    (:func:`~numerics.experiments.study.run.run_plan`). Returns the configs and their metrics by key, the number
    of distinct runs and how many this call trained. Raises ``RuntimeError`` naming the first failure if a run
    failed or is still pending. The regime study and the defaults
    (:func:`~numerics.experiments.study.defaults.make_softmax_defaults`) train through it, so the same key is the
    same run in both.

    Notes
    -----
    No example: it trains (see :func:`run_regime_study`).
    """
    from numerics.experiments.store import load_results

    from .certified.cells import finished_hashes
    from .run import run_plan

    configs = trained_configs(s)
    before = finished_hashes(store)
    runs = {}
    for size in s.sizes:
        for regime in STUDY_FAMILIES:
            if regime in s.regimes:
                runs.update(run_plan(s.family(regime, size), store, execution=execution))
    by_hash = {r["hash"]: r for r in load_results(store, status="done")} if runs else {}
    measured = {key: by_hash[cfg.content_hash()]["metrics"] for key, cfg in configs.items()}
    return configs, measured, len(runs), len(set(runs) - before)


def run_regime_study(
    scale: str | StudyScale = "quick",
    out_dir: str | os.PathLike = "study",
    *,
    execution: Execution | None = None,
    consistency: Mapping | None = None,
) -> RegimeStudy:
    """Run the regime study: the trained regimes, the controls, bounds and fits (no page: :func:`write_regime_study`).

    ``scale`` is a study budget or a reproduction scale's name; ``out_dir`` is the study's directory
    (its page goes there). ``execution`` says where the runs and bounds execute; its ``store_dir`` and
    ``cache_dir`` (bounds, frozen-head fits) default to ``out_dir/store`` and ``out_dir/cache`` (a
    reproduction passes its own, so its sections share one value per quantity). ``consistency``: then check
    the paper's plateaus against the bounds (:func:`~numerics.experiments.study.plateaus.paper_consistency`, its
    ``d``, ``P_values``, ``paper_size_contexts``; ``{}``: its defaults) with the study's bound contexts, cache and
    pool, so a bound in both has one value; ``None``: not checked. Bad input raises ``ValueError``, ``TypeError``
    or ``OSError``.

    References
    ----------
    Paper eqs. (12), (16), (59)-(63); the study itself is this package's.

    Examples
    --------
    >>> import tempfile  # doctest: +SKIP
    >>> study = write_regime_study(run_regime_study("smoke", tempfile.mkdtemp(),
    ...                                             execution=Execution(workers=1)))  # doctest: +SKIP
    >>> study.regime_name  # doctest: +SKIP
    'flat under lazy training; ...'
    """
    from numerics.experiments.store import load_arrays

    from ..bounds import bound_key, head_bounds
    from ..cache import cached_many

    started = time.perf_counter()
    s = StudyScale.of(scale)
    execution = as_execution(execution)
    out = make_output_dir(out_dir)
    cache = execution.cache_dir or out / "cache"
    store = execution.store_dir or out / "store"
    progress = execution.progress
    configs, measured, runs, trained = train_regimes(s, store, execution)

    # oracle bounds (cached): exact cosine and the model's pre-norm similarity at its width N
    cells = [(size, spectrum) for size in s.sizes for spectrum in s.all_spectra]
    keys = []
    for (d, P, N), (a, b) in cells:
        keys.append(bound_key(a, b, d, P, s.k, n_contexts=s.bound_contexts))
        keys.append(bound_key(a, b, d, P, s.k, n_contexts=s.bound_contexts, similarity="prenorm", width=N))
    computed = head_bounds(keys, cache, workers=execution.pool_size(), progress=progress)
    bounds = {(*size, *spectrum): {"cosine": computed[2 * i], "prenorm": computed[2 * i + 1]}
              for i, (size, spectrum) in enumerate(cells)}

    # frozen-heads control (no training; cached)
    if "frozen_heads" in s.regimes:
        todo = [(size, spectrum, seed) for size in s.sizes for spectrum in s.spectra_of("frozen_heads")
                for seed in s.seeds]
        control_keys = [{"size": list(size), "spectrum": list(spectrum), "k": s.k, "depths": list(s.depths),
                         "seed": seed, "fit_size": s.fit_size, "eval_size": s.eval_size}
                        for size, spectrum, seed in todo]
        rows = cached_many(cache, "frozen-heads", control_keys, _frozen_heads_rows, progress=progress,
                           desc="frozen heads")
        for (size, spectrum, seed), per_depth in zip(todo, rows):
            for L, row in zip(s.depths, per_depth):
                measured[("frozen_heads", size, spectrum, L, seed)] = row

    points = []
    for size in s.sizes:
        for spectrum in s.all_spectra:
            for regime in REGIMES:
                if regime not in s.regimes or spectrum not in s.spectra_of(regime):
                    continue
                depths = s.depths_of(regime)
                if regime == "separate_models":  # disjoint groups of L = 1 models
                    R, A, C = _separate_point(s, size, spectrum, configs, store, load_arrays)
                else:
                    keys = [[(regime, size, spectrum, L, seed) for L in depths] for seed in s.seeds]
                    R, A, C = metric_arrays([[measured[key] for key in seed] for seed in keys])
                points.append(summarise_seeds(regime, size, spectrum, s.k, depths, R, A, C))

    study = RegimeStudy(scale=s, points=tuple(points), bounds=bounds, regime_name=name_regime(points),
                        out_dir=str(out), wall_time=time.perf_counter() - started, runs=runs, trained=trained)
    if consistency is None:
        return study
    # its bounds (the d = 128 ones cost most) are computed by the pool, like the study's
    pool = dataclasses.replace(execution, cache_dir=cache, workers=execution.pool_size())
    return dataclasses.replace(study, consistency=paper_consistency(study=study, n_contexts=s.bound_contexts,
                                                                    execution=pool, **consistency))


def write_regime_study(result: RegimeStudy, *, figures: bool = True) -> RegimeStudy:
    """Write the regime study's page into its directory: the figures, ``study.json`` and ``study.md`` (and
    ``consistency.md`` if the study checked the paper's plateaus).

    Every file replaces its old version together with the others (:func:`numerics.io.write_together`). Returns
    ``result`` with its
    ``markdown`` and ``figures`` (file names relative to ``out_dir``). It trains nothing: the numbers are
    :func:`run_regime_study`'s.

    Notes
    -----
    No example: it needs a study's points and bounds (minutes); see :func:`run_regime_study`.
    """
    drawn = draw_regime_figures(result.scale, result.points, result.bounds) if figures else {}
    markdown = regime_markdown(result.scale, result.points, result.bounds, result.regime_name, list(drawn))
    result = dataclasses.replace(result, markdown=markdown, figures=tuple(drawn))
    write_together(result.out_dir, {**drawn, "study.json": json_text(result.to_dict()), "study.md": markdown,
                                    **({} if result.consistency is None
                                       else {"consistency.md": result.consistency.markdown})})
    return result


def _separate_point(s: StudyScale, size, spectrum, configs, store, load_arrays):
    """Per-group R, A, C of averages of separately trained L = 1 models (groups x depths)."""
    from numerics.train import evaluation_batch

    runs = [configs[("separate", size, spectrum, 1, seed)] for seed in range(s.separate_models)]
    target = np.asarray(evaluation_batch(runs[0]).target, dtype=np.float64)
    arrays = [load_arrays(store, cfg.content_hash(), ["eval_prediction"]) for cfg in runs]
    predictions = np.asarray([a["eval_prediction"] for a in arrays])
    groups = {L: separate_models_average(predictions, target, L) for L in s.separate_depths}
    # group g of each depth (disjoint), reused cyclically only if there are fewer groups than seeds
    return metric_arrays([[groups[L][g % len(groups[L])] for L in s.separate_depths]
                           for g in range(len(s.seeds))])


