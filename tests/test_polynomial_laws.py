"""Claims of paper eqs. (27)-(40): constrained and free polynomial laws of linear attention."""

from __future__ import annotations

import functools
import math
import warnings

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import betainc, roots_jacobi
from tolerances import APPROX, ROUNDOFF, rtol

from theory import PowerLawSpectrum, Spectrum
from theory import symbols as s
from theory.linear import population_loss
from theory.paper import paper_table
from theory.polynomial_laws import (
    CONSTRAINED_ASYMPTOTE,
    CONSTRAINED_CONTINUUM_LOSS,
    CONSTRAINED_RESIDUAL,
    CONTINUUM_PREFACTOR,
    FREE_CONTINUUM_ASYMPTOTE,
    FREE_CONTINUUM_LOSS,
    FREE_CONTINUUM_SUM,
    FREE_CONTINUUM_SUM_ASYMPTOTE,
    MODE_DENSITY,
    MODE_INDEX_OF_EIGENVALUE,
    PHI_N,
    PHI_N_ZERO_SQUARED,
    _CONSTRAINED_CONTINUUM_STABLE,
    _FREE_CONTINUUM_SUM_STABLE,
    _PHI_N_ZERO_SQUARED_STABLE,
    ValidityWindow,
    constrained_asymptote,
    constrained_continuum_loss,
    constrained_exponent,
    constrained_loss,
    derive_continuum_prefactor,
    free_continuum_asymptote,
    free_continuum_loss,
    free_continuum_sum,
    free_exponent,
    free_loss,
    free_loss_mpmath,
    phi_n_zero_squared,
    validity_window,
)
from theory.spectra import ZETA

TIGHT = rtol(ROUNDOFF)
LOOSE = rtol(APPROX)

power_laws = st.builds(
    PowerLawSpectrum,
    a=st.floats(0.5, 3.0),
    b=st.floats(0.0, 2.0),
    d=st.integers(2, 300),
)


def _weights(spectrum):
    return spectrum.eigenvalues * spectrum.teacher_eigenvalues


# ------------------------------------------------------------------ constrained, finite d


@given(spectrum=power_laws)
def test_constrained_loss_strictly_decreases_with_depth_at_reference_step(spectrum):
    losses = constrained_loss(np.arange(1, 121), spectrum)
    assert np.all(np.diff(losses) < 0)


@given(spectrum=power_laws, gamma_fraction=st.floats(0.05, 1.0))
def test_constrained_loss_at_a_fixed_step_rises_towards_gradient_flow_limit(spectrum, gamma_fraction):
    # (1 - u/L)^L increases to e^(-u) for 0 <= u <= 1 <= L: at fixed γ <= 1/λ_1 depth only
    # refines the same gradient flow (for γλ_1 > 1 the first layers overshoot and it need not rise)
    gamma = gamma_fraction / spectrum.lambda_1
    losses = constrained_loss(np.arange(1, 41), spectrum, gamma=gamma)
    limit = np.sum(_weights(spectrum) * np.exp(-2 * gamma * spectrum.eigenvalues))
    assert np.all(np.diff(losses) >= -TIGHT * losses[1:])
    assert np.all(losses <= limit * (1 + TIGHT))


def test_constrained_power_sums_equal_direct_evaluation_over_many_depths():
    spectrum = PowerLawSpectrum(a=1.5, b=1.0, d=1024)
    # dense blocks of consecutive depths (matrix-product path) and isolated ones (direct path)
    depths = np.concatenate([np.arange(1, 700), [1000, 5000, 123457, 10**6]])
    fast = constrained_loss(depths, spectrum)
    ratio = spectrum.eigenvalues / spectrum.lambda_1
    direct = np.array([population_loss((1 - ratio) ** L, spectrum) for L in depths])
    np.testing.assert_allclose(fast, direct, rtol=TIGHT)
    explicit = constrained_loss(depths, spectrum, gamma=depths / spectrum.lambda_1)  # general-γ path
    np.testing.assert_allclose(explicit, direct, rtol=TIGHT)


