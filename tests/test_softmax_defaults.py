"""Claims about the shipped softmax defaults (theory.softmax_defaults) and predict_loss(regime="calibrated")
without a calibration."""

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tolerances import ROUNDOFF, rtol

from theory import PowerLawSpectrum, predict_loss
from theory.softmax_defaults import DEFAULTS_FORMAT, load_softmax_defaults, softmax_default



@pytest.fixture(scope="module")
def packaged():
    return load_softmax_defaults()


def _write(tmp_path, points, *, d=8, N=8, P=32, k=2, regime="lazy", law=lambda a, b: (1 + 2 * a + 3 * b, 4 - a + b)):
    entries = []
    for a, b in points:
        L0, c = law(a, b)
        entries.append(dict(a=a, b=b, d=d, N=N, P=P, k=k, regime=regime, L0=L0, c=c, covariance=[[0.01, 0.0], [0.0, 0.04]]))
    path = tmp_path / "defaults.json"
    path.write_text(json.dumps({"format": DEFAULTS_FORMAT, "default_regime": regime, "provenance": {}, "entries": entries}))
    return load_softmax_defaults(path)


# ----------------------------------------------------------------------------- the packaged file
def test_packaged_defaults_load_with_their_provenance(packaged):
    prov = packaged.provenance
    for key in ("package_version", "date", "command", "sizes", "seeds", "regimes", "spectra", "depths"):
        assert key in prov, key
    assert prov["command"].startswith("idepth study defaults")
    assert packaged.default_regime in packaged.regimes
    assert len(prov["seeds"]) >= 3
    for entry in packaged.entries:
        assert np.isfinite(entry.L0) and np.isfinite(entry.c) and entry.L0 >= 0


def test_packaged_provenance_is_what_its_command_trains_today(packaged):
    """The recorded command regenerates the file: its scale still has the sizes, seeds, depths and recipes the
    file was measured with (a scale changed without regenerating the file fails here)."""
    import shlex

    from numerics.experiments.reproduce.scales import get_scale

    prov, words = packaged.provenance, shlex.split(packaged.provenance["command"])
    study = get_scale(words[words.index("--scale") + 1]).study
    assert prov["sizes"] == [list(size) for size in study.sizes]
    assert prov["seeds"] == list(study.seeds)
    assert prov["depths"] == {r: list(study.depths_of(r)) for r in prov["regimes"]}
    assert prov["regimes"] == {r: study.describe(r) for r in prov["regimes"]}
    assert {(e.d, e.P, e.N, e.k) for e in packaged.entries} == {(d, P, N, study.k) for d, P, N in study.sizes}
    assert sorted(words[words.index("--regimes") + 1].split(",")) == sorted(prov["regimes"])


def test_packaged_grid_points_are_reproduced_exactly(packaged):
    for entry in packaged.entries:
        got = packaged.lookup(entry.a, entry.b, d=entry.d, P=entry.P, k=entry.k, regime=entry.regime)
        assert (got.L0, got.c, got.covariance) == (entry.L0, entry.c, entry.covariance)
        assert not got.interpolated


def test_predict_loss_without_calibration_uses_the_defaults_at_matching_sizes(packaged):
    entry = next(e for e in packaged.entries if e.regime == packaged.default_regime)
    spectrum = PowerLawSpectrum(entry.a, entry.b, entry.d)
    depths = [1, 2, 8, 32]
    pred = predict_loss(depths, spectrum, attention="softmax", task="difficult", P=entry.P, k=entry.k,
                        calibration=packaged.default_regime)
    np.testing.assert_allclose(pred.loss, entry.L0 + entry.c / np.array(depths, dtype=float), rtol=rtol(ROUNDOFF))
    assert pred.plateau == entry.L0 and pred.coefficient == entry.c
    assert any("measured defaults" in a and "idepth study defaults" in a for a in pred.assumptions)
    assert np.all(pred.lower <= pred.loss) and np.all(pred.loss <= pred.upper)


