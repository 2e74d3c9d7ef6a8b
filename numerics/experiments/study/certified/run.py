"""What a certified cell's numbers are made of: the oracle heads of its ``oracle`` start and its evaluations.

:func:`oracle_allocation` (the heads behind ``B_L`` a cell's oracle start writes into the weights),
:func:`context_errors` (per-context squared errors), :func:`winner_decomposition` and :func:`cell_decomposition`
(``A_L``, ``C_L`` of a winner, eqs. 61-63). The one runner and driver that use them are
:mod:`numerics.experiments.study.run`'s. The page's cached predictions and decompositions are keyed on this code,
imports included (:func:`numerics.experiments.cache.function_digest`), so it stays here, unchanged, under this name.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from numerics.models import chunk_size, get_model
from numerics.train import evaluation_batch
from theory import PowerLawSpectrum
from theory.decomposition import decompose
from theory.softmax_bounds import softmax_bounds

from ..plan import Cell, Plan, eval_seed  # noqa: F401 (Plan: the examples build one)

__all__ = ["cell_decomposition", "context_errors", "oracle_allocation", "oracle_heads", "winner_decomposition"]


@functools.lru_cache(maxsize=64)
def _bounds(a: float, b: float, k: int, d: int, P: int, depths: tuple, n_contexts: int):
    seed = eval_seed("selection", a, b, k, P) + 1  # its own stream, fixed by the setting
    return softmax_bounds(PowerLawSpectrum(a, b, d), P, k, depths=depths, similarity="cosine",
                          n_contexts=n_contexts, n_seeds=1, rng=seed)


def oracle_allocation(cell: Cell):
    """The heads behind ``B_L`` at the cell's depth (a ``HeadAllocation``), cached.

    Fitted, exact cosine, on ``cell.bound_contexts`` contexts of their own stream (fixed by the setting).

    Examples
    --------
    >>> cell = Plan(d=4, N=8, P=16, depths=(1, 2), bound_contexts=256).cell(0.0, 0.0, 16, 2, 0, "parent")
    >>> sum(oracle_allocation(cell).counts)
    2
    """
    return oracle_heads(cell.a, cell.b, cell.k, cell.d, cell.P, cell.depth, cell.bound_depths, cell.bound_contexts)


def oracle_heads(a: float, b: float, k: int, d: int, P: int, depth: int, bound_depths, bound_contexts: int):
    """The heads behind ``B_depth`` of a setting (a ``HeadAllocation``), fitted as :func:`oracle_allocation` fits a
    cell's: what the page's predictions evaluate, without building a cell.

    Examples
    --------
    >>> sum(oracle_heads(0.0, 0.0, 2, 4, 16, 2, (1, 2), 256).counts)
    2
    """
    return _bounds(float(a), float(b), int(k), int(d), int(P), tuple(int(L) for L in bound_depths),
                   int(bound_contexts)).allocation(int(depth))



def context_errors(model, params, batch) -> np.ndarray:
    """Per-context squared errors ``(ŷ_L − y*)²`` (eq. 12) in float64, in chunks that bound the memory.

    Examples
    --------
    >>> from numerics.models import get_model
    >>> from numerics.train import TrainConfig, evaluation_batch
    >>> cfg = TrainConfig(model="nonlinear", task="difficult", d=4, N=8, P=8, depth=1, eval_size=16)
    >>> model = get_model("nonlinear")
    >>> context_errors(model, model.init_params(4, 8, 1, np.random.default_rng(0)), evaluation_batch(cfg)).shape
    (16,)
    """
    chunk = chunk_size(model, params, batch)
    out = []
    for start in range(0, batch.target.shape[0], chunk):
        part = batch.slice(start, start + chunk)
        prediction = np.asarray(model.forward(params, part).prediction, dtype=np.float64)
        out.append((prediction - part.target.astype(np.float64)) ** 2)
    return np.concatenate(out)


def winner_decomposition(model, params, batch) -> dict:
    """``A_L``, ``C_L`` and their standard errors of ``params`` on ``batch``: ``R_L = C_L + (A_L − C_L)/L``.

    ``A_L`` is the mean loss of the per-layer predictors, ``C_L`` their mean cross term (eqs. 61-63;
    :func:`theory.decomposition.decompose`); at L = 1, ``C_L`` is undefined (None). Fig. 6c/d draw them.

    Examples
    --------
    >>> from numerics.tasks import sample
    >>> model = get_model("nonlinear")
    >>> params = model.init_params(4, 8, 2, np.random.default_rng(0))
    >>> batch = sample("difficult", PowerLawSpectrum(0.0, 0.0, 4), 8, 64, np.random.default_rng(1))
    >>> out = winner_decomposition(model, params, batch)
    >>> sorted(out), out["A_L"] >= out["C_L"]
    (['A_L', 'A_L_se', 'C_L', 'C_L_se'], True)

    References
    ----------
    Paper eqs. (61)-(63).
    """
    chunk = chunk_size(model, params, batch)
    layers = [np.asarray(model.forward(params, batch.slice(start, start + chunk)).layer_predictors, dtype=np.float64)
              for start in range(0, batch.target.shape[0], chunk)]
    dec = decompose(np.concatenate(layers, axis=1), np.asarray(batch.target, dtype=np.float64))
    values = {"A_L": dec.A, "A_L_se": dec.A_se, "C_L": dec.C, "C_L_se": dec.C_se}
    return {name: float(v) if np.isfinite(v) else None for name, v in values.items()}


def cell_decomposition(cells_dir, cell_hash: str, contexts: int) -> dict:
    """:func:`winner_decomposition` of an exported cell's winner on ``contexts`` contexts drawn with its report seed.

    Those contexts are the same in every cell of a spectrum (the seed and the data law fix them), so depths and
    seeds stay paired. Asked for the whole report set, the value the runner stored is read back; otherwise (or
    when it stored none) it is computed from the winner's weights, which every cell but the first study's keeps. A
    ``ValueError`` names the cell when it has neither. The result has ``contexts``: how many it rests on.

    Notes
    -----
    No example: it needs an exported cell (``tests/test_certified_revised.py``).
    """
    from .cells import read_cell
    from ..plan import Candidate

    record, arrays = read_cell(Path(cells_dir) / f"{cell_hash}.npz")
    metrics = record["metrics"]
    cell = Cell.from_dict(record["config"])
    if "A_L" in metrics and int(contexts) == cell.report_size:
        return {name: metrics[name] for name in ("A_L", "A_L_se", "C_L", "C_L_se")} | {"contexts": cell.report_size}
    weights = {name.removeprefix("winner_"): value for name, value in arrays.items() if name.startswith("winner_")}
    if not weights:
        raise ValueError(f"cell {cell_hash}: no winner weights (a cell of the first study) and no stored A_L")
    template = cell.train_config(Candidate("cold", 1e-3, 1), None)
    batch = evaluation_batch(type(template)(**{**template.to_dict(), "eval_seed": cell.eval_seed("report"),
                                               "eval_size": int(contexts)}))
    return winner_decomposition(get_model(cell.model), weights, batch) | {"contexts": int(contexts)}
