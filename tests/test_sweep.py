"""Claims about depth sweeps (numerics/experiments/sweep/, idepth sweep): grids, backends, resumability, bad input.

Worker processes are started with ``spawn``; the stand-in config and runners
below live in this module, which spawned workers import by name (the tests
directory is on ``sys.path``, which spawn hands to its children).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from _checkout import checkout_env, idepth_command

from idepth.cli import main as idepth_main
from numerics.experiments import sweep as sw
from numerics.experiments.store import STORE_FILENAME, ResultsStore, load_arrays, load_results
from numerics.experiments.sweep import Execution, Grid, grid_from_dict, load_grid, run_sweep, sweep_status
from numerics.train import TrainConfig

REPO = Path(__file__).resolve().parents[1]
DETERMINISTIC_METRICS = ("R_L", "A_L", "C_L", "steps", "converged")
#: where most sweeps of these tests run: one or two local worker processes, silently
ONE_WORKER = Execution(workers=1, progress=False)
TWO_WORKERS = Execution(workers=2, progress=False)


# ----------------------------------------------------------------------------- stand-ins


@dataclass(frozen=True)
class ToyConfig:
    """A stand-in run config: same interface as numerics.train.TrainConfig."""

    depth: int = 1
    seed: int = 0
    mode: str = "ok"  # ok | raise | crash_once | crash_always | fail_until_file | hold
    path: str = ""  # marker file of crash_once / fail_until_file; directory of hold's started-<depth> file

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data):
        names = [f.name for f in dataclasses.fields(cls)]
        for key, value in data.items():
            if key not in names:
                raise ValueError(f"unknown ToyConfig key {key!r}")
            expected = type(getattr(cls, key))
            if not isinstance(value, expected) or isinstance(value, bool) != (expected is bool):
                raise ValueError(f"{key} must be {expected.__name__}; got {value!r}")
        return cls(**data)

    def content_hash(self):
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class ToyResult:
    metrics: dict
    arrays: dict


def toy_runner(config: ToyConfig) -> ToyResult:
    if config.mode == "raise":
        raise RuntimeError(f"toy failure at depth {config.depth}")
    if config.mode == "fail_until_file" and not os.path.exists(config.path):
        raise FileNotFoundError(f"marker {config.path} missing")
    if config.mode == "hold":
        _hold(config.path, config.depth)
    if config.mode == "crash_always" or (config.mode == "crash_once" and not os.path.exists(config.path)):
        if config.path:
            Path(config.path).touch()
        os._exit(3)  # the worker process dies
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, config.depth]))
    curve = rng.standard_normal(8)
    metrics = {"R_L": 1.0 / config.depth + float(curve[0] ** 2), "A_L": 1.0, "C_L": float("nan"),
               "steps": 10 * config.depth, "converged": True}
    return ToyResult(metrics, {"loss_curve": curve})


def _hold(directory: str, name) -> None:
    """A run that never ends: writes its worker's pid to ``directory/started-<name>``, then waits for ever."""
    Path(directory, f"started-{name}").write_text(str(os.getpid()))
    while True:  # ends with its process only
        time.sleep(0.05)


def hold_value(key: dict) -> dict:
    """A ``cached_many`` value that never arrives (see :func:`_hold`)."""
    _hold(key["path"], key["x"])
    return {}


def probe_runner(config: ToyConfig) -> ToyResult:
    """Reports the worker's BLAS pinning (see numerics.experiments.sweep._backends._init_worker)."""
    metrics = {name: os.environ.get(name) for name in sw.BLAS_THREAD_VARIABLES}
    metrics["numpy_imported_before_pinning"] = sw.WORKER_STATE.get("numpy_imported_before_pinning")
    return ToyResult(metrics, {})


def _toy_grid(**axes) -> Grid:
    return Grid(config_type=ToyConfig, **axes)


# ----------------------------------------------------------------------------- real tiny runs

TINY = dict(model="nonlinear", task="difficult", k=2, d=4, N=4, P=8, batch_size=8, max_steps=30, eval_every=10,
            eval_size=32, warmup_steps=0, window=1000)
