"""Claims about the depth-law fit R_L = L0 + c L^-alpha (paper eqs. (16), (88)-(89)) and the gap fit (92)-(93)."""

import json
import math

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize

import theory
from theory import symbols as s
from theory.fitting import (
    DEPTH_LAW,
    GAP_LAW,
    LOG_RESIDUAL,
    PARAMETERS,
    R_observed,
    DepthLawFit,
    _residuals_and_jacobian,
    depth_law,
    depth_law_log_jacobian,
    fit_depth_law,
    fit_gap_law,
)
from tolerances import FINITE_DIFF, MC_SIGMAS, ROUNDOFF, rtol

DEPTHS = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256])

amplitudes = st.floats(0.1, 10.0)
exponents = st.floats(0.2, 3.0)
floors = st.floats(0.05, 2.0)


def noisy_losses(rng, L0, c, alpha, sigma, depths=DEPTHS, n_seeds=None):
    shape = depths.shape if n_seeds is None else (n_seeds, depths.size)
    return depth_law(depths, L0, c, alpha) * np.exp(sigma * rng.standard_normal(shape))


def log_cost(depths, losses, L0, c, alpha):
    return float(np.sum((np.log(losses) - np.log(L0 + c * np.asarray(depths, float) ** (-alpha))) ** 2))


# ---------------------------------------------------------------- the law and its Jacobian


def test_depth_law_is_the_sympy_expression_evaluated_at_high_precision():
    for depth, L0, c, alpha in [(1, 0.3, 2.0, 0.9), (7, 0.0, 1.5, 1.7), (256, 2.007, 0.4, 0.97)]:
        mp_value = mpmath.mpf(L0) + mpmath.mpf(c) * mpmath.power(depth, -mpmath.mpf(alpha))
        assert depth_law(depth, L0, c, alpha) == pytest.approx(float(mp_value), rel=rtol(ROUNDOFF))
        sym_value = DEPTH_LAW.subs({s.L: depth, s.L0: L0, s.c_coef: c, s.alpha: alpha})
        assert float(sym_value) == pytest.approx(float(mp_value), rel=rtol(ROUNDOFF))
    assert GAP_LAW == DEPTH_LAW.subs(s.L0, 0)
    assert LOG_RESIDUAL.free_symbols == {R_observed, s.L, s.L0, s.c_coef, s.alpha}


@given(L0=st.floats(0.0, 2.0), c=amplitudes, alpha=exponents)
def test_analytic_log_jacobian_equals_sympy_derivative(L0, c, alpha):
    gradient = [sp.diff(sp.log(DEPTH_LAW), p) for p in (s.L0, s.c_coef, s.alpha)]
    reference = sp.lambdify((s.L, s.L0, s.c_coef, s.alpha), gradient, "numpy")
    expected = np.column_stack([np.broadcast_to(col, DEPTHS.shape) for col in reference(DEPTHS.astype(float), L0, c, alpha)])
    np.testing.assert_allclose(depth_law_log_jacobian(DEPTHS, L0, c, alpha), expected, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))


def central_difference(function, x, step):
    columns = []
    for i in range(x.size):
        shift = np.zeros_like(x)
        shift[i] = step * max(1.0, abs(x[i]))
        columns.append((function(x + shift) - function(x - shift)) / (2 * shift[i]))
    return np.column_stack(columns)


@pytest.mark.parametrize("L0, c, alpha", [(0.5, 2.0, 1.0), (0.05, 10.0, 0.2), (2.0, 0.1, 3.0), (0.8, 1.3, 0.97)])
def test_analytic_jacobian_equals_central_finite_differences(L0, c, alpha):
    def log_model(params):
        return np.log(depth_law(DEPTHS, *params))

    params = np.array([L0, c, alpha])
    numeric = central_difference(log_model, params, 1e-5)
    np.testing.assert_allclose(depth_law_log_jacobian(DEPTHS, L0, c, alpha), numeric, rtol=rtol(FINITE_DIFF), atol=rtol(FINITE_DIFF))


