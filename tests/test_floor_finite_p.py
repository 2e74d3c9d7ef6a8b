"""Claims about the finite-P linear floor: the best scalar polynomial in the EMPIRICAL S (paper eqs. (24), (43), (47)-(54))."""

from __future__ import annotations

import numpy as np
import pytest

from theory.floor import linear_floor_finite_p, linear_floor_semi_analytic
from theory.spectra import PowerLawSpectrum
from tolerances import MC_SIGMAS, ROUNDOFF, rtol

# a = 0: the population floor with the task's cosine ranking is exact (semi-analytic), so no MC error on that side
FLAT_INPUTS = PowerLawSpectrum(0.0, 0.5, d=4)


def _dense_reference(spectrum, P, k, depth, seed, n_contexts, n_seeds):
    """An independent evaluation: the same random streams, S formed densely, monomials S^r q, lstsq, argsort top-k."""
    lam, omega = spectrum.eigenvalues, spectrum.teacher_eigenvalues
    root_omega = np.sqrt(omega)

    def draw(rng):  # the data law in the eigenbasis: q then the tokens, one query per context
        q = np.sqrt(lam) * rng.standard_normal((n_contexts, 1, lam.size))[:, 0, :]
        x = np.sqrt(lam) * rng.standard_normal((n_contexts, P, lam.size))
        rows, targets = [], []
        for qn, xn in zip(q, x):
            cosine = xn @ qn / np.linalg.norm(xn, axis=1) / np.linalg.norm(qn)
            t = xn[np.argsort(-cosine)[:k]].mean(axis=0)
            S = xn.T @ xn / P
            features = np.stack([np.linalg.matrix_power(S, r) @ qn for r in range(1, depth + 1)], axis=1)
            rows.append(root_omega[:, None] * features)  # ‖v‖²_Ω = ‖Ω^(1/2) v‖²
            targets.append(root_omega * t)
        return np.concatenate(rows), np.concatenate(targets)

    losses = []
    for seed_rng in np.random.default_rng(seed).spawn(n_seeds):
        _, fit_rng, eval_rng = seed_rng.spawn(3)  # the pilot stream only fixes the basis, not the result
        design, target = draw(fit_rng)
        coefficients = np.linalg.lstsq(design, target, rcond=None)[0]
        design, target = draw(eval_rng)
        losses.append(np.sum((target - design @ coefficients) ** 2) / n_contexts)
    return float(np.mean(losses))


def test_finite_p_floor_equals_a_dense_monomial_least_squares_on_the_same_contexts():
    spec = PowerLawSpectrum(1.0, 0.5, d=3)
    est = linear_floor_finite_p(spec, 6, 2, 2, rng=7, n_contexts=300, n_seeds=3, batch=300)
    reference = _dense_reference(spec, 6, 2, 2, 7, 300, 3)
    assert est.estimate == pytest.approx(reference, rel=rtol(ROUNDOFF))


def test_finite_p_floor_approaches_the_population_floor_at_large_P():
    exact = linear_floor_semi_analytic(FLAT_INPUTS, 4096, 2, 3, ranking="cosine").estimate
    est = linear_floor_finite_p(FLAT_INPUTS, 4096, 2, 3, rng=3, n_contexts=256, n_seeds=4, queries_per_context=8)
    assert abs(est.estimate - exact) <= MC_SIGMAS * est.standard_error


def test_finite_p_floor_is_below_the_population_floor_at_small_P():
    exact = linear_floor_semi_analytic(FLAT_INPUTS, 16, 2, 3, ranking="cosine").estimate
    est = linear_floor_finite_p(FLAT_INPUTS, 16, 2, 3, rng=3, n_contexts=256, n_seeds=4, queries_per_context=8)
    assert est.estimate < exact - MC_SIGMAS * est.standard_error
    assert est.estimate < 0.9 * exact  # the gain is large here, not a few-SE effect


def test_population_covariance_reproduces_the_population_floor():
    exact = linear_floor_semi_analytic(FLAT_INPUTS, 16, 2, 3, ranking="cosine").estimate
    est = linear_floor_finite_p(FLAT_INPUTS, 16, 2, 3, rng=4, n_contexts=256, n_seeds=4, queries_per_context=8,
                                covariance="population")
    assert est.method == "population_least_squares"
    assert abs(est.estimate - exact) <= MC_SIGMAS * est.standard_error


def test_finite_p_floor_is_non_increasing_in_depth_within_its_standard_error():
    est = linear_floor_finite_p(PowerLawSpectrum(1.0, 1.0, d=8), 32, 2, 6, rng=5, n_contexts=512, n_seeds=4,
                                queries_per_context=4)
    assert est.floor_by_degree.shape == (6,) and est.effective_degree == 6
    steps = np.diff(est.floor_by_degree)
    assert np.all(steps <= MC_SIGMAS * est.standard_error_by_degree[1:])
    assert est.floor_by_degree[-1] < est.floor_by_degree[0] - MC_SIGMAS * est.standard_error_by_degree[0]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(P=4, k=5), "k"),
        (dict(depth=0), "depth"),
        (dict(n_seeds=1), "n_seeds"),
        (dict(n_contexts=2), "n_contexts"),
        (dict(ranking="dot"), "ranking"),
        (dict(covariance="sample"), "covariance"),
        (dict(queries_per_context=0), "queries_per_context"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(kwargs, name):
    arguments = dict(P=8, k=2, depth=2, rng=0, n_contexts=8, n_seeds=2) | kwargs
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        linear_floor_finite_p(FLAT_INPUTS, **arguments)