def test_constrained_loss_equals_mpmath_evaluation_of_the_sympy_residual():
    rng = np.random.default_rng(5)
    residual = sp.lambdify((s.gamma, s.lam, s.L), CONSTRAINED_RESIDUAL, "mpmath")
    for _ in range(5):
        spectrum = Spectrum(rng.uniform(0.01, 3.0, size=7), rng.uniform(0.1, 2.0, size=7))
        depth = int(rng.integers(1, 60))
        gamma = rng.uniform(0.01, 1.99) * depth / spectrum.lambda_1
        with mpmath.workdps(40):
            exact = mpmath.fsum(
                mpmath.mpf(w) * residual(mpmath.mpf(gamma), mpmath.mpf(lam), depth) ** 2
                for lam, w in zip(spectrum.eigenvalues, _weights(spectrum))
            )
        assert constrained_loss(depth, spectrum, gamma=gamma) == pytest.approx(float(exact), rel=TIGHT)



@pytest.mark.parametrize("step", [1.0, 1.5, 1.99])  # γ λ_1 / L: the top mode's residual 1 - u is 0 or negative
def test_constrained_loss_past_the_monotone_step_computes_no_masked_nan(step):
    # issue 12: log1p(-u) was evaluated for u >= 1 too (NaN, then masked); now no floating-point error occurs
    spectrum = PowerLawSpectrum(a=2.0, b=1.0, d=64)
    depths = np.array([1, 2, 3, 4, 7])
    gamma = step * depths / spectrum.lambda_1
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        losses = constrained_loss(depths, spectrum, gamma=gamma)
        reference_step = constrained_loss(depths, spectrum)  # u = λ/λ_1 = 1 for the top mode
    u = (gamma / depths)[:, None] * spectrum.eigenvalues
    direct = ((1 - u) ** (2 * depths[:, None])) @ _weights(spectrum)
    np.testing.assert_allclose(losses, direct, rtol=TIGHT)
    np.testing.assert_allclose(reference_step, constrained_loss(depths, spectrum, gamma=depths / spectrum.lambda_1), rtol=TIGHT)


# ------------------------------------------------------------------ constrained, continuum


def test_continuum_prefactor_follows_from_the_change_of_variables():
    assert sp.simplify(derive_continuum_prefactor() - CONTINUUM_PREFACTOR.subs(s.zeta, ZETA)) == 0
    # eq. (32) is |dk/dλ| of eq. (31)
    assert sp.simplify(MODE_DENSITY + sp.diff(MODE_INDEX_OF_EIGENVALUE, s.lam)) == 0


def test_constrained_continuum_loss_is_the_exact_continuum_integral():
    zeta, lam1, depth = 1.37, 2.0, 7
    spectrum = PowerLawSpectrum(a=1.2, b=1.2 * zeta + 1 - 1.2, d=10, c_lambda=lam1)
    assert spectrum.zeta == pytest.approx(zeta, rel=TIGHT)
    prefactor = float(CONTINUUM_PREFACTOR.subs({s.c_omega: 1, s.c_lambda: lam1, s.zeta: spectrum.zeta, s.a: 1.2}))
    with mpmath.workdps(30):
        integral = mpmath.quad(lambda x: x ** (spectrum.zeta - 1) * (1 - x / lam1) ** (2 * depth), [0, lam1])
    assert constrained_continuum_loss(depth, spectrum) == pytest.approx(prefactor * float(integral), rel=TIGHT)


@pytest.mark.parametrize("a, b", [(2.0, 1.0), (3.0, 1.0), (2.0, 2.0), (1.5, 1.0), (1.0, 1.5)])
def test_constrained_finite_d_loss_is_the_truncated_continuum_integral_at_large_depth(a, b):
    # Euler-Maclaurin: Σ_{k<=d} g(k) = ∫_1^d g dk + g(d)/2 + ..., the terms at k = 1 vanishing to
    # order 2L; so the continuum step (31)-(32) is exact up to the cut at λ_d once L >> 1.
    spectrum = PowerLawSpectrum(a=a, b=b, d=10**6)
    depths = np.array([10**3, 10**4, 10**5, 10**6])
    zeta = spectrum.zeta
    x_d = spectrum.lambda_d / spectrum.lambda_1
    truncated = constrained_continuum_loss(depths, spectrum) * (1 - betainc(zeta, 2 * depths + 1, x_d))
    endpoint = spectrum.eigenvalues[-1] * spectrum.teacher_eigenvalues[-1] * (1 - x_d) ** (2 * depths) / 2
    np.testing.assert_allclose(constrained_loss(depths, spectrum), truncated + endpoint, rtol=LOOSE)


