"""Claims about the data sampler numerics/tasks.py (paper eqs. (1)-(6))."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tolerances import MC_SIGMAS, ROUNDOFF, rtol

from numerics.tasks import TASKS, cosine_similarity, haar_rotations, sample, top_k_indices
from theory import PowerLawSpectrum, Spectrum

ANISOTROPIC = PowerLawSpectrum(a=1.0, b=0.5, d=4)


def _assert_covariance_matches(samples: np.ndarray, covariance: np.ndarray) -> None:
    """Every entry of the empirical second moment of zero-mean Gaussian ``samples`` (n, d)
    lies within MC_SIGMAS standard errors of ``covariance``; Var(x_a x_b) = Σ_aa Σ_bb + Σ_ab²."""
    n = samples.shape[0]
    empirical = samples.T @ samples / n
    diag = np.diag(covariance)
    standard_error = np.sqrt((np.outer(diag, diag) + covariance**2) / n)
    z = np.abs(empirical - covariance) / standard_error
    assert np.all(z < MC_SIGMAS), f"max |z| = {z.max():.2f} (entries {np.argwhere(z >= MC_SIGMAS).tolist()})"


def test_context_inputs_have_covariance_sigma_given_their_rotation():
    batch = sample("difficult", ANISOTROPIC, P=40_000, batch_size=3, rng=np.random.default_rng(0))
    sigmas, _ = ANISOTROPIC.covariances(batch.rotation)
    for context in range(batch.batch_size):
        _assert_covariance_matches(batch.context_x[context], sigmas[context])


def test_teacher_has_covariance_omega_given_its_rotation():
    # Oᵀβ ~ N(0, diag ω) whatever O is (eq. 4), so pooled over contexts its covariance is diag ω
    batch = sample("easy", ANISOTROPIC, P=1, batch_size=40_000, rng=np.random.default_rng(1))
    rotated_back = np.einsum("bji,bj->bi", batch.rotation, batch.teacher)
    _assert_covariance_matches(rotated_back, np.diag(ANISOTROPIC.teacher_eigenvalues))


def test_teacher_averaged_over_haar_rotations_is_isotropic():
    batch = sample("easy", ANISOTROPIC, P=1, batch_size=40_000, rng=np.random.default_rng(2))
    mean_omega = ANISOTROPIC.teacher_eigenvalues.mean()
    # β = O(√ω ⊙ w) with O Haar is not Gaussian, so use its exact fourth moment for the error:
    # Var(β_a²) = E β_a⁴ − (E β_a²)² with E β_a⁴ = 3 E[(Σ_k O_ak² ω_k)²] estimated from the draws
    second = batch.teacher**2
    standard_error = second.std(axis=0, ddof=1) / np.sqrt(batch.batch_size)
    z = np.abs(second.mean(axis=0) - mean_omega) / standard_error
    assert np.all(z < MC_SIGMAS), z


def test_rotations_are_orthogonal():
    rotations = haar_rotations(5, 50, np.random.default_rng(3))
    identity = rotations @ np.swapaxes(rotations, 1, 2)
    np.testing.assert_allclose(identity, np.broadcast_to(np.eye(5), identity.shape), atol=rtol(ROUNDOFF))


def test_rotations_have_haar_first_and_second_moments():
    # Haar on O(d): E O_ij = 0, E O_ij² = 1/d, and det = ±1 with probability 1/2 each.
    # A QR without the sign fix has E O_ii ≠ 0 (numpy's Householder QR), which this catches.
    d, n = 3, 40_000
    rotations = haar_rotations(d, n, np.random.default_rng(4))
    entries = rotations.reshape(n, -1)
    mean_z = np.abs(entries.mean(axis=0)) / (entries.std(axis=0, ddof=1) / np.sqrt(n))
    assert np.all(mean_z < MC_SIGMAS), mean_z
    squares = entries**2
    square_z = np.abs(squares.mean(axis=0) - 1 / d) / (squares.std(axis=0, ddof=1) / np.sqrt(n))
    assert np.all(square_z < MC_SIGMAS), square_z
    negative = np.mean(np.linalg.det(rotations) < 0)
    assert abs(negative - 0.5) < MC_SIGMAS * np.sqrt(0.25 / n)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lapack_path_rotations_are_haar(dtype):
    """From d = LAPACK_QR_MIN_D on, each matrix is factored by geqrf/orgqr: orthogonal, E tr O = 0 with
    E (tr O)² = 1 and E (tr O)⁴ = 3 (Haar on O(d), d >= 4, Diaconis-Shahshahani; an unfixed QR has a biased diagonal), det = ±1 with probability 1/2."""
    from theory.data_law import LAPACK_QR_MIN_D

    d, n = LAPACK_QR_MIN_D, 4000
    rotations = haar_rotations(d, n, np.random.default_rng(5), dtype=dtype)
    assert rotations.dtype == dtype and rotations.shape == (n, d, d)
    identity = rotations @ np.swapaxes(rotations, 1, 2)
    np.testing.assert_allclose(identity, np.broadcast_to(np.eye(d), identity.shape), atol=10 * rtol(ROUNDOFF, dtype))
    traces = np.trace(rotations.astype(np.float64), axis1=1, axis2=2)
    assert abs(traces.mean()) < MC_SIGMAS / np.sqrt(n), traces.mean()
    assert abs(np.mean(traces**2) - 1.0) < MC_SIGMAS * np.sqrt(2.0 / n), np.mean(traces**2)
    negative = np.mean(np.linalg.det(rotations.astype(np.float64)) < 0)
    assert abs(negative - 0.5) < MC_SIGMAS * np.sqrt(0.25 / n)


def test_lapack_qr_without_sign_fix_would_fail_the_trace_check():
    """The trace check above can fail: LAPACK's Householder QR alone has E tr Q far from 0."""
    from scipy.linalg import lapack

    rng = np.random.default_rng(5)
    traces = []
    for _ in range(400):
        factors, tau, _, _ = lapack.dgeqrf(rng.standard_normal((32, 32)))
        traces.append(np.trace(lapack.dorgqr(factors, tau)[0]))
    assert abs(np.mean(traces)) > MC_SIGMAS / np.sqrt(len(traces))


