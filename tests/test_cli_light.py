"""Claims about the ``idepth`` command line itself: its help and version import neither sympy nor
scipy (they answer at once), and a missing optional extra is named with the command that installs it."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import time

import pytest

import idepth.cli as cli
from idepth.commands import docs

#: prints, as JSON, {argv: [sympy imported, scipy imported]} for --version, --help and every
#: sub-command's (and sub-sub-command's) --help, each in a fresh interpreter state of its own
_PROBE = r"""
import argparse, json, subprocess, sys

def paths(parser, prefix=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield prefix + (name,)
                yield from paths(sub, prefix + (name,))

if len(sys.argv) == 1:  # list the command paths (this process may import anything), then probe each
    from idepth.cli import build_parser
    argvs = [["--version"], ["--help"]] + [list(p) + ["--help"] for p in paths(build_parser())]
    out = {}
    for argv in argvs:
        res = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True)
        out[" ".join(argv)] = json.loads(res.stdout.strip().splitlines()[-1])
    print(json.dumps(out))
else:
    import io, contextlib
    from idepth.cli import main
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main(sys.argv[1:])
        except SystemExit:
            pass
    print(json.dumps(["sympy" in sys.modules, "scipy" in sys.modules]))
"""


def test_help_and_version_import_neither_sympy_nor_scipy():
    code = f"PROBE = {_PROBE!r}\n" + _PROBE
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imported = json.loads(res.stdout)
    assert {"--version", "--help", "train --help", "derive --help", "reproduce --help", "study sizes --help",
            "sweep run --help", "docs build --help", "predict --help", "diagnose --help"} <= set(imported)
    heavy = {argv: flags for argv, flags in imported.items() if any(flags)}
    assert heavy == {}, f"[sympy, scipy] imported by: {heavy}"


def test_probe_detects_a_heavy_import():
    """The probe is not blind: the theory API it keeps out of --help does import sympy and scipy."""
    code = "import sys, theory\ntheory.fit_depth_law\nprint('sympy' in sys.modules, 'scipy' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.split() == ["True", "True"]


def test_docs_build_without_sphinx_names_the_docs_extra(tmp_path, capsys, monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name == "sphinx" else real_find_spec(name, *a, **k))
    monkeypatch.setattr(docs.subprocess, "call", lambda *a, **k: pytest.fail("sphinx-build must not be started"))
    out = tmp_path / "html"
    assert cli.main(["docs", "build", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "sphinx" in err and "pip install -e '.[docs]'" in err
    assert not out.exists()


def _checkout_run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    from _checkout import ROOT, checkout_env, idepth_command

    return subprocess.run(idepth_command(*args), text=True, timeout=120, cwd=ROOT, env=checkout_env(), **kwargs)


def test_a_bare_idepth_prints_the_usage_listing_every_command_then_one_error_line_and_exits_2():
    out = _checkout_run(capture_output=True)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert lines[0].startswith("usage: idepth")
    listed = [line.split()[0] for line in lines[2:-1]]
    assert listed == list(cli.COMMANDS)  # one line per registered command, in the --help order
    assert lines[-1].startswith("idepth: error: COMMAND missing") and all(name in lines[-1] for name in cli.COMMANDS)


def test_a_command_without_its_action_lists_the_registered_actions(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["study"])
    err = capsys.readouterr().err.strip().splitlines()
    study = cli._subcommands(cli._subcommands(cli.build_parser()).choices["study"])
    assert exit_.value.code == 2 and err[0].startswith("usage: idepth study")
    assert [line.split()[0] for line in err[2:-1]] == list(study.choices)
    assert err[-1].startswith("idepth study: error: ACTION missing") and "certified" in err[-1]


def test_output_into_a_closed_pipe_exits_1_quietly():
    """``idepth predict --json | head -c 10``: the reader is gone before the output is written (its end of
    the pipe is closed before the command starts, so the write fails every time): no BrokenPipeError."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        out = _checkout_run("predict", "--depth", "1-64", "--json", stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    assert out.returncode == 1
    assert out.stderr == ""


def test_output_read_in_part_by_head_leaves_no_traceback():
    """The same through a real ``| head -c 10`` (the reader may or may not be gone before the write)."""
    import shlex

    from _checkout import ROOT, checkout_env, idepth_command

    command = " ".join(map(shlex.quote, idepth_command("predict", "--depth", "1-1000", "--json"))) + " | head -c 10"
    out = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=120,
                         cwd=ROOT, env=checkout_env())
    assert out.stdout == '{\n "attent' and out.returncode in (0, 1)
    assert out.stderr == ""


_PHASE = re.compile(r"^idepth docs: \[ *(\d+\.\d) s\] (.+)$")