@pytest.mark.parametrize("a, b", [(2.0, 1.0), (3.0, 1.0), (2.0, 2.0)])
def test_constrained_loss_approaches_its_asymptote_and_slope_zeta_inside_the_window(a, b):
    spectrum = PowerLawSpectrum(a=a, b=b, d=10**6)
    depths = 10 ** np.arange(1, 7)
    assert np.all(validity_window(spectrum, "constrained").contains(depths))
    ratio = constrained_loss(depths, spectrum) / constrained_asymptote(depths, spectrum)
    assert np.all(np.diff(np.abs(ratio - 1)) < 0)
    assert abs(ratio[-1] - 1) < LOOSE
    deep = depths[-1]
    slope = math.log(constrained_loss(deep, spectrum) / constrained_loss(2 * deep, spectrum)) / math.log(2)
    assert slope == pytest.approx(constrained_exponent(spectrum), abs=LOOSE)


def test_constrained_continuum_tends_to_the_asymptote_as_one_minus_zeta_zeta_plus_one_over_4L():
    spectrum = PowerLawSpectrum(a=1.5, b=2.0, d=100)  # ζ = 5/3
    zeta = spectrum.zeta
    depths = np.array([10**4, 10**6, 10**8])
    ratio = constrained_continuum_loss(depths, spectrum) / constrained_asymptote(depths, spectrum)
    first_order = 1 - zeta * (zeta + 1) / (4 * depths)
    np.testing.assert_allclose(ratio, first_order, rtol=LOOSE)
    assert abs(ratio[-1] - 1) < LOOSE


# ------------------------------------------------------------------ free polynomial


@given(spectrum=power_laws, depth=st.integers(1, 40), gamma_fraction=st.one_of(st.none(), st.floats(0.01, 1.99)))
def test_free_loss_never_exceeds_constrained(spectrum, depth, gamma_fraction):
    gamma = None if gamma_fraction is None else gamma_fraction * depth / spectrum.lambda_1
    constrained = constrained_loss(depth, spectrum, gamma=gamma)
    assert free_loss(depth, spectrum) <= constrained * (1 + TIGHT)


@given(spectrum=power_laws)
def test_free_loss_never_increases_with_depth_and_vanishes_at_d(spectrum):
    losses = free_loss(np.arange(1, spectrum.d + 3), spectrum)
    assert np.all(np.diff(losses) <= TIGHT * losses[:-1])
    assert np.all(losses[spectrum.d - 1 :] == 0.0)
    assert losses[spectrum.d - 2] > 0.0


def test_free_loss_of_repeated_eigenvalues_vanishes_at_the_number_of_distinct_values():
    spectrum = Spectrum([1.0, 1.0, 0.5, 0.5, 0.5], [1.0, 2.0, 1.0, 1.0, 3.0])
    losses = free_loss([1, 2, 3], spectrum)
    # degree 1 with r(0) = 1 on {1 (weight 3), 0.5 (weight 2.5)}: closed-form weighted LS
    w, x = np.array([3.0, 2.5]), np.array([1.0, 0.5])
    c = (w * x).sum() / (w * x * x).sum()
    assert losses[0] == pytest.approx((w * (1 - c * x) ** 2).sum(), rel=TIGHT)
    assert losses[1] == 0.0 and losses[2] == 0.0


