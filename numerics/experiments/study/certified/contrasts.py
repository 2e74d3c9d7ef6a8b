"""Training recipes beside the envelope: the lazy and equal-budget regimes at the certified study's sizes.

Is the paper's ``c/L`` law a property of the optimum or of a way of training? The regime study's
``lazy`` (gain frozen) and ``equal_budget`` configs (:func:`numerics.experiments.study.regime_config`,
``quick`` budget) train at the study's sizes and seeds and are evaluated on its *report* set, so their
errors pair with the envelope's and
:func:`~numerics.experiments.study.certified.statistics.summarise` gives each recipe its α.

Every run carries its recipe's name: an exported run records it (``recipe``); the files exported before
it did are matched, in one place (:func:`derive_recipe`), against the recipes' definitions in
:mod:`numerics.experiments.recipes`, and a run that matches no contrast recipe (or several) is refused.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from numerics.models import get_model
from numerics.train import TrainConfig, evaluation_batch, train

from ...criteria import mean_se
from ...grid import Grid
from ...recipes import RECIPES
from ...sweep import run_sweep
from ..regimes import regime_config
from .cells import cell_files, finished_hashes, export_cells, import_cells, read_cell
from ..plan import Plan, eval_seed
from .run import CellResult, context_errors

__all__ = ["CONTRAST_RECIPES", "CONTRAST_SCALE", "Contrast", "contrast_configs", "collect_contrasts", "derive_recipe",
           "run_contrast", "run_contrasts"]

#: the regime study's name of each contrast recipe (:func:`numerics.experiments.study.regime_config`)
CONTRAST_RECIPES = {"lazy": "lazy", "equal_budget": "converged"}
#: the regime study budget the contrasts take their steps, batch and evaluation period from
CONTRAST_SCALE = "quick"


@dataclasses.dataclass(frozen=True)
class Contrast:
    """One trained contrast run: its recipe, setting, depth, seed and report-set squared errors.

    Examples
    --------
    >>> c = Contrast("lazy", (0.0, 0.0, 2, 16, 32, 64), 1, 0, np.zeros(4, np.float32), "abc")
    >>> c.recipe, c.errors.shape
    ('lazy', (4,))
    """

    recipe: str
    setting: tuple
    depth: int
    seed: int
    errors: np.ndarray
    run_hash: str


def contrast_configs(plan: Plan, *, scale: str = CONTRAST_SCALE) -> list:
    """The contrast runs (``TrainConfig``) of ``plan``: every recipe, setting, depth and seed.

    Each is ``regime_config(...)`` at the plan's sizes moved onto the plan's report set (its seed, size,
    stream); the recipe is in the config (frozen gain: lazy).

    References
    ----------
    Paper eqs. (9)-(12); the recipes are this package's (:mod:`numerics.experiments.recipes`).

    Examples
    --------
    >>> plan = Plan(spectra=((0.0, 0.0),), depths=(1, 2), seeds=(0,), long_spectra=(), top16_spectra=())
    >>> configs = contrast_configs(plan)
    >>> [(c.depth, c.learning_rate, c.frozen != ()) for c in configs]
    [(1, 0.0001, True), (2, 0.0001, True), (1, 0.001, False), (2, 0.001, False)]
    >>> configs[0].eval_seed == plan.cell(0, 0, 64, 1, 0).eval_seed("report")
    True
    """
    return [config for _, config in _contrast_runs(plan, scale)]


def _contrast_runs(plan: Plan, scale: str) -> list[tuple[str, TrainConfig]]:
    """``(recipe, config)`` of every contrast run of ``plan`` (see :func:`contrast_configs`)."""
    out = []
    for recipe, regime in CONTRAST_RECIPES.items():
        for a, b, P, k in plan.settings():
            report_seed = eval_seed("report", a, b, k, P)
            for depth in plan.depths:
                for seed in plan.seeds_for(a, b, P, k):
                    config = regime_config(regime, d=plan.d, N=plan.N, P=P, depth=depth, seed=seed, a=a, b=b, k=k,
                                           scale=scale)
                    out.append((recipe, dataclasses.replace(config, eval_seed=report_seed, eval_size=plan.eval_size,
                                                            stream=plan.stream, dtype=plan.dtype)))
    return out


def _follows(config: TrainConfig, recipe: dict) -> bool:
    """Whether ``config`` trains as ``recipe`` says: its overrides, ``frozen`` exactly (none if it names none).

    The initialisation is not compared: the regime study's budget may start the equal-budget recipe from
    the model's default (``StudyScale.converged_init``).
    """
    for key, value in recipe.items():
        if key not in ("init", "frozen") and getattr(config, key) != value:
            return False
    return tuple(config.frozen) == tuple(recipe.get("frozen", ()))


def derive_recipe(config: TrainConfig) -> str:
    """The contrast recipe whose definition (:data:`~numerics.experiments.recipes.RECIPES`) ``config`` follows.

    For exported runs that do not record their recipe. ``ValueError`` naming ``recipe`` when no contrast
    recipe, or more than one, matches: a run of a recipe this module does not know is never mislabelled.

    Examples
    --------
    >>> plan = Plan(spectra=((0.0, 0.0),), depths=(1,), seeds=(0,), long_spectra=(), top16_spectra=())
    >>> [derive_recipe(c) for c in contrast_configs(plan)]
    ['lazy', 'equal_budget']
    >>> derive_recipe(dataclasses.replace(contrast_configs(plan)[0], learning_rate=0.5))
    Traceback (most recent call last):
    ...
    ValueError: recipe: the run follows none of the contrast recipes (lazy, equal_budget)
    """
    matches = [name for name in CONTRAST_RECIPES if _follows(config, RECIPES[name])]
    if len(matches) != 1:
        raise ValueError(f"recipe: the run follows {' and '.join(matches) if matches else 'none'} of the contrast "
                         f"recipes ({', '.join(CONTRAST_RECIPES)})")
    return matches[0]


def run_contrast(config):
    """Train one contrast run and keep its per-context squared errors on the report set (the sweep runner).

    Returns a :class:`~numerics.experiments.study.certified.run.CellResult`: ``metrics`` ``R_L``,
    ``R_L_se`` (report set), ``steps``, ``cpu_time``; ``arrays`` ``report_errors`` (contexts,) float32
    and ``loss_curve``.

    Notes
    -----
    No example: it trains (``tests/test_certified.py``).

    References
    ----------
    Paper eq. (12).
    """
    started = time.process_time()
    result = train(config)
    errors = context_errors(get_model(config.model), result.params, evaluation_batch(config))
    mean, se = mean_se(errors)
    metrics = {"R_L": mean, "R_L_se": se, "steps": int(result.metrics["steps"]),
               "cpu_time": time.process_time() - started}
    arrays = {"report_errors": errors.astype(np.float32), "loss_curve": np.asarray(result.arrays["loss_curve"])}
    return CellResult(metrics=metrics, arrays=arrays)


def run_contrasts(plan: Plan, store_dir, *, execution=None, out_dir=None, scale: str = CONTRAST_SCALE) -> int:
    """Train the contrast runs of ``plan`` through the store ``store_dir``; returns how many are done.

    ``scale``: the recipes' regime study budget. With ``out_dir``, exported runs there are imported
    first and finished ones exported (as the study's cells): a new session retrains nothing.

    Notes
    -----
    No example: it trains (``tests/test_certified.py``).
    """
    if out_dir is not None:
        import_cells(out_dir, None, store_dir, run_contrast)
    runs = _contrast_runs(plan, scale)
    configs = [config for _, config in runs]
    run_sweep(Grid.of(configs), store_dir, execution=execution, runner=run_contrast)
    if out_dir is not None:
        export_cells(store_dir, out_dir, None, recipes={config.content_hash(): recipe for recipe, config in runs})
    done = finished_hashes(store_dir)
    return sum(c.content_hash() in done for c in configs)


def collect_contrasts(out_dir) -> list[Contrast]:
    """The exported contrast runs in ``out_dir`` (none if it does not exist), each with its recipe.

    ``ValueError`` naming ``recipe``: a run that records an unknown recipe, or records none and follows no
    contrast recipe (:func:`derive_recipe`).

    Examples
    --------
    >>> collect_contrasts("/nonexistent")
    []
    """
    out = []
    for path in cell_files(out_dir):
        record, arrays = read_cell(path)
        config = TrainConfig.from_dict(record["config"])
        setting = (config.a, config.b, config.k, config.d, config.N, config.P)
        recipe = record["recipe"] if "recipe" in record else derive_recipe(config)
        if recipe not in CONTRAST_RECIPES:
            raise ValueError(f"recipe: {path} records {recipe!r}, not one of the contrast recipes "
                             f"({', '.join(CONTRAST_RECIPES)})")
        out.append(Contrast(recipe, setting, config.depth, config.seed, arrays["report_errors"], record["hash"]))
    return out
