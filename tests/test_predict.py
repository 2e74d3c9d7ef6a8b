"""Claims about theory.predict_loss and the `idepth predict` command."""

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from theory import PowerLawSpectrum, Spectrum, decompose, predict_loss
from theory.polynomial_laws import constrained_loss, free_loss
from tolerances import ROUNDOFF, rtol
from _checkout import ROOT, checkout_env, idepth_command

SPEC = PowerLawSpectrum(a=2.0, b=1.0, d=512)


@given(a=st.floats(1.0, 3.0), b=st.floats(0.5, 2.0))
def test_linear_easy_prediction_reports_zeta_and_decreases_with_depth(a, b):
    spec = PowerLawSpectrum(a, b, 256)
    pred = predict_loss([1, 2, 4, 8, 16], spec)
    assert pred.exponent == pytest.approx((a + b - 1) / a, rel=1e-12)
    assert np.all(np.diff(pred.loss) < 0)
    np.testing.assert_allclose(pred.loss, constrained_loss([1, 2, 4, 8, 16], spec), rtol=rtol(ROUNDOFF))


def test_free_prediction_never_exceeds_constrained_prediction():
    depths = np.arange(1, 40)
    free = predict_loss(depths, SPEC, polynomial="free")
    constrained = predict_loss(depths, SPEC)
    assert np.all(free.loss <= constrained.loss * (1 + rtol(ROUNDOFF)))
    assert free.exponent == pytest.approx(2 * constrained.exponent)
    np.testing.assert_allclose(free.loss, free_loss(depths, SPEC), rtol=rtol(ROUNDOFF))


def test_in_window_flags_follow_the_validity_window():
    pred = predict_loss([1, 10, 100, 10**4, 10**5], SPEC)
    # window for a=2, d=512: 1 << L << λ_1/λ_d = 512² with a decade of margin each side
    assert pred.in_window.tolist() == [False, True, True, True, False]


def test_softmax_easy_prediction_is_zero_and_says_why():
    pred = predict_loss([1, 3, 9], SPEC, attention="softmax", task="easy")
    assert np.all(pred.loss == 0)
    assert any("exact match" in a for a in pred.assumptions)


def test_softmax_difficult_prediction_from_a_measured_decomposition_reproduces_the_measured_loss():
    rng = np.random.default_rng(3)
    depth, n = 6, 400
    shared = rng.normal(size=n)
    f = shared + rng.normal(size=(depth, n))  # per-layer predictors with a shared error
    targets = np.zeros(n)
    dec = decompose(f, targets)
    pred = predict_loss([1, depth, 1000], SPEC, attention="softmax", task="difficult", calibration=dec)
    assert pred.loss[1] == pytest.approx(dec.R, rel=rtol(ROUNDOFF))  # eq. 63 is exact at the measured depth
    assert pred.loss[0] == pytest.approx(dec.A, rel=rtol(ROUNDOFF))
    assert pred.plateau == pytest.approx(dec.C)
    assert np.all(pred.lower < pred.loss) and np.all(pred.loss < pred.upper)


def test_linear_difficult_prediction_is_non_increasing_in_depth():
    spec = PowerLawSpectrum(0.5, 0.5, 16)
    pred = predict_loss([1, 2, 4, 8], spec, attention="linear", task="difficult", P=64, k=2)
    assert np.all(np.diff(pred.loss) <= 1e-12 * pred.loss[0])
    assert pred.loss[-1] > 0


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(attention="quadratic"), "attention"),
        (dict(task="medium"), "task"),
        (dict(polynomial="chebyshev"), "polynomial"),
        (dict(attention="softmax", task="difficult"), "P"),
        (dict(attention="softmax", task="difficult", regime="calibrated"), "calibration"),
        (dict(attention="linear", task="difficult"), "P"),
        (dict(attention="linear", task="difficult", P=4, k=5), "k"),
        (dict(polynomial="free", gamma=0.5), "gamma"),
        (dict(gamma=100.0), "gamma"),
    ],
)
def test_bad_arguments_raise_value_error_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        predict_loss([1, 2], SPEC, **kwargs)