def test_predict_loss_can_select_another_measured_regime_by_name(packaged):
    for regime in packaged.regimes:
        for entry in (e for e in packaged.entries if e.regime == regime):
            spectrum = PowerLawSpectrum(entry.a, entry.b, entry.d)
            if entry.extra.get("verdict", "inverse-depth") != "inverse-depth":
                # measured as not following plateau + c/L (the 'converged' recipe is flat): refused, naming the
                # recorded verdict and the free-exponent α, not silently fitted with c/L
                alpha = f"{entry.extra['alpha_free_fit']:.2f}"
                with pytest.raises(ValueError, match=rf"'{entry.extra['verdict']}', measured α = {alpha}"):
                    predict_loss(4, spectrum, attention="softmax", task="difficult", P=entry.P, k=entry.k,
                                 calibration=regime)
                continue
            if entry.c < 0:  # a measured loss that rises with depth is no calibration of plateau + c/L: refused
                with pytest.raises(ValueError, match="coefficient"):
                    predict_loss(4, spectrum, attention="softmax", task="difficult", P=entry.P, k=entry.k,
                                 calibration=regime)
                continue
            pred = predict_loss(4, spectrum, attention="softmax", task="difficult", P=entry.P, k=entry.k,
                                calibration=regime)
            assert float(pred.loss) == pytest.approx(entry.L0 + entry.c / 4, rel=rtol(ROUNDOFF))
    with pytest.raises(ValueError, match="regime"):
        predict_loss(4, PowerLawSpectrum(entry.a, entry.b, entry.d), attention="softmax", task="difficult",
                     P=entry.P, k=entry.k, calibration="no-such-regime")
    assert {e.extra.get("verdict") for e in packaged.entries if e.regime == "converged"} == {"flat"}  # refused above


def test_an_interpolation_touching_a_point_off_the_law_is_refused(packaged):
    """(0, 0.25) lies between the grid points (0, 0) and (0, 0.5): 'converged' is flat at both, both are named."""
    with pytest.raises(ValueError, match=r"\(a, b\) = \(0, 0\): 'flat'.*\(a, b\) = \(0, 0.5\): 'flat'"):
        predict_loss(4, PowerLawSpectrum(0, 0.25, packaged.sizes[0][0]), attention="softmax", task="difficult",
                     P=packaged.sizes[0][2], k=packaged.sizes[0][3], calibration="converged")
    lazy = predict_loss(4, PowerLawSpectrum(0, 0.25, packaged.sizes[0][0]), attention="softmax", task="difficult",
                        P=packaged.sizes[0][2], k=packaged.sizes[0][3], calibration="lazy")
    assert np.isfinite(float(lazy.loss))


def test_predict_loss_refuses_sizes_outside_the_defaults_naming_the_sizes_it_has(packaged):
    d, N, P, k = packaged.sizes[0]
    with pytest.raises(ValueError, match=rf"d={d}, N={N}, P={P}, k={k}"):
        predict_loss(4, PowerLawSpectrum(0, 0, d), attention="softmax", task="difficult", P=P + 1, k=k,
                     calibration=packaged.default_regime)
    named = rf"calibration='{packaged.default_regime}' reads the shipped measurements"
    with pytest.raises(ValueError, match=rf"{named}, and .*d={d + 1}"):
        predict_loss(4, PowerLawSpectrum(0, 0, d + 1), attention="softmax", task="difficult", P=P, k=k,
                     calibration=packaged.default_regime)
    with pytest.raises(ValueError, match=rf"{named}, which exist for .*d={d}, N={N}, P={P}, k={k}.*pass P="):  # no P
        predict_loss(4, PowerLawSpectrum(0, 0, d), attention="softmax", task="difficult",
                     calibration=packaged.default_regime)
    with pytest.raises(ValueError, match="calibration="):  # no calibration at all: says what to pass
        predict_loss(4, PowerLawSpectrum(0, 0, d), attention="softmax", task="difficult", P=P, regime="calibrated")


def test_predict_loss_refuses_a_spectrum_outside_the_measured_grid(packaged):
    d, N, P, k = packaged.sizes[0]
    far = max(e.a for e in packaged.entries) + 1.0
    with pytest.raises(ValueError, match="outside the grid"):
        predict_loss(4, PowerLawSpectrum(far, 0, d), attention="softmax", task="difficult", P=P, k=k,
                     calibration=packaged.default_regime)


