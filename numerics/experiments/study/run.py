"""The one runner and the one driver of a plan of cells: a cell's candidates in lockstep, the depths in waves.

:func:`run_cell` (the sweep runner of every :class:`~numerics.experiments.study.plan.Cell`, whatever its plan or
recipe) trains a cell's candidates on one batch stream, evaluates each on the selection and report sets and keeps
the winner's weights (the next depth's nested start). :func:`run_plan` runs one sweep per depth, in increasing
order, main settings first, so an interrupted plan continues from its store without retraining a finished cell,
nor a finished candidate of the cell it was training (:mod:`~numerics.experiments.study.certified.finished`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field

import numpy as np

from numerics.lockstep import train_lockstep
from numerics.models import get_model, head_average_params
from numerics.models.heads import form_average_params
from numerics.train import TrainingDiverged, evaluation_batch

from ..criteria import mean_se
from ..execution import Execution
from ..grid import Grid
from ..store import load_arrays, load_results
from .. import sweep  # called through the package: a test or a caller may stand in for run_sweep
from .certified.cells import SUMMARY_COLUMNS, export_cells, finished_hashes, import_cells
from .certified.finished import candidates_dir, forget_finished, load_finished, save_finished
from .certified.run import cell_decomposition, context_errors, oracle_allocation, oracle_heads, winner_decomposition
from .plan import Cell, Plan, shipped_U

#: the runner, the driver and the starts are this module's; a cell's evaluations and oracle heads are re-exported
#: from :mod:`~numerics.experiments.study.certified.run`
__all__ = ["CellResult", "SUMMARY_COLUMNS", "cell_decomposition", "context_errors", "diverse_forms", "nested_params",
           "oracle_allocation", "oracle_heads", "run_cell", "run_plan", "winner_decomposition"]


@dataclass(frozen=True, eq=False)
class CellResult:
    """What the store keeps of a cell: scalar ``metrics`` and ``arrays`` (see :func:`run_cell`).

    Examples
    --------
    >>> CellResult({"winner": 0}).arrays
    {}
    """

    metrics: dict
    arrays: dict = field(default_factory=dict)


def nested_params(parent: dict, noise: float, rng: np.random.Generator | None) -> dict:
    """A depth-2L model from a depth-L one: every layer duplicated (the same function, eq. 60), then perturbed.

    Duplicating each layer keeps ``(1/2L) Σ 2 f_ℓ = (1/L) Σ f_ℓ`` exactly; ``noise > 0`` adds
    ``noise · rms(W) · G`` (G standard normal) to each copy's ``W_q``, ``W_k`` so the copies can part.

    Examples
    --------
    >>> p = {"W_q": np.ones((1, 2, 2)), "W_k": np.ones((1, 2, 2)), "W_v": np.eye(2)}
    >>> nested_params(p, 0.0, None)["W_q"].shape
    (2, 2, 2)
    """
    out = {name: (np.repeat(value, 2, axis=0) if name in ("W_q", "W_k") else np.array(value))
           for name, value in parent.items()}
    if noise > 0:
        for name in ("W_q", "W_k"):
            scale = float(np.sqrt(np.mean(np.square(out[name], dtype=np.float64))))
            out[name] = (out[name] + noise * scale * rng.standard_normal(out[name].shape)).astype(out[name].dtype)
    return out


def _expressible(cell: Cell):
    """The shipped ``U_L`` of the cell's setting (:func:`~.plan.shipped_U`)."""
    return shipped_U(cell.a, cell.b, cell.d, cell.P, cell.k, needed_by="the expressible and diverse starts")