@pytest.mark.parametrize("floor", [None, 0.0, 0.4])
def test_optimiser_jacobian_in_log_coordinates_equals_central_finite_differences(floor):
    rng = np.random.default_rng(5)
    log_depth = np.log(DEPTHS.astype(float))
    log_values = np.log(noisy_losses(rng, 0.5, 2.0, 0.9, 0.1))
    theta = np.array([math.log(1.7), math.log(0.8)]) if floor is not None else np.array([0.45, math.log(1.7), math.log(0.8)])

    def residuals(t):
        return _residuals_and_jacobian(t, log_depth, log_values, floor)[0]

    analytic = _residuals_and_jacobian(theta, log_depth, log_values, floor)[1]
    np.testing.assert_allclose(analytic, central_difference(residuals, theta, 1e-5), rtol=rtol(FINITE_DIFF), atol=rtol(FINITE_DIFF))


def test_log_jacobian_survives_underflow_of_the_power():
    jac = depth_law_log_jacobian([2, 10**6], 0.5, 1.0, 80.0)  # (10^6)^-80 underflows to 0
    assert np.all(np.isfinite(jac))
    assert jac[1].tolist() == [2.0, 0.0, -0.0]


# ---------------------------------------------------------------- noiseless recovery


@given(L0=floors, c=amplitudes, alpha=exponents)
def test_noiseless_data_recover_parameters_with_fitted_floor(L0, c, alpha):
    fit = fit_depth_law(DEPTHS, depth_law(DEPTHS, L0, c, alpha))
    assert fit.floor_mode == "fitted" and fit.dof == DEPTHS.size - 3
    for name, truth in [("L0", L0), ("c", c), ("alpha", alpha)]:
        assert fit.estimates[name] == pytest.approx(truth, rel=rtol(ROUNDOFF)), name


@given(c=amplitudes, alpha=exponents)
def test_noiseless_data_recover_parameters_with_zero_floor(c, alpha):
    fit = fit_depth_law(DEPTHS, depth_law(DEPTHS, 0.0, c, alpha), floor=0)
    assert fit.floor_mode == "zero" and fit.L0 == 0.0 and fit.L0_se == 0.0 and fit.dof == DEPTHS.size - 2
    assert fit.c == pytest.approx(c, rel=rtol(ROUNDOFF))
    assert fit.alpha == pytest.approx(alpha, rel=rtol(ROUNDOFF))


@given(L0=floors, c=amplitudes, alpha=exponents)
def test_noiseless_data_recover_parameters_with_fixed_floor(L0, c, alpha):
    fit = fit_depth_law(DEPTHS, depth_law(DEPTHS, L0, c, alpha), floor=L0)
    assert fit.floor_mode == "fixed" and fit.L0 == L0 and np.all(fit.covariance[0] == 0.0)
    assert fit.c == pytest.approx(c, rel=rtol(ROUNDOFF))
    assert fit.alpha == pytest.approx(alpha, rel=rtol(ROUNDOFF))


def test_fitted_floor_on_a_pure_power_law_lands_on_zero():
    fit = fit_depth_law(DEPTHS, depth_law(DEPTHS, 0.0, 3.0, 0.7))
    assert fit.L0 <= rtol(ROUNDOFF) * 3.0
    assert fit.alpha == pytest.approx(0.7, rel=rtol(ROUNDOFF))
    assert fit.r_squared == pytest.approx(1.0, abs=rtol(ROUNDOFF))


# ---------------------------------------------------------------- statistics


def test_zero_floor_fit_equals_ordinary_least_squares_on_log_log_axes():
    # with L0 = 0 the model is linear in (log c, alpha): the fit and its standard errors are OLS
    rng = np.random.default_rng(17)
    losses = noisy_losses(rng, 0.0, 2.0, 1.1, 0.05)
    fit = fit_depth_law(DEPTHS, losses, floor=0)
    x, y = np.log(DEPTHS.astype(float)), np.log(losses)
    design = np.column_stack([np.ones_like(x), -x])
    coef, rss, *_ = np.linalg.lstsq(design, y, rcond=None)
    cov = rss[0] / (x.size - 2) * np.linalg.inv(design.T @ design)
    assert fit.alpha == pytest.approx(coef[1], rel=rtol(ROUNDOFF))
    assert math.log(fit.c) == pytest.approx(coef[0], rel=rtol(ROUNDOFF))
    assert fit.alpha_se == pytest.approx(math.sqrt(cov[1, 1]), rel=rtol(ROUNDOFF))
    assert fit.c_se == pytest.approx(fit.c * math.sqrt(cov[0, 0]), rel=rtol(ROUNDOFF))  # delta method
    r_squared = 1 - np.sum((y - design @ coef) ** 2) / np.sum((y - y.mean()) ** 2)
    assert fit.r_squared == pytest.approx(r_squared, rel=rtol(ROUNDOFF))