@pytest.mark.parametrize("depth", [0, -3, 2.5, float("nan"), float("inf")])
def test_bad_depths_raise_value_error_naming_depth(depth):
    with pytest.raises(ValueError, match="depth"):
        predict_loss(depth, SPEC)


@pytest.mark.parametrize(
    "eigenvalues, teacher", [([1.0, -1.0], [1.0, 1.0]), ([1.0, 0.0], [1.0, 1.0]), ([1.0, np.nan], [1, 1]), ([1.0, np.inf], [1, 1])]
)
def test_bad_eigenvalues_raise_value_error(eigenvalues, teacher):
    with pytest.raises(ValueError, match="eigenvalues"):
        Spectrum(eigenvalues, teacher)


@pytest.mark.parametrize("kwargs, name", [(dict(a=-1, b=0, d=4), "a"), (dict(a=1, b=-0.5, d=4), "b"), (dict(a=1, b=1, d=0), "d")])
def test_bad_power_law_parameters_raise_value_error(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name} "):
        PowerLawSpectrum(**kwargs)


def _idepth(*args):
    return subprocess.run(idepth_command(*args), capture_output=True, text=True, timeout=120, cwd=ROOT, env=checkout_env())


def test_cli_predict_json_matches_the_python_api():
    out = _idepth("predict", "--a", "2", "--b", "1", "--d", "512", "--depth", "1,4,16", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    np.testing.assert_allclose(data["loss"], predict_loss([1, 4, 16], SPEC).loss, rtol=rtol(ROUNDOFF))


def test_cli_predict_writes_a_plot(tmp_path):
    target = tmp_path / "curve.png"
    out = _idepth("predict", "--depth", "2^0-5", "--plot", str(target))
    assert out.returncode == 0, out.stderr
    assert target.stat().st_size > 1000 and target.read_bytes()[:4] == b"\x89PNG"
    assert not [p for p in tmp_path.iterdir() if p.name != "curve.png"]  # no temporary file left behind


def test_the_prediction_plot_title_fits_inside_the_figure_and_log_ticks_are_plain_numbers(tmp_path, monkeypatch):
    """A long title (a spectrum's repr, as ``idepth predict --plot`` passes it) is wrapped, not clipped."""
    import numerics.io as io_module
    from numerics.plotting import plot_prediction

    kept, save = [], io_module.save_figure
    monkeypatch.setattr(io_module, "save_figure", lambda fig, path, **kw: (kept.append(fig), save(fig, path, close=False,
                                                                                                     **kw))[1])
    spectrum = PowerLawSpectrum(2.0, 1.0, 64, c_lambda=1.23456789, c_omega=9.87654321)
    plot_prediction(predict_loss([1, 2, 4, 8], spectrum), tmp_path / "p.png", title=repr(spectrum))
    fig = kept[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    title, figure_box = fig.axes[0].title.get_window_extent(renderer), fig.bbox
    assert figure_box.x0 <= title.x0 and title.x1 <= figure_box.x1 and title.y1 <= figure_box.y1, (title, figure_box)
    labels = [t.get_text() for axis in (fig.axes[0].xaxis, fig.axes[0].yaxis) for t in axis.get_ticklabels(which="both")]
    assert [t for t in labels if t] and not [t for t in labels if "times" in t or "^" in t], labels


@pytest.mark.parametrize(
    "args, name",
    [(["--a", "-1"], "a"), (["--depth", "0"], "depth"), (["--attention", "x"], "attention"),
     (["--depth", "x"], "--depth"), (["--task", "difficult"], "P")],
)
def test_cli_bad_input_is_one_line_on_stderr_with_exit_2(args, name):
    out = _idepth("predict", *args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and "Traceback" not in out.stderr


def test_cli_refuses_a_depth_spec_beyond_the_caps_in_one_line_naming_depth():
    """``--depth 2^0-40`` once ended in a MemoryError traceback: the caps are checked before any range is expanded."""
    from idepth.commands.predict import MAX_DEPTH, MAX_DEPTHS

    for spec in ("2^0-40", "2^99999999999", f"1-{MAX_DEPTHS + 1}", str(MAX_DEPTH + 1), "1-1000000000000"):
        out = _idepth("predict", "--depth", spec)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and "--depth" in lines[0], (spec, out.stderr)
        assert f"at most {MAX_DEPTHS} depths" in lines[0] and str(MAX_DEPTH) in lines[0]


def test_depth_specs_at_the_caps_are_accepted_and_expand_in_order():
    from idepth.commands.predict import MAX_DEPTH, MAX_DEPTHS, parse_depths

    exponent = MAX_DEPTH.bit_length() - 1
    assert parse_depths(f"2^{exponent}") == [MAX_DEPTH] == parse_depths(str(MAX_DEPTH))
    assert parse_depths(f"1-{MAX_DEPTHS}") == list(range(1, MAX_DEPTHS + 1))
    assert parse_depths("3,1-2,2^2-4") == [3, 1, 2, 4, 8, 16]
    with pytest.raises(ValueError, match="--depth"):
        parse_depths(f"1-{MAX_DEPTHS},1")  # the count is of the whole spec, not of one item
    with pytest.raises(ValueError, match="--depth"):
        parse_depths(f"2^{exponent + 1}")


def test_predict_help_states_the_depth_caps():
    from idepth.commands.predict import MAX_DEPTH, MAX_DEPTHS

    out = _idepth("predict", "--help")
    text = " ".join(out.stdout.split())
    assert out.returncode == 0 and f"at most {MAX_DEPTHS} depths, each at most" in text and str(MAX_DEPTH) in text


# ----------------------------------------------------------------------------- softmax: regime="heads"
def test_heads_softmax_prediction_is_the_bound_B_L_made_monotone_by_nesting():
    from theory.softmax_bounds import softmax_bounds

    spectrum = PowerLawSpectrum(0, 0.5, 8)
    pred = predict_loss([1, 2, 8], spectrum, attention="softmax", task="difficult", P=32, regime="heads",
                        n_samples=512, rng=11)
    bounds = softmax_bounds(spectrum, 32, 2, depths=(1, 2, 8), n_contexts=512, rng=11)
    # 2 nests 1 (each head twice); 8 nests 2 only through 4, which is not asked for
    assert pred.loss.tolist() == [bounds.average[0], min(bounds.average[:2]), bounds.average[2]]
    assert np.all(pred.lower <= pred.loss) and np.all(pred.loss <= pred.upper)
    assert pred.plateau == bounds.mixture


@pytest.mark.parametrize("kwargs, name", [
    (dict(regime="lazy"), "regime"), (dict(regime="heads"), "P"), (dict(norm="batch", P=32, width=16), "norm"),
    (dict(regime="converged", P=32), "regime='heads'"), (dict(regime="exchangeable", P=32), "heads"),
    (dict(regime="heads", P=32, calibration={"L0": 1.0, "c": 1.0}), "calibration"),
    (dict(calibration={"L0": 1.0, "c": -1.0}), "coefficient"), (dict(calibration={"L0": -1.0, "c": 1.0}), "plateau"),
])
def test_bad_softmax_difficult_arguments_raise_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        predict_loss([1, 2], PowerLawSpectrum(0, 0, 8), attention="softmax", task="difficult",
                     **{**({} if "calibration" in kwargs else {"n_samples": 64}), **kwargs})


def test_regime_is_refused_outside_softmax_difficult():
    with pytest.raises(ValueError, match="regime"):
        predict_loss([1, 2], PowerLawSpectrum(2, 1, 8), regime="heads")


# ----------------------------------------------------------------------------- one rule for every keyword
from theory.predict import KEYWORDS  # noqa: E402

#: a valid value of every case keyword (the one rule is checked before any value is used)
_VALUES = dict(polynomial="free", gamma=0.5, P=32, k=2, floor_method="monte_carlo", n_samples=64, rng=1,
               calibration={"L0": 1.0, "c": 1.0}, regime="calibrated", norm="rms", width=16,
               heads=__import__("theory.head_families", fromlist=["CosineHeads"]).CosineHeads((4.0,)))
_CASES = {  # (attention, task, variant) -> the keywords that select that variant
    ("linear", "easy", "constrained"): {}, ("linear", "easy", "free"): {"polynomial": "free"},
    ("linear", "difficult", ""): {}, ("softmax", "easy", ""): {},
    ("softmax", "difficult", "calibrated"): {"regime": "calibrated"},
    ("softmax", "difficult", "expressible"): {"regime": "expressible"},
    ("softmax", "difficult", "heads"): {"regime": "heads"},
    ("softmax", "difficult", "heads, width"): {"regime": "heads", "width": 16},
    ("softmax", "difficult", "exchangeable"): {"regime": "exchangeable"},
}


def test_every_case_of_the_keyword_table_is_exercised():
    assert set(_CASES) == set(KEYWORDS)


@pytest.mark.parametrize("case, keyword", [(case, keyword) for case in KEYWORDS for keyword in _VALUES
                                           if keyword not in KEYWORDS[case]])
def test_a_keyword_that_does_not_apply_to_the_case_is_refused_with_one_message(case, keyword):
    attention, task, _ = case
    applicable = ", ".join(KEYWORDS[case]) or "no keyword"
    pattern = rf"^{keyword}=.* does not apply to attention='{attention}', task='{task}'.*; what applies there: {applicable}$"
    with pytest.raises(ValueError, match=pattern):
        predict_loss([1, 2], PowerLawSpectrum(0, 0, 8), attention=attention, task=task,
                     **{**_CASES[case], keyword: _VALUES[keyword]})


@pytest.mark.parametrize("keyword, value, attention, task", [
    ("polynomial", "free", "softmax", "difficult"), ("gamma", 0.5, "linear", "difficult"),
    ("P", 64, "linear", "easy"), ("calibration", {"L0": 1.0, "c": 1.0}, "linear", "easy"),
])
def test_keywords_once_silently_ignored_are_refused(keyword, value, attention, task):
    with pytest.raises(ValueError, match=f"^{keyword}="):
        predict_loss([1, 2], PowerLawSpectrum(0, 0, 8), attention=attention, task=task, **{keyword: value})


def test_too_few_bound_contexts_are_refused_not_raised_to_the_minimum():
    with pytest.raises(ValueError, match="n_samples must be an integer >= 16"):
        predict_loss([1, 2], PowerLawSpectrum(0, 0, 8), attention="softmax", task="difficult", P=32, n_samples=8,
                     regime="heads")
    with pytest.raises(ValueError, match="n_samples must be an integer >= 256"):
        predict_loss([1, 2], PowerLawSpectrum(0, 0, 8), attention="softmax", task="difficult", P=32, n_samples=64)


@pytest.mark.parametrize("depth", [[[1, 2], [4, 8]], np.ones((1, 1, 1), dtype=int)])
def test_depth_arrays_of_more_than_one_dimension_are_refused(depth):
    with pytest.raises(ValueError, match="depth must be a scalar or a 1-d array"):
        predict_loss(depth, SPEC)


def test_repr_is_a_short_summary_and_to_dict_keeps_everything():
    pred = predict_loss(list(range(1, 21)), SPEC)
    text = repr(pred)
    assert text.splitlines()[0] == "LossPrediction: linear attention, easy task"
    assert len(text.splitlines()) <= 5 and "(20 in all)" in text and "assumptions" not in text
    data = pred.to_dict()
    assert data["loss"] == pred.loss.tolist() and data["assumptions"] == list(pred.assumptions)
    assert data["kind"] == pred.kind


# ----------------------------------------------------------------------------- the default softmax prediction
def test_default_softmax_difficult_prediction_is_the_shipped_best_expressible_loss():
    from theory.expressible import shipped_expressible

    spectrum = PowerLawSpectrum(0, 0, 16)
    default = predict_loss([1, 2, 4, 8, 16, 32, 64, 128], spectrum, attention="softmax", task="difficult", P=64)
    shipped = shipped_expressible(spectrum, 64)
    assert default.kind == "U_L: best expressible loss found (an upper bound on the optimum R*_L)"
    assert default.law.startswith("U_L")
    np.testing.assert_array_equal(default.loss, np.minimum.accumulate(shipped.loss))
    assert np.all(np.diff(default.loss) <= 0)  # nesting: never rises along doublings
    assert any("shipped results" in a for a in default.assumptions)


def test_default_softmax_prediction_is_computed_off_the_shipped_grid_and_stays_below_the_heads():
    spectrum = PowerLawSpectrum(0, 0, 8)
    default = predict_loss([1, 2, 4], spectrum, attention="softmax", task="difficult", P=16, n_samples=512, rng=3)
    assert any("computed now" in a for a in default.assumptions)
    assert np.all(np.diff(default.loss) <= 0)
    assert np.all(default.lower <= default.loss) and np.all(default.loss <= default.upper)


def test_a_scalar_depth_gives_a_scalar_and_a_sequence_an_array():
    scalar = predict_loss(4, SPEC)
    assert scalar.loss.shape == () and scalar.depth.shape == () and float(scalar.loss) > 0
    assert predict_loss([4], SPEC).loss.shape == (1,)
    cal = predict_loss(4, SPEC, attention="softmax", task="difficult", calibration={"L0": 2.0, "c": 8.0})
    assert cal.loss.shape == () and cal.lower is None
    assert "R_L:  [4]" in repr(cal)


def test_exchangeable_regime_is_the_computed_law_of_the_given_heads():
    from theory.head_families import RandomFormHeads

    heads = RandomFormHeads((5.0, 15.0), 0.5)
    pred = predict_loss([1, 4, 64], PowerLawSpectrum(0, 0, 8), attention="softmax", task="difficult", P=16,
                        regime="exchangeable", heads=heads, n_samples=1024, rng=2)
    expected = pred.plateau + pred.coefficient / (np.array([1, 4, 64]) + (pred.coefficient / (pred.loss[0] - pred.plateau) - 1))
    np.testing.assert_allclose(pred.loss, expected, rtol=1e-10)
    assert pred.coefficient > 0 and np.all(np.diff(pred.loss) < 0) and pred.exponent == 1.0


def test_the_lazy_calibration_stays_available_by_name():
    cal = predict_loss([1, 2], SPEC, attention="softmax", task="difficult", regime="calibrated",
                       calibration={"L0": 2.0, "c": 8.0})
    implied = predict_loss([1, 2], SPEC, attention="softmax", task="difficult", calibration={"L0": 2.0, "c": 8.0})
    assert cal.loss.tolist() == implied.loss.tolist() == [10.0, 6.0]
    assert "calibrated" in cal.kind and "bound" not in cal.kind.replace("not a bound", "")


def test_cli_predict_softmax_default_is_the_best_expressible_loss_and_says_so():
    out = _idepth("predict", "--attention", "softmax", "--task", "difficult", "--a", "0", "--b", "0", "--d", "16",
                  "--P", "64", "--depth", "1,2", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["kind"] == "U_L: best expressible loss found (an upper bound on the optimum R*_L)"
    assert data["loss"] == predict_loss([1, 2], PowerLawSpectrum(0, 0, 16), attention="softmax", task="difficult",
                                        P=64).loss.tolist()


def test_cli_predict_refuses_an_option_that_does_not_apply():
    out = _idepth("predict", "--attention", "softmax", "--task", "difficult", "--P", "64", "--polynomial", "free")
    assert out.returncode == 2
    assert "polynomial='free' does not apply" in out.stderr and "Traceback" not in out.stderr


def test_importing_predict_loss_imports_neither_sympy_nor_scipy():
    """``from theory import predict_loss`` loads only what a prediction needs: sympy's symbolic layers
    (fitting, decomposition) and scipy come when they are used, so the import answers at once."""
    code = ("import sys\nfrom theory import predict_loss, PowerLawSpectrum\n"
            "print('sympy' in sys.modules, 'scipy' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.split() == ["False", "False"]
    probe = "import sys\nfrom theory import fit_depth_law\nprint('sympy' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert res.stdout.split() == ["True"]  # the probe is not blind: the fitting layer does load sympy
