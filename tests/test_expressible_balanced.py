"""Claims about U_L's balanced, refined and quadrature branches and its depth independence (theory.expressible),
and about the models ``predict_loss`` hands out (``result.model(L)``), re-evaluated with independent code."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tests.tolerances import MC_SIGMAS, ROUNDOFF, rtol
from theory import PowerLawSpectrum, predict_loss
from theory import head_families as hf
from theory.expressible import (
    BRANCHES,
    ExpressibleLoss,
    ExpressibleModel,
    _fit_loss,
    _refined,
    balanced_forms,
    best_expressible,
    herd,
)
from theory.softmax_bounds import default_temperatures

SPECTRUM = PowerLawSpectrum(0, 0, 6)
P, K = 12, 2
SMALL = dict(n_fit=1024, n_select=1024, n_report=2048, pool=8)


# ----------------------------------------------------------------------------- depth independence
def test_predict_loss_gives_a_depth_one_value_whatever_other_depths_are_asked():
    """At (0, 0) U_4 was 2.0770 for [1, 2, 4] (shipped) and 2.1228 for [1, 2, 3, 4] (all computed, as depth 3 is
    not shipped); now each depth has one source and the envelope runs over its own halving chain."""
    spectrum = PowerLawSpectrum(0, 0, 16)
    alone = predict_loss([1, 2, 4], spectrum, attention="softmax", task="difficult", P=64)
    with_three = predict_loss([1, 2, 3, 4], spectrum, attention="softmax", task="difficult", P=64)
    only = predict_loss(4, spectrum, attention="softmax", task="difficult", P=64)
    assert float(with_three.loss[3]) == float(alone.loss[2]) == float(only.loss)
    np.testing.assert_array_equal(with_three.model(4).forms, alone.model(4).forms)


def test_a_depths_value_does_not_depend_on_which_other_depths_are_asked():
    """U_4 is one number whether [1, 2, 4], [1, 2, 3, 4] or [4] is asked: warm starts and nested copies come
    from the depth's own halving chain, random draws from its own stream."""
    runs = [best_expressible(depths, SPECTRUM, P, K, rng=5, **SMALL) for depths in ((1, 2, 4), (1, 2, 3, 4), (4,))]
    values = [run.at(4) for run in runs]
    branches = {run.branch[run.depths.index(4)] for run in runs}
    allocations = [run.allocations[run.depths.index(4)] for run in runs]
    assert len(branches) == 1, branches
    for value, allocation in zip(values[1:], allocations[1:]):
        assert value[0] == pytest.approx(values[0][0], rel=rtol(ROUNDOFF, np.float32))
        assert allocation == allocations[0]


# ----------------------------------------------------------------------------- balanced forms
def test_balanced_forms_keep_their_mean_and_carry_symmetric_and_antisymmetric_deviations():
    taus = [3.0] * 5
    forms = balanced_forms(taus, 0.5, 0.25, seed=4, d=4)
    deviation = forms / 3.0 - np.eye(4)
    symmetric = (deviation + np.swapaxes(deviation, 1, 2)) / 2
    antisymmetric = (deviation - np.swapaxes(deviation, 1, 2)) / 2
    np.testing.assert_allclose(forms.mean(axis=0), 3.0 * np.eye(4), atol=1e-12)  # Σ_ℓ S_ℓ = Σ_ℓ A_ℓ = 0
    assert np.linalg.norm(symmetric) > 0 and np.linalg.norm(antisymmetric) > 0
    # ρ/σ = 1/2 and each part keeps the law of one draw: the antisymmetric part is about half the symmetric one
    ratio = np.linalg.norm(antisymmetric) / np.linalg.norm(symmetric)
    assert 0.25 < ratio < 1.0, ratio
    np.testing.assert_array_equal(forms, balanced_forms(taus, 0.5, 0.25, seed=4, d=4))  # regenerated from its seed


