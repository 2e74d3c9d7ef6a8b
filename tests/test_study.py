"""Claims about the regime study, the oracle bounds and the paper-consistency check (numerics.experiments.study, numerics.experiments.bounds)."""

import re
import subprocess

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from page_parts import headings
from tolerances import APPROX, MC_SIGMAS, ROUNDOFF, rtol

from numerics.experiments.bounds import HeadBound, head_outputs, softmax_head_bound
from numerics.experiments.execution import Execution
from numerics.models import get_model
from numerics.models._common import layer_norm
from numerics.experiments import bounds as bounds_module
from numerics.experiments import cache as cache_module
from numerics.experiments import criteria
from numerics.experiments.study.curves import summarise_seeds
from numerics.experiments.reproduce.scales import SCALES
from numerics.experiments.study import (
    fit_inverse_depth,
    name_regime,
    paper_consistency,
    regime_config,
    run_regime_study,
    separate_models_average,
    write_regime_study,
)
from numerics.tasks import sample
from theory import PowerLawSpectrum
from theory.decomposition import exchangeable_loss
from _checkout import ROOT, checkout_env, idepth_command


# ----------------------------------------------------------------------------- oracle bounds
def _loop_head_outputs(cx, cy, tx, temperatures):
    """Softmax reads one context, one token at a time (reference for head_outputs)."""
    out = np.empty((cx.shape[0], len(temperatures)))
    for b in range(cx.shape[0]):
        cos = [float(cx[b, i] @ tx[b] / (np.linalg.norm(cx[b, i]) * np.linalg.norm(tx[b]))) for i in range(cx.shape[1])]
        for j, tau in enumerate(temperatures):
            w = [np.exp(tau * (c - max(cos))) for c in cos]
            out[b, j] = sum(wi * yi for wi, yi in zip(w, cy[b])) / sum(w)
    return out


def test_head_outputs_equal_a_token_by_token_softmax():
    rng = np.random.default_rng(0)
    batch = sample("difficult", PowerLawSpectrum(0.5, 1.0, 3), 5, 7, rng)
    taus = np.array([0.0, 0.7, 5.0, 80.0])
    fast = head_outputs(batch.context_x, batch.context_y, batch.test_x, taus)
    np.testing.assert_allclose(fast, _loop_head_outputs(batch.context_x, batch.context_y, batch.test_x, taus),
                               rtol=rtol(ROUNDOFF), atol=rtol(ROUNDOFF))


def test_bound_agrees_with_brute_force_evaluation_on_rotated_contexts():
    """The eigenbasis sampler of the bound has the law of numerics.tasks.sample (rotations included)."""
    spectrum = PowerLawSpectrum(0.5, 1.0, 3)
    P, k = 6, 2
    bound = softmax_head_bound(spectrum, P, k, n_contexts=8192, rng=1)
    batch = sample("difficult", spectrum, P, 4096, np.random.default_rng(2), k=k)  # Haar rotation per context
    reads = _loop_head_outputs(batch.context_x, batch.context_y, batch.test_x, [bound.temperature])[:, 0]
    sq = (bound.gain * reads - batch.target) ** 2
    brute, brute_se = sq.mean(), sq.std(ddof=1) / np.sqrt(sq.size)
    assert abs(bound.single_head_loss - brute) < MC_SIGMAS * np.hypot(bound.single_head_standard_error, brute_se)
    t2 = batch.target**2
    assert abs(bound.target_second_moment - t2.mean()) < MC_SIGMAS * 2 * t2.std(ddof=1) / np.sqrt(t2.size)


def test_mixture_of_heads_is_not_worse_than_one_head_beyond_noise():
    bound = softmax_head_bound(PowerLawSpectrum(0, 0, 8), 32, 2, n_contexts=4096, rng=3)
    assert bound.mixture_loss < bound.single_head_loss + MC_SIGMAS * bound.single_head_standard_error
    assert bound.single_head_loss < bound.target_second_moment


def test_prenorm_similarity_is_the_cosine_of_the_models_normalised_features():
    """ĥ_iᵀĥ_test = N cos_M(x_i, x_test) with M = I − v vᵀ/N, v = W_xᵀ1 (what 'prenorm' samples)."""
    rng = np.random.default_rng(4)
    d, N = 5, 5
    W_x = get_model("nonlinear").init_params(d, N, 1, rng)["W_x"]
    x = 1e3 * rng.standard_normal((6, d))  # large inputs: the LayerNorm eps is negligible
    h_hat, _ = layer_norm(x @ W_x.T)
    v = W_x.T @ np.ones(N)
    M = np.eye(d) - np.outer(v, v) / N
    cos_M = (x @ M @ x[0]) / np.sqrt(np.einsum("id,de,ie->i", x, M, x) * (x[0] @ M @ x[0]))
    np.testing.assert_allclose(h_hat @ h_hat[0] / N, cos_M, rtol=rtol(APPROX))


