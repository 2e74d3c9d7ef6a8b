"""Claims about bad input to every ``idepth`` command but ``study``, tried as a new user would: a typo, a missing or
corrupt file, a wrong type, an out-of-range value, an output that cannot be written. Each one is refused before any
work (training, Monte Carlo) with exit status 2 and one line on stderr naming the argument, no traceback, and leaves
nothing at the output path.

Each class of input is one parametrised test; a case is ``(argv, words the line must contain)``. ``OUT`` in an argv
is a fresh path in the test's directory that must not exist afterwards; ``FILE`` an existing plain file; ``JUNK`` a
file of four bytes that is no format at all.
"""

from __future__ import annotations

import time

import pytest

import idepth.cli as cli

#: an input is refused "before any work": these cases take well under this many seconds each (the refusals take
#: about 0.1-1 s; the shortest piece of work they guard takes minutes)
BEFORE_ANY_WORK_S = 20.0
SOFTMAX = ["predict", "--attention", "softmax", "--task", "difficult", "--d", "16", "--a", "0", "--b", "0"]


def _refused(argv: list[str], expected: tuple[str, ...], tmp_path, capsys) -> None:
    (tmp_path / "file").write_text("not a directory\n")
    (tmp_path / "junk").write_bytes(b"junk")
    (tmp_path / "grid.toml").write_text('modle = "nonlinear"\ndepth = [1, 2]\n')  # a typo in a TrainConfig key
    out = tmp_path / "out"
    argv = [str(out) if a == "OUT" else str(tmp_path / "file") if a == "FILE" else
            str(tmp_path / "junk") if a == "JUNK" else a.replace("FILE/", f"{tmp_path / 'file'}/").replace("TMP", str(tmp_path))
            for a in argv]
    capsys.readouterr()
    started = time.perf_counter()
    try:
        status = cli.main(argv)
    except SystemExit as exit_:  # argparse's own refusals (a wrong type, an unknown choice)
        status = exit_.code
    elapsed = time.perf_counter() - started
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert status == 2, f"{argv}: exit status {status}; stderr: {err}"
    assert len(lines) == 1 and "Traceback" not in err, f"{argv}: stderr is not one line:\n{err}"
    for word in expected:
        assert word in lines[0], f"{argv}: {word!r} not in {lines[0]!r}"
    assert elapsed < BEFORE_ANY_WORK_S, f"{argv}: refused after {elapsed:.0f} s"
    assert not out.exists(), f"{argv}: left {out}"


TYPOS = [
    (["predict", "--attention", "sofmax"], ("attention", "'sofmax'", "'softmax'")),
    ([*SOFTMAX, "--calibration", "lazzy", "--P", "64"], ("calibration='lazzy'", "not a regime", "'lazy'")),
    ([*SOFTMAX, "--calibration", "lazzy"], ("calibration='lazzy'", "not a regime")),  # before the missing P
    ([*SOFTMAX, "--regime", "expresible", "--P", "64"], ("regime", "'expresible'")),
    (["train", "--out", "OUT", "--model", "nonlinar"], ("--model", "'nonlinar'")),
    (["train", "--out", "OUT", "--frozen", "W_z"], ("frozen", "'W_z'", "W_q")),
    (["train", "--out", "OUT", "--init", "qk_scal=1"], ("init", "'qk_scal'", "qk_scale")),
    (["reproduce", "--scale", "quik", "--out", "OUT"], ("scale", "'quik'", "'quick'")),
    (["reproduce", "--only", "fig2", "--out", "OUT"], ("'fig2'", "fig1")),
    (["derive", "--only", "modwise"], ("--only", "'modwise'", "'modewise'")),
    (["sweep", "run", "FILE", "--out", "OUT", "--backend", "daks"], ("--backend", "'daks'")),
    (["sweep", "run", "TMP/grid.toml", "--out", "OUT"], ("grid file", "unknown TrainConfig key 'modle'", "model")),
]


@pytest.mark.parametrize("argv, expected", TYPOS, ids=[" ".join(a[:4]) for a, _ in TYPOS])
def test_a_typo_in_a_name_is_refused_naming_the_argument_and_the_choices(argv, expected, tmp_path, capsys):
    _refused(argv, expected, tmp_path, capsys)


MISSING = [
    (["predict", "--spectrum-file", "TMP/none.txt"], ("--spectrum-file", "does not exist")),
    (["sweep", "run", "TMP/none.toml", "--out", "OUT"], ("grid file", "does not exist")),
    (["sweep", "status", "TMP/none"], ("no sweep results store",)),
    (["diagnose", "TMP/none"], ("checkpoint directory", "does not exist")),
    (["expressible", "check", "--out", "TMP/none"], ("--out", "holds no certified study")),
    (["expressible", "check", "--out", "TMP"], ("--out", "holds no certified study", "certified/contrasts")),
]