def test_two_balanced_forms_are_an_antithetic_pair_and_one_is_the_cosine_head():
    pair = balanced_forms([2.0, 2.0], 0.5, 0.0, seed=1, d=3)
    np.testing.assert_allclose(pair[0] - 2.0 * np.eye(3), -(pair[1] - 2.0 * np.eye(3)), atol=1e-12)
    np.testing.assert_array_equal(balanced_forms([2.0], 0.5, 0.5, seed=1, d=3), 2.0 * np.eye(3)[None])


@pytest.mark.parametrize("kwargs, name", [
    (dict(temperatures=[1.0, -1.0]), "temperatures"), (dict(sigma=-0.1), "sigma"),
    (dict(antisymmetric=np.nan), "antisymmetric"), (dict(d=0), "d")])
def test_balanced_forms_refuse_bad_input_naming_the_argument(kwargs, name):
    args = dict(temperatures=[1.0, 1.0], sigma=0.5, antisymmetric=0.0, seed=0, d=3) | kwargs
    with pytest.raises(ValueError, match=name):
        balanced_forms(**args)


# ----------------------------------------------------------------------------- herding
def _mixture_loss(reads: np.ndarray, target: np.ndarray, counts: np.ndarray) -> float:
    """Loss of g · (1/L) Σ u with the best g, straight from the reads (independent of herd's moment updates)."""
    mean = reads @ counts / counts.sum()
    gain = (mean @ target) / (mean @ mean)
    return float(np.mean((gain * mean - target) ** 2))


def test_herding_adds_at_each_step_the_head_that_minimises_the_equal_weight_mixtures_loss():
    rng = np.random.default_rng(3)
    contexts = hf.draw_contexts(SPECTRUM, P, K, 2000, rng)
    forms = 4.0 * (np.eye(6) + 0.5 * hf.random_symmetric(7, 6, rng))
    reads = hf.form_reads(forms, contexts, dtype=np.float64)
    gram, cross = reads.T @ reads / contexts.n, reads.T @ contexts.target / contexts.n
    for depth in (1, 2, 5):
        counts = herd(gram, cross, depth)
        assert counts.sum() == depth
        before = herd(gram, cross, depth - 1) if depth > 1 else np.zeros(7, dtype=np.int64)
        step = [_mixture_loss(reads, contexts.target, before + np.eye(7, dtype=np.int64)[j]) for j in range(7)]
        assert _mixture_loss(reads, contexts.target, counts) == pytest.approx(min(step), rel=1e-12)


def test_the_quadrature_branch_herds_the_given_measure_and_its_model_is_made_of_its_atoms():
    rng = np.random.default_rng(8)
    atoms = np.concatenate([t * np.eye(6)[None] for t in (2.0, 6.0)] + [6.0 * (np.eye(6) + 0.5 * hf.random_symmetric(
        4, 6, rng))])
    measure = SimpleNamespace(forms=atoms, weights=np.array([0.1, 0.3, 0.15, 0.15, 0.15, 0.15]))
    u = best_expressible((2, 4), SPECTRUM, P, K, measure=measure, rng=2, **SMALL)
    assert all("quadrature" in losses for losses in u.branch_losses)
    again = ExpressibleLoss.from_dict(u.to_dict())
    for L in u.depths:
        forms, gain = again.forms(L)
        assert forms.shape == (L, 6, 6) and np.isfinite(gain)
        if u.branch[u.depths.index(L)] == "quadrature":
            assert all(np.any(np.all(np.isclose(f, atoms), axis=(1, 2))) for f in forms)
    with pytest.raises(ValueError, match="measure"):
        best_expressible((2,), SPECTRUM, P, K, measure=SimpleNamespace(forms=np.ones((2, 3, 3)), weights=np.ones(2)),
                         **SMALL)