TINY_TOML = "\n".join(f"{key} = {json.dumps(value)}" for key, value in TINY.items())


def _tiny_grid(**axes) -> Grid:
    return Grid(**{**TINY, **axes})


def _stored(out_dir):
    """hash -> (deterministic metrics, arrays as bytes) for every run in the store."""
    stored = {}
    for row in load_results(out_dir):
        assert row["status"] == "done", row["error"]
        metrics = tuple(("nan" if isinstance(v, float) and math.isnan(v) else v)
                        for v in (row["metrics"][name] for name in DETERMINISTIC_METRICS))
        arrays = {name: (a.dtype.str, a.shape, a.tobytes()) for name, a in load_arrays(out_dir, row["hash"]).items()}
        stored[row["hash"]] = (metrics, arrays)
    return stored


# ----------------------------------------------------------------------------- grids


def test_grid_is_the_product_of_listed_values_with_the_last_axis_fastest():
    grid = _toy_grid(depth=[1, 2, 4], seed=[0, 1], mode="ok")
    assert [(c.depth, c.seed) for c in grid] == [(1, 0), (1, 1), (2, 0), (2, 1), (4, 0), (4, 1)]


def test_subgrids_are_concatenated_and_override_the_shared_entries():
    grid = grid_from_dict({"seed": 7, "grid": [{"depth": [1, 2]}, {"depth": 8, "seed": [0, 1]}]}, config_type=ToyConfig)
    assert [(c.depth, c.seed) for c in grid] == [(1, 7), (2, 7), (8, 0), (8, 1)]
    assert [c.depth for c in _toy_grid(depth=[1]) + _toy_grid(depth=[2, 4])] == [1, 2, 4]


def test_a_config_listed_twice_is_run_once_at_its_first_position():
    grid = Grid({"depth": [1, 2]}, {"depth": [2, 4]}, config_type=ToyConfig)
    assert [c.depth for c in grid] == [1, 2, 4]


@given(st.lists(st.dictionaries(st.sampled_from(["depth", "seed"]),
                                st.lists(st.integers(1, 50), min_size=1, max_size=4, unique=True),
                                min_size=1), min_size=1, max_size=3))
def test_grid_runs_are_the_distinct_points_of_the_subgrid_products_in_order(subgrids):
    expected = []
    for sub in subgrids:
        names = list(sub)
        for values in itertools.product(*sub.values()):
            point = ToyConfig(**dict(zip(names, values)))
            if point not in expected:
                expected.append(point)
    assert list(Grid(*subgrids, config_type=ToyConfig)) == expected


def test_grid_file_and_python_call_declare_the_same_runs(tmp_path):
    file = tmp_path / "grid.toml"
    file.write_text(TINY_TOML + "\ndepth = [1, 2]\nseed = [0, 1]\ninit = {}\n")
    from_file = load_grid(file)
    assert from_file.configs == _tiny_grid(depth=[1, 2], seed=[0, 1], init={}).configs
    assert [(c.depth, c.seed) for c in from_file] == [(1, 0), (1, 1), (2, 0), (2, 1)]


@pytest.mark.parametrize(
    ("document", "error", "named"),
    [
        ({**TINY, "depht": [1, 2]}, ValueError, "unknown TrainConfig key 'depht'"),
        ({**TINY, "depth": [1, "two"]}, ValueError, "depth"),
        ({**TINY, "depth": []}, ValueError, "grid axis 'depth' has no values"),
        ({}, ValueError, "grid is empty"),
        ({**TINY, "grid": []}, ValueError, "grid is empty"),
        ({**TINY, "grid": 3}, TypeError, "list of tables"),
    ],
)
def test_bad_grid_entries_raise_naming_the_problem(document, error, named):
    with pytest.raises(error, match=named) as info:
        grid_from_dict(document)
    assert "\n" not in str(info.value)


def test_a_bad_point_in_a_subgrid_names_the_subgrid():
    with pytest.raises(ValueError, match=r"sub-grid 2 of 2"):
        Grid({"depth": 1}, {"depth": 0}, **TINY)


