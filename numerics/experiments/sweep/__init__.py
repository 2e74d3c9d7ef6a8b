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
and commits each finished run in its own transaction as soon as it arrives, executed
where its :class:`~numerics.experiments.execution.Execution` says:

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
  without a scheduler, a ``LocalCluster`` of ``workers`` single-threaded worker
  processes is started (Dask sets the same BLAS variables to 1 in its workers). Dask
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
and the Dask scheduler is connected to (within the execution's ``connect_timeout``
seconds), all before ``DIR/results.sqlite`` is created.

Modules: :mod:`~numerics.experiments.sweep._backends` (worker processes and the two
backends), :mod:`~numerics.experiments.sweep._run` (the driver, :func:`run_sweep`),
:mod:`~numerics.experiments.sweep._status` (:func:`sweep_status`); the grid is
:mod:`numerics.experiments.grid`. None of them imports numpy at import time, so that
worker processes (which import them to run a config) can pin BLAS threads first.
"""

from __future__ import annotations

from ..execution import BACKENDS, Execution
from ..grid import Grid, grid_from_dict, load_grid
# _WORKER_STATE and HOLD_AFTER_COMMIT_VARIABLE: test hooks, read by tests through this module
from ._backends import _WORKER_STATE, BLAS_THREAD_VARIABLES, local_pool  # noqa: F401
from ._run import HOLD_AFTER_COMMIT_VARIABLE, SweepSummary, run_sweep, runner_name  # noqa: F401
from ._status import RunSummary, SweepStatus, sweep_status

__all__ = [
    "BACKENDS",
    "BLAS_THREAD_VARIABLES",
    "Execution",
    "Grid",
    "RunSummary",
    "SweepStatus",
    "SweepSummary",
    "grid_from_dict",
    "load_grid",
    "local_pool",
    "run_sweep",
    "runner_name",
    "sweep_status",
]