def test_docs_build_says_its_phases_with_elapsed_seconds_on_stderr(tmp_path, capsys, monkeypatch):
    """The build used to be silent for about a minute: the command says when it starts Sphinx and when it is
    done, with the seconds elapsed, and hands Sphinx its start time (for the phases inside the build)."""
    calls = []
    monkeypatch.setattr(docs.subprocess, "call", lambda command, env: calls.append(env) or 0)
    out = tmp_path / "html"
    assert cli.main(["docs", "build", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    phases = [_PHASE.match(line) for line in captured.err.splitlines()]
    assert all(phases) and len(phases) == 2, captured.err
    assert phases[0].group(2).startswith("running sphinx-build") and phases[1].group(2) == "done"
    assert float(phases[0].group(1)) <= float(phases[1].group(1))
    assert float(calls[0][docs.STARTED_VARIABLE]) > 0  # the start, in seconds since the epoch
    assert captured.out.strip() == f"idepth docs: built {out.resolve() / 'index.html'}"


def _tiny_build(tmp_path, **env_extra) -> subprocess.CompletedProcess:
    from _checkout import ROOT, checkout_env

    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "index.md").write_text("# Tiny\n\nA page.\n", encoding="utf-8")
    command = docs.sphinx_command(tmp_path / "out", source, confdir=ROOT / "docs")
    return subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env=checkout_env(**env_extra))


def test_the_docs_extension_says_the_sphinx_phases_only_under_idepth_docs_build(tmp_path):
    started = time.time()
    res = _tiny_build(tmp_path, **{docs.STARTED_VARIABLE: repr(started)})
    assert res.returncode == 0, res.stderr
    phases = [_PHASE.match(line) for line in res.stderr.splitlines() if line.startswith("idepth docs:")]
    assert all(phases)
    said = [match.group(2) for match in phases]
    assert said == ["reading 1 of 1 pages (autodoc imports the package)…",
                    "resolving references and writing the HTML pages…", "copying the offline MathJax…"]
    seconds = [float(match.group(1)) for match in phases]
    assert seconds == sorted(seconds)  # elapsed since the one start time, phase after phase
    quiet = _tiny_build(tmp_path)  # a plain sphinx-build: no phase lines
    assert quiet.returncode == 0 and "idepth docs:" not in quiet.stderr


def test_a_broken_pipe_that_is_not_the_output_is_an_error_naming_it():
    """Only a reader of the output going away is quiet: a worker's or a socket's broken pipe, while the output is
    read, is one line on stderr with exit status 2."""
    from _checkout import ROOT, checkout_env

    code = ("import sys\nfrom idepth.commands import predict\n"
            "def run(args):\n    raise BrokenPipeError(32, 'Broken pipe', 'worker-socket')\n"
            "predict.run = run\nfrom idepth.cli import main\nsys.exit(main(['predict']))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env=checkout_env())
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == ["idepth predict: error: 'worker-socket': Broken pipe"]


def test_study_run_lists_every_named_plan_and_runs_each_through_its_own_options(capsys):
    from idepth.commands.study import PLANS

    with pytest.raises(SystemExit) as exit_:
        cli.main(["study", "run", "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    assert set(PLANS) == {"certified", "regimes", "defaults", "population", "plateaus"}
    for name in PLANS:
        assert re.search(rf"^    {name}\b", out, re.M), name
    with pytest.raises(SystemExit) as exit_:
        cli.main(["study", "run", "certified", "--help"])
    assert exit_.value.code == 0 and "--report-only" in capsys.readouterr().out


@pytest.mark.parametrize("alias", ["certified", "regime", "defaults", "consistency", "sizes"])
def test_each_former_study_action_takes_its_plan_s_options_under_the_old_name(alias):
    import argparse

    from idepth.commands.study import ALIASES, PLANS, STEPS

    def options(build):
        parser = argparse.ArgumentParser()
        build(parser)
        return sorted(o for action in parser._actions for o in action.option_strings)

    study = cli.build_parser()._subparsers._group_actions[0].choices["study"]
    actions = study._subparsers._group_actions[0].choices
    name = ALIASES[alias]
    assert sorted(o for a in actions[alias]._actions for o in a.option_strings) == options({**PLANS, **STEPS}[name][1])


@pytest.mark.parametrize("argv, match", [
    (["study", "run", "nope"], "argument PLAN: invalid choice: 'nope'"),
    (["study", "run"], "PLAN missing: one of certified, regimes, defaults, population, plateaus"),
    (["study", "run", "plateaus", "--seeds", "3"], "unrecognized arguments: --seeds"),
    (["study", "run", "defaults", "--out", "x.txt"], "--out"),
])
def test_study_run_refuses_bad_plans_and_options_in_one_line(argv, match, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    try:
        status = cli.main(argv)
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and re.search(match, err[0]), err
    assert not list(tmp_path.iterdir())  # nothing written


def test_study_run_plateaus_is_the_consistency_check_then_the_size_inference(tmp_path, capsys):
    out = tmp_path / "plateaus"
    assert cli.main(["study", "run", "plateaus", "--out", str(out), "--d", "8", "--P", "32", "--contexts", "64",
                     "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert printed.index("consistency.md") < printed.index("sizes.md")
    assert {p.name for p in out.iterdir()} >= {"consistency.md", "sizes.md", "sizes.json"}
