"""The verdict of a reproduction and ``OUT/REPORT.md``.

:func:`evaluate_claims` judges every claim of the registry from the numbers;
:func:`write_report` writes the report: scale, run time, verdict, the studies,
every figure and every table.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections import Counter
from pathlib import Path

from .. import criteria
from ..criteria import Reason, Verdict
from .._markdown import markdown_table
from ._registry import REGISTRY, Claim, ClaimRegistry, ClaimSpec
from ._verdicts import CENTRAL_CLAIMS, CLAIM_FIGURES, CLAIM_IDS, CLAIMS, evaluate_claims
from ..study.curves import spectrum_label

__all__ = ["CENTRAL_CLAIMS", "CLAIMS", "CLAIM_FIGURES", "CLAIM_IDS", "Claim", "ClaimRegistry", "ClaimSpec",
           "claim_bullets", "conclusions", "counts_text",
           "evaluate_claims", "render_report", "report_data", "verdict_counts", "write_report"]


def _scale_section(ctx, plan) -> list[str]:
    rows = []
    for name in plan.families:
        f = ctx.family(name)
        lr = "default" if f.learning_rate is None else f"{f.learning_rate:g}"
        frozen = f"; frozen {', '.join(f.frozen)}" if f.frozen else ""
        init = "; init " + ", ".join(f"{k} = {v}" for k, v in f.init) if f.init else ""
        rows.append((name, f"{f.model}, {f.task}", f.d, f.N, f.P, f.k if f.task == "difficult" else "—",
                     ", ".join(map(str, f.depths)), len(f.seeds), ", ".join(spectrum_label(a, b) for a, b in f.spectra),
                     f"Adam {lr}, {f.schedule}, {f.max_steps} steps × batch {f.batch_size}, {f.eval_size} held-out "
                     f"contexts{init}{frozen}"))
    lines = ["## Scale", "", f"Scale **{ctx.scale.name}**: {ctx.scale.description}.", ""]
    lines += markdown_table(("family", "model, task", "d", "N", "P", "k", "depths L", "seeds", "spectra (a, b)",
                             "training"), rows)
    lines += ["", f"Monte Carlo: oracle bounds with {ctx.scale.bound_contexts} contexts, linear floors with "
                  f"{ctx.scale.floor_samples} contexts × 4 queries (exact semi-analytic route where a = 0).", ""]
    return lines


def relink(markdown: str, prefix: str) -> str:
    """Prefix relative Markdown links/images with ``prefix`` (a sub-directory of OUT)."""
    return re.sub(r"\]\((?!https?:|/|#)", f"]({prefix}", markdown)


def verdict_counts(claims) -> dict:
    """``{kind: {verdict: [claim ids]}}``, for the paper's claims and the contrasts, every verdict in its order.

    Examples
    --------
    >>> counts = verdict_counts([Claim("modewise", "p", "c", "reproduced", "e"), Claim("lazy_contrast", "p", "c",
    ...                                                                                 "reproduced", "e")])
    >>> counts["paper"][Verdict.REPRODUCED], counts["contrast"][Verdict.REPRODUCED]
    (['modewise'], ['lazy_contrast'])
    """
    return {kind: {status: [c.id for c in claims if c.kind == kind and c.status is status] for status in Verdict}
            for kind in ("paper", "contrast")}


def counts_text(claims) -> str:
    """One sentence: the verdicts of the paper's claims and, apart, of the package's contrasts, as marked.

    Examples
    --------
    >>> print(counts_text([Claim("modewise", "p", "c", "reproduced", "e"),
    ...                    Claim("lazy_contrast", "p", "c", "inconclusive", "e")]))
    claims of the paper (1): 1 REPRODUCED; the package's own contrasts (1): 1 INCONCLUSIVE
    >>> print(counts_text([Claim("modewise", "p", "c", "reproduced", "e").not_judged("smoke scale")]))
    claims of the paper (1): 1 NOT JUDGED (smoke scale); the package's own contrasts (0): none
    """
    def part(kind: str) -> str:
        mine = [c for c in claims if c.kind == kind]
        # in the order of the verdicts, then of the claims (a stable sort; a Counter keeps the first-seen order)
        marks = Counter(c.mark for c in sorted(mine, key=lambda c: list(Verdict).index(c.status)))
        counts = ", ".join(f"{n} {mark}" for mark, n in marks.items()) or "none"
        return f"({len(mine)}): {counts}"

    return f"claims of the paper {part('paper')}; the package's own contrasts {part('contrast')}"


_CERTAINTY = {Verdict.REPRODUCED: "its criterion is met by the numbers",
              Verdict.CONTRADICTED: "its criterion's exclusion is met by the numbers (every check the verdict rests "
                                    "on ran and passed)",
              Verdict.NOT_TESTED: "this reproduction has nothing to judge it by",
              Verdict.NOT_JUDGED: "this scale's numbers support no verdict"}


def _certainty(claim) -> str:
    """How sure the verdict is: met, excluded, or undecided and why (the :class:`Reason` kinds its reason names)."""
    if claim.status is not Verdict.INCONCLUSIVE:
        return _CERTAINTY[claim.status]
    kinds = Reason.kinds(claim.reason)
    return "undecided" + (f" ({' and '.join(kinds)} not sufficient)" if kinds else "")


def conclusions(claims) -> str:
    """The report's opening paragraph: each central claim's verdict and numbers.

    Examples
    --------
    >>> text = conclusions([Claim("modewise", "p", "c", "inconclusive", "e", reason="resolution: few depths",
    ...                           summary="spread 8.3")])
    >>> text.startswith("**Parallel (softmax) against sequential (linear) learning of modes: INCONCLUSIVE**")
    True
    >>> "undecided (resolution not sufficient): spread 8.3." in text
    True
    """
    sentences, central = [], REGISTRY.central
    for claim in claims:
        if claim.id not in central:
            continue
        numbers = claim.summary or claim.evidence.rstrip(".")
        sentences.append(f"**{central[claim.id]}: {claim.mark}** — {_certainty(claim)}: {numbers}.")
    return " ".join(sentences)


def render_report(ctx, plan, *, figures, tables, claims, study_markdown: str, consistency_markdown: str,
                  wall_time: float, sweep_summary, command: str, cpu_time: float | None = None) -> str:
    """The text of ``REPORT.md`` (see :func:`write_report`).

    Notes
    -----
    No example: it needs a finished reproduction.
    """
    from theory import __version__

    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    run_wall = ctx.results.wall_time(plan.configs)
    cpu_values = [ctx.results.metrics(c).get("cpu_time") for c in plan.configs if ctx.results.record(c) is not None]
    run_cpu = sum(float(v) for v in cpu_values if v is not None)
    no_cpu = sum(v is None for v in cpu_values)
    done = len(cpu_values)
    lines = [f"# Reproduction report — scale {ctx.scale.name}", "",
             "Paper: *Emergent Inverse-Depth Scaling From Nonlinearity In Attention* (Peng, Liu, Liu, Gore, 2026). "
             f"Package `inverse-depth` {__version__}; generated {now} by `{command}`.", ""]
    opening = conclusions(claims)
    if opening:
        lines += ["## Conclusions", "", "What this reproduction concludes about each central claim of the paper, "
                  "computed from the verdicts below: " + opening, "", f"Verdicts: {counts_text(claims)}.", ""]
    ran = "—"
    if sweep_summary is not None:
        ran = (f"{sweep_summary.executed} trained now, {sweep_summary.skipped} reused from the store, "
               f"{sweep_summary.failed} failed, {sweep_summary.pending} pending; {sweep_summary.backend} backend, "
               f"{sweep_summary.workers} worker(s)")
    from .scales import measured_run_time

    cpu_text = "" if cpu_time is None else (
        f" and {cpu_time:.0f} s of CPU time (user + system of this process and its local worker processes)")
    runs_text = (f"summed over the {done} finished runs in the store: {run_cpu:.0f} s of CPU time in the workers"
                 + (f" ({no_cpu} run(s) trained by an older version recorded none)" if no_cpu else "")
                 + f" and {run_wall:.0f} s of worker wall time")
    measured = measured_run_time(ctx.scale.name)
    reference = (f" Measured reference for scale {ctx.scale.name} (from an empty directory): {measured.text()}."
                 if measured is not None else "")
    lines += [f"**Run time**: {wall_time:.0f} s wall{cpu_text} for this reproduction. Training runs: "
              f"{done}/{plan.n_runs} done in the store ({ran}); {runs_text}.{reference}", ""]
    lines += _scale_section(ctx, plan)
    lines += ["## Verdict", "",
              "Each claim with the criterion it is tested by; the status is computed from the numbers "
              "(`numerics/reproduce/criteria.py`), never set by hand.", ""]
    for kind, heading in (("paper", "### Claims of the paper"),
                          ("contrast", "### The package's own contrasts (not claims of the paper)")):
        lines += [heading, ""]
        for claim in (c for c in claims if c.kind == kind):
            lines += claim_bullets(_claim_data(claim, {}))
        lines.append("")
    counts = verdict_counts(claims)
    lines += [f"Verdicts: {counts_text(claims)}.", ""]
    lines += markdown_table(("verdict", "claims of the paper", "the package's own contrasts"), [
        (status.word, f"{len(counts['paper'][status])}: {', '.join(counts['paper'][status]) or '—'}",
         f"{len(counts['contrast'][status])}: {', '.join(counts['contrast'][status]) or '—'}") for status in Verdict])
    lines += [""]
    lines += [study_markdown.strip(), ""] if study_markdown else []
    lines += [consistency_markdown.strip(), ""] if consistency_markdown else []
    if figures:
        lines += ["## Figures", ""]
        from .artefacts import ARTEFACTS

        for figure in figures:
            artefact = ARTEFACTS[figure.id]
            rel = [p.relative_to(ctx.out_dir).as_posix() for p in figure.paths]
            lines += [f"### {figure.id}: {artefact.title}", "", f"Paper: {artefact.paper}.", "",
                      f"![{figure.id}]({rel[0]})", "", figure.caption, "", f"Files: [{rel[0]}]({rel[0]}), "
                      f"[{rel[1]}]({rel[1]}).", ""]
    if tables:
        lines += ["## Tables", "",
                  "Paper values are copied verbatim (`theory/data/paper_values.json`); 'agrees' columns are computed "
                  f"(within {criteria.AGREEMENT_SIGMAS:g} combined standard errors).", ""]
        for table in tables:
            lines += [table.markdown("###"), f"Files: [tables/{table.id}.md](tables/{table.id}.md), "
                                             f"[tables/{table.id}.json](tables/{table.id}.json).", ""]
    failed_runs = [c for c in plan.configs if ctx.results.record(c) is None]
    lines += ["## Runs", "", f"{plan.n_runs} distinct training runs in `store/results.sqlite` for this plan; "
                             f"{len(failed_runs)} without a finished result (`idepth sweep status {ctx.out_dir / 'store'}` "
                             "lists failures)."]
    return "\n".join(lines) + "\n"


def report_data(figures, claims) -> dict:
    """What ``OUT/report.json`` holds: figures' captions and verdicts, claims.

    Examples
    --------
    >>> data = report_data([], [Claim("modewise", "p", "c", "reproduced", "e")])
    >>> data["claims"][0]["figures"]
    ['fig3c', 'fig7a', 'fig7b']
    """
    about = REGISTRY.figures
    return {
        "format": "idepth-report/1",
        "figures": {f.id: {"caption": f.caption, "verdicts": [c.id for c in claims if f.id in about.get(c.id, ())]}
                    for f in figures},
        "claims": [_claim_data(c, about) for c in claims],
    }


def _claim_data(c, about: dict) -> dict:
    return {"id": c.id, "status": c.status.word, "measured_status": c.measured_status.word, "note": c.note,
            "mark": c.mark,
            "reason": c.reason, "paper": c.paper, "criterion": c.criterion, "kind": c.kind, "summary": c.summary,
            "table": c.table_markdown, "evidence": c.evidence, "figures": list(about.get(c.id, ()))}


def claim_bullets(claim: dict, *, lead: str = " —", escape=str) -> list:
    """A claim of :func:`report_data` as the report's Markdown bullets (``escape`` applied to its texts).

    Examples
    --------
    >>> claim = report_data([], [Claim("modewise", "p", "c", "inconclusive", "e", reason="budget")])["claims"][0]
    >>> claim_bullets(claim)
    ['- **INCONCLUSIVE** — p', '  - criterion: c', '  - measured: e', '  - why inconclusive: budget']
    """
    lines = [f"- **{claim['mark']}**{lead} {escape(claim['paper'])}", f"  - criterion: {escape(claim['criterion'])}",
             f"  - measured: {escape(claim['evidence'])}"]
    if claim.get("table"):
        lines += ["", *("    " + line for line in claim["table"].splitlines()), ""]
    measured = Verdict.read(claim.get("measured_status", claim["status"]))
    if measured is not Verdict.read(claim["status"]):
        lines.append(f"  - measured status (not a verdict): {measured.word}")
    if claim.get("reason"):
        lines.append(f"  - {'why inconclusive' if measured is Verdict.INCONCLUSIVE else 'what excludes it'}: "
                     f"{escape(claim['reason'])}")
    return lines


def write_report(ctx, plan, **kwargs) -> Path:
    """Write ``OUT/REPORT.md`` (:func:`render_report`) and ``OUT/report.json``, together (REPORT.md replaced last).

    Notes
    -----
    No example: it needs a finished reproduction.
    """
    from numerics.io import json_text, write_together

    text = render_report(ctx, plan, **kwargs)
    data = report_data(kwargs.get("figures", ()), kwargs.get("claims", ()))
    return write_together(ctx.out_dir, {"report.json": json_text(data), "REPORT.md": text})[-1]
