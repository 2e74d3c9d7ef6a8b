"""Claims about the softmax-head bounds B_1, B_L, B_∞ (theory.softmax_bounds)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import MC_SIGMAS, ROUNDOFF, rtol

from theory import PowerLawSpectrum
from theory.softmax_bounds import (
    HeadAllocation,
    allocation_loss_difference,
    allocation_losses,
    average_of_heads,
    head_outputs,
    softmax_bounds,
    softmax_head_bound,
)


def _moments(seed: int, T: int, n: int = 400):
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(n, T)) + rng.normal(size=(n, 1))  # correlated heads
    y = U @ rng.uniform(0, 1, T) / T + 0.5 * rng.normal(size=n)
    return U.T @ U / n, U.T @ y / n, float(y @ y / n)


def _exhaustive(G, h, m2, L):
    """Every allocation of L layers to T heads (with repeats), the optimal common gain for each."""
    T = h.size
    best = np.inf
    for combo in itertools.combinations_with_replacement(range(T), L):
        n = np.bincount(combo, minlength=T).astype(float)
        quad, lin = n @ G @ n, h @ n
        if quad > 0 and lin > 0:
            best = min(best, m2 - lin * lin / quad)
    return best


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), T=st.integers(2, 5), L=st.integers(1, 4))
def test_average_of_heads_finds_the_best_allocation_of_an_exhaustive_search(seed, T, L):
    G, h, m2 = _moments(seed, T)
    counts, gain, loss = average_of_heads(G, h, m2, L)
    assert counts.sum() == L and np.all(counts >= 0)
    assert loss == pytest.approx(_exhaustive(G, h, m2, L), rel=rtol(ROUNDOFF), abs=rtol(ROUNDOFF))
    n = counts.astype(float)  # the reported gain is optimal for the reported allocation
    assert gain == pytest.approx(float(h @ n) / float(n @ G @ n) * L, rel=rtol(ROUNDOFF))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), T=st.integers(2, 8))
def test_deeper_averages_are_never_worse_along_doublings_on_the_fitted_moments(seed, T):
    G, h, m2 = _moments(seed, T)
    losses, previous = [], None
    for L in (1, 2, 4, 8, 16):
        start = None if previous is None else previous * 2
        counts, _, loss = average_of_heads(G, h, m2, L, start)
        losses.append(loss)
        previous = counts
    assert all(b <= a + rtol(ROUNDOFF) * abs(a) for a, b in zip(losses, losses[1:]))


def test_bounds_are_ordered_single_average_mixture_beyond_noise():
    b = softmax_bounds(PowerLawSpectrum(0, 0, 8), 32, 2, depths=(1, 2, 8), n_contexts=4096, n_seeds=3, rng=1)
    assert b.at(1) == (b.single, b.single_se)
    for value, se in zip(b.average, b.average_se):
        assert value <= b.single + MC_SIGMAS * np.hypot(se, b.single_se)
        assert value >= b.mixture - MC_SIGMAS * np.hypot(se, b.mixture_se)
    assert b.mixture < b.target_second_moment


def test_seeds_are_independent_draws_and_give_a_standard_error():
    b = softmax_bounds(PowerLawSpectrum(0.5, 0, 8), 32, 2, depths=(1,), n_contexts=512, n_seeds=4, rng=2)
    singles = [s["single"] for s in b.per_seed]
    assert len(set(singles)) == 4 and np.isfinite(b.single_se) and b.single_se > 0
    within = [s["average_within_se"][0] for s in b.per_seed]
    expected = np.sqrt(max(np.var(singles, ddof=1), np.mean(np.square(within))) / 4)
    assert b.single_se == pytest.approx(expected, rel=rtol(ROUNDOFF))
    assert b.single_se >= np.std(singles, ddof=1) / 2 * (1 - rtol(ROUNDOFF))  # never below the seed spread


def test_single_head_agrees_with_the_half_split_single_head_bound():
    spectrum = PowerLawSpectrum(0, 0.5, 8)
    b = softmax_bounds(spectrum, 32, 2, depths=(1,), n_contexts=4096, n_seeds=4, rng=3)
    ref = softmax_head_bound(spectrum, 32, 2, n_contexts=16384, rng=4)
    assert abs(b.single - ref.single_head_loss) < MC_SIGMAS * np.hypot(b.single_se, ref.single_head_standard_error)


def test_rms_prenorm_with_an_orthonormal_input_map_is_exact_cosine():
    spectrum = PowerLawSpectrum(0, 0, 6)
    cosine = softmax_bounds(spectrum, 16, 2, depths=(1, 2), n_contexts=256, n_seeds=2, rng=5)
    rms = softmax_bounds(spectrum, 16, 2, depths=(1, 2), n_contexts=256, n_seeds=2, rng=5, similarity="prenorm",
                         width=6, norm="rms")
    assert rms.average == cosine.average and rms.mixture == cosine.mixture


def test_layer_norm_at_width_d_is_worse_than_exact_cosine():
    spectrum = PowerLawSpectrum(0, 0, 8)
    cosine = softmax_bounds(spectrum, 32, 2, depths=(1,), n_contexts=4096, n_seeds=3, rng=6)
    layer = softmax_bounds(spectrum, 32, 2, depths=(1,), n_contexts=4096, n_seeds=3, rng=7, similarity="prenorm",
                           width=8, norm="layer")
    assert layer.single - cosine.single > MC_SIGMAS * np.hypot(layer.single_se, cosine.single_se)


@pytest.mark.parametrize("kwargs, name", [
    (dict(k=40), "k"), (dict(norm="batch"), "norm"), (dict(similarity="prenorm"), "width"),
    (dict(similarity="prenorm", width=2), "width"), (dict(width=8), "width"), (dict(similarity="dot"), "similarity"),
    (dict(n_seeds=0), "n_seeds"), (dict(depths=(0,)), "depths"),
])
def test_bad_bound_arguments_raise_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        softmax_bounds(PowerLawSpectrum(0, 0, 4), 8, **{"k": 2, "n_contexts": 32, **kwargs})


def test_allocation_losses_agree_with_a_direct_head_average_over_the_training_sampler():
    """The population loss of fixed heads (theory's eigenbasis draws) equals, within Monte-Carlo error, the same
    average of heads evaluated on contexts of ``numerics.tasks.sample`` (rotated frame, another sampler)."""
    from numerics.tasks import sample

    spectrum = PowerLawSpectrum(0.5, 0.25, 4)
    heads = [HeadAllocation(depth=1, temperatures=(6.0,), counts=(1,), gain=1.1),
             HeadAllocation(depth=3, temperatures=(3.0, 12.0), counts=(2, 1), gain=1.2)]
    means, ses = allocation_losses(heads, spectrum, 8, 2, n_contexts=4096, n_seeds=6, rng=101)
    rng = np.random.default_rng(202)
    batches = [sample("difficult", spectrum, 8, 4096, rng, k=2) for _ in range(6)]
    for allocation, mean, se in zip(heads, means, ses):
        per_set = []
        for batch in batches:
            u = head_outputs(batch.context_x, batch.context_y, batch.test_x, allocation.layer_temperatures())
            per_set.append(np.mean((allocation.gain * u.mean(axis=1) - batch.target) ** 2))
        direct, direct_se = np.mean(per_set), np.std(per_set, ddof=1) / np.sqrt(len(per_set))
        assert abs(mean - direct) < MC_SIGMAS * np.hypot(se, direct_se), (allocation, mean, direct)


def test_allocation_losses_of_fitted_heads_reach_their_bound_on_fresh_contexts():
    """B_L is an expressible loss: its allocation, evaluated on independent contexts, scores B_L within MC error."""
    spectrum = PowerLawSpectrum(0.0, 0.0, 4)
    bounds = softmax_bounds(spectrum, 8, 2, depths=(1, 2, 4), n_contexts=4096, n_seeds=3, rng=7)
    allocations = [bounds.allocation(L, seed) for L in bounds.depths for seed in range(3)]
    means, ses = allocation_losses(allocations, spectrum, 8, 2, n_contexts=4096, n_seeds=4, rng=8)
    for i, L in enumerate(bounds.depths):
        fresh = np.mean(means[3 * i : 3 * i + 3])
        fresh_se = np.sqrt(np.mean(np.square(ses[3 * i : 3 * i + 3])))  # the three share their contexts
        value, se = bounds.at(L)
        assert abs(fresh - value) < MC_SIGMAS * np.hypot(se, fresh_se), (L, fresh, value)


@pytest.mark.parametrize(
    ("allocations", "kwargs", "error", "match"),
    [
        ([], {}, ValueError, "allocations must hold"),
        (["heads"], {}, TypeError, r"allocations\[0\]"),
        ([HeadAllocation(depth=1, temperatures=(1.0,), counts=(1,), gain=1.0, similarity="prenorm")], {}, ValueError,
         "exact cosine"),
        ([HeadAllocation(depth=1, temperatures=(1.0,), counts=(1,), gain=1.0)], {"k": 9}, ValueError, "k must be"),
        ([HeadAllocation(depth=1, temperatures=(1.0,), counts=(1,), gain=1.0)], {"n_seeds": 1}, ValueError, "n_seeds"),
    ],
)
def test_allocation_losses_refuse_bad_input_naming_the_argument(allocations, kwargs, error, match):
    with pytest.raises(error, match=match):
        allocation_losses(allocations, PowerLawSpectrum(0, 0, 4), 8, **{"n_contexts": 64, **kwargs})


_CLOSE = (HeadAllocation(depth=2, temperatures=(4.0, 10.0), counts=(1, 1), gain=1.1),
          HeadAllocation(depth=4, temperatures=(4.0, 5.0, 12.0), counts=(2, 1, 1), gain=1.1))


def test_allocation_loss_difference_is_the_paired_difference_of_the_losses_on_the_same_contexts():
    """Same seed, same contexts: the paired difference is the difference of the two losses to round-off, and
    pairing resolves it better than either loss alone."""
    spectrum = PowerLawSpectrum(0.0, 0.25, 4)
    diff, diff_se = allocation_loss_difference(*_CLOSE, spectrum, 8, 2, n_contexts=2048, n_seeds=4, rng=31)
    (first, second), ses = allocation_losses(_CLOSE, spectrum, 8, 2, n_contexts=2048, n_seeds=4, rng=31)
    assert diff == pytest.approx(first - second, rel=0, abs=rtol(ROUNDOFF) * first)
    assert 0 < diff_se < 0.5 * min(ses)


def test_allocation_loss_difference_agrees_with_a_direct_paired_difference_over_the_training_sampler():
    """Theory's eigenbasis draws against ``numerics.tasks.sample`` (rotated frame): the same paired difference."""
    from numerics.tasks import sample

    spectrum = PowerLawSpectrum(0.5, 0.25, 4)
    diff, diff_se = allocation_loss_difference(*_CLOSE, spectrum, 8, 2, n_contexts=4096, n_seeds=6, rng=103)
    rng = np.random.default_rng(204)
    per_set = []
    for _ in range(6):
        batch = sample("difficult", spectrum, 8, 4096, rng, k=2)
        errors = [(a.gain * head_outputs(batch.context_x, batch.context_y, batch.test_x,
                                         a.layer_temperatures()).mean(axis=1) - batch.target) ** 2 for a in _CLOSE]
        per_set.append(np.mean(errors[0] - errors[1]))
    direct, direct_se = np.mean(per_set), np.std(per_set, ddof=1) / np.sqrt(len(per_set))
    assert abs(diff - direct) < MC_SIGMAS * np.hypot(diff_se, direct_se), (diff, direct)


@pytest.mark.parametrize(("first", "second", "error", "match"), [
    ("heads", _CLOSE[0], TypeError, "first must be a HeadAllocation"),
    (_CLOSE[0], HeadAllocation(depth=1, temperatures=(1.0,), counts=(1,), gain=1.0, similarity="prenorm"),
     ValueError, "second must read exact cosine"),
])
def test_allocation_loss_difference_refuses_bad_input_naming_the_argument(first, second, error, match):
    with pytest.raises(error, match=match):
        allocation_loss_difference(first, second, PowerLawSpectrum(0, 0, 4), 8, n_contexts=64)
