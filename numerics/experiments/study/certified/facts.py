"""The certified study's computing pass: everything its page shows, measured once (:func:`measure`).

It reads the exported cells, summarises each setting (the joint bootstrap of
:func:`~numerics.experiments.study.certified.statistics.summarise`), and computes what needs more than the
cells: ``theory.predict_loss`` against the envelope and the failed nesting certificates between untrained
heads repeated in the population (Monte Carlo), the L = 2 step at population scale, the winners' decomposition
(a forward pass of each winner), the long caps, the cost, the selection gaps and the bracket's rows. Every
Monte-Carlo value and every forward pass is cached (:func:`numerics.experiments.cache.cached`) beside the cells.

The rendering pass (:mod:`~numerics.experiments.study.certified.page`, :mod:`.revised`, :mod:`.targets`,
:mod:`.excess`'s section, the figures) reads what this returns and imports nothing of this module
(``tests/test_render_imports.py``); :func:`write_certified` runs the two passes in order.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...criteria import AGREEMENT_SIGMAS, agrees, mean_se, ses_word
from .cells import SUMMARY_COLUMNS, cell_files, read_cell
from .contrasts import collect_contrasts
from .excess import excess_rows
from ..plan import CELL_FORMAT, Plan, shipped_U
from .selection import selection_gaps
from ..curves import CurveSummary
from .statistics import HeadsRecheck, PredictionCheck, judged_cells, summarise
from .record import Facts
from .table import collect
from .targets import HEADS_SETS, PLAN_SEEDS, PREDICT_SAMPLES, StudyCompute
from .verdict import long_picks

__all__ = ["DECOMPOSITION_CONTEXTS", "Facts", "PairedDifference", "decomposition_code", "measure",
           "population_step", "prediction_cache_dir", "prediction_check", "prediction_code",
           "recheck_untrained_nesting", "revised_facts", "study_compute", "write_certified"]

#: report contexts on which a winner's A_L, C_L are computed where its cell did not store them
DECOMPOSITION_CONTEXTS = 8192


@dataclass(frozen=True)
class PairedDifference:
    """A seed-averaged paired difference on the report set's blocks: value, SE and the per-seed values.

    Examples
    --------
    >>> d = PairedDifference.of([np.array([1.0, 1.2, 0.8]), np.array([1.1, 1.0, 0.9])])
    >>> round(d.value, 3), d.seeds
    (1.0, 2)
    """

    value: float
    se: float
    per_seed: tuple

    @classmethod
    def of(cls, per_seed_blocks) -> "PairedDifference":
        blocks = np.mean(np.asarray(per_seed_blocks, dtype=np.float64), axis=0)
        return cls(*mean_se(blocks), tuple(float(np.mean(b)) for b in per_seed_blocks))

    @property
    def seeds(self) -> int:
        return len(self.per_seed)

    def word(self, sigmas: float = AGREEMENT_SIGMAS) -> str:
        """``below``, ``above`` or ``indistinguishable`` (beyond ``sigmas`` SE or not); ``equal`` if identically 0."""
        if self.value == 0 and self.se == 0:
            return "equal"
        return ses_word(self.value, self.se, sigmas)


def prediction_check(summary: CurveSummary, plan, *, n_samples: int = PREDICT_SAMPLES,
                     n_sets: int = HEADS_SETS, cache_dir=None, counts: dict | None = None) -> PredictionCheck:
    """``predict_loss`` against the envelope of ``summary`` at every depth (:class:`PredictionCheck`).

    ``plan`` (a :class:`~numerics.experiments.study.plan.Plan`) fixes the heads: those its
    oracle start wrote into the weights (:func:`~numerics.experiments.study.certified.run.oracle_allocation`,
    fitted on ``plan.bound_contexts`` contexts). The fresh contexts have a stream of their own, fixed by the
    setting. ``cache_dir``: the Monte-Carlo values are read from / written to it
    (:func:`numerics.experiments.cache.cached`, keyed on the code of ``theory``'s B_L and heads' losses);
    ``counts`` counts them.

    Notes
    -----
    No example: it runs the bounds' Monte Carlo (``tests/test_certified.py``).
    """
    from theory import PowerLawSpectrum, predict_loss
    from theory.predict import INTERVAL_Z
    from theory.softmax_bounds import allocation_losses

    from ...cache import cached

    a, b, k, d, N, P = summary.setting
    spectrum = PowerLawSpectrum(a, b, d)
    inputs = {"setting": list(summary.setting), "depths": list(summary.depths), "n_samples": n_samples,
              "n_sets": n_sets, "bound_depths": list(plan.depths), "bound_contexts": plan.bound_contexts}

    def compute() -> dict:
        prediction = predict_loss(summary.depths, spectrum, attention="softmax", task="difficult", P=P, k=k,
                                  n_samples=n_samples, regime="heads")
        half_width = np.asarray(prediction.upper) - np.asarray(prediction.loss)
        heads = _heads(summary.setting, plan, summary.depths)
        means, ses = allocation_losses(heads, spectrum, P, k, n_contexts=n_samples, n_seeds=n_sets,
                                       rng=_fresh_rng(summary.setting, 1))
        return {"predicted": [float(v) for v in prediction.loss],
                "predicted_se": [float(v) / INTERVAL_Z for v in half_width],
                "heads": [float(v) for v in means], "heads_se": [float(v) for v in ses]}

    values = cached(cache_dir, "prediction", inputs, compute, code=prediction_code(), counts=counts)
    reach = {c.depth: c for c in summary.certificates if c.name == "reachability"}
    return PredictionCheck(
        depths=summary.depths, predicted=tuple(values["predicted"]), predicted_se=tuple(values["predicted_se"]),
        heads=tuple(values["heads"]), heads_se=tuple(values["heads_se"]),
        gap=tuple(reach[L].excess for L in summary.depths), gap_se=tuple(reach[L].se for L in summary.depths),
    )


def _heads(setting: tuple, plan, depths) -> list:
    """The heads the plan's oracle start wrote into the weights at each of ``depths`` (``HeadAllocation``)."""
    from .run import oracle_heads

    a, b, k, d, N, P = setting
    return [oracle_heads(a, b, k, d, P, L, plan.depths, plan.bound_contexts) for L in depths]


