"""Claims about the diagnostics (numerics/diagnostics.py): error vectors, mode-wise losses,
selection error (eqs. 90-91), ρ of eq. (83), attention mass, and the CLT decomposition wiring."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from numerics.diagnostics import (
    Diagnostics,
    diagnose,
    diagnose_batch,
    error_vectors,
    fit_rho,
    modewise_loss,
    selection_error,
    selection_quantiles,
    target_vectors,
    top1_attention_mass,
)
from numerics.models import MODELS, get_model
from numerics.tasks import sample
from numerics.train import TrainConfig
from theory.spectra import PowerLawSpectrum
from tolerances import MC_SIGMAS, ROUNDOFF, rtol

LABEL_LINEAR_MODELS = tuple(name for name, model in MODELS.items() if model.LABEL_LINEAR)


def _setup(model_name, task="difficult", *, d=3, N=4, P=10, depth=3, B=64, a=1.0, b=0.5, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    model = get_model(model_name)
    params = model.init_params(d, N, depth, rng, qk_scale=scale, qk_noise=0.5)
    if "m" in params:
        params["m"] = np.array(-0.7)
    batch = sample(task, PowerLawSpectrum(a, b, d), P, B, rng, k=2)
    config = TrainConfig(model=model_name, task=task, k=2, a=a, b=b, d=d, N=N, P=P, depth=depth, dtype="float64")
    return model, params, batch, config


# --------------------------------------------------------------------------- error vectors


@pytest.mark.parametrize("model_name", LABEL_LINEAR_MODELS)
@pytest.mark.parametrize("task", ["easy", "difficult"])
@given(seed=st.integers(0, 2**31), depth=st.integers(1, 4), scale=st.floats(0.1, 4.0))
def test_error_vector_reproduces_the_prediction_error(model_name, task, seed, depth, scale):
    """ŷ − y* = βᵀ e exactly, for every model whose prediction is linear in the labels."""
    model, params, batch, _ = _setup(model_name, task, depth=depth, seed=seed, scale=scale, B=8)
    e = error_vectors(model, params, batch)
    residual = model.forward(params, batch).prediction - batch.target
    scale_ref = np.abs(batch.target).max() + np.abs(model.forward(params, batch).prediction).max()
    np.testing.assert_allclose(np.einsum("bd,bd->b", batch.teacher, e), residual, rtol=0,
                               atol=rtol(ROUNDOFF) * scale_ref)


def test_target_vector_reproduces_the_target():
    for task in ("easy", "difficult"):
        batch = sample(task, PowerLawSpectrum(0.5, 1.0, 5), 12, 32, np.random.default_rng(3), k=3)
        t = target_vectors(batch)
        np.testing.assert_allclose(np.einsum("bd,bd->b", batch.teacher, t), batch.target, rtol=rtol(ROUNDOFF), atol=1e-12)


def test_linear_error_vector_is_the_covariance_polynomial_applied_to_the_query():
    """Linear attention: e + t = 𝒫_L(S) q with 𝒫 from theory.linear (paper eq. 24) -- an independent evaluation."""
    from theory.linear import covariance_polynomial, effective_qk, readout_coefficients

    model, params, batch, _ = _setup("linear", "easy", depth=3, B=16, scale=2.0)
    U = np.asarray(batch.context_x)
    S = np.einsum("bpi,bpj->bij", U, U) / U.shape[1]
    B = effective_qk(params["W_x"], params["W_q"], params["W_k"])
    m = readout_coefficients(params["W_o"], params["W_v"], params["W_y"], 3)
    polynomial_q = np.einsum("bij,bj->bi", covariance_polynomial(S, B, m), batch.test_x)
    e = error_vectors(model, params, batch)
    np.testing.assert_allclose(e + target_vectors(batch), polynomial_q, rtol=1e-8, atol=1e-10)


def test_softmax_error_vector_is_g_times_inputs_times_mean_attention():
    """Nonlinear model: e = g X p̄ − t with g = W_o W_v W_y (paper eq. 60)."""
    model, params, batch, _ = _setup("nonlinear", "difficult", depth=4, B=16, scale=3.0)
    g = float((params["W_o"] @ params["W_v"] @ params["W_y"]).item())
    p_bar = model.forward(params, batch).attention.mean(axis=0)
    expected = g * np.einsum("bpd,bp->bd", batch.context_x, p_bar) - target_vectors(batch)
    np.testing.assert_allclose(error_vectors(model, params, batch), expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("model_name", [name for name in LABEL_LINEAR_MODELS
                                        if hasattr(get_model(name), "label_weights")
                                        or hasattr(get_model(name), "label_readout")])
def test_label_weights_give_the_error_vectors_of_the_unit_teacher_passes(model_name):
    """One pass through ``label_weights`` / ``label_readout`` equals the d forward passes with labels y_i = x_{i,j}."""
    import dataclasses

    model, params, batch, _ = _setup(model_name, "difficult", depth=3, B=12, scale=2.0)
    X = np.asarray(batch.context_x)
    passes = np.stack([model.forward(params, dataclasses.replace(batch, context_y=np.ascontiguousarray(X[:, :, j])))
                       .prediction for j in range(X.shape[2])], axis=1) - target_vectors(batch)
    np.testing.assert_allclose(error_vectors(model, params, batch), passes, rtol=1e-10, atol=1e-12)
    result = model.forward(params, batch)
    np.testing.assert_array_equal(error_vectors(model, params, batch, result), error_vectors(model, params, batch))


def test_error_vectors_refuse_the_single_stream_model():
    model, params, batch, _ = _setup("single_stream", B=4)
    with pytest.raises(ValueError, match="single_stream"):
        error_vectors(model, params, batch)


# --------------------------------------------------------------------------- mode-wise loss


@pytest.mark.parametrize("model_name", LABEL_LINEAR_MODELS)
def test_modewise_losses_sum_to_the_loss(model_name):
    """Σ_k ω_k E ẽ_k² equals E eᵀΩe (round-off) and the measured loss within Monte-Carlo error."""
    model, params, batch, config = _setup(model_name, "difficult", B=4000, scale=2.0)
    diag = diagnose_batch(model, params, batch, config.spectrum())
    e = error_vectors(model, params, batch)
    _, omega = config.spectrum().covariances(batch.rotation)
    dense = np.einsum("bi,bij,bj->b", e, omega, e)  # eᵀΩe with the dense Ω = O diag(ω) Oᵀ
    assert diag.modewise_total == pytest.approx(dense.mean(), rel=rtol(ROUNDOFF))
    assert diag.modewise_loss.sum() == pytest.approx(diag.modewise_total, rel=rtol(ROUNDOFF))
    # the sampled β average to Ω: per-context (βᵀe)² − eᵀΩe has mean zero
    diff = (np.einsum("bd,bd->b", batch.teacher, e)) ** 2 - dense
    assert abs(diag.R_L - diag.modewise_total) <= MC_SIGMAS * diff.std(ddof=1) / math.sqrt(diff.size)


def test_zero_predictor_has_normalised_modewise_loss_one():
    model, params, batch, config = _setup("nonlinear", "difficult", B=32)
    params["W_o"] = np.zeros_like(params["W_o"])
    diag = diagnose_batch(model, params, batch, config.spectrum())
    np.testing.assert_allclose(diag.modewise_loss_normalised, 1.0, rtol=rtol(ROUNDOFF))


def test_modewise_loss_rotates_into_the_context_eigenbasis():
    spectrum = PowerLawSpectrum(1.0, 1.0, 2)
    theta = 0.3
    O = np.array([[[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]]])
    e = O[0] @ np.array([2.0, 3.0])  # coordinates (2, 3) in the eigenbasis
    loss, ref = modewise_loss(e[None], O[0][:, 0][None], O, spectrum)
    np.testing.assert_allclose(loss, [1.0 * 4.0, 0.5 * 9.0], rtol=rtol(ROUNDOFF))
    np.testing.assert_allclose(ref, [1.0, 0.0], rtol=rtol(ROUNDOFF), atol=1e-15)


# --------------------------------------------------------------------------- selection error, attention mass


@given(P=st.integers(2, 40), k=st.integers(1, 5), seed=st.integers(0, 2**31))
def test_selection_error_of_the_ideal_row_is_zero_and_of_the_uniform_row_is_known(P, k, seed):
    k = min(k, P)
    rng = np.random.default_rng(seed)
    selected = np.stack([rng.permutation(P)[:k] for _ in range(3)])
    p_star = np.zeros((3, P))
    np.put_along_axis(p_star, selected, 1.0 / k, axis=1)
    assert np.all(selection_error(np.stack([p_star, p_star]), selected) == 0.0)
    uniform = np.full((1, 3, P), 1.0 / P)
    np.testing.assert_allclose(selection_error(uniform, selected), 1.0 / k - 1.0 / P, rtol=rtol(ROUNDOFF), atol=1e-15)


def test_selection_error_averages_the_layers_before_comparing():
    """E_L uses p̄_L = (1/L) Σ p_ℓ (eq. 90): two layers each on one of the top-2 tokens average to p*."""
    rows = np.array([[[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]]])
    assert selection_error(rows, np.array([[0, 1]])).tolist() == [0.0]


def test_selection_quantiles_are_percentiles():
    np.testing.assert_allclose(selection_quantiles(np.linspace(0, 1, 101), (0.1, 0.5, 0.99)), [0.1, 0.5, 0.99],
                               rtol=rtol(ROUNDOFF))
    with pytest.raises(ValueError, match="q"):
        selection_quantiles(np.ones(3), (1.5,))


def test_top1_mass_is_the_mean_largest_weight_per_layer():
    attention = np.array([[[0.7, 0.3], [0.5, 0.5]], [[1.0, 0.0], [0.2, 0.8]]])
    np.testing.assert_allclose(top1_attention_mass(attention), [0.6, 0.9], rtol=rtol(ROUNDOFF))


# --------------------------------------------------------------------------- rho (eq. 83)


@given(P=st.integers(2, 50), rho=st.floats(-2.0, 2.0), B=st.integers(1, 4))
def test_rho_of_an_exact_mixture_is_recovered(P, rho, B):
    A = rho * np.eye(P) + (1 - rho) * np.ones((P, P)) / P
    assert fit_rho(np.broadcast_to(A, (B, P, P))) == pytest.approx(rho, rel=rtol(ROUNDOFF), abs=1e-12)


@given(seed=st.integers(0, 2**31), P=st.integers(2, 12), B=st.integers(1, 3))
def test_rho_closed_form_equals_a_numerical_least_squares_fit(seed, P, B):
    """Independent evaluation: lstsq of vec(A − J) on vec(I − J), jointly over contexts."""
    rng = np.random.default_rng(seed)
    A = rng.random((B, P, P))
    A /= A.sum(axis=2, keepdims=True)
    J = np.ones((P, P)) / P
    design = np.tile((np.eye(P) - J).ravel(), B)[:, None]
    rhs = (A - J).ravel()
    expected = np.linalg.lstsq(design, rhs, rcond=None)[0][0]
    assert fit_rho(A) == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_rho_rejects_non_square_input():
    with pytest.raises(ValueError, match="context_attention"):
        fit_rho(np.ones((2, 3, 4)))


# --------------------------------------------------------------------------- the whole set


def test_diagnose_matches_the_decomposition_identity_and_per_layer_errors():
    model, params, batch, config = _setup("untied_values", "difficult", depth=4, B=256, scale=2.0)
    diag = diagnose_batch(model, params, batch, config.spectrum())
    f = model.forward(params, batch).layer_predictors
    np.testing.assert_allclose(diag.layer_errors, np.mean((f - batch.target) ** 2, axis=1), rtol=rtol(ROUNDOFF))
    assert diag.A_L == pytest.approx(diag.layer_errors.mean(), rel=rtol(ROUNDOFF))
    assert diag.R_L == pytest.approx(diag.C_L + (diag.A_L - diag.C_L) / 4, rel=rtol(ROUNDOFF))
    assert diag.R_L == pytest.approx(np.mean((model.forward(params, batch).prediction - batch.target) ** 2),
                                     rel=rtol(ROUNDOFF))


def test_diagnose_in_chunks_equals_one_pass():
    model, params, batch, config = _setup("nonlinear", "difficult", B=50)
    whole = diagnose_batch(model, params, batch, config.spectrum(), chunk=1000)
    pieces = diagnose_batch(model, params, batch, config.spectrum(), chunk=7)
    for field in ("R_L", "A_L", "C_L", "modewise_total"):
        assert getattr(pieces, field) == pytest.approx(getattr(whole, field), rel=rtol(ROUNDOFF)), field
    np.testing.assert_allclose(pieces.selection_error, whole.selection_error, rtol=rtol(ROUNDOFF))


def test_context_updates_diagnostics_report_rho_and_m():
    model, params, batch, config = _setup("context_updates", "difficult", B=16, P=6)
    diag = diagnose_batch(model, params, batch, config.spectrum())
    A1 = model.forward(params, batch).context_attention
    assert diag.rho == pytest.approx(fit_rho(A1), rel=rtol(ROUNDOFF))
    assert diag.m == pytest.approx(-0.7)
    assert math.isnan(diagnose_batch(*_setup("nonlinear", B=4)[:3], config.spectrum()).rho)


def test_linear_and_single_stream_diagnostics_mark_undefined_quantities_nan():
    lin = diagnose_batch(*_setup("linear", B=8)[:3], _setup("linear", B=8)[3].spectrum())
    assert np.all(np.isnan(lin.top1_attention_mass)) and np.all(np.isnan(lin.selection_quantiles))
    assert np.all(np.isfinite(lin.modewise_loss))
    single = diagnose_batch(*_setup("single_stream", B=8)[:3], _setup("single_stream", B=8)[3].spectrum())
    assert np.all(np.isnan(single.modewise_loss)) and math.isnan(single.modewise_total)
    assert np.all(np.isfinite(single.top1_attention_mass))


def test_diagnose_draws_fresh_contexts_from_the_given_generator():
    from numerics.train import TrainResult

    model, params, _, config = _setup("nonlinear", "easy", B=4)
    result = TrainResult(config, params, {}, {})
    first = diagnose(result, n_contexts=64, rng=np.random.default_rng(1))
    again = diagnose(params, config, n_contexts=64, rng=1)
    other = diagnose(result, n_contexts=64, rng=2)
    assert isinstance(first, Diagnostics)
    assert first.R_L == again.R_L and first.R_L != other.R_L
    assert first.n_contexts == 64 and first.selection_error.shape == (64,)
    summary = first.summary()
    assert summary["R_L"] == first.R_L and "selection_Q(0.9)" in summary


@pytest.mark.parametrize(
    "kwargs, exc, word",
    [
        (dict(n_contexts=0, rng=0), ValueError, "n_contexts"),
        (dict(n_contexts=8, rng=None), ValueError, "rng"),
        (dict(n_contexts=8, rng="seed"), TypeError, "rng"),
    ],
)
def test_diagnose_rejects_bad_arguments_naming_them(kwargs, exc, word):
    _, params, _, config = _setup("nonlinear", B=2)
    with pytest.raises(exc, match=word):
        diagnose(params, config, **kwargs)
    with pytest.raises(ValueError, match="config"):
        diagnose(params, None, n_contexts=4, rng=0)
    with pytest.raises(TypeError, match="params_or_result"):
        diagnose([1, 2], config, n_contexts=4, rng=0)


def test_plot_is_written_as_png(tmp_path):
    from numerics.diagnostics import plot_modewise_loss

    model, params, batch, config = _setup("nonlinear", B=32)
    path = tmp_path / "modes.png"
    plot_modewise_loss(diagnose_batch(model, params, batch, config.spectrum()), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    single = diagnose_batch(*_setup("single_stream", B=4)[:3], _setup("single_stream", B=4)[3].spectrum())
    with pytest.raises(ValueError, match="single_stream"):
        plot_modewise_loss(single, tmp_path / "x.png")