@pytest.mark.parametrize("floor", [None, 0.3])
def test_fit_is_no_worse_than_an_independent_optimiser_started_at_the_truth(floor):
    rng = np.random.default_rng(23)
    losses = noisy_losses(rng, 0.3, 1.5, 0.8, 0.08)
    fit = fit_depth_law(DEPTHS, losses, floor=floor)
    if floor is None:
        other = optimize.minimize(
            lambda p: log_cost(DEPTHS, losses, abs(p[0]), math.exp(p[1]), math.exp(p[2])),
            [0.3, math.log(1.5), math.log(0.8)], method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 1e-15, "maxiter": 20000},
        )
    else:
        other = optimize.minimize(
            lambda p: log_cost(DEPTHS, losses, floor, math.exp(p[0]), math.exp(p[1])),
            [math.log(1.5), math.log(0.8)], method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 1e-15, "maxiter": 20000},
        )
    ours = log_cost(DEPTHS, losses, fit.L0, fit.c, fit.alpha)
    assert ours <= other.fun * (1 + rtol(ROUNDOFF))
    assert ours == pytest.approx(float(np.sum(fit.residuals**2)), rel=rtol(ROUNDOFF))


def test_r_squared_is_computed_on_log_losses():
    rng = np.random.default_rng(4)
    losses = noisy_losses(rng, 0.5, 2.0, 1.0, 0.1)
    fit = fit_depth_law(DEPTHS, losses)
    log_losses = np.log(losses)
    expected = 1 - np.sum(fit.residuals**2) / np.sum((log_losses - log_losses.mean()) ** 2)
    assert fit.r_squared == pytest.approx(expected, rel=rtol(ROUNDOFF))
    np.testing.assert_allclose(fit.residuals, log_losses - np.log(fit.predict(DEPTHS)), rtol=0, atol=rtol(ROUNDOFF))


@pytest.mark.parametrize("floor, L0", [(None, 0.5), (0, 0.0)])
def test_nominal_95_percent_intervals_for_alpha_cover_the_truth_90_to_99_percent_of_the_time(floor, L0):
    rng = np.random.default_rng(20261)
    repeats, alpha = 200, 0.9
    covered = 0
    for _ in range(repeats):
        fit = fit_depth_law(DEPTHS, noisy_losses(rng, L0, 2.0, alpha, 0.03), floor=floor)
        lower, upper = fit.interval("alpha", level=0.95)
        covered += lower <= alpha <= upper
    assert 0.90 <= covered / repeats <= 0.99, covered / repeats


# ---------------------------------------------------------------- seeds and bootstrap


def test_two_dimensional_losses_fit_the_mean_over_seeds():
    rng = np.random.default_rng(8)
    seeds = noisy_losses(rng, 0.5, 2.0, 1.0, 0.05, n_seeds=5)
    fit2d = fit_depth_law(DEPTHS, seeds)
    fit1d = fit_depth_law(DEPTHS, seeds.mean(axis=0))
    assert fit2d.n_seeds == 5 and fit2d.bootstrap_samples is None
    for name in PARAMETERS:
        assert fit2d.estimates[name] == pytest.approx(fit1d.estimates[name], rel=rtol(ROUNDOFF), abs=rtol(ROUNDOFF))


