"""Depth sweeps: a grid of training runs, executed locally or on Dask, stored in SQLite.

A sweep is a :class:`Grid` of run configs (by default
:class:`numerics.train.TrainConfig`), declared in Python or in a TOML file::

    # every top-level key is shared by all runs
    model = "nonlinear"
    task = "difficult"
    d = 4
    N = 4
    P = 8
    seed = [0, 1]              # a list is an axis: the runs are the product of all axes,
    init = {w_x = "gaussian"}  # the last axis varying fastest; a table is one fixed value

    [[grid]]                   # sub-grids: their products are concatenated, and
    depth = [1, 2, 4]          # a sub-grid's keys override the top-level ones
    [[grid]]                   # -> 3 x 2 + 1 = 7 runs
    depth = 16
    seed = 0

A field whose value is itself a list would be fixed by a one-element list of
lists (``field = [[1, 2]]``).

:func:`run_sweep` runs every config of the grid that is not already ``done``
in ``DIR/results.sqlite`` (:mod:`numerics.experiments.store`), each in a worker process,
and commits each finished run in its own transaction as soon as it arrives:

* ``backend="local"``: a :class:`concurrent.futures.ProcessPoolExecutor`
  (``spawn`` context, ``workers`` processes, default: the usable cores). Each
  worker pins BLAS to one thread (``OMP_NUM_THREADS`` = ``OPENBLAS_NUM_THREADS``
  = ``MKL_NUM_THREADS`` = 1, set before numpy is imported; also threadpoolctl
  if installed) and exits when the driver dies. A worker that dies
  (``BrokenProcessPool``) gets the pool restarted; the runs that were in
  flight are re-run one at a time so the culprit is identified, and a run that
  kills its worker ``max_worker_deaths`` times is recorded as ``failed``.
* ``backend="dask"``: ``scheduler="tcp://host:port"`` uses an existing
  ``dask.distributed`` cluster (its workers need this package installed);
  ``dask_local=N`` starts a ``LocalCluster`` of N single-threaded worker
  processes (Dask sets the same BLAS variables to 1 in its workers). Dask
  itself re-runs the task of a worker that dies (``allowed-failures``).

Tasks are submitted lazily (at most ``max_in_flight``, default 2 x workers,
at a time) and results are streamed back with first-completed waits. Each
run's randomness comes from its config (``numpy.random.SeedSequence`` inside
the runner), so results are bitwise identical for any number of workers and
either backend.

Resuming: run the same sweep again. Runs already ``done`` are skipped,
``failed`` runs are retried only with ``retry_failed=True``, and runs left
``running`` by a driver that died are queued again (the driver holds a lock on
``DIR``, so a ``running`` row seen by a new driver is always stale).

Input is validated before anything is written: the whole grid is expanded
and every config built, an existing store's version is checked (read-only),
and the Dask scheduler is connected to (within ``connect_timeout`` seconds),
all before ``DIR/results.sqlite`` is created.

This module does not import numpy at import time, so that worker processes
(which import it to run :func:`_execute`) can pin BLAS threads first.
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import contextlib
import itertools
import json
import logging
import multiprocessing
import os
import pickle
import socket
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from . import store as _store
from .grid import Grid, grid_from_dict, load_grid
from .store import ResultsStore, RunOutcome

__all__ = [
    "BACKENDS",
    "BLAS_THREAD_VARIABLES",
    "Grid",
    "RunSummary",
    "SweepStatus",
    "SweepSummary",
    "execution_options",
    "grid_from_dict",
    "load_grid",
    "run_sweep",
    "runner_name",
    "sweep_status",
]

#: execution backends of :func:`run_sweep`
BACKENDS = ("local", "dask")
#: environment variables set to 1 in every local worker before numpy is imported
BLAS_THREAD_VARIABLES = (
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
)

Runner = Callable[[Any], Any]


def _default_runner() -> Runner:
    from .runner import run

    return run


def runner_name(runner: Runner) -> str:
    """``module.qualname`` of a runner: what a store records so that one store holds one runner's results.

    Examples
    --------
    >>> from numerics.experiments.runner import run
    >>> runner_name(run)
    'numerics.experiments.runner.run'
    """
    return f"{getattr(runner, '__module__', '?')}.{getattr(runner, '__qualname__', type(runner).__name__)}"


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


# ----------------------------------------------------------------------------- workers

#: set in each local worker by :func:`_init_worker` (read by tests)
_WORKER_STATE: dict[str, Any] = {}


def _init_worker(parent_pid: int) -> None:
    """Local worker initializer: one BLAS thread, and exit when the driver dies."""
    _WORKER_STATE["numpy_imported_before_pinning"] = "numpy" in sys.modules
    for name in BLAS_THREAD_VARIABLES:
        os.environ[name] = "1"
    try:  # effective even if numpy was imported before (e.g. by a driver script spawn re-imports)
        from threadpoolctl import threadpool_limits
    except ImportError:
        pass
    else:
        _WORKER_STATE["threadpool_limits"] = threadpool_limits(limits=1)

    def watch_parent() -> None:
        # a driver killed with SIGKILL cannot shut its pool down: do not outlive it
        while True:
            time.sleep(0.5)
            if os.getppid() != parent_pid:
                os._exit(0)

    threading.Thread(target=watch_parent, name="idepth-parent-watch", daemon=True).start()


def _json_scalar(value: Any) -> Any:
    item = getattr(value, "item", None)  # numpy scalars -> Python scalars
    if item is not None and getattr(value, "ndim", None) == 0:
        value = item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"metric values must be JSON scalars; got {value!r} ({type(value).__name__})")


def _execute(runner: Runner, run_hash: str, config: Any) -> RunOutcome:
    """Run one config in a worker; exceptions are caught and returned as a failed outcome."""
    started, clock = time.time(), time.perf_counter()
    metrics: dict[str, Any] = {}
    arrays: dict[str, bytes] = {}
    error = tb = None
    try:
        worker_hash = config.content_hash()
        if worker_hash != run_hash:
            raise RuntimeError(f"content hash differs between driver ({run_hash}) and worker ({worker_hash}): "
                               "the config's hash is not stable across processes")
        result = runner(config)
        metrics = {str(name): _json_scalar(value) for name, value in dict(result.metrics).items()}
        arrays = {str(name): _store.encode_array(value) for name, value in dict(result.arrays).items()}
    except Exception as exc:  # a failing run is recorded, never stops the sweep
        metrics, arrays = {}, {}
        error, tb = f"{type(exc).__name__}: {_one_line(exc)}", traceback.format_exc()
    return RunOutcome(
        run_hash=run_hash, ok=error is None, metrics=metrics, arrays=arrays, error=error, traceback=tb,
        started_at=started, finished_at=time.time(), wall_time=time.perf_counter() - clock,
        host=socket.gethostname(), pid=os.getpid(),
    )


def _failed(run_hash: str, exc: BaseException | None, message: str | None = None) -> RunOutcome:
    """A failed outcome created by the driver (the run produced no outcome of its own)."""
    now = time.time()
    error = message or f"{type(exc).__name__}: {_one_line(exc)}"
    tb = "".join(traceback.format_exception(exc)) if exc is not None else None
    return RunOutcome(run_hash, False, {}, {}, error, tb, now, now, 0.0, socket.gethostname(), 0)


class _WorkerLost(Exception):
    """The local pool broke while a run was in flight."""


@contextlib.contextmanager
def _preserved_environment(names: Sequence[str]) -> Iterator[None]:
    """Restore the driver's values of the environment variables ``names`` on exit."""
    saved = {name: os.environ.get(name) for name in names}
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class _LocalBackend:
    name = "local"

    def __init__(self, workers: int, runner: Runner):
        self.workers, self._runner = workers, runner
        # spawned workers inherit the driver's environment: this pins BLAS even when spawn
        # re-imports a driver script that imports numpy before _init_worker runs (restored
        # by run_sweep; the driver's own, already loaded BLAS is unaffected)
        os.environ.update(dict.fromkeys(BLAS_THREAD_VARIABLES, "1"))
        self._executor = self._new_executor()

    def _new_executor(self) -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(os.getpid(),),
        )

    def submit(self, run_hash: str, config: Any):
        try:
            return self._executor.submit(_execute, self._runner, run_hash, config)
        except cf.process.BrokenProcessPool as exc:
            raise _WorkerLost(_one_line(exc)) from exc

    @staticmethod
    def wait_any(futures):
        return cf.wait(futures, return_when=cf.FIRST_COMPLETED).done

    @staticmethod
    def wait_all(futures) -> None:
        cf.wait(futures)

    @staticmethod
    def outcome(future, run_hash: str) -> RunOutcome:
        try:
            return future.result()
        except cf.process.BrokenProcessPool as exc:
            raise _WorkerLost(_one_line(exc)) from exc
        except Exception as exc:  # e.g. the config could not be pickled to the worker
            return _failed(run_hash, exc)

    def restart(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._executor = self._new_executor()

    def close(self, wait: bool = True) -> None:
        self._executor.shutdown(wait=wait, cancel_futures=True)


class _DaskBackend:
    name = "dask"

    def __init__(self, runner: Runner, *, scheduler: str | None, local_workers: int | None, timeout: float):
        try:
            import distributed
        except ImportError:
            raise ValueError("backend 'dask' needs dask.distributed (pip install 'inverse-depth[sweep]')") from None
        self._distributed, self._runner, self._cluster = distributed, runner, None
        if scheduler is not None:
            try:
                self._client = distributed.Client(scheduler, timeout=f"{timeout}s", set_as_default=False)
            except (OSError, TimeoutError) as exc:
                raise ValueError(f"dask scheduler {scheduler!r} did not answer within {timeout:g} s "
                                 f"({_one_line(exc) or type(exc).__name__})") from None
        else:
            self._cluster = distributed.LocalCluster(
                n_workers=local_workers, threads_per_worker=1, processes=True,
                dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR, host="127.0.0.1",
            )
            self._client = distributed.Client(self._cluster, timeout=f"{timeout}s", set_as_default=False)
        threads = sum(self._client.nthreads().values())
        self.workers = max(1, threads)

    def submit(self, run_hash: str, config: Any):
        return self._client.submit(_execute, self._runner, run_hash, config, pure=False,
                                   key=f"idepth-run-{run_hash[:16]}-{uuid.uuid4().hex[:8]}")

    def wait_any(self, futures):
        with self._client.as_current():
            return self._distributed.wait(list(futures), return_when="FIRST_COMPLETED").done

    def wait_all(self, futures) -> None:
        with self._client.as_current():
            self._distributed.wait(list(futures))

    def outcome(self, future, run_hash: str) -> RunOutcome:
        try:
            return future.result()
        except cf.CancelledError:  # the cluster went away: a sweep-level failure
            raise
        except Exception as exc:  # KilledWorker (dask re-ran it allowed-failures times), or the
            # task could not even start on the worker (e.g. the package is not installed there)
            return _failed(run_hash, exc)

    def restart(self) -> None:  # pragma: no cover - dask recovers lost workers itself
        raise RuntimeError("dask backend does not restart")

    def close(self, wait: bool = True) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()


# ----------------------------------------------------------------------------- driver


@dataclass(frozen=True)
class SweepSummary:
    """What :func:`run_sweep` did, for the runs of its grid.

    Attributes
    ----------
    out_dir, store : pathlib.Path
        Sweep directory and its ``results.sqlite``.
    backend : str
        ``'local'`` or ``'dask'``.
    workers : int
        Worker processes (local) or worker threads (dask).
    total : int
        Distinct runs in the grid.
    skipped : int
        Runs already ``done`` in the store before this call.
    executed : int
        Runs executed by this call (each counted once).
    done, failed, pending : int
        Runs of the grid in each state when the call returned.
    requeued : int
        Runs left ``running`` by a dead driver that were queued again.
    wall_time : float
        Seconds spent in :func:`run_sweep`.

    References
    ----------
    Bookkeeping only; no paper equation.

    Examples
    --------
    >>> s = SweepSummary(Path("d"), Path("d/results.sqlite"), "local", 2, 6, 0, 6, 6, 0, 0, 0, 1.5)
    >>> s.ok
    True
    """

    out_dir: Path
    store: Path
    backend: str
    workers: int
    total: int
    skipped: int
    executed: int
    done: int
    failed: int
    pending: int
    requeued: int
    wall_time: float

    @property
    def ok(self) -> bool:
        """True when every run of the grid is ``done``."""
        return self.done == self.total


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _as_grid(grid: Any, config_type: Any) -> Grid:
    if isinstance(grid, Grid):
        return grid
    if isinstance(grid, (str, os.PathLike)):
        return load_grid(grid, config_type=config_type)
    if isinstance(grid, Mapping):
        return grid_from_dict(grid, config_type=config_type)
    raise TypeError(f"grid must be a Grid, a TOML file path or a mapping; got {type(grid).__name__}")


def _check_int(name: str, value: Any, minimum: int = 1) -> int:
    from theory.validation import check_positive_int

    return check_positive_int(name, value, minimum)


def _progress_bar(total: int, initial: int, enabled: bool | None, total_cost=None, initial_cost=0.0):
    """A tqdm bar on a terminal, a one-line record every 30 s otherwise (:mod:`numerics.progress`), or nothing;
    weighted by the runs' estimated costs when ``total_cost`` is given."""
    from numerics.progress import progress_bar

    return progress_bar(total, initial, enabled=enabled, desc="sweep", unit="run", total_cost=total_cost,
                        initial_cost=initial_cost)


def _run_costs(costs: Mapping[str, float] | None, hashes: Sequence[str]) -> dict | None:
    """Each run's estimated cost (a run missing from ``costs`` costs their mean), or None (count runs)."""
    if costs is None:
        return None
    if not isinstance(costs, Mapping):
        raise TypeError(f"costs must be a mapping of run hash to estimated seconds; got {type(costs).__name__}")
    known = {h: float(costs[h]) for h in hashes if h in costs}
    if any(not (value >= 0 and value < float("inf")) for value in known.values()):
        raise ValueError(f"costs must be finite and >= 0; got {sorted(set(known.values()))[:3]} ...")
    mean = sum(known.values()) / len(known) if known else 1.0
    return {h: known.get(h, mean) for h in hashes}


def execution_options(backend: str = "local", workers: int | None = None, scheduler: str | None = None) -> dict:
    """The :func:`run_sweep` keywords of a command's execution options (``--backend``, ``--workers``, ``--scheduler``).

    With a scheduler the cluster decides the workers, so ``workers`` (a default every command
    has) is left out; otherwise it is the local pool, or the local Dask cluster's size. A
    scheduler with ``backend='local'`` is passed on, so :func:`run_sweep` refuses it by name.

    Examples
    --------
    >>> execution_options("dask", 4, "tcp://127.0.0.1:8786")
    {'backend': 'dask', 'scheduler': 'tcp://127.0.0.1:8786'}
    >>> execution_options("local", 2)
    {'backend': 'local', 'workers': 2}
    """
    if backend == "dask" and scheduler is not None:
        return {"backend": backend, "scheduler": scheduler}
    options = {"backend": backend, "workers": workers}
    if scheduler is not None:
        options["scheduler"] = scheduler
    return options


def run_sweep(
    grid: Grid | str | os.PathLike | Mapping[str, Any],
    out_dir: str | os.PathLike,
    *,
    backend: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
    retry_failed: bool = False,
    progress: bool | None = None,
    runner: Runner | None = None,
    config_type: Any = None,
    connect_timeout: float = 10.0,
    max_in_flight: int | None = None,
    max_worker_deaths: int = 2,
    costs: Mapping[str, float] | None = None,
) -> SweepSummary:
    """Run every not-yet-done config of ``grid``, storing results in ``out_dir/results.sqlite``.

    Parameters
    ----------
    grid : Grid, path or mapping
        The runs (a TOML path is read with :func:`load_grid`, a mapping with
        :func:`grid_from_dict`).
    out_dir : str or path-like
        Sweep directory; created after all input has been validated.
    backend : {'local', 'dask'}, default 'local'
        See the module docstring.
    workers : int, optional
        Local worker processes (default: the usable cores). With
        ``backend='dask'`` and no ``scheduler``, the default for ``dask_local``.
    scheduler : str, optional
        Address of a running dask scheduler (``tcp://host:port``; dask only).
    dask_local : int, optional
        Start a local dask cluster with this many single-threaded workers (dask only).
    retry_failed : bool, default False
        Run again the grid's runs recorded as ``failed``.
    progress : bool, optional
        Show a tqdm bar (default: when stderr is a terminal).
    runner : callable, optional
        ``runner(config) -> result`` with ``result.metrics`` (JSON scalars) and
        ``result.arrays`` (arrays); default :func:`numerics.train.run_config`.
        Must be picklable (a module-level function).
    config_type : type, optional
        Config class used to read a grid given as a path or mapping.
    connect_timeout : float, default 10
        Seconds to wait for the dask scheduler (or local cluster) to answer.
    max_in_flight : int, optional
        Runs submitted but not finished at any time (default 2 x workers).
    max_worker_deaths : int, default 2
        Local backend: a run whose worker process dies this many times while
        it runs alone is recorded as ``failed``.
    costs : mapping of str to float, optional
        Estimated cost (seconds) of each run by content hash, e.g. from the reproduction plan's cost
        model (:func:`numerics.experiments.reproduce.plan.estimate_run_seconds`): the progress ETA
        then weighs runs by cost instead of counting them (a run not in it costs their mean).

    Returns
    -------
    SweepSummary

    Raises
    ------
    ValueError, TypeError
        Invalid grid or options, unreachable scheduler, incompatible or locked
        store -- raised before the store is created or modified.

    References
    ----------
    Each run measures R_L (paper eq. (12)) and its decomposition (eqs. (61)-(63));
    a sweep over L gives the data of the depth-law fit, eq. (16).

    Examples
    --------
    >>> import tempfile
    >>> grid = Grid(model="linear", task="easy", d=2, N=2, P=8, batch_size=8, max_steps=5,
    ...             eval_every=5, eval_size=8, warmup_steps=0, depth=[1, 2])
    >>> with tempfile.TemporaryDirectory() as tmp:  # a few seconds: the worker imports the package
    ...     run_sweep(grid, tmp, workers=1, progress=False).done
    2
    """
    started = time.perf_counter()
    backend = _validation_choice("backend", backend, BACKENDS)
    grid = _as_grid(grid, config_type)
    configs = grid.configs
    if not configs:  # pragma: no cover - Grid refuses empty grids
        raise ValueError("grid is empty")
    runner = _default_runner() if runner is None else runner
    if not callable(runner):
        raise TypeError(f"runner must be callable (config -> result); got {runner!r}")
    if backend == "local":
        try:  # spawned workers receive the runner by reference (module and name)
            pickle.dumps(runner)
        except Exception as exc:
            raise TypeError(f"runner must be picklable (a module-level function) for backend='local'; "
                            f"got {runner!r} ({_one_line(exc)})") from None
    if backend == "local":
        for name, value in (("scheduler", scheduler), ("dask_local", dask_local)):
            if value is not None:
                raise ValueError(f"{name} is only used with backend='dask'; got {name}={value!r} with backend='local'")
        workers = _cpu_count() if workers is None else _check_int("workers", workers)
    else:
        if scheduler is not None and (dask_local is not None or workers is not None):
            raise ValueError("with scheduler=... the cluster decides the workers: do not also give "
                             f"workers ({workers!r}) or dask_local ({dask_local!r})")
        if scheduler is not None and not isinstance(scheduler, str):
            raise TypeError(f"scheduler must be an address string like 'tcp://host:8786'; got {scheduler!r}")
        if scheduler is None:
            dask_local = workers if dask_local is None else dask_local
            dask_local = _cpu_count() if dask_local is None else _check_int("dask_local", dask_local)
    if max_in_flight is not None:
        max_in_flight = _check_int("max_in_flight", max_in_flight)
    max_worker_deaths = _check_int("max_worker_deaths", max_worker_deaths)
    if isinstance(connect_timeout, bool) or not isinstance(connect_timeout, (int, float)) or not connect_timeout > 0:
        raise ValueError(f"connect_timeout must be a number of seconds > 0; got {connect_timeout!r}")
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise NotADirectoryError(f"sweep directory {out_dir} is an existing file, not a directory")
    store_file = out_dir / _store.STORE_FILENAME
    if store_file.exists():
        _store.check_store(store_file, for_writing=True)
    hashes = [config.content_hash() for config in configs]
    run_costs = _run_costs(costs, hashes)

    with _preserved_environment(BLAS_THREAD_VARIABLES):  # dask's nannies export them in the driver
        return _run(configs, hashes, out_dir, backend, workers, scheduler, dask_local, retry_failed, progress,
                    runner, float(connect_timeout), max_in_flight, max_worker_deaths, started, run_costs)


def _run(configs, hashes, out_dir, backend, workers, scheduler, dask_local, retry_failed, progress, runner,
         connect_timeout, max_in_flight, max_worker_deaths, started, run_costs=None) -> SweepSummary:
    store_file = out_dir / _store.STORE_FILENAME
    if backend == "local":
        executor = _LocalBackend(workers, runner)
    else:
        executor = _DaskBackend(runner, scheduler=scheduler, local_workers=dask_local, timeout=connect_timeout)
    clean_exit = False
    try:
        with ResultsStore(out_dir) as results:
            results.claim_runner(runner_name(runner))
            requeued = results.requeue_running()
            results.register(
                (run_hash, json.dumps(config.to_dict(), sort_keys=True)) for run_hash, config in zip(hashes, configs)
            )
            if retry_failed:
                results.reset(hashes, from_status="failed")
            status = results.statuses(hashes)
            todo = [(h, c) for h, c in zip(hashes, configs) if status[h] == "pending"]
            skipped = sum(status[h] == "done" for h in hashes)
            failed_before = sum(status[h] == "failed" for h in hashes)
            if run_costs is None:
                bar = _progress_bar(len(hashes), skipped, progress)
            else:  # the runs not to do (done, failed) count as done work
                bar = _progress_bar(len(hashes), skipped, progress, total_cost=sum(run_costs.values()),
                                    initial_cost=sum(run_costs[h] for h in hashes if status[h] != "pending"))
            try:
                bar.set_postfix(failed=failed_before)
                executed = _drive(executor, results, todo, bar, failed_before,
                                  max_in_flight or 2 * executor.workers, max_worker_deaths, run_costs)
            finally:
                bar.close()
            final = results.statuses(hashes)
        clean_exit = True
    finally:
        # after an error or Ctrl-C, do not wait for the runs in flight (their rows are back to
        # 'pending'); local workers exit on their own once the driver has gone
        executor.close(wait=clean_exit)
    count = collections.Counter(final.values())
    return SweepSummary(
        out_dir=out_dir, store=store_file, backend=backend, workers=executor.workers, total=len(hashes),
        skipped=skipped, executed=executed, done=count["done"], failed=count["failed"],
        pending=count["pending"] + count["running"], requeued=requeued, wall_time=time.perf_counter() - started,
    )


def _validation_choice(name: str, value: Any, allowed: Sequence[str]) -> str:
    from theory.validation import check_choice

    return check_choice(name, value, allowed)


#: test hook: when set to a file path, the driver creates that file after its first commit and then waits
#: (interruptible) until the file is removed -- so tests interrupt or kill a sweep at a known point
#: instead of racing it. Inert unless set.
HOLD_AFTER_COMMIT_VARIABLE = "IDEPTH_TEST_HOLD_AFTER_COMMIT"


def _hold_after_first_commit() -> None:
    marker = os.environ.get(HOLD_AFTER_COMMIT_VARIABLE)
    if not marker:
        return
    Path(marker).write_text(str(os.getpid()))
    while os.path.exists(marker):  # Ctrl-C / SIGKILL end the wait; so does removing the file
        time.sleep(0.02)


def _drive(executor, results: ResultsStore, todo, bar, failed: int, max_in_flight: int, max_deaths: int,
           run_costs: Mapping[str, float] | None = None) -> int:
    """Submit lazily, commit each outcome as it completes; return the number of runs finished."""
    queue = collections.deque(todo)
    suspects: collections.deque = collections.deque()  # in flight when the local pool broke
    deaths: collections.Counter = collections.Counter()
    in_flight: dict[Any, tuple[str, Any]] = {}
    finished = 0

    def submit(source: collections.deque, room: int) -> bool:
        """Hand up to ``room`` runs of ``source`` to workers; False if the pool is broken."""
        submitted, healthy = [], True
        while source and room > 0:
            try:
                future = executor.submit(*source[0])
            except _WorkerLost:  # a worker died before this submission
                healthy = False
                break
            item = source.popleft()
            in_flight[future] = item
            submitted.append(item[0])
            room -= 1
        if submitted:
            results.mark_running(submitted)
        return healthy

    def commit(outcome: RunOutcome) -> None:
        nonlocal finished, failed
        results.record(outcome)
        finished += 1
        failed += not outcome.ok
        bar.set_postfix(failed=failed, refresh=False)
        if run_costs is None:
            bar.update(1)
        else:
            bar.update(1, cost=run_costs.get(outcome.run_hash, 0.0))
        if finished == 1:
            _hold_after_first_commit()

    try:
        while queue or suspects or in_flight:
            if suspects:  # isolate: one run at a time until every suspect has finished
                healthy = submit(suspects, 1 - len(in_flight))
            else:
                healthy = submit(queue, max_in_flight - len(in_flight))
            if not in_flight:
                if not healthy:  # a worker died while idle
                    executor.restart()
                continue
            lost = []
            for future in executor.wait_any(in_flight):
                item = in_flight.pop(future)
                try:
                    commit(executor.outcome(future, item[0]))
                except _WorkerLost:
                    lost.append(item)
            if not lost:
                continue
            # the pool is broken: every other run in flight finishes or is lost with it
            executor.wait_all(list(in_flight))
            for future, item in list(in_flight.items()):
                try:
                    commit(executor.outcome(future, item[0]))
                except _WorkerLost:
                    lost.append(item)
            in_flight.clear()
            if len(lost) == 1:  # all other runs returned: this run's worker died
                run_hash, _ = lost[0]
                deaths[run_hash] += 1
                if deaths[run_hash] >= max_deaths:
                    commit(_failed(run_hash, None, f"WorkerDied: the worker process died {deaths[run_hash]} "
                                                   "times while running this config alone"))
                else:
                    suspects.appendleft(lost[0])
            else:  # culprit unknown: re-run each of them alone
                suspects.extend(lost)
            executor.restart()
    finally:
        # runs handed out but not committed go back to 'pending' (a SIGKILL skips this;
        # the next driver re-queues such 'running' rows instead)
        leftover = [h for h, _ in itertools.chain(in_flight.values(), suspects)]
        if leftover:
            with contextlib.suppress(Exception):
                results.reset(leftover, from_status="running")
    return finished


# ----------------------------------------------------------------------------- status


@dataclass(frozen=True)
class RunSummary:
    """One run as listed by :func:`sweep_status`.

    Attributes
    ----------
    hash : str
        Content hash of the run's config.
    status : str
        ``pending``, ``running``, ``done`` or ``failed``.
    wall_time : float or None
        Seconds in the worker.
    label : str
        The config entries that vary across the store's runs (``depth=4 seed=1``).
    error : str or None
        The error of a failed run.

    References
    ----------
    Bookkeeping only; no paper equation.

    Examples
    --------
    >>> RunSummary("ab12", "done", 1.5, "depth=4", None).label
    'depth=4'
    """

    hash: str
    status: str
    wall_time: float | None
    label: str
    error: str | None


@dataclass(frozen=True)
class SweepStatus:
    """Counts by status and the slowest / failed runs of a sweep directory.

    Attributes
    ----------
    store : pathlib.Path
        The ``results.sqlite`` read.
    counts : dict of str to int
        Runs per status (every status of :data:`numerics.experiments.store.STATUSES`).
    total : int
        All runs.
    slowest : tuple of RunSummary
        The ``done`` runs with the longest wall time, slowest first.
    failed : tuple of RunSummary
        The ``failed`` runs with their errors.

    References
    ----------
    Bookkeeping only; no paper equation.

    Examples
    --------
    >>> SweepStatus(Path("r.sqlite"), {"done": 2}, 2, (), ()).total
    2
    """

    store: Path
    counts: Mapping[str, int]
    total: int
    slowest: tuple[RunSummary, ...]
    failed: tuple[RunSummary, ...]

    def format(self) -> str:
        """Human-readable report (what ``idepth sweep status`` prints)."""
        lines = [f"{self.store}: {self.total} runs: "
                 + ", ".join(f"{self.counts.get(name, 0)} {name}" for name in _store.STATUSES)]
        if self.slowest:
            lines.append("slowest runs:")
            lines += [f"  {run.wall_time:9.2f} s  {run.hash[:12]}  {run.label}" for run in self.slowest]
        if self.failed:
            lines.append("failed runs:")
            lines += [f"  {run.hash[:12]}  {run.label}: {run.error}" for run in self.failed]
        return "\n".join(lines)


def _labels(records: Sequence[Mapping[str, Any]]) -> list[str]:
    keys = sorted({key for record in records for key in record["config"]})
    varying = [key for key in keys
               if len({json.dumps(record["config"].get(key), sort_keys=True) for record in records}) > 1]
    return [" ".join(f"{key}={record['config'].get(key)!r}".replace("'", "") for key in varying)
            for record in records]


def sweep_status(out_dir: str | os.PathLike, *, slowest: int = 5) -> SweepStatus:
    """Counts by status, the slowest runs and the failures of a sweep (read-only).

    Parameters
    ----------
    out_dir : str or path-like
        Sweep directory (or its ``results.sqlite``).
    slowest : int, default 5
        How many of the slowest ``done`` runs to list.

    Returns
    -------
    SweepStatus

    References
    ----------
    Bookkeeping only; no paper equation.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     with ResultsStore(tmp) as store:
    ...         _ = store.register([("h1", '{"depth": 1}'), ("h2", '{"depth": 2}')])
    ...     sweep_status(tmp).counts
    {'pending': 2, 'running': 0, 'done': 0, 'failed': 0}
    """
    slowest = _check_int("slowest", slowest, minimum=0)
    records = _store.load_results(out_dir)
    labels = _labels(records)
    summaries = [RunSummary(r["hash"], r["status"], r["wall_time"], label, r["error"])
                 for r, label in zip(records, labels)]
    counts = dict(collections.Counter(r["status"] for r in records))
    done = sorted((s for s in summaries if s.status == "done" and s.wall_time is not None),
                  key=lambda s: -s.wall_time)
    return SweepStatus(
        store=_store.store_path(out_dir),
        counts={name: counts.get(name, 0) for name in _store.STATUSES},
        total=len(records),
        slowest=tuple(done[:slowest]),
        failed=tuple(s for s in summaries if s.status == "failed"),
    )
