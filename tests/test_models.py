"""Claims about the five attention models (paper eqs. (7)-(12), (19)-(24), (59)-(83))."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from tolerances import APPROX, FINITE_DIFF, ROUNDOFF, rtol

from numerics.models import LAYER_NORM_EPS, MODELS, get_model
from numerics.models._common import softmax
from numerics.models.reference import masked_softmax
from numerics.tasks import sample
from theory import PowerLawSpectrum
from theory.decomposition import decompose

SOFTMAX_MODELS = tuple(name for name, model in MODELS.items() if model.ATTENTION == "softmax")


# ----------------------------------------------------------------------------- helpers
def _random_params(name, d, N, depth, rng, *, qk_scale=2.0, dtype=np.float64):
    """Random weights of non-trivial scale: Gaussian W_q, W_k, W_v, random read-out gain and m."""
    options = dict(qk_init="gaussian", qk_scale=qk_scale, value_init="gaussian", readout_gain=float(rng.uniform(0.5, 2.0)))
    if name == "linear":
        options["qk_scale"] = 4.0 * N  # B_ℓ = W_xᵀW_kᵀW_qW_x/N of order 1
    if name == "context_updates":
        options["m_init"] = float(rng.uniform(-2.5, 1.5))
    params = get_model(name).init_params(d, N, depth, rng, dtype=dtype, **options)
    params["W_x"] = params["W_x"] + np.asarray(0.3 * rng.standard_normal(params["W_x"].shape), dtype=dtype)
    return params


@st.composite
def model_cases(draw, models=tuple(MODELS)):
    name = draw(st.sampled_from(models), label="model")
    d = draw(st.integers(1, 4), label="d")
    # N >= 2: a pre-norm over a single feature is identically 0 (uniform attention)
    N = draw(st.integers(max(d, 2), d + 3), label="N")
    P = draw(st.integers(1, 6), label="P")
    depth = draw(st.integers(1, 4), label="L")
    k = draw(st.integers(1, P), label="k")
    task = draw(st.sampled_from(["easy", "difficult"]), label="task")
    seed = draw(st.integers(0, 2**32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    spectrum = PowerLawSpectrum(0.5, 1.0, d)
    batch = sample(task, spectrum, P, draw(st.integers(1, 3), label="B"), rng, k=k)
    return name, _random_params(name, d, N, depth, rng), batch, rng


def _directional_fd(loss_fn, params, key, direction, step):
    """Central difference of ``loss_fn`` along ``direction`` in ``params[key]``, Richardson-extrapolated (error O(h⁴))."""

    def at(t):
        shifted = dict(params)
        shifted[key] = params[key] + t * direction
        return loss_fn(shifted)

    def central(h):
        return (at(h) - at(-h)) / (2 * h)

    return (4 * central(step / 2) - central(step)) / 3


STEP = 1e-4  # finite-difference step (Richardson-extrapolated, truncation error O(STEP⁴))


def _fd_roundoff(loss):
    """Resolution of the difference quotient itself: ~ε|loss|/h (x 100 for the Richardson
    combination of four evaluations); gradients below it cannot be checked by differences."""
    return 100 * np.finfo(np.float64).eps * max(abs(loss), 1.0) / STEP


def _prenorm_is_well_conditioned(name, params, batch):
    """Every token entering a pre-norm has feature variance >= 100 eps. Below that the norm
    ``c/sqrt(var + eps)`` has derivatives of order ``eps^(-n/2)`` and a difference quotient
    cannot reach 1e-8 (measured: ~1e-6 at var ≈ eps); the analytic gradient is not in doubt."""
    if name == "linear":
        return True
    tokens = np.concatenate([batch.context_x, batch.test_x[:, None, :]], axis=1) @ params["W_x"].T
    if name == "single_stream":
        tokens[:, :-1] += batch.context_y[..., None] * params["W_y"][:, 0]
    return bool(tokens.var(axis=-1).min() >= 100 * LAYER_NORM_EPS)


def _attention_is_non_trivial(name, params, batch):
    """The softmax must be non-uniform (else FD would test little). It is uniform when all
    context tokens have the same normed state, e.g. d = 1 with inputs of one sign."""
    if name == "linear" or batch.P == 1:
        return True
    attention = get_model(name).forward(params, batch).attention
    return bool(np.max(attention) > 1.2 / batch.P)


# ----------------------------------------------------------------------------- fast engine vs reference
@given(model_cases())
def test_fast_forward_equals_reference_transcription(case):
    name, params, batch, _ = case
    model = get_model(name)
    reference = model.reference_forward(params, batch)
    fast = model.forward(params, batch).prediction
    scale = max(1.0, float(np.max(np.abs(reference))))
    np.testing.assert_allclose(fast, reference, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF) * scale)


@given(model_cases())
def test_mean_of_layer_predictors_is_the_prediction(case):
    name, params, batch, _ = case
    out = get_model(name).forward(params, batch)
    L = params["W_q"].shape[0]
    assert out.layer_predictors.shape == (L, batch.batch_size)
    assert out.attention.shape == (L, batch.batch_size, batch.P)
    scale = max(1.0, float(np.max(np.abs(out.layer_predictors))))
    np.testing.assert_allclose(out.layer_predictors.mean(axis=0), out.prediction, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF) * scale)


@given(model_cases())
def test_loss_is_mean_squared_error_of_the_reference_prediction(case):
    name, params, batch, _ = case
    model = get_model(name)
    loss, grads = model.loss_and_grad(params, batch)
    expected = float(np.mean((model.reference_forward(params, batch) - batch.target) ** 2))
    assert loss == pytest.approx(expected, rel=rtol(ROUNDOFF), abs=rtol(ROUNDOFF))
    assert set(grads) == set(params)
    for key in params:
        assert grads[key].shape == np.shape(params[key]) and grads[key].dtype == np.float64, key


@given(model_cases())
def test_gradient_equals_central_finite_differences(case):
    name, params, batch, rng = case
    model = get_model(name)
    assume(_attention_is_non_trivial(name, params, batch))
    assume(_prenorm_is_well_conditioned(name, params, batch))
    loss, grads = model.loss_and_grad(params, batch)
    loss_fn = lambda p: model.loss_and_grad(p, batch)[0]  # noqa: E731
    for key in params:
        direction = rng.standard_normal(np.shape(params[key]))
        direction /= max(np.linalg.norm(direction), 1e-300)
        analytic = float(np.sum(grads[key] * direction))
        numeric = _directional_fd(loss_fn, params, key, direction, step=STEP)
        assert abs(numeric - analytic) <= rtol(FINITE_DIFF) * np.linalg.norm(grads[key]) + _fd_roundoff(loss), (
            key, numeric, analytic,
        )


@pytest.mark.parametrize("name", MODELS)
def test_float32_params_give_float32_results_close_to_float64(name):
    rng = np.random.default_rng(11)
    batch = sample("difficult", PowerLawSpectrum(0.5, 1.0, 4), 8, 5, rng, k=2)
    params64 = _random_params(name, 4, 6, 3, rng)
    params32 = {key: np.asarray(value, dtype=np.float32) for key, value in params64.items()}
    model = get_model(name)
    out32 = model.forward(params32, batch)
    assert out32.prediction.dtype == np.float32 and out32.attention.dtype == np.float32
    reference32 = model.reference_forward(params32, batch)
    scale = max(1.0, float(np.max(np.abs(reference32))))
    np.testing.assert_allclose(out32.prediction, reference32, rtol=rtol(ROUNDOFF, np.float32), atol=rtol(ROUNDOFF, np.float32) * scale)
    _, grads32 = model.loss_and_grad(params32, batch)
    _, grads64 = model.loss_and_grad(params64, batch)
    for key in params64:
        assert grads32[key].dtype == np.float32, key
        error = np.linalg.norm(grads32[key] - grads64[key])
        assert error <= rtol(APPROX, np.float32) * (np.linalg.norm(grads64[key]) + rtol(ROUNDOFF, np.float32)), key


# ----------------------------------------------------------------------------- structure of the models
@given(model_cases(models=("nonlinear", "untied_values")))
def test_parallel_layer_predictor_is_gain_times_attention_weighted_labels(case):
    # f_ℓ = g p_ℓ·y (eq. 60), f_ℓ = g_ℓ p_ℓ·y (eq. 72)
    name, params, batch, _ = case
    out = get_model(name).forward(params, batch)
    gains = (params["W_o"] @ params["W_v"] @ params["W_y"])[..., 0, 0]
    expected = np.reshape(gains, (-1, 1)) * np.einsum("lbp,bp->lb", out.attention, batch.context_y)
    np.testing.assert_allclose(out.layer_predictors, expected, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))


@given(model_cases(models=SOFTMAX_MODELS))
def test_test_token_attention_rows_are_probability_distributions(case):
    name, params, batch, _ = case
    attention = get_model(name).forward(params, batch).attention
    assert np.all(attention >= 0)
    np.testing.assert_allclose(attention.sum(axis=-1), 1.0, rtol=rtol(ROUNDOFF))


@pytest.mark.parametrize("name", MODELS)
def test_loss_decomposes_into_shared_error_and_disagreement(name):
    # R_L = C_L + (A_L − C_L)/L (eq. 63) for the per-layer predictors of every model
    rng = np.random.default_rng(12)
    batch = sample("difficult", PowerLawSpectrum(0.25, 0.5, 4), 16, 64, rng, k=2)
    params = _random_params(name, 4, 6, 5, rng)
    loss, _ = get_model(name).loss_and_grad(params, batch)
    out = get_model(name).forward(params, batch)
    dec = decompose(out.layer_predictors, batch.target)
    assert dec.R == pytest.approx(loss, rel=rtol(ROUNDOFF))
    assert dec.C + (dec.A - dec.C) / dec.depth == pytest.approx(loss, rel=rtol(ROUNDOFF))
    # computed directly as well (eqs. 61-62)
    errors = out.layer_predictors - batch.target
    A = np.mean(errors**2)
    L = errors.shape[0]
    C = np.mean((errors.sum(axis=0) ** 2 - (errors**2).sum(axis=0)) / (L * (L - 1)))
    assert C + (A - C) / L == pytest.approx(loss, rel=rtol(ROUNDOFF))


def test_context_updates_at_m_zero_equal_the_nonlinear_model():
    rng = np.random.default_rng(13)
    batch = sample("difficult", PowerLawSpectrum(0.5, 0.5, 3), 7, 4, rng, k=2)
    params = _random_params("context_updates", 3, 5, 4, rng)
    params["m"] = np.array(0.0)
    nonlinear_params = {key: value for key, value in params.items() if key != "m"}
    ours = get_model("context_updates").forward(params, batch)
    theirs = get_model("nonlinear").forward(nonlinear_params, batch)
    np.testing.assert_allclose(ours.prediction, theirs.prediction, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))
    np.testing.assert_allclose(ours.attention, theirs.attention, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))


def test_untied_values_with_equal_matrices_equal_the_nonlinear_model():
    rng = np.random.default_rng(14)
    batch = sample("difficult", PowerLawSpectrum(0.5, 0.5, 3), 7, 4, rng, k=2)
    params = _random_params("nonlinear", 3, 5, 4, rng)
    untied = dict(params, W_v=np.repeat(params["W_v"][None], 4, axis=0))
    np.testing.assert_allclose(
        get_model("untied_values").forward(untied, batch).prediction,
        get_model("nonlinear").forward(params, batch).prediction,
        rtol=rtol(ROUNDOFF),
    )


def test_context_updates_changes_the_prediction_when_m_is_not_zero():
    rng = np.random.default_rng(15)
    batch = sample("difficult", PowerLawSpectrum(0.5, 0.5, 3), 7, 4, rng, k=2)
    params = _random_params("context_updates", 3, 5, 4, rng)
    base = get_model("context_updates").forward(dict(params, m=np.array(0.0)), batch).prediction
    moved = get_model("context_updates").forward(dict(params, m=np.array(-2.0)), batch).prediction
    assert np.max(np.abs(moved - base)) > rtol(APPROX) * np.max(np.abs(base))  # far above round-off


def test_context_attention_is_layer_one_context_softmax_of_the_reference():
    rng = np.random.default_rng(16)
    batch = sample("difficult", PowerLawSpectrum(0.5, 0.5, 3), 6, 2, rng, k=2)
    params = _random_params("context_updates", 3, 5, 3, rng)
    out = get_model("context_updates").forward(params, batch)
    assert out.context_attention.shape == (2, 6, 6)
    np.testing.assert_allclose(out.context_attention.sum(axis=-1), 1.0, rtol=rtol(ROUNDOFF))
    # dense: softmax over the P context columns of (Q^1)ᵀK^1 with Q, K from the normed input stream
    from numerics.models.reference import dense_inputs, norm as norm_columns

    X, _ = dense_inputs(batch.context_x, batch.context_y, batch.test_x)
    H_hat = norm_columns(params["W_x"] @ X)
    logits = np.swapaxes(params["W_q"][0] @ H_hat, 1, 2) @ (params["W_k"][0] @ H_hat)
    expected = softmax(logits[:, :6, :6])
    np.testing.assert_allclose(out.context_attention, expected, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))
    for name in ("linear", "nonlinear", "single_stream", "untied_values"):
        assert get_model(name).forward(_random_params(name, 3, 5, 2, rng), batch).context_attention is None


def test_single_stream_constant_predictor_is_the_input_readout():
    # b_L = z_0 = W_o W_x x_test (eqs. 67-70): f_ℓ − L d_ℓ is the same b for every layer
    rng = np.random.default_rng(17)
    batch = sample("difficult", PowerLawSpectrum(0.5, 0.5, 3), 6, 3, rng, k=2)
    params = _random_params("single_stream", 3, 5, 4, rng)
    out = get_model("single_stream").forward(params, batch)
    b = batch.test_x @ params["W_x"].T @ params["W_o"][0]
    # Σ_ℓ (f_ℓ − b) = L (z_L − z_0)
    L = 4
    np.testing.assert_allclose(out.layer_predictors.sum(axis=0) - L * b, L * (out.prediction - b), rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))


def test_linear_attention_row_is_scaled_bilinear_form():
    # (1/(P N)) q_testᵀ k_j = x_jᵀ B_ℓ x_test / P with B_ℓ of eq. (20)
    rng = np.random.default_rng(18)
    batch = sample("easy", PowerLawSpectrum(1.0, 1.0, 3), 5, 2, rng)
    params = _random_params("linear", 3, 4, 2, rng)
    model = get_model("linear")
    B = model.effective_qk(params)
    expected = np.einsum("bpd,lde,be->lbp", batch.context_x, B, batch.test_x) / batch.P
    np.testing.assert_allclose(model.forward(params, batch).attention, expected, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))


# ----------------------------------------------------------------------------- softmax stability
def test_softmax_with_logits_of_size_ten_thousand_is_finite():
    logits = np.array([[1e4, 1e4 - 2.0, -1e4, 3.0]])
    probs = softmax(logits)
    assert np.all(np.isfinite(probs))
    np.testing.assert_allclose(probs[0, :2], [1 / (1 + np.exp(-2.0)), np.exp(-2.0) / (1 + np.exp(-2.0))], rtol=rtol(ROUNDOFF))
    masked = masked_softmax(logits, np.array([[False, True, True, False]]))
    assert np.all(np.isfinite(masked)) and masked[0, 1] == 1.0 and masked[0, 0] == 0.0


def test_fully_masked_row_gives_zero_attention():
    assert masked_softmax(np.array([[1e4, -1e4]]), np.array([[False, False]])).tolist() == [[0.0, 0.0]]


@pytest.mark.parametrize("name", SOFTMAX_MODELS)
def test_softmax_models_stay_finite_at_huge_logits(name):
    rng = np.random.default_rng(19)
    batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 8, 3, rng, k=2)
    params = get_model(name).init_params(4, 4, 2, rng, qk_scale=1e4)  # logits ≈ κ N cos, up to 4e4
    out = get_model(name).forward(params, batch)
    loss, grads = get_model(name).loss_and_grad(params, batch)
    assert np.all(np.isfinite(out.prediction)) and np.isfinite(loss)
    assert all(np.all(np.isfinite(g)) for g in grads.values())
    scale = max(1.0, float(np.max(np.abs(out.prediction))))
    np.testing.assert_allclose(out.prediction, get_model(name).reference_forward(params, batch), rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF) * scale)


# ----------------------------------------------------------------------------- initialisation
@pytest.mark.parametrize("name", MODELS)
def test_default_initialisation_has_orthonormal_input_map_and_given_readout_gain(name):
    params = get_model(name).init_params(3, 5, 4, np.random.default_rng(20), readout_gain=0.7, qk_noise=0.0, qk_scale=2.0)
    np.testing.assert_allclose(params["W_x"].T @ params["W_x"], np.eye(3), atol=rtol(ROUNDOFF))
    gains = params["W_o"] @ params["W_v"] @ params["W_y"]
    np.testing.assert_allclose(gains, 0.7, rtol=rtol(ROUNDOFF))
    np.testing.assert_allclose(np.swapaxes(params["W_k"], 1, 2) @ params["W_q"], np.broadcast_to(2.0 * np.eye(5), (4, 5, 5)), rtol=rtol(ROUNDOFF))


@pytest.mark.parametrize("name", MODELS)
def test_init_params_has_the_documented_shapes_and_dtype(name):
    model = get_model(name)
    params = model.init_params(2, 3, 4, np.random.default_rng(21), dtype=np.float32)
    assert {key: np.shape(value) for key, value in params.items()} == model.param_shapes(2, 3, 4)
    assert all(value.dtype == np.float32 for value in params.values())


def test_same_seed_gives_the_same_initial_weights():
    one = get_model("nonlinear").init_params(3, 4, 2, np.random.default_rng(22))
    two = get_model("nonlinear").init_params(3, 4, 2, np.random.default_rng(22))
    assert all(np.array_equal(one[key], two[key]) for key in one)


# ----------------------------------------------------------------------------- bad input
def test_unknown_model_name_lists_the_allowed_names():
    with pytest.raises(ValueError, match="name must be one of 'linear', 'nonlinear', 'single_stream', 'untied_values', 'context_updates'"):
        get_model("transformer")


@pytest.mark.parametrize("name", MODELS)
def test_hidden_width_below_input_dimension_is_refused(name):
    with pytest.raises(ValueError, match=r"N must be >= input dimension d; got N=2, d=3"):
        get_model(name).init_params(3, 2, 1, np.random.default_rng(0))


@pytest.mark.parametrize(
    "options, error, pattern",
    [
        (dict(qk_init="zeros"), ValueError, "qk_init must be one of"),
        (dict(w_x="random"), ValueError, "w_x must be one of"),
        (dict(qk_scale=-1.0), ValueError, "qk_scale must be > 0"),
        (dict(temperature=2.0), TypeError, "unknown initialisation option.*'temperature'"),
    ],
)
def test_bad_initialisation_options_are_refused_by_name(options, error, pattern):
    with pytest.raises(error, match=pattern):
        get_model("nonlinear").init_params(2, 2, 1, np.random.default_rng(0), **options)


def test_rng_must_be_a_generator():
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        get_model("linear").init_params(2, 2, 1, 0)


@pytest.mark.parametrize("name", MODELS)
def test_bad_params_raise_value_error_naming_what_is_wrong(name):
    model = get_model(name)
    rng = np.random.default_rng(23)
    params = model.init_params(3, 4, 2, rng)
    batch = sample("difficult", PowerLawSpectrum(0, 0, 3), 5, 2, rng)
    missing = {key: value for key, value in params.items() if key != "W_v"}
    with pytest.raises(ValueError, match="missing 'W_v'"):
        model.forward(missing, batch)
    with pytest.raises(ValueError, match="unexpected 'bias'"):
        model.loss_and_grad(dict(params, bias=np.zeros(4)), batch)
    with pytest.raises(ValueError, match=r"params\['W_o'\] must have shape \(1, 4\)"):
        model.forward(dict(params, W_o=np.zeros((4, 1))), batch)
    with pytest.raises(ValueError, match=r"params\['W_k'\] must have shape \(2, 4, 4\)"):
        model.reference_forward(dict(params, W_k=np.zeros((3, 4, 4))), batch)
    with pytest.raises(ValueError, match="one dtype"):
        model.forward(dict(params, W_y=params["W_y"].astype(np.float32)), batch)
    other = sample("difficult", PowerLawSpectrum(0, 0, 2), 5, 2, rng)
    with pytest.raises(ValueError, match="input dimension d=2.*expects d=3"):
        model.forward(params, other)
    with pytest.raises(ValueError, match="input dimension d=2.*expects d=3"):
        model.loss_and_grad(params, other)


def test_context_updates_chunked_batch_equals_whole_batch(monkeypatch):
    import numerics.models.context_updates as context_updates

    rng = np.random.default_rng(24)
    batch = sample("difficult", PowerLawSpectrum(0.5, 0.5, 3), 6, 7, rng, k=2)
    params = _random_params("context_updates", 3, 5, 3, rng)
    whole = context_updates.forward(params, batch)
    whole_loss, whole_grads = context_updates.loss_and_grad(params, batch)
    monkeypatch.setattr(context_updates, "MAX_ATTENTION_ENTRIES", 2 * 7 * 6)  # chunks of 2 contexts
    chunked = context_updates.forward(params, batch)
    chunked_loss, chunked_grads = context_updates.loss_and_grad(params, batch)
    for field in ("prediction", "layer_predictors", "attention", "context_attention"):
        np.testing.assert_allclose(getattr(chunked, field), getattr(whole, field), rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))
    assert chunked_loss == pytest.approx(whole_loss, rel=rtol(ROUNDOFF))
    for key in params:
        np.testing.assert_allclose(chunked_grads[key], whole_grads[key], rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))


def test_context_updates_recomputed_attention_equals_kept_attention(monkeypatch):
    """Above KEEP_ATTENTION_ENTRIES the reverse pass recomputes each layer's attention: the same numbers, bitwise."""
    import numerics.models.context_updates as context_updates

    rng = np.random.default_rng(25)
    batch = sample("difficult", PowerLawSpectrum(0.5, 0.5, 3), 6, 7, rng, k=2)
    params = _random_params("context_updates", 3, 5, 4, rng)
    kept_loss, kept_grads = context_updates.loss_and_grad(params, batch)
    monkeypatch.setattr(context_updates, "KEEP_ATTENTION_ENTRIES", 0)
    loss, grads = context_updates.loss_and_grad(params, batch)
    assert loss == kept_loss
    for key in params:
        np.testing.assert_array_equal(grads[key], kept_grads[key])


