"""Claims about the shared data-law primitives (theory/data_law.py, paper eqs. (1)-(6), (44))."""

from __future__ import annotations

import numpy as np
import pytest

from theory.data_law import (
    cosine_similarity,
    eigenbasis_normal,
    haar_orthonormal,
    ranking_scores,
    rotate,
    select_top_k,
    similarity_terms,
    teacher_labels,
    top_k_indices,
    top_k_mean,
)
from tolerances import ROUNDOFF, rtol


def _context(seed=0, B=6, P=11, d=4):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((B, P, d)), rng.standard_normal((B, d))


def test_haar_frames_have_orthonormal_columns_with_and_without_a_batch():
    rng = np.random.default_rng(1)
    single = haar_orthonormal(7, 3, rng)
    batch = haar_orthonormal(4, 4, rng, batch_size=5)
    assert np.allclose(single.T @ single, np.eye(3), atol=rtol(ROUNDOFF))
    assert np.allclose(np.swapaxes(batch, 1, 2) @ batch, np.eye(4), atol=rtol(ROUNDOFF))
    with pytest.raises(ValueError, match="^n must"):
        haar_orthonormal(2, 3, rng)


@pytest.mark.parametrize("ranking", ["cosine", "inner_product"])
def test_rank_equivalent_scores_select_the_same_tokens_as_the_similarity(ranking):
    x, q = _context()
    exact = top_k_indices(x, q, 3, ranking=ranking)
    scores = ranking_scores(x, q[:, None, :], ranking)[:, 0, :]
    assert np.array_equal(np.sort(exact, axis=1), np.sort(select_top_k(scores, 3, ordered=False), axis=1))
    assert np.array_equal(exact, select_top_k(scores, 3))


def test_cosine_is_the_inner_product_over_the_norms():
    x, q = _context(2)
    dots, context_sq, test_sq = similarity_terms(x, q)
    assert np.allclose(cosine_similarity(x, q) * np.sqrt(context_sq * test_sq[:, None]), dots, atol=rtol(ROUNDOFF))


def test_the_top_k_label_mean_is_the_label_of_the_top_k_token_mean():
    # y* = βᵀt with t the mean of the selected tokens (eqs. 6, 41)
    x, q = _context(3)
    beta = np.random.default_rng(4).standard_normal(q.shape)
    chosen = top_k_indices(x, q, 4)
    tokens = top_k_mean(x, chosen[:, None, :])[:, 0, :]
    assert np.allclose(top_k_mean(teacher_labels(x, beta), chosen), np.sum(tokens * beta, axis=1), atol=rtol(ROUNDOFF))


def test_rotating_eigenbasis_draws_keeps_cosines_and_labels():
    rng = np.random.default_rng(5)
    lam = np.array([3.0, 1.0, 0.5])
    x = eigenbasis_normal(rng, (4, 9, 3), lam)
    q = eigenbasis_normal(rng, (4, 3), lam)
    beta = eigenbasis_normal(rng, (4, 3), np.ones(3))
    O = haar_orthonormal(3, 3, rng, batch_size=4)
    assert np.allclose(cosine_similarity(rotate(O, x), rotate(O, q)), cosine_similarity(x, q), atol=rtol(ROUNDOFF))
    assert np.allclose(teacher_labels(rotate(O, x), rotate(O, beta)), teacher_labels(x, beta), atol=rtol(ROUNDOFF))


