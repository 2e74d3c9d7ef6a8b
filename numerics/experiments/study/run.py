"""The one runner and the one driver of a plan of cells: a cell's candidates in lockstep, the depths in waves.

:func:`run_cell` (the sweep runner of every :class:`~numerics.experiments.study.plan.Cell`, whatever its plan or
recipe) trains a cell's candidates on one batch stream, evaluates each on the selection and report sets and keeps
the winner's weights (the next depth's nested start). :func:`run_plan` runs one sweep per depth, in increasing
order, main settings first, so an interrupted plan continues from its store without retraining a finished cell,
nor a finished candidate of the cell it was training (:mod:`~numerics.experiments.study.certified.finished`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from numerics.lockstep import train_lockstep
from numerics.models import chunk_size, get_model, head_average_params
from numerics.models.heads import form_average_params
from numerics.train import TrainingDiverged, evaluation_batch
from theory import PowerLawSpectrum
from theory.decomposition import decompose
from theory.softmax_bounds import softmax_bounds

from ..criteria import mean_se
from ..execution import Execution
from ..grid import Grid
from ..store import load_arrays
from ..sweep import run_sweep
from .certified.cells import SUMMARY_COLUMNS, export_cells, finished_hashes, import_cells, read_cell
from .certified.finished import candidates_dir, forget_finished, load_finished, save_finished
from .plan import Candidate, Cell, Plan, eval_seed, shipped_U

__all__ = ["CellResult", "SUMMARY_COLUMNS", "cell_decomposition", "context_errors", "diverse_forms", "nested_params", "oracle_allocation", "oracle_heads", "run_cell",
           "run_plan", "winner_decomposition"]

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
        run_sweep(Grid.of([cell for _, cell in wave]), store_dir, execution=execution, runner=run_cell)
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
    from ..store import load_results

    configs = {config.content_hash(): config for config in sorted(plan.configs(), key=lambda c: -c.depth)}
    summary = run_sweep(Grid.of(list(configs.values())), store_dir, execution=execution)
    if not summary.ok:
        failed = load_results(store_dir, status="failed")
        detail = failed[0]["error"] if failed else "runs still pending"
        raise RuntimeError(f"the sweep did not finish: {summary.failed} failed, {summary.pending} pending ({detail})")
    return configs
