"""The checks of U_L and the exchangeable law against trained models (numerics.experiments.study.expressible_checks).

Fast fakes only: no training, no Monte Carlo of the study's heads.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from numerics.experiments.study import expressible_checks as checks
from numerics.experiments.study import expressible_page as page
from numerics.experiments.criteria import AGREEMENT_SIGMAS
from numerics.experiments.study.certified.plan import RECIPE, CertifiedPlan
from numerics.experiments.study.certified.table import CandidateRow, Errors
from tests.tolerances import ROUNDOFF, rtol


def _fake_study(rng, depths=(1, 2), seeds=(0, 1, 2), n=64):
    """Rows and errors of a tiny certified study at (0, 0): per cell a selected cold run and the untrained heads.

    The untrained heads are one function for every seed (their errors are equal across seeds) and the report
    contexts are shared by the seeds, as in the study.
    """
    heads = {L: rng.gamma(2.0, 1.0, n) for L in depths}
    rows, values = [], []
    for L in depths:
        for seed in seeds:
            trained = heads[L] * rng.uniform(0.8, 1.1, n)
            for start, lr, steps, selected, err in (("cold", 1e-3, 6000, True, trained),
                                                    ("oracle", 0.0, 0, False, heads[L])):
                rows.append(CandidateRow(0.0, 0.0, 2, 16, 32, 64, L, seed, start, lr, steps, False, False,
                                         float(err.mean()) - (1.0 if selected else 0.0), 0.01, float(err.mean()),
                                         0.01, selected, f"cell{L}{seed}", RECIPE))
                values.append(err)
    return rows, Errors(tuple(rows), np.asarray(values)), heads


def test_control_variate_gap_equals_the_direct_difference_when_both_bounds_are_one_function():
    rng = np.random.default_rng(0)
    rows, errors, heads = _fake_study(rng)
    # U_L on the same contexts, its B_L the study's heads: the control variate must give envelope − U_L exactly
    expressible_errors = {L: heads[L] * rng.uniform(0.7, 1.0, heads[L].size) for L in heads}
    loss = SimpleNamespace(
        depths=(1, 2), loss=tuple(float(expressible_errors[L].mean()) for L in (1, 2)), loss_se=(0.01, 0.01),
        atomic=tuple(float(heads[L].mean()) for L in (1, 2)), branch=("atomic", "combination"),
        difference=tuple(float((expressible_errors[L] - heads[L]).mean()) for L in (1, 2)),
        difference_se=(0.001, 0.001))
    out = checks.envelope_rows(rows, errors, {(0.0, 0.0): loss}, CertifiedPlan(), rng=1)
    assert [r.depth for r in out] == [1, 2]
    for r in out:
        envelope = np.mean([errors.values[i] for i, row in enumerate(rows) if row.depth == r.depth and row.selected])
        direct = envelope - expressible_errors[r.depth].mean()
        assert r.gap == pytest.approx(direct, rel=rtol(ROUNDOFF), abs=rtol(ROUNDOFF))
        assert r.envelope_on_expressible_contexts == pytest.approx(envelope, rel=rtol(ROUNDOFF))
        assert r.gap_se > 0 and r.bound_difference == 0.0


def test_control_variate_gap_adds_the_bounds_population_difference_and_its_error():
    e, bound = np.array([[2.0, 3.0]]), np.array([[1.0, 3.0]])
    gap, se, study, study_se = checks.control_variate_gap(e, bound, 0.25, 0.3, bound_difference=0.1,
                                                          bound_difference_se=0.4, rng=0, n_bootstrap=2)
    assert gap == pytest.approx(0.5 + 0.1 - 0.25)
    assert se == pytest.approx(np.sqrt(study_se**2 + 0.4**2 + 0.3**2))


@pytest.mark.parametrize("sign, word", [(1, "U_L below envelope"), (-1, "envelope below U_L")])
def test_verdict_flips_at_two_standard_errors(sign, word):
    se = 0.004
    edge = AGREEMENT_SIGMAS * se
    assert checks.verdict(sign * edge * (1 + 1e-9), se) == word
    assert checks.verdict(sign * edge * (1 - 1e-9), se) == "indistinguishable"


def _row(b, depth, gap, se=0.01):
    return checks.EnvelopeRow(0.0, b, depth, 5, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0,
                              "atomic", gap, se)


def test_summary_count_is_computed_from_the_rows_at_the_deepest_depth():
    rows = [_row(b, 128, g) for b, g in ((0.0, 0.02), (0.25, 0.0), (0.5, -0.003), (1.0, -0.05))]
    rows += [_row(b, 64, -1.0) for b in (0.0, 0.25)]  # another depth must not count
    summary = checks.summary_at(rows, 128)
    assert (summary["at_or_below"], summary["spectra"]) == (2, 4)
    assert [(b, g) for _, b, g, _ in summary["misses"]] == [(0.5, -0.003), (1.0, -0.05)]
    flipped = [_row(0.5, 128, 0.001) if r.b == 0.5 and r.depth == 128 else r for r in rows]
    assert checks.summary_at(flipped, 128)["at_or_below"] == 3
    text = page.expressible_markdown(rows, [], [])
    assert "at 2 of 4 spectra" in text


def test_plateau_and_c_fit_recovers_an_exact_inverse_depth_law():
    L = np.array([1, 2, 4, 8, 16, 32, 64, 128])
    plateau, c = checks.fit_plateau_c(L, 2.15 + 0.87 / L, np.linspace(0.01, 0.05, L.size))
    assert (plateau, c) == pytest.approx((2.15, 0.87), rel=rtol(ROUNDOFF))


def test_lazy_law_has_the_fixed_gain_form_plateau_plus_v_over_depth():
    plan = CertifiedPlan(d=4, N=8, P=8, top16_spectra=())  # top-16 of 8 tokens is no setting
    law = checks.lazy_law(0.0, 0.0, plan, (1, 2, 4), layers=32, draws=2, contexts=64)
    L = np.array([1.0, 2.0, 4.0])
    assert law["fixed"] == pytest.approx(law["law_plateau"][:, None] + law["law_c"][:, None] / L,
                                         rel=rtol(ROUNDOFF))


def _certified(tmp_path):
    """A certified study's directory beside ``tmp_path`` with one (fake) cell: the page's inputs are checked first."""
    cells = tmp_path.parent / f"{tmp_path.name}-certified" / "cells"
    cells.mkdir(parents=True, exist_ok=True)
    (cells / "one.npz").write_bytes(b"")
    return cells.parent


def test_a_results_directory_without_the_certified_cells_is_refused_before_any_work(monkeypatch, tmp_path):
    """`idepth expressible check --out /nonexistent` ran 176 s, then failed on a numpy error: now it is refused at once."""
    def never(*args, **kwargs):
        raise AssertionError("no work may start")

    monkeypatch.setattr(page, "bound_differences", never)
    monkeypatch.setattr(page, "collect", never)
    for out, why in ((tmp_path / "missing", "holds no certified study"), (tmp_path, "holds no certified study")):
        with pytest.raises(ValueError, match=why):
            page.write_expressible_checks(out, progress=lambda _: None)
    (tmp_path / "certified" / "cells").mkdir(parents=True)
    with pytest.raises(ValueError, match="is empty"):
        page.write_expressible_checks(tmp_path, progress=lambda _: None)
    (tmp_path / "a-file").write_text("")
    with pytest.raises(ValueError, match="existing file, not a directory"):
        page.write_expressible_checks(tmp_path / "a-file", progress=lambda _: None)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a-file", "cells", "certified"]  # nothing written


def _fake_pipeline(monkeypatch):
    """Every expensive or file-reading step of ``write_expressible_checks`` replaced by a tiny fake."""
    monkeypatch.setattr(page, "collect", lambda path: ([], Errors((), np.zeros((0, 4), np.float32))))
    monkeypatch.setattr(page, "collect_contrasts", lambda path: [])
    monkeypatch.setattr(page, "envelope_rows", lambda *args, **kwargs: [_row(0.0, 128, 0.01)])
    monkeypatch.setattr(page, "lazy_checks", lambda *args, **kwargs: ([], []))


def test_writing_leaves_nothing_when_the_figure_step_raises(monkeypatch, tmp_path):
    _fake_pipeline(monkeypatch)
    (tmp_path / "expressible.md").write_text("the old page")

    def broken(*args, **kwargs):
        raise RuntimeError("figure failed")

    monkeypatch.setattr(page, "draw_figure", broken)
    with pytest.raises(RuntimeError, match="figure failed"):
        page.write_expressible_checks(tmp_path, expressible_dir=tmp_path / "none", progress=lambda _: None,
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
        page.write_expressible_checks(tmp_path, expressible_dir=tmp_path / "none", progress=lambda _: None,
                                      certified_dir=_certified(tmp_path))
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_writing_writes_the_page_figure_and_tables(monkeypatch, tmp_path):
    _fake_pipeline(monkeypatch)
    written = page.write_expressible_checks(tmp_path, expressible_dir=tmp_path / "none", progress=lambda _: None,
                                      certified_dir=_certified(tmp_path))
    assert all(p.is_file() and p.stat().st_size > 0 for p in written)
    text = (tmp_path / checks.PAGE).read_text()
    assert checks.FIGURE in text and "No shipped U_L yet" in text
