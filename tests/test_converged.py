"""The converged study (numerics.experiments.study.converged): its rules, its CSV, resuming from the store."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from numerics.experiments import criteria
from numerics.experiments.execution import Execution
from numerics.experiments.store import load_arrays, load_results
from numerics.experiments.study.converged import (
    CSV_COLUMNS,
    ConvergedPlan,
    RunSpec,
    eval_seed_of,
    group_stats,
    is_converged,
    last_quarter_change,
    paired_depth_gains,
    read_study_csv,
    run_converged,
    write_study_csv,
)
from numerics.train import evaluation_batch
from tolerances import ROUNDOFF, rtol

#: the tiny studies run in one local worker, silently
ONE_WORKER = Execution(workers=1, progress=False)


def tiny_plan(**overrides):
    options = dict(d=4, P=8, k=2, spectra=((0.0, 0.0), (0.5, 0.0)), depths=(1, 2), deep_depths=(), seeds=(0, 1),
                   contrast_spectrum=None, batch_size=16, warmup_steps=2, base_steps=16, max_doublings=1,
                   eval_size=64, evals_per_run=4, table4_spectra=())
    options.update(overrides)
    return ConvergedPlan(**options)


@pytest.mark.parametrize("field, value, match", [
    ("d", 0, "d"), ("evals_per_run", 2, "evals_per_run"), ("max_doublings", -1, "max_doublings"),
    ("base_steps", 18, "multiple of evals_per_run"), ("k", 9, "k must be <= P"), ("depths", (0,), "depth"),
    ("seeds", (), "must not be empty"), ("table4_spectra", ((0.0, 0.0, 9),), "k must be <= P"),
    ("table4_spectra", ((0.0, 0.0, 0),), "k"),
])
def test_plan_rejects_bad_input_naming_the_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        tiny_plan(**{field: value})


def test_runs_of_the_default_plan():
    plan = ConvergedPlan()
    runs = plan.runs()
    # main grid, L = 256, N = d, RMSNorm, then Table 4's 7 rows and the 2 extra spectra
    assert len(runs) == 7 * 8 * 3 + 3 + 8 * 3 + 8 * 3 + (7 + 2) * 8 * 3
    assert plan.spectra == ((0.0, 0.0), (0.0, 0.25), (0.0, 0.5), (0.0, 1.0), (0.25, 0.0), (0.5, 0.0), (1.0, 0.0))
    assert {r.k for r in runs} == {2, 16} and {(r.a, r.b) for r in runs if r.k == 16} == {
        (0.0, 0.25), (0.0, 0.5), (0.25, 0.25), (0.25, 0.5)}
    assert {r.N for r in runs if r.model == "nonlinear_rms"} == {2 * plan.d}
    assert {(r.a, r.b) for r in runs if r.N == plan.d} == {(0.0, 0.0)}
    assert max(r.depth for r in runs) == 256 and len(set(runs)) == len(runs)


def test_all_runs_of_a_spectrum_share_their_held_out_contexts():
    plan = tiny_plan()
    configs = [plan.config(RunSpec(m, 0.0, 0.0, N, L, s), 16) for m, N, L, s in
               [("nonlinear", 8, 1, 0), ("nonlinear", 4, 2, 1), ("nonlinear_rms", 8, 2, 0)]]
    targets = [evaluation_batch(c).target for c in configs]
    assert all(np.array_equal(targets[0], t) for t in targets[1:])
    other = plan.config(RunSpec("nonlinear", 0.5, 0.0, 8, 1, 0), 16)
    assert other.eval_seed == eval_seed_of(0.5, 0.0, 2) != configs[0].eval_seed
    assert not np.array_equal(evaluation_batch(other).target, targets[0])


def test_convergence_rule():
    curve = np.array([[0, 9.0], [25, 4.0], [50, 3.0], [75, 2.9], [100, 2.85]])
    assert last_quarter_change(curve) == pytest.approx(-0.05)
    assert is_converged(curve, 0.06) and not is_converged(curve, 0.04)
    # a loss that rises by more than its SE is not converged either
    assert not is_converged(np.array([[0, 3.0], [75, 2.0], [100, 2.2]]), 0.1)


def test_a_table_missing_columns_is_refused_in_one_line_naming_them(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("model,norm,a,b\nnonlinear,layer,0,0\n")
    with pytest.raises(ValueError, match=r"missing columns k, d, N, P, depth") as info:
        read_study_csv(path)
    assert "\n" not in str(info.value) and "doubling_gain" not in str(info.value)  # optional columns may be absent


def test_a_row_round_trips_through_the_csv_with_its_types(tmp_path):
    row = dict.fromkeys(CSV_COLUMNS, 0.25) | {"model": "nonlinear", "norm": "layer", "converged": True, "N": 32,
                                               "depth": 4, "content_hash": "abc", "C_L": math.nan}
    path = write_study_csv([row], tmp_path / "s.csv")
    (back,) = read_study_csv(path)
    assert (back.N, back.depth, back.converged, back.R_L, back.content_hash) == (32, 4, True, 0.25, "abc")
    assert math.isnan(back.C_L) and dict(back).keys() == set(CSV_COLUMNS) and back["N"] == back.N
    bad = (tmp_path / "s.csv").read_text().replace("0.25", "x", 1)
    (tmp_path / "s.csv").write_text(bad)
    with pytest.raises(ValueError, match="column a must hold a float; got 'x'"):
        read_study_csv(path)


def test_paired_gains_against_a_direct_computation():
    rng = np.random.default_rng(0)
    e1, e2 = rng.exponential(size=500), rng.exponential(size=500)
    gains = paired_depth_gains({1: e1, 2: e2})
    diff = e1 - e2
    assert gains[2][0] == pytest.approx(diff.mean(), rel=1e-12)
    assert gains[2][1] == pytest.approx(np.std(diff, ddof=1) / math.sqrt(500), rel=1e-12)
    assert paired_depth_gains({2: e2}) == {}


def _row(**values) -> dict:
    base = dict.fromkeys(CSV_COLUMNS, 0.0) | {"model": "nonlinear", "N": 8, "k": 2, "depth": 2, "steps": 100,
                                             "R_L_se": 0.01, "delta_R1_se": 0.01}
    return base | values


def test_a_mean_over_one_seed_has_an_undefined_standard_error():
    stats = group_stats([_row(R_L=1.3, delta_R1=0.2)])[("nonlinear", 8, 0.0, 0.0, 2, 2)]
    assert (stats.n, stats.R_L, stats.delta_R1) == (1, 1.3, 0.2)
    assert math.isnan(stats.R_L_se) and math.isnan(stats.delta_R1_se)
    assert math.isnan(criteria.mean_over_seeds([1.3], [0.01])[1]) and math.isnan(criteria.standard_error([1.3]))


def test_a_mean_over_seeds_has_the_seeds_standard_error_floored_by_the_held_out_ones():
    values = [1.0, 1.3, 1.1]
    stats = group_stats([_row(R_L=v, R_L_se=0.001) for v in values])[("nonlinear", 8, 0.0, 0.0, 2, 2)]
    assert stats.R_L_se == pytest.approx(np.std(values, ddof=1) / math.sqrt(3), rel=rtol(ROUNDOFF))
    agreeing = group_stats([_row(R_L=1.0, R_L_se=0.05) for _ in values])[("nonlinear", 8, 0.0, 0.0, 2, 2)]
    assert agreeing.R_L_se == pytest.approx(0.05 / math.sqrt(3), rel=rtol(ROUNDOFF))


def test_tiny_study_end_to_end_and_resume(tmp_path):
    plan = tiny_plan()
    out = tmp_path / "out"
    rows, markdown = run_converged(out, plan=plan, bound_contexts=64, execution=ONE_WORKER)
    assert len(rows) == len(plan.runs())
    csv_rows = read_study_csv(out / "converged-study.csv")
    assert [list(r) for r in csv_rows][0] == list(CSV_COLUMNS)
    store = out / "store"
    done = {r["hash"]: r for r in load_results(store, status="done")}
    for row in csv_rows:
        assert row["steps"] in plan.caps() and row["attempts"] == plan.caps().index(row["steps"]) + 1
        curve = load_arrays(store, row["content_hash"], ["loss_curve"])["loss_curve"]
        assert row["converged"] == (abs(curve[-1, 1] - curve[np.flatnonzero(curve[:, 0] >= 0.75 * curve[-1, 0])[0], 1])
                                    < done[row["content_hash"]]["metrics"]["R_L_se"])
        # a run stops at a shorter cap only if it converged there
        if row["attempts"] < plan.max_doublings + 1:
            assert row["converged"]
        assert row["R_L"] == done[row["content_hash"]]["metrics"]["R_L"]
    # paired gains recomputed from the stored predictions on the common held-out set
    by_key = {(r["a"], r["depth"], r["seed"]): r for r in csv_rows}
    for (a, depth, seed), row in by_key.items():
        one = by_key[(a, 1, seed)]
        cfg = plan.config(RunSpec("nonlinear", a, 0.0, plan.N, 1, seed), 16)
        target = evaluation_batch(cfg).target.astype(np.float64)
        errs = [(load_arrays(store, r["content_hash"], ["eval_prediction"])["eval_prediction"] - target) ** 2
                for r in (one, row)]
        assert row["delta_R1"] == pytest.approx(float(np.mean(errs[0] - errs[1])), rel=1e-9, abs=1e-12)
    figures = re.findall(r"\]\((figures/converged-study-[a-z0-9]+\.png)\)", markdown)
    assert "converged by the study's rule" in markdown and figures and all((out / f).is_file() for f in figures)
    assert (out / "converged-study.provenance.json").is_file()
    # the second call trains nothing: every attempt is in the store
    before = len(load_results(store))
    rows2, markdown2 = run_converged(out, plan=plan, bound_contexts=64, execution=ONE_WORKER)
    assert len(load_results(store)) == before and rows2 == rows
    # and the page is regenerated from the CSV alone
    _, markdown3 = run_converged(out, report_only=True, bound_contexts=64)
    assert markdown3.split("\n", 3)[3] == markdown.split("\n", 3)[3]
    # the bounds are kept beside the CSV: a report without the cache recomputes nothing
    import shutil

    from numerics.experiments.study.converged import run as converged_run

    assert (out / "converged-study.bounds.json").is_file()
    shutil.rmtree(out / "cache", ignore_errors=True)

    def refuse(*args, **kwargs):
        raise AssertionError("--report-only recomputed a bound the table's bounds file holds")

    original = converged_run.cached_softmax_bounds
    converged_run.cached_softmax_bounds = refuse
    try:
        _, markdown4 = run_converged(out, report_only=True, bound_contexts=64)
    finally:
        converged_run.cached_softmax_bounds = original
    assert markdown4.split("\n", 3)[3] == markdown.split("\n", 3)[3]


def test_a_run_that_has_not_converged_is_retrained_with_the_cap_doubled(tmp_path, monkeypatch):
    from numerics.experiments.study.converged import run as converged_run

    # the rule itself is tested above; here a rule that needs 32 steps drives the ladder (where the runner looks it up)
    monkeypatch.setattr(converged_run, "is_converged", lambda curve, se: curve[-1, 0] >= 32)
    plan = tiny_plan(spectra=((0.0, 0.0),), depths=(1, 2), seeds=(0,), max_doublings=3)
    results = converged_run.run_converged_study(plan, tmp_path / "store", execution=ONE_WORKER)
    attempts = load_results(tmp_path / "store", status="done")
    assert sorted(r["config"]["max_steps"] for r in attempts) == [16, 16, 32, 32]  # 64 and 128 never needed
    assert {spec.depth: (cfg.max_steps, n, ok) for spec, (cfg, _, n, ok) in results.items()} == {1: (32, 2, True), 2: (32, 2, True)}


def test_the_converged_study_sends_every_run_to_the_scheduler_of_its_execution(tmp_path, monkeypatch,
                                                                                dask_scheduler):
    """``run_converged(..., execution=Execution('dask', scheduler=ADDR))``: each sweep of the study (every cap and
    the doubling check) receives that execution, and every stored run was trained by a worker of that cluster."""
    import os

    import distributed

    from numerics.experiments.study.converged import run as converged_run

    calls = []
    real = converged_run.run_sweep

    def spy(grid, out_dir, **kwargs):
        summary = real(grid, out_dir, **kwargs)
        calls.append((kwargs["execution"], summary))
        return summary

    monkeypatch.setattr(converged_run, "run_sweep", spy)
    plan = tiny_plan(spectra=((0.0, 0.0),), seeds=(0,), max_doublings=0)
    execution = Execution("dask", scheduler=dask_scheduler, progress=False)
    rows, _ = run_converged(tmp_path / "out", plan=plan, bound_contexts=64, execution=execution)
    assert len(rows) == len(plan.runs()) and calls
    for sent, summary in calls:
        assert (sent.backend, sent.scheduler, sent.workers, sent.progress) == ("dask", dask_scheduler, None, False)
        assert (summary.backend, summary.workers, summary.failed) == ("dask", 2, 0)
    assert sum(summary.executed for _, summary in calls) == len(load_results(tmp_path / "out" / "store"))
    with distributed.Client(dask_scheduler, set_as_default=False) as client:
        worker_pids = set(client.run(os.getpid).values())
    assert {r["pid"] for r in load_results(tmp_path / "out" / "store")} <= worker_pids and os.getpid() not in worker_pids


STUDY_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from test_converged import ONE_WORKER, tiny_plan
from numerics.experiments.study.converged import run_converged_study
if __name__ == "__main__":
    run_converged_study(tiny_plan(spectra=((0.0, 0.0),), seeds=(0, 1)), {store!r}, execution=ONE_WORKER)
"""


