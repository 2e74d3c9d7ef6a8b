"""Claims about the one execution value (numerics/experiments/execution.py) and the CLI that builds it.

* :class:`Execution` refuses a bad value in its constructor, naming the field;
* every sub-command that runs things builds it from its flags first, so a bad flag is one line on
  stderr with exit status 2 and nothing is written;
* the flags keep their meaning (``sweep run --dask-local N`` is the local Dask cluster's size, and
  ``sweep run`` still refuses workers next to a scheduler).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from idepth.cli import main
from numerics.experiments.execution import BACKENDS, Execution, as_execution, usable_cores

SCHEDULER = "tcp://127.0.0.1:1"  # never contacted: every case below is refused before any connection


@pytest.mark.parametrize(
    ("fields", "error", "named"),
    [
        (dict(backend="slurm"), ValueError, "backend"),
        (dict(workers=0), ValueError, "workers must be an integer >= 1"),
        (dict(workers=2.5), TypeError, "workers"),
        (dict(workers=True), TypeError, "workers"),
        (dict(scheduler=SCHEDULER), ValueError, "scheduler is only used with backend='dask'"),
        (dict(backend="dask", scheduler=8786), TypeError, "scheduler must be an address string"),
        (dict(progress="yes"), TypeError, "progress"),
        (dict(store_dir=3), TypeError, "store_dir"),
        (dict(cache_dir=""), TypeError, "cache_dir"),
        (dict(connect_timeout=0), ValueError, "connect_timeout"),
        (dict(connect_timeout=True), TypeError, "connect_timeout"),
    ],
    ids=["backend", "zero-workers", "float-workers", "bool-workers", "scheduler-with-local", "scheduler-not-a-string",
         "progress", "store-dir", "empty-cache-dir", "zero-timeout", "bool-timeout"],
)
def test_a_bad_execution_value_is_refused_naming_its_field(fields, error, named):
    with pytest.raises(error, match=named):
        Execution(**fields)


def test_an_execution_is_frozen_and_normalises_its_fields(tmp_path):
    execution = Execution("dask", workers=3, scheduler=SCHEDULER, store_dir=str(tmp_path), connect_timeout=2)
    assert execution.store_dir == tmp_path and isinstance(execution.store_dir, Path)
    assert execution.connect_timeout == 2.0 and execution.cache_dir is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        execution.workers = 1
    with pytest.raises(ValueError, match="workers"):  # a derived value is validated too
        dataclasses.replace(execution, workers=0)
    assert BACKENDS == ("local", "dask")


def test_pool_size_is_the_workers_else_the_callers_default_else_the_usable_cores():
    assert Execution(workers=3).pool_size() == Execution(workers=3).pool_size(default=1) == 3
    assert Execution().pool_size(default=1) == 1
    assert Execution().pool_size() == usable_cores() >= 1


def test_none_means_the_defaults_and_anything_else_is_refused():
    assert as_execution(None) == Execution() == Execution("local", None, None, None, None, None, 10.0)
    execution = Execution(workers=1)
    assert as_execution(execution) is execution
    with pytest.raises(TypeError, match="execution must be an Execution"):
        as_execution({"workers": 1})


# ----------------------------------------------------------------------------- the command line

def _commands(out: Path) -> dict:
    """argv of every sub-command that runs things, writing under ``out``, without its execution flags."""
    return {
        "reproduce": ["reproduce", "--scale", "smoke", "--out", str(out)],
        "study regime": ["study", "regime", "--scale", "smoke", "--out", str(out)],
        "study defaults": ["study", "defaults", "--scale", "smoke", "--out", str(out / "defaults.json")],
        "study certified": ["study", "certified", "--out", str(out), "--store", str(out / "store"),
                            "--cells", str(out / "cells")],
        "study sizes": ["study", "sizes", "--out", str(out)],
        "study consistency": ["study", "consistency", "--out", str(out)],
        "sweep run": ["sweep", "run", str(out / "grid.toml"), "--out", str(out)],
    }


#: the sub-commands with --backend and --scheduler
WITH_SCHEDULER = ("reproduce", "study regime", "study certified", "study defaults", "sweep run")


def _one_line_error(argv, capsys) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("command", WITH_SCHEDULER)
def test_a_scheduler_without_dask_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, command):
    out = tmp_path / "out"
    err = _one_line_error(_commands(out)[command] + ["--scheduler", SCHEDULER], capsys)
    assert f"idepth {command.split()[0]}: error: scheduler is only used with backend='dask'" in err
    assert not out.exists()


@pytest.mark.parametrize("command", sorted(_commands(Path("."))))
def test_zero_workers_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, command):
    out = tmp_path / "out"
    err = _one_line_error(_commands(out)[command] + ["--workers", "0"], capsys)
    assert "workers must be an integer >= 1; got 0" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--dask-local", "2"], "--dask-local is only used with --backend dask"),
        (["--backend", "dask", "--scheduler", SCHEDULER, "--workers", "2"], "the cluster decides the workers"),
        (["--backend", "dask", "--scheduler", SCHEDULER, "--dask-local", "2"], "the cluster decides the workers"),
        (["--backend", "dask", "--dask-local", "0"], "--dask-local must be an integer >= 1"),
        (["--backend", "dask", "--connect-timeout", "0"], "connect_timeout must be > 0"),
    ],
    ids=["dask-local-without-dask", "workers-with-scheduler", "dask-local-with-scheduler", "zero-dask-local",
         "zero-timeout"],
)
def test_sweep_run_keeps_refusing_what_it_refused(tmp_path, capsys, options, named):
    out = tmp_path / "out"
    err = _one_line_error(_commands(out)["sweep run"] + options, capsys)
    assert named in err and not out.exists()


def test_the_cli_hands_the_library_one_execution_of_its_flags(tmp_path, monkeypatch):
    """``study regime``: backend, workers, scheduler, progress and store arrive as one Execution."""
    from types import SimpleNamespace

    from numerics.experiments import study

    received = []
    done = SimpleNamespace(regime_name="r", out_dir=tmp_path, figures=(), runs=0, wall_time=0.0,
                           consistency=SimpleNamespace(n_below=0, rows=()))
    monkeypatch.setattr(study, "run_regime_study", lambda scale, out, **kwargs: received.append(kwargs) or done)
    monkeypatch.setattr(study, "write_regime_study", lambda result: result)
    store = tmp_path / "store"
    assert main(["study", "regime", "--scale", "smoke", "--out", str(tmp_path / "out"), "--store", str(store),
                 "--backend", "dask", "--scheduler", SCHEDULER, "--workers", "3", "--no-progress"]) == 0
    assert received[0]["execution"] == Execution("dask", workers=3, scheduler=SCHEDULER, progress=False,
                                                 store_dir=store)


def test_study_certified_hands_its_runners_the_one_execution_of_its_flags(tmp_path, monkeypatch):
    """``study certified``: the cells run where --backend/--scheduler/--workers say, through the one driver, once
    (the plan trains no contrast recipe)."""
    from numerics.experiments import study
    from numerics.experiments.study.certified import facts

    received = []
    monkeypatch.setattr(study, "run_plan", lambda plan, store, **kwargs: received.append(("cells", store,
                                                                                           kwargs)) or {})
    monkeypatch.setattr(facts, "write_certified", lambda *args, **kwargs: ([], []))
    store = tmp_path / "store"
    assert main(["study", "certified", "--out", str(tmp_path / "out"), "--store", str(store), "--cells",
                 str(tmp_path / "cells"), "--backend", "dask", "--scheduler", SCHEDULER, "--no-progress"]) == 0
    expected = Execution("dask", scheduler=SCHEDULER, progress=False, store_dir=store)
    assert [(job, kwargs["execution"]) for job, _, kwargs in received] == [("cells", expected)]
    assert [str(where) for _, where, _ in received] == [str(store)]


def test_sweep_run_dask_local_is_the_size_of_the_local_cluster(tmp_path, monkeypatch):
    from numerics.experiments import sweep

    received = []
    nothing = sweep.SweepSummary(tmp_path, tmp_path / "results.sqlite", "dask", 1, 0, 0, 0, 0, 0, 0, 0, 0.0)
    monkeypatch.setattr(sweep, "run_sweep", lambda grid, out, **kwargs: received.append(kwargs) or nothing)
    assert main(["sweep", "run", str(tmp_path / "grid.toml"), "--out", str(tmp_path / "out"), "--backend", "dask",
                 "--workers", "4", "--dask-local", "1", "--connect-timeout", "3"]) == 0
    assert received[0]["execution"] == Execution("dask", workers=1, connect_timeout=3.0)
