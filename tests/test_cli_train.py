"""Claims about `idepth train` and `idepth diagnose`: a round trip through a checkpoint directory,
refusal to overwrite, and one-line errors with exit status 2."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import idepth.cli as cli
from numerics.train import TrainResult

TINY_ARGS = ["--model", "nonlinear", "--task", "difficult", "--k", "2", "--a", "0.5", "--b", "0.5", "--d", "3",
             "--N", "4", "--P", "8", "--depth", "2", "--seed", "0", "--steps", "6", "--batch-size", "8",
             "--eval-size", "16", "--eval-every", "3", "--warmup", "1"]


@pytest.fixture(autouse=True)
def only_our_commands(monkeypatch):
    """Build the CLI with just these two sub-commands, independent of the others' modules."""
    monkeypatch.setattr(cli, "COMMANDS", ["train", "diagnose"])


def _one_line_error(capsys, code, *words):
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert "Traceback" not in err


def test_train_then_diagnose_round_trip(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["train", *TINY_ARGS, "--out", str(out), "--quiet"]) == 0
    assert sorted(os.listdir(out)) == ["arrays.npz", "config.json", "metrics.json", "params.npz"]
    metrics = json.loads((out / "metrics.json").read_text())["metrics"]
    assert metrics["steps"] == 6 and "R_L" in metrics
    result = TrainResult.load(out)
    assert result.config.depth == 2 and result.config.a == 0.5

    plot = tmp_path / "modes.png"
    assert cli.main(["diagnose", str(out), "--contexts", "64", "--plot", str(plot)]) == 0
    printed = capsys.readouterr().out
    for word in ("R_L", "A_L", "C_L", "top-1 mass", "selection error Q(0.5)", "normalised"):
        assert word in printed, word
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_train_prints_a_summary_and_the_same_run_is_reproducible(tmp_path, capsys):
    assert cli.main(["train", *TINY_ARGS, "--out", str(tmp_path / "a")]) == 0
    assert "R_L =" in capsys.readouterr().out
    assert cli.main(["train", *TINY_ARGS, "--out", str(tmp_path / "b"), "--quiet"]) == 0
    a, b = TrainResult.load(tmp_path / "a"), TrainResult.load(tmp_path / "b")
    for key in a.params:
        assert np.array_equal(a.params[key], b.params[key])


def test_train_refuses_a_non_empty_directory_unless_forced(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine")
    code = cli.main(["train", *TINY_ARGS, "--out", str(tmp_path), "--quiet"])
    _one_line_error(capsys, code, "not empty", "--force")
    assert os.listdir(tmp_path) == ["keep.txt"]
    assert cli.main(["train", *TINY_ARGS, "--out", str(tmp_path), "--quiet", "--force"]) == 0
    assert (tmp_path / "keep.txt").read_text() == "mine" and (tmp_path / "metrics.json").exists()


def test_train_output_path_that_is_a_file_exits_2(tmp_path, capsys):
    target = tmp_path / "file.txt"
    target.write_text("x")
    code = cli.main(["train", *TINY_ARGS, "--out", str(target), "--quiet"])
    _one_line_error(capsys, code, "is a file")


@pytest.mark.parametrize(
    "change, word",
    [
        (["--depth", "0"], "depth"),
        (["--model", "transformer"], "model"),
        (["--k", "9"], "k"),
        (["--N", "2"], "N"),
        (["--init", "qk_sclae=2"], "qk_sclae"),
        (["--init", "novalue"], "--init"),
        (["--lr", "-1"], "learning_rate"),
        (["--dtype", "float16"], "dtype"),
        (["--steps", "many"], "--steps"),
    ],
)
def test_bad_train_input_exits_2_with_one_line_naming_it(tmp_path, capsys, change, word):
    code_or_exit = None
    try:
        code_or_exit = cli.main(["train", *TINY_ARGS, *change, "--out", str(tmp_path / "x"), "--quiet"])
    except SystemExit as exc:  # argparse's own type/choice errors
        code_or_exit = exc.code
    _one_line_error(capsys, code_or_exit, word)
    assert not (tmp_path / "x").exists()


def test_diagnose_of_a_missing_or_broken_checkpoint_exits_2(tmp_path, capsys):
    _one_line_error(capsys, cli.main(["diagnose", str(tmp_path / "nothing")]), "does not exist")
    (tmp_path / "empty").mkdir()
    _one_line_error(capsys, cli.main(["diagnose", str(tmp_path / "empty")]), "metrics.json")
    assert cli.main(["train", *TINY_ARGS, "--out", str(tmp_path / "run"), "--quiet"]) == 0
    _one_line_error(capsys, cli.main(["diagnose", str(tmp_path / "run"), "--contexts", "0"]), "n_contexts")


def test_diverging_training_is_one_line_on_stderr(tmp_path, capsys):
    args = ["--model", "linear", "--task", "easy", "--d", "3", "--N", "3", "--P", "8", "--depth", "4",
            "--steps", "200", "--batch-size", "8", "--eval-size", "16", "--eval-every", "50", "--lr", "1e6",
            "--schedule", "constant"]
    code = cli.main(["train", *args, "--out", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "diverged at step" in err[0]
    assert TrainResult.load(tmp_path / "run").metrics["step"] == 0  # the last good checkpoint is kept


@pytest.mark.parametrize("command, words", [
    ("train", ["--task", "--k", "--a", "--b", "--d", "--N", "--P", "--depth", "--seed", "--out", "--force", "--lr",
               "--steps", "--batch-size", "--dtype", "--init", "--tol", "--window"]),
    ("diagnose", ["--contexts", "--plot", "--seed"]),
])
def test_help_explains_every_option(capsys, command, words):
    with pytest.raises(SystemExit) as info:
        cli.main([command, "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for word in words:
        assert word in text, word