def test_content_hash_changes_with_every_config_field_and_with_the_package_version(monkeypatch):
    base = TrainConfig(**{**TINY, "N": 8, "P": 16, "grad_clip": 1.0, "learning_rate": 0.01})
    data = base.to_dict()
    alternatives = {"model": "linear", "task": "easy", "schedule": "constant", "dtype": "float64",
                    "init": {"w_x": "gaussian"}, "frozen": ["W_o"], "start": {"kind": "given"}, "engine": "jax"}
    monkeypatch.setattr("numerics.engines.jax_available", lambda: True)  # engine="jax" hashes without jax installed
    unchanged = []
    for name, value in data.items():
        if name in alternatives:
            new = alternatives[name]
        elif isinstance(value, bool):
            new = not value
        elif isinstance(value, int):
            new = value + 1
        elif isinstance(value, float):
            new = value * 0.5 if value > 0 else 0.5
        else:
            pytest.fail(f"no perturbation for config field {name}={value!r}: extend this test")
        changed = base.from_dict({**data, name: new})
        if changed.content_hash() == base.content_hash():
            unchanged.append(name)
    assert unchanged == []
    import theory

    before = base.content_hash()
    monkeypatch.setattr(theory, "__version__", theory.__version__ + ".post1")
    assert base.content_hash() != before


def test_content_hash_is_the_same_in_another_interpreter():
    config = _tiny_grid(depth=[3]).configs[0]
    code = ("import json, sys; from numerics.train import TrainConfig; "
            "print(TrainConfig.from_dict(json.loads(sys.argv[1])).content_hash())")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(config.to_dict())], cwd=REPO, check=True,
                         capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert out.stdout.strip() == config.content_hash()


# ----------------------------------------------------------------------------- execution


def test_stored_results_are_identical_for_one_and_two_local_workers_and_dask(tmp_path, dask_scheduler):
    grid = _tiny_grid(depth=[1, 2, 3], seed=[0, 1])
    assert len(grid) == 6
    one = run_sweep(grid, tmp_path / "one", execution=ONE_WORKER)
    two = run_sweep(grid, tmp_path / "two", execution=TWO_WORKERS)
    dask = run_sweep(grid, tmp_path / "dask",
                     execution=Execution(backend="dask", scheduler=dask_scheduler, progress=False))
    assert [s.done for s in (one, two, dask)] == [6, 6, 6] and dask.workers == 2
    reference = _stored(tmp_path / "one")
    assert set(reference) == {c.content_hash() for c in grid}
    assert _stored(tmp_path / "two") == reference
    assert _stored(tmp_path / "dask") == reference


def test_dask_local_cluster_backend_gives_the_same_results_as_local(tmp_path):
    grid = _toy_grid(depth=[1, 2, 3], seed=[0, 1])
    run_sweep(grid, tmp_path / "local", runner=toy_runner, execution=ONE_WORKER)
    driver_env = {name: os.environ.get(name) for name in sw.BLAS_THREAD_VARIABLES}
    summary = run_sweep(grid, tmp_path / "dask", runner=toy_runner,
                        execution=Execution(backend="dask", workers=1, progress=False))  # a local cluster of 1
    assert (summary.backend, summary.workers, summary.done) == ("dask", 1, 6)
    assert {name: os.environ.get(name) for name in sw.BLAS_THREAD_VARIABLES} == driver_env  # dask's export undone
    assert _stored(tmp_path / "dask") == _stored(tmp_path / "local")


def test_rerunning_a_sweep_runs_only_what_is_not_done(tmp_path):
    out = tmp_path / "sweep"
    first = run_sweep(_toy_grid(depth=[1, 2]), out, runner=toy_runner, execution=ONE_WORKER)
    finished = {r["hash"]: r["finished_at"] for r in load_results(out)}
    again = run_sweep(_toy_grid(depth=[1, 2]), out, runner=toy_runner, execution=ONE_WORKER)
    extended = run_sweep(_toy_grid(depth=[1, 2, 4]), out, runner=toy_runner, execution=ONE_WORKER)
    assert (first.executed, again.executed, again.skipped, extended.executed, extended.skipped) == (2, 0, 2, 1, 2)
    rows = load_results(out)
    assert len(rows) == 3 and all(r["attempts"] == 1 for r in rows)
    assert {r["hash"]: r["finished_at"] for r in rows[:2]} == finished


