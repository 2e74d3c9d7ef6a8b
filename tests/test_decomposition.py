"""Claims about the ensemble (CLT) decomposition R_L = C_L + (A_L - C_L)/L (paper eqs. (61)-(63))."""

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from theory import symbols as s
from theory.decomposition import (
    DECOMPOSITION_IDENTITY,
    EXCHANGEABLE_LOSS,
    Decomposition,
    decompose,
    exchangeable_loss,
    predict_exchangeable_loss,
    predict_from_decomposition,
    symbolic_decomposition_identity,
)
from tolerances import MC_SIGMAS, ROUNDOFF, rtol

TINY = np.finfo(np.float64).tiny  # absolute floor for sums of squares that underflow

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, allow_subnormal=False)


@st.composite
def predictions_and_targets(draw, min_depth=2, max_depth=6, max_contexts=8):
    depth = draw(st.integers(min_depth, max_depth))
    n_contexts = draw(st.integers(1, max_contexts))
    predictions = draw(hnp.arrays(np.float64, (depth, n_contexts), elements=finite))
    targets = draw(hnp.arrays(np.float64, (n_contexts,), elements=finite))
    return predictions, targets


def brute_force(predictions, targets):
    """Per-context R, A, C, disagreement with explicit O(L² n) loops over pairs ℓ ≠ m (eq. 62)."""
    errors = np.asarray(predictions, dtype=float) - np.asarray(targets, dtype=float)
    depth, n_contexts = errors.shape
    pairs = [(l, m) for l in range(depth) for m in range(depth) if l != m]
    R = np.array([np.mean(errors[:, i]) ** 2 for i in range(n_contexts)])
    A = np.array([sum(errors[l, i] ** 2 for l in range(depth)) / depth for i in range(n_contexts)])
    C = np.array([sum(errors[l, i] * errors[m, i] for l, m in pairs) / (depth * (depth - 1)) for i in range(n_contexts)])
    D = np.array(
        [sum((errors[l, i] - errors[m, i]) ** 2 for l, m in pairs) / (2 * depth * (depth - 1)) for i in range(n_contexts)]
    )
    # the per-context estimator of C quoted in the brief: (L² ē² - Σ e²)/(L(L-1))
    C_quoted = (depth**2 * errors.mean(axis=0) ** 2 - np.sum(errors**2, axis=0)) / (depth * (depth - 1))
    return R, A, C, D, C_quoted


# ---------------------------------------------------------------- the exact identity


@given(predictions_and_targets())
def test_identity_R_equals_C_plus_disagreement_over_L_to_roundoff(data):
    dec = decompose(*data)
    scale = rtol(ROUNDOFF) * dec.A + TINY
    assert abs(dec.R - (dec.C + (dec.A - dec.C) / dec.depth)) <= scale
    assert abs(dec.identity_residual) <= scale


@given(predictions_and_targets())
def test_layer_error_never_below_shared_error_and_gap_equals_disagreement_form(data):
    dec = decompose(*data)
    assert dec.A - dec.C >= 0.0  # exactly, not up to round-off
    assert dec.disagreement >= 0.0
    assert abs((dec.A - dec.C) - dec.disagreement) <= rtol(ROUNDOFF) * dec.A + TINY


@given(predictions_and_targets())
def test_linear_time_pair_sums_equal_quadratic_brute_force(data):
    dec = decompose(*data)
    R, A, C, D, C_quoted = brute_force(*data)
    scale = rtol(ROUNDOFF) * max(float(np.max(A)), 0.0) + TINY
    assert abs(dec.R - R.mean()) <= scale
    assert abs(dec.A - A.mean()) <= scale
    assert abs(dec.C - C.mean()) <= scale
    assert abs(dec.C - C_quoted.mean()) <= scale
    assert abs(dec.disagreement - D.mean()) <= scale
    n = dec.n_contexts
    if n >= 2:
        assert abs(dec.C_se - np.std(C, ddof=1) / np.sqrt(n)) <= scale
        assert abs(dec.A_se - np.std(A, ddof=1) / np.sqrt(n)) <= scale
        assert abs(dec.R_se - np.std(R, ddof=1) / np.sqrt(n)) <= scale
        assert abs(dec.covariance[0, 1] - np.cov(A, C, ddof=1)[0, 1] / n) <= rtol(ROUNDOFF) * float(np.max(A)) ** 2 + TINY
    else:
        assert np.isnan(dec.R_se) and np.isnan(dec.C_se)


@pytest.mark.parametrize("depth", [2, 3, 4, 5])
def test_symbolic_identity_residuals_are_exactly_zero(depth):
    proof = symbolic_decomposition_identity(depth)
    assert proof.residual == 0
    assert proof.disagreement_residual == 0
    assert sp.simplify(proof.identity.lhs - proof.identity.rhs) == 0
    assert proof.holds


