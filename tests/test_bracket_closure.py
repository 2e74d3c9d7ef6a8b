"""Claims of what would close the R*_∞ bracket (theory.bracket_closure): the width's parts, their rates, the cost."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from tests.tolerances import ROUNDOFF, rtol
from theory import PowerLawSpectrum
from theory import mixture_limit as ml
from theory.bracket_closure import FLAT, MEASURED_SES, SPLIT, bracket_closure
from theory.paper import TABLE1_SPECTRA


def _shipped(a, b):
    return ml.shipped_infinite_mixture(PowerLawSpectrum(a, b, 16), 64, 2)


@pytest.fixture(scope="module")
def closures():
    return {(a, b): bracket_closure(_shipped(a, b)) for a, b in TABLE1_SPECTRA}


def test_the_width_is_exactly_overfit_plus_gap(closures):
    for c in closures.values():
        assert c["width"] == pytest.approx(c["overfit"] + c["gap"], rel=rtol(ROUNDOFF))
        assert c["width"] == pytest.approx(c["upper"] - c["lower"], rel=rtol(ROUNDOFF))
        assert c["overfit"] > 0 and c["gap"] > 0


def test_shipped_numbers_at_zero_zero_are_pinned(closures):
    c = closures[(0.0, 0.0)]
    assert (round(c["width"], 4), round(c["overfit"], 4), round(c["gap"], 4)) == (0.1412, 0.0322, 0.109)
    assert round(c["target"], 4) == 0.0089 and round(c["expressible"]["se"], 4) == 0.0019
    assert (round(c["overfit_rate"]["exponent"], 2), round(c["overfit_rate"]["exponent_se"], 2)) == (0.57, 0.06)
    assert (round(c["gap_rate"]["exponent"], 2), round(c["gap_rate"]["exponent_se"], 2)) == (0.26, 0.19)
    assert round(c["fit_size_needed"] / 1e6, 2) == 2.05 and round(c["fit_size_needed_atoms"] / 1e5, 2) == 4.74
    assert round(c["cpu_hours"], 2) == 1.80 and c["iterations_needed"] is None


def test_verdicts_over_the_seven_spectra(closures):
    # resolving U_128's excess (width <= U_128 − upper) holds nowhere; the lower-estimate reading (upper <= U_128)
    # at 6 of 7; the gap's rate is measured only at (0.5, 0), the overfit's at all 7
    assert sum(c["met"] for c in closures.values()) == 0
    assert sum(c["met_at_lower"] for c in closures.values()) == 6
    assert [k for k, c in closures.items() if c["gap_rate"]["measured"]] == [(0.5, 0.0)]
    assert all(c["overfit_rate"]["measured"] for c in closures.values())
    one_zero = closures[(1.0, 0.0)]
    assert one_zero["target"] < 0 and one_zero["fit_size_needed"] is None and one_zero["cpu_hours"] is None
    assert "no width resolves it" in one_zero["note"]


def test_met_at_lower_is_the_sign_of_the_paired_difference(closures):
    for c in closures.values():
        assert c["met_at_lower"] == (c["expressible"]["upper_minus"] <= 0)
        assert c["met"] == (c["width"] <= c["target"])


def test_extrapolations_reach_half_the_target_by_the_fitted_rates(closures):
    for key, c in closures.items():
        if not c["target"] > 0:
            continue
        share = SPLIT * c["target"]
        q = c["overfit_rate"]["exponent"]
        assert c["overfit"] * (c["fit_size_needed"] / 65536) ** (-q) == pytest.approx(share, rel=rtol(ROUNDOFF))
        assert c["overfit_per_atom"] * c["atoms"] / c["fit_size_needed_atoms"] == pytest.approx(share,
                                                                                               rel=rtol(ROUNDOFF))
        if c["iterations_needed"] is not None:
            p = c["gap_rate"]["exponent"]
            t = c["iterations"]
            assert c["gap"] * (c["iterations_needed"] / t) ** (-p) == pytest.approx(share, rel=rtol(ROUNDOFF))


def test_a_rate_is_measured_only_above_the_stated_ses(closures):
    for c in closures.values():
        for rate in (c["gap_rate"], c["overfit_rate"]):
            assert rate["measured"] == (rate["exponent"] > max(MEASURED_SES * rate["exponent_se"], FLAT))
            assert rate["measured"] or rate["reason"]


def test_an_unfalling_gap_gives_no_iterations_and_a_falling_one_does():
    mix = _shipped(0, 0)
    flat = tuple({**h, "gap": 0.1} if h["gap"] is not None else h for h in mix.history)
    out = bracket_closure(replace(mix, history=flat))
    assert not out["gap_rate"]["measured"] and out["iterations_needed"] is None
    falling = tuple({**h, "gap": 0.5 / h["iteration"]} for h in mix.history)
    out = bracket_closure(replace(mix, history=falling))
    assert out["gap_rate"]["measured"] and out["gap_rate"]["exponent"] == pytest.approx(1.0, rel=rtol(ROUNDOFF))
    assert out["iterations_needed"] == pytest.approx(len(mix.history) * mix.gap / (SPLIT * out["target"]),
                                                     rel=rtol(ROUNDOFF))


def test_cpu_per_iteration_is_read_from_the_history():
    mix = _shipped(0, 0)
    out = bracket_closure(mix)
    seconds = [h["seconds"] for h in mix.history]
    assert out["cpu_per_iteration"] == pytest.approx((seconds[-1] - seconds[0]) / (len(seconds) - 1))
    assert out["cpu_hours"] == pytest.approx(len(mix.history) * out["cpu_per_iteration"] * out["fit_size_needed"]
                                             / mix.setting["n_fit"] / 3600)


@pytest.mark.parametrize("split", [0, 1, -0.5, "half", math.nan])
def test_bad_split_raises_naming_the_argument(split):
    with pytest.raises(ValueError, match="split"):
        bracket_closure(_shipped(0, 0), split=split)


def test_a_result_without_history_is_refused():
    with pytest.raises(ValueError, match="mix"):
        bracket_closure(replace(_shipped(0, 0), history=()))


def test_cli_closure_prints_one_row_per_spectrum(capsys):
    from idepth.cli import main

    assert main(["bracket", "closure", "--spectra", "0,0;1,0"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4 and lines[1].startswith("(0, 0)") and lines[2].startswith("(1, 0)")
    assert float(lines[1].split()[2]) == pytest.approx(0.1412, abs=1e-4)


def test_cli_closure_refuses_a_spectrum_without_shipped_data(capsys):
    from idepth.cli import main

    assert main(["bracket", "closure", "--spectra", "0.3,0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("idepth bracket: error: --spectra") and "(0.3, 0)" in err[0]


def test_the_bracket_page_has_the_closure_section_with_one_row_per_spectrum():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "derivations" / "bracket.md").read_text(encoding="utf-8")
    section = page.split("## What would close the bracket", 1)[1]
    closure, versus = section.split("### The upper estimate against $U_{128}$", 1)
    for part in (closure, versus):
        rows = [line for line in part.splitlines() if line.startswith("| (")]
        assert [row.split(" | ")[0] for row in rows] == [f"| ({a:g}, {b:g})" for a, b in TABLE1_SPECTRA]


def test_the_continued_run_does_not_follow_the_shipped_gap_rate():
    import json

    from theory.bracket_closure import continued_gap

    check = json.loads((ml.default_out_dir() / "checks" / "a0_b0_d16_P64_k2_continued.json").read_text())
    out = continued_gap(_shipped(0, 0), check)
    assert out["iterations"] == 35 and not out["rate"]["measured"] and not out["joint_rate"]["measured"]
    assert out["measured"] > out["predicted"]            # the gap stays above where the shipped fit puts it
    assert out["fit_loss_drop"] > 0 and out["cpu_seconds"] < 15 * 60
    with pytest.raises(ValueError, match="last"):
        continued_gap(_shipped(0, 0), check, last=0)
    with pytest.raises(ValueError, match="continuation"):
        continued_gap(_shipped(0, 0), {"history": []})
