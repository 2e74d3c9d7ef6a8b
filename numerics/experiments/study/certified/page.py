"""The certified study's page and figures: the envelope, its certificates and the verdicts (rendering only).

Everything shown was measured by :func:`~numerics.experiments.study.certified.facts.measure` (the computing
pass); this module only writes it out (Markdown, the CSV through
:mod:`~numerics.experiments.study.certified.table`, the verdicts as JSON, the figures) and imports nothing
that trains, evaluates a model or runs Monte Carlo (``tests/test_render_imports.py``).
"""

from __future__ import annotations

import json


from numerics.io import write_together

from ..._markdown import fixed
from ...shipped import checkout_relative
from ...criteria import ALPHA_GRID, CERTIFICATE_SES, DOUBLING_SES, GAIN_LAW_MAX_CHI2_DOF, MIN_CHECKED_DEPTHS
from .formatting import (
    RECIPE_LABELS,
    alpha_text,
    checks_text,
    depth_list,
    contrast_text,
    find_contrast,
    fit_text,
    recipe_order,
    setting_label,
)
from .excess import EXCESS_FIGURE, excess_section
from ..figures import (draw_certified_figure, draw_excess_figure, draw_decomposition_figure, draw_recipe_figure,
                       draw_revised_figure)
from ..page import Section, render_page, written
from ..plan import Plan
from .revised import FACTS, revised_sections
from .table import csv_text
from .targets import HEADS_SETS, PREDICT_SAMPLES, targets_markdown
from .record import (FACTS_RECORD, SHIPPED_VERDICTS, VERDICTS, facts_text, read_facts, read_verdicts,
                     verdicts_record)

__all__ = ["SHIPPED_VERDICTS", "certified_markdown", "draw_certified_figure",
           "draw_recipe_figure", "read_verdicts", "render_certified", "verdicts_record"]

PAGE = "certified-study.md"
CSV = "certified-study.csv"
FIGURE = "figures/certified-study.png"
RECIPE_FIGURE = "figures/certified-recipes.png"
#: the terms of the package's answer (README.md, docs/index.md), defined where its evidence is: the revised page
GLOSSARY = (
    ("envelope `R*_L`", "the best loss found at depth L: per seed, the candidate with the least selection-set loss, "
                        "reported on an independent report set; mean over seeds"),
    ("REPRODUCED / CONTRADICTED / INCONCLUSIVE", "the fit-free contrast's bootstrap interval contains the value the "
     "α = 1 law (eq. 16) gives and bounds α / excludes it under every check / neither, or the checks below fail"),
    ("contrast `g_2/g_Lmax`", "the gains `g_L = R*_1 − R*_L` at L = 2 and at the deepest checked depth, a ratio that "
                              "depends on α only; its interval implies the **α interval**"),
    ("step-doubling check", "a depth passes when training its candidates for twice the steps lowers the envelope "
                            f"by at most {DOUBLING_SES:g} SE (`criteria.DOUBLING_SES`)"),
    ("depths it rests on", "the depths whose step-doubling check ran and passed; a verdict needs at least "
                           f"{MIN_CHECKED_DEPTHS} (`criteria.MIN_CHECKED_DEPTHS`)"),
    ("`U_L`", "the best model of depth L built by hand (L chosen heads and a gain, `theory.expressible`): an upper "
              "bound on the optimum"),
    ("`R*_∞`", "the infinite-mixture limit (`theory.mixture_limit`): a lower bound on every depth's optimum"),
    ("`A_L − C_L`", "the winners' layer disagreement of eq. (63), `R_L = C_L + (A_L − C_L)/L`; i.i.d. heads keep it "
                    "constant in L"),
)
REVISED_FIGURE = "figures/certified-revised.png"
#: the revised plan's figure of the winners' A_L and C_L (eq. 63, Fig. 6c/d)
DECOMPOSITION_FIGURE = "figures/certified-decomposition.png"
#: the page's title (the revised study is the second plan of the certified study)
TITLE = "Revised certified study (plan version 2): the best loss each depth reaches"