@functools.lru_cache(maxsize=None)
def _mpmath_reference_d4096():
    """free_loss_mpmath for L = 1..16 at d = 4096, a = 1.5, b = 1 (computed once, a few seconds)."""
    return free_loss_mpmath(np.arange(1, 17), PowerLawSpectrum(a=1.5, b=1.0, d=4096))


def test_free_loss_matches_mpmath_reference_on_a_real_power_law():
    spectrum = PowerLawSpectrum(a=1.5, b=1.0, d=4096)
    np.testing.assert_allclose(free_loss(np.arange(1, 17), spectrum), _mpmath_reference_d4096(), rtol=TIGHT)


def _plain_lanczos_free_loss(spectrum, depth):
    """Textbook float64 Lanczos (three-term recurrence, no re-orthogonalisation) + ψ_n(0)."""
    lam, v = spectrum.eigenvalues, np.sqrt(_weights(spectrum))
    q_prev, q = np.zeros_like(v), v / np.linalg.norm(v)
    alphas, betas = [], [0.0]
    for j in range(depth):
        u = lam * q - betas[-1] * q_prev
        alphas.append(q @ u)
        u = u - alphas[-1] * q
        betas.append(np.linalg.norm(u))
        q_prev, q = q, u / betas[-1]
    psi = [1 / np.linalg.norm(v), -alphas[0] / (betas[1] * np.linalg.norm(v))]
    for n in range(1, depth):
        psi.append((-alphas[n] * psi[n] - betas[n] * psi[n - 1]) / betas[n + 1])
    return 1 / np.sum(np.square(psi))


def _vandermonde_free_loss(spectrum, depth):
    """Float64 least squares on the monomial basis λ, ..., λ^L."""
    lam, v = spectrum.eigenvalues, np.sqrt(_weights(spectrum))
    design = v[:, None] * lam[:, None] ** np.arange(1, depth + 1)
    coefficients, *_ = np.linalg.lstsq(design, v, rcond=None)
    return float(np.sum((v - design @ coefficients) ** 2))


def test_plain_float64_lanczos_and_vandermonde_are_off_where_free_loss_is_not():
    spectrum = PowerLawSpectrum(a=1.5, b=1.0, d=4096)
    reference = _mpmath_reference_d4096()[-1]
    assert free_loss(16, spectrum) == pytest.approx(reference, rel=TIGHT)
    # measured: plain Lanczos +23 %, Vandermonde x6 (both far outside any tolerance)
    assert abs(_plain_lanczos_free_loss(spectrum, 16) / reference - 1) > 0.1
    assert abs(_vandermonde_free_loss(spectrum, 16) / reference - 1) > 1.0


@pytest.mark.slow
@pytest.mark.parametrize("a, b", [(2.0, 1.0), (1.0, 2.0), (1.5, 1.0)])
def test_free_loss_matches_adaptive_mpmath_reference_at_larger_depth(a, b):
    spectrum = PowerLawSpectrum(a=a, b=b, d=1024)
    depths = np.arange(1, 49)
    fast, reference = free_loss(depths, spectrum), free_loss_mpmath(depths, spectrum)
    floor = 1e-26 * spectrum.label_variance  # documented absolute round-off floor of float64
    np.testing.assert_allclose(fast, reference, rtol=TIGHT, atol=floor)


@pytest.mark.parametrize("a, b", [(1.5, 1.0), (2.0, 1.0), (2.0, 0.5)])
def test_exact_discrete_free_loss_falls_faster_than_the_continuum_two_zeta_law(a, b):
    # isolated top eigenvalues of a power law can be annihilated by roots of r: the discrete optimum
    # beats the continuum L^(-2ζ) of eq. (40) inside its validity window (a finding, not the paper's claim)
    spectrum = PowerLawSpectrum(a=a, b=b, d=32768)
    depths = np.array([10, 20, 40, 80])
    assert np.all(validity_window(spectrum, "free").contains(depths))
    discrete = free_loss(depths, spectrum)
    slopes = -np.diff(np.log(discrete)) / np.log(2)
    assert np.all(slopes > free_exponent(spectrum))
    assert np.all(np.diff(discrete / free_continuum_loss(depths, spectrum)) < 0)


