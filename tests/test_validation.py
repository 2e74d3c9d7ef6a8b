"""Claims about the shared argument checks (theory/validation.py): one contract per kind of argument."""

from __future__ import annotations

import numpy as np
import pytest

from theory.validation import check_dtype, check_generator, check_positive_int, check_top_k


def test_a_generator_is_returned_as_is_with_its_stream_untouched():
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    assert check_generator(rng) is rng
    assert rng.bit_generator.state == state


@pytest.mark.parametrize("seed", [0, 7, np.int64(7)])
def test_an_allowed_seed_gives_the_stream_of_default_rng(seed):
    drawn = check_generator(seed, allow_seed=True).standard_normal(5)
    assert np.array_equal(drawn, np.random.default_rng(int(seed)).standard_normal(5))


@pytest.mark.parametrize(
    "value, options, error",
    [
        (3, {}, TypeError),  # a seed where only generators are accepted
        (None, {}, TypeError),
        (None, {"allow_seed": True}, TypeError),
        (True, {"allow_seed": True}, TypeError),  # a bool is no seed
        (1.0, {"allow_seed": True}, TypeError),
        ("seed", {"allow_seed": True, "allow_none": True}, TypeError),
        (-1, {"allow_seed": True}, ValueError),  # right type, value not allowed
    ],
)
def test_refused_generators_raise_naming_the_argument(value, options, error):
    with pytest.raises(error, match=r"^source must"):
        check_generator(value, "source", **options)


def test_none_is_accepted_only_when_allowed():
    assert check_generator(None, allow_none=True) is None


def test_dtype_and_int_checks_name_the_argument():
    assert check_dtype(np.float64) is np.float64
    with pytest.raises(ValueError, match=r"^dtype must"):
        check_dtype(np.int64)
    with pytest.raises(TypeError, match=r"^size must"):
        check_positive_int("size", 2.0)
    with pytest.raises(ValueError, match=r"^size must"):
        check_positive_int("size", 0)


@pytest.mark.parametrize("k, error", [(0, ValueError), (5, ValueError), (2.0, TypeError), (True, TypeError)])
def test_top_k_must_lie_between_one_and_P(k, error):
    assert check_top_k(4, 4) == 4
    with pytest.raises(error, match=r"^k must be an integer in \[1, P\] = \[1, 4\]"):
        check_top_k(k, 4)