def _training_text(plan: Plan) -> str:
    """What each cell trains, as the Method section says it (U_L's starts, doubled and long caps where planned)."""
    text = (f"cold start at learning rates {list(plan.cold_rates)} for {plan.cold_steps} steps; the heads of B_L "
            f"(untrained, and trained at {list(plan.warm_rates)} for {plan.warm_steps} steps); the depth-L/2 winner "
            "with every layer duplicated (untrained, and perturbed then trained likewise)")
    if plan.expressible_rates or plan.diverse_rates:
        text += (f"; U_L's heads (untrained, and trained at {list(plan.expressible_rates)} for {plan.warm_steps} "
                 f"steps); diverse random forms of U_L's classes with U_L's gain, trained at {list(plan.diverse_rates)} "
                 f"for {plan.diverse_steps} steps; in every cell the candidates "
                 f"{', '.join(f'{s} lr={lr:g}' for s, lr in plan.doubled_kinds)} also at twice their caps (each "
                 "depth's step-doubling check); at "
                 + ", ".join(f"({a:g}, {b:g}) L = {L}" for a, b, L in plan.long_caps)
                 + f" also {', '.join(f'{s} lr={lr:g}' for s, lr in plan.long_kinds)} for "
                 f"{' and '.join(map(str, plan.long_steps))} steps")
    elif plan.doubling_spectra:
        text += (f"; at {', '.join(f'({a:g}, {b:g})' for a, b in plan.doubling_spectra)} every trained candidate "
                 "also with twice its cap (the step-doubling check)")
    return (text + f". The winner (the envelope `R*_L`) is chosen on one held-out set of {plan.select_size} contexts "
            f"and reported on an independent one of {plan.report_size}.")


def certified_markdown(summaries, plan: Plan, *, n_rows: int, command: str, checks=None,
                       rechecks=(), gaps=None, compute=None, cells_dir="docs/results/certified/cells", extra=()) -> str:
    """The docs page of the certified study (Markdown).

    It opens with the terms of the package's answer (:data:`GLOSSARY`) and ``extra``, then the verdicts, then
    the method. ``checks``: ``{setting: PredictionCheck}``; ``rechecks``: the failed nesting certificates
    between untrained heads, repeated in the population
    (:class:`~numerics.experiments.study.certified.statistics.HeadsRecheck`); ``gaps``: ``{setting:
    (SelectionGap per depth)}``, where single candidates beat the per-seed winners; ``compute``: the study's CPU
    time (:class:`~numerics.experiments.study.certified.targets.StudyCompute`), for the time target;
    ``cells_dir``: where the cells were read (named in the Method); ``extra``: lines placed before the verdicts
    (what the study measured, :func:`~numerics.experiments.study.certified.revised.revised_sections`).

    Examples
    --------
    >>> certified_markdown([], Plan(), n_rows=0, command="idepth study certified").startswith(f"# {TITLE}")
    True
    """
    # the evidence page: the answer's terms, defined before they are used, then what the study measured
    opening = [Section(TITLE, ("**Terms.** " + "; ".join(f"{term}: {meaning}" for term, meaning in GLOSSARY) + ".",),
                       level=1), *written(extra)]
    method = _method_section(plan, n_rows, command, cells_dir)
    if not summaries:
        return render_page([*opening, method, Section(paragraphs=("No setting has every depth done yet.",))])
    checks = checks or {}
    return render_page([
        *opening,
        Section("Verdicts on the paper's c/L law (α = 1)", table=(
            ("setting", "depths done", "step-doubling check", "verdict rests on L =", "`g_2/g_Lmax`, every depth done",
             "`(R_2 − R_16)/(R_1 − R_2)`", "gain-law α", "verdict", "reason"),
            [(setting_label(s.setting), f"{s.depths[0]}–{s.depths[-1]}", checks_text(s), depth_list(s.checked),
              contrast_text(find_contrast(s, "g2/gLmax")), contrast_text(find_contrast(s, "(R2-R16)/(R1-R2)")),
              fit_text(s), f"**{s.verdict}**", s.reason) for s in summaries])),
        Section(paragraphs=("The contrasts on every depth done include depths whose step-doubling check did not run "
                            "or failed: they describe the envelope as measured, they do not decide a verdict. Best "
                            "seed against mean over seeds (`g_2/g_Lmax`, every depth done):",), table=(
            ("setting", "mean over seeds", "best seed (chosen on the selection set)", "best seed per depth"),
            [(setting_label(s.setting), contrast_text(find_contrast(s, "g2/gLmax")),
              contrast_text(find_contrast(s, "g2/gLmax", "best seed")), ", ".join(map(str, s.best_seed_ids)))
             for s in summaries])),
        *_ranges_section(summaries),
        method,
        *_doubling_caveat(summaries),
        *written(targets_markdown(summaries, checks, plan, compute)),
        *_failures_section(summaries, rechecks),
        *_selection_section(summaries, gaps or {}),
        Section("Depth gains at the deepest depth done", ("Paired over the same contexts and seeds (± one "
                                                          "joint-bootstrap SE).",), (
            ("setting", "L_max", "envelope `R*_1 − R*_Lmax`", "heads `B_1 − B_Lmax`",
             "recipe `R_1 − R_Lmax` (cold lr=1e-3; that recipe's finding)"),
            [(setting_label(s.setting), s.depths[-1], f"{s.gain:+.4f} ± {s.gain_se:.4f}", f"{s.bound_gain:+.4f}",
              f"{s.recipe_gain:+.4f} ± {s.recipe_gain_se:.4f}") for s in summaries])),
        *_recipe_section(summaries),
        *_prediction_section(summaries, checks),
        *(part for s in summaries for part in _setting_sections(s, plan, checks.get(s.setting))),
        Section(figures=(("envelope, bound and recipe per setting", FIGURE),)),
    ])


