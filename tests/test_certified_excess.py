"""The study against the bracket: R*_∞ below every depth, U_L above; the excess on log–log axes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from numerics.experiments.study.certified.excess import excess_section, local_slope, plateau_bracket


def _row(plateau=2.0, lower=1.9, alpha=1.0, **extra):
    L = np.array([1, 2, 4, 8, 16, 32, 64, 128])
    env = 1.95 + 0.2 / L  # a c/L law above the plateau's bracket
    row = {"a": 0.0, "b": 0.0, "label": "(a, b) = (0, 0)", "depths": L.tolist(), "envelope": env.tolist(),
            "envelope_se": [0.002] * 8, "U": (env + 0.01).tolist(), "U_se": [0.001] * 8, "plateau": plateau,
            "plateau_se": 0.01, "plateau_lower": lower, "alpha_predicted": alpha, "alpha_interval": [0.8, 1.2],
            **extra}
    if plateau is None:  # not shipped: excess_rows leaves all of R*_∞'s fields None
        row.update(plateau_se=None, plateau_lower=None, alpha_predicted=None, alpha_interval=None)
    return row


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0])
def test_the_local_slope_of_a_power_law_is_minus_its_exponent(alpha):
    L = np.array([4, 8, 16, 32, 64, 128])
    assert local_slope(L, 3.0 * L ** -alpha, 16, 128) == pytest.approx(-alpha, rel=1e-12)


def test_a_slope_over_a_non_positive_excess_or_one_depth_is_not_a_number():
    assert math.isnan(local_slope([1, 2, 4], [0.1, 0.0, 0.05], 1, 4))
    assert math.isnan(local_slope([1, 2, 4], [0.1, 0.05, 0.02], 4, 8))


def test_the_plateau_lies_below_every_expressible_model_and_above_its_lower_estimate():
    row = _row(plateau=2.5)  # an upper estimate above U_L: U_L is the better upper end
    low, high = plateau_bracket(row)
    assert low == 1.9 and high == min(row["U"]) < 2.5
    low, high = plateau_bracket(_row(plateau=1.94))  # below every U_L: the upper estimate is the upper end
    assert high == 1.94


def test_the_section_states_each_spectrum_bracket_and_the_slopes_at_both_ends():
    lines = excess_section([_row(), _row(label="(a, b) = (1, 0)", plateau=None)])
    rows = [line for line in lines if line.startswith("| (a, b)")]
    assert len(rows) == 2 and "not shipped" in rows[1]
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    low, high = plateau_bracket(_row())
    assert cells[3] == f"[{low:.4f}, {high:.4f}]" and cells[4] == f"{high - low:.4f}"
    env = np.asarray(_row()["envelope"])
    slopes = [-local_slope(_row()["depths"], env - p, 16, 128) for p in (low, high)]
    # over the high end the deepest envelope points lie below it (trained models beat U_L): no slope there
    assert math.isfinite(slopes[0]) and math.isnan(slopes[1])
    assert cells[6] == f"{slopes[0]:.2f} / –"
    assert excess_section([]) == []


def test_the_excess_figure_is_written_with_a_panel_per_spectrum(tmp_path):
    pytest.importorskip("matplotlib")
    from numerics.experiments.study.figures import draw_excess_figure

    path = draw_excess_figure([_row(), _row(plateau=None)], tmp_path / "excess.png")
    assert path.stat().st_size > 10_000
