"""The one :class:`~numerics.experiments.execution.Execution` of a sub-command's parsed flags.

Every sub-command that runs things (``reproduce``, ``study ...``, ``sweep run``) builds its
execution here, once, and passes it down; a bad value is a ``ValueError`` naming the field,
which :func:`idepth.cli.main` prints as one line with exit status 2.
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


def execution_from_args(args: argparse.Namespace, **fields):
    """The Execution of ``args``' ``--backend``, ``--workers``, ``--scheduler``, ``--store``,
    ``--connect-timeout`` and ``--no-progress`` (those the sub-command has), with ``fields`` on top."""
    from numerics.experiments.execution import Execution

    values = {field: getattr(args, flag) for flag, field in _FIELDS.items() if hasattr(args, flag)}
    if getattr(args, "no_progress", False):
        values["progress"] = False
    return Execution(**{**values, **fields})