def _method_section(plan: Plan, n_rows: int, command: str, cells_dir) -> Section:
    """How the cells were trained, how the verdicts are judged and what the certificates check."""
    return Section("Method", (
        f"Generated by `{command}` from the study's exported cells (`{checkout_relative(cells_dir)}/`); "
        f"{n_rows} candidates. The controlled softmax model at d = {plan.d}, N = {plan.N}, top-{plan.k}, "
        f"seeds {list(plan.seeds)}" + (f" (the second P and top-16: {list(plan.side_seeds)})" if plan.long_spectra
                                       or plan.top16_spectra else "") + ". Each (spectrum, P, depth, "
        "seed) trains, in lockstep on one batch stream: the " + _training_text(plan),
        "Statistics. A verdict rests only on the depths whose step-doubling check ran and passed "
        f"(`criteria.checked_depths`), and needs at least {MIN_CHECKED_DEPTHS} of them "
        "(`criteria.MIN_CHECKED_DEPTHS`); it is judged on a fit-free contrast, `g_2/g_Lmax` with gains "
        "`g_L = R*_1 − R*_L` and L_max the deepest checked depth, against its value under `R_L = L0 + c/L` "
        "(computed from eq. 16). Its interval is a bootstrap that redraws the report contexts, the seeds and the "
        "candidate selection (the selection set's per-context errors are not stored: the candidates' selection "
        "losses are redrawn around their stored means with the covariance the same models show on the report "
        "set); the central 95 % of the replicates, widened by t(0.975, seeds − 1)/z(0.975). Both contrasts are "
        "also shown on every depth done, checked or not, and for the best seed (per depth, the seed whose "
        "winner has the least selection-set loss) next to the mean over seeds. The gain-law fit "
        "`g_L = c (1 − L^-α)` (GLS over the joint bootstrap covariance, Student-t profile) is reported only where "
        f"χ²/dof ≤ {GAIN_LAW_MAX_CHI2_DOF:g}; an interval reaching the α grid's edge ({ALPHA_GRID[0]:g} or "
        f"{ALPHA_GRID[-1]:g}) is written unbounded. A CONTRADICTED verdict must also hold for the fit with "
        "diagonal weights and with Birge widening. `benchmarks/certified_coverage.py` measures how often the fit's "
        "interval covers a known α in studies simulated from a `c (1 − L^-α)` law with this envelope's noise; "
        "it cannot validate the intervals where that law does not describe the gains (χ²/dof well above 1), "
        "nor the contrasts' intervals.",
        "Certificates: **nesting** `R*_L ≤ R*_{L/2} + 2 SE` (eq. 60); **reachability** `R*_L ≤ B_L + 2 SE` "
        "(B_L: the untrained heads on the same contexts, an expressible loss); **doubling** the doubled caps "
        f"improve the envelope by less than {DOUBLING_SES:g} paired SE. A failed certificate at a depth a verdict "
        "rests on makes it INCONCLUSIVE. Certificates share their contexts and seeds, so their failures are not "
        "independent events and are not compared with a count expected by chance."))