def test_symbolic_definitions_agree_with_numeric_decomposition():
    rng = np.random.default_rng(7)
    errors = rng.standard_normal(4)
    proof = symbolic_decomposition_identity(4)
    values = dict(zip(proof.errors, errors))
    dec = decompose(errors[:, None], np.zeros(1))
    for expr, number in [
        (proof.mean_predictor_loss, dec.R),
        (proof.layer_error, dec.A),
        (proof.shared_error, dec.C),
        (proof.disagreement, dec.disagreement),
    ]:
        assert float(expr.subs(values)) == pytest.approx(number, rel=rtol(ROUNDOFF), abs=rtol(ROUNDOFF))


def test_identity_is_written_with_the_shared_symbols():
    assert EXCHANGEABLE_LOSS.free_symbols == {s.A, s.C_shared, s.L}
    assert DECOMPOSITION_IDENTITY.rhs == EXCHANGEABLE_LOSS


def test_single_layer_has_undefined_shared_error_and_loss_equals_layer_error():
    dec = decompose([[0.5, 2.0, -1.0]], [1.0, 1.0, 1.0])
    assert dec.depth == 1
    assert np.isnan(dec.C) and np.isnan(dec.disagreement) and np.isnan(dec.C_se)
    assert dec.R == dec.A == pytest.approx((0.25 + 1.0 + 4.0) / 3, rel=rtol(ROUNDOFF))
    assert np.isfinite(dec.A_se) and np.isnan(dec.covariance[1, 1])


# ---------------------------------------------------------------- statistics


def shared_plus_independent_errors(rng, depth, n_contexts, shared_sd, layer_sd):
    """e_ℓ = s + u_ℓ: C = shared_sd², A = shared_sd² + layer_sd², R = C + layer_sd²/L."""
    shared = shared_sd * rng.standard_normal(n_contexts)
    targets = rng.standard_normal(n_contexts)
    predictions = targets + shared + layer_sd * rng.standard_normal((depth, n_contexts))
    return predictions, targets


def test_decomposition_recovers_shared_and_layer_variances_within_standard_errors():
    rng = np.random.default_rng(2026)
    depth, shared_sd, layer_sd = 8, 0.6, 1.3
    dec = decompose(*shared_plus_independent_errors(rng, depth, 4000, shared_sd, layer_sd))
    assert abs(dec.C - shared_sd**2) <= MC_SIGMAS * dec.C_se
    assert abs(dec.A - (shared_sd**2 + layer_sd**2)) <= MC_SIGMAS * dec.A_se
    assert abs(dec.R - (shared_sd**2 + layer_sd**2 / depth)) <= MC_SIGMAS * dec.R_se


def test_standard_errors_match_spread_over_independent_datasets():
    rng = np.random.default_rng(11)
    repeats = 300
    decs = [decompose(*shared_plus_independent_errors(rng, 4, 100, 0.8, 1.0)) for _ in range(repeats)]
    # relative standard error of a sample standard deviation from `repeats` draws
    sd_rel_error = 1.0 / np.sqrt(2 * (repeats - 1))
    for value, se in [("R", "R_se"), ("A", "A_se"), ("C", "C_se")]:
        spread = np.std([getattr(d, value) for d in decs], ddof=1)
        mean_se = np.mean([getattr(d, se) for d in decs])
        assert abs(spread / mean_se - 1.0) <= MC_SIGMAS * sd_rel_error, (value, spread, mean_se)


# ---------------------------------------------------------------- predictions


@given(predictions_and_targets(max_contexts=8).filter(lambda d: d[0].shape[1] >= 2))
def test_prediction_at_measured_depth_reproduces_R_and_its_standard_error(data):
    dec = decompose(*data)
    prediction = predict_from_decomposition(dec.depth, dec)
    scale = rtol(ROUNDOFF) * dec.A + TINY
    assert abs(prediction.estimate - dec.R) <= scale
    # Var R = wᵀ Cov(A, C) w holds exactly because R_i = C_i + (A_i - C_i)/L context by context
    assert abs(prediction.standard_error**2 - dec.R_se**2) <= rtol(ROUNDOFF) * dec.A**2 + TINY


@given(
    depth=st.integers(1, 1000),
    A=st.floats(0.0, 10.0),
    gap=st.floats(0.0, 10.0),
    factor=hnp.arrays(np.float64, (2, 2), elements=st.floats(-1.0, 1.0)),
    level=st.sampled_from([0.5, 0.9, 0.95, 0.99]),
)
def test_prediction_interval_width_is_twice_normal_quantile_times_delta_method_se(depth, A, gap, factor, level):
    covariance = factor @ factor.T
    prediction = predict_exchangeable_loss(depth, A, A - gap, covariance, level=level)
    weights = np.array([1.0 / depth, 1.0 - 1.0 / depth])
    z = float(mpmath.sqrt(2) * mpmath.erfinv(level))  # independent of scipy.stats
    expected_width = 2.0 * z * np.sqrt(weights @ covariance @ weights)
    width = prediction.upper - prediction.lower
    assert width == pytest.approx(expected_width, rel=rtol(ROUNDOFF), abs=rtol(ROUNDOFF) * (1.0 + A))
    assert prediction.estimate == pytest.approx(A - gap + gap / depth, rel=rtol(ROUNDOFF), abs=rtol(ROUNDOFF))
    assert prediction.level == level