@pytest.mark.parametrize("argv, expected", MISSING, ids=[" ".join(a[:3]) for a, _ in MISSING])
def test_a_missing_input_is_refused_naming_it(argv, expected, tmp_path, capsys):
    _refused(argv, expected, tmp_path, capsys)


CORRUPT = [
    (["predict", "--spectrum-file", "JUNK"], ("--spectrum-file", "not a two-column numeric table")),
    (["sweep", "run", "JUNK", "--out", "OUT"], ("grid file", "invalid TOML")),
    (["sweep", "status", "TMP/store"], ("not an inverse-depth sweep store",)),
    (["diagnose", "TMP/checkpoint"], ("metrics.json", "not a valid checkpoint file")),
    (["diagnose", "FILE"], ("is a file, not a checkpoint directory",)),
    (["expressible", "check", "--out", "TMP/results"], ("not an exported certified-study cell",)),
]


@pytest.mark.parametrize("argv, expected", CORRUPT, ids=[" ".join(a[:3]) for a, _ in CORRUPT])
def test_a_corrupt_input_is_refused_naming_the_file(argv, expected, tmp_path, capsys):
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "results.sqlite").write_bytes(b"junk")
    (tmp_path / "checkpoint").mkdir()
    for name in ("params.npz", "arrays.npz", "config.json", "metrics.json"):
        (tmp_path / "checkpoint" / name).write_bytes(b"junk")
    (tmp_path / "results" / "certified" / "contrasts").mkdir(parents=True)
    (tmp_path / "results" / "certified" / "contrasts" / "run.npz").write_bytes(b"junk")
    _refused(argv, expected, tmp_path, capsys)


WRONG_TYPES = [
    (["predict", "--d", "1.5"], ("--d", "'1.5'")),
    (["predict", "--depth", "two"], ("--depth", "'two'")),
    (["reproduce", "--workers", "two", "--out", "OUT"], ("--workers", "'two'")),
    (["train", "--out", "OUT", "--init", "qk_scale=big"], ("qk_scale", "real number", "'big'")),
    ([*SOFTMAX, "--calibration", "L0=two,c=1"], ("--calibration", "'L0'", "number")),
    (["predict", "--heads", "4,12:wide", "--attention", "softmax", "--task", "difficult"], ("--heads",)),
    (["expressible", "run", "--spectra", "0;0", "--out", "OUT"], ("--spectra", "'0;0'")),
]


@pytest.mark.parametrize("argv, expected", WRONG_TYPES, ids=[" ".join(a[:4]) for a, _ in WRONG_TYPES])
def test_a_value_of_the_wrong_type_is_refused_naming_the_argument(argv, expected, tmp_path, capsys):
    _refused(argv, expected, tmp_path, capsys)


OUT_OF_RANGE = [
    (["predict", "--depth", "0"], ("depth", ">= 1", "got 0")),
    (["predict", "--a", "-1"], ("a must be >= 0",)),
    (["predict", "--a", "nan"], ("a must be finite",)),
    (["predict", "--gamma", "100"], ("gamma", "stable range")),
    (["predict", "--task", "difficult", "--P", "10", "--k", "100"], ("k must be", "[1, P]")),
    (["train", "--out", "OUT", "--task", "difficult", "--k", "999"], ("k must be <= P",)),
    (["train", "--out", "OUT", "--lr", "inf"], ("learning_rate must be finite",)),
    (["train", "--out", "OUT", "--d", "4", "--N", "2"], ("N must be >= d",)),
    (["reproduce", "--workers", "0", "--out", "OUT"], ("workers", ">= 1")),
    (["diagnose", "TMP", "--seed", "-1"], ("--seed", "non-negative")),  # numpy's own message named nothing
    (["diagnose", "TMP", "--contexts", "0"], ("--contexts", ">= 1")),
    (["reproduce", "--backend", "dask", "--scheduler", "localhost", "--out", "OUT"], ("scheduler", "port")),
    (["expressible", "run", "--spectra=-1,0", "--out", "OUT"], ("--spectra", ">= 0")),
    # the recipe measured flat (α = 0.05 at (0, 0)) is no calibration of plateau + c/L: refused, saying so
    ([*SOFTMAX, "--calibration", "converged", "--P", "64"], ("calibration='converged'", "'flat'", "measured α = 0.05")),
]