def test_a_failing_run_is_recorded_with_its_message_and_the_others_finish(tmp_path):
    marker = tmp_path / "fixed"
    grid = Grid({"depth": [1, 2, 4]}, {"depth": 3, "mode": "fail_until_file", "path": str(marker)},
                config_type=ToyConfig)
    out = tmp_path / "sweep"
    summary = run_sweep(grid, out, runner=toy_runner, execution=TWO_WORKERS)
    assert (summary.done, summary.failed, summary.ok) == (3, 1, False)
    (failed,) = load_results(out, status="failed")
    assert failed["error"] == f"FileNotFoundError: marker {marker} missing"
    assert failed["metrics"] == {} and "Traceback" in _traceback(out, failed["hash"])
    marker.touch()
    assert run_sweep(grid, out, runner=toy_runner, execution=ONE_WORKER).executed == 0  # not retried
    retried = run_sweep(grid, out, runner=toy_runner, retry_failed=True, execution=ONE_WORKER)
    assert (retried.executed, retried.done, retried.failed) == (1, 4, 0)
    assert load_results(out)[3]["error"] is None and load_results(out)[3]["attempts"] == 2


def _traceback(out, run_hash):
    with sqlite3.connect(Path(out) / STORE_FILENAME) as conn:
        return conn.execute("SELECT traceback FROM runs WHERE hash = ?", (run_hash,)).fetchone()[0]


def test_a_dead_worker_gets_its_run_rerun_and_a_run_that_always_kills_it_fails(tmp_path):
    grid = Grid({"depth": [1, 2, 3]},
                {"depth": 10, "mode": "crash_once", "path": str(tmp_path / "crashed")},
                {"depth": 20, "mode": "crash_always"}, config_type=ToyConfig)
    out = tmp_path / "sweep"
    summary = run_sweep(grid, out, runner=toy_runner, max_worker_deaths=2, execution=TWO_WORKERS)
    assert (summary.done, summary.failed) == (4, 1)
    rows = {r["config"]["depth"]: r for r in load_results(out)}
    assert rows[10]["status"] == "done" and rows[10]["attempts"] >= 2
    assert rows[20]["status"] == "failed" and rows[20]["error"].startswith("WorkerDied: the worker process died 2 times")
    assert all(rows[d]["status"] == "done" for d in (1, 2, 3))


def test_local_workers_pin_blas_to_one_thread_before_numpy_is_imported(tmp_path):
    driver_env = {name: os.environ.get(name) for name in sw.BLAS_THREAD_VARIABLES}
    run_sweep(_toy_grid(depth=[1]), tmp_path, runner=probe_runner, execution=ONE_WORKER)
    (row,) = load_results(tmp_path)
    assert row["status"] == "done", row["error"]
    assert {name: row["metrics"][name] for name in sw.BLAS_THREAD_VARIABLES} == dict.fromkeys(sw.BLAS_THREAD_VARIABLES, "1")
    assert row["metrics"]["numpy_imported_before_pinning"] is False
    assert {name: os.environ.get(name) for name in sw.BLAS_THREAD_VARIABLES} == driver_env  # restored


def test_dask_workers_run_with_one_blas_thread(tmp_path, dask_scheduler):
    run_sweep(_toy_grid(depth=[1]), tmp_path, runner=probe_runner,
              execution=Execution(backend="dask", scheduler=dask_scheduler, progress=False))
    (row,) = load_results(tmp_path)
    assert row["status"] == "done", row["error"]
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        assert row["metrics"][name] == "1"


