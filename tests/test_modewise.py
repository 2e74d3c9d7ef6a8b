"""Claims of paper eqs. (55)-(56): exponentially decaying modes sum to a power law in depth."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st
from tolerances import APPROX, ROUNDOFF, rtol

from theory import symbols as s
from theory.modewise import (
    MODEWISE_ASYMPTOTE,
    MODEWISE_INTEGRAL,
    MODEWISE_INTEGRAND,
    modewise_asymptote,
    modewise_integral,
    modewise_sum,
)

TIGHT = rtol(ROUNDOFF)
LOOSE = rtol(APPROX)


def _log_grid_sum(depth, C, beta, tau0, points, tau_max=1e18):
    """Σ_k w_k e^(-L/τ_k) with τ_k the midpoints of a log grid on [τ0, τ_max] and w_k = ρ(τ_k) Δτ_k."""
    edges = np.geomspace(tau0, tau_max, points + 1)
    log_step = math.log(tau_max / tau0) / points
    taus = np.sqrt(edges[:-1] * edges[1:])
    weights = C * taus ** (1 - beta) * log_step  # ρ(τ) dτ = C τ^(1-β) d log τ
    return modewise_sum(depth, weights, taus)


@pytest.mark.parametrize("beta", [1.5, 2.0, 3.0])
def test_modewise_sum_tends_to_the_integral_on_dense_depth_scale_grids(beta):
    C, tau0, depths = 0.7, 2.0, np.array([1, 10, 100])
    exact = modewise_integral(depths, C, beta, tau0)
    errors = [np.max(np.abs(_log_grid_sum(depths, C, beta, tau0, n) / exact - 1)) for n in (4000, 8000, 16000)]
    assert errors[1] < errors[0] / 3 and errors[2] < errors[1] / 3  # second-order midpoint rule
    assert errors[2] < LOOSE


@given(
    depth=st.integers(1, 500),
    C=st.floats(0.1, 10.0),
    beta=st.floats(1.05, 5.0),
    tau0=st.floats(0.1, 50.0),
)
def test_modewise_closed_form_equals_numerical_quadrature(depth, C, beta, tau0):
    # with τ = t^(-1/(β-1)) the integral becomes ∫_0^{τ0^(1-β)} C/(β-1) exp(-L t^(1/(β-1))) dt:
    # a finite range and a bounded integrand, which tanh-sinh quadrature resolves to full precision
    with mpmath.workdps(30):
        power = 1 / (mpmath.mpf(beta) - 1)
        quadrature = mpmath.quad(
            lambda t: C * power * mpmath.exp(-depth * t**power), [0, mpmath.mpf(tau0) ** (1 - mpmath.mpf(beta))]
        )
    assert modewise_integral(depth, C, beta, tau0) == pytest.approx(float(quadrature), rel=TIGHT)


def test_modewise_closed_form_solves_the_integral_symbolically():
    # d/dτ0 of ∫_{τ0}^∞ ρ e^(-L/τ) dτ is -ρ(τ0) e^(-L/τ0), and the integral vanishes as τ0 -> ∞
    derivative = sp.diff(MODEWISE_INTEGRAL, s.tau0)
    assert sp.simplify(derivative + MODEWISE_INTEGRAND.subs(s.tau, s.tau0)) == 0
    assert sp.limit(MODEWISE_INTEGRAL.subs(s.beta_exp, sp.Rational(5, 2)), s.tau0, sp.oo) == 0
    # and its τ0 -> 0 limit is the asymptote (eq. 56)
    half = sp.Rational(5, 2)
    limit = sp.limit(MODEWISE_INTEGRAL.subs(s.beta_exp, half), s.tau0, 0, "+")
    assert sp.simplify(limit - MODEWISE_ASYMPTOTE.subs(s.beta_exp, half)) == 0


@pytest.mark.parametrize("beta", [1.2, 2.0, 3.5])
def test_modewise_integral_over_asymptote_tends_to_one_as_depth_grows(beta):
    tau0 = 3.0
    depths = np.array([1, 3, 10, 30, 100, 300])
    ratio = modewise_integral(depths, 1.0, beta, tau0) / modewise_asymptote(depths, 1.0, beta)
    assert np.all(np.diff(ratio[:4]) > 0) and np.all(ratio <= 1)  # until it saturates at 1 in float64
    assert ratio[-1] == pytest.approx(1.0, abs=LOOSE)


@given(beta=st.floats(1.05, 6.0), C=st.floats(0.01, 100.0))
def test_modewise_asymptote_is_a_power_law_with_exponent_beta_minus_one(beta, C):
    depths = np.array([7, 70, 700])
    values = modewise_asymptote(depths, C, beta)
    slopes = -np.diff(np.log(values)) / math.log(10)
    np.testing.assert_allclose(slopes, beta - 1, rtol=TIGHT)


@pytest.mark.parametrize("p, q", [(3.0, 2.0), (2.5, 1.0)])
def test_power_law_mode_weights_and_depth_scales_give_beta_p_plus_q_minus_1_over_q(p, q):
    # w_k = k^(-p), τ_k = k^q: the loss-weighted density of τ is (1/q) τ^(-(p+q-1)/q) for τ >= 1
    modes = np.arange(1, 10**7 + 1, dtype=np.float64)
    beta, C = (p + q - 1) / q, 1 / q
    value = modewise_sum(100, modes**-p, modes**q)
    assert value / modewise_asymptote(100, C, beta) == pytest.approx(1.0, abs=LOOSE)


def test_lambdified_numerics_equal_mpmath_evaluation_of_the_sympy_expressions():
    rng = np.random.default_rng(7)
    integral = sp.lambdify((s.L, s.C, s.beta_exp, s.tau0), MODEWISE_INTEGRAL, "mpmath")
    asymptote = sp.lambdify((s.L, s.C, s.beta_exp), MODEWISE_ASYMPTOTE, "mpmath")
    for _ in range(20):
        depth, C = int(rng.integers(1, 10**4)), rng.uniform(0.1, 10)
        beta, tau0 = rng.uniform(1.01, 8.0), rng.uniform(0.05, 100.0)
        with mpmath.workdps(30):
            exact_integral = float(integral(depth, mpmath.mpf(C), mpmath.mpf(beta), mpmath.mpf(tau0)))
            exact_asymptote = float(asymptote(depth, mpmath.mpf(C), mpmath.mpf(beta)))
        assert modewise_integral(depth, C, beta, tau0) == pytest.approx(exact_integral, rel=1e2 * TIGHT)
        assert modewise_asymptote(depth, C, beta) == pytest.approx(exact_asymptote, rel=TIGHT)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: modewise_asymptote(10, 1.0, 1.0), "beta"),
        (lambda: modewise_integral(10, 1.0, 0.5, 1.0), "beta"),
        (lambda: modewise_integral(10, 1.0, 2.0, 0.0), "tau0"),
        (lambda: modewise_integral(10, -1.0, 2.0, 1.0), "C"),
        (lambda: modewise_integral(1.5, 1.0, 2.0, 1.0), "depth"),
        (lambda: modewise_sum(0, [1.0], [1.0]), "depth"),
        (lambda: modewise_sum(3, [1.0, -1.0], [1.0, 2.0]), "weights"),
        (lambda: modewise_sum(3, [1.0, 1.0], [1.0, 0.0]), "timescales"),
        (lambda: modewise_sum(3, [1.0, 1.0], [1.0]), "timescales"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_wrong_types_raise_type_error_naming_the_argument():
    with pytest.raises(TypeError, match="beta"):
        modewise_asymptote(10, 1.0, "2")
