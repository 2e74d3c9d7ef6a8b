"""The one joint bootstrap: the same replicates, bit for bit, whatever order the sums are taken in."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.experiments.study.certified.bootstrap import context_weights, replicates, weighted_sums


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 6), contexts=st.integers(1, 300),
       magnitude=st.sampled_from([1e-6, 1.0, 1e3, 1e8]))
def test_weighted_sums_do_not_depend_on_the_order_of_the_contexts(seed, rows, contexts, magnitude):
    """BLAS adds in an order that depends on the CPU kernel: the exact sums must not notice any order."""
    rng = np.random.default_rng(seed)
    values = magnitude * rng.exponential(size=(rows, contexts))
    weights = context_weights(rng, contexts, 7)
    order = rng.permutation(contexts)
    first = weighted_sums(values, weights)
    assert np.array_equal(first, weighted_sums(values[:, order], weights[order]))
    # one column at a time (a different BLAS path) gives the same bits too
    assert np.array_equal(first, np.hstack([weighted_sums(values, weights[:, [j]]) for j in range(7)]))
    np.testing.assert_allclose(first, values @ weights, rtol=1e-12)


def test_weighted_sums_equal_the_exact_rational_sum_of_the_rounded_values():
    from fractions import Fraction

    rng = np.random.default_rng(3)
    values, weights = rng.random((2, 40)) * 7.3, context_weights(rng, 40, 3)
    out = weighted_sums(values, weights)
    for i in range(2):
        for j in range(3):
            exact = sum(Fraction(float(v)) * int(w) for v, w in zip(values[i], weights[:, j]))
            largest = Fraction(float(values[i].max())) * 40  # the largest possible sum
            assert abs(Fraction(float(out[i, j])) - exact) <= largest * 40 * Fraction(2) ** -53


def test_a_row_with_a_non_finite_value_keeps_its_plain_product():
    values = np.array([[1.0, np.inf], [1.0, 2.0]])
    out = weighted_sums(values, np.ones((2, 1)))
    assert np.isinf(out[0, 0]) and out[1, 0] == 3.0


def test_replicates_of_a_constant_cube_are_that_constant_exactly():
    cube = np.full((2, 3, 17), 0.1)
    boot = replicates(cube, np.random.default_rng(0), 50)
    np.testing.assert_allclose(boot, 0.1, rtol=17 * 3 * 2.0 ** -52)  # contexts × seeds × 2^-52 (the docstring)


@pytest.mark.parametrize("n", [1, 64])
def test_replicates_are_the_same_for_a_permuted_cube_and_weights(n):
    """Replicates over seeds and contexts: a shuffled copy of the contexts (and the same draws) gives the same bits."""
    cube = np.random.default_rng(5).random((3, 4, 33))
    a = replicates(cube, np.random.default_rng(9), n)
    b = replicates(cube.copy(order="F"), np.random.default_rng(9), n)
    assert np.array_equal(a, b)
