"""Claims of the infinite-mixture limit R*_∞ (theory.mixture_limit): Frank–Wolfe, its bracket, the head kernel."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.tolerances import FINITE_DIFF, MC_SIGMAS, ROUNDOFF, rtol
from theory import PowerLawSpectrum
from theory import mixture_limit as ml
from theory.head_families import draw_contexts, form_reads
from theory.head_kernel import herding_excess, kernel_spectrum

SPECTRUM = PowerLawSpectrum(0, 0, 4)
P, K = 8, 2
#: a tiny oracle: enough to move, cheap enough for a test
SMALL = dict(steps=6, polish_steps=2, n_random=2, n_perturbed=2, batch=128, polish=2, pool=256)


@pytest.fixture(scope="module")
def contexts():
    return draw_contexts(SPECTRUM, P, K, 400, np.random.default_rng(3))


def test_read_gradient_value_is_the_mean_of_residual_times_read(contexts):
    forms = np.stack([3 * np.eye(4), np.arange(16.0).reshape(4, 4) / 8])
    r = np.random.default_rng(0).standard_normal(contexts.n)
    phi, _ = ml.read_gradient(forms, contexts, r, dtype=np.float64)
    assert np.allclose(phi, r @ form_reads(forms, contexts, dtype=np.float64) / contexts.n, rtol=rtol(ROUNDOFF))


def test_read_gradient_equals_central_finite_differences(contexts):
    rng = np.random.default_rng(1)
    D = 4 * np.eye(4) + rng.standard_normal((4, 4))          # a general (non-symmetric) form
    r = rng.standard_normal(contexts.n)
    _, grad = ml.read_gradient(D[None], contexts, r, dtype=np.float64)
    h = 1e-6
    for _ in range(4):
        E = rng.standard_normal((4, 4))
        plus, _ = ml.read_gradient((D + h * E)[None], contexts, r, dtype=np.float64)
        minus, _ = ml.read_gradient((D - h * E)[None], contexts, r, dtype=np.float64)
        numeric = (plus[0] - minus[0]) / (2 * h)
        assert np.isclose(np.sum(grad[0] * E), numeric, rtol=rtol(FINITE_DIFF), atol=1e-9)


def test_best_response_lowers_the_linear_objective_below_every_cosine_start(contexts):
    r = -contexts.target
    D, phi = ml.best_response(contexts, r, rng=0, **{k: v for k, v in SMALL.items() if k != "pool"})
    cosine = min(float(r @ form_reads(t * np.eye(4)[None], contexts, dtype=np.float64)[:, 0]) / contexts.n
                 for t in (2.0, 4.0, 8.0, 16.0))
    assert phi < cosine


def _two_form_target():
    A, B = 2.0 * np.eye(4), 12.0 * np.eye(4) + np.triu(np.ones((4, 4)), 1)
    return A, B, (lambda c: 0.7 * form_reads(np.stack([A, B]), c, dtype=np.float64).mean(axis=1))


def test_frank_wolfe_recovers_a_known_measure_to_roundoff():
    # the target is g E_μ u with μ = (δ_A + δ_B)/2, g = 0.7: R*_∞ = 0, reached by a measure on the dictionary
    A, B, target = _two_form_target()
    distractors = np.stack([5 * np.eye(4), 30 * np.eye(4), -np.eye(4)])
    mix = ml.infinite_mixture(SPECTRUM, P, K, n_fit=512, n_report=512, iterations=1, oracle=SMALL,
                              initial_forms=np.concatenate([np.stack([A, B]), distractors]),
                              compare_expressible=False, _target=target)
    assert mix.fit_loss < 1e-12 and mix.upper < 1e-10
    assert abs(mix.gain - 0.7) < 1e-6
    on_a = [np.allclose(f, A) for f in mix.forms]
    on_b = [np.allclose(f, B) for f in mix.forms]
    assert np.isclose(mix.weights[on_a].sum(), 0.5, atol=1e-6) and np.isclose(mix.weights[on_b].sum(), 0.5, atol=1e-6)
    assert 0 <= mix.gap < 1e-5 and mix.lower <= mix.fit_loss


def test_frank_wolfe_from_the_empty_measure_approaches_a_known_measure():
    _, _, target = _two_form_target()
    mix = ml.infinite_mixture(SPECTRUM, P, K, n_fit=512, n_report=512, iterations=4, tol=0.0, oracle=SMALL,
                              warm_start=False, compare_expressible=False, _target=target)
    variance = float(np.mean(target(draw_contexts(SPECTRUM, P, K, 512, 0)) ** 2))
    assert mix.fit_loss < 0.05 * variance


def test_gap_is_nonnegative_shrinks_and_brackets_the_fit_loss():
    mix = ml.infinite_mixture(SPECTRUM, P, K, n_fit=512, n_report=512, iterations=5, tol=0.0, oracle=SMALL,
                              warm_start=False, compare_expressible=False)
    gaps = [h["gap"] for h in mix.history]
    fits = [h["fit_loss"] for h in mix.history]
    assert all(g >= 0 for g in gaps)
    assert gaps[-1] < gaps[0]
    assert all(b <= a + 1e-12 for a, b in zip(fits, fits[1:]))     # fully corrective: the fit loss never rises
    assert mix.lower <= mix.fit_loss and mix.lower == pytest.approx(mix.fit_loss - mix.gap)
    assert np.isclose(mix.weights.sum(), 1.0) and np.all(mix.weights > 0)


def test_kernel_eigenvalues_of_m_atoms_have_rank_at_most_m_and_sum_to_the_iid_variance():
    rng = np.random.default_rng(0)
    reads = rng.standard_normal((1000, 5))
    w = np.array([0.1, 0.2, 0.3, 0.4, 0.0])
    ks = kernel_spectrum(reads, w)
    assert ks.eigenvalues.size == 5 and np.sum(ks.eigenvalues > 1e-12 * ks.eigenvalues[0]) <= 4
    mean = reads @ w
    variance = float(np.mean(((reads - mean[:, None]) ** 2) @ w))       # E Var_μ(u): the i.i.d. V
    assert np.isclose(ks.eigenvalues.sum(), variance, rtol=rtol(ROUNDOFF))


def test_decay_fit_recovers_a_known_exponent_with_interval_coverage():
    s_true, covered, trials = 1.5, 0, 20
    for seed in range(trials):
        rng = np.random.default_rng(seed)
        reads = rng.standard_normal((4000, 24)) * np.arange(1, 25) ** (-s_true / 2)
        ks = kernel_spectrum(reads, np.ones(24), fit_range=(1, 12))
        covered += ks.decay_interval[0] <= s_true <= ks.decay_interval[1]
    assert covered >= 16                                                  # nominal 95 %: at least 80 % of 20
    assert ks.alpha_predicted == pytest.approx(min(max(ks.decay, 1.0), 2.0))


def test_herding_reaches_the_mean_faster_than_iid_draws():
    rng = np.random.default_rng(0)
    reads = rng.standard_normal((2000, 8))
    w = np.ones(8) / 8
    depths = [8, 64]
    herd = herding_excess(reads, w, depths)
    variance = kernel_spectrum(reads, w).eigenvalues.sum()
    assert np.all(herd <= variance / np.array(depths))
    assert herd[1] < 1e-2 * variance / 64                                  # 8 atoms: equal counts reach μ exactly


@pytest.mark.parametrize("kwargs, name", [
    (dict(n_fit=10), "n_fit"), (dict(n_report=0), "n_report"), (dict(iterations=0), "iterations"),
    (dict(oracle={"speed": 1}), "oracle"), (dict(oracle={"steps": 0}), "oracle"), (dict(tol=-1.0), "tol"),
])
def test_bad_sizes_raise_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ml.infinite_mixture(SPECTRUM, P, K, **kwargs)


def test_bad_setting_raises_naming_the_argument():
    with pytest.raises(ValueError, match="spectrum"):
        ml.infinite_mixture("flat", P, K)
    with pytest.raises(ValueError, match="P"):
        ml.infinite_mixture(SPECTRUM, 0, K)
    with pytest.raises(ValueError, match="k"):
        ml.infinite_mixture(SPECTRUM, P, P + 1)
    with pytest.raises(ValueError, match="initial_forms"):
        ml.infinite_mixture(SPECTRUM, P, K, initial_forms=np.eye(3)[None])


def test_an_interrupted_run_leaves_no_final_file_and_resumes_to_the_same_result(tmp_path):
    path = tmp_path / "run.json"
    common = dict(n_fit=256, n_report=256, iterations=3, tol=0.0, oracle=SMALL, warm_start=False,
                  compare_expressible=False, checkpoint=path)
    with pytest.raises(KeyboardInterrupt):
        ml.infinite_mixture(SPECTRUM, P, K, _interrupt_after=2, **common)
    state = json.loads(path.read_text())
    assert state["final"] is False and len(state["history"]) == 2
    with pytest.raises(ValueError, match="not a final result"):
        ml.load_infinite_mixture(path)
    resumed = ml.infinite_mixture(SPECTRUM, P, K, **common)
    assert ml.load_infinite_mixture(path).final
    straight = ml.infinite_mixture(SPECTRUM, P, K, **{**common, "checkpoint": tmp_path / "straight.json"})
    # the reads are float32 and a resumed run recomputes its atoms' reads in one batch: float32 round-off
    assert resumed.fit_loss == pytest.approx(straight.fit_loss, rel=rtol(ROUNDOFF, np.float32))
    assert [h["atoms"] for h in resumed.history] == [h["atoms"] for h in straight.history]
    assert not list(tmp_path.glob("*.tmp"))


def test_a_checkpoint_with_other_options_is_restarted_not_resumed(tmp_path):
    path = tmp_path / "run.json"
    common = dict(n_fit=256, n_report=256, tol=0.0, oracle=SMALL, warm_start=False, compare_expressible=False,
                  checkpoint=path)
    with pytest.raises(KeyboardInterrupt):
        ml.infinite_mixture(SPECTRUM, P, K, iterations=3, _interrupt_after=1, **common)
    fresh = ml.infinite_mixture(SPECTRUM, P, K, iterations=2, seed=5, **common)
    assert len(fresh.history) == 2 and fresh.setting["seeds"]["fit"] == 5


def test_result_round_trips_through_json():
    mix = ml.infinite_mixture(SPECTRUM, P, K, n_fit=256, n_report=256, iterations=2, oracle=SMALL,
                              warm_start=False, compare_expressible=False)
    back = ml.InfiniteMixture.from_dict(json.loads(json.dumps(mix.to_dict())))
    assert np.array_equal(back.forms, mix.forms) and back.upper == mix.upper
    assert back.kernel.effective_rank == mix.kernel.effective_rank and back.alpha_interval == mix.alpha_interval


def test_shipped_files_are_final_and_bracketed():
    for a, b in ((0, 0), (0, 0.25), (0, 0.5), (0, 1), (0.25, 0), (0.5, 0), (1, 0)):
        path = ml.default_out_dir() / ml.data_file_name(a, b, 16, 64, 2)
        if not path.is_file() or not json.loads(path.read_text()).get("final"):
            continue
        mix = ml.shipped_infinite_mixture(PowerLawSpectrum(a, b, 16), 64, 2)
        assert mix.final and mix.lower <= mix.fit_loss and mix.gap >= 0
        assert mix.forms.shape == (mix.atoms, 16, 16) and np.isclose(mix.weights.sum(), 1.0)
        # fit and report sets are independent: their difference has SE √2 upper_se (the weights' optimism is smaller)
        assert abs(mix.upper - mix.fit_loss) < MC_SIGMAS * np.sqrt(2) * mix.upper_se


@pytest.mark.parametrize("argv, words", [
    (["bracket", "compute", "--spectra", "x"], "--spectra must look like"),
    (["bracket", "compute", "--spectra", "0,0", "--iterations", "0"], "iterations must be an integer >= 1"),
])
def test_cli_bad_input_is_one_line_and_status_2(argv, words, capsys, tmp_path):
    from idepth.cli import main

    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert words in err[-1] and err[-1].startswith("idepth bracket: error:")
    assert not list(tmp_path.glob("*.json"))


def test_confirming_the_gap_only_widens_the_bracket_and_runs_once(tmp_path):
    path = tmp_path / "run.json"
    mix = ml.infinite_mixture(SPECTRUM, P, K, n_fit=256, n_report=256, iterations=2, oracle=SMALL, warm_start=False,
                              compare_expressible=False, checkpoint=path)
    confirmed = ml.confirm_gap(path, checks=2)
    assert confirmed.gap >= mix.gap and confirmed.lower == pytest.approx(confirmed.fit_loss - confirmed.gap)
    assert len(confirmed.setting["gap_checks"]["oracle_phi"]) == 2
    again = ml.confirm_gap(path, checks=2)
    assert again.gap == confirmed.gap and again.cpu_seconds == confirmed.cpu_seconds
    with pytest.raises(ValueError, match="checks"):
        ml.confirm_gap(path, checks=0)


def test_result_files_are_as_readable_as_any_file_the_user_creates(tmp_path):
    import os

    path = tmp_path / "run.json"
    ml.infinite_mixture(SPECTRUM, P, K, n_fit=128, n_report=128, iterations=1, oracle=SMALL, warm_start=False,
                        compare_expressible=False, checkpoint=path)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