def prediction_code() -> str:
    """The digest of the code behind a cached prediction: ``predict_loss``'s B_L branch (not its other regimes or
    its argument checks), the heads' population losses and the plan's head allocation.

    Examples
    --------
    >>> prediction_code() == prediction_code()
    True
    """
    from theory.predict import _softmax_heads
    from theory.softmax_bounds import allocation_losses

    from ...cache import function_digest

    return function_digest(_softmax_heads, allocation_losses, _heads, _fresh_rng)


def _fresh_rng(setting: tuple, role: int) -> np.random.Generator:
    """Fresh contexts of a setting, neither its report nor its selection set: one stream per ``role``."""
    from ..plan import eval_seed

    a, b, k, _, _, P = setting
    return np.random.default_rng([eval_seed("report", a, b, k, P), role])


def recheck_untrained_nesting(summary: CurveSummary, rows, plan, *, n_samples: int = PREDICT_SAMPLES,
                              n_sets: int = HEADS_SETS, cache_dir=None, counts: dict | None = None) -> tuple:
    """Repeat in the population each failed nesting certificate of ``summary`` between untrained heads.

    Where the envelope at L and at L/2 is, in every seed, the untrained oracle start (the heads of B_L
    written into the weights), the certificate compares two fixed functions, so it can be repeated on as
    many fresh contexts as wanted. A report-set failure the population reverses is a fluctuation of the
    report set, not a failure of training; the verdict rule still counts it (where the depth is checked). Returns
    :class:`HeadsRecheck` per such certificate.

    Notes
    -----
    No example: it runs the heads' Monte Carlo (``tests/test_certified.py``).
    """
    from theory import PowerLawSpectrum
    from theory.softmax_bounds import allocation_loss_difference

    from ...cache import cached, function_digest

    members = [r for r in rows if r.setting == summary.setting]
    _, seeds = judged_cells(members, summary.planned_depths)  # the summary's own
    selected = {(r.depth, r.seed): r for r in members if r.selected}

    def untrained_heads(L):
        return all(selected[L, s].start == "oracle" and selected[L, s].steps == 0 for s in seeds)

    a, b, k, d, N, P = summary.setting
    out = []
    for c in summary.failed:
        if c.name != "nesting" or not (untrained_heads(c.depth) and untrained_heads(c.depth // 2)):
            continue
        def compute(depth=c.depth) -> dict:
            deeper, shallower = _heads(summary.setting, plan, (depth, depth // 2))
            diff, se = allocation_loss_difference(deeper, shallower, PowerLawSpectrum(a, b, d), P, k,
                                                  n_contexts=n_samples, n_seeds=n_sets,
                                                  rng=_fresh_rng(summary.setting, 2 + depth))
            return {"difference": float(diff), "se": float(se)}

        inputs = {"setting": list(summary.setting), "depth": c.depth, "n_samples": n_samples, "n_sets": n_sets,
                  "bound_depths": list(plan.depths), "bound_contexts": plan.bound_contexts}
        values = cached(cache_dir, "nesting-recheck", inputs, compute, code=function_digest(compute), counts=counts)
        out.append(HeadsRecheck(summary.setting, c.depth, c.excess, c.se, values["difference"], values["se"]))
    return tuple(out)


def population_step(a: float, b: float, plan: Plan, *, contexts: int = 1 << 17) -> tuple[float, float]:
    """``U_1 − U_2`` of ``U_L``'s heads on ``contexts`` fresh contexts (paired) and its SE.

    The contexts are drawn from their own seed (fixed by the spectrum), independent of the study's
    selection and report sets; the heads are :meth:`theory.expressible.ExpressibleLoss.forms` at L = 1, 2.

    References
    ----------
    Paper eq. (12) (the loss), eqs. (59)-(60) (the average of heads).

    Examples
    --------
    >>> step, se = population_step(0.0, 0.0, Plan(), contexts=4096)
    >>> bool(0 < step < 0.2 and se < 0.02)
    True
    """
    from theory import PowerLawSpectrum
    from theory.head_families import draw_contexts, form_reads

    expressible = shipped_U(a, b, plan.d, plan.P, plan.k, needed_by="the population step")
    seed = int.from_bytes(hashlib.sha256(f"revised population step a={a!r} b={b!r}".encode()).digest()[:4], "big")
    ctx = draw_contexts(PowerLawSpectrum(a, b, plan.d), plan.P, plan.k, contexts, np.random.default_rng(seed))
    errors = []
    for depth in (1, 2):
        forms, gain = expressible.forms(depth)
        prediction = gain * form_reads(forms, ctx).mean(axis=1)
        errors.append((prediction - ctx.target) ** 2)
    diff = errors[0] - errors[1]
    return mean_se(diff)


def _cached_step(a: float, b: float, plan: Plan, contexts: int, cache_dir, counts) -> tuple[float, float]:
    """:func:`population_step`, cached under the setting, the contexts and the heads it evaluates (U_L's at
    L = 1, 2: new shipped heads give a new key) and its code, so a page regenerates it identically anywhere."""
    from ...cache import cached, function_digest

    expressible = shipped_U(a, b, plan.d, plan.P, plan.k, needed_by="the population step")
    heads = hashlib.sha256()
    for depth in (1, 2):
        forms, gain = expressible.forms(depth)
        heads.update(np.ascontiguousarray(forms, dtype=np.float64).tobytes() + np.float64(gain).tobytes())
    key = {"a": a, "b": b, "d": plan.d, "P": plan.P, "k": plan.k, "contexts": int(contexts),
           "heads": heads.hexdigest()}
    value = cached(cache_dir, "population-step", key, lambda: list(population_step(a, b, plan, contexts=contexts)),
                   code=function_digest(population_step), counts=counts)
    return value[0], value[1]


def _by_cell(rows) -> dict:
    """``{(a, b, P, k): {(depth, seed): [row]}}``."""
    out: dict = {}
    for row in rows:
        out.setdefault((row.a, row.b, row.P, row.k), {}).setdefault((row.depth, row.seed), []).append(row)
    return out


def _pick(members, test):
    """The row of least selection-set loss among ``members`` that pass ``test`` (ties: the first), or None."""
    return min((row for row in members if test(row)), key=lambda row: row.R_select, default=None)


def _candidate(row) -> str:
    """A row's candidate in a few words: its start, untrained or its rate and cap."""
    if row.steps == 0:
        return f"{row.start} (untrained)"
    return f"{row.start} lr={row.learning_rate:g} S={row.steps}" + (" doubled" if row.doubled else "")


def _is_heads(row) -> bool:
    return row.start == "expressible" and row.steps == 0


def _coverage(plan: Plan, cells: dict) -> list[dict]:
    """Per spectrum of the plan: the depths done (every seed's cell), those not run yet, among these the
    ``partial`` ones, ``[depth, seeds done]``, where some seeds' cells are done, and ``complete_seeds``, how
    many seeds have every depth done."""
    out = []
    for a, b in plan.spectra:
        have = cells.get((float(a), float(b), plan.P, plan.k), {})
        seeds = {L: sum((L, s) in have for s in plan.seeds) for L in plan.depths}
        done = [L for L in plan.depths if seeds[L] == len(plan.seeds)]
        out.append({"a": float(a), "b": float(b), "done": done, "todo": [L for L in plan.depths if L not in done],
                    "partial": [[L, seeds[L]] for L in plan.depths if 0 < seeds[L] < len(plan.seeds)],
                    "complete_seeds": sum(all((L, s) in have for L in plan.depths) for s in plan.seeds)})
    return out


def _difference(d: PairedDifference) -> dict:
    return {"value": d.value, "se": d.se, "per_seed": list(d.per_seed), "word": d.word()}


def decomposition_code() -> str:
    """The digest of the code behind a cached decomposition: the cell's read-back and decomposition, and the
    softmax models' forward passes (reached through the cell's model name, so named here).

    Examples
    --------
    >>> decomposition_code() == decomposition_code()
    True
    """
    from numerics.models import nonlinear, nonlinear_rms

    from ...cache import function_digest
    from .run import cell_decomposition

    return function_digest(cell_decomposition, nonlinear.forward, nonlinear_rms.forward)


def _decomposition(cells_dir, cell_hash: str, contexts: int, cache_dir, counts: dict | None = None) -> dict:
    """The winner's A_L, C_L of one cell (:func:`~.run.cell_decomposition`), cached under its hash and the code
    that computes it (the decomposition and the models' forward passes)."""
    from ...cache import cached
    from .run import cell_decomposition

    return cached(cache_dir, "decomposition", {"cell": cell_hash, "contexts": int(contexts)},
                  lambda: cell_decomposition(cells_dir, cell_hash, contexts), code=decomposition_code(), counts=counts)


def second_seed(cell) -> int:
    """The seed of the second report set of ``cell``'s setting (spectrum, ``k``, ``P``), independent of the selection
    and report sets' (:func:`~numerics.experiments.study.plan.eval_seed`).

    Examples
    --------
    >>> from numerics.experiments.study.plan import REVISED_PLAN
    >>> cell = REVISED_PLAN.cell(0.0, 0.0, 64, 1, 0)
    >>> second_seed(cell) not in (cell.eval_seed("selection"), cell.eval_seed("report"))
    True
    """
    text = f"certified-study second report a={float(cell.a)!r} b={float(cell.b)!r} k={int(cell.k)} P={int(cell.P)}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


def second_report(cells_dir, winners: dict, contexts: int) -> dict:
    """One setting's winners re-evaluated on a second report set of ``contexts`` contexts, independent of the others.

    ``winners``: ``{(depth, seed): cell hash}`` of the setting's exported cells (their winners' weights). The set is
    drawn once, with the setting's :func:`second_seed`, and is the same for every cell, so depths and seeds stay paired on it as on the report set. Returns ``contexts``,
    ``depths`` (``{str(L): [mean, SE]}``, the seed mean of the winners' loss, eq. 12) and ``pooled`` (``[mean,
    SE]`` over every cell: how far the whole set reads from the report set). SEs are over blocks of
    ``contexts / 1024`` contexts (at least 1).

    Notes
    -----
    No example: it needs exported cells (``tests/test_certified_revised.py``).

    References
    ----------
    Paper eq. (12).
    """
    from numerics.models import get_model
    from numerics.train import evaluation_batch

    from .run import context_errors
    from ..plan import Candidate, Cell

    batch, blocks = None, {}
    for (depth, seed), cell_hash in sorted(winners.items()):
        record, arrays = read_cell(Path(cells_dir) / f"{cell_hash}.npz")
        cell = Cell.from_dict(record["config"])
        if batch is None:  # every cell of the setting shares its data law, so the one set
            template = cell.train_config(Candidate("cold", 1e-3, 1), None)
            batch = evaluation_batch(type(template)(**{**template.to_dict(), "eval_size": int(contexts),
                                                       "eval_seed": second_seed(cell)}))
        weights = {name.removeprefix("winner_"): v for name, v in arrays.items() if name.startswith("winner_")}
        errors = context_errors(get_model(cell.model), weights, batch)
        blocks[depth, seed] = errors.reshape(min(1024, errors.size), -1).mean(axis=1)
    depths = {str(L): list(mean_se(np.mean([b for (d, _), b in blocks.items() if d == L], axis=0)))
              for L in sorted({d for d, _ in blocks})}
    return {"contexts": int(contexts), "depths": depths, "pooled": list(mean_se(np.mean(list(blocks.values()), axis=0)))}


def second_report_code() -> str:
    """The digest of the code behind a cached :func:`second_report`: it, the set's seed, the per-context errors and
    the softmax models' forward passes (reached through the cell's model name, so named here).

    Examples
    --------
    >>> second_report_code() == second_report_code()
    True
    """
    from numerics.models import nonlinear, nonlinear_rms

    from ...cache import function_digest
    from .run import context_errors

    return function_digest(second_report, second_seed, context_errors, nonlinear.forward, nonlinear_rms.forward)


def _second_report(a: float, b: float, plan: Plan, cells_dir, winners: dict, shipped: dict, cache_dir,
                   counts) -> dict:
    """:func:`second_report` of one setting (cached under its cells and the code that evaluates them) beside the
    report set's values of the same winners (``shipped``: ``{(depth, seed): block errors}``): per depth and pooled,
    the report set minus the second set, independent sets, so their SEs add in quadrature."""
    from ...cache import cached

    contexts = 2 * plan.report_size
    key = {"a": a, "b": b, "d": plan.d, "P": plan.P, "k": plan.k, "contexts": contexts,
           "cells": [f"{L}:{s}:{h}" for (L, s), h in sorted(winners.items())]}
    second = cached(cache_dir, "second-report", key, lambda: second_report(cells_dir, winners, contexts),
                    code=second_report_code(), counts=counts)

    def compare(report: list, other: list) -> dict:
        difference, se = report[0] - other[0], float(np.hypot(report[1], other[1]))
        return {"report": report, "second": other, "difference": [difference, se], "z": difference / se,
                "agrees": bool(agrees(report[0], report[1], other[0], other[1]))}

    report = {L: list(mean_se(np.mean([e for (d, _), e in shipped.items() if d == L], axis=0)))
              for L in sorted({d for d, _ in shipped})}
    return {"a": a, "b": b, "contexts": contexts,
            "depths": [{"depth": L, **compare(report[L], second["depths"][str(L)])} for L in report],
            "pooled": compare(list(mean_se(np.mean(list(shipped.values()), axis=0))), second["pooled"])}


def _over_seeds(values) -> dict:
    """Mean over seeds, its SE over seeds (the spread of training), and the per-seed values."""
    values = np.asarray(values, dtype=np.float64)
    value, se = mean_se(values)
    return {"value": value, "se": se, "per_seed": values.tolist()}


def revised_facts(rows, errors, plan: Plan, cells_dir, *, population_contexts: int = 1 << 17,
                  decomposition_contexts: int = DECOMPOSITION_CONTEXTS, cache_dir=None,
                  counts: dict | None = None, long_checks: dict | None = None,
                  compute: StudyCompute | None = None) -> dict:
    """What a study with U_L's starts measured, as a JSON-able dict (None for a plan without them: nothing to compare).

    Keys: ``plan`` (sizes and seeds), ``coverage`` (per spectrum, depths done and not run yet), ``cpu_hours``
    (per kind of candidate: :attr:`~numerics.experiments.study.certified.targets.StudyCompute.hours_by_kind` of
    ``compute``, default :func:`study_compute` of the cells), ``steps`` (per spectrum with L = 1, 2 done: the
    envelope's step, the population step of ``U_L``'s heads on ``population_contexts`` fresh contexts, z),
    ``envelope`` (per spectrum and depth done: ``R*_L − U_L`` paired), ``long`` (per long-cap candidate: it minus
    ``U_L``, paired), ``long_doubling`` (per long-cap cell: the best run at half the longest cap minus the best at it, paired, and whether the depth's
    long runs' step-doubling certificate passed: ``long_checks`` maps ``(a, b, P, k, depth)`` to that
    :class:`~numerics.experiments.study.certified.statistics.Certificate` (``pair = "long"``), the one the
    verdicts read; None where the statistics did not judge the depth) and ``decomposition``
    (per spectrum and depth done: the winners' ``A_L``, ``C_L`` and ``A_L − C_L``, eq. 63, over seeds, on
    ``decomposition_contexts`` contexts drawn with the report seed, the same in every cell; cached in ``cache_dir``,
    ``counts`` as :func:`numerics.experiments.cache.cached` keeps them) and ``second_report`` (per spectrum: the
    winners on a second, independent report set of twice the report set's contexts, :func:`second_report`, against
    the report set, per depth and pooled over the spectrum's cells).

    Notes
    -----
    No example: it needs exported cells (``tests/test_certified_revised.py``).
    """
    if not (plan.expressible_rates or plan.diverse_rates):
        return None
    cells = _by_cell(errors.rows)
    facts = {"plan": {"version": CELL_FORMAT, "select_size": plan.select_size, "report_block": plan.report_block,
                      "seeds": list(plan.seeds), "depths": list(plan.depths), "long_steps": list(plan.long_steps)},
             "coverage": _coverage(plan, cells),
             "cpu_hours": (compute or study_compute(cells_dir, None, plan)).hours_by_kind, "population_contexts":
             population_contexts, "steps": [], "envelope": [], "long": [], "long_doubling": [], "decomposition": [],
             "second_report": []}
    for (a, b, P, k), members in sorted(cells.items()):
        where, winners_at, shipped = {"a": a, "b": b}, {}, {}
        seeds = [s for s in plan.seeds if (1, s) in members and (2, s) in members]
        if len(seeds) == len(plan.seeds):
            d = PairedDifference.of([errors.of(_pick(members[1, s], lambda r: r.selected))
                                     - errors.of(_pick(members[2, s], lambda r: r.selected)) for s in seeds])
            pop, pop_se = _cached_step(a, b, plan, population_contexts, cache_dir, counts)
            z = (d.value - pop) / float(np.hypot(d.se, pop_se))
            facts["steps"].append({**where, "study": _difference(d), "population": pop, "population_se": pop_se,
                                   "z": z, "agrees": bool(agrees(d.value, d.se, pop, pop_se))})
        for L in plan.depths:
            seeds = [s for s in plan.seeds if (L, s) in members]
            if len(seeds) < len(plan.seeds):
                continue
            heads = [_pick(members[L, s], _is_heads) for s in seeds]
            if any(h is None for h in heads):
                continue
            winners = [_pick(members[L, s], lambda r: r.selected) for s in seeds]
            winners_at.update({(L, s): w.cell for s, w in zip(seeds, winners)})
            shipped.update({(L, s): errors.of(w) for s, w in zip(seeds, winners)})
            parts = [_decomposition(cells_dir, w.cell, decomposition_contexts, cache_dir, counts) for w in winners]
            facts["decomposition"].append({**where, "depth": L, "contexts": min(p["contexts"] for p in parts),
                                           "context_se": {"A": float(np.mean([p["A_L_se"] for p in parts])),
                                                          "C": None if L == 1 else float(np.mean(
                                                              [p["C_L_se"] for p in parts]))},
                                           "A": _over_seeds([p["A_L"] for p in parts]),
                                           "C": None if L == 1 else _over_seeds([p["C_L"] for p in parts]),
                                           "A_minus_C": None if L == 1 else _over_seeds(
                                               [p["A_L"] - p["C_L"] for p in parts])})
            d = PairedDifference.of([errors.of(w) - errors.of(h) for w, h in zip(winners, heads)])
            facts["envelope"].append({**where, "depth": L, "gap": _difference(d),
                                      "winners": [_candidate(w) for w in winners]})
            kinds = sorted({(r.start, r.learning_rate, r.steps) for r in members[L, seeds[0]]
                            if r.steps in plan.long_steps and not r.doubled})
            for start, lr, steps in kinds:
                picks = [_pick(members[L, s], lambda r: (r.start, r.learning_rate, r.steps) == (start, lr, steps))
                         for s in seeds]
                d = PairedDifference.of([errors.of(p) - errors.of(h) for p, h in zip(picks, heads)])
                facts["long"].append({**where, "depth": L, "start": start, "learning_rate": lr, "steps": steps,
                                      "gap": _difference(d)})
            best = long_picks([members[L, s] for s in seeds])
            if best:  # the longest cap against its half, over the starts run at both: the certificate's runs
                (half, at_half), (full, at_full) = best.items()
                d = PairedDifference.of([errors.of(h) - errors.of(f) for h, f in zip(at_half, at_full)])
                check = (long_checks or {}).get((a, b, P, k, L))
                facts["long_doubling"].append({**where, "depth": L, "half": half, "full": full, "gain": _difference(d),
                                               "certificate": None if check is None else {
                                                   "excess": check.excess, "se": check.se, "allowed": check.allowed},
                                               "converged": None if check is None else check.passed})
        if winners_at:  # every winner again, on a second report set: does the report set read like another?
            facts["second_report"].append(_second_report(a, b, plan, cells_dir, winners_at, shipped, cache_dir, counts))
    return facts


def _part(config: dict, plan) -> int:
    """Which part of :func:`study_compute` a cell's ``config`` belongs to (an index into its labels)."""
    if plan.is_main(config["a"], config["b"], config["P"], config["k"]):
        return 0 if int(config["seed"]) in tuple(plan.seeds)[:PLAN_SEEDS] else 2
    return 1 if int(config["P"]) == plan.long_P else 3


def study_compute(cells_dir, contrasts_dir, plan) -> StudyCompute:
    """The CPU time of the exported cells (by part) and contrast runs (:class:`StudyCompute`).

    Notes
    -----
    No example: it reads exported cells (``tests/test_certified.py``).
    """
    labels = (f"Table 1 spectra at P = {plan.P}, seeds {', '.join(map(str, tuple(plan.seeds)[:PLAN_SEEDS]))}",
              f"the second P = {plan.long_P}", "Table 1 spectra, the later seeds", "top-16")
    runs, core = [0] * len(labels), [0.0] * len(labels)
    seen: dict = {}  # (a, b, k, P, depth) -> (CPU times of every seed, how many of them are plan cells)
    hours = {"every cell's candidates": 0.0, "doubled caps (the convergence check)": 0.0, "long caps": 0.0}
    share, kind = SUMMARY_COLUMNS.index("step_share"), {c: SUMMARY_COLUMNS.index(c) for c in ("doubled", "steps")}
    for path in cell_files(cells_dir):
        record, arrays = read_cell(path)
        config, cpu = record["config"], float(record["metrics"]["cpu_time"])
        summary = arrays["summary"]  # each candidate's share of the steps, by kind
        doubled = summary[:, kind["doubled"]] > 0
        long = ~doubled & np.isin(summary[:, kind["steps"]], plan.long_steps) & (len(plan.long_steps) > 0)
        share_doubled, share_long = float(summary[doubled, share].sum()), float(summary[long, share].sum())
        hours["doubled caps (the convergence check)"] += cpu / 3600 * share_doubled
        hours["long caps"] += cpu / 3600 * share_long
        hours["every cell's candidates"] += cpu / 3600 * (1 - share_doubled - share_long)
        i = _part(config, plan)
        runs[i] += 1
        core[i] += cpu
        key = tuple(config[name] for name in ("a", "b", "k", "P", "depth"))
        times, in_plan = seen.get(key, ([], 0))
        seen[key] = (times + [cpu], in_plan + (i < 2))
    parts = [(label, n, c) for label, n, c in zip(labels, runs, core)]
    floor = sum(min(times) * in_plan for times, in_plan in seen.values())
    if contrasts_dir is not None:
        records = [read_cell(path)[0] for path in cell_files(contrasts_dir)]
        parts.append(("contrast runs (lazy, equal budget)", len(records),
                      sum(float(r["metrics"]["cpu_time"]) for r in records)))
    return StudyCompute(tuple(parts), floor_core_seconds=floor, hours_by_kind=hours)




def prediction_cache_dir(cells_dir) -> Path:
    """Where the Monte-Carlo predictions and forward passes are cached: ``predictions/`` beside the exported cells.

    Examples
    --------
    >>> prediction_cache_dir("docs/results/certified/cells").as_posix()
    'docs/results/certified/predictions'
    """
    return Path(cells_dir).parent / "predictions"


def _silent(message: str) -> None:
    """No progress output."""


def measure(plan: Plan, cells_dir, *, contrasts_dir=None, predictions: bool = True, cache_dir="default",
            progress=_silent, contrast_depth: int | None = None) -> Facts:
    """Measure everything the page of the exported cells in ``cells_dir`` shows (:class:`Facts`), computing each once.

    ``predictions``: compare ``theory.predict_loss`` (B_L) with the envelope at every depth and repeat failed
    nesting certificates between untrained heads in the population (Monte Carlo per setting). Monte-Carlo values
    and forward passes are cached in ``cache_dir`` (default :func:`prediction_cache_dir`; None: not cached); with
    ``predictions`` the entries this measurement did not use are removed from it, so the cache holds exactly
    what the page reads. ``contrasts_dir``: the exported contrast runs, whose α the page shows beside the
    envelope's. ``progress``: called with one line per step. ``contrast_depth``: the deepest depth of the
    descriptive contrasts (:func:`~numerics.experiments.study.certified.statistics.summarise`).

    Raises
    ------
    ValueError
        If ``cells_dir`` holds no exported cell (naming it).

    Notes
    -----
    No example: it reads exported cells (``tests/test_certified.py``).
    """
    cache_dir = prediction_cache_dir(cells_dir) if cache_dir == "default" else cache_dir
    progress(f"reading the exported cells in {cells_dir}")
    rows, errors = collect(cells_dir)
    if not rows:  # an empty page would read as a study with nothing done: refuse, naming where it looked
        raise ValueError(f"no exported cells in {Path(cells_dir)} (a certified study's cells/ directory: "
                         "docs/results/certified/cells or docs/results/certified-revised/cells in a checkout)")
    contrasts = collect_contrasts(contrasts_dir) if contrasts_dir is not None else []
    progress(f"{len(rows)} candidates, {len(contrasts)} contrast runs; the statistics of each setting (bootstrap)")
    summaries = summarise(rows, errors, planned_depths=plan.depths, contrasts=contrasts, contrast_depth=contrast_depth)
    counts: dict = {}
    checks, rechecks = None, ()
    if predictions:
        progress(f"predict_loss against the envelope at {len(summaries)} settings (Monte Carlo, cached in {cache_dir})")
        checks = {s.setting: prediction_check(s, plan, cache_dir=cache_dir, counts=counts) for s in summaries}
        rechecks = tuple(r for s in summaries for r in recheck_untrained_nesting(s, rows, plan, cache_dir=cache_dir,
                                                                                 counts=counts))
        progress(f"predictions: {counts.get('cached', 0)} read from the cache, {counts.get('computed', 0)} computed")
    gaps = {s.setting: selection_gaps(s, rows, errors) for s in summaries}
    compute = study_compute(cells_dir, contrasts_dir, plan)
    if plan.expressible_rates or plan.diverse_rates:
        progress("the revised plan's facts: the L = 2 step on fresh contexts, the winners' A_L and C_L (cached)")
    long_checks = {(s.setting[0], s.setting[1], s.setting[5], s.setting[2], c.depth): c for s in summaries
                   for c in s.certificates if c.pair == "long"}
    revised = revised_facts(rows, errors, plan, cells_dir, cache_dir=cache_dir, counts=counts, long_checks=long_checks,
                            compute=compute)
    excess = tuple(excess_rows(summaries, plan)) if revised is not None else ()  # the revised page's bracket
    if predictions and cache_dir is not None:  # every cached value the page reads was used: the rest is stale
        for path in Path(cache_dir).glob("*.json"):
            if path.name not in counts.get("used", ()):
                path.unlink()
    return Facts(rows, errors, tuple(summaries), checks, rechecks, gaps, compute, revised, excess)


def write_certified(out_dir, cells_dir, plan: Plan, *, command: str, predictions: bool = True,
                    contrasts_dir=None, progress=_silent, contrast_depth: int | None = None,
                    cache_dir="default") -> tuple[list, list]:
    """The two passes: :func:`measure` the cells, then write their page, table, verdicts and figures into
    ``out_dir`` (:func:`~numerics.experiments.study.certified.page.render_certified`). Returns ``(rows, summaries)``.

    The arguments are :func:`measure`'s, with ``command``, the command named on the page.

    Notes
    -----
    No example: it writes files (``tests/test_certified.py``).
    """
    from .page import render_certified

    facts = measure(plan, cells_dir, contrasts_dir=contrasts_dir, predictions=predictions, cache_dir=cache_dir,
                    progress=progress, contrast_depth=contrast_depth)
    progress(f"writing {out_dir}")
    render_certified(out_dir, facts, plan, command=command, cells_dir=cells_dir)
    return list(facts.rows), list(facts.summaries)
