"""The linear model's Krylov engine (numerics/models/linear.py) against the dense ``N x d`` recursion.

Claims: the forward, the loss and every gradient of the Krylov coordinates equal the dense ``Y``
recursion to round-off, for any weights (generic ``W_v``; ``W_v = I``, where the Krylov space is one
direction; ``W_y = 0`` or ``W_o = 0``, where it is empty), at depths below and above ``N``; the
Arnoldi basis is orthonormal and satisfies the Arnoldi relation; ``label_readout`` equals the ``d``
unit-teacher forward passes; in float32 the engine is as accurate as the dense recursion in float32.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.models import linear
from numerics.tasks import sample
from theory.spectra import PowerLawSpectrum
from tolerances import ROUNDOFF, rtol


def _weights(rng, d, N, L, *, dtype=np.float64, spread=0.3, gamma=1.0):
    """Generic weights: every matrix perturbed, ``B_ℓ ≈ γ I`` plus noise (a trained-looking linear model)."""
    params = linear.init_params(d, N, L, rng, qk_scale=gamma * N)
    for key, value in params.items():
        params[key] = np.asarray(value + spread * np.sqrt(gamma) * rng.standard_normal(value.shape) / np.sqrt(N),
                                 dtype=dtype)
    return params


def _batch(rng, d, P, B, task="difficult", dtype=np.float64):
    return sample(task, PowerLawSpectrum(1.0, 0.5, d), P, B, rng, k=min(2, P), dtype=dtype)


def _assert_same_loss_and_grads(params, batch, tol):
    loss, grads = linear.loss_and_grad(params, batch)
    dense_loss, dense_grads = linear._dense_loss_and_grad(params, batch)
    assert loss == pytest.approx(dense_loss, rel=tol, abs=tol)
    for key in linear.PARAMETERS:
        scale = np.abs(dense_grads[key]).max() + tol
        np.testing.assert_allclose(grads[key], dense_grads[key], rtol=0, atol=tol * scale, err_msg=key)
        assert grads[key].dtype == params[key].dtype and grads[key].shape == params[key].shape


@settings(max_examples=40, deadline=None)
@given(d=st.integers(1, 5), extra=st.integers(0, 4), L=st.integers(1, 12), P=st.integers(1, 9),
       task=st.sampled_from(["easy", "difficult"]), seed=st.integers(0, 2**32 - 1))
def test_krylov_loss_and_gradients_equal_the_dense_recursion(d, extra, L, P, task, seed):
    """Depths with L + 1 < N (a proper Krylov subspace) and L + 1 >= N (the whole space) alike."""
    rng = np.random.default_rng(seed)
    N = d + extra
    params = _weights(rng, d, N, L)
    _assert_same_loss_and_grads(params, _batch(rng, d, P, 3, task), rtol(ROUNDOFF))


@pytest.mark.parametrize("case", ["identity_values", "zero_W_y", "zero_W_o", "identity_and_zero_W_y"])
def test_degenerate_krylov_spaces_give_the_dense_result(case):
    """W_v = I (one Krylov direction: the breakdown branch), W_y = 0 or W_o = 0 (no direction)."""
    rng = np.random.default_rng(7)
    d, N, L = 3, 6, 9
    params = _weights(rng, d, N, L)
    if "identity" in case:
        params["W_v"] = np.eye(N)
    if "W_y" in case:
        params["W_y"] = np.zeros_like(params["W_y"])
    if "W_o" in case:
        params["W_o"] = np.zeros_like(params["W_o"])
    batch = _batch(rng, d, 7, 4)
    expected_rank = {"identity_values": 1, "zero_W_y": 0, "zero_W_o": min(L + 1, N), "identity_and_zero_W_y": 0}[case]
    assert linear._forward_basis(params, L).Q.shape == (N, expected_rank)
    np.testing.assert_allclose(linear.forward(params, batch).prediction, linear.reference_forward(params, batch),
                               rtol=0, atol=rtol(ROUNDOFF))
    _assert_same_loss_and_grads(params, batch, rtol(ROUNDOFF))


@pytest.mark.parametrize("N, size", [(8, 3), (8, 8), (8, 20), (1, 4)])
def test_arnoldi_basis_is_orthonormal_and_satisfies_the_arnoldi_relation(N, size):
    rng = np.random.default_rng(N + size)
    A = rng.standard_normal((N, N))
    start = rng.standard_normal(N)
    Q, H, norm = linear._krylov_basis(A, start, size)
    R = min(size, N)
    assert Q.shape == (N, R) and H.shape == (R, R) and norm == pytest.approx(np.linalg.norm(start))
    np.testing.assert_allclose(Q.T @ Q, np.eye(R), rtol=0, atol=rtol(ROUNDOFF))
    np.testing.assert_allclose(Q[:, 0], start / norm, rtol=0, atol=rtol(ROUNDOFF))
    # A Q[:, :R-1] = Q H[:, :R-1] (all R columns when the basis spans the space)
    cols = R if R == N else R - 1
    np.testing.assert_allclose(A @ Q[:, :cols], Q @ H[:, :cols], rtol=0, atol=rtol(ROUNDOFF) * np.abs(A).max())
    # and Q spans the Krylov vectors start, A start, ..
    krylov = np.stack([np.linalg.matrix_power(A, j) @ start for j in range(R)], axis=1)
    np.testing.assert_allclose(Q @ (Q.T @ krylov), krylov, rtol=0, atol=rtol(ROUNDOFF) * np.abs(krylov).max())


def test_arnoldi_stops_at_an_invariant_subspace():
    """A block-diagonal A with the start vector in a 2-dimensional invariant block: R = 2, A Q = Q H exactly."""
    rng = np.random.default_rng(3)
    A = np.zeros((6, 6))
    A[:2, :2] = rng.standard_normal((2, 2))
    A[2:, 2:] = rng.standard_normal((4, 4))
    start = np.r_[rng.standard_normal(2), np.zeros(4)]
    Q, H, _ = linear._krylov_basis(A, start, 6)
    assert Q.shape == (6, 2)
    np.testing.assert_allclose(A @ Q, Q @ H, rtol=0, atol=rtol(ROUNDOFF))


@pytest.mark.parametrize("task", ["easy", "difficult"])
def test_label_readout_equals_the_unit_teacher_forward_passes(task):
    rng = np.random.default_rng(11)
    d, N, L = 4, 7, 5
    params = _weights(rng, d, N, L)
    batch = _batch(rng, d, 9, 6, task)
    X = np.asarray(batch.context_x)
    passes = np.stack([linear.reference_forward(params, dataclasses.replace(batch, context_y=np.ascontiguousarray(X[:, :, j])))
                       for j in range(d)], axis=1)
    np.testing.assert_allclose(linear.label_readout(params, batch), passes, rtol=0,
                               atol=rtol(ROUNDOFF) * np.abs(passes).max())


def test_float32_krylov_is_as_accurate_as_the_float32_dense_recursion():
    """Deep (L = 48 > N = 16), near the stability edge (B_ℓ ≈ 1.8 I / λ_1): the orthogonal change of basis
    must not lose more accuracy than the dense recursion does in the same precision."""
    rng = np.random.default_rng(5)
    d, N, L = 12, 16, 48
    params64 = _weights(rng, d, N, L, gamma=1.8, spread=0.2)
    batch64 = _batch(rng, d, 64, 16)
    params32 = {key: value.astype(np.float32) for key, value in params64.items()}
    batch32 = dataclasses.replace(batch64, **{f: np.asarray(getattr(batch64, f), dtype=np.float32)
                                             for f in ("context_x", "context_y", "test_x", "target")})
    loss64, grads64 = linear._dense_loss_and_grad(params64, batch64)
    errors = {}
    for name, engine in (("krylov", linear.loss_and_grad), ("dense", linear._dense_loss_and_grad)):
        loss32, grads32 = engine(params32, batch32)
        errors[name] = max([abs(loss32 - loss64) / loss64] + [
            float(np.abs(grads32[k] - grads64[k]).max() / np.abs(grads64[k]).max()) for k in linear.PARAMETERS])
    assert errors["krylov"] <= 10 * errors["dense"] + rtol(ROUNDOFF, np.float32), errors
    assert errors["krylov"] <= 100 * rtol(ROUNDOFF, np.float32), errors
