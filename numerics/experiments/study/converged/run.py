"""Running the converged study: training through the store (:func:`run_converged_study`), reading it
back as rows (:func:`study_rows`) into the table (:func:`train_converged`), the bounds (:func:`study_bounds`).
No page: :mod:`~numerics.experiments.study.converged.command` runs this, then the page."""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from numerics.io import make_output_dir, write_json
from numerics.models import get_model
from numerics.train import TrainConfig, evaluation_batch

from ... import runner
from ...bounds import cached_softmax_bounds, softmax_bounds_key
from ...criteria import is_converged, last_quarter_change
from ...grid import Grid
from ...store import load_arrays, load_results, store_path
from ...execution import Execution, as_execution
from ...sweep import run_sweep
from .plan import ConvergedPlan, RunSpec
from .statistics import paired_depth_gains, paired_difference
from .table import CSV_NAME, StudyRow, provenance, write_study_csv

__all__ = ["collect_results", "run_converged_study", "study_bounds", "study_rows", "train_converged"]


def run_converged_study(plan: ConvergedPlan, store_dir, *, execution: Execution | None = None,
                        specs: Sequence[RunSpec] | None = None) -> dict:
    """Train the runs of ``plan`` (or ``specs``) until each meets the convergence rule or its last cap.

    Attempt ``i`` trains the runs still not converged with the cap ``base_steps · 2^i``;
    finished attempts are read back from the store, so calling it again continues the study.
    Returns :func:`collect_results` of the runs asked for.

    Notes
    -----
    No example: it trains (``tests/test_converged.py`` runs a tiny study).
    """
    todo = list(plan.runs() if specs is None else specs)
    asked = list(todo)
    execution = as_execution(execution)
    for cap in plan.caps():
        if not todo:
            break
        configs = [plan.config(spec, cap) for spec in todo]
        run_sweep(Grid.of(configs), store_dir, execution=execution, runner=runner.run)
        found = collect_results(plan, store_dir, todo)
        todo = [spec for spec in todo
                if spec in found and found[spec][0].max_steps == cap and not found[spec][3]]
    found = collect_results(plan, store_dir, asked)
    confirm = [plan.config(spec, 2 * found[spec][0].max_steps)
               for spec in plan.confirm_specs() if spec in found]
    if confirm:  # the doubling check: the same runs with twice the cap they converged at
        run_sweep(Grid.of(confirm), store_dir, execution=execution, runner=runner.run)
    return found


def collect_results(plan: ConvergedPlan, store_dir, specs: Sequence[RunSpec] | None = None) -> dict:
    """What the store holds of each run: ``{RunSpec: (TrainConfig, record, attempts, converged)}``.

    A run's result is its first converged attempt, else its last (absent: no finished one).

    Notes
    -----
    No example: it needs a store of trained runs (``tests/test_converged.py``).
    """
    if not store_path(store_dir).is_file():
        return {}
    records = {r["hash"]: r for r in load_results(store_dir, status="done")}
    out = {}
    for spec in plan.runs() if specs is None else specs:
        for attempt, cap in enumerate(plan.caps(), start=1):
            cfg = plan.config(spec, cap)
            record = records.get(cfg.content_hash())
            if record is None:
                break
            converged = is_converged(_curve(store_dir, record["hash"]), record["metrics"]["R_L_se"])
            out[spec] = (cfg, record, attempt, converged)
            if converged:
                break
    return out


def _curve(store_dir, run_hash: str) -> np.ndarray:
    return load_arrays(store_dir, run_hash, ["loss_curve"])["loss_curve"]


def _squared_errors(store_dir, cfg: TrainConfig, record, targets: dict) -> np.ndarray:
    key = (cfg.a, cfg.b, cfg.k, cfg.eval_seed)
    if key not in targets:
        targets[key] = np.asarray(evaluation_batch(cfg).target, dtype=np.float64)
    prediction = load_arrays(store_dir, record["hash"], ["eval_prediction"])["eval_prediction"]
    return (np.asarray(prediction, dtype=np.float64) - targets[key]) ** 2


def study_rows(plan: ConvergedPlan, results: Mapping, store_dir) -> list[StudyRow]:
    """One :class:`~.table.StudyRow` per run of ``results`` (from :func:`collect_results`).

    Notes
    -----
    No example: it needs a store of trained runs (``tests/test_converged.py``).
    """
    targets: dict = {}
    errors = {spec: _squared_errors(store_dir, cfg, record, targets)
              for spec, (cfg, record, *_) in results.items()}
    done = {r["hash"]: r for r in load_results(store_dir, status="done")}
    rows = []
    for spec, (cfg, record, attempts, _) in results.items():
        m = record["metrics"]
        same = (spec.model, spec.a, spec.b, spec.k, spec.N, spec.seed)
        group = {s.depth: errors[s] for s in results if (s.model, s.a, s.b, s.k, s.N, s.seed) == same}
        gain, gain_se = paired_depth_gains(group).get(spec.depth, (math.nan, math.nan))
        curve = _curve(store_dir, record["hash"])
        doubled = done.get(plan.config(spec, 2 * cfg.max_steps).content_hash())
        doubling, doubling_se = math.nan, math.nan
        if doubled is not None:  # paired over the same held-out contexts
            doubling, doubling_se = paired_difference(errors[spec],
                                                      _squared_errors(store_dir, cfg, doubled, targets))
        rows.append(StudyRow(
            model=spec.model, norm=get_model(spec.model).NORM, a=spec.a, b=spec.b, k=cfg.k, d=cfg.d, N=spec.N,
            P=cfg.P, depth=spec.depth, seed=spec.seed, steps=int(m["steps"]),
            converged=is_converged(curve, m["R_L_se"]), R_L=m["R_L"], R_L_se=m["R_L_se"], A_L=m["A_L"],
            C_L=m["C_L"], change_last_quarter=last_quarter_change(curve), attempts=attempts,
            delta_R1=gain, delta_R1_se=gain_se,
            eval_size=cfg.eval_size, eval_seed=cfg.eval_seed, batch_size=cfg.batch_size,
            learning_rate=cfg.learning_rate, cpu_time=m.get("cpu_time", math.nan), content_hash=record["hash"],
            doubling_gain=doubling, doubling_gain_se=doubling_se))
    rows.sort(key=lambda r: (r.model, r.k, r.N, r.a, r.b, r.depth, r.seed))
    return rows