def test_prenorm_bound_at_width_d_is_worse_than_the_exact_cosine_bound():
    spectrum = PowerLawSpectrum(0, 0, 8)
    cosine = softmax_head_bound(spectrum, 32, 2, n_contexts=4096, rng=5)
    prenorm = softmax_head_bound(spectrum, 32, 2, n_contexts=4096, rng=5, similarity="prenorm", width=8)
    gap = prenorm.single_head_loss - cosine.single_head_loss
    assert gap > MC_SIGMAS * np.hypot(prenorm.single_head_standard_error, cosine.single_head_standard_error)


@pytest.mark.parametrize(
    "kwargs, name",
    [(dict(k=9), "k"), (dict(similarity="euclid"), "similarity"), (dict(similarity="prenorm"), "width"),
     (dict(width=8), "width"), (dict(similarity="prenorm", width=2), "width"), (dict(temperatures=[-1.0]), "temperatures")],
)
def test_bad_bound_arguments_raise_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        softmax_head_bound(PowerLawSpectrum(0, 0, 4), 8, **{"k": 2, **kwargs}, n_contexts=32)


# ----------------------------------------------------------------------------- analysis helpers
@given(L0=st.floats(0.1, 10.0), c=st.floats(0.1, 10.0))
def test_inverse_depth_fit_recovers_the_exchangeable_law(L0, c):
    depths = [1, 2, 4, 8, 16]
    losses = exchangeable_loss(depths, A=L0 + c, C=L0)
    fit_L0, fit_c, cov = fit_inverse_depth(depths, losses)
    scale = L0 + c  # lstsq on exact data: round-off relative to the size of the losses
    assert fit_L0 == pytest.approx(L0, abs=rtol(ROUNDOFF) * scale)
    assert fit_c == pytest.approx(c, abs=rtol(ROUNDOFF) * scale)
    assert cov.shape == (2, 2)


def test_exact_inverse_depth_data_is_classified_inverse_depth_and_constant_data_flat():
    depths = [1, 2, 4, 8, 16]
    R = [[2.0 + 4.0 / L for L in depths]] * 3
    A = [[6.0] * 5] * 3
    C = [[np.nan] + [2.0] * 4] * 3
    point = summarise_seeds("lazy", (8, 32, 8), (0.0, 0.0), 2, depths, R, A, C)
    assert point.alpha == pytest.approx(1.0, rel=rtol(APPROX))
    assert point.depth_gain == pytest.approx(6.0 / 2.25, rel=rtol(ROUNDOFF))
    assert point.settled and point.verdict == "inverse-depth"
    flat = summarise_seeds("converged", (8, 32, 8), (0.0, 0.0), 2, depths, [[3.0] * 5] * 3, A, C)
    assert flat.verdict == "flat"
    assert name_regime([point, flat]) == "inverse-depth under lazy training; flat at convergence"


def test_a_growing_disagreement_does_not_settle():
    depths = [1, 2, 4, 8]
    A = [[6.0, 7.0, 9.0, 13.0]] * 3
    C = [[np.nan, 2.0, 2.0, 2.0]] * 3
    R = [[a if L == 1 else c + (a - c) / L for a, c, L in zip(A[0], C[0], depths)]] * 3
    point = summarise_seeds("converged", (8, 32, 8), (0.0, 0.0), 2, depths, R, A, C)
    assert point.gap_change == pytest.approx((11.0 - 7.0) / 7.0, rel=rtol(ROUNDOFF))
    assert not point.settled and point.verdict != "inverse-depth"


def test_classify_depth_dependence_names_the_three_cases():
    assert criteria.classify_depth_dependence(1.05, 1.0, True) == "flat"
    assert criteria.classify_depth_dependence(1.6, 1.0, True) == "inverse-depth"
    assert criteria.classify_depth_dependence(1.6, 0.5, True).startswith("improves")
    assert criteria.classify_depth_dependence(1.6, 1.0, False).startswith("improves")


def test_separate_models_average_is_the_loss_of_the_mean_prediction():
    rng = np.random.default_rng(6)
    f, y = rng.normal(size=(8, 50)), rng.normal(size=50)
    groups = separate_models_average(f, y, 4)
    assert len(groups) == 2
    for g, group in enumerate(groups):
        direct = np.mean((f[4 * g:4 * g + 4].mean(axis=0) - y) ** 2)
        assert group["R_L"] == pytest.approx(direct, rel=rtol(ROUNDOFF))
        assert group["R_L"] == pytest.approx(group["C_L"] + (group["A_L"] - group["C_L"]) / 4, rel=rtol(ROUNDOFF))
    with pytest.raises(ValueError, match="depth"):
        separate_models_average(f, y, 9)