@given(zeta=st.floats(0.2, 4.0), lambda_1=st.floats(0.1, 10.0), nodes=st.sampled_from([10, 40]))
def test_free_continuum_formula_is_the_discrete_optimum_on_gauss_jacobi_nodes(zeta, lambda_1, nodes):
    # M Gauss-Jacobi nodes integrate λ^(ζ-1) r(λ)² exactly for deg r <= M - 1
    x, g = roots_jacobi(nodes, zeta - 1, 0)
    lam = lambda_1 * (1 - x) / 2  # ∫_0^{λ1} λ^(ζ-1) f dλ = (λ1/2)^ζ Σ_j g_j f(λ_j)
    spectrum = Spectrum(lam, g / lam)  # loss weights λω = g
    depths = np.arange(1, nodes)
    continuum = (2 / lambda_1) ** zeta / free_continuum_sum(depths, zeta, lambda_1)
    np.testing.assert_allclose(free_loss(depths, spectrum), continuum, rtol=TIGHT)


def _orthonormal_values_at_zero(n_max, zeta, lambda_1, dps=60):
    """φ_n(0)² by Gram-Schmidt (Cholesky of the Hankel moment matrix) in mpmath."""
    with mpmath.workdps(dps):
        z, l1 = mpmath.mpf(zeta), mpmath.mpf(lambda_1)
        moments = [l1 ** (z + j) / (z + j) for j in range(2 * n_max + 1)]  # ∫_0^{λ1} λ^(ζ-1) λ^j dλ
        hankel = mpmath.matrix(n_max + 1, n_max + 1)
        for i in range(n_max + 1):
            for j in range(n_max + 1):
                hankel[i, j] = moments[i + j]
        lower = mpmath.cholesky(hankel)
        # H = C Cᵀ, so φ = C^(-1) (1, λ, λ², ...)ᵀ is orthonormal and φ_n(0) = (C^(-1))_{n0}
        inverse = mpmath.inverse(lower)
        return [float(inverse[n, 0] ** 2) for n in range(n_max + 1)]


@given(zeta=st.floats(0.2, 4.0), lambda_1=st.floats(0.2, 5.0))
def test_phi_n_zero_squared_equals_high_precision_orthonormalisation(zeta, lambda_1):
    numerical = _orthonormal_values_at_zero(10, zeta, lambda_1)
    np.testing.assert_allclose(phi_n_zero_squared(np.arange(11), zeta, lambda_1), numerical, rtol=TIGHT)


def test_phi_n_is_orthonormal_and_its_value_at_zero_is_eq_39():
    zeta, lam1 = sp.Rational(7, 4), sp.Rational(3, 2)
    phis = [sp.Poly(sp.expand(PHI_N.subs({s.n: k, s.zeta: zeta, s.lam1: lam1})), s.lam) for k in range(5)]

    def inner(p, q):  # exact ∫_0^{λ1} λ^(ζ-1) p q dλ, monomial by monomial
        return sum(c * lam1 ** (zeta + j) / (zeta + j) for (j,), c in (p * q).terms())

    for i in range(5):
        for j in range(5):
            assert sp.nsimplify(sp.simplify(inner(phis[i], phis[j]))) == (1 if i == j else 0)
        value = PHI_N_ZERO_SQUARED.subs({s.n: i, s.zeta: zeta, s.lam1: lam1})
        assert sp.simplify(phis[i].eval(0) ** 2 - value) == 0


def test_free_continuum_sum_closed_form_telescopes_to_the_sum_of_phi_squares():
    step = FREE_CONTINUUM_SUM - FREE_CONTINUUM_SUM.subs(s.L, s.L - 1)
    assert sp.simplify(sp.gammasimp(step / PHI_N_ZERO_SQUARED.subs(s.n, s.L))) == 1
    assert sp.simplify(sp.gammasimp(FREE_CONTINUUM_SUM.subs(s.L, 0) - PHI_N_ZERO_SQUARED.subs(s.n, 0))) == 0
    depths = np.arange(1, 200)
    cumulative = np.cumsum(phi_n_zero_squared(np.arange(200), 1.7, 0.8))[1:]
    np.testing.assert_allclose(free_continuum_sum(depths, 1.7, 0.8), cumulative, rtol=TIGHT)