# ----------------------------------------------------------------------------- interpolation (synthetic files)
@given(a=st.floats(0.0, 1.0), b=st.floats(0.0, 0.5))
def test_interpolation_is_exact_for_a_law_linear_in_a_and_b(tmp_path_factory, a, b):
    defaults = _write(tmp_path_factory.mktemp("grid"), [(x, y) for x in (0.0, 0.5, 1.0) for y in (0.0, 0.5)])
    got = defaults.lookup(a, b, d=8, P=32, k=2)
    assert got.L0 == pytest.approx(1 + 2 * a + 3 * b, rel=rtol(ROUNDOFF), abs=rtol(ROUNDOFF))
    assert got.c == pytest.approx(4 - a + b, rel=rtol(ROUNDOFF), abs=rtol(ROUNDOFF))


def test_grid_points_are_returned_verbatim_and_midpoints_are_averages(tmp_path):
    defaults = _write(tmp_path, [(0.0, 0.0), (0.0, 0.5), (0.5, 0.0)], law=lambda a, b: (0.1 + a * a, 3.0 + b * b))
    assert defaults.lookup(0.5, 0.0, d=8, P=32, k=2).L0 == 0.1 + 0.25
    mid = defaults.lookup(0.25, 0.0, d=8, P=32, k=2)
    assert mid.interpolated and mid.L0 == pytest.approx((0.1 + 0.35) / 2, rel=rtol(ROUNDOFF))
    with pytest.raises(ValueError, match="outside the grid"):
        defaults.lookup(0.5, 0.5, d=8, P=32, k=2)  # beyond the triangle's hypotenuse


def test_a_one_dimensional_grid_interpolates_along_its_line_only(tmp_path):
    defaults = _write(tmp_path, [(0.0, 0.0), (0.0, 0.5), (0.0, 1.0)])
    assert defaults.lookup(0.0, 0.75, d=8, P=32, k=2).L0 == pytest.approx(1 + 3 * 0.75, rel=rtol(ROUNDOFF))
    for a, b in [(0.1, 0.5), (0.0, 1.5), (0.0, -0.1)]:
        with pytest.raises(ValueError, match="outside the grid"):
            defaults.lookup(a, b, d=8, P=32, k=2)


def test_other_sizes_and_prefactors_are_refused(tmp_path):
    defaults = _write(tmp_path, [(0.0, 0.0), (0.5, 0.0)])
    with pytest.raises(ValueError, match=r"d=8, N=8, P=32, k=2"):
        defaults.lookup(0.0, 0.0, d=8, P=64, k=2)
    with pytest.raises(ValueError, match="c_lambda"):
        softmax_default(PowerLawSpectrum(0, 0, 8, c_lambda=2.0), 32, 2, defaults=defaults)


def test_malformed_files_are_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "something-else", "entries": []}))
    with pytest.raises(ValueError, match="not an"):
        load_softmax_defaults(bad)
    with pytest.raises(FileNotFoundError):
        load_softmax_defaults(tmp_path / "missing.json")


# ----------------------------------------------------------------------------- measuring them
def test_study_defaults_cli_sends_its_runs_to_the_given_dask_scheduler(tmp_path, monkeypatch, dask_scheduler):
    """``idepth study defaults --backend dask --scheduler ADDR``: the sweep goes to that scheduler, its workers train."""
    import os

    import distributed

    from idepth.cli import main
    from numerics.experiments import sweep
    from numerics.experiments.store import load_results

    calls = []
    real = sweep.run_sweep

    def spy(grid, out_dir, **kwargs):
        summary = real(grid, out_dir, **kwargs)
        calls.append((kwargs, summary, {r["pid"] for r in load_results(out_dir)}))  # before the temporary store goes
        return summary

    monkeypatch.setattr(sweep, "run_sweep", spy)
    out = tmp_path / "d.json"
    code = main(["study", "defaults", "--scale", "smoke", "--spectra", "0,0", "--regimes", "converged",
                 "--default-regime", "converged", "--backend", "dask", "--scheduler", dask_scheduler,
                 "--out", str(out), "--no-progress"])
    assert code == 0 and len(calls) == 1
    kwargs, summary, trained_by = calls[0]
    sent = kwargs["execution"]
    assert (sent.backend, sent.scheduler, sent.workers, sent.progress) == ("dask", dask_scheduler, None, False)
    assert (summary.backend, summary.workers, summary.executed) == ("dask", 2, summary.total)
    with distributed.Client(dask_scheduler, set_as_default=False) as client:
        assert trained_by <= set(client.run(os.getpid).values()) and os.getpid() not in trained_by
    assert load_softmax_defaults(out).default_regime == "converged"
