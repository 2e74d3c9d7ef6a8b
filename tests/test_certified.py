"""The certified study: cells of candidates from several starts, selected on one set, reported on another."""

import json

import numpy as np
import pytest

from numerics.experiments.store import load_arrays, load_results
from numerics.experiments.study.certified import (
    SUMMARY_COLUMNS,
    Candidate,
    CertifiedPlan,
    nested_params,
    run_certified_study,
)
from numerics.models import get_model
from numerics.tasks import sample
from theory import PowerLawSpectrum

TINY = CertifiedPlan(spectra=((0.0, 0.0),), depths=(1, 2, 4), seeds=(0,), long_spectra=(), cold_steps=48,
                     warm_steps=24, batch_size=32, eval_size=256, bound_contexts=1024, d=4, N=8, P=16,
                     warmup_steps=8, evals_per_run=4)
COL = {name: i for i, name in enumerate(SUMMARY_COLUMNS)}


@pytest.fixture(scope="module")
def tiny_study(tmp_path_factory):
    store = tmp_path_factory.mktemp("certified")
    cells = run_certified_study(TINY, store, workers=1, progress=False)
    return store, cells


def _cell(store, cells, depth):
    (run_hash, cell), = [(h, c) for h, c in cells.items() if c.depth == depth]
    record, = [r for r in load_results(store, status="done") if r["hash"] == run_hash]
    return cell, record, load_arrays(store, run_hash)


def test_every_depth_has_one_cell_with_its_candidates(tiny_study):
    store, cells = tiny_study
    assert sorted(c.depth for c in cells.values()) == [1, 2, 4]
    cell, record, arrays = _cell(store, cells, 2)
    labels = json.loads(record["metrics"]["candidates"])
    assert labels == [c.label for c in cell.candidates] and "nested (untrained)" in labels
    assert arrays["summary"].shape == (len(labels), len(SUMMARY_COLUMNS))
    assert arrays["report_errors"].shape == (len(labels), TINY.eval_size)


def test_winner_has_the_least_selection_loss_and_is_reported_on_the_other_set(tiny_study):
    store, cells = tiny_study
    for depth in (1, 2, 4):
        cell, record, arrays = _cell(store, cells, depth)
        summary = arrays["summary"]
        eligible = [i for i, c in enumerate(cell.candidates) if not c.doubled]
        winner = record["metrics"]["winner"]
        assert winner == min(eligible, key=lambda i: summary[i, COL["R_select"]])
        assert record["metrics"]["R_L"] == summary[winner, COL["R_report"]]
        assert summary[winner, COL["R_report"]] != summary[winner, COL["R_select"]]  # two different sets


def test_the_untrained_nested_start_is_its_parent_exactly(tiny_study):
    """Duplicating every layer keeps the function (eq. 60): nesting holds on every context."""
    store, cells = tiny_study
    for depth in (2, 4):
        cell, _, arrays = _cell(store, cells, depth)
        parent, parent_record, parent_arrays = _cell(store, cells, depth // 2)
        nested = [i for i, c in enumerate(cell.candidates) if c.start == "nested" and not c.trained][0]
        winner = parent_record["metrics"]["winner"]
        np.testing.assert_allclose(arrays["report_errors"][nested], parent_arrays["report_errors"][winner],
                                   rtol=1e-4, atol=1e-6)


def test_nested_params_compute_the_parent_function():
    model = get_model("nonlinear")
    parent = model.init_params(4, 8, 3, np.random.default_rng(0), qk_noise=0.5)
    batch = sample("difficult", PowerLawSpectrum(0.5, 0.5, 4), 10, 32, np.random.default_rng(1))
    child = nested_params(parent, 0.0, None)
    np.testing.assert_allclose(model.forward(child, batch).prediction, model.forward(parent, batch).prediction,
                               rtol=1e-12, atol=1e-12)
    moved = nested_params(parent, 1e-3, np.random.default_rng(2))
    assert not np.array_equal(moved["W_q"][0], moved["W_q"][1])


def test_a_second_call_retrains_nothing(tiny_study):
    store, _ = tiny_study
    before = {r["hash"]: r for r in load_results(store, status="done")}
    run_certified_study(TINY, store, workers=1, progress=False)
    after = {r["hash"]: r for r in load_results(store, status="done")}
    assert after == before  # same cells, same records (times included): nothing ran again


def test_exported_cells_continue_the_study_in_a_new_store(tiny_study, tmp_path):
    from numerics.experiments.study.certified.cells import read_cell

    store, cells = tiny_study
    files = dict(cells_dir=tmp_path / "cells", frontier_dir=tmp_path / "frontier")
    first = run_certified_study(TINY, tmp_path / "first", workers=1, progress=False, depths=(1, 2), **files)
    (shallow,) = [h for h, c in first.items() if c.depth == 2]
    assert [p.stem for p in files["frontier_dir"].glob("*.npz")] == [shallow]  # only the frontier keeps weights
    record, arrays = read_cell(files["cells_dir"] / f"{shallow}.npz")
    assert record["hash"] == shallow and not any(name.startswith("winner_") for name in arrays)
    # a new session: a fresh store, the exported files only
    run_certified_study(TINY, tmp_path / "second", workers=1, progress=False, **files)
    old = {r["hash"]: r for r in load_results(tmp_path / "first", status="done")}
    new = {r["hash"]: r for r in load_results(tmp_path / "second", status="done")}
    assert set(old) < set(new) == set(cells)  # the two imported, depth 4 trained: the same cells as in one go
    for run_hash in old:
        assert new[run_hash]["metrics"] == old[run_hash]["metrics"]
    (deepest,) = [h for h, c in cells.items() if c.depth == 4]
    assert [p.stem for p in files["frontier_dir"].glob("*.npz")] == [deepest]
    np.testing.assert_array_equal(load_arrays(tmp_path / "second", deepest)["summary"],
                                  load_arrays(store, deepest)["summary"])  # resumed = uninterrupted, bitwise


@pytest.mark.parametrize("bad, word", [
    (dict(N=4), "N must be > d"),
    (dict(depths=(1, 2, 8)), "depths must be 1, 2, 4"),
    (dict(warm_rates=(-1.0,)), "learning_rate"),
])
def test_plan_rejects_what_the_study_cannot_run(bad, word):
    with pytest.raises(ValueError, match=word):
        CertifiedPlan(**{**dict(d=4, N=8), **bad})


def test_candidate_rejects_unknown_starts_and_untrained_cold_starts():
    with pytest.raises(ValueError, match="start must be one of"):
        Candidate("warm", 1e-3, 10)
    with pytest.raises(ValueError, match="untrained candidate"):
        Candidate("cold", 0.0, 0)