def test_progress_bar_counts_runs_and_failures_when_asked_and_is_silent_otherwise(tmp_path, capsys):
    grid = Grid({"depth": [1, 2]}, {"depth": 3, "mode": "raise"}, config_type=ToyConfig)
    run_sweep(grid, tmp_path / "quiet", runner=toy_runner, execution=ONE_WORKER)
    assert capsys.readouterr().err == ""
    run_sweep(grid, tmp_path / "bar", runner=toy_runner, execution=Execution(workers=1, progress=True))
    err = capsys.readouterr().err
    assert "3/3" in err and "failed=1" in err


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_sigkill_of_the_driver_loses_no_finished_run_and_the_rerun_completes_each_run_once(tmp_path):
    out = tmp_path / "sweep"
    grid_file = tmp_path / "grid.toml"
    grid_file.write_text(TINY_TOML.replace("max_steps = 30", "max_steps = 150") + "\ndepth = [1, 2, 3, 4, 5]\n")
    code = ("import sys; from numerics.experiments.sweep import run_sweep; "
            "from numerics.experiments.execution import Execution; "
            "run_sweep(sys.argv[1], sys.argv[2], execution=Execution(workers=1, progress=False))")
    marker = tmp_path / "first-commit"  # the driver creates it after its first commit and waits (no race)
    env = checkout_env(**{sw.HOLD_AFTER_COMMIT_VARIABLE: str(marker)})
    driver = subprocess.Popen([sys.executable, "-c", code, str(grid_file), str(out)], cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300  # bounds a hang only
        while not marker.exists() and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        held = marker.exists()
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    assert held, f"no run was committed: {driver.stderr.read().decode()[-2000:]}"
    committed = {r["hash"]: (r["finished_at"], r["pid"]) for r in load_results(out, status="done")}
    assert len(committed) == 1, "killed right after the first commit"
    worker = next(iter(committed.values()))[1]
    deadline = time.monotonic() + 30  # it polls its parent every 0.5 s; a bound on a hang under load
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker), "a local worker outlived its killed driver"

    summary = run_sweep(grid_file, out, execution=ONE_WORKER)
    assert (summary.total, summary.done, summary.skipped, summary.executed) == (5, 5, len(committed), 5 - len(committed))
    assert summary.requeued >= 1  # the run in flight at the kill was left 'running'
    rows = load_results(out)
    assert len(rows) == 5 and len({r["hash"] for r in rows}) == 5 and {r["status"] for r in rows} == {"done"}
    assert {h: (r["finished_at"], r["pid"]) for r in rows for h in [r["hash"]] if h in committed} == committed
    with sqlite3.connect(out / STORE_FILENAME) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT COUNT(*), COUNT(DISTINCT hash) FROM runs").fetchone() == (5, 5)
        assert conn.execute("SELECT COUNT(DISTINCT run_hash) FROM arrays").fetchone() == (5,)


#: an interrupted driver: a sweep of one short run and three that never end, or three cached_many values that
#: never arrive, on two local workers (one of them queued behind the two held); Ctrl-C is one line on stderr
#: and exit status 130, as in idepth.cli
INTERRUPTED_DRIVER = """
import sys
sys.path.insert(0, sys.argv[1])
import test_sweep as t
from numerics.experiments.cache import cached_many
from numerics.experiments.sweep import run_sweep

if __name__ == "__main__":
    kind, where = sys.argv[2], sys.argv[3]
    try:
        if kind == "sweep":
            grid = t._toy_grid(depth=[1]) + t._toy_grid(depth=[2, 3, 4], mode="hold", path=where)
            run_sweep(grid, where + "/sweep", runner=t.toy_runner, execution=t.TWO_WORKERS)
        else:
            cached_many(where + "/cache", "hold", [{"x": x, "path": where} for x in (1, 2, 3)], t.hold_value,
                        workers=2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
"""


