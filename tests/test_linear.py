"""Claims of paper eqs. (19)-(26), (29)-(30): deep linear attention is a covariance polynomial."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st
from tolerances import ROUNDOFF, rtol

from theory import PowerLawSpectrum
from theory import symbols as s
from theory.linear import (
    BETA_T,
    QUERY,
    S_MATRIX,
    W_V,
    W_Y,
    covariance_polynomial,
    effective_qk,
    f_recursion,
    population_loss,
    qk_symbol,
    readout_coefficients,
    readout_symbol,
    symbolic_covariance_polynomial,
    symbolic_f_recursion,
    symbolic_readout,
)
from theory.polynomial_laws import constrained_loss

TIGHT = rtol(ROUNDOFF)


def _weights(rng, d, N, depth):
    """Random weights of the linear model (eqs. 8, 11, 12), scaled so that every layer matters."""
    return {
        "W_x": rng.normal(size=(N, d)),
        "W_y": rng.normal(size=N),
        "W_q": rng.normal(size=(depth, N, N)),
        "W_k": rng.normal(size=(depth, N, N)) / np.sqrt(N),
        "W_v": rng.normal(size=(N, N)) / np.sqrt(N),
        "W_o": rng.normal(size=N) / np.sqrt(N),
    }


def _dense_linear_attention(X, labels, W_x, W_y, W_q, W_k, W_v, W_o):
    """Literal transcription of eqs. (7)-(12) with the mask M_linear of eq. (75).

    Returns the prediction and the label stream H_y after every layer.
    """
    d, tokens = X.shape
    P, N, depth = tokens - 1, W_x.shape[0], W_q.shape[0]
    mask = np.zeros((tokens, tokens))
    mask[:P, :P] = -1.0  # context tokens update each other with sign -1
    mask[P, :P] = 1.0  # the test token reads the context
    H_x = W_x @ X
    H_y = np.outer(W_y, np.append(labels, 0.0))
    streams = [H_y]
    for layer in range(depth):
        Q, K, V = W_q[layer] @ H_x, W_k[layer] @ H_x, W_v @ H_y
        A = mask * (Q.T @ K) / (P * N)
        H_y = H_y + V @ A.T / depth
        streams.append(H_y)
    return W_o @ H_y[:, P], streams


def _context(rng, d, P):
    U = rng.normal(size=(d, P))
    return U, U @ U.T / P, rng.normal(size=d), rng.normal(size=d)


sizes = st.fixed_dictionaries(
    {
        "d": st.integers(1, 5),
        "extra_width": st.integers(0, 3),
        "P": st.integers(1, 12),
        "depth": st.integers(1, 5),
        "seed": st.integers(0, 2**32 - 1),
    }
)


@given(sizes=sizes)
def test_dense_linear_attention_predicts_beta_transpose_polynomial_times_query(sizes):
    d, P, depth = sizes["d"], sizes["P"], sizes["depth"]
    rng = np.random.default_rng(sizes["seed"])
    W = _weights(rng, d, d + sizes["extra_width"], depth)
    U, S, beta, q = _context(rng, d, P)
    prediction, _ = _dense_linear_attention(np.column_stack([U, q]), beta @ U, **W)
    B = effective_qk(W["W_x"], W["W_q"], W["W_k"])
    m = readout_coefficients(W["W_o"], W["W_v"], W["W_y"], depth)
    row = beta @ covariance_polynomial(S, B, m)
    assert abs(prediction - row @ q) <= TIGHT * (np.linalg.norm(row) * np.linalg.norm(q) + abs(prediction))


@given(sizes=sizes)
def test_context_label_states_are_F_times_U_and_readout_is_W_o_F0_minus_FL_q(sizes):
    d, P, depth = sizes["d"], sizes["P"], sizes["depth"]
    rng = np.random.default_rng(sizes["seed"])
    W = _weights(rng, d, d + sizes["extra_width"], depth)
    U, S, beta, q = _context(rng, d, P)
    prediction, streams = _dense_linear_attention(np.column_stack([U, q]), beta @ U, **W)
    F = f_recursion(S, effective_qk(W["W_x"], W["W_q"], W["W_k"]), W["W_v"], W["W_y"], beta, depth)
    for layer, H_y in enumerate(streams):  # eq. (22): Z_ℓ = F_ℓ U, h_ℓ = (F_0 - F_ℓ) q
        scale = np.abs(H_y).max() + np.abs(F[layer]).max()
        np.testing.assert_allclose(H_y[:, :P], F[layer] @ U, rtol=0, atol=TIGHT * scale)
        np.testing.assert_allclose(H_y[:, P], (F[0] - F[layer]) @ q, rtol=0, atol=TIGHT * scale)
    assert W["W_o"] @ (F[0] - F[-1]) @ q == pytest.approx(prediction, rel=TIGHT, abs=TIGHT * np.abs(F).max())


@given(sizes=sizes)
def test_covariance_polynomial_equals_the_f_recursion_for_any_weights(sizes):
    d, N, P, depth = sizes["d"], sizes["d"] + sizes["extra_width"], sizes["P"], sizes["depth"]
    rng = np.random.default_rng(sizes["seed"])
    W = _weights(rng, d, N, depth)
    _, S, beta, _ = _context(rng, d, P)
    B = effective_qk(W["W_x"], W["W_q"], W["W_k"])
    F = f_recursion(S, B, W["W_v"], W["W_y"], beta, depth)
    from_recursion = W["W_o"] @ (F[0] - F[-1])  # the row vector W_o (F_0 - F_L) = βᵀ 𝒫_L(S)  (eq. 23)
    from_polynomial = beta @ covariance_polynomial(S, B, readout_coefficients(W["W_o"], W["W_v"], W["W_y"], depth))
    scale = np.linalg.norm(from_polynomial) + np.linalg.norm(from_recursion)
    assert np.linalg.norm(from_recursion - from_polynomial) <= TIGHT * scale


@given(d=st.integers(1, 4), depth=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_covariance_polynomial_equals_the_brute_force_subset_sum(d, depth, seed):
    rng = np.random.default_rng(seed)
    S, B, m = rng.normal(size=(d, d)), rng.normal(size=(depth, d, d)), rng.normal(size=depth)
    brute = np.zeros((d, d))
    for r in range(1, depth + 1):
        for layers in combinations(range(depth), r):
            product = np.eye(d)
            for layer in layers:
                product = product @ S @ B[layer]
            brute += (-1) ** (r - 1) * m[r - 1] / depth**r * product
    fast = covariance_polynomial(S, B, m)
    np.testing.assert_allclose(fast, brute, rtol=0, atol=TIGHT * (np.abs(brute).max() + 1))


def test_covariance_polynomial_is_batched_over_leading_axes():
    rng = np.random.default_rng(0)
    S, B, m = rng.normal(size=(3, 2, 4, 4)), rng.normal(size=(5, 4, 4)), rng.normal(size=5)
    batched = covariance_polynomial(S, B, m)
    assert batched.shape == (3, 2, 4, 4)
    for i in range(3):
        for j in range(2):
            np.testing.assert_allclose(batched[i, j], covariance_polynomial(S[i, j], B, m), rtol=TIGHT, atol=TIGHT)


def test_effective_qk_reproduces_the_attention_scores():
    rng = np.random.default_rng(1)
    d, N, P = 3, 5, 4
    W_x, W_q, W_k = rng.normal(size=(N, d)), rng.normal(size=(2, N, N)), rng.normal(size=(2, N, N))
    X = rng.normal(size=(d, P))
    B = effective_qk(W_x, W_q, W_k)
    for layer in range(2):
        scores = (W_q[layer] @ W_x @ X).T @ (W_k[layer] @ W_x @ X) / N  # (QᵀK)_ij / N
        np.testing.assert_allclose(scores, (X.T @ B[layer] @ X).T, rtol=TIGHT, atol=TIGHT)


def test_readout_coefficients_are_W_o_times_powers_of_W_v_times_W_y():
    rng = np.random.default_rng(2)
    W_o, W_v, W_y = rng.normal(size=(1, 4)), rng.normal(size=(4, 4)), rng.normal(size=(4, 1))
    m = readout_coefficients(W_o, W_v, W_y, 5)
    expected = [(W_o @ np.linalg.matrix_power(W_v, r) @ W_y).item() for r in range(1, 6)]
    np.testing.assert_allclose(m, expected, rtol=TIGHT)


def test_population_loss_is_the_eq_26_trace_for_the_repeated_update():
    # B_ℓ = κI and W_v W_y = v W_y make 𝒫_L(Σ) = 1 - (1 - γΣ/L)^L with γ = κv (eqs. 27, 33)
    spectrum = PowerLawSpectrum(a=1.5, b=0.5, d=6)
    rng = np.random.default_rng(3)
    rotation, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    sigma, omega = spectrum.covariances(rotation)
    depth, kappa, v = 4, 1.3, 0.9
    B = np.stack([kappa * np.eye(6)] * depth)
    m = v ** np.arange(1, depth + 1)
    residual_matrix = np.eye(6) - covariance_polynomial(sigma, B, m)
    trace_loss = np.trace(omega @ residual_matrix @ sigma @ residual_matrix.T)  # E_{β,q}[(βᵀ 𝒟 q)²]
    residual = (1 - kappa * v * spectrum.eigenvalues / depth) ** depth
    assert population_loss(residual, spectrum) == pytest.approx(trace_loss, rel=TIGHT)
    assert constrained_loss(depth, spectrum, gamma=kappa * v) == pytest.approx(trace_loss, rel=TIGHT)
    assert population_loss(np.stack([residual, 2 * residual]), spectrum).tolist() == pytest.approx(
        [trace_loss, 4 * trace_loss], rel=TIGHT
    )


# ------------------------------------------------------------------ symbolic


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5])
def test_symbolic_polynomial_equals_the_symbolic_f_recursion_term_by_term(depth):
    from_recursion = symbolic_readout(depth)
    from_polynomial = sp.expand(BETA_T * symbolic_covariance_polynomial(depth) * QUERY)
    assert set(sp.Add.make_args(from_recursion)) == set(sp.Add.make_args(from_polynomial))
    assert len(sp.Add.make_args(from_polynomial)) == 2**depth - 1


def test_symbolic_forms_reproduce_the_one_and_two_layer_expansions():
    S, B1, B2 = S_MATRIX, qk_symbol(1), qk_symbol(2)
    m1, m2 = readout_symbol(1), readout_symbol(2)
    # L = 1: 𝒫_1(S) = m_1 S B_1; L = 2: 𝒫_2(S) = (m_1/2)(S B_1 + S B_2) - (m_2/4) S B_1 S B_2
    assert sp.expand(symbolic_covariance_polynomial(1).subs(s.L, 1) - m1 * S * B1) == 0
    two = m1 / 2 * (S * B1 + S * B2) - m2 / 4 * S * B1 * S * B2
    assert sp.expand(symbolic_covariance_polynomial(2).subs(s.L, 2) - two) == 0
    # the recursion steps: F_1 = F_0 - (1/L) W_v F_0 S B_1, F_2 adds -(1/L) W_v F_0 S B_2 + (1/L²) W_v² F_0 S B_1 S B_2
    F0 = W_Y * BETA_T
    F = symbolic_f_recursion(2)
    assert sp.expand(F[1] - (F0 - W_V * F0 * S * B1 / s.L)) == 0
    expected = F0 - W_V * F0 * S * (B1 + B2) / s.L + W_V**2 * F0 * S * B1 * S * B2 / s.L**2
    assert sp.expand(F[2] - expected) == 0


def _evaluate_noncommutative(expression, matrices, scalars, size):
    """Numeric value of a sum of products of non-commuting symbols (matrices) and scalars."""
    total = np.zeros((size, size))
    for term in sp.Add.make_args(sp.expand(expression)):
        commuting, factors = term.args_cnc()
        product = np.eye(size)
        for factor in factors:
            base, power = (factor.base, int(factor.exp)) if isinstance(factor, sp.Pow) else (factor, 1)
            product = product @ np.linalg.matrix_power(matrices[base], power)
        total += float(sp.Mul(*commuting).subs(scalars)) * product
    return total


def test_symbolic_polynomial_evaluates_to_the_numeric_recursion():
    rng = np.random.default_rng(4)
    depth, d = 4, 3
    S, B, m = rng.normal(size=(d, d)), rng.normal(size=(depth, d, d)), rng.normal(size=depth)
    matrices = {S_MATRIX: S, **{qk_symbol(i + 1): B[i] for i in range(depth)}}
    scalars = {s.L: depth, **{readout_symbol(r + 1): m[r] for r in range(depth)}}
    symbolic = _evaluate_noncommutative(symbolic_covariance_polynomial(depth), matrices, scalars, d)
    np.testing.assert_allclose(covariance_polynomial(S, B, m), symbolic, rtol=0, atol=TIGHT * np.abs(symbolic).max())


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: covariance_polynomial(np.eye(3), np.ones((2, 3, 3)), np.ones(3)), "m"),
        (lambda: covariance_polynomial(np.eye(3), np.ones((2, 4, 4)), np.ones(2)), "B"),
        (lambda: covariance_polynomial(np.ones((3, 2)), np.ones((2, 2, 2)), np.ones(2)), "S"),
        (lambda: covariance_polynomial(np.full((2, 2), np.nan), np.ones((1, 2, 2)), np.ones(1)), "S"),
        (lambda: f_recursion(np.eye(2), np.ones((2, 2, 2)), np.eye(3), np.ones(3), np.ones(2), 3), "depth"),
        (lambda: f_recursion(np.eye(2), np.ones((2, 2, 2)), np.eye(3), np.ones(3), np.ones(3), 2), "beta"),
        (lambda: f_recursion(np.eye(2), np.ones((2, 2, 2)), np.eye(3), np.ones(2), np.ones(2), 2), "W_y"),
        (lambda: readout_coefficients(np.ones(3), np.ones((3, 2)), np.ones(3), 2), "W_v"),
        (lambda: readout_coefficients(np.ones(3), np.eye(3), np.ones(3), 0), "depth"),
        (lambda: effective_qk(np.ones((3, 2)), np.ones((2, 4, 4)), np.ones((2, 4, 4))), "W_q"),
        (lambda: population_loss(np.ones(3), PowerLawSpectrum(1, 1, 4)), "residual_values"),
        (lambda: symbolic_covariance_polynomial(9), "depth"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: readout_coefficients(np.ones(3), np.eye(3), np.ones(3), 2.0), "depth"),
        (lambda: population_loss(np.ones(4), [1.0, 0.5]), "spectrum"),
        (lambda: symbolic_f_recursion("3"), "depth"),
        (lambda: covariance_polynomial("S", np.ones((1, 2, 2)), np.ones(1)), "S"),
    ],
)
def test_wrong_types_raise_type_error_naming_the_argument(call, name):
    with pytest.raises(TypeError, match=name):
        call()