# ----------------------------------------------------------------------------- bridge to theory/linear.py
@given(model_cases(models=("linear",)))
def test_linear_prediction_equals_covariance_polynomial(case):
    # ŷ_L = βᵀ 𝒫_L(S) x_test with B_ℓ of eq. (20) and m_r = W_o W_v^r W_y (eqs. 20, 23-24), any finite P
    from theory.linear import covariance_polynomial, effective_qk, readout_coefficients

    _, params, batch, _ = case
    L = params["W_q"].shape[0]
    S = np.swapaxes(batch.context_x, 1, 2) @ batch.context_x / batch.P
    B = effective_qk(params["W_x"], params["W_q"], params["W_k"])
    m = readout_coefficients(params["W_o"], params["W_v"], params["W_y"], L)
    expected = np.einsum("bd,bde,be->b", batch.teacher, covariance_polynomial(S, B, m), batch.test_x)
    prediction = get_model("linear").forward(params, batch).prediction
    scale = max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(prediction, expected, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF) * scale)
    np.testing.assert_allclose(get_model("linear").effective_qk(params), B, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))


def test_context_updates_follow_eq_81_when_values_are_identity():
    # with W_v = I: z_ℓ = z_{ℓ-1}(I_P + (m/L) A_ℓᵀ), h_ℓ = h_{ℓ-1} + (1/L) z_{ℓ-1} p_ℓᵀ (eq. 81) on the
    # label row z_0 = y, and ŷ = g h_L with g = W_o W_y
    from numerics.models.reference import dense_inputs, norm as norm_columns

    rng = np.random.default_rng(25)
    batch = sample("difficult", PowerLawSpectrum(0.5, 0.5, 3), 6, 4, rng, k=2)
    params = get_model("context_updates").init_params(3, 5, 3, rng, qk_init="gaussian", qk_scale=3.0, m_init=-1.7)
    L, P, m = 3, 6, float(params["m"])
    X, _ = dense_inputs(batch.context_x, batch.context_y, batch.test_x)
    H_hat = norm_columns(params["W_x"] @ X)
    z = batch.context_y.copy()
    h = np.zeros(batch.batch_size)
    for ell in range(L):
        logits = np.swapaxes(params["W_q"][ell] @ H_hat, 1, 2) @ (params["W_k"][ell] @ H_hat)
        A, p = softmax(logits[:, :P, :P]), softmax(logits[:, P, :P])
        h = h + np.einsum("bp,bp->b", z, p) / L
        z = z + (m / L) * np.einsum("bp,bqp->bq", z, A)  # z (I + (m/L) Aᵀ)
    g = (params["W_o"] @ params["W_y"]).item()
    np.testing.assert_allclose(get_model("context_updates").forward(params, batch).prediction, g * h, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))
