"""A recipe is added from outside the package and runs through a tiny plan (CONTRIBUTING.md, "A training recipe").

Everything here uses the public API only, as a user's script would: define a :class:`Recipe`, register it,
make a certified plan with it, run it, read its table. The rows carry the recipe's name, and what the
recipe fixes (schedule, frozen parameters, step cap, start kinds) reaches every trained candidate.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from numerics.experiments.execution import Execution
from numerics.experiments.recipes import GAIN_PARAMETERS, RECIPES, Recipe, register, unregister
from numerics.experiments.reproduce.scales import SCALES
from numerics.experiments.recipes import Setting
from numerics.experiments.study import run_plan
from numerics.experiments.study.plan import Plan
from numerics.experiments.study.certified.table import collect, read_csv, write_csv

#: a recipe the package does not ship: constant steps, the gain frozen, cold and nested starts, 40 steps
FROZEN_GAIN_CONSTANT = Recipe(
    "frozen_gain_constant",
    dict(learning_rate=3e-3, schedule="constant", warmup_steps=0, frozen=GAIN_PARAMETERS, batch_size=32,
         max_steps=40, eval_every=10, eval_size=256),
    starts=("cold", "nested"), description="a test recipe: constant steps with the gain frozen")


@pytest.fixture(scope="module")
def added(tmp_path_factory):
    """A plan of the added recipe, trained: its own run, not the session's tiny study (``tiny_certified``), because a
    certified plan trains every candidate with one recipe and hashes it into its cells (``converged_study`` there)."""
    register(FROZEN_GAIN_CONSTANT)
    root = tmp_path_factory.mktemp("recipe")
    plan = Plan.for_recipe(FROZEN_GAIN_CONSTANT, d=4, N=8, P=16, spectra=((0.0, 0.0),), depths=(1, 2),
                                    seeds=(0,), side_seeds=(0,), long_spectra=(), top16_spectra=(),
                                    bound_contexts=1024)
    cells = run_plan(plan, root / "store", execution=Execution(workers=1, progress=False),
                                cells_dir=root / "cells", frontier_dir=root / "frontier")
    yield plan, cells, root
    unregister(FROZEN_GAIN_CONSTANT.name)


def test_the_added_recipe_trains_every_candidate_of_the_plan(added):
    plan, cells, _ = added
    assert RECIPES["frozen_gain_constant"] is FROZEN_GAIN_CONSTANT
    assert sorted(c.depth for c in cells.values()) == [1, 2]
    for cell in cells.values():
        assert {c.start for c in cell.candidates} == ({"cold"} if cell.depth == 1 else {"cold", "nested"})
        for candidate in (c for c in cell.candidates if c.trained):
            config = cell.train_config(candidate, None)
            cap = 80 if candidate.doubled else 40  # the plan's step-doubling check trains twice the recipe's cap
            assert (config.schedule, config.frozen, config.max_steps, config.batch_size, config.learning_rate) == (
                "constant", GAIN_PARAMETERS, cap, 32, 3e-3)
    # the deepest cell keeps its winner's weights (a later evaluation needs no retraining)
    deepest = next(h for h, c in cells.items() if c.depth == 2)
    with np.load(added[2] / "frontier" / f"{deepest}.npz") as weights:
        assert {"W_q", "W_k", "W_o"} <= {name.removeprefix("winner_") for name in weights.files}


def test_its_rows_carry_its_name_and_its_table_keeps_it(added, tmp_path):
    _, _, root = added
    rows, _ = collect(root / "cells")
    assert rows and {r.recipe for r in rows} == {"frozen_gain_constant"}
    write_csv(rows, tmp_path / "table.csv")
    assert read_csv(tmp_path / "table.csv") == rows


def test_the_shipped_recipes_keep_the_cells_they_hash_to():
    plan = Plan()
    assert plan.recipe is RECIPES["converged_study"] and "recipe" not in plan.to_dict()
    assert "recipe" not in plan.cell(0.0, 0.0, 64, 2, 0, parent="p").to_dict()
    other = Plan.for_recipe(FROZEN_GAIN_CONSTANT, d=4, N=8, P=16)
    assert other.to_dict()["recipe"]["name"] == "frozen_gain_constant"
    assert other.cell(0.0, 0.0, 16, 2, 0, parent="p").to_dict()["recipe"] == FROZEN_GAIN_CONSTANT.to_dict()


@pytest.mark.parametrize("build, match", [
    (lambda: Recipe("x", {"learning_rat": 1e-3}), "overrides: 'learning_rat' is not a TrainConfig field"),
    (lambda: Recipe("x", {}, starts=("warm",)), "starts: 'warm' is not a start kind"),
    (lambda: Recipe("2x", {}), "name must be letters"),
    (lambda: Plan(recipe="no_such_recipe"), "recipe must be one of .*; got 'no_such_recipe'"),
    (lambda: Plan.for_recipe(Recipe("g", {}, starts=("cold", "gamma_star"))),
     "starts: the 'gamma_star' start of recipe 'g' does not apply to model 'nonlinear'"),
    (lambda: Plan(d=16, N=16), "N must be > d = 16 for the oracle start"),
    (lambda: Setting("linear", 0, 0).check("converged_study"),
     "starts: the 'oracle' start of recipe 'converged_study' does not apply to model 'linear'"),
    (lambda: Setting("linear", 0, 0).check("lazy", starts=("nested",)),
     "starts: recipe 'lazy' does not use the 'nested' start"),
    (lambda: Setting("transformer", 0, 0), "model must be one of"),
    (lambda: dataclasses.replace(SCALES["smoke"].families["linear_difficult"], model="nonlinear"),
     "starts: the 'gamma_star' start of recipe 'linear_gamma_star' does not apply to model 'nonlinear'"),
    (lambda: Setting("nonlinear", -1, 0), "a must be a real number >= 0"),
    (lambda: register(Recipe("lazy", {"learning_rate": 1.0})), "recipe: the name 'lazy' is taken"),
    (lambda: unregister("lazy"), "name: 'lazy' is one of the package's recipes"),
])
def test_bad_recipes_plans_and_settings_are_refused_naming_the_field(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_a_recipe_is_a_mapping_of_its_overrides_and_reads_back_from_json():
    assert dict(FROZEN_GAIN_CONSTANT)["schedule"] == "constant"
    assert Recipe.from_dict(FROZEN_GAIN_CONSTANT.to_dict()) == FROZEN_GAIN_CONSTANT
    assert dataclasses.replace(FROZEN_GAIN_CONSTANT, name="other") != FROZEN_GAIN_CONSTANT
    assert np.isclose(RECIPES["lazy"]["learning_rate"], 1e-4)
    assert FROZEN_GAIN_CONSTANT.stopping == "the plan's" and RECIPES["converged_study"].max_steps == 6000
