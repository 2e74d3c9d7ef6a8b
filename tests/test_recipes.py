"""The named training recipes are written once: every plan that names one trains the run of the study that
defines it, content hash for content hash."""

from __future__ import annotations

import dataclasses

import pytest

from numerics.experiments import recipes
from numerics.experiments.reproduce.scales import SCALES
from numerics.experiments.study import regime_config
from numerics.train import TrainConfig


@pytest.mark.parametrize("family, regime", [("nonlinear_lazy", "lazy"), ("nonlinear_converged", "converged")])
def test_quick_softmax_families_are_the_regime_studys_runs_hash_for_hash(family, regime):
    fam = SCALES["quick"].families[family]
    configs = fam.configs()
    assert configs
    for cfg in configs:
        study = regime_config(regime, d=cfg.d, N=cfg.N, P=cfg.P, depth=cfg.depth, seed=cfg.seed, a=cfg.a, b=cfg.b,
                              k=cfg.k, scale="quick")
        assert cfg.content_hash() == study.content_hash(), (family, cfg.a, cfg.b, cfg.depth, cfg.seed)


def test_the_quick_spot_checks_retrain_with_the_certified_studys_recipe():
    """The shipped certified candidates that the quick reproduction re-trains use the cells' recipe, field by field
    (its step cap and rate are the candidate's own)."""
    from numerics.experiments.reproduce.envelope import spot_check_configs

    for row, cfg in spot_check_configs(SCALES["quick"].certified_checks):
        for field, value in recipes.CONVERGED_STUDY.items():
            expected = {"max_steps": row["steps"], "learning_rate": row["learning_rate"]}.get(field, value)
            assert getattr(cfg, field) == expected, field


def test_every_recipe_is_made_of_train_config_fields():
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    for name, recipe in recipes.RECIPES.items():
        assert set(recipe) <= fields, name
        TrainConfig(model="nonlinear", task="difficult", d=4, N=4, P=8, depth=1,
                    **{k: (dict(v) if k == "init" else v) for k, v in recipe.items()})
