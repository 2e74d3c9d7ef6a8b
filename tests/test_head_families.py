"""Claims of the exchangeable-head theory (theory.exchangeable_law, theory.head_families, theory.expressible)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tolerances import MC_SIGMAS, ROUNDOFF, rtol
from theory import PowerLawSpectrum
from theory import exchangeable_law as law
from theory import head_families as hf
from theory.expressible import BRANCHES, ExpressibleLoss, best_expressible

SPECTRUM = PowerLawSpectrum(0, 0, 6)
P, K = 12, 2


@pytest.fixture(scope="module")
def contexts():
    return hf.draw_contexts(SPECTRUM, P, K, 3000, np.random.default_rng(11))


@pytest.fixture(scope="module")
def other_contexts():
    return hf.draw_contexts(SPECTRUM, P, K, 3000, np.random.default_rng(12))


def test_numeric_law_equals_the_sympy_expressions():
    s, h, q, v, g = 2.0, 0.9, 0.7, 0.3, 1.1
    for L in (1, 3, 64):
        assert np.isclose(law.numeric(law.REFITTED_LOSS)(s, h, q, v, g, L),
                          law.numeric(law.SHIFTED_LAW)(s, h, q, v, g, L), rtol=rtol(ROUNDOFF))
    prediction = hf.ExchangeableLaw(plateau=s - h * h / q, plateau_se=0, coefficient=h * h * v / q**2, coefficient_se=0,
                                    shift=v / q, variance=v, fixed_gain=h / q, moments=dict(s=s, h=h, q=q, v=v),
                                    stratified=False, n_contexts=1, pool=1)
    for L in (1, 5, 100):
        assert np.isclose(prediction.loss(L), law.numeric(law.REFITTED_LOSS)(s, h, q, v, g, L), rtol=rtol(ROUNDOFF))
        assert np.isclose(prediction.fixed_gain_loss(L, g), law.numeric(law.FIXED_GAIN_LOSS)(s, h, q, v, g, L),
                          rtol=rtol(ROUNDOFF))


def test_the_exchangeable_law_is_exactly_a_shifted_inverse_depth_law():
    import sympy as sp

    assert sp.simplify(law.REFITTED_LOSS - law.SHIFTED_LAW) == 0
    # fixed gain: eq. (63) with A - C = g^2 v independent of L
    assert sp.simplify(law.FIXED_GAIN_LOSS - (law.FIXED_GAIN_SHARED + law.FIXED_GAIN_DISAGREEMENT / law.L)) == 0


def test_form_reads_of_a_cosine_form_equal_the_softmax_bounds_head(contexts):
    from theory.softmax_bounds import _softmax_reads

    cosine = np.einsum("npd,nd->np", contexts.context_unit, contexts.test_unit)
    expected = _softmax_reads(cosine, contexts.labels, np.array([3.0, 30.0]))
    got = hf.form_reads(np.array([3.0, 30.0])[:, None, None] * np.eye(SPECTRUM.d), contexts, dtype=np.float64)
    np.testing.assert_allclose(got, expected, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))


def test_float32_reads_agree_with_float64(contexts):
    forms, _ = hf.RandomFormHeads((5.0, 15.0), 0.5).sample_forms(4, SPECTRUM.d, 0)
    np.testing.assert_allclose(hf.form_reads(forms, contexts), hf.form_reads(forms, contexts, dtype=np.float64),
                               atol=1e-3 * np.abs(contexts.labels).max())


def test_iid_draws_follow_the_exchangeable_law(contexts):
    """Heads drawn i.i.d. from a mixture measure: mean loss = law within MC_SIGMAS SE at L = 1..64 (same contexts,
    independent heads: the law holds for the empirical context distribution, the noise is the heads')."""
    family = hf.HeadFamily((4.0, 12.0, 8.0), (0.0, 0.0, 0.5), (0.3, 0.3, 0.4))
    predicted = hf.exchangeable_law(family, contexts, pool=512, rng=1)
    rng = np.random.default_rng(2)
    for depth in (1, 2, 4, 8, 16, 32, 64):
        draws = 200 if depth <= 16 else 40
        forms, _ = family.sample_forms(draws * depth, SPECTRUM.d, rng)
        averages = hf.form_reads(forms, contexts).reshape(contexts.n, draws, depth).mean(axis=2)
        losses = ((predicted.fixed_gain * averages - contexts.target[:, None]) ** 2).mean(axis=0)
        se = np.hypot(losses.std(ddof=1) / np.sqrt(draws), predicted.plateau_se)
        assert abs(losses.mean() - predicted.fixed_gain_loss(depth)) <= MC_SIGMAS * se, depth


def test_a_family_without_spread_has_no_inverse_depth_term(contexts):
    single = hf.exchangeable_law(hf.CosineHeads((8.0,)), contexts, pool=32)
    assert single.coefficient == pytest.approx(0.0, abs=1e-12)
    assert single.loss(1) == pytest.approx(single.loss(128), abs=1e-12)


def test_stratified_atoms_cost_no_variance(contexts):
    atoms = hf.CosineHeads((4.0, 12.0), (0.5, 0.5))
    iid = hf.exchangeable_law(atoms, contexts, pool=32)
    stratified = hf.exchangeable_law(atoms, contexts, pool=32, stratified=True)
    assert iid.coefficient > 0 and stratified.coefficient == pytest.approx(0.0, abs=1e-12)
    assert stratified.plateau == pytest.approx(iid.plateau, rel=rtol(ROUNDOFF))


def test_the_law_ses_cover_an_independent_recomputation(contexts, other_contexts):
    family = hf.RandomFormHeads((6.0,), 0.5)
    first = hf.exchangeable_law(family, contexts, pool=256, rng=3)
    second = hf.exchangeable_law(family, other_contexts, pool=256, rng=4)
    assert abs(first.plateau - second.plateau) <= MC_SIGMAS * np.hypot(first.plateau_se, second.plateau_se)
    assert abs(first.coefficient - second.coefficient) <= MC_SIGMAS * np.hypot(first.coefficient_se,
                                                                               second.coefficient_se)


def test_the_mixture_limit_meets_its_kkt_conditions_and_beats_every_single_head(contexts):
    forms = np.geomspace(1, 100, 12)[:, None, None] * np.eye(SPECTRUM.d)
    U = hf.form_reads(forms, contexts)
    limit = hf.mixture_limit(U, contexts.target)
    assert limit.kkt_residual < 1e-8
    gains = (U * contexts.target[:, None]).sum(0) / (U * U).sum(0)
    best_single = ((U * gains - contexts.target[:, None]) ** 2).mean(0).min()
    assert limit.fit_loss <= best_single + 1e-12


def test_the_fitted_form_law_moves_from_atoms_to_diffuse_heads_with_depth(contexts):
    family = hf.HeadFamily((5.0, 15.0, 5.0, 15.0), (0.0, 0.0, 1.0, 1.0))
    moments, _ = hf.class_moments(family, contexts, 64, 5)
    Q, H, W, s = moments.quadratic()
    shallow = hf.fit_form_law(moments, 1, temperatures=family.temperatures, sigmas=family.sigmas)
    deep = hf.fit_form_law(moments, 4096, temperatures=family.temperatures, sigmas=family.sigmas)
    diffuse_share = lambda fam: sum(w for w, sg in zip(fam.weights, fam.sigmas) if sg > 0)  # noqa: E731
    assert diffuse_share(deep) >= diffuse_share(shallow)
    # the fit is no worse than every single class at its depth
    for depth, fitted in ((1, shallow), (4096, deep)):
        pi = np.array([next((w for t, sg, w in zip(fitted.temperatures, fitted.sigmas, fitted.weights)
                             if t == tt and sg == ss), 0.0) for tt, ss in zip(family.temperatures, family.sigmas)])
        value = hf._stratified_loss(pi, Q, H, W, s, depth)
        for k in range(4):
            e = np.eye(4)[k]
            assert value <= hf._stratified_loss(e, Q, H, W, s, depth) + 1e-9


@pytest.mark.parametrize("kwargs, name", [
    (dict(temperatures=(), sigmas=()), "temperatures"),
    (dict(temperatures=(1.0,), sigmas=(-0.5,)), "sigma"),
    (dict(temperatures=(1.0, 2.0), sigmas=(0.5, 0.5, 0.5)), "sigma"),
    (dict(temperatures=(1.0,), sigmas=(0.5,), weights=(0.0,)), "weights"),
    (dict(temperatures=(1.0,), sigmas=(0.5,), base=np.ones((2, 3))), "base"),
])
def test_bad_families_are_refused_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        hf.HeadFamily(**kwargs)


def test_random_forms_refuse_a_non_positive_sigma_and_a_form_law_of_the_wrong_dimension():
    with pytest.raises(ValueError, match="sigma"):
        hf.RandomFormHeads((1.0,), 0.0)
    family = hf.RandomFormHeads((1.0,), 0.5, base=np.eye(3))
    with pytest.raises(ValueError, match="base"):
        family.sample_forms(2, 4, 0)


def test_a_head_distribution_that_cannot_be_sampled_is_refused(contexts):
    with pytest.raises(TypeError, match="family"):
        hf.exchangeable_law("not a family", contexts)
    with pytest.raises(ValueError, match="class"):
        hf.exchangeable_law_from_reads(np.ones((10, 3)), np.ones(10))  # one class of 3 heads: too few to jackknife


@pytest.fixture(scope="module")
def expressible():
    return best_expressible((1, 2, 4, 8, 16), SPECTRUM, P, K, n_fit=2048, n_select=2048, n_report=4096, pool=16,
                            rng=7)


def test_best_expressible_is_at_most_the_atomic_bound_on_the_selection_set(expressible):
    for losses in expressible.branch_losses:
        chosen = min(losses.values(), key=lambda x: x["selection_loss"])["selection_loss"]
        assert chosen <= losses["atomic"]["selection_loss"]
    assert set(expressible.branch) <= set(BRANCHES)


def test_best_expressible_never_rises_along_doublings_on_the_selection_set(expressible):
    chosen = [min(v["selection_loss"] for v in losses.values()) for losses in expressible.branch_losses]
    assert all(b <= a + 1e-12 for a, b in zip(chosen, chosen[1:]))


def test_best_expressible_reports_paired_differences_consistent_with_its_losses(expressible):
    for i in range(len(expressible.depths)):
        assert expressible.loss[i] - expressible.atomic[i] == pytest.approx(expressible.difference[i], abs=1e-10)


def test_best_expressible_round_trips_and_regenerates_its_heads(expressible):
    again = ExpressibleLoss.from_dict(expressible.to_dict())
    assert again.loss == expressible.loss
    forms, gain = again.forms(16)
    assert forms.shape == (16, SPECTRUM.d, SPECTRUM.d) and np.isfinite(gain)


@pytest.mark.parametrize("depths, name", [((0, 2), "depth"), ((1.5,), "depth")])
def test_best_expressible_refuses_bad_depths(depths, name):
    with pytest.raises(ValueError, match=name):
        best_expressible(depths, SPECTRUM, P, K, n_fit=256, n_select=256, n_report=256)


def test_best_expressible_refuses_small_sets_and_bad_sigmas():
    with pytest.raises(ValueError, match="n_report"):
        best_expressible((1,), SPECTRUM, P, K, n_report=16)
    with pytest.raises(ValueError, match="sigmas"):
        best_expressible((1,), SPECTRUM, P, K, n_fit=256, n_select=256, n_report=256, sigmas=(-1.0,))