# ----------------------------------------------------------------------------- refined temperature
def test_the_refined_temperature_is_the_continuous_optimum_of_one_cosine_head_not_a_grid_point():
    contexts = hf.draw_contexts(SPECTRUM, P, K, 4000, 9)
    atoms = default_temperatures(SPECTRUM)
    reads = hf.form_reads(atoms[:, None, None] * np.eye(6), contexts)
    grid_losses = [_fit_loss(reads[:, j], contexts.target) for j in range(atoms.size)]
    best = int(np.argmin(grid_losses))
    refined = _refined(np.array([atoms[best]]), tuple(atoms), contexts)["temperatures"][0]
    dense = np.geomspace(atoms[best - 1], atoms[best + 1], 401)
    dense_losses = [_fit_loss(r, contexts.target) for r in hf.form_reads(dense[:, None, None] * np.eye(6), contexts).T]
    value = _fit_loss(hf.form_reads(refined * np.eye(6)[None], contexts)[:, 0], contexts.target)
    assert value <= grid_losses[best]
    assert value <= min(dense_losses) * (1 + 1e-6)  # as good as a scan 200 times finer than the grid


# ----------------------------------------------------------------------------- models handed out
@pytest.fixture(scope="module")
def computed():
    return predict_loss([1, 2, 4, 8], SPECTRUM, attention="softmax", task="difficult", P=P, n_samples=512, rng=3)


def test_each_depths_model_is_its_forms_and_gain_with_the_branch_and_loss(computed):
    for i, L in enumerate(computed.depth):
        model = computed.model(int(L))
        assert isinstance(model, ExpressibleModel) and model.forms.shape == (L, 6, 6)
        assert model.branch == computed.branch[i] and model.branch in BRANCHES
        assert model.loss == pytest.approx(float(computed.loss[i]), rel=1e-12)
        assert not model.forms.flags.writeable
    with pytest.raises(ValueError, match="depth"):
        computed.model(3)
    with pytest.raises(ValueError, match="expressible"):
        predict_loss([1], SPECTRUM).model(1)


def test_a_model_re_evaluated_with_independent_code_reproduces_the_reported_loss(computed):
    """On the report set (regenerated from the seed) the reported loss to round-off; on fresh contexts within
    MC_SIGMAS standard errors of the difference of two independent estimates."""
    report = hf.draw_contexts(SPECTRUM, P, K, 1024, np.random.default_rng(3).spawn(5)[2])
    fresh = hf.draw_contexts(SPECTRUM, P, K, 1 << 14, np.random.default_rng(12345))
    for i, L in enumerate(computed.depth):
        model = computed.model(int(L))
        on_report = (model.gain * hf.form_reads(model.forms, report).mean(axis=1) - report.target) ** 2
        assert on_report.mean() == pytest.approx(float(computed.loss[i]), rel=rtol(ROUNDOFF, np.float32))
        err = (model.gain * hf.form_reads(model.forms, fresh).mean(axis=1) - fresh.target) ** 2
        se = np.hypot(err.std(ddof=1) / np.sqrt(err.size), model.loss_se)
        assert abs(err.mean() - model.loss) <= MC_SIGMAS * se, (L, err.mean(), model.loss, se)


def test_balanced_and_quadrature_winners_count_as_diverse_heads_for_the_crossover_depth():
    from dataclasses import replace

    from theory.expressible import shipped_expressible

    shipped = shipped_expressible(PowerLawSpectrum(0, 0, 16), 64)
    branches = ("atomic", "refined", "atomic", "balanced", "combination", "quadrature", "balanced", "balanced")
    assert replace(shipped, branch=branches).crossover_depth() == shipped.depths[3]
    assert replace(shipped, branch=branches[:-1] + ("nested",)).crossover_depth() is None


def test_cli_predict_prints_the_bracket_and_each_depths_branch():
    import subprocess

    from _checkout import ROOT, checkout_env, idepth_command

    out = subprocess.run(idepth_command("predict", "--attention", "softmax", "--task", "difficult", "--a", "0", "--b",
                                        "0", "--d", "16", "--P", "64", "--depth", "1,16"),
                         capture_output=True, text=True, timeout=120, cwd=ROOT, env=checkout_env())
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(line.startswith("# R*_inf") for line in lines)
    header = next(line for line in lines if line.split()[:2] == ["L", "R_L"])
    assert header.split()[-1] == "branch"
    expected = predict_loss([1, 16], PowerLawSpectrum(0, 0, 16), attention="softmax", task="difficult", P=64)
    rows = [line.split() for line in lines if line.split() and line.split()[0] in ("1", "16")]
    assert [row[-1] for row in rows] == expected.branch.tolist()
