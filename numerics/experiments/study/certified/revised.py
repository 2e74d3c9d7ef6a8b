"""What the certified study (:data:`~numerics.experiments.study.plan.REVISED_PLAN`) measures.

Four questions, each answered from the exported cells (and, for the first, an independent draw):

* **the L = 2 step at population scale**: ``R*_1 − R*_2`` on the study's 2^16-context report set against the
  same step of ``U_L``'s heads on fresh contexts (independent of the study's);
* **the envelope against U_L, depth by depth**: every cell also evaluates ``U_L``'s heads untrained, so
  ``R*_L − U_L`` is paired on the same report contexts;
* **long caps**: at the plan's ``long_caps`` cells, the cold and ``U_L`` starts trained for 24k and 48k
  steps against ``U_L`` (does any depth-4-32 model go below it?);
* **coverage and cost**: which spectra and depths of the plan are done, and the CPU time of each part;
* **the envelope's decomposition** (Fig. 6c/d): ``R*_L = C_L + (A_L − C_L)/L`` (eq. 63) of the winners, so
  the c/L law's premise (``A_L − C_L`` and ``C_L`` constant in L) is seen on the best models found.

Every ± of a paired difference is one standard error over the report set's blocks of the seed-averaged
difference (the blocks are the same contexts in every cell of a spectrum, so depths and seeds are paired); it
measures the context sampling of these trained models, not the spread of training over seeds (shown beside
it). The decomposition's ± is the SE over seeds (the spread of training).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from ..._markdown import markdown_table
from ...criteria import AGREEMENT_SIGMAS, DOUBLING_SES, MIN_COMPLETE_SEEDS, agrees, mean_se, ses_word
from .cells import cell_files, read_cell
from ..plan import CELL_FORMAT, Plan, shipped_U
from .run import SUMMARY_COLUMNS
from .verdict import long_pairs

__all__ = ["FACTS", "PairedDifference", "population_step", "revised_facts", "revised_sections"]

#: the facts file a study with U_L's starts writes beside its page (the answer reads it)
FACTS = "certified-revised.json"
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

    def text(self) -> str:
        return f"{self.value:+.4f} ± {self.se:.4f}"

    def word(self, sigmas: float = AGREEMENT_SIGMAS) -> str:
        """``below``, ``above`` or ``indistinguishable`` (beyond ``sigmas`` SE or not); ``equal`` if identically 0."""
        if self.value == 0 and self.se == 0:
            return "equal"
        return ses_word(self.value, self.se, sigmas)


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


def _by_cell(rows, errors) -> dict:
    """``{(a, b, P, k): {(depth, seed): [(row, report blocks)]}}``."""
    out: dict = {}
    for row, values in zip(errors.rows, errors.values):
        out.setdefault((row.a, row.b, row.P, row.k), {}).setdefault((row.depth, row.seed), []).append((row, values))
    return out


def _pick(members, test):
    found = [(row, v) for row, v in members if test(row)]
    return min(found, key=lambda m: m[0].R_select) if found else None


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


def _partial_text(coverage: dict, n_seeds: int) -> str:
    """`` (L = 128 at 2 of 3 seeds)`` for the depths some seeds have done, or ``""``."""
    parts = [f"L = {L} at {n} of {n_seeds} seeds" for L, n in coverage.get("partial", [])]
    return f" ({'; '.join(parts)})" if parts else ""


def _cost(cells_dir, plan: Plan) -> dict:
    """CPU hours per part: the candidates every cell trains, the doubled caps, the long caps."""
    col = SUMMARY_COLUMNS.index("step_share")
    parts = {"every cell's candidates": 0.0, "doubled caps (the convergence check)": 0.0, "long caps": 0.0}
    for path in cell_files(cells_dir):
        record, arrays = read_cell(path)
        cpu = float(record["metrics"]["cpu_time"]) / 3600
        summary = arrays["summary"]
        doubled = summary[:, SUMMARY_COLUMNS.index("doubled")] > 0
        steps = summary[:, SUMMARY_COLUMNS.index("steps")]
        long = ~doubled & np.isin(steps, plan.long_steps) & (len(plan.long_steps) > 0)
        share_doubled, share_long = float(summary[doubled, col].sum()), float(summary[long, col].sum())
        parts["doubled caps (the convergence check)"] += cpu * share_doubled
        parts["long caps"] += cpu * share_long
        parts["every cell's candidates"] += cpu * (1 - share_doubled - share_long)
    return parts


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


def _over_seeds(values) -> dict:
    """Mean over seeds, its SE over seeds (the spread of training), and the per-seed values."""
    values = np.asarray(values, dtype=np.float64)
    value, se = mean_se(values)
    return {"value": value, "se": se, "per_seed": values.tolist()}


def revised_facts(rows, errors, plan: Plan, cells_dir, *, population_contexts: int = 1 << 17,
                  decomposition_contexts: int = DECOMPOSITION_CONTEXTS, cache_dir=None,
                  counts: dict | None = None, long_checks: dict | None = None) -> dict:
    """What a study with U_L's starts measured, as a JSON-able dict (None for a plan without them: nothing to compare).

    Keys: ``plan`` (sizes and seeds), ``coverage`` (per spectrum, depths done and not run yet), ``cpu_hours``
    (per part), ``steps`` (per spectrum with L = 1, 2 done: the envelope's step, the population step of
    ``U_L``'s heads on ``population_contexts`` fresh contexts, z), ``envelope`` (per spectrum and depth done:
    ``R*_L − U_L`` paired), ``long`` (per long-cap candidate: it minus ``U_L``, paired), ``long_doubling`` (per
    long-cap cell: the best run at half the longest cap minus the best at it, paired, and whether the depth's
    long runs' step-doubling certificate passed: ``long_checks`` maps ``(a, b, P, k, depth)`` to that
    :class:`~numerics.experiments.study.certified.statistics.Certificate` (``pair = "long"``), the one the
    verdicts read; None where the statistics did not judge the depth) and ``decomposition``
    (per spectrum and depth done: the winners' ``A_L``, ``C_L`` and ``A_L − C_L``, eq. 63, over seeds, on
    ``decomposition_contexts`` contexts drawn with the report seed, the same in every cell; cached in ``cache_dir``,
    ``counts`` as :func:`numerics.experiments.cache.cached` keeps them).

    Notes
    -----
    No example: it needs exported cells (``tests/test_certified_revised.py``).
    """
    if not (plan.expressible_rates or plan.diverse_rates):
        return None
    cells = _by_cell(rows, errors)
    facts = {"plan": {"version": CELL_FORMAT, "select_size": plan.select_size, "report_block": plan.report_block,
                      "seeds": list(plan.seeds), "depths": list(plan.depths), "long_steps": list(plan.long_steps)},
             "coverage": _coverage(plan, cells), "cpu_hours": _cost(cells_dir, plan), "population_contexts":
             population_contexts, "steps": [], "envelope": [], "long": [], "long_doubling": [], "decomposition": []}
    for (a, b, P, k), members in sorted(cells.items()):
        where = {"a": a, "b": b}
        seeds = [s for s in plan.seeds if (1, s) in members and (2, s) in members]
        if len(seeds) == len(plan.seeds):
            d = PairedDifference.of([_pick(members[1, s], lambda r: r.selected)[1]
                                     - _pick(members[2, s], lambda r: r.selected)[1] for s in seeds])
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
            parts = [_decomposition(cells_dir, w[0].cell, decomposition_contexts, cache_dir, counts) for w in winners]
            facts["decomposition"].append({**where, "depth": L, "contexts": min(p["contexts"] for p in parts),
                                           "context_se": {"A": float(np.mean([p["A_L_se"] for p in parts])),
                                                          "C": None if L == 1 else float(np.mean(
                                                              [p["C_L_se"] for p in parts]))},
                                           "A": _over_seeds([p["A_L"] for p in parts]),
                                           "C": None if L == 1 else _over_seeds([p["C_L"] for p in parts]),
                                           "A_minus_C": None if L == 1 else _over_seeds(
                                               [p["A_L"] - p["C_L"] for p in parts])})
            d = PairedDifference.of([w[1] - h[1] for w, h in zip(winners, heads)])
            facts["envelope"].append({**where, "depth": L, "gap": _difference(d),
                                      "winners": [_candidate(w[0]) for w in winners]})
            kinds = sorted({(r.start, r.learning_rate, r.steps) for r, _ in members[L, seeds[0]]
                            if r.steps in plan.long_steps and not r.doubled})
            for start, lr, steps in kinds:
                picks = [_pick(members[L, s], lambda r: (r.start, r.learning_rate, r.steps) == (start, lr, steps))
                         for s in seeds]
                d = PairedDifference.of([p[1] - h[1] for p, h in zip(picks, heads)])
                facts["long"].append({**where, "depth": L, "start": start, "learning_rate": lr, "steps": steps,
                                      "gap": _difference(d)})
            pairs = long_pairs([r for r, _ in members[L, seeds[0]]])
            if pairs:  # the longest cap against its half, over the starts run at both: the certificate's runs
                full = max(steps for _, _, steps in pairs)
                half, starts = full // 2, {(start, lr) for start, lr, _ in pairs}

                def at_cap(r, cap):
                    return r.steps == cap and not r.doubled and (r.start, r.learning_rate) in starts

                best = {cap: [_pick(members[L, s], lambda r, cap=cap: at_cap(r, cap)) for s in seeds]
                        for cap in (half, full)}
                d = PairedDifference.of([a[1] - b[1] for a, b in zip(best[half], best[full])])
                check = (long_checks or {}).get((a, b, P, k, L))
                facts["long_doubling"].append({**where, "depth": L, "half": half, "full": full, "gain": _difference(d),
                                               "certificate": None if check is None else {
                                                   "excess": check.excess, "se": check.se, "allowed": check.allowed},
                                               "converged": None if check is None else check.passed})
    return facts


def _certificate_text(c: dict | None) -> str:
    return "–" if c is None else f"{c['excess']:+.4f} ± {c['se']:.4f} (≤ {c['allowed']:.4f})"


def _text(d: dict) -> str:
    return f"{d['value']:+.4f} ± {d['se']:.4f}"


def _seeds(d: dict) -> str:
    return ", ".join(f"{v:+.4f}" for v in d["per_seed"])


def _over_seeds_text(d: dict | None) -> str:
    return "–" if d is None else f"{d['value']:.4f} ± {d['se']:.4f}"


def _decomposition_section(rows: list) -> list[str]:
    """The winners' A_L, C_L and A_L − C_L by spectrum and depth, and how far A_L − C_L moves with the depth."""
    contexts = sorted({r["contexts"] for r in rows})
    lines = ["### The envelope's decomposition (Fig. 6c/d)", "",
             "`R*_L = C_L + (A_L − C_L)/L` (eq. 63): `A_L` is the mean loss of the winner's layers taken one by one, "
             "`C_L` the mean cross term of two different layers. The paper's c/L law is this identity with `A_L − C_L` "
             "and `C_L` the same at every depth; where they move with L, `R*_L − plateau` is not c/L. Mean over seeds "
             f"± SE over seeds (the spread of training), on {' or '.join(map(str, contexts))} contexts drawn with the report "
             "set's seed per cell; "
             "the last column is the levels' own sampling error over those contexts (the same contexts at every depth "
             "and seed of a spectrum, so the depth-to-depth changes are far tighter than it).", ""]
    lines += ["![the winners' C_L and A_L − C_L per depth, per spectrum](figures/certified-decomposition.png)", ""]
    moves = []
    for spectrum in sorted({(r["a"], r["b"]) for r in rows}):
        gaps = [(r["depth"], r["A_minus_C"]["value"]) for r in rows if (r["a"], r["b"]) == spectrum and r["A_minus_C"]]
        if len(gaps) >= 2:
            (_, low), (_, high) = min(gaps, key=lambda g: g[1]), max(gaps, key=lambda g: g[1])
            moves.append(f"({spectrum[0]:g}, {spectrum[1]:g}): {low:.3f}–{high:.3f} over L = {gaps[0][0]}–{gaps[-1][0]}")
    if moves:
        lines += ["`A_L − C_L` across the depths done (L ≥ 2): " + "; ".join(moves) + ".", ""]
    lines += markdown_table(("spectrum", "L", "`A_L`", "`C_L`", "`A_L − C_L`", "`(A_L − C_L)/L`",
                             "context SE of `A_L`, `C_L`"),
                            [(f"({r['a']:g}, {r['b']:g})", r["depth"], _over_seeds_text(r["A"]), _over_seeds_text(r["C"]),
                              _over_seeds_text(r["A_minus_C"]),
                              "–" if r["A_minus_C"] is None else f"{r['A_minus_C']['value'] / r['depth']:.4f}",
                              f"{r['context_se']['A']:.4f}, "
                              + ("–" if r["context_se"]["C"] is None else f"{r['context_se']['C']:.4f}"))
                             for r in rows]) + [""]
    return lines