# --------------------------------------------------------------------------- the float32 Gaussian (Box–Muller)
@pytest.mark.parametrize("shape", [(200_001,), (301, 333)])
def test_float32_standard_normal_is_standard_normal(shape):
    """Box–Muller draws: KS against N(0, 1), the radius² of each (cos, sin) pair against χ²₂, no pair correlation."""
    from scipy import stats

    from theory.data_law import standard_normal

    z = standard_normal(np.random.default_rng(12345), shape, np.float32)
    assert z.shape == shape and z.dtype == np.float32 and z.flags.c_contiguous and z.flags.writeable
    flat = z.ravel().astype(np.float64)
    assert stats.kstest(flat, "norm").pvalue > 1e-3
    half = flat.size // 2
    pairs_r2 = flat[:half] ** 2 + flat[(flat.size + 1) // 2 :][:half] ** 2
    assert stats.kstest(pairs_r2, "chi2", args=(2,)).pvalue > 1e-3
    assert abs(np.corrcoef(flat[:half], flat[(flat.size + 1) // 2 :][:half])[0, 1]) < 4 / np.sqrt(half)
    # the tails are there (a float32 radius would stop at 5.77σ; the float64 one reaches 8.5σ)
    big = standard_normal(np.random.default_rng(7), (4_000_000,), np.float32)
    assert np.mean(np.abs(big) > 3.0) == pytest.approx(2 * stats.norm.sf(3.0), rel=0.05)


def test_float64_standard_normal_is_numpys_ziggurat():
    from theory.data_law import standard_normal

    a = standard_normal(np.random.default_rng(3), (5, 4), np.float64)
    b = np.random.default_rng(3).standard_normal((5, 4))
    assert np.array_equal(a, b)


def test_standard_normal_reproducible_and_streams_differ():
    from theory.data_law import standard_normal

    a = standard_normal(np.random.default_rng(3), (1001,), np.float32)
    b = standard_normal(np.random.default_rng(3), (1001,), np.float32)
    c = standard_normal(np.random.default_rng(4), (1001,), np.float32)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


@pytest.mark.parametrize("stream", [2, 3])
@pytest.mark.parametrize("shape", [(200_001,), (301, 333)])
def test_fast_stream_float32_standard_normal_is_standard_normal(shape, stream):
    """Streams 2 and 3's in-place Box–Muller: KS against N(0, 1), radius² of each pair against χ²₂, tails to 3σ."""
    from scipy import stats

    from theory.data_law import standard_normal

    z = standard_normal(np.random.default_rng(54321), shape, np.float32, stream=stream)
    assert z.shape == shape and z.dtype == np.float32 and z.flags.c_contiguous and z.flags.writeable
    flat = z.ravel().astype(np.float64)
    assert stats.kstest(flat, "norm").pvalue > 1e-3
    half = flat.size // 2
    pairs_r2 = flat[:half] ** 2 + flat[(flat.size + 1) // 2 :][:half] ** 2
    assert stats.kstest(pairs_r2, "chi2", args=(2,)).pvalue > 1e-3
    big = standard_normal(np.random.default_rng(8), (4_000_000,), np.float32, stream=stream)
    assert np.mean(np.abs(big) > 3.0) == pytest.approx(2 * stats.norm.sf(3.0), rel=0.05)
    assert not np.array_equal(standard_normal(np.random.default_rng(8), (1001,), np.float32), big[:1001])


def test_stream_3_radius_is_stream_2_radius_to_float32_round_off():
    """Same uniforms, the logarithm in float32: each pair's R² and angle agree with stream 2's to round-off
    (a float32 uniform in the logarithm, or any other radius law, would not)."""
    from theory.data_law import standard_normal

    n = 60_000  # one block: the pairs are (i, i + n/2)
    two = standard_normal(np.random.default_rng(5), (n,), np.float32, stream=2).astype(np.float64)
    three = standard_normal(np.random.default_rng(5), (n,), np.float32, stream=3).astype(np.float64)
    half = n // 2
    r2_two, r2_three = two[:half] ** 2 + two[half:] ** 2, three[:half] ** 2 + three[half:] ** 2
    assert np.max(np.abs(r2_three - r2_two) / (1 + r2_two)) < 8 * np.finfo(np.float32).eps
    assert not np.array_equal(r2_two, r2_three)
    away = r2_two > 1e-6
    angle = np.arctan2(three[half:], three[:half]) - np.arctan2(two[half:], two[:half])
    assert np.max(np.abs(angle[away])) < 1e-5