def test_bootstrap_is_reproducible_from_its_seed_and_recorded_in_the_manifest():
    rng = np.random.default_rng(9)
    seeds = noisy_losses(rng, 0.5, 2.0, 1.0, 0.05, n_seeds=4)
    first = fit_depth_law(DEPTHS, seeds, n_bootstrap=30, rng=123)
    second = fit_depth_law(DEPTHS, seeds, n_bootstrap=30, rng=np.random.default_rng(123))
    np.testing.assert_array_equal(first.bootstrap_samples, second.bootstrap_samples)
    assert first.manifest["seed"] == 123 and first.manifest["n_bootstrap"] == 30
    assert second.manifest["rng_state"] is not None
    lo, hi = first.interval("alpha", method="bootstrap")
    expected = np.percentile(first.bootstrap_samples[:, 2], [2.5, 97.5])
    assert (lo, hi) == pytest.approx(tuple(expected), rel=rtol(ROUNDOFF))


def test_bootstrap_over_identical_seeds_has_no_spread():
    row = depth_law(DEPTHS, 0.5, 2.0, 1.0)
    fit = fit_depth_law(DEPTHS, np.vstack([row, row, row]), n_bootstrap=10, rng=0)
    np.testing.assert_allclose(fit.bootstrap_samples, np.tile([fit.L0, fit.c, fit.alpha], (10, 1)), rtol=rtol(ROUNDOFF))


def test_bootstrap_spread_of_alpha_is_comparable_to_its_spread_over_fresh_seeds():
    # bootstrap standard error vs the standard deviation of alpha over independent repeats
    rng = np.random.default_rng(31)
    truth = (0.5, 2.0, 1.0)
    repeats = [fit_depth_law(DEPTHS, noisy_losses(rng, *truth, 0.2, n_seeds=8)).alpha for _ in range(60)]
    spread = np.std(repeats, ddof=1)
    boot = fit_depth_law(DEPTHS, noisy_losses(rng, *truth, 0.2, n_seeds=8), n_bootstrap=200, rng=1)
    boot_se = np.std(boot.bootstrap_samples[:, 2], ddof=1)
    # a bootstrap over 8 seeds estimates the spread only roughly: require the right order of magnitude
    assert 0.5 <= boot_se / spread <= 2.0, (boot_se, spread)


# ---------------------------------------------------------------- gap fit (eqs. 92-93)


# C_L = plateau - gap carries the rounding error eps * plateau, i.e. a relative error eps * plateau / gap
# in the gap itself: the strategies keep gap/plateau >= 0.1 * 256^-1.5 ~ 2e-5 so that this stays ~1e-11.
@given(plateau=st.floats(0.1, 60.0), relative_amplitude=st.floats(0.1, 1.0), alpha=st.floats(0.2, 1.5))
def test_gap_fit_recovers_a_known_gap_exponent(plateau, relative_amplitude, alpha):
    c = relative_amplitude * plateau
    shared = plateau - c * DEPTHS.astype(float) ** (-alpha)
    fit = fit_gap_law(DEPTHS, shared, plateau)
    assert fit.quantity == "gap" and fit.plateau == plateau and fit.L0 == 0.0
    assert fit.alpha == pytest.approx(alpha, rel=rtol(ROUNDOFF))
    assert fit.c == pytest.approx(c, rel=rtol(ROUNDOFF))


def test_gap_fit_with_noise_covers_the_exponent_within_its_standard_errors():
    rng = np.random.default_rng(12)
    plateau, alpha = 2.007, 0.98
    gaps = 1.2 * DEPTHS.astype(float) ** (-alpha) * np.exp(0.02 * rng.standard_normal((6, DEPTHS.size)))
    fit = fit_gap_law(DEPTHS, plateau - gaps, plateau, n_bootstrap=50, rng=2)
    assert abs(fit.alpha - alpha) <= MC_SIGMAS * fit.alpha_se
    assert fit.bootstrap_samples.shape == (50, 3)


# ---------------------------------------------------------------- result object


def test_result_serialises_to_strict_json_with_version_manifest():
    fit = fit_depth_law([1, 2, 4], [2.5, 1.5, 1.0])  # dof = 0: standard errors undefined
    assert fit.dof == 0 and math.isnan(fit.alpha_se)
    payload = json.loads(json.dumps(fit.to_dict(), allow_nan=False))
    assert payload["manifest"]["package_version"] == theory.__version__
    assert payload["r_squared_scale"] == "log"
    assert payload["standard_errors"]["alpha"] is None
    assert payload["estimates"]["alpha"] == pytest.approx(1.0, rel=rtol(ROUNDOFF))


