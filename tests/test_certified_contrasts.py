"""The training recipes beside the certified envelope: lazy and equal budget on the study's report sets."""

import numpy as np
import pytest
from tiny_certified import CONTRAST_STEPS as STEPS
from tiny_certified import ONE_WORKER, TINY

from numerics.experiments.study.certified.contrasts import CONTRAST_RECIPES, collect_contrasts, contrast_plan
from numerics.train import evaluation_batch


def test_contrast_runs_are_evaluated_on_the_report_set_of_their_setting():
    ours = contrast_plan(TINY, "lazy", steps=STEPS).cell(0.0, 0.0, TINY.P, 1, 0)
    cell = TINY.cell(0.0, 0.0, TINY.P, 1, 0)
    assert (ours.eval_seed("report"), ours.report_size, ours.report_block) == (
        cell.eval_seed("report"), cell.report_size, cell.report_block)
    batches = []
    for c in (ours, cell):
        template = c.train_config(c.candidates[0], None)
        batches.append(evaluation_batch(type(template)(**{**template.to_dict(), "eval_seed": c.eval_seed("report"),
                                                          "eval_size": c.report_size})))
    np.testing.assert_array_equal(batches[0].context_x, batches[1].context_x)
    np.testing.assert_array_equal(batches[0].target, batches[1].target)


def test_every_recipe_depth_and_seed_is_one_run_with_the_recipes_own_training():
    cells = [contrast_plan(TINY, recipe).cell(a, b, P, L, seed, None if L == 1 else "parent", k)
             for recipe in CONTRAST_RECIPES for a, b, P, k in TINY.settings() for L in TINY.depths
             for seed in TINY.seeds_for(a, b, P, k)]
    assert len(cells) == len(CONTRAST_RECIPES) * len(TINY.depths) * len(TINY.seeds)
    assert len({c.content_hash() for c in cells}) == len(cells)
    assert {len(c.candidates) for c in cells} == {1}
    configs = [c.train_config(c.candidates[0], None) for c in cells]
    lazy = [c for c in configs if c.frozen]
    assert {c.learning_rate for c in lazy} == {1e-4} and {c.schedule for c in lazy} == {"constant"}
    assert {c.max_steps for c in lazy} == {1000} and len(lazy) == len(configs) // 2
    assert {(c.learning_rate, c.max_steps) for c in configs if not c.frozen} == {(1e-3, 2000)}


def test_exported_contrasts_continue_in_a_new_store_without_retraining(tiny_certified, tmp_path):
    from numerics.experiments.store import load_results
    from numerics.experiments.study import run_plan

    done = tiny_certified.contrast_runs
    assert done == len(CONTRAST_RECIPES) * len(TINY.depths) * len(TINY.seeds)
    runs = collect_contrasts(tiny_certified.contrasts_dir)
    # per report context, as the cells' report errors: the two pair context by context
    assert len(runs) == done and {r.errors.shape for r in runs} == {(TINY.report_size,)}
    # a new store is filled from the exported files: nothing is trained (an imported run keeps its recorded
    # metrics; a retrained one would record a new CPU time)
    again = sum(len(run_plan(contrast_plan(TINY, recipe, steps=STEPS), tmp_path / "fresh", execution=ONE_WORKER,
                             cells_dir=tiny_certified.contrasts_dir)) for recipe in CONTRAST_RECIPES)
    assert again == done
    assert {r["metrics"]["cpu_time"] for r in load_results(tmp_path / "fresh", status="done")} == {
        r["metrics"]["cpu_time"] for r in load_results(tiny_certified.contrast_store, status="done")}


def test_every_exported_run_records_the_recipe_it_was_trained_with(tiny_certified):
    from numerics.experiments.study.certified.cells import cell_files, read_cell

    root = tiny_certified.root
    records = [read_cell(path)[0] for path in cell_files(root / "contrasts")]
    assert {r["recipe"] for r in records} == set(CONTRAST_RECIPES)
    assert all(r["config"]["recipe"]["name"] == r["recipe"] for r in records)
    assert {(r.run_hash, r.recipe) for r in collect_contrasts(root / "contrasts")} == {
        (r["hash"], r["recipe"]) for r in records}


