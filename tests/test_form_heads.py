"""Any average of heads D_ℓ is a depth-L model of the class: the model computes the theory's average (eqs. 59-60)."""

import numpy as np
import pytest
from tolerances import ROUNDOFF, rtol

from numerics.models import form_average_params, get_model, head_average_params
from numerics.tasks import sample
from theory import PowerLawSpectrum
from theory.head_families import Contexts, FittedFormHeads, form_reads, random_symmetric
from theory.softmax_bounds import HeadAllocation

D, N, P, GAIN = 5, 9, 12, 1.3
#: large enough that the norm's eps moves the logits below round-off (see numerics.models.heads)
EXACT_SCALE = 1e4


def _batch(seed=0, size=64):
    return sample("difficult", PowerLawSpectrum(0.5, 0.5, D), P, size, np.random.default_rng(seed), k=2)


def _contexts(batch) -> Contexts:
    """The theory's contexts of the same batch: the model reads raw ``x``, the theory ``x̂ = x/|x|``."""
    unit = batch.context_x / np.linalg.norm(batch.context_x, axis=-1, keepdims=True)
    test_unit = batch.test_x / np.linalg.norm(batch.test_x, axis=-1, keepdims=True)
    return Contexts(unit, test_unit, np.asarray(batch.context_y), np.asarray(batch.target))


def _theory_average(forms, gain, batch):
    """``g (1/L) Σ_ℓ u_{D_ℓ}`` from :func:`theory.head_families.form_reads`, float64."""
    return gain * form_reads(forms, _contexts(batch), dtype=np.float64).mean(axis=1)


def _non_symmetric(rng):
    return 3.0 * rng.standard_normal((4, D, D))


def _random_symmetric(rng):
    taus = np.array([4.0, 16.0, 4.0, 16.0])  # τ_ℓ alternating, as the random forms
    return taus[:, None, None] * (np.eye(D) + 0.5 * random_symmetric(4, D, rng))


def _cosine(rng):
    return np.array([3.0, 9.0, 9.0, 25.0])[:, None, None] * np.eye(D)


def _combination(rng):
    # atoms and a diffuse class together (the combination branch), drawn from a fitted-form law
    return FittedFormHeads((4.0, 16.0, 8.0), (0.0, 0.0, 0.5), (0.3, 0.3, 0.4)).sample_forms(6, D, rng)[0]


FORMS = {"non_symmetric": _non_symmetric, "random_symmetric": _random_symmetric, "cosine": _cosine,
         "combination": _combination}


@pytest.mark.parametrize("model", ["nonlinear", "nonlinear_rms"])
@pytest.mark.parametrize("kind", sorted(FORMS))
def test_form_weights_compute_the_theory_average_of_heads(model, kind):
    forms = FORMS[kind](np.random.default_rng(11))
    batch = _batch()
    params = form_average_params(forms, GAIN, D, N, np.random.default_rng(1), model=model, x_scale=EXACT_SCALE)
    exact = _theory_average(forms, GAIN, batch)
    fast = get_model(model).forward(params, batch).prediction
    reference = get_model(model).reference_forward(params, batch)
    np.testing.assert_allclose(fast, exact, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))
    np.testing.assert_allclose(reference, exact, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))


@pytest.mark.parametrize("model", ["nonlinear", "nonlinear_rms"])
def test_non_symmetric_forms_are_read_with_the_test_token_as_query(model):
    """The model computes x̂_testᵀ D x̂_j, not x̂_testᵀ Dᵀ x̂_j: the transposed forms give another average."""
    forms = _non_symmetric(np.random.default_rng(12))
    batch = _batch(seed=3)
    params = form_average_params(forms, GAIN, D, N, np.random.default_rng(2), model=model, x_scale=EXACT_SCALE)
    prediction = get_model(model).forward(params, batch).prediction
    np.testing.assert_allclose(prediction, _theory_average(forms, GAIN, batch), rtol=rtol(ROUNDOFF),
                               atol=rtol(ROUNDOFF))
    transposed = _theory_average(np.swapaxes(forms, 1, 2), GAIN, batch)
    assert np.max(np.abs(prediction - transposed)) > 1e3 * rtol(ROUNDOFF)


@pytest.mark.parametrize("model", ["nonlinear", "nonlinear_rms"])
def test_cosine_forms_give_the_model_of_the_cosine_head_allocation(model):
    """D_ℓ = τ_ℓ I written by form_average_params computes what head_average_params' weights compute."""
    heads = HeadAllocation(depth=4, temperatures=(3.0, 9.0, 25.0), counts=(1, 2, 1), gain=GAIN)
    forms = heads.layer_temperatures()[:, None, None] * np.eye(D)
    batch = _batch(seed=4)
    as_forms = form_average_params(forms, heads.gain, D, N, np.random.default_rng(5), model=model, x_scale=EXACT_SCALE)
    as_heads = head_average_params(heads, D, N, np.random.default_rng(5), model=model, x_scale=EXACT_SCALE)
    for name in ("W_x", "W_y", "W_v", "W_o"):  # same draws, same basis and read-out
        np.testing.assert_array_equal(as_forms[name], as_heads[name])
    engine = get_model(model)
    np.testing.assert_allclose(engine.forward(as_forms, batch).prediction, engine.forward(as_heads, batch).prediction,
                               rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))
    np.testing.assert_allclose(engine.forward(as_forms, batch).prediction, _theory_average(forms, heads.gain, batch),
                               rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))


def test_form_weights_have_the_model_shapes_and_dtype():
    forms = _non_symmetric(np.random.default_rng(0))
    params = form_average_params(forms, GAIN, D, N, np.random.default_rng(0), dtype=np.float32)
    assert {name: value.shape for name, value in params.items()} == get_model("nonlinear").param_shapes(D, N, 4)
    assert all(value.dtype == np.float32 and value.flags.c_contiguous for value in params.values())


@pytest.mark.parametrize("forms, match", [
    (np.eye(D), "forms"),  # one form, not a stack
    (np.ones((2, D, D + 1)), "forms"),
    (np.ones((2, D + 1, D + 1)), "forms"),
    (np.ones((0, D, D)), "forms"),
    (np.full((2, D, D), np.nan), "forms"),
    (np.full((2, D, D), np.inf), "forms"),
])
def test_form_weights_reject_forms_that_are_not_finite_L_by_d_by_d(forms, match):
    with pytest.raises(ValueError, match=match):
        form_average_params(forms, GAIN, D, N, np.random.default_rng(0))


@pytest.mark.parametrize("gain", [np.nan, np.inf, -np.inf])
def test_form_weights_reject_a_non_finite_gain(gain):
    with pytest.raises(ValueError, match="gain"):
        form_average_params(_cosine(None), gain, D, N, np.random.default_rng(0))


@pytest.mark.parametrize("width", [D - 1, D])
def test_layer_norm_form_weights_need_N_above_d(width):
    with pytest.raises(ValueError, match="N must be > d"):
        form_average_params(_cosine(None), GAIN, D, width, np.random.default_rng(0))


def test_rms_form_weights_allow_N_equal_d_but_not_below():
    params = form_average_params(_cosine(None), GAIN, D, D, np.random.default_rng(0), model="nonlinear_rms")
    assert params["W_x"].shape == (D, D)
    with pytest.raises(ValueError, match="N must be >= d"):
        form_average_params(_cosine(None), GAIN, D, D - 1, np.random.default_rng(0), model="nonlinear_rms")