@pytest.mark.parametrize("target", ["driver", "process group"])
@pytest.mark.parametrize("kind", ["sweep", "cached_many"])
def test_ctrl_c_ends_the_local_workers_without_waiting_for_their_runs_and_keeps_the_finished_ones(
        tmp_path, kind, target):
    """Ctrl-C while local workers run (here: runs that never end) stops the driver and its workers: exit status
    130, its one line on stderr and nothing else (no worker's traceback, no resource-tracker warning), the
    workers gone when it has exited, the finished run kept and the others back to 'pending'. Sent to the driver
    alone (``kill -INT``) or to its whole process group (a terminal's Ctrl-C). A driver that waited for the
    runs in flight (at its exit, too), or whose workers took the Ctrl-C and went on with the queued run, would
    never exit: the timeout below only bounds that hang."""
    marker = tmp_path / "first-commit"  # the sweep's driver creates it after its first commit and waits there
    held = ["started-2", "started-3"] if kind == "sweep" else ["started-1", "started-2"]
    driver = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_DRIVER, str(Path(__file__).parent), kind, str(tmp_path)],
        cwd=REPO, env=checkout_env(**{sw.HOLD_AFTER_COMMIT_VARIABLE: str(marker)}),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 300  # bounds a failure to start only
        while (not (all((tmp_path / name).exists() for name in held) and (kind != "sweep" or marker.exists()))
               and driver.poll() is None and time.monotonic() < deadline):
            time.sleep(0.05)
        assert driver.poll() is None, f"the driver ended early: {driver.stderr.read().decode()[-3000:]}"
        workers = [int((tmp_path / name).read_text()) for name in held]  # each run holds its own worker
        if target == "driver":
            os.kill(driver.pid, signal.SIGINT)
        else:
            os.killpg(driver.pid, signal.SIGINT)
        try:
            _, stderr = driver.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail("the driver did not exit after Ctrl-C: it waits for the runs in flight")
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    assert driver.returncode == 130, stderr.decode()[-3000:]
    assert stderr.decode().splitlines() == ["interrupted"], stderr.decode()[-3000:]
    assert not [pid for pid in workers if _alive(pid)], "a local worker outlived its interrupted driver"
    if kind == "sweep":
        rows = {r["config"]["depth"]: r["status"] for r in load_results(tmp_path / "sweep")}
        assert rows == {1: "done", 2: "pending", 3: "pending", 4: "pending"}
    else:
        cache = tmp_path / "cache"
        assert not cache.exists() or not any(cache.iterdir()), "no value arrived, none is stored"


def test_status_lists_counts_slowest_and_failed_runs(tmp_path):
    grid = Grid({"depth": [1, 2]}, {"depth": 3, "mode": "raise"}, config_type=ToyConfig)
    run_sweep(grid, tmp_path, runner=toy_runner, execution=ONE_WORKER)
    status = sweep_status(tmp_path, slowest=1)
    assert status.counts == {"pending": 0, "running": 0, "done": 2, "failed": 1} and len(status.slowest) == 1
    (failed,) = status.failed
    assert failed.label.startswith("depth=3") and failed.error == "RuntimeError: toy failure at depth 3"
    assert "2 done, 1 failed" in status.format()


# ----------------------------------------------------------------------------- CLI


