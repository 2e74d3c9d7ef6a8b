"""The sweep's backends: local worker processes pinned to one BLAS thread, or a Dask cluster.

:func:`local_pool` is the one way the experiments layer starts local workers (the sweep's and
:func:`numerics.experiments.cache.cached_many`'s); :func:`open_backend` connects the sweep driver to
local workers or a Dask cluster, where :func:`_execute` runs one config.
No numpy at import time: workers import this module before they pin BLAS threads.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
import traceback
import uuid
from typing import Any, Callable, Iterator, Sequence

from .. import store as _store
from ..execution import Execution
from ..grid import one_line
from ..store import RunOutcome

#: environment variables set to 1 in every local worker before numpy is imported
BLAS_THREAD_VARIABLES = (
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
)

Runner = Callable[[Any], Any]


#: set in each local worker by :func:`_init_worker`: whether numpy was imported before the BLAS threads
#: were pinned, and the thread limit in force (a test hook, read through :mod:`numerics.experiments.sweep`)
WORKER_STATE: dict[str, Any] = {}


def _init_worker(parent_pid: int) -> None:
    """Local worker initializer: Ctrl-C left to the driver, one BLAS thread, and exit when the driver dies."""
    # Ctrl-C reaches the whole foreground process group: the driver handles it and stops its workers
    # (:meth:`LocalPool.stop`); a worker that took it would print a traceback, or return the interrupted
    # call and go on with the next one. The worker was started with SIGINT blocked (LocalPool.submit):
    # ignoring it discards one that arrived meanwhile, then it is unblocked.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    WORKER_STATE["numpy_imported_before_pinning"] = "numpy" in sys.modules
    for name in BLAS_THREAD_VARIABLES:
        os.environ[name] = "1"
    try:  # effective even if numpy was imported before (e.g. by a driver script spawn re-imports)
        from threadpoolctl import threadpool_limits
    except ImportError:
        pass
    else:
        WORKER_STATE["threadpool_limits"] = threadpool_limits(limits=1)
    try:  # a worker's progress bars need no lock shared between processes; tqdm's default one is a named
        # semaphore, which a worker ended by LocalPool.stop would leave to the resource tracker, whose
        # "leaked semaphore objects" warning would then follow the driver's one line on Ctrl-C
        from tqdm import tqdm
    except ImportError:
        pass
    else:
        tqdm.set_lock(threading.RLock())

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
        error, tb = f"{type(exc).__name__}: {one_line(exc)}", traceback.format_exc()
    return RunOutcome(
        run_hash=run_hash, ok=error is None, metrics=metrics, arrays=arrays, error=error, traceback=tb,
        started_at=started, finished_at=time.time(), wall_time=time.perf_counter() - clock,
        host=socket.gethostname(), pid=os.getpid(),
    )


def failed_outcome(run_hash: str, exc: BaseException | None, message: str | None = None) -> RunOutcome:
    """A ``failed`` :class:`RunOutcome` made by the driver for a run that returned none of its own.

    Its error is ``message``, or ``"Type: message"`` of ``exc`` (whose traceback it keeps); it
    names no worker (``pid`` 0) and took no time.

    Examples
    --------
    >>> outcome = failed_outcome("ab12", KeyError("gone"))
    >>> outcome.ok, outcome.error
    (False, "KeyError: 'gone'")
    >>> failed_outcome("ab12", None, "WorkerDied: twice").error
    'WorkerDied: twice'
    """
    now = time.time()
    error = message or f"{type(exc).__name__}: {one_line(exc)}"
    tb = "".join(traceback.format_exception(exc)) if exc is not None else None
    return RunOutcome(run_hash, False, {}, {}, error, tb, now, now, 0.0, socket.gethostname(), 0)


class WorkerLost(Exception):
    """The local pool broke while a run was in flight: the driver restarts it and re-runs the runs it held."""


@contextlib.contextmanager
def preserved_environment(names: Sequence[str]) -> Iterator[None]:
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


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """Block SIGINT in this thread (POSIX; elsewhere a no-op): processes it starts begin with SIGINT blocked.

    A SIGINT that arrives meanwhile is not lost: it is delivered when the mask is restored.
    """
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class LocalPool(cf.ProcessPoolExecutor):
    """A :class:`~concurrent.futures.ProcessPoolExecutor` whose workers leave Ctrl-C to the driver.

    Its workers ignore SIGINT from the moment they start (they are spawned with it blocked, and
    :func:`_init_worker` ignores it), so a Ctrl-C sent to the whole process group, as a terminal
    does, interrupts the driver only. The driver then calls :meth:`stop` -- leaving the pool's
    ``with`` block on an exception does -- which ends the workers at once instead of waiting for
    the calls they are running (the interpreter's exit would otherwise wait for them too).
    Made by :func:`local_pool`.
    """

    def submit(self, fn, /, *args, **kwargs):
        """Schedule ``fn(*args, **kwargs)``; as :meth:`concurrent.futures.Executor.submit`.

        Workers are started here, on demand, with SIGINT blocked (see the class docstring).

        Parameters
        ----------
        fn : callable
            A picklable (module-level) callable.
        *args, **kwargs
            Its arguments.

        Returns
        -------
        concurrent.futures.Future
        """
        with _sigint_blocked():
            return super().submit(fn, *args, **kwargs)

    def stop(self) -> None:
        """Cancel the calls not started and end the workers now, without waiting for the calls they run.

        The workers are sent SIGTERM; the futures of the calls they were running fail with
        :class:`~concurrent.futures.process.BrokenProcessPool` (after an error or Ctrl-C in the
        driver their results would be discarded anyway). Returns once the pool's manager thread
        has reaped the workers and ended.

        Returns
        -------
        None
        """
        manager = self._executor_manager_thread
        processes = list((self._processes or {}).values())
        self.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            with contextlib.suppress(OSError, ValueError):  # already gone, or closed
                process.terminate()
        if manager is not None:  # it sees the workers end, fails their futures and joins them
            manager.join()

    def __exit__(self, exc_type, exc_value, exc_traceback) -> bool:
        if exc_type is None:
            self.shutdown(wait=True)
        else:  # an error or Ctrl-C in the driver: do not wait for the calls in flight
            self.stop()
        return False


def local_pool(workers: int) -> LocalPool:
    """A pool of ``workers`` spawned processes, each pinned to one BLAS thread and ending with its driver.

    The BLAS variables are also set in the driver, whose spawned workers inherit them (this pins
    BLAS even when spawn re-imports a driver script that imports numpy); the caller restores them
    (``with preserved_environment(BLAS_THREAD_VARIABLES)``). The workers ignore Ctrl-C, which is
    the driver's; leaving the pool's ``with`` block on an exception ends them without waiting
    (``LocalPool.stop``).

    Examples
    --------
    >>> with preserved_environment(BLAS_THREAD_VARIABLES):  # a few seconds: a worker imports the package
    ...     with local_pool(1) as pool:
    ...         pool.submit(os.getenv, "OMP_NUM_THREADS").result()
    '1'
    """
    os.environ.update(dict.fromkeys(BLAS_THREAD_VARIABLES, "1"))
    return LocalPool(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                     initializer=_init_worker, initargs=(os.getpid(),))


class _LocalBackend:
    def __init__(self, workers: int, runner: Runner):
        self.workers, self._runner = workers, runner
        self._executor = local_pool(workers)

    def submit(self, run_hash: str, config: Any):
        try:
            return self._executor.submit(_execute, self._runner, run_hash, config)
        except cf.process.BrokenProcessPool as exc:
            raise WorkerLost(one_line(exc)) from exc

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
            raise WorkerLost(one_line(exc)) from exc
        except Exception as exc:  # e.g. the config could not be pickled to the worker
            return failed_outcome(run_hash, exc)

    def restart(self) -> None:
        self.close()
        self._executor = local_pool(self.workers)

    def close(self, wait: bool = True) -> None:
        if wait:
            self._executor.shutdown(wait=True, cancel_futures=True)
        else:  # after an error or Ctrl-C: end the runs in flight instead of waiting for them
            self._executor.stop()


class _DaskBackend:
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
                                 f"({one_line(exc) or type(exc).__name__})") from None
        else:
            self._cluster = distributed.LocalCluster(
                n_workers=local_workers, threads_per_worker=1, processes=True,
                dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR, host="127.0.0.1",
            )
            self._client = distributed.Client(self._cluster, timeout=f"{timeout}s", set_as_default=False)
        self.workers = max(1, sum(self._client.nthreads().values()))

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
            return failed_outcome(run_hash, exc)

    def restart(self) -> None:  # pragma: no cover - dask recovers lost workers itself
        raise RuntimeError("dask backend does not restart")

    def close(self, wait: bool = True) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()



def open_backend(execution: Execution, runner: Runner):
    """The backend ``execution`` names, connected: a local pool, a local Dask cluster or a scheduler's.

    Either one offers what the driver calls: ``submit(run_hash, config)``, ``wait_any``,
    ``wait_all``, ``outcome(future, run_hash)`` (a :class:`RunOutcome`; :class:`WorkerLost` when
    the local pool broke), ``restart``, ``close(wait)`` and ``workers``.

    Examples
    --------
    >>> with preserved_environment(BLAS_THREAD_VARIABLES):  # workers start on the first submit
    ...     backend = open_backend(Execution(workers=1, progress=False), os.getenv)
    ...     backend.workers
    ...     backend.close()
    1
    """
    if execution.backend == "local":
        return _LocalBackend(execution.pool_size(), runner)
    local_workers = None if execution.scheduler is not None else execution.pool_size()
    return _DaskBackend(runner, scheduler=execution.scheduler, local_workers=local_workers,
                        timeout=float(execution.connect_timeout))