# ----------------------------------------------------------------------------- paper consistency
def _synthetic(single, mixture, se=0.05):
    def bound(a, b, d, P, k):
        return HeadBound(single, se, 10.0, 1.0, mixture, se, (10.0,), (1.0,), 60.0, "synthetic", P, k, "cosine", 64, 64, d)
    return bound


def test_paper_value_below_a_synthetic_bound_is_flagged_with_its_numbers():
    report = paper_consistency(P_values=(1024,), bound=_synthetic(5.0, 4.0))
    table1 = [r for r in report.rows if r.source.startswith("Table 1") and (r.a, r.b) == (0.0, 0.0)][0]
    assert table1.paper_value == "2.007" and table1.below_bound
    assert (table1.d, table1.P, table1.mixture) == (128, 1024, 4.0)
    assert "2.007" in report.markdown and "Unattainable" in table1.statement
    assert report.n_below == len(report.rows)  # every plateau of Tables 1 and 4 is below 4.0


def test_paper_value_within_noise_of_the_bound_is_not_flagged():
    report = paper_consistency(P_values=(1024,), bound=_synthetic(2.1, 2.1, se=0.1))
    row = [r for r in report.rows if r.source.startswith("Table 1") and (r.a, r.b) == (0.0, 0.0)][0]
    assert not row.below_bound  # 2.007 is less than 1 SE below 2.1


def test_paper_consistency_caches_its_bounds(tmp_path, monkeypatch):
    cached = Execution(cache_dir=tmp_path, progress=False)
    first = paper_consistency(d=4, P_values=(16,), n_contexts=64, execution=cached)
    cells = {(r.a, r.b, r.k) for r in first.rows}
    assert len(list(tmp_path.glob("oracle-bound-*.json"))) == len(cells)

    def must_not_compute(cache_dir, kind, key, code, value):
        raise AssertionError(f"bound recomputed although cached: {key}")

    monkeypatch.setattr(cache_module, "_save", must_not_compute)  # a value is saved only when it was computed
    again = paper_consistency(d=4, P_values=(16,), n_contexts=64, execution=cached)
    assert [r.mixture for r in again.rows] == [r.mixture for r in first.rows]
    with pytest.raises(AssertionError, match="recomputed"):  # and a new size is computed, not invented
        paper_consistency(d=4, P_values=(17,), n_contexts=64, execution=cached)


def test_one_bound_has_one_value_and_different_bounds_independent_draws():
    key = bounds_module.bound_key(0.0, 0.0, 4, 16, 2, n_contexts=256, heads=4)
    other = bounds_module.bound_key(0.0, 0.5, 4, 16, 2, n_contexts=256, heads=4)
    first, again = bounds_module.compute_bound(key), bounds_module.compute_bound(key)
    assert first == again
    a = bounds_module.bound_stream(key).standard_normal(64)
    b = bounds_module.bound_stream(other).standard_normal(64)
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.5  # not one shared stream


# ----------------------------------------------------------------------------- the study on a tiny grid
def test_regime_configs_share_the_lazy_initialisation_and_freeze_the_gain():
    lazy = regime_config("lazy", d=4, N=4, P=16, depth=2, seed=0, scale="smoke")
    assert set(lazy.frozen) == {"W_o", "W_v", "W_y"}
    assert lazy.learning_rate == 1e-4 and lazy.schedule == "constant"
    assert lazy.init_options["qk_scale"] == 0.6 and lazy.init_options["qk_noise"] == 0.5
    converged = regime_config("converged", d=4, N=4, P=16, depth=2, seed=0, scale="smoke")
    assert not converged.frozen


def _seed_mean(values):
    """Mean over seeds of each depth's finite values (NaN where a depth has none, as C_L at L = 1)."""
    return np.array([np.mean(col[np.isfinite(col)]) if np.any(np.isfinite(col)) else np.nan
                     for col in np.asarray(values, dtype=float).T])