def test_free_continuum_sum_and_phi_squares_reach_their_eq_40_asymptotes():
    for zeta in (0.5, 1.0, 5 / 3, 3.0):
        deep = 10**8
        total = free_continuum_sum(deep, zeta, 1.3)
        asymptote = float(FREE_CONTINUUM_SUM_ASYMPTOTE.subs({s.L: deep, s.zeta: zeta, s.lam1: 1.3}))
        assert total / asymptote == pytest.approx(1.0, abs=LOOSE)
        phi = phi_n_zero_squared(deep, zeta, 1.3)
        assert phi / (2 * deep ** (2 * zeta - 1) / (1.3**zeta * math.gamma(zeta) ** 2)) == pytest.approx(1.0, abs=LOOSE)


def test_free_continuum_loss_decays_with_exponent_two_zeta():
    spectrum = PowerLawSpectrum(a=2.0, b=1.5, d=64)
    deep = 10**7
    slope = math.log(free_continuum_loss(deep, spectrum) / free_continuum_loss(2 * deep, spectrum)) / math.log(2)
    assert slope == pytest.approx(free_exponent(spectrum), abs=LOOSE)
    assert free_continuum_loss(deep, spectrum) / free_continuum_asymptote(deep, spectrum) == pytest.approx(1.0, abs=LOOSE)


def test_stable_numeric_forms_equal_the_paper_forms():
    pairs = [
        (CONSTRAINED_CONTINUUM_LOSS, _CONSTRAINED_CONTINUUM_STABLE),
        (PHI_N_ZERO_SQUARED, _PHI_N_ZERO_SQUARED_STABLE),
        (FREE_CONTINUUM_SUM, _FREE_CONTINUUM_SUM_STABLE),
    ]
    for paper_form, stable_form in pairs:
        assert sp.simplify(sp.gammasimp(paper_form / stable_form)) == 1


def _paper_law(expression, zeta, lam1, depth, a, c_omega=1.0):
    values = {s.zeta: zeta, s.lam1: lam1, s.L: depth, s.n: depth, s.a: a, s.c_lambda: lam1, s.c_omega: c_omega}
    function = sp.lambdify(list(values), expression, "mpmath")
    with mpmath.workdps(40):
        return float(function(*[mpmath.mpf(v) for v in values.values()]))


def test_lambdified_numerics_equal_mpmath_evaluation_of_the_sympy_expressions():
    rng = np.random.default_rng(11)
    for _ in range(8):
        a, b = rng.uniform(0.5, 3.0), rng.uniform(0.0, 3.0)
        c_lambda, c_omega = rng.uniform(0.2, 5.0), rng.uniform(0.2, 5.0)
        spectrum = PowerLawSpectrum(a=a, b=b, d=8, c_lambda=c_lambda, c_omega=c_omega)
        if spectrum.zeta <= 0.05:
            continue
        zeta = spectrum.zeta
        depth = int(rng.choice([1, 3, 17, 1000, 10**6]))
        cases = [
            (constrained_continuum_loss(depth, spectrum), CONSTRAINED_CONTINUUM_LOSS),
            (constrained_asymptote(depth, spectrum), CONSTRAINED_ASYMPTOTE),
            (free_continuum_loss(depth, spectrum), FREE_CONTINUUM_LOSS),
            (free_continuum_asymptote(depth, spectrum), FREE_CONTINUUM_ASYMPTOTE),
            (free_continuum_sum(depth, zeta, c_lambda), FREE_CONTINUUM_SUM),
            (phi_n_zero_squared(depth, zeta, c_lambda), PHI_N_ZERO_SQUARED),
        ]
        for numeric, expression in cases:
            exact = _paper_law(expression, zeta, c_lambda, depth, a, c_omega)
            assert numeric == pytest.approx(exact, rel=1e2 * TIGHT), expression


