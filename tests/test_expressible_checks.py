"""The check of the exchangeable law against trained models (numerics.experiments.study.expressible_checks).

Fast fakes only: no training, no Monte Carlo of the study's heads.
"""

from __future__ import annotations

import numpy as np
import pytest

from numerics.experiments.study import expressible_checks as checks
from numerics.experiments.study.plan import Plan
from numerics.experiments.study.defaults import fit_inverse_depth
from tests.tolerances import ROUNDOFF, rtol


def test_plateau_and_c_fit_recovers_an_exact_inverse_depth_law():
    L = np.array([1, 2, 4, 8, 16, 32, 64, 128])
    plateau, c = fit_inverse_depth(L, 2.15 + 0.87 / L, np.linspace(0.01, 0.05, L.size))[:2]
    assert (plateau, c) == pytest.approx((2.15, 0.87), rel=rtol(ROUNDOFF))


def test_lazy_law_has_the_fixed_gain_form_plateau_plus_v_over_depth():
    plan = Plan(d=4, N=8, P=8, top16_spectra=())  # top-16 of 8 tokens is no setting
    law = checks.lazy_law(0.0, 0.0, plan, (1, 2, 4), layers=32, draws=2, contexts=64)
    L = np.array([1.0, 2.0, 4.0])
    assert law["fixed"] == pytest.approx(law["law_plateau"][:, None] + law["law_c"][:, None] / L,
                                         rel=rtol(ROUNDOFF))


def _certified(tmp_path):
    """A certified study's directory beside ``tmp_path`` with one (fake) contrast run: the page's inputs are checked
    first."""
    runs = tmp_path.parent / f"{tmp_path.name}-certified" / "contrasts"
    runs.mkdir(parents=True, exist_ok=True)
    (runs / "one.npz").write_bytes(b"")
    return runs.parent


def test_a_results_directory_without_the_certified_contrasts_is_refused_before_any_work(monkeypatch, tmp_path):
    """`idepth expressible check --out /nonexistent` ran 176 s, then failed on a numpy error: now it is refused at once."""
    def never(*args, **kwargs):
        raise AssertionError("no work may start")

    monkeypatch.setattr(checks, "lazy_law", never)
    monkeypatch.setattr(checks, "collect_contrasts", never)
    for out, why in ((tmp_path / "missing", "holds no certified study"), (tmp_path, "holds no certified study")):
        with pytest.raises(ValueError, match=why):
            checks.write_expressible_checks(out, progress=lambda _: None)
    (tmp_path / "certified" / "contrasts").mkdir(parents=True)
    with pytest.raises(ValueError, match="is empty"):
        checks.write_expressible_checks(tmp_path, progress=lambda _: None)
    (tmp_path / "a-file").write_text("")
    with pytest.raises(ValueError, match="existing file, not a directory"):
        checks.write_expressible_checks(tmp_path / "a-file", progress=lambda _: None)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a-file", "certified", "contrasts"]  # nothing written


def _fake_pipeline(monkeypatch):
    """Every expensive or file-reading step of ``write_expressible_checks`` replaced by a tiny fake."""
    monkeypatch.setattr(checks, "collect_contrasts", lambda path: [])
    monkeypatch.setattr(checks, "lazy_checks", lambda *args, **kwargs: ([], []))


def test_writing_leaves_nothing_when_the_figure_step_raises(monkeypatch, tmp_path):
    _fake_pipeline(monkeypatch)
    (tmp_path / "expressible.md").write_text("the old page")

    def broken(*args, **kwargs):
        raise RuntimeError("figure failed")

    monkeypatch.setattr(checks, "draw_expressible_figure", broken)
    with pytest.raises(RuntimeError, match="figure failed"):
        checks.write_expressible_checks(tmp_path, expressible_dir=tmp_path / "none", progress=lambda _: None,
                                        certified_dir=_certified(tmp_path))
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["expressible.md"]
    assert (tmp_path / "expressible.md").read_text() == "the old page"


def test_writing_leaves_nothing_when_a_late_file_fails_to_stage(monkeypatch, tmp_path):
    import numerics.io as nio

    _fake_pipeline(monkeypatch)
    real_stage = nio.stage

    def stage(path, write):
        if path.name == checks.PAGE:
            raise OSError("disk full")
        return real_stage(path, write)

    monkeypatch.setattr(nio, "stage", stage)  # the page writer (numerics.io.write_together) stages each file
    with pytest.raises(OSError, match="disk full"):
        checks.write_expressible_checks(tmp_path, expressible_dir=tmp_path / "none", progress=lambda _: None,
                                        certified_dir=_certified(tmp_path))
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_writing_writes_the_page_figure_and_tables(monkeypatch, tmp_path):
    _fake_pipeline(monkeypatch)
    written = checks.write_expressible_checks(tmp_path, expressible_dir=tmp_path / "none", progress=lambda _: None,
                                              certified_dir=_certified(tmp_path))
    assert all(p.is_file() and p.stat().st_size > 0 for p in written)
    text = (tmp_path / checks.PAGE).read_text()
    assert checks.FIGURE in text and "No shipped U_L yet" in text