def revised_sections(facts: dict | None) -> list[str]:
    """The page sections of a study with U_L's starts (Markdown lines) from :func:`revised_facts`; none without facts.

    Notes
    -----
    No example: it needs a study's facts (``tests/test_certified_revised.py``).
    """
    if not facts:
        return []
    plan = facts["plan"]
    lines = ["## What the revised plan measured (version 2)", "",
             f"Plan version 2: selection and report sets of {plan['select_size']} contexts each (report losses stored "
             f"as means of {plan['report_block']}-context blocks, the same contexts in every cell of a spectrum); "
             f"seeds {plan['seeds']}. Every ± below is one SE over those blocks of the seed-averaged paired "
             "difference: the context sampling of these trained models; the per-seed values show the spread of "
             "training.", "",
             "Coverage (a depth is done when every seed's cell is):", ""]
    lines += markdown_table(("spectrum", "depths done", "depths not run yet"),
                            [(f"({c['a']:g}, {c['b']:g})", ", ".join(map(str, c["done"])) or "none",
                              (", ".join(map(str, c["todo"])) or "none")
                              + _partial_text(c, len(plan["seeds"]))) for c in facts["coverage"]]) + [""]
    missing = [c for c in facts["coverage"] if c["todo"]]
    if missing:
        # the rule of statistics.judged_cells: judged on the complete seeds alone where enough seeds are complete
        alone = [c for c in missing if c.get("partial") and c.get("complete_seeds", 0) >= MIN_COMPLETE_SEEDS]
        lines += ["Not done at every seed yet: " + "; ".join(
            f"({c['a']:g}, {c['b']:g}) at L = {', '.join(map(str, c['todo']))}" for c in missing)
            + ". The sections below say nothing about those depths, except where "
            + f"{MIN_COMPLETE_SEEDS} or more seeds have every depth done: this page's verdicts judge such a spectrum "
            + "on those seeds alone (" + (", ".join(f"({c['a']:g}, {c['b']:g})" for c in alone) or "none now") + ").",
            ""]
    hours = facts["cpu_hours"]
    lines += ["CPU hours per part (from the cells' own CPU time, split by each candidate's share of the steps):", ""]
    lines += markdown_table(("part", "CPU hours"), [(name, f"{h:.2f}") for name, h in hours.items()]
                            + [("total", f"{sum(hours.values()):.2f}")]) + [""]
    if facts["steps"]:
        lines += ["### The L = 2 step at population scale", "",
                  "`R*_1 − R*_2`: the envelope's step on the study's report set (mean over seeds); beside it the same "
                  f"step of U_L's heads on {facts['population_contexts']} fresh contexts of their own seed (an "
                  "independent estimate of the same step where the envelope at L = 1 and 2 is U_L's heads, which the next "
                  "table shows per spectrum); z of their difference; "
                  f"agreement within {AGREEMENT_SIGMAS:g} SE.", ""]
        lines += markdown_table(
            ("spectrum", "`R*_1 − R*_2` (study)", "per seed", "`U_1 − U_2` (fresh contexts)", "z", "within 2 SE"),
            [(f"({r['a']:g}, {r['b']:g})", _text(r["study"]), _seeds(r["study"]),
              f"{r['population']:+.4f} ± {r['population_se']:.4f}", f"{r['z']:+.2f}",
              "agrees" if r["agrees"] else "differs") for r in facts["steps"]]) + [""]
    if facts["envelope"]:
        words = [r["gap"]["word"] for r in facts["envelope"]]
        lines += ["### The envelope against U_L, depth by depth", "",
                  "![the envelope and the long-cap runs against U_L, per spectrum](figures/certified-revised.png)", "",
                  f"`R*_L − U_L` on the same report contexts (U_L: its heads untrained, a candidate of every cell). Of "
                  f"{len(words)} spectrum-depth pairs done, the envelope is more than {AGREEMENT_SIGMAS:g} SE "
                  f"below U_L at {words.count('below')}, above it at {words.count('above')} (above: the selection, "
                  "on its own set, preferred a trained candidate that the report set finds worse), and identical to it "
                  f"(the winner in every seed is U_L's heads, untrained) at {words.count('equal')}.", ""]
        lines += markdown_table(("spectrum", "L", "`R*_L − U_L`", "per seed", "winners (per seed)", "envelope vs U_L"),
                                [(f"({r['a']:g}, {r['b']:g})", r["depth"], _text(r["gap"]), _seeds(r["gap"]),
                                  ", ".join(r["winners"]), f"**{r['gap']['word']}**") for r in facts["envelope"]])
        lines += [""]
    if facts.get("decomposition"):
        lines += _decomposition_section(facts["decomposition"])
    if facts["long"]:
        below = [r for r in facts["long"] if r["gap"]["word"] == "below"]
        lines += ["### Long caps: does any depth-4-32 model go below U_L?", "",
                  "Each long-cap candidate against U_L's heads on the same contexts. "
                  + (f"{len(below)} of {len(facts['long'])} go more than {AGREEMENT_SIGMAS:g} SE below U_L: "
                     + "; ".join(f"{r['start']} lr={r['learning_rate']:g} S={r['steps']} at ({r['a']:g}, {r['b']:g}), "
                                 f"L = {r['depth']} ({_text(r['gap'])})" for r in below) + "."
                     if below else f"None of {len(facts['long'])} goes more than {AGREEMENT_SIGMAS:g} SE below U_L."),
                  ""]
        lines += markdown_table(("spectrum", "L", "candidate", "steps", "candidate − U_L", "per seed", "vs U_L"),
                                [(f"({r['a']:g}, {r['b']:g})", r["depth"], f"{r['start']} lr={r['learning_rate']:g}",
                                  r["steps"], _text(r["gap"]), _seeds(r["gap"]), f"**{r['gap']['word']}**")
                                 for r in facts["long"]]) + [""]
    if facts.get("long_doubling"):
        lines += ["Are the long runs converged? Per long-cap cell, the best run (chosen on the selection set) at the "
                  "half cap minus the best at the full cap, paired over the report contexts (± their SE, the seeds' "
                  "models fixed). Converged: the long runs' step-doubling certificate, as the verdicts read it (the "
                  "envelope holds these runs; a depth is checked only where each of its doubling certificates "
                  "passes): the same difference with the joint bootstrap's SE over contexts and seeds, at most "
                  f"{DOUBLING_SES:g} SE (and the round-off allowance).", ""]
        lines += markdown_table(("spectrum", "L", "caps", "best(half) − best(full)", "per seed",
                                 "certificate: difference ± SE (allowed)", "converged"),
                                [(f"({r['a']:g}, {r['b']:g})", r["depth"], f"{r['half']} → {r['full']}",
                                  _text(r["gain"]), _seeds(r["gain"]), _certificate_text(r.get("certificate")),
                                  {True: "yes", False: "**no**"}.get(r["converged"], "not judged"))
                                 for r in facts["long_doubling"]]) + [""]
    return lines
