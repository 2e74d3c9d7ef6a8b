"""The sweep driver (see :mod:`numerics.experiments.sweep`): validate, submit lazily, commit each outcome."""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import os
import pickle
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import store as _store
from ..execution import Execution, as_execution
from ..grid import Grid, grid_from_dict, load_grid, one_line
from ..store import ResultsStore, RunOutcome, runner_name, writable_store
from ._backends import BLAS_THREAD_VARIABLES, Runner, WorkerLost, failed_outcome, open_backend, preserved_environment


@dataclass(frozen=True)
class SweepSummary:
    """What :func:`run_sweep` did for the runs of its grid.

    ``total`` distinct runs: ``skipped`` (``done`` before the call), ``executed`` (by this call),
    ``done``, ``failed`` and ``pending`` when it returned, ``requeued`` (left ``running`` by a dead
    driver); ``workers`` are processes (local) or threads (dask); ``wall_time`` in seconds.

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


def _as_grid(grid: Any, config_type: Any) -> Grid:
    if isinstance(grid, Grid):
        return grid
    if isinstance(grid, (str, os.PathLike)):
        return load_grid(grid, config_type=config_type)
    if isinstance(grid, Mapping):
        return grid_from_dict(grid, config_type=config_type)
    raise TypeError(f"grid must be a Grid, a TOML file path or a mapping; got {type(grid).__name__}")


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


def run_sweep(
    grid: Grid | str | os.PathLike | Mapping[str, Any],
    out_dir: str | os.PathLike,
    *,
    execution: Execution | None = None,
    retry_failed: bool = False,
    runner: Runner | None = None,
    config_type: Any = None,
    max_in_flight: int | None = None,
    max_worker_deaths: int = 2,
    costs: Mapping[str, float] | None = None,
) -> SweepSummary:
    """Run every not-yet-done config of ``grid``, storing results in ``out_dir/results.sqlite``.

    Invalid input (grid, options, scheduler, an incompatible or locked store) raises
    ``ValueError``/``TypeError`` before ``out_dir`` is created or modified.

    Parameters
    ----------
    grid : Grid, path or mapping
        The runs (a TOML file read by :func:`load_grid`, a mapping by :func:`grid_from_dict`,
        both with ``config_type``).
    out_dir : str or path-like
        Sweep directory.
    execution : Execution, optional
        Backend, workers, scheduler, progress and connect timeout (default ``Execution()``, a
        local process per usable core); its ``store_dir`` and ``cache_dir`` are not read.
    retry_failed : bool, default False
        Run the grid's ``failed`` runs again.
    runner : callable, optional
        ``runner(config) -> result`` with ``result.metrics`` (JSON scalars) and ``result.arrays``,
        picklable (a module-level function); default :func:`numerics.experiments.runner.run`.
    max_in_flight : int, optional
        Runs submitted but not finished at any time (default 2 x workers).
    max_worker_deaths : int, default 2
        Local backend: a run whose worker dies this many times while it runs alone is ``failed``.
    costs : mapping of str to float, optional
        Estimated seconds of each run by content hash (e.g.
        :func:`numerics.experiments.reproduce.plan.estimate_run_seconds`): the progress ETA then
        weighs runs by cost (a run not in it costs their mean).

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
    ...     run_sweep(grid, tmp, execution=Execution(workers=1, progress=False)).done
    2
    """
    started = time.perf_counter()
    execution = as_execution(execution)
    configs = _as_grid(grid, config_type).configs  # never empty: a Grid refuses that
    if runner is None:
        from ..runner import run as runner
    if not callable(runner):
        raise TypeError(f"runner must be callable (config -> result); got {runner!r}")
    if execution.backend == "local":
        try:  # spawned workers receive the runner by reference (module and name)
            pickle.dumps(runner)
        except Exception as exc:
            raise TypeError(f"runner must be picklable (a module-level function) for backend='local'; "
                            f"got {runner!r} ({one_line(exc)})") from None
    from theory.validation import check_positive_int

    if max_in_flight is not None:
        max_in_flight = check_positive_int("max_in_flight", max_in_flight)
    max_worker_deaths = check_positive_int("max_worker_deaths", max_worker_deaths)
    out_dir = Path(out_dir)
    writable_store(out_dir)
    hashes = [config.content_hash() for config in configs]
    run_costs = _run_costs(costs, hashes)

    # local pools and dask's nannies export the BLAS variables in the driver: restored afterwards
    with preserved_environment(BLAS_THREAD_VARIABLES):
        return _run(configs, hashes, out_dir, execution, retry_failed, runner, max_in_flight,
                    max_worker_deaths, started, run_costs)


def _run(configs, hashes, out_dir, execution, retry_failed, runner, max_in_flight, max_worker_deaths,
         started, run_costs=None) -> SweepSummary:
    from numerics.progress import progress_bar

    store_file = out_dir / _store.STORE_FILENAME
    executor = open_backend(execution, runner)
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
            costed = {}
            if run_costs is not None:  # the runs not to do (done, failed) count as done work
                costed = dict(total_cost=sum(run_costs.values()),
                              initial_cost=sum(run_costs[h] for h in hashes if status[h] != "pending"))
            bar = progress_bar(len(hashes), skipped, enabled=execution.progress, desc="sweep", unit="run",
                               **costed)
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
        # 'pending'): local workers are ended at once (LocalPool.stop), not left to finish them
        executor.close(wait=clean_exit)
    count = collections.Counter(final.values())
    return SweepSummary(
        out_dir=out_dir, store=store_file, backend=execution.backend, workers=executor.workers,
        total=len(hashes),
        skipped=skipped, executed=executed, done=count["done"], failed=count["failed"],
        pending=count["pending"] + count["running"], requeued=requeued, wall_time=time.perf_counter() - started,
    )


#: test hook, inert unless set: a file the driver creates after its first commit, then waits (interruptible)
#: until it is removed, so that tests interrupt or kill a sweep at a known point instead of racing it
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
            except WorkerLost:  # a worker died before this submission
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
                except WorkerLost:
                    lost.append(item)
            if not lost:
                continue
            # the pool is broken: every other run in flight finishes or is lost with it
            executor.wait_all(list(in_flight))
            for future, item in list(in_flight.items()):
                try:
                    commit(executor.outcome(future, item[0]))
                except WorkerLost:
                    lost.append(item)
            in_flight.clear()
            if len(lost) == 1:  # all other runs returned: this run's worker died
                run_hash, _ = lost[0]
                deaths[run_hash] += 1
                if deaths[run_hash] >= max_deaths:
                    commit(failed_outcome(run_hash, None, f"WorkerDied: the worker process died {deaths[run_hash]} "
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

