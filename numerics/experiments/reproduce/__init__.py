"""``idepth reproduce``: the paper's figures and tables, and a report comparing paper and package.

:func:`reproduce` plans the runs (``plan``), trains them into one resumable store,
then fits, plots (``figures``), tabulates (``tables``), runs the regime study and
the consistency check (:mod:`numerics.experiments.study`) and writes the report.

Output layout::

    OUT/REPORT.md                  the report (written atomically, last)
    OUT/figures/<id>.png, .pdf     fig1, fig3a, ..., fig14
    OUT/tables/<id>.md, .json      table1 .. table5
    OUT/store/results.sqlite       every training run (numerics.experiments.store)
    OUT/cache/*.json               oracle bounds and linear floors (Monte Carlo, cached)
    OUT/study/                     the regime study (numerics.experiments.study)
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
from ..scales import CONSISTENCY_SIZES as _CONSISTENCY_SIZES, SCALES, Family, Scale, get_scale
from .plan import ARTEFACTS, Plan, make_plan, parse_only

__all__ = [
    "ARTEFACTS",
    "SCALES",
    "Family",
    "Scale",
    "Plan",
    "ReproductionResult",
    "get_scale",
    "make_plan",
    "parse_only",
    "reproduce",
]


@dataclass(frozen=True)
class ReproductionResult:
    """What :func:`reproduce` produced.

    ``unavailable``: the inputs read from the shipped results that were not found
    (:mod:`numerics.experiments.shipped`), e.g. ``("converged study", "certified study")``;
    the claims that need them are not tested.

    Examples
    --------
    >>> ReproductionResult.__dataclass_fields__["report"].type
    'Path'
    """

    out_dir: Path
    report: Path
    plan: Plan
    figures: tuple
    tables: tuple
    claims: tuple
    sweep: object
    wall_time: float
    unavailable: tuple = ()


def _study_sections(scale: Scale, out: Path, *, execution, log) -> tuple:
    """(regime-study Markdown, consistency Markdown, consistency report)."""
    from .. import study
    from .report import consistency_markdown, relink

    log(f"regime study (numerics.experiments.study, scale {scale.name!r}) ...")
    try:
        result, consistency = study.run_study_sections(
            scale.study, out / "study", execution=execution,
            consistency_sizes=_CONSISTENCY_SIZES[scale.name])
    except RuntimeError as exc:  # a training run of the study failed: the report says so
        note = f"**The regime study did not run**: {' '.join(str(exc).split())}."
        return (f"## Where inverse-depth scaling appears (regime study)\n\n{note}\n",
                f"## Consistency with the paper\n\n{note}\n", None)
    return relink(result.markdown, "study/"), relink(consistency_markdown(consistency), "study/"), consistency


def reproduce(
    scale: str | Scale = "quick",
    only: str | Sequence[str] | None = None,
    out_dir: str | os.PathLike = "reproduction",
    *,
    execution: Execution | None = None,
    study: bool | None = None,
    log: Callable[[str], object] | None = None,
    command: str | None = None,
    converged_table: str | os.PathLike | None = None,
    calibrate: bool = True,
) -> ReproductionResult:
    """Regenerate the paper's figures and tables at ``scale`` and write ``OUT/REPORT.md``.

    Parameters
    ----------
    scale : {'smoke', 'quick', 'medium', 'paper'} or Scale
        See :mod:`numerics.experiments.scales` (``paper`` needs a Dask cluster).
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
    converged_table : path, ConvergedTable or 'run', optional
        The converged-study CSV (or the table :func:`~numerics.experiments.reproduce.converged.load_table`
        read from it) the softmax verdict and Tables 1, 4, 5 read
        (default: the shipped one; at ``scale='paper'``, ``'run'``: run the
        study first into ``OUT/converged``, hours). A few of its runs are
        re-trained (``Scale.converged_checks``). A given CSV is read and
        checked (:func:`~numerics.experiments.reproduce.converged.load_table`)
        before anything is written or trained.
    calibrate : bool
        Time shortened runs of the plan's costliest kinds of run first and
        log the estimate on this machine (:mod:`.calibration`).

    Raises
    ------
    ValueError
        Unknown scale or artefact ID, an execution naming its own store or
        cache, a malformed ``converged_table``, ``IDEPTH_RESULTS`` naming no
        directory -- before anything is written.
    FileNotFoundError
        No file at ``converged_table`` -- before anything is written.
    NotADirectoryError, PermissionError
        ``out_dir`` is a file or not writable.
    KeyboardInterrupt
        Ctrl-C: the store keeps every finished run; calling again continues.

    Notes
    -----
    The shipped results (the converged study's table, the certified study's verdicts,
    the size inference) are found through :mod:`numerics.experiments.shipped`: a source
    checkout's ``docs/results`` or ``IDEPTH_RESULTS``. Without them the run goes on, logs one
    line saying where to point the variable, and the claims that read them are NOT TESTED
    with that reason; ``ReproductionResult.unavailable`` names them (``idepth reproduce``
    then exits with status 1).

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
    from .converged import ConvergedTable, load_table

    # what is read rather than trained is checked before anything is written or trained
    if isinstance(converged_table, ConvergedTable) or converged_table is None or converged_table == "run":
        given_table = converged_table if isinstance(converged_table, ConvergedTable) else None
    else:
        given_table = load_table(converged_table)
    shipped_found = results_dir() is not None
    out = make_output_dir(out_dir)
    study = (only is None) if study is None else bool(study)
    command = command or "numerics.experiments.reproduce.reproduce(" + ", ".join(
        [repr(scale.name)] + ([f"only={only!r}"] if only else []) + [f"out_dir={str(out)!r}"]) + ")"

    log(plan.format(execution.pool_size(), backend=execution.backend))
    if scale.needs_cluster and execution.backend != "dask":
        log(f"warning: scale {scale.name!r} is sized for a Dask cluster; running it locally will take "
            f"≈ {plan.total_seconds / 3600 / execution.pool_size():.0f} hours")

    execution = dataclasses.replace(execution, store_dir=out / "store", cache_dir=out / "cache")
    if converged_table is None and scale.runs_converged_study:
        converged_table = "run"
    unavailable = {}
    if not shipped_found:  # the run goes on; the claims that read the shipped results say why they are not tested
        unavailable = {name: NOT_FOUND_NOTE for name in ("converged study", "certified study")
                       if name == "certified study" or converged_table is None}
        log(not_found_message())

    def converged():
        return _converged_table(scale, out, given_table if given_table is not None else converged_table,
                                execution=execution, log=log, command=command)

    checks = []
    if converged_table != "run":  # only reads a table: its spot checks belong in the estimate
        table, table_error, checks = converged()
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
    if converged_table == "run":
        table, table_error, checks = converged()
    from ..sweep import Grid, run_sweep

    configs = list(plan.configs) + [cfg for _, cfg in checks] + study_configs
    if costs is None:
        costs = _uncalibrated_costs(configs)
    # dearest first, so that the workers' last runs are short and they finish together
    configs.sort(key=lambda cfg: -costs.get(cfg.content_hash(), 0.0))
    summary = run_sweep(Grid.of(configs), execution.store_dir, execution=execution, costs=costs)
    log(f"training: {summary.executed} runs trained now, {summary.skipped} reused from the store, "
        f"{summary.failed} failed ({summary.wall_time:.0f} s)")

    from .context import ReproductionContext
    from .figures import build_figure
    from .report import evaluate_claims, write_report
    from .tables import build_table

    ctx = ReproductionContext.open(scale, out, families=plan.families, converged=table, converged_error=table_error,
                                   converged_checks=checks, unavailable=unavailable)
    study_md = consistency_md = ""
    consistency = None
    if study:
        from .converged import sizes_section
        from .tables import PAPER_D, PAPER_P

        study_md, consistency_md, consistency = _study_sections(scale, out, execution=execution, log=log)
        consistency_md = consistency_md.rstrip() + "\n\n" + sizes_section(table, (PAPER_D, PAPER_P))
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


