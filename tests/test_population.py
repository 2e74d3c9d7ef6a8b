"""The population plan (issue 46): its design, its cost estimate, the engine a plan names, and the CLI's refusal."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from numerics.engines import jax_available
from numerics.experiments.study.plan import REVISED_PLAN
from numerics.experiments.study.population import POPULATION_PLAN, engine_of, estimate, step_seconds, with_engine
from idepth.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_the_population_design():
    plan = POPULATION_PLAN
    assert (plan.batch_size, plan.select_size, plan.report_size, plan.seeds) == (4096, 1 << 18, 1 << 18, (0, 1, 2))
    assert plan.spectra == REVISED_PLAN.spectra and plan.depths == (1, 2, 4, 8, 16, 32, 64, 128)
    assert engine_of(plan) == "jax" and plan.recipe.name == "population"
    assert {k: v for k, v in plan.recipe.items() if k != "engine"} == dict(REVISED_PLAN.recipe)
    cell = plan.cell(0.0, 0.0, plan.P, 16, 0, parent="p")
    trained = sorted((c.start, c.steps) for c in cell.candidates if c.trained)
    # four starts, each at the ladder of caps 20k / 40k / 80k
    assert trained == sorted((s, n) for s in ("cold", "oracle", "nested", "expressible") for n in (20_000, 40_000, 80_000))
    assert {c.start for c in plan.cell(0.0, 0.0, plan.P, 1, 0).candidates} == {"cold", "oracle", "expressible"}
    config = cell.train_config(next(c for c in cell.candidates if c.trained), None)
    assert (config.engine, config.batch_size, config.schedule) == ("jax", 4096, "warmup_cosine")


def test_the_engine_travels_in_the_recipe_into_every_config_and_hash():
    cell = POPULATION_PLAN.cell(0.0, 0.0, 64, 2, 0, parent="p")
    on_numpy = with_engine(POPULATION_PLAN, "numpy").cell(0.0, 0.0, 64, 2, 0, parent="p")
    assert cell.recipe["overrides"]["engine"] == "jax" and on_numpy.recipe["overrides"]["engine"] == "numpy"
    assert on_numpy.content_hash() != cell.content_hash()
    assert {on_numpy.train_config(c, None).engine for c in on_numpy.candidates if c.trained} == {"numpy"}
    assert "engine" not in REVISED_PLAN.recipe  # the shipped cells' recipe (and hashes) untouched
    with pytest.raises(ValueError, match="engine must be one of 'numpy', 'jax'; got 'cuda'"):
        with_engine(POPULATION_PLAN, "cuda")


def test_the_estimate_adds_the_measured_step_times_over_every_trained_candidate():
    record = json.loads((ROOT / "benchmarks/results/engine_cpu.json").read_text())
    rows = [(r["size"]["L"], r["size"]["batch"], r["engines"]["numpy"]["cpu_ms_median"] / 1e3) for r in record["results"]]
    plan = POPULATION_PLAN.only([(0.0, 0.0)])
    cost = estimate(plan, "numpy", "cpu")
    # by hand: per depth, 3 seeds x (the trained caps of the cell) steps at the line through the batch-4096 times
    L, t = np.array([(L, s) for L, b, s in rows if b == 4096]).T
    c1, c0 = np.polyfit(L, t, 1)
    caps = 4 * (20_000 + 40_000 + 80_000)
    by_hand = sum(3 * (caps if depth > 1 else 3 * (20_000 + 40_000 + 80_000)) * (c0 + c1 * depth)
                  for depth in plan.depths)
    assert cost.steps == 3 * (7 * caps + 3 * (20_000 + 40_000 + 80_000))
    assert cost.hours == pytest.approx(by_hand / 3600, rel=1e-12)
    assert 200 < cost.hours < 600  # the "about 360 core-hours per spectrum" on this CPU
    assert step_seconds(plan, 16, rows) == pytest.approx(c0 + 16 * c1)
    flop = estimate(plan, "jax", "gpu (NVIDIA H100)")  # no record of a GPU: a FLOP count, said so
    assert "FLOP count" in flop.source and flop.hours < cost.hours / 50


@pytest.mark.parametrize("engine", ["numpy", "jax"])
def test_the_cli_prints_the_estimate_and_refuses_a_cpu_without_force(engine, capsys):
    if engine == "jax" and not jax_available():
        pytest.skip("jax is not installed")
    assert main(["study", "run", "population", "--engine", engine, "--spectra", "0,0"]) == 2
    err = capsys.readouterr().err
    hours = float(err.split("about ")[1].split(" h")[0].replace(",", ""))
    assert hours == pytest.approx(estimate(POPULATION_PLAN.only([(0.0, 0.0)]), engine).hours, rel=1e-3)
    assert "--force" in err.splitlines()[-1] and f"{hours:,.0f} h" in err.splitlines()[-1]


def test_with_force_the_cli_hands_the_population_plan_to_the_certified_runner(monkeypatch, tmp_path):
    from idepth.commands import _study_runs

    seen = {}
    monkeypatch.setattr(_study_runs, "run_certified", lambda args: seen.update(vars(args)) or 0)
    argv = ["study", "run", "population", "--engine", "numpy", "--force", "--spectra", "0,0.5", "--cells",
            str(tmp_path / "cells")]
    assert main(argv) == 0
    assert seen["study_plan"] == with_engine(POPULATION_PLAN, "numpy").only([(0.0, 0.5)])
    assert seen["spectra"] is None and seen["report_only"] is False and seen["command"].startswith("idepth study run")


@pytest.mark.skipif(not jax_available(), reason="jax is not installed")
def test_a_cell_of_a_jax_plan_trains_on_the_jax_engine():
    from numerics.experiments.study.run import run_cell
    from numerics.lockstep import train_lockstep

    cold_only = dataclasses.replace(POPULATION_PLAN.recipe, name="cold_only", starts=("cold",))
    tiny = dataclasses.replace(
        POPULATION_PLAN, spectra=((0.0, 0.0),), depths=(1,), seeds=(0,), cold_steps=4, batch_size=16, warmup_steps=1,
        evals_per_run=1, eval_size=64, bound_contexts=256, select_size=64, report_size=64, report_block=1,
        min_eval_size=64, recipe=cold_only, long_caps=(), long_steps=(), long_kinds=(), doubled_kinds=(),
        expressible_rates=())
    cell = tiny.cell(0.0, 0.0, tiny.P, 1, 0)
    result = run_cell(cell)
    (config,) = [cell.train_config(c, None) for c in cell.candidates]
    (alone,) = train_lockstep([config])  # the engine's own run of the candidate: the cell kept its weights
    weights = {name.removeprefix("winner_"): v for name, v in result.arrays.items() if name.startswith("winner_")}
    assert config.engine == "jax" and weights.keys() == alone.params.keys()
    for name, value in alone.params.items():
        np.testing.assert_array_equal(weights[name], value)