def test_prediction_interval_covers_at_nominal_rate_for_gaussian_estimates():
    rng = np.random.default_rng(3)
    truth_A, truth_C, depth, level, draws = 2.0, 0.5, 16, 0.9, 4000
    covariance = np.array([[0.04, 0.01], [0.01, 0.02]])
    estimates = rng.multivariate_normal([truth_A, truth_C], covariance, size=draws)
    truth = exchangeable_loss(depth, truth_A, truth_C)
    covered = 0
    for A, C in estimates:
        prediction = predict_exchangeable_loss(depth, A, C, covariance, level=level)
        covered += prediction.lower <= truth <= prediction.upper
    assert abs(covered / draws - level) <= MC_SIGMAS * np.sqrt(level * (1 - level) / draws)


def test_vectorised_prediction_equals_scalar_predictions():
    depths = [1, 2, 8, 256]
    covariance = [[0.1, 0.02], [0.02, 0.05]]
    vector = predict_exchangeable_loss(depths, 3.0, 1.0, covariance)
    for i, depth in enumerate(depths):
        scalar = predict_exchangeable_loss(depth, 3.0, 1.0, covariance)
        assert vector.estimate[i] == pytest.approx(scalar.estimate, rel=rtol(ROUNDOFF))
        assert vector.upper[i] == pytest.approx(scalar.upper, rel=rtol(ROUNDOFF))


def test_exchangeable_loss_matches_its_sympy_expression_and_tends_to_shared_error():
    for depth in [1, 3, 40]:
        expected = float(EXCHANGEABLE_LOSS.subs({s.L: depth, s.A: sp.Rational(5, 2), s.C_shared: sp.Rational(1, 3)}))
        assert exchangeable_loss(depth, 2.5, 1 / 3) == pytest.approx(expected, rel=rtol(ROUNDOFF))
    assert exchangeable_loss(10**9, 2.5, 0.25) == pytest.approx(0.25, rel=1e-8)
    values = exchangeable_loss(np.arange(1, 20), 2.5, 0.25)
    assert np.all(np.diff(values) < 0)


def test_results_are_frozen():
    dec = decompose([[1.0, 2.0], [0.0, 1.0]], [0.5, 0.5])
    with pytest.raises(AttributeError):
        dec.R = 0.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        dec.covariance[0, 0] = 1.0


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: decompose([[1.0, 2.0]], [1.0, 2.0, 3.0]), "targets"),
        (lambda: decompose([1.0, 2.0], [1.0, 2.0]), "layer_predictions"),
        (lambda: decompose([[1.0, np.nan]], [1.0, 2.0]), "layer_predictions"),
        (lambda: decompose([[1.0, 2.0]], [np.inf, 2.0]), "targets"),
        (lambda: exchangeable_loss(0, 1.0, 0.5), "depth"),
        (lambda: exchangeable_loss(2.5, 1.0, 0.5), "depth"),
        (lambda: exchangeable_loss(2, 0.5, 1.0), "A"),
        (lambda: exchangeable_loss(2, np.nan, 1.0), "A"),
        (lambda: predict_exchangeable_loss(2, 1.0, 0.5, [[1.0, 0.0], [0.0, -1.0]]), "covariance"),
        (lambda: predict_exchangeable_loss(2, 1.0, 0.5, [[1.0, 0.5], [0.0, 1.0]]), "covariance"),
        (lambda: predict_exchangeable_loss(2, 1.0, 0.5, np.eye(3)), "covariance"),
        (lambda: predict_exchangeable_loss(2, 1.0, 0.5, np.eye(2), level=1.5), "level"),
        (lambda: predict_from_decomposition(2, decompose([[1.0, 2.0]], [0.0, 0.0])), "decomposition"),
        (lambda: predict_from_decomposition(2, decompose([[1.0], [2.0]], [0.0])), "decomposition"),
        (lambda: symbolic_decomposition_identity(1), "depth"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, argument):
    with pytest.raises(ValueError, match=argument):
        call()


def test_wrong_types_raise_type_error_naming_the_argument():
    with pytest.raises(TypeError, match="decomposition"):
        predict_from_decomposition(2, {"A": 1.0, "C": 0.5})
    with pytest.raises(TypeError, match="C"):
        exchangeable_loss(2, 1.0, "0.5")
    with pytest.raises(TypeError, match="depth"):
        symbolic_decomposition_identity(2.0)
    assert isinstance(decompose([[1.0], [2.0]], [0.0]), Decomposition)
