"""Claims about `idepth train` and `idepth diagnose`: a round trip through a checkpoint directory,
refusal to overwrite, and one-line errors with exit status 2."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import idepth.cli as cli
from numerics.checkpoint import CHECKPOINT_FILES
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
    assert sorted(os.listdir(out)) == sorted(CHECKPOINT_FILES)  # what the errors say a checkpoint holds
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
    _one_line_error(capsys, cli.main(["diagnose", str(tmp_path / "run"), "--contexts", "0"]), "--contexts")


def _corrupt(directory, name, content: bytes, *, rehash: bool = False):
    """Overwrite ``directory/name``; with ``rehash``, record its new SHA-256 in metrics.json (a corrupt file
    written as such, which the consistency check cannot catch)."""
    import hashlib

    (directory / name).write_bytes(content)
    if rehash:
        meta = json.loads((directory / "metrics.json").read_text())
        meta["files"][name] = hashlib.sha256(content).hexdigest()
        (directory / "metrics.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("name, content, rehash", [
    ("metrics.json", b"", False),  # an empty file: once only "Expecting value: line 1 column 1 (char 0)"
    ("metrics.json", b"{not json", False),
    ("metrics.json", bytes(range(128, 256)), False),  # not even text
    ("metrics.json", b'{"format": "something-else"}', False),
    ("metrics.json", b'{"format": "idepth-checkpoint/1"}', False),
    ("config.json", b"", True),
    ("params.npz", b"PK\x03\x04 truncated", True),
])
def test_diagnose_of_a_corrupt_checkpoint_names_the_file_and_says_what_a_checkpoint_is(tmp_path, capsys, name,
                                                                                      content, rehash):
    from numerics.checkpoint import CHECKPOINT_FORMAT

    run = tmp_path / "run"
    assert cli.main(["train", *TINY_ARGS, "--out", str(run), "--quiet"]) == 0
    capsys.readouterr()
    _corrupt(run, name, content, rehash=rehash)
    code = cli.main(["diagnose", str(run)])
    _one_line_error(capsys, code, str(run / name), "is not a valid checkpoint file", "written by 'idepth train",
                    *CHECKPOINT_FILES, CHECKPOINT_FORMAT)


def test_diagnose_says_which_modes_its_table_leaves_out_and_by_which_rule(tmp_path, capsys):
    from idepth.commands.diagnose import MODE_SAMPLE_RULE, listed_modes

    wide = [*TINY_ARGS]
    wide[wide.index("--d") + 1], wide[wide.index("--N") + 1] = "8", "8"
    assert cli.main(["train", *wide, "--out", str(tmp_path / "d8"), "--quiet"]) == 0
    assert cli.main(["train", *TINY_ARGS, "--out", str(tmp_path / "d3"), "--quiet"]) == 0
    capsys.readouterr()
    assert cli.main(["diagnose", str(tmp_path / "d8"), "--contexts", "16"]) == 0
    printed = capsys.readouterr().out.splitlines()
    table = printed[printed.index(next(line for line in printed if line.strip().startswith("mode k"))) + 1:]
    rows = [int(line.split()[0]) for line in table if line.split() and line.split()[0].isdigit()]
    assert rows == listed_modes(8) == [1, 2, 3, 5, 7, 8]
    note = [line for line in printed if line.startswith("not listed")]
    assert note == [f"not listed: modes 4, 6 of 8, by the rule '{MODE_SAMPLE_RULE}' (a sample, not outliers: every "
                    "mode is in the sum of mode-wise losses and in --plot)"]
    assert cli.main(["diagnose", str(tmp_path / "d3"), "--contexts", "16"]) == 0
    assert "not listed" not in capsys.readouterr().out  # d = 3: every mode is listed, nothing to say


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


# ------------------------------------------------------------------------------------------- options = TrainConfig fields

EXPLICIT = dict(model="context_updates", task="easy", k=3, a=0.25, b=1.5, d=5, N=6, P=9, depth=3, seed=7,
                batch_size=5, max_steps=11, learning_rate=0.002, schedule="warmup_constant", warmup_steps=2,
                beta1=0.8, beta2=0.99, eps=1e-7, grad_clip=2.5, init={"qk_scale": 2.0}, eval_size=12, eval_every=4,
                eval_seed=3, tol=0.01, window=50, dtype="float64", c_lambda=2.0, c_omega=0.5,
                frozen=("W_v", "W_y"), stream=2, engine="numpy")  # jax: nonlinear models only (test_jax_engine)


def _train_parser():
    import argparse

    from idepth.commands import train as train_command

    sub = argparse.ArgumentParser().add_subparsers()
    train_command.register(sub)
    return sub.choices["train"]


def _argv(values: dict, parser) -> list[str]:
    by_dest = {action.dest: action for action in parser._actions}
    argv = []
    for name, value in values.items():
        flag = by_dest[name].option_strings[0]
        if name == "init":
            argv += [item for key, v in value.items() for item in (flag, f"{key}={v}")]
        elif name == "frozen":
            argv += [flag, ",".join(value)]
        else:
            argv += [flag, str(value)]
    return argv


def test_every_train_config_field_is_an_option_of_idepth_train():
    import dataclasses

    from numerics.train import TrainConfig

    from idepth.commands.train import NOT_OPTIONS

    dests = {action.dest for action in _train_parser()._actions}
    missing = [f.name for f in dataclasses.fields(TrainConfig) if f.name not in dests and f.name not in NOT_OPTIONS]
    assert missing == [], f"TrainConfig fields without an idepth train option: {missing}"
    # only a warm start (weights the command line cannot give) is left out
    assert NOT_OPTIONS == ("start",) and not set(NOT_OPTIONS) & dests
    assert sorted(EXPLICIT) == sorted(f.name for f in dataclasses.fields(TrainConfig) if f.name not in NOT_OPTIONS)


def test_options_build_exactly_the_config_they_name_under_the_historical_and_the_field_names():
    from idepth.commands.train import config_from_args
    from numerics.train import TrainConfig

    parser = _train_parser()
    expected = TrainConfig(**EXPLICIT)
    argv = _argv(EXPLICIT, parser)
    for historical in ("--steps", "--lr", "--warmup", "--batch-size", "--eval-size", "--eval-every", "--eval-seed",
                       "--grad-clip", "--c-lambda", "--c-omega", "--frozen", "--beta1", "--beta2", "--eps"):
        assert historical in argv, historical
    assert config_from_args(parser.parse_args([*argv, "--out", "x"])) == expected
    renamed = [{"--steps": "--max-steps", "--lr": "--learning-rate", "--warmup": "--warmup-steps"}.get(a, a) for a in argv]
    assert config_from_args(parser.parse_args([*renamed, "--out", "x"])) == expected
    assert config_from_args(parser.parse_args(["--out", "x"])) == TrainConfig()


# ------------------------------------------------------------------------------------------- --resume

RESUMABLE = TINY_ARGS + ["--dtype", "float64", "--steps", "20"]  # a later option overrides an earlier one


def _interrupt_at(monkeypatch, n: int) -> None:
    """Make the n-th Adam step raise KeyboardInterrupt (what Ctrl-C does in the training loop)."""
    import numerics.train as train_module

    real, calls = train_module.adam_update, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(train_module, "adam_update", interrupted)


@pytest.mark.parametrize("interrupt_at", [7, 10], ids=["between-evaluations", "right-after-an-evaluation"])
def test_ctrl_c_leaves_a_checkpoint_that_resume_finishes_bitwise_like_an_uninterrupted_run(
        tmp_path, capsys, monkeypatch, interrupt_at):
    assert cli.main(["train", *RESUMABLE, "--out", str(tmp_path / "whole"), "--quiet"]) == 0
    with monkeypatch.context() as patch:
        _interrupt_at(patch, interrupt_at)
        assert cli.main(["train", *RESUMABLE, "--out", str(tmp_path / "cut"), "--quiet"]) == 130
    err = capsys.readouterr().err
    step = 3 * ((interrupt_at - 1) // 3)  # the last evaluation before the interrupted step
    assert f"interrupted; the checkpoint of step {step} in {tmp_path / 'cut'} is kept" in err and "--resume" in err
    assert json.loads((tmp_path / "cut" / "metrics.json").read_text())["metrics"]["complete"] is False

    code = cli.main(["train", *RESUMABLE, "--out", str(tmp_path / "cut"), "--quiet"])
    _one_line_error(capsys, code, "not empty", "--resume", "--force")
    assert cli.main(["train", *RESUMABLE, "--out", str(tmp_path / "cut"), "--resume"]) == 0
    assert f"resumed at step {step}" in capsys.readouterr().out

    whole, resumed = TrainResult.load(tmp_path / "whole"), TrainResult.load(tmp_path / "cut")
    assert resumed.params["W_q"].dtype == np.float64
    for key in whole.params:
        assert np.array_equal(whole.params[key], resumed.params[key]), key
    for key in whole.arrays:
        assert np.array_equal(whole.arrays[key], resumed.arrays[key], equal_nan=True), key
    for key, value in whole.metrics.items():
        if key not in ("wall_time", "cpu_time", "resumed_at"):
            assert value == resumed.metrics[key] or (value != value and resumed.metrics[key] != resumed.metrics[key]), key
    assert sorted(os.listdir(tmp_path / "cut")) == sorted(os.listdir(tmp_path / "whole"))


def test_resume_refuses_another_config_a_finished_run_and_a_foreign_directory(tmp_path, capsys, monkeypatch):
    with monkeypatch.context() as patch:
        _interrupt_at(patch, 5)
        assert cli.main(["train", *RESUMABLE, "--out", str(tmp_path / "cut"), "--quiet"]) == 130
    capsys.readouterr()
    code = cli.main(["train", *RESUMABLE, "--seed", "1", "--out", str(tmp_path / "cut"), "--quiet", "--resume"])
    _one_line_error(capsys, code, "cannot resume", "another config", "differs in seed")
    assert cli.main(["train", *RESUMABLE, "--out", str(tmp_path / "cut"), "--quiet", "--resume"]) == 0
    code = cli.main(["train", *RESUMABLE, "--out", str(tmp_path / "cut"), "--quiet", "--resume"])
    _one_line_error(capsys, code, "cannot resume", "finished run")
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("mine")
    code = cli.main(["train", *RESUMABLE, "--out", str(tmp_path / "foreign"), "--quiet", "--resume"])
    _one_line_error(capsys, code, "holds no checkpoint")
    code = cli.main(["train", *RESUMABLE, "--out", str(tmp_path / "x"), "--quiet", "--resume", "--force"])
    _one_line_error(capsys, code, "--force", "--resume")


def test_resume_without_a_checkpoint_starts_at_step_0_and_says_so(tmp_path, capsys):
    assert cli.main(["train", *TINY_ARGS, "--out", str(tmp_path / "new"), "--quiet", "--resume"]) == 0
    assert "nothing to resume" in capsys.readouterr().err
    assert TrainResult.load(tmp_path / "new").metrics["complete"] is True


def test_diagnose_of_a_file_says_it_is_a_file_not_a_checkpoint_directory(tmp_path, capsys):
    target = tmp_path / "metrics.json"
    target.write_text("{}")
    code = cli.main(["diagnose", str(target)])
    _one_line_error(capsys, code, "is a file, not a checkpoint directory", str(target), "written by 'idepth train")


def test_diagnose_of_a_missing_directory_says_it_does_not_exist(tmp_path, capsys):
    code = cli.main(["diagnose", str(tmp_path / "nowhere")])
    _one_line_error(capsys, code, "does not exist")


def test_train_help_and_its_model_error_list_the_same_models_the_registry_has(tmp_path, capsys):
    import re

    from numerics.models import MODELS

    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    help_text = capsys.readouterr().out
    listed = re.search(r"--model \{([^}]*)\}", help_text).group(1).split(",")
    assert listed == list(MODELS) and len(listed) == 6
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "--model", "transformer", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert re.findall(r"'(\w+)'", err.split("choose from", 1)[1]) == list(MODELS)
