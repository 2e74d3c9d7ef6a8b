"""Claims about the shipped U_L (theory/data/expressible): current, precise, and below the cosine-head bound.

The files are what ``theory.predict_loss`` reads by default for softmax attention on the difficult task;
``idepth expressible run`` regenerates them.
"""

from __future__ import annotations

import json

import pytest

from numerics.experiments.study.expressible import SETTINGS, _settings_dict, data_dir, file_name
from theory.paper import TABLE1_SPECTRA


def _shipped(a, b) -> dict:
    path = data_dir() / file_name(a, b, SETTINGS)
    assert path.is_file(), f"{path.name} is not shipped: run `idepth expressible run`"
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("a, b", TABLE1_SPECTRA)
def test_each_table1_spectrum_ships_u_l_computed_with_the_current_settings(a, b):
    stored = _shipped(a, b)
    assert stored["settings"] == _settings_dict(SETTINGS)
    assert "laws" in stored and "result" in stored


@pytest.mark.parametrize("a, b", TABLE1_SPECTRA)
def test_the_paired_se_of_u_l_against_b_l_is_at_most_0_002_at_every_depth(a, b):
    result = _shipped(a, b)["result"]
    assert max(result["difference_se"]) <= 0.002, dict(zip(result["depths"], result["difference_se"]))


@pytest.mark.parametrize("a, b", TABLE1_SPECTRA)
def test_u_l_never_rises_along_doublings_on_the_selection_set(a, b):
    result = _shipped(a, b)["result"]
    chosen = [min(v["selection_loss"] for v in losses.values()) for losses in result["branch_losses"]]
    assert all(later <= earlier + 1e-12 for earlier, later in zip(chosen, chosen[1:])), chosen


@pytest.mark.parametrize("a, b", [(0.0, 0.0), (0.0, 0.25)])
def test_diverse_heads_take_u_l_below_the_cosine_head_bound_where_the_theory_says(a, b):
    """At (0, 0) and (0, 0.25): U_L ≤ B_L at every depth, and U_128 ≤ B_128 − 0.01 (both on the report set)."""
    result = _shipped(a, b)["result"]
    assert all(diff <= 0.0 for diff in result["difference"]), result["difference"]
    assert result["depths"][-1] == 128 and result["difference"][-1] <= -0.01