def _setting_sections(s, plan: Plan, check) -> list[Section]:
    """One setting's envelope per depth: levels, the heads, predict_loss, winners, the recipe, certificates."""
    a, b, k, _, _, P = s.setting
    planned = len(plan.seeds_for(a, b, P, k))
    judged = ((f"Judged on {s.n_seeds} of the {planned} planned seeds (those with every planned depth done or, with "
               "fewer than two such, those of the depths done).",) if s.n_seeds < planned else ())
    return [
        Section(setting_label(s.setting), judged, (
            ("L", "`R*_L` (envelope)", "best seed", "B_L (same contexts)", "`R*_L − B_L`", "predict_loss / `R*_L` − 1",
             "winners (per seed)", "cold lr=1e-3", "certificates"),
            [(L, fixed(s.R.mean[i], s.R.se[i]), fixed(s.best_seed[i]) if s.best_seed else "–", fixed(s.B[i]),
              f"{s.R.mean[i] - s.B[i]:+.4f}", _deviation(check, i), ", ".join(s.winners[i]),
              fixed(s.recipe[i], s.recipe_se[i]),
              ", ".join(f"{c.name} {'✓' if c.passed else '✗'} ({c.excess:+.4f} vs {c.allowed:.4f})"
                        for c in s.certificates if c.depth == L))
             for i, L in enumerate(s.depths)])),
        Section(paragraphs=(f"GLS gain-law fit: χ² = {s.chi2:.2f} on {s.dof} degrees of freedom"
                            + ("." if s.fit_reported else f" (χ²/dof above {GAIN_LAW_MAX_CHI2_DOF:g}: its α is not "
                                                          "reported)."),)),
    ]


def _ranges_section(summaries) -> list[Section]:
    """The verdict within each of the theory's depth ranges (atomic, diffuse), per setting."""
    rows = [(s, r) for s in summaries for r in s.ranges]
    if not rows:
        return []
    crossovers = sorted({s.crossover for s, _ in rows})
    return [Section("Verdicts by depth range", (
             "The theory's best expressible loss U_L has two branches (`docs/results/expressible.md`): below the "
             f"crossover depth L_c (here L_c = {', '.join(map(str, crossovers))}: the first depth from which diverse "
             "heads win at every deeper depth) a few cosine temperatures are the best found and they saturate after "
             "a few heads; from L_c on, diverse heads follow the exchangeable law `plateau + c/L`. Each range gets "
             "its own verdict on α = 1: the atomic range on `g_2/g_Lmax` to its deepest depth, the diffuse range on "
             "one doubling's gain over the next, `(R_L − R_2L)/(R_2L − R_4L)`, which is `2^α` whatever the plateau. "
             "A range's verdict needs every depth of it done and its step-doubling check passed; CONTRADICTED also "
             "needs the best seed's interval to exclude the α = 1 value.",), (
        ("setting", "range", "depths", "contrast, mean over seeds", "best seed", "verdict", "reason"),
        [(setting_label(s.setting), r["range"], f"{r['depths'][0]}–{r['depths'][-1]}",
          _range_contrast(r, "mean over seeds"), _range_contrast(r, "best seed"), f"**{r['verdict']}**", r["reason"])
         for s, r in rows]))]


def _range_contrast(r: dict, estimate: str) -> str:
    found = [c for c in r["contrasts"] if c["estimate"] == estimate]
    if not found:
        return "–"
    c = found[0]
    if not c["resolved"]:
        return f"{c['value']:.3f}, unbounded (α = 1: {c['reference']:.3f})"
    return f"{c['value']:.3f} [{c['lo']:.3f}, {c['hi']:.3f}] (α = 1: {c['reference']:.3f})"


def _doubling_caveat(summaries) -> list[Section]:
    """A paragraph where the step-doubling check failed or never ran: those depths decide nothing."""
    failed = [(s.setting, L) for s in summaries for L in s.doubling_run if L not in s.checked]
    unchecked = [s for s in summaries if not s.doubling_run]
    if not failed and not unchecked:
        return []
    text = "**Convergence.** "
    if failed:
        where = "; ".join(f"{setting_label(setting)} at L = {L}" for setting, L in failed)
        text += (f"The step-doubling check fails at {where}: there, twice the plan's step cap still improves the "
                     "envelope, so those depths are not shown to have converged. ")
    if unchecked:
        text += (f"At {len(unchecked)} of {len(summaries)} settings the check never ran (no doubled candidates in "
                     "the plan). ")
    return [Section(paragraphs=(text + "No verdict rests on such a depth.",))]