def _key_text(key: Mapping) -> str:
    return json.dumps(dict(key), sort_keys=True)


def read_stored_bounds(path) -> dict:
    """``{key text: SoftmaxBounds}`` of a bounds file beside the study's CSV (empty if none)."""
    from theory.softmax_bounds import SoftmaxBounds

    path = Path(path)
    if not path.is_file():
        return {}
    try:
        entries = json.loads(path.read_text())
        return {_key_text(e["key"]): SoftmaxBounds.from_dict(e["bounds"]) for e in entries}
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a bounds file of the converged study ({exc})") from None


def study_bounds(rows: Sequence[Mapping], *, n_contexts: int = 8192, n_seeds: int = 4,
                 execution: Execution | None = None, stored=None) -> dict:
    """``{(model, N, a, b, k): SoftmaxBounds}`` over exact cosine similarity, for every depth of ``rows``.

    Exact cosine, not the pre-norm similarity at initialisation: the trained model can express
    cosine heads exactly (RMSNorm at any ``N``; LayerNorm when ``N > d``). One bound per
    spectrum, shared by its widths and norms. Bounds the file ``stored`` holds (keyed by every
    input of their value) are read from it, the others computed (cached in the execution's
    ``cache_dir``, by its ``workers``, default 1) and added to it.

    Notes
    -----
    No example: a Monte-Carlo computation (``tests/test_converged.py`` runs it small).
    """
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["a"], r["b"], r["k"], r["d"], r["P"]), set()).add(r["depth"])
    keys = {spectrum: softmax_bounds_key(spectrum[0], spectrum[1], spectrum[3], spectrum[4], spectrum[2],
                                         depths=sorted(depths), n_contexts=n_contexts, n_seeds=n_seeds)
            for spectrum, depths in sorted(groups.items())}
    known = read_stored_bounds(stored) if stored is not None else {}
    missing = [key for key in keys.values() if _key_text(key) not in known]
    if missing:
        execution = as_execution(execution)
        computed = cached_softmax_bounds(missing, execution.cache_dir,
                                         workers=execution.pool_size(default=1),
                                         progress=execution.progress)
        known.update({_key_text(key): value for key, value in zip(missing, computed)})
        if stored is not None:
            write_json(stored, [{"key": dict(key), "bounds": known[_key_text(key)].to_dict()}
                                for key in sorted(keys.values(), key=_key_text)])
    values = {spectrum: known[_key_text(key)] for spectrum, key in keys.items()}
    return {(r["model"], r["N"], r["a"], r["b"], r["k"]): values[(r["a"], r["b"], r["k"], r["d"], r["P"])]
            for r in rows}


def train_converged(out_dir, *, plan: ConvergedPlan | None = None, execution: Execution | None = None,
                    command: str = "idepth study converged",
                    only_spectra: Sequence[tuple] | None = None) -> tuple[list, dict]:
    """Train the study (resumably) and write its table; returns ``(rows, provenance)``. Writes no page.

    ``out_dir`` receives ``converged-study.csv`` and its ``.provenance.json``; the store defaults to
    ``out_dir/store``. ``only_spectra`` trains only the runs of those ``(a, b)``; the CSV always holds
    every run of the plan the store has finished, so a study run over several sessions grows one table.

    Notes
    -----
    No example: it trains (``tests/test_converged.py`` runs a tiny study and resumes it).
    """
    out = Path(out_dir)
    started = time.perf_counter()
    execution = as_execution(execution)
    plan = ConvergedPlan() if plan is None else plan
    store_dir = execution.store_dir or out / "store"
    make_output_dir(out)
    specs = plan.runs()
    if only_spectra is not None:
        wanted = {(float(a), float(b)) for a, b in only_spectra}
        specs = [spec for spec in specs if (spec.a, spec.b) in wanted]
        if not specs:
            raise ValueError(f"only_spectra {sorted(wanted)} selects no run of the plan "
                             f"(its spectra: {plan.spectra})")
    run_converged_study(plan, store_dir, execution=execution, specs=specs)
    rows = study_rows(plan, collect_results(plan, store_dir), store_dir)
    prov = provenance(plan, command, time.perf_counter() - started)
    prov["runs_planned"] = len(plan.runs())
    prov["runs_in_csv"] = len(rows)
    write_study_csv(rows, out / CSV_NAME, provenance=prov)
    return rows, prov
