"""Averages of cosine heads are depth-L models of the class: the bound B_L is a reachable loss (eqs. 59-60)."""

import numpy as np
import pytest
from tolerances import ROUNDOFF, rtol

from numerics.models import LAYER_NORM_EPS, get_model, head_average_params
from numerics.models.heads import orthonormal_centred
from numerics.tasks import sample
from theory import PowerLawSpectrum
from theory.softmax_bounds import HeadAllocation, head_outputs, softmax_bounds

HEADS = HeadAllocation(depth=4, temperatures=(3.0, 9.0, 25.0), counts=(1, 2, 1), gain=1.3)


def _batch(d=5, P=12, size=64, seed=0):
    return sample("difficult", PowerLawSpectrum(0.5, 0.5, d), P, size, np.random.default_rng(seed), k=2)


def _head_average(allocation, batch, scores):
    """``g (1/L) Σ_ℓ softmax(τ_ℓ s)·y`` from given similarity scores (B, P), float64."""
    taus = allocation.layer_temperatures()
    logits = taus[:, None, None] * scores[None]
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
    reads = (weights * batch.context_y[None]).sum(-1) / weights.sum(-1)
    return allocation.gain * reads.mean(axis=0)


@pytest.mark.parametrize("model", ["nonlinear", "nonlinear_rms"])
def test_head_weights_compute_the_average_of_cosine_heads(model):
    batch = _batch()
    params = head_average_params(HEADS, 5, 9, np.random.default_rng(1), model=model, x_scale=1e4)
    cosine = (np.einsum("bpd,bd->bp", batch.context_x, batch.test_x)
              / np.linalg.norm(batch.context_x, axis=-1) / np.linalg.norm(batch.test_x, axis=-1)[:, None])
    exact = _head_average(HEADS, batch, cosine)
    fast = get_model(model).forward(params, batch).prediction
    reference = get_model(model).reference_forward(params, batch)
    np.testing.assert_allclose(fast, exact, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))
    np.testing.assert_allclose(reference, exact, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))
    # theory's own head outputs (the bound's u_τ) give the same average
    U = head_outputs(batch.context_x, batch.context_y, batch.test_x, np.asarray(HEADS.temperatures))
    np.testing.assert_allclose(HEADS.gain * U @ np.asarray(HEADS.counts) / HEADS.depth, exact,
                               rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))


def test_head_weights_at_unit_scale_differ_from_cosine_only_by_the_norm_eps():
    batch = _batch()
    N = 9
    params = head_average_params(HEADS, 5, N, np.random.default_rng(2))
    # the LayerNorm similarity with its eps, computed independently: ĥ = h / sqrt(|h|²/N + eps) (mean of h is 0)
    h_ctx, h_test = batch.context_x @ params["W_x"].T, batch.test_x @ params["W_x"].T
    r_ctx = 1 / np.sqrt((h_ctx**2).sum(-1) / N + LAYER_NORM_EPS)
    r_test = 1 / np.sqrt((h_test**2).sum(-1) / N + LAYER_NORM_EPS)
    scores = np.einsum("bpn,bn->bp", h_ctx, h_test) * r_ctx * r_test[:, None] / N
    np.testing.assert_allclose(get_model("nonlinear").forward(params, batch).prediction,
                               _head_average(HEADS, batch, scores), rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))


def test_head_weights_keep_the_centring_a_no_op():
    U = orthonormal_centred(9, 5, np.random.default_rng(3))
    np.testing.assert_allclose(U.T @ U, np.eye(5), atol=rtol(ROUNDOFF))
    np.testing.assert_allclose(np.ones(9) @ U, 0, atol=rtol(ROUNDOFF))


@pytest.mark.parametrize("N", [4, 5])
def test_layer_norm_heads_need_N_above_d(N):
    # at N = d the columns of W_x span R^N, so they cannot all be orthogonal to the ones vector
    with pytest.raises(ValueError, match="N must be > d"):
        head_average_params(HEADS, 5, N, np.random.default_rng(0))


def test_rms_heads_allow_N_equal_d():
    params = head_average_params(HEADS, 5, 5, np.random.default_rng(0), model="nonlinear_rms")
    assert params["W_x"].shape == (5, 5)


def test_allocation_rejects_counts_that_miss_the_depth():
    with pytest.raises(ValueError, match="counts must add up to depth"):
        HeadAllocation(depth=3, temperatures=(1.0,), counts=(2,), gain=1.0)


def test_bound_allocation_written_as_weights_reaches_its_bound():
    """B_L's own allocation, as weights, has the loss B_L on fresh contexts (within Monte Carlo error)."""
    spectrum = PowerLawSpectrum(0.0, 0.0, 4)
    bounds = softmax_bounds(spectrum, 16, 2, depths=(1, 2), n_contexts=4096, n_seeds=2, rng=5)
    heads = bounds.allocation(2)
    params = head_average_params(heads, 4, 8, np.random.default_rng(6), x_scale=1e3)
    batch = sample("difficult", spectrum, 16, 8192, np.random.default_rng(7), k=2)
    errors = (get_model("nonlinear").forward(params, batch).prediction - batch.target) ** 2
    value, se = errors.mean(), errors.std(ddof=1) / np.sqrt(errors.size)
    B2, B2_se = bounds.at(2)
    assert abs(value - B2) < 3 * np.hypot(se, B2_se)
