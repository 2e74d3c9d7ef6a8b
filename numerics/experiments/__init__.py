"""The experiments layer: orchestration built on the science layer of :mod:`numerics`.

=====================================  ==========================================================
:mod:`numerics.experiments.execution`  where work runs: one validated ``Execution`` (backend, workers, ...)
:mod:`numerics.experiments.sweep`      depth sweeps (grids, local and Dask backends, resume)
:mod:`numerics.experiments.store`      the SQLite results store of a sweep
:mod:`numerics.experiments.bounds`     oracle bounds of softmax heads (Monte Carlo)
:mod:`numerics.experiments.study`      the regime study, the consistency check, shipped defaults
:mod:`numerics.experiments.reproduce`  ``idepth reproduce``: every figure and table of the paper
=====================================  ==========================================================

Nothing in :mod:`numerics` outside this package imports it (a test checks the
import graph).
"""