@pytest.mark.parametrize("argv, expected", OUT_OF_RANGE, ids=[" ".join(a[:5]) for a, _ in OUT_OF_RANGE])
def test_a_value_out_of_range_is_refused_naming_the_argument_and_the_range(argv, expected, tmp_path, capsys):
    _refused(argv, expected, tmp_path, capsys)


OUTPUTS = [
    (["train", "--out", "FILE"], ("--out", "is a file, not a directory")),
    (["train", "--out", "FILE/run"], ("--out", "is a file, not a directory")),
    (["predict", "--plot", "TMP/none/loss.png"], ("--plot", "does not exist")),
    (["predict", "--plot", "TMP/loss.txt"], ("--plot", "must end in one of")),
    (["derive", "--out", "FILE"], ("--out", "existing file, not a directory")),
    (["expressible", "run", "--out", "FILE"], ("--out", "existing file, not a directory")),
    (["expressible", "check", "--out", "FILE"], ("--out", "existing file, not a directory")),
    (["reproduce", "--out", "FILE"], ("--out", "existing file, not a directory")),
    (["docs", "build", "--out", "FILE"], ("--out", "is a file")),
    (["sweep", "run", "FILE", "--out", "FILE"], ("--out",)),
]


@pytest.mark.parametrize("argv, expected", OUTPUTS, ids=[" ".join(a[:3]) for a, _ in OUTPUTS])
def test_an_output_that_cannot_be_written_is_refused_before_any_work(argv, expected, tmp_path, capsys):
    _refused(argv, expected, tmp_path, capsys)


def test_derive_creates_a_missing_output_directory(tmp_path, capsys):
    """It checked that the directory could be created, then refused it for not existing."""
    out = tmp_path / "new" / "pages"
    assert cli.main(["derive", "--out", str(out), "--only", "modewise"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["modewise.md"]


def test_a_scheduler_that_does_not_answer_leaves_no_output_directory(tmp_path, capsys):
    """Nothing listens on port 1: refused after the connection timeout (10 s), and the --out it made is gone."""
    pytest.importorskip("distributed")
    out = tmp_path / "reproduction"
    status = cli.main(["reproduce", "--backend", "dask", "--scheduler", "tcp://127.0.0.1:1", "--no-calibration",
                       "--no-progress", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and err[-1].startswith("idepth reproduce: error: dask scheduler 'tcp://127.0.0.1:1' did not answer")
    assert not out.exists()


@pytest.mark.parametrize("calibration, named", [({"L0": "two", "c": 1.0}, "plateau"), ({"A": "x", "C": 1.0}, "A"),
                                                ({"A": 3.0, "C": None}, "C"), ({"L0": 2.0, "c": [1]}, "coefficient")])
def test_a_calibration_value_that_is_no_number_is_refused_naming_it(calibration, named):
    from theory import PowerLawSpectrum, predict_loss

    with pytest.raises(ValueError, match=rf"calibration {named} must be a finite number"):
        predict_loss(4, PowerLawSpectrum(0, 0, 16), attention="softmax", task="difficult", P=64, calibration=calibration)


def test_outside_a_checkout_expressible_check_names_the_variable_or_the_directory_it_looked_in(monkeypatch, tmp_path,
                                                                                                capsys):
    """A non-editable install has no docs/results: without IDEPTH_RESULTS the command says to set it; with it set
    to a directory that holds no certified study, it names that directory. Both before any work."""
    from numerics.experiments import shipped

    monkeypatch.setattr(shipped, "checkout_root", lambda: None)
    monkeypatch.delenv(shipped.RESULTS_VARIABLE, raising=False)
    assert cli.main(["expressible", "check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "shipped results not found: set IDEPTH_RESULTS=" in err[0]
    monkeypatch.setenv(shipped.RESULTS_VARIABLE, str(tmp_path))
    assert cli.main(["expressible", "check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"'{tmp_path.resolve()}' holds no certified study" in err[0]
    monkeypatch.setenv(shipped.RESULTS_VARIABLE, str(tmp_path / "none"))
    assert cli.main(["expressible", "check"]) == 2
    assert "IDEPTH_RESULTS must name a directory" in capsys.readouterr().err


def test_a_softmax_prediction_too_large_to_compute_is_refused_before_any_work_naming_the_shipped_sizes(capsys):
    """The CLI's default d (1024, the linear tables') has no shipped U_L: computing it would need 128 GiB."""
    from idepth import cli

    assert cli.main(["predict", "--attention", "softmax", "--task", "difficult", "--P", "64", "--depth", "1,4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "d = 1024" in err[0] and "GiB" in err[0] and "d16_P64_k2" in err[0]
