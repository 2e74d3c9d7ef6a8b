"""The execution flags, declared once, and the one :class:`~numerics.experiments.execution.Execution` of them.

Every sub-command that runs things (``reproduce``, ``study ...``, ``sweep run``) declares its flags
with :func:`add_execution_flags` and builds its execution with :func:`execution_from_args`, once,
and passes it down; a bad value is a ``ValueError`` naming the field, which :func:`idepth.cli.main`
prints as one line with exit status 2.
"""

from __future__ import annotations

import argparse

#: parsed flag -> Execution field, for the flags a sub-command has
_FIELDS = {
    "backend": "backend",
    "workers": "workers",
    "scheduler": "scheduler",
    "store": "store_dir",
    "connect_timeout": "connect_timeout",
}


def add_execution_flags(parser: argparse.ArgumentParser) -> None:
    """Add the shared group of execution flags: ``--backend``, ``--workers``, ``--scheduler``, ``--no-progress``.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> add_execution_flags(parser)
    >>> args = parser.parse_args(["--backend", "dask", "--workers", "3"])
    >>> (args.backend, args.workers, args.scheduler, args.no_progress)
    ('dask', 3, None, False)
    """
    from numerics.experiments.execution import BACKENDS

    group = parser.add_argument_group("execution", "where the runs go (one Execution, the same for every command)")
    group.add_argument("--backend", choices=BACKENDS, default="local",
                       help="local worker processes (default), or a dask.distributed cluster")
    group.add_argument("--workers", type=int, default=None, metavar="N",
                       help="worker processes (default: the usable cores); with --backend dask and no --scheduler, "
                            "the size of a local Dask cluster")
    group.add_argument("--scheduler", metavar="ADDR", default=None,
                       help="address of a running Dask scheduler, e.g. tcp://host:8786 (with --backend dask)")
    group.add_argument("--no-progress", action="store_true",
                       help="no progress output (bars on a terminal, otherwise a one-line record every 10 s)")


def execution_from_args(args: argparse.Namespace, **fields):
    """The Execution of ``args``' ``--backend``, ``--workers``, ``--scheduler``, ``--store``,
    ``--connect-timeout`` and ``--no-progress`` (those the sub-command has), with ``fields`` on top."""
    from numerics.experiments.execution import Execution

    values = {field: getattr(args, flag) for flag, field in _FIELDS.items() if hasattr(args, flag)}
    if getattr(args, "no_progress", False):
        values["progress"] = False
    return Execution(**{**values, **fields})
