"""Training recipes beside the envelope: the lazy and equal-budget recipes as plans of the certified study's cells.

Is the paper's ``c/L`` law a property of the optimum or of a way of training? A contrast is the certified plan
with another recipe (:func:`contrast_plan`): the same settings, depths and seeds, and one candidate per cell, that
recipe's one run from its own initialisation. :func:`~numerics.experiments.study.run.run_plan` runs it like any
plan, and :func:`~numerics.experiments.study.run.run_cell` evaluates the run on the plan's *report* set, so its
errors pair with the envelope's and :func:`~numerics.experiments.study.certified.statistics.summarise` gives each
recipe its α.

:func:`collect_contrasts` reads the exported contrast runs: such cells, and the first study's runs (one
``TrainConfig`` each, ``docs/results/certified/contrasts``, read as data). Every run records its recipe.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from numerics.train import TrainConfig

from ..plan import Cell, Plan
from .cells import cell_files, read_cell

__all__ = ["CONTRAST_RECIPES", "CONTRAST_STEPS", "Contrast", "collect_contrasts", "contrast_plan"]

#: the contrast recipes (:data:`~numerics.experiments.recipes.RECIPES`)
CONTRAST_RECIPES = ("lazy", "equal_budget")
#: each contrast recipe's step cap: the regime study's ``quick`` budget, which the first study's runs trained with
CONTRAST_STEPS = {"lazy": 1000, "equal_budget": 2000}


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


def contrast_plan(plan: Plan, recipe: str, *, steps: int | None = None) -> Plan:
    """``plan`` trained with the contrast ``recipe``: its settings, depths, seeds and report set, one cold run a cell.

    ``steps``: the run's cap (default :data:`CONTRAST_STEPS`); no doubled or long caps. ``ValueError`` naming
    ``recipe`` for one that is not a contrast recipe.

    References
    ----------
    Paper eqs. (9)-(12); the recipes are this package's (:mod:`numerics.experiments.recipes`).

    Examples
    --------
    >>> plan = Plan(spectra=((0.0, 0.0),), depths=(1, 2), seeds=(0,), long_spectra=(), top16_spectra=())
    >>> lazy = contrast_plan(plan, "lazy")
    >>> [c.label for c in lazy.candidates(2)], lazy.recipe.name
    (['cold lr=0.0001 S=1000'], 'lazy')
    >>> lazy.cell(0, 0, 64, 1, 0).eval_seed("report") == plan.cell(0, 0, 64, 1, 0).eval_seed("report")
    True
    >>> contrast_plan(plan, "converged_study")
    Traceback (most recent call last):
    ...
    ValueError: recipe must be one of lazy, equal_budget; got 'converged_study'
    """
    if recipe not in CONTRAST_RECIPES:
        raise ValueError(f"recipe must be one of {', '.join(CONTRAST_RECIPES)}; got {recipe!r}")
    kept = ("d", "N", "P", "k", "spectra", "depths", "seeds", "side_seeds", "long_P", "long_spectra", "top16_spectra",
            "batch_size", "evals_per_run", "eval_size", "bound_contexts", "dtype", "stream", "select_size",
            "report_size", "report_block", "min_eval_size")
    return Plan.for_recipe(recipe, **{name: getattr(plan, name) for name in kept}, doubling_spectra=(),
                           cold_steps=CONTRAST_STEPS[recipe] if steps is None else int(steps))


def collect_contrasts(out_dir) -> list[Contrast]:
    """The exported contrast runs in ``out_dir`` (none if it does not exist), each with its recipe.

    A cell of a :func:`contrast_plan` gives its one candidate's report errors; a first-study run (a
    ``TrainConfig``) its own. ``ValueError`` naming ``recipe``: a run that records none, or one that is not a
    contrast recipe.

    Examples
    --------
    >>> collect_contrasts("/nonexistent")
    []
    """
    out = []
    for path in cell_files(out_dir):
        record, arrays = read_cell(path)
        recipe = record.get("recipe")
        if recipe not in CONTRAST_RECIPES:
            raise ValueError(f"recipe: {path} records {recipe!r}, not one of the contrast recipes "
                             f"({', '.join(CONTRAST_RECIPES)})")
        if "candidates" in record["config"]:  # a cell of a contrast plan: its one run
            run, errors = Cell.from_dict(record["config"]), arrays["report_errors"][record["metrics"]["winner"]]
        else:
            run, errors = TrainConfig.from_dict(record["config"]), arrays["report_errors"]
        setting = (run.a, run.b, run.k, run.d, run.N, run.P)
        out.append(Contrast(recipe, setting, run.depth, run.seed, errors, record["hash"]))
    return out