def _failures_section(summaries, rechecks) -> list[Section]:
    """The failed certificates per kind, and the failures the population re-checks.

    The certificates of a setting share its report contexts and seeds, so their failures are not independent:
    no count expected by chance is computed.
    """
    certificates = [c for s in summaries for c in s.certificates]
    failed = [c for c in certificates if not c.passed]
    if not failed:
        return []
    intro = (f"{len(certificates)} certificates are checked; {len(failed)} fail. Certificates of one setting share "
             "its report contexts and seeds, so their failures are not independent events: no count expected by "
             "chance is given. A failed certificate at a depth a verdict rests on makes it INCONCLUSIVE.")
    rows = []
    for name in dict.fromkeys(c.name for c in certificates):
        kind = [c for c in certificates if c.name == name]
        rows.append((name, len(kind), sum(not c.passed for c in kind),
                     "; ".join(f"{setting_label(s.setting)}: L = {', '.join(str(c.depth) for c in s.failed if c.name == name)}"
                               for s in summaries if any(c.name == name for c in s.failed)) or "–"))
    sections = [Section("Failed certificates", (intro,), (("certificate", "checked", "failed", "where"), rows))]
    if rechecks:
        sections.append(Section(paragraphs=(
            "Where the envelope at L and at L/2 is, in every seed, the untrained heads of B_L, a failed nesting "
            "certificate compares two fixed functions and is repeated here on fresh contexts "
            f"({HEADS_SETS} × {PREDICT_SAMPLES}, paired: `theory.softmax_bounds.allocation_loss_difference`).",), table=(
            ("setting", "L", "report set: `R*_L − R*_{L/2}`", "population: `B_L − B_{L/2}` (same heads)",
             "report − population"),
            [(setting_label(r.setting), r.depth, f"{r.report:+.4f} ± {r.report_se:.4f}",
              f"{r.population:+.4f} ± {r.population_se:.4f}", f"{r.sigmas:+.1f} SE") for r in rechecks])))
    return sections


def _selection_section(summaries, gaps: dict) -> list[Section]:
    """Where one fixed candidate beats the envelope on the report set (the cost of the per-seed choice)."""
    if not gaps:
        return []
    intro = ("Each cell's winner is chosen on its own selection set and reported on an independent one, so the envelope "
             "is an unbiased report of the models chosen; where candidates are within the selection set's noise of each "
             "other, the choice can be the worse one. Per depth, the fixed candidate (one start, rate and cap in every "
             f"seed) that does best against the envelope on the report set: a gap above {CERTIFICATE_SES:g} SE "
             "(paired over the report contexts, the seeds' models fixed) means `R*_L` is below the envelope by about "
             "that much there. Each depth's best of several candidates is shown, so some gaps pass 2 SE by chance. The "
             "envelope, its certificates and the verdicts stay as selected: re-selecting on the report set would bring "
             "back the winner's curse.")
    rows = []
    for s in summaries:
        per_depth = [g for g in gaps.get(s.setting, ()) if g is not None]
        if not per_depth:
            continue
        worst = max(per_depth, key=lambda g: g.gap)
        flagged = ", ".join(str(g.depth) for g in per_depth if g.significant) or "none"
        rows.append((setting_label(s.setting), flagged, f"L = {worst.depth}, {worst.label}: "
                     f"{worst.gap:+.4f} ± {worst.se:.4f} ({worst.relative:+.1%})"))
    return [Section("The per-seed choice against single candidates", (intro,), (
        ("setting", "depths with a gap > 2 SE", "the largest gap: L, candidate, `R*_L − R_c` (relative)"), rows))]


def _deviation(check, i: int) -> str:
    """``predict_loss / R*_L − 1 ± SE`` at depth index ``i`` of a :class:`PredictionCheck` (``–`` without one)."""
    if check is None:
        return "–"
    return f"{check.deviation[i]:+.1%} ± {check.deviation_se[i]:.1%}"


def _prediction_section(summaries, checks: dict) -> list[Section]:
    """How far ``theory.predict_loss`` (B_L) is from the envelope: at L ≤ 4 and at the deeper depths done."""
    if not checks:
        return []
    intro = ("`theory.predict_loss(L, spectrum, attention='softmax', task='difficult', P=P, regime='heads')` (B_L, the "
             f"cosine-head prediction, {PREDICT_SAMPLES} contexts per set) against the envelope `R*_L`. The report set's own "
             "sampling error (the ± of `R*_L` below, common to every depth) would hide a deviation of a few per cent, so "
             "`R*_L` is estimated with a control variate: the paired gap `R*_L − B_L` on the report set plus the population "
             "loss of "
             f"the same heads on {HEADS_SETS} × {PREDICT_SAMPLES} fresh contexts (`theory.softmax_bounds.allocation_losses`). "
             "± is the SE of the ratio (prediction, heads and gap: independent draws).")
    rows = []
    for s in summaries:
        check = checks.get(s.setting)
        if check is None:
            continue
        cells = [_deviation(check, s.depths.index(L)) if L in s.depths else "–" for L in (1, 2, 4)]
        deep = [i for i, L in enumerate(s.depths) if L > 4]
        worst = max(deep, key=lambda i: abs(check.deviation[i])) if deep else None
        rows.append((setting_label(s.setting), *cells,
                     "–" if worst is None else f"{_deviation(check, worst)} ({s.depths[worst]})"))
    return [Section("`predict_loss` against the envelope", (intro,), (
        ("setting", "L = 1", "L = 2", "L = 4", "L > 4: the largest deviation (depth)"), rows))]