def _cli(argv, capsys):
    code = idepth_main(["sweep", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_runs_the_smoke_sweep_then_reports_status_and_exports_csv(tmp_path, capsys):
    out = tmp_path / "smoke"
    code, stdout, err = _cli(["run", REPO / "examples" / "smoke-sweep.toml", "--out", out, "--workers", "2"], capsys)
    assert code == 0, err
    total = len(load_grid(REPO / "examples" / "smoke-sweep.toml"))
    assert total >= 4 and f"{total} runs: {total} done" in stdout
    code, stdout, _ = _cli(["status", out], capsys)
    assert code == 0 and f"{total} done, 0 failed" in stdout and "slowest runs:" in stdout
    code, stdout, _ = _cli(["export", out, "--csv", tmp_path / "runs.csv"], capsys)
    assert code == 0 and len((tmp_path / "runs.csv").read_text().splitlines()) == total + 1


def test_cli_run_with_a_diverging_config_records_it_as_failed_and_exits_1(tmp_path, capsys):
    grid_file = tmp_path / "grid.toml"  # learning_rate = 1e10 constructs fine but diverges at step 1
    grid_file.write_text(TINY_TOML + "\n[[grid]]\ndepth = 2\n[[grid]]\ndepth = 2\nlearning_rate = 1e10\n")
    code, stdout, err = _cli(["run", grid_file, "--out", tmp_path / "out", "--workers", "1"], capsys)
    assert code == 1 and "2 runs: 1 done" in stdout and "1 failed" in stdout
    (failed,) = load_results(tmp_path / "out", status="failed")
    assert failed["config"]["learning_rate"] == 1e10
    assert failed["error"].startswith("TrainingDiverged: training diverged at step 1")
    code, stdout, _ = _cli(["status", tmp_path / "out"], capsys)
    assert code == 0 and "failed runs:" in stdout and "TrainingDiverged" in stdout


@pytest.mark.parametrize(
    ("toml", "named"),
    [
        (TINY_TOML + "\ndepht = [1, 2]\n", "unknown TrainConfig key 'depht'"),
        (TINY_TOML + '\ndepth = [1, "two"]\n', "depth"),
        (TINY_TOML + "\ndepth = []\n", "grid axis 'depth' has no values"),
        ("", "grid is empty"),
        (TINY_TOML + "\ndepth = [1\n", "invalid TOML"),
    ],
    ids=["unknown-key", "wrong-type", "empty-axis", "empty-file", "invalid-toml"],
)
def test_cli_bad_grid_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys, toml, named):
    grid_file = tmp_path / "grid.toml"
    grid_file.write_text(toml)
    code, stdout, err = _cli(["run", grid_file, "--out", tmp_path / "out"], capsys)
    assert code == 2 and named in err and err.count("\n") == 1 and stdout == ""
    assert not (tmp_path / "out").exists()


def test_cli_store_of_another_package_version_exits_2_and_is_left_untouched(tmp_path, capsys):
    out = tmp_path / "out"
    ResultsStore(out).close()
    conn = sqlite3.connect(out / STORE_FILENAME)
    with conn:
        conn.execute("UPDATE meta SET value = '0.0.1' WHERE key = 'package_version'")
    conn.close()
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    grid_file = tmp_path / "grid.toml"
    grid_file.write_text(TINY_TOML + "\ndepth = [1, 2]\n")
    code, _, err = _cli(["run", grid_file, "--out", out], capsys)
    assert code == 2 and "created by inverse-depth 0.0.1" in err and err.count("\n") == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_cli_unreachable_scheduler_exits_2_naming_the_timeout_and_writes_nothing(tmp_path, capsys, monkeypatch):
    import distributed

    with socket.socket() as probe:  # a free port on which nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    grid_file = tmp_path / "grid.toml"
    grid_file.write_text(TINY_TOML + "\ndepth = [1, 2]\n")
    timeouts = []  # the connection attempt is bounded by the option given (not by a wall clock here)
    real_client = distributed.Client

    def client(*args, **kwargs):
        timeouts.append(kwargs.get("timeout"))
        return real_client(*args, **kwargs)

    monkeypatch.setattr(distributed, "Client", client)
    code, _, err = _cli(["run", grid_file, "--out", tmp_path / "out", "--backend", "dask",
                         "--scheduler", f"tcp://127.0.0.1:{port}", "--connect-timeout", "2"], capsys)
    assert timeouts == ["2.0s"]
    assert code == 2 and f"tcp://127.0.0.1:{port}" in err and "did not answer within 2 s" in err
    assert err.count("\n") == 1 and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--scheduler", "tcp://127.0.0.1:1"], "scheduler is only used with backend='dask'"),
        (["--workers", "0"], "workers must be an integer >= 1"),
    ],
    ids=["scheduler-without-dask", "zero-workers"],
)
def test_cli_inconsistent_options_exit_2_and_write_nothing(tmp_path, capsys, options, named):
    grid_file = tmp_path / "grid.toml"
    grid_file.write_text(TINY_TOML + "\ndepth = [1]\n")
    code, _, err = _cli(["run", grid_file, "--out", tmp_path / "out", *options], capsys)
    assert code == 2 and named in err and not (tmp_path / "out").exists()


def test_cli_status_of_a_directory_without_store_exits_2(tmp_path, capsys):
    code, _, err = _cli(["status", tmp_path], capsys)
    assert code == 2 and "no sweep results store" in err


