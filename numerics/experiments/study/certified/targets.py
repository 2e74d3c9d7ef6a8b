"""What the certified study set out to reach, measured on its own cells (the page's "Targets" section).

The targets: at (0, 0) the envelope's first depth gain reaches the heads' (``R*_1 − R*_2 ≥ B_1 − B_2``
within one paired SE); nesting (eq. 60) holds at every depth of every Table 1 spectrum; no verdict
rests on a depth whose step-doubling check did not run or whose certificate failed; ``theory.predict_loss`` (B_L)
is within 3 % of R*_L at L = 1, 2, 4; and the three-seed plan (the Table 1 spectra and the second P)
runs in three hours on two cores. Each is stated as measured, met or not; none changes a verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..._markdown import markdown_table
from ...criteria import FIRST_STEP_SES, HOURS_TARGET, PREDICTION_TARGET, Verdict, at_most, exceeds
from ..curves import spectrum_label

__all__ = ["CORES", "HEADS_SETS", "PLAN_SEEDS", "PREDICT_SAMPLES", "PREDICTION_DEPTHS", "StudyCompute", "targets_markdown"]

#: the depths at which ``predict_loss`` is held to :data:`~numerics.experiments.criteria.PREDICTION_TARGET`
PREDICTION_DEPTHS = (1, 2, 4)
#: Monte-Carlo contexts per set of ``theory.predict_loss`` and of the heads' population loss
PREDICT_SAMPLES = 16384
#: independent sets of fresh contexts on which the study's heads are evaluated (the control variate's anchor)
HEADS_SETS = 8
#: the cores the wall-clock target :data:`~numerics.experiments.criteria.HOURS_TARGET` is stated for
CORES = 2
#: seeds of the Table 1 spectra the time target counts (the plan's later seeds are extra power)
PLAN_SEEDS = 3


@dataclass(frozen=True)
class StudyCompute:
    """CPU time (process time of the workers, s) of the study's exported runs, by part.

    ``parts``: ``((label, runs, core_seconds), ...)``; the first two parts are the three-seed plan the
    time target counts. Process time grows when other jobs share the cores (caches, the sibling
    hyperthread), so ``floor_core_seconds`` also prices each of the plan's cells at the least CPU time
    any seed of its setting and depth took: the plan on a machine running nothing else. ``hours_by_kind``: the
    cells' CPU hours by kind of candidate (every cell's, the doubled caps, the long caps), each candidate's share of
    the steps.

    Examples
    --------
    >>> c = StudyCompute((("a", 2, 7200.0), ("b", 1, 3600.0), ("c", 1, 99.0)), floor_core_seconds=9000.0)
    >>> c.plan_core_seconds, c.plan_hours, c.floor_hours
    (10800.0, 1.5, 1.25)
    """

    parts: tuple
    floor_core_seconds: float = float("nan")
    hours_by_kind: dict = field(default_factory=dict)

    @property
    def plan_core_seconds(self) -> float:
        return sum(core for _, _, core in self.parts[:2])

    @property
    def plan_hours(self) -> float:
        """Wall-clock hours of the three-seed plan with every core busy throughout (a lower bound)."""
        return self.plan_core_seconds / 3600.0 / CORES

    @property
    def floor_hours(self) -> float:
        """The same at the least CPU time seen per setting and depth."""
        return self.floor_core_seconds / 3600.0 / CORES


def _mark(met: bool) -> str:
    return "met" if met else "**not met**"


def targets_markdown(summaries, checks: dict, plan, compute: StudyCompute | None) -> list[str]:
    """The page's "Targets" section: each target, what the study measured, met or not.

    ``checks``: ``{setting: PredictionCheck}`` (none: the prediction target is not shown); ``compute``:
    the study's CPU time (none: the time target is not shown).

    Examples
    --------
    >>> from numerics.experiments.study.plan import Plan
    >>> targets_markdown([], {}, Plan(), None)
    []
    """
    main = [s for s in summaries if plan.is_main(s.setting[0], s.setting[1], s.setting[5], s.setting[2])]
    if not main:
        return []
    lines = ["## Targets", "",
             f"What the study set out to reach at the Table 1 spectra (P = {plan.P}, top-{plan.k}), as measured. A target "
             "not met changes no verdict: the certificates and the gain law decide those.", ""]
    rows = []
    origin = [s for s in main if s.setting[:2] == (0.0, 0.0) and math.isfinite(s.first_shortfall)]
    for s in origin:
        short, se = s.first_shortfall, s.first_shortfall_se
        rows.append((f"(0, 0): R*_1 − R*_2 ≥ B_1 − B_2 − {FIRST_STEP_SES:g} paired SE",
                     f"(B_1 − B_2) − (R*_1 − R*_2) = {short:+.4f} ± {se:.4f}", _mark(at_most(short, se, FIRST_STEP_SES))))
    others = [s for s in main if s not in origin and exceeds(s.first_shortfall, s.first_shortfall_se, FIRST_STEP_SES)]
    rows.append(("the same at the other Table 1 spectra: stated", f"more than {FIRST_STEP_SES:g} SE short at "
                 f"{', '.join(spectrum_label(*s.setting[:2]) for s in others) or 'none'}", "–"))
    nesting = [(s, c.depth) for s in main for c in s.failed if c.name == "nesting"]
    where = ", ".join(f"{spectrum_label(*s.setting[:2])} at L = {L}" for s, L in nesting)
    rows.append(("nesting at every depth of every Table 1 spectrum",
                 "fails at " + where if nesting else "holds at every depth", _mark(not nesting)))
    # a verdict rests on the depths whose step-doubling check ran and passed (``CurveSummary.checked``); a
    # failed certificate there (nesting, reachability) must have made it INCONCLUSIVE
    unchecked = [(s, L) for s in main for L in s.checked if L not in s.doubling_run]
    misjudged = [s for s in main if s.verdict != Verdict.INCONCLUSIVE and any(c.depth in s.checked for c in s.failed)]
    text = "; ".join(f"{spectrum_label(*s.setting[:2])}: "
                     f"{', '.join(f'{c.name} at L = {c.depth}' for c in s.failed)} failed, "
                     f"verdict {s.verdict} on L = {', '.join(map(str, s.checked)) or 'none'}"
                     for s in main if s.failed) or "every certificate passes"
    rows.append(("no verdict rests on a depth whose step-doubling check did not run or whose certificate failed",
                 text, _mark(not unchecked and not misjudged)))
    rows += _prediction_rows(main, checks)
    if compute is not None:
        rows.append((f"the three-seed plan (first two parts below) in ≤ {HOURS_TARGET:g} h on {CORES} cores",
                     f"{compute.plan_core_seconds:,.0f} core-s as run: ≥ {compute.plan_hours:.1f} h; each cell at the "
                     f"least CPU time of its setting and depth: {compute.floor_core_seconds:,.0f} core-s, ≥ "
                     f"{compute.floor_hours:.1f} h", _mark(compute.floor_hours <= HOURS_TARGET)))
    lines += markdown_table(("target", "measured", ""), rows)
    if compute is not None:
        lines += ["", "CPU time of the exported runs (process time of the workers; wall-clock hours with every core "
                  "busy, a lower bound). Process time grows when other jobs share the cores, as they did for some "
                  "waves; the least CPU time of a setting and depth over its seeds prices the plan on a quiet "
                  "machine, and decides the target.", ""]
        lines += markdown_table(("part", "runs", "core-s", "h on 2 cores"),
                                [(label, runs, f"{core:,.0f}", f"{core / 3600 / CORES:.2f}")
                                 for label, runs, core in compute.parts])
    return lines + [""]


def _prediction_rows(main, checks: dict) -> list[tuple]:
    """The prediction target (the largest deviation at L = 1, 2, 4) and the deviation beyond, stated."""
    near, deep = [], []
    for s in main:
        check = checks.get(s.setting)
        if check is None:
            continue
        for i, L in enumerate(s.depths):
            row = (abs(check.deviation[i]), check.deviation[i], check.deviation_se[i], spectrum_label(*s.setting[:2]), L)
            (near if L in PREDICTION_DEPTHS else deep).append(row)
    if not near:
        return []

    def largest(rows) -> tuple[float, str]:
        worst = max(rows, key=lambda row: row[0])  # the first of equal deviations
        return worst[0], f"largest: {worst[1]:+.1%} ± {worst[2]:.1%} ({worst[3]}, L = {worst[4]})"

    deviation, text = largest(near)
    rows = [(f"predict_loss within {PREDICTION_TARGET:.0%} of R*_L at L = {', '.join(map(str, PREDICTION_DEPTHS))}",
             text, _mark(deviation <= PREDICTION_TARGET))]
    if deep:
        rows.append((f"predict_loss beyond L = {PREDICTION_DEPTHS[-1]}: stated", largest(deep)[1], "–"))
    return rows
