"""The experiments layer: orchestration built on the science layer of :mod:`numerics`.

=====================================  ==========================================================
:mod:`numerics.experiments.execution`  where work runs: one validated ``Execution`` (backend, workers, ...)
:mod:`numerics.experiments.grid`       grids of run configurations (``Grid``, TOML)
:mod:`numerics.experiments.sweep`      depth sweeps (local and Dask backends, resume)
:mod:`numerics.experiments.store`      the SQLite results store of a sweep
:mod:`numerics.experiments.runner`     the one sweep runner: training plus the diagnostics
:mod:`numerics.experiments.cache`      the on-disk cache of Monte-Carlo results
:mod:`numerics.experiments.bounds`     oracle bounds of softmax heads (Monte Carlo), cached
:mod:`numerics.experiments.criteria`   every decision rule and threshold
:mod:`numerics.experiments.recipes`    the named training recipes, once each
:mod:`numerics.experiments.shipped`    where the shipped study results live (checkout or ``IDEPTH_RESULTS``)
:mod:`numerics.experiments.study`      the studies: one ``Plan`` (``study.plan``), regimes, certified, plateaus
:mod:`numerics.experiments.reproduce`  ``idepth reproduce``: every figure and table of the paper, and its scales
=====================================  ==========================================================

Nothing in :mod:`numerics` outside this package imports it (a test checks the
import graph).
"""

import importlib
import sys


def lazy_exports(package: str, homes: dict) -> tuple:
    """``(__getattr__, __dir__)`` for a package whose public names load their submodule only when used.

    ``homes`` maps each public name to the module it lives in, relative to ``package`` (``".run"``). The study
    packages use it so that a renderer importing one of their modules loads no training code
    (``tests/test_render_imports.py``).

    Examples
    --------
    >>> getattr_, dir_ = lazy_exports("numerics.experiments", {"Execution": ".execution"})
    >>> getattr_("Execution").__name__, "Execution" in dir_()
    ('Execution', True)
    """

    def __getattr__(name: str):
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(homes[name], package), name)

    def __dir__():
        return sorted(list(vars(sys.modules[package])) + list(homes))

    return __getattr__, __dir__