def _recipe_section(summaries) -> list[Section]:
    """The depth law (α, interval) of each training recipe beside the envelope's, per setting: each recipe's finding."""
    order = recipe_order(summaries)
    if not order:
        return []
    intro = ("α of `g_L = c (1 − L^-α)` fitted, as for the envelope, to each recipe's gains `R_1 − R_L` over the same "
             "depths, contexts and seeds (the lazy and equal-budget runs are trained on the certified study's sizes "
             "and evaluated on its report sets: `numerics.experiments.study.certified.contrasts`). What a recipe "
             "gives is that recipe's finding (kind \"contrast\"), not a verdict on the paper's claim, which is "
             "about the best loss each depth reaches (the envelope). An α is shown only where the law fits "
             f"(χ²/dof ≤ {GAIN_LAW_MAX_CHI2_DOF:g}); an interval at the grid's end ({ALPHA_GRID[0]:g} or "
             f"{ALPHA_GRID[-1]:g}) is written unbounded.")
    by_name = [{r.name: r for r in s.recipes} for s in summaries]
    return [Section("The depth law by training recipe: each recipe's finding", (intro,), (
        ("setting", "depths", *(RECIPE_LABELS.get(n, n) for n in order)),
        [(setting_label(s.setting), f"{s.depths[0]}–{s.depths[-1]}", *(alpha_text(named[n]) if n in named else "–"
                                                                 for n in order))
         for s, named in zip(summaries, by_name)]), (("α by training recipe, per setting", RECIPE_FIGURE),))]


def render_certified(out_dir, facts, plan: Plan, *, command: str, cells_dir) -> None:
    """Write ``certified-study.csv``, its page, figures and verdicts (JSON) into ``out_dir`` from ``facts``.

    ``facts``: what :func:`~numerics.experiments.study.certified.facts.measure` measured (rendered here, nothing
    computed); ``cells_dir``: where the cells were read (named in the Method). The files replace the old ones
    together, so a failure leaves the old page, table and verdicts as they were.

    Notes
    -----
    No example: it writes files (``tests/test_certified.py``).
    """
    record = facts_text(facts)  # the page renders the facts as its record holds them
    facts = read_facts(json.loads(record), rows=facts.rows, errors=facts.errors, summaries=facts.summaries)
    rows, summaries, revised, excess = facts.rows, list(facts.summaries), facts.revised, facts.excess
    extra = revised_sections(revised) + excess_section(excess)
    page = certified_markdown(summaries, plan, n_rows=len(rows), command=command, checks=facts.checks,
                              rechecks=facts.rechecks, gaps=facts.gaps, compute=facts.compute, cells_dir=cells_dir,
                              extra=extra)
    files = {CSV: csv_text(rows, provenance={"command": command, "plan": json.loads(json.dumps(plan.to_dict()))}),
             PAGE: page, VERDICTS: json.dumps(verdicts_record(summaries, plan, command=command), indent=1,
                                              allow_nan=True) + "\n", FACTS_RECORD: record}
    if revised is not None:
        files[FACTS] = json.dumps(revised, indent=1, allow_nan=True) + "\n"
    if summaries:
        files[FIGURE] = lambda path: draw_certified_figure(summaries, path)
        if any(s.recipes for s in summaries):
            files[RECIPE_FIGURE] = lambda path: draw_recipe_figure(summaries, path)
    if revised is not None and revised["envelope"]:
        files[REVISED_FIGURE] = lambda path: draw_revised_figure(revised, path)
        files[DECOMPOSITION_FIGURE] = lambda path: draw_decomposition_figure(revised, path)
    if excess:
        files[EXCESS_FIGURE] = lambda path: draw_excess_figure(excess, path)
    write_together(out_dir, files)  # the page, its table, verdicts and figures replace the old ones together
