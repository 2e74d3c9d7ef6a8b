"""Depth sweeps: a grid of training runs, executed locally or on Dask, stored in SQLite.

A sweep is a :class:`Grid` of run configs (:mod:`numerics.experiments.grid`; by default
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

(a field whose value is a list is fixed by a one-element list of lists, ``field = [[1, 2]]``).

:func:`run_sweep` validates everything first (the grid, an existing store's version, the Dask
scheduler), then runs every config not ``done`` in ``DIR/results.sqlite``
(:mod:`numerics.experiments.store`), at most ``max_in_flight`` at a time, committing each as it
arrives, where its :class:`~numerics.experiments.execution.Execution` says: ``local``, spawned
processes pinned to one BLAS thread that end with the driver (a run whose worker dies is re-run
alone, and recorded ``failed`` after ``max_worker_deaths`` deaths), or ``dask``, a scheduler's
cluster or a ``LocalCluster`` of single-threaded workers. A run's randomness comes from its
config, so results are bitwise the same for any workers and backend. Running a sweep again
resumes it: ``done`` runs are skipped, ``failed`` ones retried with ``retry_failed=True``, and
``running`` rows of a dead driver queued again (a driver holds a lock on ``DIR``).

Modules: ``_backends`` (workers and the two backends), ``_run`` (the driver) and ``_status``
(:func:`sweep_status`); none imports numpy at import time, so workers pin BLAS threads first.
"""

from __future__ import annotations

from ..execution import BACKENDS, Execution
from ..grid import Grid, grid_from_dict, load_grid
# WORKER_STATE and HOLD_AFTER_COMMIT_VARIABLE: test hooks, read by tests through this module
from ._backends import BLAS_THREAD_VARIABLES, WORKER_STATE, local_pool  # noqa: F401
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
