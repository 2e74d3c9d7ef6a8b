"""Run the ``idepth`` of *this* checkout in a subprocess.

The package may also be installed (editable) from another checkout; the console
script ``idepth`` would then run that copy. ``python -m idepth`` with this
checkout first on ``PYTHONPATH`` (and as the working directory) runs this one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def idepth_command(*args: str) -> list[str]:
    """``[python, -m, idepth, *args]`` for :func:`subprocess.run` with ``cwd=ROOT, env=checkout_env()``."""
    return [sys.executable, "-m", "idepth", *map(str, args)]


def checkout_env(**extra: str) -> dict:
    """The current environment with this checkout first on ``PYTHONPATH`` (plus ``extra``)."""
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env