def test_plain_qr_without_sign_fix_would_fail_the_haar_check():
    # the check above can fail: numpy's QR alone has a biased diagonal
    rng = np.random.default_rng(4)
    q, _ = np.linalg.qr(rng.standard_normal((40_000, 3, 3)))
    diagonal = np.diagonal(q, axis1=1, axis2=2)
    z = np.abs(diagonal.mean(axis=0)) / (diagonal.std(axis=0, ddof=1) / np.sqrt(diagonal.shape[0]))
    assert np.any(z > MC_SIGMAS)


@given(
    task=st.sampled_from(TASKS),
    d=st.integers(1, 5),
    P=st.integers(1, 12),
    batch_size=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
    isotropic=st.booleans(),
)
def test_labels_are_noiseless_teacher_projections(task, d, P, batch_size, seed, isotropic):
    spectrum = PowerLawSpectrum(0, 0, d) if isotropic else PowerLawSpectrum(0.7, 1.3, d)
    batch = sample(task, spectrum, P, batch_size, np.random.default_rng(seed), k=1)
    labels = np.einsum("bpd,bd->bp", batch.context_x, batch.teacher)
    np.testing.assert_allclose(batch.context_y, labels, rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))
    assert batch.context_x.shape == (batch_size, P, d)
    assert batch.rotation.shape == (batch_size, d, d) and batch.teacher.shape == (batch_size, d)