# ------------------------------------------------------------------ exponents, windows, errors


def test_exponents_reproduce_the_zeta_columns_of_table_2():
    for row in paper_table("table2"):
        spectrum = PowerLawSpectrum(a=row["a"], b=row["b"], d=128)
        assert constrained_exponent(spectrum) == pytest.approx(row["zeta"], abs=5e-4)  # printed to 3 decimals
        assert free_exponent(spectrum) == pytest.approx(row["two_zeta"], abs=5e-4)
        # the paper's measured exponent lies between the two laws
        assert constrained_exponent(spectrum) < row["measured_alpha"] < free_exponent(spectrum)


def test_validity_windows_are_the_condition_number_and_its_square_root():
    spectrum = PowerLawSpectrum(a=1.5, b=1.0, d=4096)
    constrained = validity_window(spectrum, "constrained")
    free = validity_window(spectrum, "free")
    assert constrained.upper == pytest.approx(4096**1.5, rel=TIGHT)
    assert free.upper == pytest.approx(4096**0.75, rel=TIGHT)
    assert constrained.lower == free.lower == 1.0
    assert "a + b > 1" in constrained.statement
    assert free.contains([9, 10, 51, 52]).tolist() == [False, True, True, False]
    assert isinstance(free.contains(20), bool)
    with pytest.raises(AttributeError):
        free.upper = 3.0  # frozen


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: constrained_loss(4, PowerLawSpectrum(1, 1, 8), gamma=8.0), "gamma"),
        (lambda: constrained_loss(4, PowerLawSpectrum(1, 1, 8), gamma=-1.0), "gamma"),
        (lambda: constrained_loss([2, 4], PowerLawSpectrum(1, 1, 8), gamma=[1.0, 8.0]), "gamma"),
        (lambda: constrained_loss([2, 4], PowerLawSpectrum(1, 1, 8), gamma=[1.0]), "gamma"),
        (lambda: constrained_loss(2.5, PowerLawSpectrum(1, 1, 8)), "depth"),
        (lambda: constrained_loss(0, PowerLawSpectrum(1, 1, 8)), "depth"),
        (lambda: free_loss(-3, PowerLawSpectrum(1, 1, 8)), "depth"),
        (lambda: constrained_asymptote(4, PowerLawSpectrum(1.0, 0.0, 8)), "spectrum"),
        (lambda: free_continuum_loss(4, PowerLawSpectrum(0.0, 2.0, 8)), "spectrum"),
        (lambda: constrained_exponent(Spectrum([1.0, 0.5], [1.0, 1.0])), "spectrum"),
        (lambda: free_exponent(PowerLawSpectrum(0.5, 0.25, 8)), "spectrum"),
        (lambda: validity_window(PowerLawSpectrum(0.6, 0.4, 8), "free"), "spectrum"),
        (lambda: validity_window(PowerLawSpectrum(1.0, 1.5, 8), "optimal"), "polynomial"),
        (lambda: phi_n_zero_squared(2, -1.0, 1.0), "zeta"),
        (lambda: phi_n_zero_squared(-1, 1.0, 1.0), "n"),
        (lambda: free_continuum_sum(3, 1.0, 0.0), "lambda_1"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: constrained_loss(4, {"a": 1.0}), "spectrum"),
        (lambda: free_loss(4, np.ones(8)), "spectrum"),
        (lambda: constrained_asymptote(4, "power law"), "spectrum"),
        (lambda: constrained_loss(True, PowerLawSpectrum(1, 1, 8)), "depth"),
        (lambda: free_loss_mpmath(4, PowerLawSpectrum(1, 1, 8), dps=30.5), "dps"),
    ],
)
def test_wrong_types_raise_type_error_naming_the_argument(call, name):
    with pytest.raises(TypeError, match=name):
        call()


def test_validity_window_is_a_frozen_dataclass_with_documented_margin():
    window = ValidityWindow(2.0, 2000.0, "2 << L << 2000", margin=2.0)
    assert window.contains([3, 4, 1000, 1001]).tolist() == [False, True, True, False]