def test_wald_interval_uses_student_t_with_the_residual_degrees_of_freedom():
    rng = np.random.default_rng(6)
    fit = fit_depth_law(DEPTHS, noisy_losses(rng, 0.5, 2.0, 1.0, 0.05))
    lower, upper = fit.interval("alpha", level=0.9)
    t = float(mpmath.findroot(lambda q: mpmath.betainc(fit.dof / 2, 0.5, 0, fit.dof / (fit.dof + q**2), regularized=True) - 0.1, 2.0))
    assert (upper - lower) / 2 == pytest.approx(t * fit.alpha_se, rel=rtol(ROUNDOFF))
    assert isinstance(fit, DepthLawFit)
    with pytest.raises(AttributeError):
        fit.alpha = 2.0  # type: ignore[misc]


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: fit_depth_law([1, 2, 4], [1.0, 0.5]), "losses"),
        (lambda: fit_depth_law([1, 2], [1.0, 0.5]), "depths"),
        (lambda: fit_depth_law([1, 1, 1, 2], [1.0, 1.0, 1.0, 0.5]), "depths"),
        (lambda: fit_depth_law([1], [1.0], floor=0), "depths"),
        (lambda: fit_depth_law([1, 2, 4], [1.0, 0.0, 0.25]), "losses"),
        (lambda: fit_depth_law([1, 2, 4], [1.0, -0.5, 0.25]), "losses"),
        (lambda: fit_depth_law([1, 2, 4], [1.0, np.nan, 0.25]), "losses"),
        (lambda: fit_depth_law([1, 2.5, 4], [1.0, 0.5, 0.25]), "depths"),
        (lambda: fit_depth_law([0, 2, 4], [1.0, 0.5, 0.25]), "depths"),
        (lambda: fit_depth_law([1, 2, np.nan], [1.0, 0.5, 0.25]), "depths"),
        (lambda: fit_depth_law([1, 2, 4], [1.0, 0.5, 0.25], floor=-1.0), "floor"),
        (lambda: fit_depth_law([1, 2, 4], [1.0, 0.5, 0.25], level=1.0), "level"),
        (lambda: fit_depth_law([1, 2, 4], [1.0, 0.5, 0.25], n_bootstrap=5, rng=0), "losses"),
        (lambda: fit_depth_law([1, 2, 4], [[1.0, 0.5, 0.25]] * 2, n_bootstrap=5), "rng"),
        (lambda: fit_depth_law([1, 2, 4], [1.0, 0.5, 0.25], n_bootstrap=-1), "n_bootstrap"),
        (lambda: fit_gap_law([1, 2, 4], [1.0, 2.5, 1.9], 2.0), "shared_errors"),
        (lambda: fit_gap_law([1, 2, 4], [1.0, 1.5], 2.0), "shared_errors"),
        (lambda: fit_depth_law([1, 2, 4], [1.0, 0.5, 0.25], floor=0).interval("beta"), "name"),
        (lambda: fit_depth_law([1, 2, 4], [1.0, 0.5, 0.25], floor=0).interval("alpha", method="bootstrap"), "bootstrap"),
        (lambda: depth_law(2, 0.5, -1.0, 1.0), "c"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, argument):
    with pytest.raises(ValueError, match=argument):
        call()


def test_wrong_types_raise_type_error_naming_the_argument():
    with pytest.raises(TypeError, match="rng"):
        fit_depth_law([1, 2, 4], [[1.0, 0.5, 0.25]] * 2, n_bootstrap=2, rng="seed")
    with pytest.raises(TypeError, match="plateau"):
        fit_gap_law([1, 2, 4], [1.0, 1.5, 1.9], "2.0")


def test_fit_of_non_decaying_data_returns_a_finite_result_instead_of_overflowing():
    # regression: R rising with depth once drove log(alpha) to overflow (math.exp)
    fit = fit_depth_law([1, 2, 4], [[1.364, 1.3466, 1.4062], [1.4814, 1.4088, 1.3935], [0.9992, 0.9482, 0.9668]])
    assert np.isfinite([fit.L0, fit.c, fit.alpha]).all()
    assert 1e-4 <= fit.alpha <= 100.0