def _converged_table(scale: Scale, out: Path, converged_table, *, execution, log, command) -> tuple:
    """(table or None, why not, spot-check runs); ``converged_table``: a table already read, a path,
    None (the shipped one) or ``'run'`` (trains the study first)."""
    from .converged import ConvergedTable, load_table, spot_check_configs

    if converged_table == "run":
        from ..study.converged import ConvergedPlan, run_converged

        plan = ConvergedPlan(**dict(scale.converged_plan or {}))
        log(f"converged study (numerics.experiments.study.converged; {len(plan.runs())} runs, resumable; the default "
            "plan takes hours on 2 cores) ...")
        run_converged(out / "converged", plan=plan, command=command + " (its converged study)",
                      execution=dataclasses.replace(execution, cache_dir=None),
                      bound_contexts=scale.bound_contexts)
        converged_table = out / "converged" / "converged-study.csv"
    if isinstance(converged_table, ConvergedTable):
        table = converged_table
    else:
        try:
            table = load_table(converged_table)
        except (FileNotFoundError, ValueError) as exc:
            return None, str(exc), []
    try:
        checks = spot_check_configs(table, scale.converged_checks)
    except ValueError as exc:
        return table, str(exc), []
    if checks:
        log(f"re-training {len(checks)} run(s) of {table.source_text()} to check it")
    return table, "", checks


def _study_configs(scale: Scale) -> list:
    """The training runs of the scale's regime study (:func:`numerics.experiments.study.regimes.trained_configs`)."""
    from ..study.regimes import trained_configs

    return list(trained_configs(scale.study).values())


def _uncalibrated_costs(configs) -> dict:
    """``{content hash: cost-model seconds}`` of ``configs`` (no calibration: the reference machine's)."""
    from .plan import estimate_run_seconds

    return {cfg.content_hash(): estimate_run_seconds(cfg) for cfg in configs}


def _cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def command_line(argv: Sequence[str]) -> str:
    """The shell-quoted command line ``idepth reproduce ...`` for the report."""
    return "idepth " + " ".join(shlex.quote(a) for a in argv)