def test_a_shipped_first_study_run_is_read_as_data_and_a_run_without_a_contrast_recipe_is_refused(tiny_certified,
                                                                                                  tmp_path):
    import json
    import shutil
    from pathlib import Path

    from numerics.experiments.study.certified.cells import _RECORD, _write_npz, cell_files, read_cell

    shipped = cell_files(Path(__file__).parents[1] / "docs/results/certified/contrasts")
    assert len(shipped) == 848
    (tmp_path / "v1").mkdir()
    shutil.copy(shipped[0], tmp_path / "v1")
    (run,) = collect_contrasts(tmp_path / "v1")
    record, arrays = read_cell(shipped[0])
    assert (run.recipe, run.depth, run.seed, run.run_hash) == (record["recipe"], record["config"]["depth"],
                                                               record["config"]["seed"], record["hash"])
    np.testing.assert_array_equal(run.errors, arrays["report_errors"])

    path = cell_files(tiny_certified.contrasts_dir)[0]
    record, arrays = read_cell(path)
    legacy = {k: v for k, v in record.items() if k != "recipe"}
    _write_npz(tmp_path / "legacy" / path.name, {**arrays, _RECORD: np.array(json.dumps(legacy))})
    with pytest.raises(ValueError, match="recipe: .* records None"):
        collect_contrasts(tmp_path / "legacy")
    _write_npz(tmp_path / "unknown" / path.name, {**arrays, _RECORD: np.array(json.dumps(record | {"recipe": "x"}))})
    with pytest.raises(ValueError, match="recipe: .* records 'x'"):
        collect_contrasts(tmp_path / "unknown")


def test_each_recipe_gets_its_alpha_and_its_gain_is_the_paired_mean_difference(tiny_certified):
    from numerics.experiments.study.certified.statistics import summarise
    from numerics.experiments.study.certified.table import collect

    root = tiny_certified.root
    rows, errors = collect(root / "cells")
    runs = collect_contrasts(root / "contrasts")
    (summary,) = summarise(rows, errors, n_bootstrap=100, contrasts=runs)
    by_name = {r.name: r for r in summary.recipes}
    assert set(by_name) == {"envelope", "heads", *(f"cold lr={lr:g}" for lr in TINY.cold_rates), *CONTRAST_RECIPES}
    for recipe in CONTRAST_RECIPES:
        first = np.mean([r.errors.mean(dtype=np.float64) for r in runs if r.recipe == recipe and r.depth == 1])
        last = np.mean([r.errors.mean(dtype=np.float64) for r in runs if r.recipe == recipe
                        and r.depth == TINY.depths[-1]])
        assert by_name[recipe].gain == pytest.approx(first - last, rel=1e-9, abs=1e-12)
        assert by_name[recipe].gain_se > 0
    assert by_name["envelope"].gain == pytest.approx(summary.gain)


def test_a_recipe_missing_one_run_gets_no_alpha(tiny_certified):
    from numerics.experiments.study.certified.statistics import summarise
    from numerics.experiments.study.certified.table import collect

    rows, errors = collect(tiny_certified.cells_dir)
    runs = [r for r in collect_contrasts(tiny_certified.contrasts_dir)
            if not (r.recipe == "lazy" and r.depth == 2 and r.seed == TINY.seeds[-1])]
    (summary,) = summarise(rows, errors, n_bootstrap=100, contrasts=runs)
    names = {r.name for r in summary.recipes}
    assert "lazy" not in names and "equal_budget" in names


def test_the_page_shows_alpha_by_recipe_with_its_figure(tiny_certified_page):
    from numerics.experiments.study.certified.page import RECIPE_FIGURE

    out = tiny_certified_page.out
    page = (out / "certified-study.md").read_text()
    section = page[page.index("## The depth law by training recipe"):]
    header = section.splitlines()[4]
    assert "lazy (gain frozen)" in header and "equal budget" in header and "envelope R*_L" in header
    assert (out / RECIPE_FIGURE).is_file()


def test_the_cli_reads_the_contrasts_beside_the_cells(tiny_certified_cli):
    out = tiny_certified_cli.out
    assert tiny_certified_cli.status == 0
    page = (out / "certified-study.md").read_text()
    assert "lazy (gain frozen)" in page and "equal budget" in page
    assert (out / "figures" / "certified-recipes.png").is_file()
