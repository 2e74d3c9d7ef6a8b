"""The reproduction's reading of the certified study: the gain-law fit, the gap fit, the envelopes, the spot checks."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from page_parts import has_cells

import sympy as sp

from numerics.experiments.reproduce.envelope import load_envelopes, sizes_section, spot_check_configs
from numerics.experiments.shipped import shipped_path
from theory import fit_gain_law, symbols
from theory.fitting import DEPTH_LAW, GAIN_ALPHA_GRID as ALPHA_GRID, GAIN_LAW, gap_fit

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




def test_the_shipped_envelopes_are_the_verdicts_files_numbers():
    from numerics.experiments.study.certified.page import read_verdicts

    table = load_envelopes()
    record = read_verdicts()
    assert len(table.summaries) == len(record["settings"]) and table.main_P == record["main"]["P"]
    for setting in record["settings"]:
        s = table.summary(setting["a"], setting["b"], setting["k"], P=setting["P"])
        assert s.depths == tuple(setting["depths"]) and s.verdict == setting["verdict"]
        assert s.reason == setting["reason"] and s.checked == tuple(setting["checked_depths"])
        np.testing.assert_array_equal(s.R.mean, setting["envelope"])
        np.testing.assert_array_equal(s.B, setting["bound"])
        assert s.gain == setting["envelope"][0] - setting["envelope"][-1] and s.n_seeds == setting["seeds"]
        assert s.gains_se[0] == 0.0 and np.all(np.asarray(s.gains_se[1:]) > 0) and np.all(s.R.se > 0)
        assert [r.name for r in s.recipes] == [r["name"] for r in setting["recipes"]]
        assert [r.fit_reported for r in s.recipes] == [r["fit_reported"] for r in setting["recipes"]]
    assert "from the revised study" in table.source_text()
    with pytest.raises(KeyError, match="no certified setting"):
        table.summary(3.0, 3.0, 2)


def test_the_decomposition_is_the_revised_studys_and_only_at_its_main_setting():
    table = load_envelopes()
    facts = json.loads(shipped_path("certified-revised", "certified-revised.json").read_text())
    row = next(r for r in facts["decomposition"] if (r["a"], r["b"], r["depth"]) == (0.0, 0.0, 4))
    s = table.summary(0.0, 0.0, 2)
    i = s.depths.index(4)
    assert s.C.mean[i] == row["C"]["value"] and s.gap.mean[i] == row["A_minus_C"]["value"] and np.isnan(s.C.mean[0])
    with pytest.raises(KeyError, match="no certified setting"):  # the first study's second P: not read
        table.summary(0.0, 0.0, 2, P=128)


def test_no_verdicts_and_verdicts_from_an_older_package_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="certified-study.verdicts.json"):
        load_envelopes(tmp_path)
    results = tmp_path / "results"
    (results / "certified-revised").mkdir(parents=True)
    for name in ("certified-study.verdicts.json", "certified-study.csv"):
        shutil.copy(shipped_path("certified-revised", name), results / "certified-revised" / name)
    record = json.loads((results / "certified-revised" / "certified-study.verdicts.json").read_text())
    del record["settings"][0]["gains_se"]
    (results / "certified-revised" / "certified-study.verdicts.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match=r"setting \(0, 0\), P = 64 lacks gains_se"):
        load_envelopes(results)


def test_spot_checks_refuse_a_warm_start_and_a_candidate_not_in_the_table():
    with pytest.raises(ValueError, match="not a cold start"):
        spot_check_configs([(0.0, 0.0, 2, 64, 1, 0, "oracle", 3e-4, 3000)])
    with pytest.raises(ValueError, match="has no candidate at"):
        spot_check_configs([(0.0, 0.0, 2, 64, 3, 0, "cold", 1e-3, 6000)])


def test_a_shipped_candidate_retrained_here_gives_the_shipped_selection_loss():
    """About 30 s: the (0, 0) L = 1 cold candidate (Adam 1e-3, 6000 steps) of seed 0, from its cell's configuration."""
    from numerics.experiments.runner import run

    (row, cfg), = spot_check_configs([(0.0, 0.0, 2, 64, 1, 0, "cold", 1e-3, 6000)])
    assert abs(run(cfg).metrics["R_L"] - row["R_select"]) <= row["R_select_se"]


def test_sizes_section_says_whether_table1_compares_columns_at_different_sizes(tmp_path):
    rows = [{"source": "Table 1", "a": 0, "b": 0, "k": 2, "value": 2.007}] * 14
    data = {"d_values": [16, 128], "P_values": [64, 1024], "rows": rows, "best_mixture": [16, 64],
            "best_single": [16, 64], "region_mixture": [[16, 64]], "chi2_mixture": [[10.0, 50.0], [900.0, 2000.0]],
            "n_seeds": 4, "n_contexts": 2048}
    path = tmp_path / "sizes.json"
    path.write_text(json.dumps(data))
    text = sizes_section(load_envelopes(), (128, 1024), path)
    assert "**Table 1 compares two columns measured at different sizes**" in text
    assert has_cells(text, "χ² at the linear Table 3 sizes (d, P) = (128, 1024)", "2e+03")
    assert has_cells(text, "(0, 0)", "2.007")  # the certified envelope next to the paper's plateau
    data["region_mixture"] = [[16, 64], [128, 1024]]
    path.write_text(json.dumps(data))
    assert "may come from the same sizes" in sizes_section(None, (128, 1024), path)
    assert "No size inference found" in sizes_section(None, (128, 1024), tmp_path / "missing.json")