def test_a_sigkilled_study_resumes_from_its_store_without_retraining_finished_runs(tmp_path):
    """The driver holds right after its first commit (IDEPTH_TEST_HOLD_AFTER_COMMIT) and is SIGKILLed with its
    worker; the study called again finishes the rest and leaves the committed run exactly as it was."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from _checkout import checkout_env

    from numerics.experiments import sweep as sw

    store = tmp_path / "store"
    script = tmp_path / "study.py"
    script.write_text(STUDY_SCRIPT.format(tests=str(Path(__file__).parent), store=str(store)))
    marker = tmp_path / "first-commit"
    env = checkout_env(OMP_NUM_THREADS="1", **{sw.HOLD_AFTER_COMMIT_VARIABLE: str(marker)})
    driver = subprocess.Popen([sys.executable, str(script)], env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while not marker.exists():
            assert driver.poll() is None, driver.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "no first commit within 180 s"
            time.sleep(0.05)
        os.killpg(driver.pid, signal.SIGKILL)  # the driver and its worker process
        driver.wait(timeout=30)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(timeout=30)
    first = [r for r in load_results(store) if r["status"] == "done"]
    assert len(first) == 1
    plan = tiny_plan(spectra=((0.0, 0.0),), seeds=(0, 1))
    from numerics.experiments.study.converged import run_converged_study

    results = run_converged_study(plan, store, execution=ONE_WORKER)
    assert set(results) == set(plan.runs())
    after = {r["hash"]: r for r in load_results(store)}
    assert {r["status"] for r in after.values()} == {"done"}
    kept = after[first[0]["hash"]]
    assert (kept["attempts"], kept["metrics"], kept["finished_at"]) == (first[0]["attempts"], first[0]["metrics"],
                                                                         first[0]["finished_at"])


SHIPPED = Path(__file__).resolve().parents[1] / "docs" / "results" / "converged-study.csv"


@pytest.mark.skipif(not SHIPPED.is_file(), reason="no shipped converged-study.csv in this checkout")
def test_the_shipped_table_is_self_consistent_and_its_page_shows_its_numbers():
    import json

    rows = read_study_csv(SHIPPED)
    required = ["model", "norm", "a", "b", "k", "d", "N", "P", "depth", "seed", "steps", "converged", "R_L", "R_L_se", "A_L", "C_L"]
    assert rows and all(set(required) <= set(r) for r in rows)
    assert len({r["content_hash"] for r in rows}) == len(rows)
    for r in rows:
        assert r["converged"] == (abs(r["change_last_quarter"]) < r["R_L_se"])
        assert r["steps"] > 0 and r["R_L"] > 0 and r["R_L_se"] > 0
        if r["depth"] == 1:
            assert r["delta_R1"] == 0.0
    prov = json.loads(SHIPPED.with_suffix(".provenance.json").read_text())
    assert {"package_version", "command", "date", "machine", "plan"} <= set(prov)
    page = (SHIPPED.parent / "converged-study.md").read_text()
    assert f"{len(rows)} runs" in page
    groups = {}
    for r in rows:
        groups.setdefault((r["model"], r["N"], r["a"], r["b"], r["k"], r["depth"]), []).append(r["R_L"])
    for (model, N, a, b, k, depth), values in groups.items():
        assert f"## {model}, top-{k}, N = {N}, (a, b) = ({a:g}, {b:g})" in page
        assert f"| {depth} | {len(values)} (" in page and f"{np.mean(values):.4f} ± " in page


def test_the_doubling_check_trains_twice_the_cap_and_reports_the_paired_gain(tmp_path):
    plan = tiny_plan(spectra=((0.0, 0.0),), depths=(1, 2), seeds=(0,), contrast_spectrum=(0.0, 0.0), confirm_depths=(2,),
                     max_doublings=0)
    rows, markdown = run_converged(tmp_path / "o", plan=plan, bound_contexts=64, execution=ONE_WORKER)
    store = tmp_path / "o" / "store"
    caps = sorted(r["config"]["max_steps"] for r in load_results(store, status="done"))
    assert caps.count(32) == 1 and caps.count(16) == len(plan.runs())  # one doubled run: L = 2, main model
    (row,) = [r for r in rows if r["model"] == "nonlinear" and r["N"] == plan.N and r["depth"] == 2]
    doubled = plan.config(RunSpec("nonlinear", 0.0, 0.0, plan.N, 2, 0), 32)
    target = evaluation_batch(doubled).target.astype(np.float64)
    e16, e32 = [(load_arrays(store, h, ["eval_prediction"])["eval_prediction"] - target) ** 2
                for h in (row["content_hash"], doubled.content_hash())]
    assert row["doubling_gain"] == pytest.approx(float(np.mean(e16 - e32)), rel=1e-9, abs=1e-12)
    assert all(math.isnan(r["doubling_gain"]) for r in rows if r is not row)
    assert "Doubling" in markdown
