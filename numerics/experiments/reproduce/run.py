"""The reproduction's computing pass: plan the runs, train them into one store, run the regime study and the
consistency check, compute the theory values, then hand the numbers to the renderers (figures, tables, report).

The renderers (:mod:`~numerics.experiments.reproduce.report`, :mod:`~numerics.experiments.reproduce.docs_pages`,
:mod:`~numerics.experiments.reproduce.figures`) import nothing of this module: they only draw and write what it
computed (``tests/test_render_imports.py``).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from numerics.io import make_output_dir

# the study and the sweep layer are imported where used: `idepth reproduce --help` needs neither
from ..execution import Execution, as_execution
from .scales import Scale, get_scale
from .plan import ARTEFACTS, CONSISTENCY_SIZES, Schedule, estimate_run_seconds, make_plan

__all__ = ["ReproductionResult", "command_line", "reproduce"]


@dataclass(frozen=True)
class ReproductionResult:
    """What :func:`reproduce` produced.

    ``unavailable``: the inputs read from the shipped results that were not found
    (:mod:`numerics.experiments.shipped`), e.g. ``("certified study",)``;
    the claims that need them are not tested.

    Examples
    --------
    >>> ReproductionResult.__dataclass_fields__["report"].type
    'Path'
    """

    out_dir: Path
    report: Path
    plan: Schedule
    figures: tuple
    tables: tuple
    claims: tuple
    sweep: object
    wall_time: float
    unavailable: tuple = ()


def _study_sections(scale: Scale, out: Path, *, execution, log) -> tuple:
    """(regime-study Markdown, consistency Markdown, consistency report)."""
    from .. import study
    from ..study.page import consistency_markdown
    from .report import relink

    log(f"regime study (numerics.experiments.study, scale {scale.name!r}) ...")
    try:
        result = study.write_regime_study(study.run_regime_study(
            scale.study, out / "study", execution=execution, consistency=CONSISTENCY_SIZES[scale.name]))
        consistency = result.consistency
    except RuntimeError as exc:  # a training run of the study failed: the report says so
        note = f"**The regime study did not run**: {' '.join(str(exc).split())}."
        return (f"## Where inverse-depth scaling appears (regime study)\n\n{note}\n",
                f"## Consistency with the paper\n\n{note}\n", None)
    section = consistency_markdown(consistency.rows, below_as_table=True)  # the values below the bound as one table
    return relink(result.markdown, "study/"), relink(section, "study/"), consistency


def reproduce(
    scale: str | Scale = "quick",
    only: str | Sequence[str] | None = None,
    out_dir: str | os.PathLike = "reproduction",
    *,
    execution: Execution | None = None,
    study: bool | None = None,
    log: Callable[[str], object] | None = None,
    command: str | None = None,
    calibrate: bool = True,
) -> ReproductionResult:
    """Regenerate the paper's figures and tables at ``scale`` and write ``OUT/REPORT.md``.

    Parameters
    ----------
    scale : {'smoke', 'quick', 'medium', 'paper'} or Scale
        See :mod:`numerics.experiments.reproduce.scales` (``paper`` needs a Dask cluster).
    only : str or sequence of str, optional
        Artefact IDs (``"fig6a,table4"``); default: all of :data:`ARTEFACTS`.
    out_dir : path
        Output directory (created); see the module docstring for its layout.
    execution : Execution, optional
        Where every sweep runs (default ``Execution()``); its store and cache
        must be left unset (they are ``OUT/store`` and ``OUT/cache``).
    study : bool, optional
        Run the regime study and the consistency check; default: when
        ``only`` is None.
    log : callable, optional
        Receives the plan and progress lines (default: print to stderr).
    command : str, optional
        The command line recorded in the report.
    calibrate : bool
        Time shortened runs of the plan's costliest kinds of run first and
        log the estimate on this machine (:mod:`.calibration`).

    Raises
    ------
    ValueError
        Unknown scale or artefact ID, an execution naming its own store or
        cache, ``IDEPTH_RESULTS`` naming no directory, a scale's spot check
        that names no shipped candidate -- before anything is written.
    NotADirectoryError, PermissionError
        ``out_dir`` is a file or not writable.
    KeyboardInterrupt
        Ctrl-C: the store keeps every finished run; calling again continues.

    Notes
    -----
    The shipped results (the certified study's verdicts and cells, the size inference) are
    found through :mod:`numerics.experiments.shipped`: a source checkout's ``docs/results`` or
    ``IDEPTH_RESULTS``. Without them the run goes on, logs one line saying where to point the
    variable, and the claims that read them are NOT TESTED with that reason;
    ``ReproductionResult.unavailable`` names them (``idepth reproduce`` then exits with status 1).
    Shipped certified verdicts that cannot be read
    (:func:`~numerics.experiments.reproduce.envelope.load_envelopes`) leave those claims NOT
    TESTED too, naming why.

    References
    ----------
    The paper's figures 1, 3-7, 9-14 and tables 1-5; eqs. (12), (16), (34)-(54), (60)-(63), (88)-(93).

    Examples
    --------
    >>> import tempfile  # doctest: +SKIP
    >>> result = reproduce("smoke", out_dir=tempfile.mkdtemp(),
    ...                    execution=Execution(workers=2))  # about a minute  # doctest: +SKIP
    >>> result.report.name  # doctest: +SKIP
    'REPORT.md'
    """
    started, cpu_started = time.perf_counter(), _cpu_seconds()
    if log is None:
        def log(text: str) -> None:
            print(f"[{time.perf_counter() - started:6.0f} s] {text}", file=sys.stderr, flush=True)
    scale = get_scale(scale)
    plan = make_plan(scale, only)  # validates scale and IDs before anything is written
    execution = as_execution(execution)
    for name in ("store_dir", "cache_dir"):
        if getattr(execution, name) is not None:
            raise ValueError("reproduce keeps its runs in OUT/store and its cache in OUT/cache; "
                             f"got execution.{name}={str(getattr(execution, name))!r}")
    from ..shipped import NOT_FOUND_NOTE, not_found_message, results_dir

    # what is read rather than trained is checked before anything is written or trained
    shipped_found = results_dir() is not None
    envelopes, envelopes_error, checks = _certified_inputs(scale) if shipped_found else (None, "", [])
    out = make_output_dir(out_dir)
    study = (only is None) if study is None else bool(study)
    command = command or "numerics.experiments.reproduce.reproduce(" + ", ".join(
        [repr(scale.name)] + ([f"only={only!r}"] if only else []) + [f"out_dir={str(out)!r}"]) + ")"

    log(plan.format(execution.pool_size(), backend=execution.backend))
    if scale.needs_cluster and execution.backend != "dask":
        log(f"warning: scale {scale.name!r} is sized for a Dask cluster; running it locally will take "
            f"≈ {plan.total_seconds / 3600 / execution.pool_size():.0f} hours")
    if checks:
        log(f"re-training {len(checks)} candidate(s) of the certified study to check it")

    execution = dataclasses.replace(execution, store_dir=out / "store", cache_dir=out / "cache")
    unavailable = {}
    if not shipped_found:  # the run goes on; the claims that read the shipped results say why they are not tested
        unavailable = {"certified study": NOT_FOUND_NOTE}
        envelopes_error = not_found_message()
        log(not_found_message())

    # the regime study's runs join the plan's in one sweep (the study then finds them in the store)
    study_configs = _study_configs(scale) if study else []
    costs = None
    if calibrate:  # before any training: the cost model's estimate on this machine
        from .calibration import calibrate as calibrate_here, calibrated_estimate, format_estimate

        extra = [cfg for _, cfg in checks] + study_configs
        try:
            calibration = calibrate_here(configs=list(plan.configs) + extra, workers=execution.pool_size())
        except RuntimeError as exc:  # the estimate is advice: training goes on without it
            log(f"no calibrated estimate: {exc}")
        else:
            log(format_estimate(plan, calibration, execution.pool_size(), extra_configs=extra,
                                backend=execution.backend, study=study))
            costs = calibrated_estimate(plan, calibration, extra)[2]
    from ..sweep import Grid, run_sweep

    configs = list(plan.configs) + [cfg for _, cfg in checks] + study_configs
    if costs is None:  # the cost model's seconds on its reference machine
        costs = {cfg.content_hash(): estimate_run_seconds(cfg) for cfg in configs}
    # dearest first, so that the workers' last runs are short and they finish together
    configs.sort(key=lambda cfg: -costs.get(cfg.content_hash(), 0.0))
    summary = run_sweep(Grid.of(configs), execution.store_dir, execution=execution, costs=costs)
    log(f"training: {summary.executed} runs trained now, {summary.skipped} reused from the store, "
        f"{summary.failed} failed ({summary.wall_time:.0f} s)")

    from .context import ReproductionContext
    from .figures import build_figure
    from .report import evaluate_claims, write_report
    from .tables import build_table

    ctx = ReproductionContext.open(scale, out, families=plan.families, envelopes=envelopes,
                                   envelopes_error=envelopes_error, certified_checks=checks, unavailable=unavailable)
    study_md = consistency_md = ""
    consistency = None
    if study:
        from .envelope import sizes_section
        from .tables import PAPER_D, PAPER_P

        study_md, consistency_md, consistency = _study_sections(scale, out, execution=execution, log=log)
        consistency_md = consistency_md.rstrip() + "\n\n" + sizes_section(envelopes, (PAPER_D, PAPER_P))
    log(f"theory values for the artefacts: {ctx.prefetch(workers=execution.pool_size())} bounds and floors "
        "(Monte Carlo, cached) ...")
    figures, tables = [], []
    for artefact_id in plan.artefacts:
        log(f"building {artefact_id} ...")
        if ARTEFACTS[artefact_id].kind == "figure":
            figures.append(build_figure(ctx, artefact_id))
        else:
            tables.append(build_table(ctx, artefact_id))
    claims = evaluate_claims(ctx, consistency)
    wall = time.perf_counter() - started
    report = write_report(ctx, plan, figures=figures, tables=tables, claims=claims, study_markdown=study_md,
                          consistency_markdown=consistency_md, wall_time=wall, sweep_summary=summary,
                          command=command, cpu_time=_cpu_seconds() - cpu_started)
    log(f"wrote {report} ({wall:.0f} s)")
    return ReproductionResult(out_dir=out, report=report, plan=plan, figures=tuple(figures), tables=tuple(tables),
                              claims=claims, sweep=summary, wall_time=wall, unavailable=tuple(unavailable))


def _certified_inputs(scale: Scale) -> tuple:
    """(envelopes or None, why not, spot-check runs) from the shipped certified study.

    A shipped study that cannot be read leaves its claims NOT TESTED with the reason; a spot check that
    cannot be rebuilt is an error in the scale (``ValueError``), raised before anything is written.
    """
    from .envelope import load_envelopes, spot_check_configs

    try:
        envelopes = load_envelopes()
    except (FileNotFoundError, ValueError) as exc:
        return None, str(exc), []
    return envelopes, "", spot_check_configs(scale.certified_checks)


def _study_configs(scale: Scale) -> list:
    """The training runs of the scale's regime study (:func:`numerics.experiments.study.regimes.trained_configs`)."""
    from ..study.regimes import trained_configs

    return list(trained_configs(scale.study).values())


def _cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def command_line(argv: Sequence[str]) -> str:
    """The shell-quoted command line ``idepth reproduce ...`` for the report.

    Examples
    --------
    >>> command_line(["reproduce", "--out", "my dir"])
    "idepth reproduce --out 'my dir'"
    """
    return "idepth " + " ".join(shlex.quote(a) for a in argv)
