"""The reproduction's reading of the converged study: the gain-law fit, the gap fit, the table, the spot checks."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys

import numpy as np
import pytest

import sympy as sp

from numerics.experiments.reproduce.converged import SHIPPED_TABLE, gap_fit, load_table, spot_check_configs
from numerics.experiments.shipped import shipped_path
from theory import fit_gain_law, symbols
from theory.fitting import DEPTH_LAW, GAIN_ALPHA_GRID as ALPHA_GRID, GAIN_LAW

DEPTHS = np.array([1, 2, 4, 8, 16, 32, 64, 128])


def _noisy_gains(alpha: float, c: float, se: float, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    gains = c * (1 - DEPTHS.astype(float) ** -alpha) + rng.normal(0, se, DEPTHS.size)
    gains[0] = 0.0
    return gains, np.full(DEPTHS.size, se)


@pytest.mark.parametrize("seed", range(5))
def test_gain_fit_covers_the_true_exponent_and_excludes_a_far_one(seed):
    gains, ses = _noisy_gains(1.0, 0.1, 0.002, seed)
    fit = fit_gain_law(DEPTHS, gains, ses)
    assert fit.covers(1.0) and fit.bounded and not fit.covers(0.3)
    assert fit.c == pytest.approx(0.1, abs=5 * fit.c_se)
    slow = fit_gain_law(DEPTHS, *_noisy_gains(0.2, 0.2, 0.002, seed))
    assert not slow.overlaps(0.85, 1.15) and slow.covers(0.2)


def test_the_gain_law_is_the_depth_law_at_one_minus_at_L():
    assert sp.simplify(GAIN_LAW - symbols.c_coef * (1 - symbols.L ** -symbols.alpha)) == 0
    assert sp.simplify(GAIN_LAW - (DEPTH_LAW.subs(symbols.L, 1) - DEPTH_LAW)) == 0 and symbols.L0 not in GAIN_LAW.free_symbols


def test_gain_fit_of_no_depth_effect_does_not_bound_alpha():
    fit = fit_gain_law(DEPTHS, np.zeros(DEPTHS.size), np.full(DEPTHS.size, 0.01))
    assert fit.c == 0.0 and fit.alpha_lo == ALPHA_GRID[0] and fit.alpha_hi == ALPHA_GRID[-1] and not fit.bounded


def test_a_poor_fit_widens_the_interval_by_the_birge_ratio():
    gains, ses = _noisy_gains(1.0, 0.1, 0.002, 0)
    tight = fit_gain_law(DEPTHS, gains, ses)
    rough = fit_gain_law(DEPTHS, gains + np.r_[0, 0.01, -0.01, 0.01, -0.01, 0.01, -0.01, 0.01], ses)
    assert rough.chi2 / rough.dof > 1 and (rough.alpha_hi - rough.alpha_lo) > (tight.alpha_hi - tight.alpha_lo)


@pytest.mark.parametrize("depths, gains, ses, match", [
    ([1, 2], [0.0, 0.1], [0.0, 0.01], "at least two depths"),
    ([1, 2, 4], [0.0, 0.1, 0.2], [0.0, 0.0, 0.01], "ses finite and positive"),
    ([1, 2, 4], [0.0, 0.1], [0.0, 0.01, 0.01], "one shape"),
])
def test_gain_fit_rejects_bad_input(depths, gains, ses, match):
    with pytest.raises(ValueError, match=match):
        fit_gain_law(depths, gains, ses)


def test_gap_fit_recovers_a_power_law_and_refuses_a_shared_error_above_the_plateau():
    L = np.array([2, 4, 8, 16, 32])
    out = gap_fit(L, 2.0 - 0.5 * L ** -0.7, 2.0)
    assert out.ok and out.alpha == pytest.approx(0.7) and out.r_squared == pytest.approx(1.0)
    bad = gap_fit(L, np.array([1.5, 1.8, 2.1, 1.9, 1.95]), 2.0)
    assert not bad.ok and "L = 8" in bad.reason


def test_the_shipped_table_reads_and_every_group_has_its_fit():
    table = load_table()
    assert table.path == shipped_path(*SHIPPED_TABLE) and table.provenance["plan"]["d"] == 16
    groups = table.groups()
    assert (0.0, 0.0, 2, 32) in groups and all(N == 32 for *_, N in groups)
    s = table.summary(0.0, 0.0, 2)
    assert s.depths[0] == 1 and s.gain[0] == 0.0 and s.fit is not None and s.n_runs == s.n_seeds * len(s.depths)
    narrow = table.summary(0.0, 0.0, 2, N=16)  # the N = d contrast is still reachable by width
    assert narrow.N == 16 and narrow.R[0] > s.R[0]
    with pytest.raises(KeyError, match="no nonlinear rows"):
        table.summary(3.0, 3.0, 2)


def test_a_missing_table_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="converged-study table not found"):
        load_table(tmp_path / "nope.csv")


def test_a_spot_check_whose_hash_does_not_match_is_refused(tmp_path):
    path = tmp_path / "study.csv"
    with open(shipped_path(*SHIPPED_TABLE), newline="") as src, open(path, "w", newline="") as dst:
        reader = csv.DictReader(src)
        writer = csv.DictWriter(dst, fieldnames=reader.fieldnames)
        writer.writeheader()
        for row in reader:
            writer.writerow({**row, "batch_size": "128"} if row["depth"] == "1" else row)  # a config that changed
    shutil.copy(shipped_path(*SHIPPED_TABLE).with_suffix(".provenance.json"), tmp_path / "study.provenance.json")
    with pytest.raises(ValueError, match="cannot be rebuilt"):
        spot_check_configs(load_table(path), [(0.0, 0.0, 2, 32, 1, 0)])
    with pytest.raises(ValueError, match="no run at"):
        spot_check_configs(load_table(), [(0.0, 0.0, 2, 32, 3, 0)])


def test_a_shipped_run_retrained_here_gives_the_shipped_loss(tmp_path):
    """About 15 s: the (0, 0) L = 1 run of seed 0, trained from its recorded configuration."""
    from numerics.experiments.runner import run

    (row, cfg), = spot_check_configs(load_table(), [(0.0, 0.0, 2, 32, 1, 0)])
    assert abs(run(cfg).metrics["R_L"] - row["R_L"]) <= row["R_L_se"]


def test_cli_rejects_a_missing_converged_table(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "idepth", "reproduce", "--converged-table", str(tmp_path / "x.csv"),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert proc.returncode == 2 and "--converged-table" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_sizes_section_says_whether_table1_compares_columns_at_different_sizes(tmp_path):
    import json

    from numerics.experiments.reproduce.converged import sizes_section

    rows = [{"source": "Table 1", "a": 0, "b": 0, "k": 2, "value": 2.007}] * 14
    data = {"d_values": [16, 128], "P_values": [64, 1024], "rows": rows, "best_mixture": [16, 64],
            "best_single": [16, 64], "region_mixture": [[16, 64]], "chi2_mixture": [[10.0, 50.0], [900.0, 2000.0]],
            "n_seeds": 4, "n_contexts": 2048}
    path = tmp_path / "sizes.json"
    path.write_text(json.dumps(data))
    text = sizes_section(load_table(), (128, 1024), path)
    assert "**Table 1 compares two columns measured at different sizes**" in text
    assert "| χ² at the linear Table 3 sizes (d, P) = (128, 1024) | 2e+03 |" in text
    assert "| (0, 0) | 2.007 |" in text  # the converged study next to the paper's plateau
    data["region_mixture"] = [[16, 64], [128, 1024]]
    path.write_text(json.dumps(data))
    assert "may come from the same sizes" in sizes_section(None, (128, 1024), path)
    assert "No size inference found" in sizes_section(None, (128, 1024), tmp_path / "missing.json")


def test_reproduce_can_run_its_own_converged_study_and_reads_that_table(tmp_path):
    """--converged-table run at smoke scale: a tiny converged study into OUT/converged, then the verdict from it."""
    from numerics.experiments.execution import Execution
    from numerics.experiments.reproduce import reproduce

    result = reproduce("smoke", only="table4", out_dir=tmp_path / "out", execution=Execution(workers=2, progress=False),
                       converged_table="run", log=lambda text: None)
    table = tmp_path / "out" / "converged" / "converged-study.csv"
    assert table.is_file() and (tmp_path / "out" / "converged" / "converged-study.md").is_file()
    claim = next(c for c in result.claims if c.id == "inverse_depth")
    assert str(table.name) in claim.evidence and "d = 4" in claim.evidence
    assert "converged-study.csv" in (tmp_path / "out" / "tables" / "table4.md").read_text()


def test_reproduce_with_dask_trains_its_converged_study_on_the_given_scheduler(tmp_path, monkeypatch, dask_scheduler):
    """``reproduce(..., execution=Execution('dask', scheduler=ADDR))`` with ``converged_table='run'`` (the paper
    scale's default): every sweep, the converged study's included, is sent to that scheduler and runs on its workers."""
    import dataclasses
    from types import MappingProxyType

    from numerics.experiments import sweep
    from numerics.experiments.execution import Execution
    from numerics.experiments.reproduce import reproduce
    from numerics.experiments.scales import SCALES
    from numerics.experiments.study.converged import run as converged_run

    calls = []
    real = sweep.run_sweep

    def spy(grid, out_dir, **kwargs):
        summary = real(grid, out_dir, **kwargs)
        calls.append((kwargs, summary))
        return summary

    monkeypatch.setattr(sweep, "run_sweep", spy)
    monkeypatch.setattr(converged_run, "run_sweep", spy)
    tiny = dict(d=4, P=8, spectra=((0.0, 0.0),), table4_spectra=(), depths=(1, 2), deep_depths=(), seeds=(0,),
                contrast_spectrum=None, batch_size=8, warmup_steps=2, base_steps=8, max_doublings=0, eval_size=32,
                evals_per_run=4)
    scale = dataclasses.replace(SCALES["smoke"], converged_plan=MappingProxyType(tiny), bound_contexts=64)
    execution = Execution("dask", scheduler=dask_scheduler, progress=False)
    reproduce(scale, only="fig3a", out_dir=tmp_path / "out", execution=execution, converged_table="run", study=False,
              calibrate=False, log=lambda text: None)
    converged_calls = [summary for _, summary in calls if summary.total == 2]  # the tiny plan's two runs
    assert converged_calls and converged_calls[0].executed == 2
    for kwargs, summary in calls:
        sent = kwargs["execution"]
        assert (sent.backend, sent.scheduler, sent.workers) == ("dask", dask_scheduler, None)
        assert (summary.backend, summary.workers) == ("dask", 2)  # the cluster's two worker processes
    assert (tmp_path / "out" / "converged" / "converged-study.csv").is_file()