def test_a_runner_that_spawned_workers_cannot_import_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(TypeError, match="runner must be picklable"):
        run_sweep(_toy_grid(depth=[1]), tmp_path / "out", runner=lambda config: None, execution=ONE_WORKER)
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- a real dask cluster


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(condition, timeout: float, what: str, procs=()):
    """Poll ``condition()`` until true; fail naming ``what`` after ``timeout`` s or when a process died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            pytest.fail(f"{what}: process {dead[0].args[:4]} exited with {dead[0].returncode}")
        time.sleep(0.1)
    pytest.fail(f"{what}: not within {timeout} s")


def test_a_sweep_on_real_dask_processes_survives_a_sigkilled_worker_with_each_run_done_once_and_local_results(
        tmp_path):
    """A scheduler and two workers started here (``python -m dask scheduler|worker``, loopback, random ports),
    the sweep driven through ``idepth sweep run --backend dask --scheduler``; one worker is SIGKILLed while
    the driver holds right after its first commit (IDEPTH_TEST_HOLD_AFTER_COMMIT), with runs in flight."""
    import distributed

    grid_file = tmp_path / "grid.toml"
    grid_file.write_text(TINY_TOML.replace("max_steps = 30", "max_steps = 120") + "\ndepth = [1, 2, 3, 4, 5, 6]\n")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = checkout_env(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    quiet = dict(cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs: list[subprocess.Popen] = []
    try:
        procs.append(subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port",
                                       str(port), "--no-dashboard"], **quiet))
        workers = [subprocess.Popen([sys.executable, "-m", "dask", "worker", address, "--nthreads", "1",
                                     "--no-dashboard", "--no-nanny", "--host", "127.0.0.1", "--name", f"w{i}"],
                                    **quiet) for i in range(2)]
        procs += workers

        def connected() -> dict:
            try:
                with distributed.Client(address, timeout="2s", set_as_default=False) as client:
                    if len(client.scheduler_info()["workers"]) < 2:
                        return {}
                    return {pid: addr for addr, pid in client.run(os.getpid).items()}
            except (OSError, TimeoutError):
                return {}

        pids = _wait_for(connected, 120, "scheduler and two workers up", procs)
        assert set(pids) == {w.pid for w in workers}, "the cluster's workers are the processes started here"

        marker = tmp_path / "first-commit"
        driver = subprocess.Popen(
            idepth_command("sweep", "run", grid_file, "--out", tmp_path / "dask", "--backend", "dask", "--scheduler",
                           address, "--no-progress"),
            cwd=REPO, env={**env, sw.HOLD_AFTER_COMMIT_VARIABLE: str(marker)}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        procs.append(driver)
        _wait_for(marker.exists, 180, "the driver's first commit", [driver])
        in_store = load_results(tmp_path / "dask")
        assert sum(r["status"] == "done" for r in in_store) == 1 and any(r["status"] == "running" for r in in_store)
        workers[0].send_signal(signal.SIGKILL)  # mid-sweep: runs are in flight on the cluster
        workers[0].wait(timeout=30)
        marker.unlink()  # let the driver go on
        out, err = driver.communicate(timeout=300)
        assert driver.returncode == 0, err.decode()[-3000:]
        assert "6 done" in out.decode()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        for proc in procs:
            proc.wait(timeout=30)

    rows = load_results(tmp_path / "dask")
    assert len(rows) == 6 and len({r["hash"] for r in rows}) == 6 and {r["status"] for r in rows} == {"done"}
    assert [r["attempts"] for r in rows] == [1] * 6, "each run handed out once; dask re-ran the lost ones itself"
    first = next(r for r in in_store if r["status"] == "done")
    assert first["pid"] in {w.pid for w in workers}
    later = {r["pid"] for r in rows if r["hash"] != first["hash"]}
    assert later == {workers[1].pid}, "every run not committed before the kill was finished by the surviving worker"
    with sqlite3.connect(tmp_path / "dask" / STORE_FILENAME) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT COUNT(DISTINCT run_hash) FROM arrays").fetchone() == (6,)
    run_sweep(grid_file, tmp_path / "local", execution=ONE_WORKER)
    assert _stored(tmp_path / "dask") == _stored(tmp_path / "local")  # bitwise: metrics and every array