def test_smoke_study_runs_and_its_numbers_follow_the_rules(tmp_path, monkeypatch):
    computed = run_regime_study("smoke", tmp_path, execution=Execution(workers=2, progress=False))
    assert computed.markdown == "" and not (tmp_path / "study.md").exists()  # a run writes no page
    study = write_regime_study(computed)
    scale = SCALES["smoke"].study
    assert {p.name for p in study.points} == set(scale.regimes)
    assert study.trained == study.runs > 0
    for p in study.points:
        assert p.n_seeds >= 3
        R = np.asarray(p.R.values)
        assert R.shape == (p.n_seeds, len(p.depths)) and np.all(np.isfinite(R))
        assert p.depth_gain == pytest.approx(R[:, 0].mean() / R[:, -1].mean(), rel=rtol(ROUNDOFF))
        # every derived field recomputed here from the point's own per-seed curves
        plateau = criteria.last_doubling(p.depths, _seed_mean(p.C.values))[2]
        gap = criteria.last_doubling(p.depths, _seed_mean(p.gap.values))[2]
        assert p.C_change == pytest.approx(plateau, rel=rtol(ROUNDOFF), nan_ok=True)
        assert p.gap_change == pytest.approx(gap, rel=rtol(ROUNDOFF), nan_ok=True)
        assert p.settled == bool(plateau < criteria.SETTLING_TOLERANCE and gap < criteria.SETTLING_TOLERANCE)
        assert p.verdict == criteria.classify_depth_dependence(p.depth_gain, p.alpha, p.settled)
        lo, hi = p.alpha_interval
        if np.isfinite(lo) and np.isfinite(hi):  # a fit at its search bound has no interval
            assert lo <= p.alpha <= hi
    assert study.regime_name == name_regime(study.points)
    assert "Where inverse-depth scaling appears" in headings(study.markdown, level=2)
    assert all((tmp_path / f).stat().st_size > 0 for f in study.figures)
    bound = study.bounds[(4, 16, 4, 0.0, 0.0)]
    assert bound["cosine"].single_head_loss > 0 and bound["prenorm"].width == 4

    # re-running reuses the store and the caches: nothing is trained or computed again
    def must_not_compute(*args, **kwargs):
        raise AssertionError("recomputed although cached")

    monkeypatch.setattr(cache_module, "_save", must_not_compute)  # a value is saved only when it was computed
    again = run_regime_study("smoke", tmp_path, execution=Execution(workers=1, progress=False))
    assert again.trained == 0 and again.runs == study.runs
    assert [p.R.mean.tolist() for p in again.points] == [p.R.mean.tolist() for p in study.points]

    # the reproduction reads the same runs through its own path (the store's records, StoreResults.curve, the
    # regime's Family): the same curves give the same summary, number for number, so the two cannot disagree
    from numerics.experiments.study.curves import summarise_curves
    from numerics.experiments.reproduce.results import StoreResults
    from numerics.io import json_clean

    results = StoreResults(tmp_path / "store")
    for regime in ("lazy", "converged"):
        p = study.point(regime)
        family = scale.family(regime, p.size)
        curves = [results.curve(family, p.a, p.b, quantity) for quantity in ("R_L", "C_L", "A_minus_C")]
        assert json_clean(summarise_curves(regime, *curves, size=p.size, k=p.k).to_dict()) == json_clean(p.to_dict())


def _idepth(*args):
    return subprocess.run(idepth_command(*args), capture_output=True, text=True, timeout=120, cwd=ROOT, env=checkout_env())


def test_cli_study_refuses_bad_input_with_one_line_and_exit_2(tmp_path):
    out = _idepth("study", "regime", "--scale", "huge", "--out", str(tmp_path))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "scale" in out.stderr
    a_file = tmp_path / "file"
    a_file.write_text("x")
    out = _idepth("study", "consistency", "--out", str(a_file), "--d", "4", "--P", "16", "--contexts", "32")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "file" in out.stderr


# ----------------------------------------------------------------------------- idepth study --help
def _study_parsers():
    import idepth.cli as cli

    top = cli._subcommands(cli.build_parser())
    return top, cli._subcommands(top.choices["study"])


def test_study_help_names_every_registered_action_and_every_plan(capsys):
    import idepth.cli as cli
    from idepth.commands.study import PLANS

    top, actions = _study_parsers()
    assert {"run", "page", "certified"} <= set(actions.choices)
    with pytest.raises(SystemExit):
        cli.main(["study", "--help"])
    listing = capsys.readouterr().out.split("positional arguments")[1]
    assert all(re.search(rf"^    {name}\b", listing, re.M) for name in actions.choices)
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    study_line = " ".join(capsys.readouterr().out.split()).split(" study ")[1].split(" reproduce ")[0]
    assert study_line.endswith(f"run PLAN ({', '.join(PLANS)}), page PLAN")


def test_the_study_help_follows_the_plans_registered_not_a_typed_list(monkeypatch):
    import idepth.cli as cli
    from idepth.commands import study

    monkeypatch.setitem(study.PLANS, "extra", ("a plan added", lambda p: None, lambda args: 0))
    top = cli._subcommands(cli.build_parser())
    assert "extra" in top._choices_actions[[a.dest for a in top._choices_actions].index("study")].help
    assert "extra" in cli._subcommands(cli._subcommands(top.choices["study"]).choices["run"]).choices
