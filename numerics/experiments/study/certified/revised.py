"""The sections of what the certified study (:data:`~numerics.experiments.study.plan.REVISED_PLAN`)
measures, written from its facts record (rendering only; the record is computed by
:func:`~numerics.experiments.study.certified.facts.revised_facts`).

Four questions, each answered from the exported cells (and, for the first, an independent draw):

* **the L = 2 step at population scale**: ``R*_1 − R*_2`` on the study's 2^16-context report set against the
  same step of ``U_L``'s heads on fresh contexts (independent of the study's);
* **the envelope against U_L, depth by depth**: every cell also evaluates ``U_L``'s heads untrained, so
  ``R*_L − U_L`` is paired on the same report contexts;
* **long caps**: at the plan's ``long_caps`` cells, the cold and ``U_L`` starts trained for 24k and 48k
  steps against ``U_L`` (does any depth-4-32 model go below it?);
* **coverage and cost**: which spectra and depths of the plan are done, and the CPU time of each part;
* **a second report set**: every winner again on twice the report set's contexts, drawn independently: does the
  report set read like another draw, per spectrum pooled over its cells and depth by depth?
* **the envelope's decomposition** (Fig. 6c/d): ``R*_L = C_L + (A_L − C_L)/L`` (eq. 63) of the winners, so
  the c/L law's premise (``A_L − C_L`` and ``C_L`` constant in L) is seen on the best models found.

Every ± of a paired difference is one standard error over the report set's blocks of the seed-averaged
difference (the blocks are the same contexts in every cell of a spectrum, so depths and seeds are paired); it
measures the context sampling of these trained models, not the spread of training over seeds (shown beside
it). The decomposition's ± is the SE over seeds (the spread of training).
"""

from __future__ import annotations

from ..._markdown import markdown_table
from ...criteria import AGREEMENT_SIGMAS, DOUBLING_SES, MIN_COMPLETE_SEEDS

__all__ = ["FACTS", "revised_sections"]

#: the facts file a study with U_L's starts writes beside its page (the answer reads it)
FACTS = "certified-revised.json"


def _partial_text(coverage: dict, n_seeds: int) -> str:
    """`` (L = 128 at 2 of 3 seeds)`` for the depths some seeds have done, or ``""``."""
    parts = [f"L = {L} at {n} of {n_seeds} seeds" for L, n in coverage.get("partial", [])]
    return f" ({'; '.join(parts)})" if parts else ""


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


def _second_report_section(rows: list) -> list[str]:
    """The winners on a second, independent report set: per spectrum pooled over its cells, then per depth."""
    off = [r for r in rows if not r["pooled"]["agrees"]]
    depths = sorted({d["depth"] for r in rows for d in r["depths"]})
    lines = ["### The winners on a second report set", "",
             f"Every winner's weights again, on {rows[0]['contexts']} fresh contexts of a seed of their own per spectrum "
             "(the same contexts in every cell of it, as on the report set). The report set and the second set are "
             "independent, so the SE of a difference adds theirs in quadrature. Pooled over every cell of a spectrum, "
             f"the report set reads more than {AGREEMENT_SIGMAS:g} SE from the second set at {len(off)} of {len(rows)} "
             "spectra" + (": " + ", ".join(f"({r['a']:g}, {r['b']:g}) by {r['pooled']['difference'][0]:+.4f} "
                                             f"(z = {r['pooled']['z']:+.2f})" for r in off) if off else "") + ".", ""]
    lines += markdown_table(("spectrum", "report set", "second set", "report − second", "z"),
                            [(f"({r['a']:g}, {r['b']:g})", *(f"{p[0]:.4f} ± {p[1]:.4f}" for p in (
                                r["pooled"]["report"], r["pooled"]["second"])),
                              "{:+.4f} ± {:.4f}".format(*r["pooled"]["difference"]), f"{r['pooled']['z']:+.2f}")
                             for r in rows]) + [""]
    lines += ["Per depth, report set minus second set (z). A report set's offset is shared by every depth of its "
              "spectrum (the same contexts), so it moves the levels, not the depth-to-depth comparisons the verdicts "
              "rest on.", ""]
    lines += markdown_table(("spectrum", *(f"L = {L}" for L in depths)),
                            [(f"({r['a']:g}, {r['b']:g})", *(_depth_cell(r, L) for L in depths)) for r in rows]) + [""]
    return lines


def _depth_cell(row: dict, depth: int) -> str:
    """One depth's report-minus-second difference of a spectrum, with its z (— where the depth is not done)."""
    found = [d for d in row["depths"] if d["depth"] == depth]
    return f"{found[0]['difference'][0]:+.4f} ({found[0]['z']:+.1f})" if found else "—"


def revised_sections(facts: dict | None) -> list[str]:
    """The page sections of a study with U_L's starts (Markdown lines) from :func:`~numerics.experiments.study.certified.facts.revised_facts`; none without facts.

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
    if facts.get("second_report"):
        lines += _second_report_section(facts["second_report"])
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
