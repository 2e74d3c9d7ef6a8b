"""The softmax panel of the reproduction's Figs. 1 and 6a: the certified envelope's excess over the
infinite-mixture limit, ``R*_L − R*_∞``, on log–log axes (``reproduce/figures/_softmax.excess_panel``).

The figures are drawn by a smoke reproduction of ``fig1`` and ``fig6a`` alone (no regime study, no calibration);
the panel's numbers are compared with :func:`~numerics.experiments.study.certified.excess.excess_rows` of the
shipped revised study's verdicts, read here straight from its JSON file.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from numerics.experiments.shipped import shipped_path
from numerics.experiments.study.curves import CurveSummary

#: the panel of each figure that is the certified envelope's excess, and the Table 1 spectra it shows
PANELS = {"fig1": (1, lambda a, b: (a, b) == (0.0, 0.0)), "fig6a": (1, lambda a, b: a == 0.0)}


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    """``{artefact ID: matplotlib figure}`` of a smoke reproduction of Figs. 1 and 6a."""
    from numerics.experiments.execution import Execution
    from numerics.experiments.reproduce import plotting, reproduce

    kept, save = {}, plotting.save
    plotting.save = lambda ctx, fig, artefact_id: (kept.__setitem__(artefact_id, fig), save(ctx, fig, artefact_id))[1]
    try:
        reproduce("smoke", "fig1,fig6a", tmp_path_factory.mktemp("excess") / "out", study=False, calibrate=False,
                  execution=Execution(workers=1, progress=False), log=lambda text: None)
    finally:
        plotting.save = save
    return kept


@pytest.fixture(scope="module")
def rows():
    """``excess_rows`` of the shipped revised study, from its verdicts file (not through the reproduction)."""
    from numerics.experiments.study.certified.excess import excess_rows
    from numerics.experiments.study.plan import REVISED_PLAN

    record = json.loads(shipped_path("certified-revised", "certified-study.verdicts.json").read_text())
    summaries = [CurveSummary.from_dict(s) for s in record["settings"]]
    return excess_rows(summaries, REVISED_PLAN)


def _panel(figures, artefact_id):
    index, select = PANELS[artefact_id]
    return figures[artefact_id].axes[index], select


def _spectrum_lines(ax) -> dict:
    """``{label: (x, y)}`` of the panel's curves with error bars (one a spectrum)."""
    return {c.get_label(): tuple(np.asarray(v, dtype=float) for v in c.lines[0].get_data()) for c in ax.containers}


@pytest.mark.parametrize("artefact_id", sorted(PANELS))
def test_the_softmax_panel_is_drawn_on_log_log_axes(figures, artefact_id):
    ax, _ = _panel(figures, artefact_id)
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert "R*_∞" in ax.get_ylabel()


@pytest.mark.parametrize("artefact_id", sorted(PANELS))
def test_the_softmax_panel_has_one_line_per_shipped_spectrum(figures, rows, artefact_id):
    ax, select = _panel(figures, artefact_id)
    shipped = [r["label"] for r in rows if select(r["a"], r["b"]) and r["plateau"] is not None]
    assert len(shipped) == (1 if artefact_id == "fig1" else 4)
    assert sorted(_spectrum_lines(ax)) == sorted(shipped)


@pytest.mark.parametrize("artefact_id", sorted(PANELS))
def test_the_softmax_panel_draws_the_alpha_1_reference_slope(figures, artefact_id):
    ax, _ = _panel(figures, artefact_id)
    [reference] = [line for line in ax.get_lines() if line.get_label() == "α = 1 (c/L)"]
    L, y = (np.asarray(v, dtype=float) for v in reference.get_data())
    assert len(L) >= 3 and np.allclose(np.diff(np.log(y)) / np.diff(np.log(L)), -1.0, rtol=1e-12)
    assert "α = 1 (c/L)" in [t.get_text() for t in ax.get_legend().get_texts()]  # labelled


@pytest.mark.parametrize("artefact_id", sorted(PANELS))
def test_the_softmax_panel_draws_the_envelope_over_the_low_end_of_the_bracket(figures, rows, artefact_id):
    """Markers: ``R*_L − low`` (``plateau_bracket``), exactly the shipped numbers, at the shipped depths; the
    α = 1 line starts at the highest of them at L = 1."""
    from numerics.experiments.study.certified.excess import plateau_bracket

    ax, select = _panel(figures, artefact_id)
    lines = _spectrum_lines(ax)
    first = []
    for row in (r for r in rows if select(r["a"], r["b"]) and r["plateau"] is not None):
        low, _ = plateau_bracket(row)
        L, y = lines[row["label"]]
        excess = np.asarray(row["envelope"]) - low
        assert L.tolist() == [float(d) for d in row["depths"]]
        assert np.all(excess > 0) and np.array_equal(y, excess), row["label"]
        first.append(excess[0])
    [reference] = [line for line in ax.get_lines() if line.get_label() == "α = 1 (c/L)"]
    assert reference.get_ydata()[0] == max(first)


@pytest.mark.parametrize("artefact_id", sorted(PANELS))
def test_the_softmax_panel_draws_U_L_and_the_bracket_band(figures, rows, artefact_id):
    """Dotted, one per spectrum: ``U_L − low``; shaded: from ``R*_L − high`` up to ``R*_L − low``."""
    from matplotlib.collections import PolyCollection

    from numerics.experiments.study.certified.excess import plateau_bracket

    ax, select = _panel(figures, artefact_id)
    floor = ax.get_ylim()[0] / 0.8
    dotted = [np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines()
              if line.get_linestyle() == ":" and len(line.get_xdata())]
    bands = [collection.get_paths()[0].vertices[:, 1] for collection in ax.collections
             if isinstance(collection, PolyCollection)]  # fill_between; the error bars are LineCollections
    selected = [r for r in rows if select(r["a"], r["b"]) and r["plateau"] is not None]
    assert len(dotted) == len(bands) == len(selected)
    for row, U, band in zip(selected, dotted, bands):
        low, high = plateau_bracket(row)
        assert np.allclose(U, np.maximum(np.asarray(row["U"]) - low, floor), rtol=1e-12), row["label"]
        envelope = np.asarray(row["envelope"])
        assert np.isclose(band.max(), (envelope - low).max(), rtol=1e-12)
        assert np.isclose(band.min(), np.maximum(envelope - high, floor).min(), rtol=1e-12)
