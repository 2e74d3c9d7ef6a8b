"""The training recipes beside the certified envelope: lazy and equal budget on the study's report sets."""

import numpy as np
import pytest
from tiny_certified import CONTRAST_SCALE as SCALE
from tiny_certified import ONE_WORKER, TINY

from numerics.experiments.study.certified.contrasts import (
    CONTRAST_RECIPES,
    collect_contrasts,
    contrast_configs,
    derive_recipe,
    run_contrasts,
)
from numerics.train import evaluation_batch


def test_contrast_runs_are_evaluated_on_the_report_set_of_their_setting():
    config = contrast_configs(TINY)[0]
    cell = TINY.cell(0.0, 0.0, TINY.P, 1, 0)
    template = cell.train_config(cell.candidates[0], None)
    report = evaluation_batch(type(template)(**{**template.to_dict(), "eval_seed": cell.eval_seed("report")}))
    ours = evaluation_batch(config)
    np.testing.assert_array_equal(ours.context_x, report.context_x)
    np.testing.assert_array_equal(ours.target, report.target)


def test_every_recipe_depth_and_seed_is_one_run_with_the_recipes_own_training():
    configs = contrast_configs(TINY)
    assert len(configs) == len(CONTRAST_RECIPES) * len(TINY.depths) * len(TINY.seeds)
    assert len({c.content_hash() for c in configs}) == len(configs)
    lazy = [c for c in configs if c.frozen]
    assert {c.learning_rate for c in lazy} == {1e-4} and {c.schedule for c in lazy} == {"constant"}
    assert {c.learning_rate for c in configs if not c.frozen} == {1e-3}


def test_exported_contrasts_continue_in_a_new_store_without_retraining(tiny_certified, tmp_path):
    done = tiny_certified.contrast_runs
    assert done == len(contrast_configs(TINY, scale=SCALE))
    runs = collect_contrasts(tiny_certified.contrasts_dir)
    # per report context, as the cells' report errors: the two pair context by context
    assert len(runs) == done and {r.errors.shape for r in runs} == {(TINY.eval_size,)} == {(TINY.report_size,)}
    # a new store is filled from the exported files: nothing is trained (an imported run keeps its recorded
    # metrics; a retrained one would record a new CPU time)
    from numerics.experiments.store import load_results

    assert run_contrasts(TINY, tmp_path / "fresh", execution=ONE_WORKER, out_dir=tiny_certified.contrasts_dir,
                         scale=SCALE) == done
    assert {r["metrics"]["cpu_time"] for r in load_results(tmp_path / "fresh", status="done")} == {
        r["metrics"]["cpu_time"] for r in load_results(tiny_certified.contrast_store, status="done")}


def test_every_exported_run_records_the_recipe_it_was_trained_with(tiny_certified):
    from numerics.experiments.study.certified.cells import cell_files, read_cell

    root = tiny_certified.root
    lazy = {c.content_hash() for c in contrast_configs(TINY, scale=SCALE) if c.learning_rate == 1e-4}
    records = [read_cell(path)[0] for path in cell_files(root / "contrasts")]
    assert {r["recipe"] for r in records} == set(CONTRAST_RECIPES)
    assert all((r["recipe"] == "lazy") == (r["hash"] in lazy) for r in records)
    assert {(r.run_hash, r.recipe) for r in collect_contrasts(root / "contrasts")} == {
        (r["hash"], r["recipe"]) for r in records}


def test_a_run_without_a_recorded_recipe_gets_the_one_it_follows_and_an_unknown_one_is_refused(tiny_certified,
                                                                                                  tmp_path):
    import json

    from numerics.experiments.study.certified.cells import _RECORD, _write_npz, cell_files, read_cell
    from numerics.train import TrainConfig

    path = cell_files(tiny_certified.contrasts_dir)[0]
    record, arrays = read_cell(path)
    assert derive_recipe(TrainConfig.from_dict(record["config"])) == record["recipe"]
    legacy = {k: v for k, v in record.items() if k != "recipe"}
    _write_npz(tmp_path / "legacy" / path.name, {**arrays, _RECORD: np.array(json.dumps(legacy))})
    assert [r.recipe for r in collect_contrasts(tmp_path / "legacy")] == [record["recipe"]]
    _write_npz(tmp_path / "unknown" / path.name, {**arrays, _RECORD: np.array(json.dumps(record | {"recipe": "x"}))})
    with pytest.raises(ValueError, match="recipe: .* records 'x'"):
        collect_contrasts(tmp_path / "unknown")
    other = dict(legacy, config=dict(legacy["config"], learning_rate=0.5))
    _write_npz(tmp_path / "other" / path.name, {**arrays, _RECORD: np.array(json.dumps(other))})
    with pytest.raises(ValueError, match="recipe: the run follows none of the contrast recipes"):
        collect_contrasts(tmp_path / "other")


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