def diverse_forms(cell: Cell, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """L forms drawn i.i.d. from ``U_L``'s diffuse classes (uniform over classes) and ``U_L``'s gain at the depth.

    A start on the diffuse branch whatever branch won ``U_L`` at this depth: heads that differ from each
    other (:class:`theory.head_families.HeadFamily` with ``σ > 0``), so training starts from many
    directions at once rather than from a few temperatures.

    References
    ----------
    Paper eqs. (9)-(10) (a head's query-key form), (59)-(60) (the average of heads).

    Examples
    --------
    >>> from numerics.experiments.study.plan import REVISED_PLAN
    >>> cell = REVISED_PLAN.cell(0.0, 0.0, 64, 4, 0, "parent")
    >>> forms, gain = diverse_forms(cell, np.random.default_rng(0))
    >>> forms.shape, bool(np.isfinite(gain))
    ((4, 16, 16), True)
    """
    from theory.head_families import HeadFamily

    expressible = _expressible(cell)
    family = expressible.dictionary.family()
    diffuse = [i for i, sigma in enumerate(family.sigmas) if sigma > 0]
    law = HeadFamily(tuple(family.temperatures[i] for i in diffuse), tuple(family.sigmas[i] for i in diffuse))
    forms, _ = law.sample_forms(cell.depth, cell.d, rng)
    return forms, expressible.forms(cell.depth)[1]


def _start(cell: Cell, kind: str, perturbed: bool) -> tuple[dict | None, dict | None]:
    """(initial weights, the config's ``start`` description) of a start kind."""
    dtype = np.float32 if cell.dtype == "float32" else np.float64
    if kind == "cold":
        return None, None
    rng = np.random.default_rng(np.random.SeedSequence(cell.seed, spawn_key=(7, cell.depth)))
    if kind == "oracle":
        heads = oracle_allocation(cell)
        params = head_average_params(heads, cell.d, cell.N, rng, model=cell.model, dtype=dtype)
        return params, {"kind": "oracle", "temperatures": list(heads.temperatures), "counts": list(heads.counts),
                        "gain": heads.gain, "bound_contexts": cell.bound_contexts}
    if kind in ("expressible", "diverse"):
        if kind == "expressible":
            forms, gain = _expressible(cell).forms(cell.depth)
        else:
            forms, gain = diverse_forms(cell, np.random.default_rng(np.random.SeedSequence(cell.seed,
                                                                                          spawn_key=(8, cell.depth))))
        params = form_average_params(forms, gain, cell.d, cell.N, rng, model=cell.model, dtype=dtype)
        return params, {"kind": kind, "gain": gain}
    if cell.parent_params is None:
        raise ValueError(f"the nested start of cell depth={cell.depth} needs its parent's weights (parent {cell.parent})")
    noise = cell.nested_noise if perturbed else 0.0
    params = nested_params({k: np.asarray(v, dtype=dtype) for k, v in cell.parent_params.items()}, noise, rng)
    return params, {"kind": "nested", "parent": cell.parent, "noise": noise}


def run_cell(cell: Cell) -> CellResult:
    """Train and evaluate every candidate of ``cell``; the sweep runner of the certified study.

    Returns a :class:`CellResult`. ``metrics``: ``winner`` (the candidate of least selection-set loss
    among those neither doubling checks nor diverged), ``candidates`` (their labels, JSON), ``cpu_time``,
    ``R_L`` and ``R_L_se`` (the winner's report-set loss), ``A_L``, ``C_L`` and their SEs (the winner's
    :func:`winner_decomposition` on the report set, Fig. 6c/d). ``arrays``: ``summary`` (one row per
    candidate, :data:`SUMMARY_COLUMNS`), ``report_errors`` (candidates × report contexts, float32; with
    ``cell.report_block > 1``, the means of consecutive blocks of that many contexts),
    ``curve_<i>`` (trained candidates' selection-set curves), ``winner_<name>`` (the winner's weights).

    Notes
    -----
    No example: it trains (``tests/test_certified.py`` runs a tiny study).

    References
    ----------
    Paper eqs. (12), (59)-(60).
    """
    started = time.process_time()
    model = get_model(cell.model)
    kinds = {c.start for c in cell.candidates}
    starts = {(kind, perturbed): _start(cell, kind, perturbed) for kind in kinds for perturbed in (False, True)}
    trained = {i: starts[c.start, True] for i, c in enumerate(cell.candidates) if c.trained}
    configs = [cell.train_config(cell.candidates[i], start) for i, (_, start) in trained.items()]
    template = configs[0]
    selection = evaluation_batch(type(template)(**{**template.to_dict(), "eval_size": cell.select_size}))
    report = evaluation_batch(type(template)(**{**template.to_dict(), "eval_seed": cell.eval_seed("report"),
                                                "eval_size": cell.report_size}))
    results = _train(cell, trained, configs)
    summary, report_errors, arrays = [], [], {}
    for i, candidate in enumerate(cell.candidates):
        result = results.get(i)
        diverged = isinstance(result, TrainingDiverged)
        if diverged:
            params = None
        elif result is None:
            params = starts[candidate.start, False][0]
        else:
            params = result.params
            arrays[f"curve_{i}"] = np.asarray(result.arrays["loss_curve"], dtype=np.float64)
        if params is None:
            errors_s, errors_r = np.full(cell.select_size, np.nan), np.full(cell.report_size, np.nan)
        else:
            errors_s, errors_r = context_errors(model, params, selection), context_errors(model, params, report)
        summary.append([candidate.learning_rate, candidate.steps, candidate.doubled, diverged, *mean_se(errors_s),
                        *mean_se(errors_r), candidate.steps / max(1, sum(c.steps for c in cell.candidates))])
        # block means of the report errors: the same contexts in every cell of the setting, so a bootstrap
        # over blocks keeps the pairing (report_block 1: per context)
        report_errors.append(errors_r.reshape(-1, cell.report_block).mean(axis=1).astype(np.float32))
    summary = np.asarray(summary, dtype=np.float64)
    eligible = [i for i, c in enumerate(cell.candidates) if not c.doubled and np.isfinite(summary[i, 4])]
    winner = min(eligible, key=lambda i: summary[i, 4])
    winner_params = results[winner].params if winner in results else starts[cell.candidates[winner].start, False][0]
    arrays.update({f"winner_{name}": np.asarray(value) for name, value in winner_params.items()})
    arrays["summary"] = summary
    arrays["report_errors"] = np.asarray(report_errors)
    metrics = {"winner": winner, "candidates": json.dumps([c.label for c in cell.candidates]),
               "R_L": float(summary[winner, 6]), "R_L_se": float(summary[winner, 7]),
               **winner_decomposition(model, winner_params, report), "cpu_time": time.process_time() - started}
    return CellResult(metrics=metrics, arrays=arrays)


def _train(cell: Cell, trained: dict, configs: list) -> dict:
    """``{candidate index: result}`` of the trained candidates; with ``cell.resume_dir``, those finished by an
    earlier, interrupted call are read back and each one finishing now is kept there as it finishes."""
    finished = load_finished(cell.resume_dir) if cell.resume_dir else {}
    todo = [i for i in trained if i not in finished]
    if not todo:
        return {i: finished[i] for i in trained}
    order = list(trained)

    def keep(j: int, result) -> None:
        if cell.resume_dir:
            save_finished(cell.resume_dir, todo[j], result)

    results = train_lockstep([configs[order.index(i)] for i in todo],
                             initial_params=[trained[i][0] for i in todo], on_done=keep)
    return {i: finished[i] if i in finished else results[todo.index(i)] for i in trained}


def _winner_params(store_dir, run_hash: str) -> dict:
    arrays = load_arrays(store_dir, run_hash)
    weights = {name[len("winner_"):]: value for name, value in arrays.items() if name.startswith("winner_")}
    if not weights:
        raise ValueError(f"the store in {store_dir} holds no winner weights of cell {run_hash} (a frontier file "
                         "missing?): its next depth cannot nest on it")
    return weights


def run_plan(plan: Plan, store_dir, *, execution: Execution | None = None, depths=None, cells_dir=None,
             frontier_dir=None) -> dict:
    """Run the cells of ``plan`` through the store ``store_dir``, depth by depth; returns ``{cell hash: cell}``.

    Each depth is one sweep (:func:`numerics.experiments.sweep.run_sweep`, run where ``execution`` says) of
    :func:`run_cell` over every setting and seed; a depth-L cell's nested start reads the depth-L/2 winner from the
    store. A verdict needs every depth of a setting, so the main settings (:attr:`Plan.spectra` at ``P``,
    top-``k``) go through every depth before the others start (a cell's hash does not depend on the other
    settings of its plan). Calling it again continues where it stopped, and an interrupted cell keeps its
    finished candidates. ``depths``: stop after these (a prefix of ``plan.depths``). With ``cells_dir`` and
    ``frontier_dir``, the exported cells there are imported first and every finished wave is exported
    (:mod:`~numerics.experiments.study.certified.cells`); ``frontier_dir`` None with ``cells_dir``: cells
    without a next depth that nests on them (a plan without nested starts).

    A one-run plan (:meth:`Plan.one_run`: a reproduction's family, a regime of the regime study) is one sweep of
    :func:`numerics.experiments.runner.run` over :meth:`Plan.configs`, deepest first (a shorter tail); it returns
    ``{run hash: TrainConfig}`` and raises ``RuntimeError`` naming the first failure if a run failed or is pending.

    Notes
    -----
    No example: it trains (``tests/test_certified.py`` runs a tiny study).
    """
    if plan.budget:
        if depths is not None or cells_dir is not None:
            raise ValueError(f"depths, cells_dir: a one-run plan ({plan.name!r}) runs every depth into its store")
        return _run_one_runs(plan, store_dir, execution)
    if cells_dir is not None:
        import_cells(cells_dir, frontier_dir, store_dir, run_cell)
    main = dataclasses.replace(plan, long_spectra=(), top16_spectra=())
    options = dict(execution=execution, depths=depths, cells_dir=cells_dir, frontier_dir=frontier_dir)
    cells = _run_waves(main, store_dir, **options) if main != plan else {}
    return {**cells, **_run_waves(plan, store_dir, **options)}


def _run_waves(plan: Plan, store_dir, *, execution, depths, cells_dir, frontier_dir) -> dict:
    """:func:`run_plan` of every setting of ``plan`` at once: one sweep per depth."""
    wanted = plan.depths if depths is None else tuple(depths)
    cells, parents = {}, {}
    finished = finished_hashes(store_dir)
    for depth in wanted:
        wave = []
        for a, b, P, k in plan.settings():
            for seed in plan.seeds_for(a, b, P, k):
                parent = parents.get((a, b, P, k, seed))
                cell = plan.cell(a, b, P, depth, seed, parent, k)
                if cell.content_hash() not in finished:  # a finished cell needs no start
                    object.__setattr__(cell, "resume_dir", str(candidates_dir(store_dir, cell.content_hash())))
                    if any(c.start == "nested" for c in cell.candidates):
                        object.__setattr__(cell, "parent_params", _winner_params(store_dir, parent))
                wave.append(((a, b, P, k, seed), cell))
        sweep.run_sweep(Grid.of([cell for _, cell in wave]), store_dir, execution=execution, runner=run_cell)
        done = finished_hashes(store_dir)
        for key, cell in wave:
            run_hash = cell.content_hash()
            cells[run_hash] = cell
            if run_hash not in done:
                raise RuntimeError(f"cell a={key[0]:g} b={key[1]:g} P={key[2]} k={key[3]} seed={key[4]} depth={depth} failed "
                                   f"(see `idepth sweep status {store_dir}`): deeper cells nest on it")
            parents[key] = run_hash
        forget_finished(store_dir, [cell.content_hash() for _, cell in wave])
        if cells_dir is not None:
            # each cell's child from the store's parent links: this call knows only the depths it ran
            export_cells(store_dir, cells_dir, frontier_dir, recipes=dict.fromkeys(cells, plan.recipe.name))
    return cells


def _run_one_runs(plan: Plan, store_dir, execution: Execution | None) -> dict:
    """:func:`run_plan` of a one-run plan: ``{run hash: TrainConfig}``, every run finished."""
    configs = {config.content_hash(): config for config in sorted(plan.configs(), key=lambda c: -c.depth)}
    summary = sweep.run_sweep(Grid.of(list(configs.values())), store_dir, execution=execution)
    if not summary.ok:
        failed = load_results(store_dir, status="failed")
        detail = failed[0]["error"] if failed else "runs still pending"
        raise RuntimeError(f"the sweep did not finish: {summary.failed} failed, {summary.pending} pending ({detail})")
    return configs