@given(d=st.integers(1, 5), P=st.integers(1, 12), batch_size=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_easy_test_input_is_a_context_input_and_target_its_label(d, P, batch_size, seed):
    batch = sample("easy", PowerLawSpectrum(1.0, 1.0, d), P, batch_size, np.random.default_rng(seed))
    for b in range(batch_size):
        matches = np.flatnonzero(np.all(batch.context_x[b] == batch.test_x[b], axis=1))
        assert matches.size >= 1
        assert batch.target[b] == batch.context_y[b, matches[0]]


def test_easy_task_chooses_the_matched_token_uniformly():
    P, n = 5, 20_000
    batch = sample("easy", PowerLawSpectrum(0, 0, 3), P, n, np.random.default_rng(5))
    index = np.argmax(np.all(batch.context_x == batch.test_x[:, None, :], axis=2), axis=1)
    counts = np.bincount(index, minlength=P)
    expected = n / P
    assert np.all(np.abs(counts - expected) < MC_SIGMAS * np.sqrt(n * (1 / P) * (1 - 1 / P)))


@given(
    d=st.integers(2, 5),  # for d = 1 every cosine is ±1: ties, see the next test
    P=st.integers(1, 15),
    data=st.data(),
    batch_size=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_difficult_target_is_mean_label_of_top_k_by_brute_force_sort(d, P, data, batch_size, seed):
    k = data.draw(st.integers(1, P), label="k")
    batch = sample("difficult", PowerLawSpectrum(0.5, 0.5, d), P, batch_size, np.random.default_rng(seed), k=k)
    assert batch.k == k and batch.task == "difficult"
    for b in range(batch_size):
        x, q = batch.context_x[b], batch.test_x[b]
        cosines = [float(x[i] @ q / (np.linalg.norm(x[i]) * np.linalg.norm(q))) for i in range(P)]
        ranked = sorted(range(P), key=lambda i: -cosines[i])
        expected = np.mean([batch.context_y[b, i] for i in ranked[:k]])
        assert batch.target[b] == pytest.approx(expected, rel=rtol(ROUNDOFF), abs=rtol(ROUNDOFF))


def test_ties_in_one_dimension_go_to_the_lowest_context_index():
    context_x = np.array([[[2.0], [-1.0], [0.5], [3.0], [-4.0]]])
    assert top_k_indices(context_x, np.array([[1.5]]), 2).tolist() == [[0, 2]]
    assert top_k_indices(context_x, np.array([[-1.0]]), 2).tolist() == [[1, 4]]


def test_top_k_indices_are_sorted_by_decreasing_cosine_similarity():
    batch = sample("difficult", ANISOTROPIC, 30, 8, np.random.default_rng(6), k=4)
    chosen = top_k_indices(batch.context_x, batch.test_x, 4)
    cosines = cosine_similarity(batch.context_x, batch.test_x)
    picked = np.take_along_axis(cosines, chosen, axis=1)
    assert np.all(np.diff(picked, axis=1) <= 0)
    assert np.all(picked[:, -1] >= np.sort(cosines, axis=1)[:, -4])


def test_isotropic_spectrum_gives_identity_rotation_and_unchanged_law():
    spectrum = Spectrum(np.full(3, 2.0), np.full(3, 0.5))
    batch = sample("difficult", spectrum, P=20_000, batch_size=2, rng=np.random.default_rng(7))
    assert np.all(batch.rotation == np.eye(3))
    for context in range(2):
        _assert_covariance_matches(batch.context_x[context], 2.0 * np.eye(3))


def test_same_generator_state_gives_the_same_batch():
    one = sample("difficult", ANISOTROPIC, 10, 3, np.random.default_rng(8), k=3)
    two = sample("difficult", ANISOTROPIC, 10, 3, np.random.default_rng(8), k=3)
    for field in ("context_x", "context_y", "test_x", "target", "rotation", "teacher"):
        np.testing.assert_array_equal(getattr(one, field), getattr(two, field))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sample_returns_arrays_of_the_requested_dtype(dtype):
    batch = sample("difficult", ANISOTROPIC, 10, 3, np.random.default_rng(9), dtype=dtype)
    for field in ("context_x", "context_y", "test_x", "target", "rotation", "teacher"):
        assert getattr(batch, field).dtype == dtype, field


def test_batch_is_frozen_and_its_arrays_are_read_only():
    batch = sample("easy", ANISOTROPIC, 4, 2, np.random.default_rng(10))
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch.task = "difficult"
    with pytest.raises(ValueError):
        batch.context_x[0, 0, 0] = 1.0


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        (dict(task="medium"), "task"),
        (dict(P=0), "P"),
        (dict(batch_size=0), "batch_size"),
        (dict(k=0), "k"),
        (dict(k=6, P=5), "k"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(kwargs, argument):
    arguments = dict(task="difficult", spectrum=ANISOTROPIC, P=5, batch_size=2, rng=np.random.default_rng(0), k=2)
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=rf"^{argument} must"):
        sample(**arguments)


def test_unknown_task_message_lists_the_allowed_tasks():
    with pytest.raises(ValueError, match="'easy', 'difficult'"):
        sample("medium", ANISOTROPIC, 5, 2, np.random.default_rng(0))


@pytest.mark.parametrize(
    "kwargs, argument",
    [(dict(rng=0), "rng"), (dict(spectrum=[1.0, 2.0]), "spectrum"), (dict(P=2.5), "P"), (dict(dtype=np.int64), "dtype")],
)
def test_wrong_types_raise_naming_the_argument(kwargs, argument):
    arguments = dict(task="easy", spectrum=ANISOTROPIC, P=5, batch_size=2, rng=np.random.default_rng(0))
    arguments.update(kwargs)
    with pytest.raises((TypeError, ValueError), match=rf"^{argument} must"):
        sample(**arguments)


# --------------------------------------------------------------------------- sampler streams 2 and 3 (the same law)
FAST_STREAMS = [2, 3]


def test_stream_1_is_the_default_and_streams_2_and_3_draw_other_numbers():
    a = sample("difficult", ANISOTROPIC, 6, 3, np.random.default_rng(0))
    b = sample("difficult", ANISOTROPIC, 6, 3, np.random.default_rng(0), stream=1)
    c = sample("difficult", ANISOTROPIC, 6, 3, np.random.default_rng(0), stream=2)
    e = sample("difficult", ANISOTROPIC, 6, 3, np.random.default_rng(0), stream=3)
    assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("context_x", "teacher", "target", "rotation"))
    assert not np.array_equal(a.context_x, c.context_x)
    # float32 (the training data): stream 3's Box–Muller radius differs in its low bits from stream 2's
    c32, e32 = (sample("difficult", ANISOTROPIC, 6, 3, np.random.default_rng(0), dtype=np.float32, stream=s) for s in (2, 3))
    assert not np.array_equal(c32.context_x, e32.context_x)


@pytest.mark.parametrize("stream", [0, 4, "2", 2.0, True])
def test_unknown_stream_raises_value_error_naming_it(stream):
    with pytest.raises(ValueError, match="stream"):
        sample("easy", ANISOTROPIC, 4, 2, np.random.default_rng(0), stream=stream)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("stream", FAST_STREAMS)
def test_fast_stream_context_inputs_have_covariance_sigma_given_their_rotation(stream, dtype):
    batch = sample("difficult", ANISOTROPIC, P=40_000, batch_size=3, rng=np.random.default_rng(10), dtype=dtype, stream=stream)
    sigmas, _ = ANISOTROPIC.covariances(batch.rotation.astype(np.float64))
    for context in range(batch.batch_size):
        _assert_covariance_matches(batch.context_x[context].astype(np.float64), sigmas[context])


@pytest.mark.parametrize("stream", FAST_STREAMS)
def test_fast_stream_teacher_has_covariance_omega_given_its_rotation(stream):
    batch = sample("easy", ANISOTROPIC, P=1, batch_size=40_000, rng=np.random.default_rng(11), dtype=np.float32, stream=stream)
    rotated_back = np.einsum("bji,bj->bi", batch.rotation.astype(np.float64), batch.teacher.astype(np.float64))
    _assert_covariance_matches(rotated_back, np.diag(ANISOTROPIC.teacher_eigenvalues))


@pytest.mark.parametrize("d", [3, 16])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("stream", FAST_STREAMS)
def test_fast_stream_rotations_are_haar(stream, d, dtype):
    """Orthogonal; E O_ij = 0, E O_ij² = 1/d; E tr O = 0, E (tr O)² = 1 (Diaconis-Shahshahani, d >= 2);
    det = ±1 with probability 1/2 -- Stewart's reflections with the wrong sign choice fail the trace check."""
    n = 20_000 if d == 3 else 4000
    rotations = haar_rotations(d, n, np.random.default_rng(12 + d), dtype=dtype, stream=stream)
    assert rotations.dtype == dtype and rotations.shape == (n, d, d)
    identity = rotations @ np.swapaxes(rotations, 1, 2)
    np.testing.assert_allclose(identity, np.broadcast_to(np.eye(d), identity.shape), atol=10 * rtol(ROUNDOFF, dtype))
    entries = rotations.reshape(n, -1).astype(np.float64)
    mean_z = np.abs(entries.mean(axis=0)) / (entries.std(axis=0, ddof=1) / np.sqrt(n))
    assert np.all(mean_z < MC_SIGMAS + 1.0), mean_z.max()  # d² entries: allow the largest of many
    squares = entries**2
    square_z = np.abs(squares.mean(axis=0) - 1 / d) / (squares.std(axis=0, ddof=1) / np.sqrt(n))
    assert np.all(square_z < MC_SIGMAS + 1.0), square_z.max()
    traces = np.trace(rotations.astype(np.float64), axis1=1, axis2=2)
    assert abs(traces.mean()) < MC_SIGMAS / np.sqrt(n), traces.mean()
    assert abs(np.mean(traces**2) - 1.0) < MC_SIGMAS * np.sqrt(2.0 / n), np.mean(traces**2)
    negative = np.mean(np.linalg.det(rotations.astype(np.float64)) < 0)
    assert abs(negative - 0.5) < MC_SIGMAS * np.sqrt(0.25 / n)


def test_stewart_reflections_without_the_sign_choice_would_fail_the_trace_check():
    """The trace check above can fail: always reflecting onto +|x| e_1 (s_j = +1) biases the diagonal."""
    from theory.data_law import householder_haar

    d, n = 16, 4000
    columns = np.random.default_rng(13).standard_normal((d * (d + 1) // 2, n))
    offsets = [j * d - j * (j - 1) // 2 for j in range(d)]
    columns[offsets] = np.abs(columns[offsets])  # x_j[0] > 0 always: s_j = −1 for every j < d−1
    traces = np.trace(householder_haar(columns, d), axis1=1, axis2=2)
    assert abs(traces.mean()) > MC_SIGMAS / np.sqrt(n)


@given(
    task=st.sampled_from(TASKS),
    d=st.integers(1, 5),
    P=st.integers(1, 12),
    batch_size=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
    isotropic=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
    stream=st.sampled_from(FAST_STREAMS),
)
def test_fast_stream_labels_and_targets_are_exact_for_the_returned_arrays(task, d, P, batch_size, seed, isotropic, dtype,
                                                                         stream):
    """Stream 2's target is the law's mean bit for bit; stream 3 sums over the mask of the same S_k (round-off)."""
    spectrum = PowerLawSpectrum(0.0, 0.0, d) if isotropic else PowerLawSpectrum(1.0, 0.5, d)
    k = min(2, P)
    batch = sample(task, spectrum, P, batch_size, np.random.default_rng(seed), k=k, dtype=dtype, stream=stream)
    assert batch.context_x.dtype == dtype and batch.target.dtype == dtype and batch.rotation.dtype == dtype
    labels = np.einsum("bpd,bd->bp", batch.context_x, batch.teacher)
    np.testing.assert_allclose(batch.context_y, labels, rtol=rtol(ROUNDOFF, dtype), atol=rtol(ROUNDOFF, dtype))
    if task == "easy":
        matched = np.all(batch.context_x == batch.test_x[:, None, :], axis=2)
        assert np.all(matched.any(axis=1))
        rows = np.arange(batch_size)
        assert np.array_equal(batch.target, batch.context_y[rows, matched.argmax(axis=1)])
    else:
        chosen = top_k_indices(batch.context_x, batch.test_x, k)  # the law's top-k on the returned arrays
        law_target = batch.context_y[np.arange(batch_size)[:, None], chosen].mean(axis=1)
        if stream == 2:
            assert np.array_equal(batch.target, law_target)
        else:
            scale = np.abs(batch.context_y).max(axis=1)
            assert np.all(np.abs(batch.target - law_target) <= 4 * np.finfo(dtype).eps * (scale + 1))


@pytest.mark.parametrize("stream", [1, *FAST_STREAMS])
def test_flat_spectra_with_prefactors_scale_inputs_teacher_and_query(stream):
    """Flat λ = c_λ, ω = c_ω (no rotation drawn): Var x = c_λ, Var β = c_ω, Var x_test = c_λ in every stream."""
    spectrum = PowerLawSpectrum(0.0, 0.0, 4, c_lambda=2.0, c_omega=3.0)
    batch = sample("difficult", spectrum, P=50, batch_size=4000, rng=np.random.default_rng(21), dtype=np.float32,
                   stream=stream)
    for values, variance in ((batch.context_x, 2.0), (batch.teacher, 3.0), (batch.test_x, 2.0)):
        draws = values.astype(np.float64).ravel()
        se = variance * np.sqrt(2.0 / draws.size)  # SE of a Gaussian sample variance
        assert abs(draws.var() - variance) < MC_SIGMAS * se, (variance, draws.var())
