"""Where the experiments layer runs its work: one :class:`Execution` value, validated once.

Every command that trains or computes Monte-Carlo bounds builds one from its flags and hands it
down (library functions take ``execution=None``, the defaults); the backends are in
:mod:`numerics.experiments.sweep`. No numpy at import time (workers pin BLAS threads first).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

#: a Dask scheduler address: an optional protocol, a host name or [IPv6] address, and a port
_SCHEDULER_ADDRESS = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://)?(?:\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):\d{1,5}$")

__all__ = ["BACKENDS", "Execution", "as_execution", "usable_cores"]

#: execution backends: a local pool of spawned processes, or a ``dask.distributed`` cluster
BACKENDS = ("local", "dask")


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), the default number of local workers.

    Examples
    --------
    >>> usable_cores() >= 1
    True
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Execution:
    """Where training runs execute, and where a study keeps its runs and its Monte-Carlo cache.

    A field with a value it does not allow raises ``ValueError``/``TypeError`` naming it. Results
    do not depend on it: each run's randomness comes from its config.

    Parameters
    ----------
    backend : {'local', 'dask'}, default 'local'
        Spawned worker processes on this machine, or a ``dask.distributed`` cluster.
    workers : int, optional
        Local worker processes (default: :func:`usable_cores`), or with ``backend='dask'`` and
        no ``scheduler`` the size of a local Dask cluster; with a scheduler, only the size of
        the local pools of a command's own work (the Monte-Carlo bounds).
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:8786``); only with ``backend='dask'``.
    progress : bool, optional
        ``None``: a bar on a terminal, a record every 10 s otherwise (:mod:`numerics.progress`);
        ``True``: a bar; ``False``: silent.
    store_dir, cache_dir : path, optional
        The sweep store a study trains into and its Monte-Carlo cache
        (:mod:`numerics.experiments.cache`); default the study's own (``OUT/store``,
        ``OUT/cache``). A function given its store explicitly does not read ``store_dir``.
    connect_timeout : float, default 10
        Seconds to wait for the Dask scheduler (or local cluster) to answer.

    Examples
    --------
    >>> Execution(workers=2).pool_size()
    2
    >>> Execution("dask", scheduler="tcp://127.0.0.1:8786").backend
    'dask'
    >>> Execution(scheduler="tcp://127.0.0.1:8786")
    Traceback (most recent call last):
    ...
    ValueError: scheduler is only used with backend='dask'; got scheduler='tcp://127.0.0.1:8786'
    with backend='local'
    """

    backend: str = "local"
    workers: int | None = None
    scheduler: str | None = None
    progress: bool | None = None
    store_dir: Path | None = None
    cache_dir: Path | None = None
    connect_timeout: float = 10.0

    def __post_init__(self) -> None:
        from theory.validation import check_choice, check_positive, check_positive_int

        check_choice("backend", self.backend, BACKENDS)
        if self.workers is not None:
            object.__setattr__(self, "workers", check_positive_int("workers", self.workers))
        if self.scheduler is not None:
            if not isinstance(self.scheduler, str) or not self.scheduler.strip():
                raise TypeError("scheduler must be an address string like 'tcp://host:8786'; "
                                f"got {self.scheduler!r}")
            if self.backend != "dask":
                raise ValueError("scheduler is only used with backend='dask'; "
                                 f"got scheduler={self.scheduler!r} with backend={self.backend!r}")
            if not _SCHEDULER_ADDRESS.match(self.scheduler.strip()):
                # checked here, before any work: dask.distributed refuses it only once a client is built, and a
                # half-built client then blocks its process's exit for 20 s
                raise ValueError("scheduler must be an address with a port, like 'tcp://host:8786' or 'host:8786'; "
                                 f"got {self.scheduler!r}")
        if self.progress is not None and not isinstance(self.progress, bool):
            raise TypeError(f"progress must be True, False or None; got {self.progress!r}")
        for name in ("store_dir", "cache_dir"):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, (str, os.PathLike)) or not str(value):
                raise TypeError(f"{name} must be a directory path; got {value!r}")
            object.__setattr__(self, name, Path(value))
        # check_positive refuses a bool too (TypeError), as it does any non-number
        object.__setattr__(self, "connect_timeout", check_positive("connect_timeout", self.connect_timeout))

    def pool_size(self, default: int | None = None) -> int:
        """Local processes for work done here: ``workers``, else ``default``, else all usable cores.

        Examples
        --------
        >>> Execution().pool_size(default=1), Execution(workers=3).pool_size(default=1)
        (1, 3)
        """
        if self.workers is not None:
            return self.workers
        return usable_cores() if default is None else default


def as_execution(execution: Execution | None) -> Execution:
    """``execution``, or the defaults ``Execution()`` for ``None``; anything else is a TypeError.

    Examples
    --------
    >>> as_execution(None) == Execution()
    True
    """
    if execution is None:
        return Execution()
    if not isinstance(execution, Execution):
        raise TypeError("execution must be an Execution (numerics.experiments.execution); "
                        f"got {execution!r}")
    return execution
