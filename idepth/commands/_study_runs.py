"""What each plan of ``idepth study run`` does with its parsed flags: check them, call the Python API, print.

Split from :mod:`idepth.commands.study`, which declares the plans and their flags.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ._execution import execution_from_args
from ._parsing import positive_ints, spectra as parse_spectra


def run_sizes(args) -> int:
    """``idepth study run sizes``: :func:`numerics.experiments.study.infer_sizes`, then ``write_size_inference``."""
    import dataclasses

    from numerics.experiments.study import infer_sizes, write_size_inference
    from numerics.io import check_output_dir
    from theory.validation import check_positive_int

    d_values, P_values = positive_ints(args.d, "--d"), positive_ints(args.P, "--P")
    check_positive_int("--contexts", args.contexts, minimum=16)
    check_positive_int("--seeds", args.seeds, minimum=2)
    execution = execution_from_args(args)
    check_output_dir(args.out, "--out")
    execution = dataclasses.replace(execution, cache_dir=execution.cache_dir or Path(args.out) / "cache")
    result = infer_sizes(d_values, P_values, n_contexts=args.contexts, n_seeds=args.seeds, execution=execution)
    print(write_size_inference(result, args.out))
    print(f"wrote {args.out}/sizes.md, sizes.json, figures/sizes_chi2.png")
    return 0



def run_certified(args) -> int:
    """``idepth study run certified``: :func:`numerics.experiments.study.run.run_plan` (unless
    ``--report-only``), then :func:`~numerics.experiments.study.certified.facts.write_certified` (the computing
    pass, then the page), then the checkout's answer blocks when the page is the shipped one
    (:func:`~numerics.experiments.study.answer.refresh`)."""
    from numerics.experiments.study.answer import refresh
    from numerics.experiments.study import run_plan
    from numerics.experiments.study.certified import facts
    from numerics.experiments.study.plan import REVISED_PLAN
    from numerics.io import fresh_directory

    plan = getattr(args, "study_plan", REVISED_PLAN)
    plan = plan.only(spectra=None if args.spectra is None else parse_spectra(args.spectra))
    depths = None if args.depths is None else plan.depth_prefix(positive_ints(args.depths, "--depths"))
    args.store = args.store or f"store-{plan.name or 'certified-revised'}"
    execution = execution_from_args(args)
    cells, frontier, contrasts = (Path(args.cells) / name for name in ("cells", "frontier", "contrasts"))
    out = args.out if args.out is not None else fresh_directory("certified-study")
    started = time.monotonic()

    def progress(message: str) -> None:
        if execution.progress is not False:
            print(f"idepth study certified: [{time.monotonic() - started:5.1f} s] {message}", file=sys.stderr, flush=True)

    if args.out is None:
        print(f"idepth study certified: no --out given: writing to the fresh directory {out}", file=sys.stderr)
    if not args.report_only:
        run_plan(plan, execution.store_dir, execution=execution, depths=depths, cells_dir=cells,
                            frontier_dir=frontier)
    command = getattr(args, "command", None) or " ".join(["idepth study run certified", *sys.argv[4:]]).strip()
    rows, summaries = facts.write_certified(out, cells, plan, command=command, contrasts_dir=contrasts,
                                            progress=progress, contrast_depth=args.contrast_depth)
    print(f"wrote {out}/certified-study.csv ({len(rows)} candidates), certified-study.md")
    for path in refresh(out):
        print(f"updated the answer in {path}", file=sys.stderr)
    for summary in summaries:
        print(f"  a={summary.a:g} b={summary.b:g} P={summary.P} k={summary.k}: {summary.verdict} ({summary.reason})")
    return 0



def run_population(args) -> int:
    """``idepth study run population``: :func:`numerics.experiments.study.population.estimate` printed, then (on an
    accelerator, or with ``--force``) :func:`run_certified` with :data:`~numerics.experiments.study.population.POPULATION_PLAN`."""
    from numerics.experiments.study.population import POPULATION_PLAN, estimate, with_engine

    plan = with_engine(POPULATION_PLAN, args.engine)  # names the extra to install when jax is missing
    if args.spectra is not None:
        plan = plan.only(parse_spectra(args.spectra))
    cost = estimate(plan)
    print(f"idepth study run population: {cost.line()}", file=sys.stderr)
    if cost.device.startswith("cpu") and not args.force:
        raise ValueError(f"--force: the population plan would take about {cost.hours:,.0f} h on this CPU "
                         f"({cost.engine} engine); run it where JAX finds a GPU, or pass --force")
    args.study_plan, args.spectra = plan, None
    args.command = " ".join(["idepth study run population", *sys.argv[4:]]).strip()
    return run_certified(args)


def run_regime(args) -> int:
    """``idepth study run regimes``: :func:`numerics.experiments.study.run_regime_study`, then ``write_regime_study``."""
    from numerics.experiments.study import run_regime_study, write_regime_study
    from numerics.io import check_output_dir

    execution = execution_from_args(args)
    check_output_dir(args.out, "--out")  # every output is checked before any training
    if args.store is not None:
        check_output_dir(args.store, "--store")
    try:
        study = write_regime_study(run_regime_study(args.scale, args.out, execution=execution, consistency={}))
    except RuntimeError as exc:
        print(f"idepth study: {exc}", file=sys.stderr)
        return 1
    report = study.consistency
    print(f"regime: {study.regime_name}")
    print(f"{report.n_below} of {len(report.rows)} paper values are below the oracle bound")
    print(f"wrote {study.out_dir}/study.md and consistency.md ({len(study.figures)} figure files, {study.runs} "
          f"training runs, {study.wall_time:.0f} s)")
    return 0



def run_consistency(args) -> int:
    """``idepth study run consistency``: :func:`numerics.experiments.study.paper_consistency`."""
    import dataclasses

    from numerics.experiments.study import paper_consistency
    from numerics.io import make_output_dir, write_text

    P_values = positive_ints(args.P, "--P")
    execution = execution_from_args(args)
    out = make_output_dir(args.out, "--out")
    report = paper_consistency(d=args.d, P_values=P_values, n_contexts=args.contexts,
                               execution=dataclasses.replace(execution, cache_dir=out / "cache"))
    write_text(out / "consistency.md", report.markdown)
    print(f"{report.n_below} of {len(report.rows)} paper values are below the oracle bound; "
          f"wrote {Path(args.out) / 'consistency.md'}")
    return 0



def run_defaults(args) -> int:
    """``idepth study run defaults``: :func:`numerics.experiments.study.make_softmax_defaults`."""
    from numerics.experiments.study import make_softmax_defaults
    from numerics.io import check_output_dir, check_output_file

    execution = execution_from_args(args)  # every output is checked before any training
    check_output_file(args.out, "--out", suffixes=("json",))
    if args.store is not None:
        check_output_dir(args.store, "--store")
    spectra = None if args.spectra is None else parse_spectra(args.spectra)
    regimes = tuple(r.strip() for r in args.regimes.split(",") if r.strip())
    try:  # without --store, the library trains into a temporary store it removes afterwards
        data = make_softmax_defaults(args.out, scale=args.scale, spectra=spectra, regimes=regimes,
                                     default_regime=args.default_regime, execution=execution)
    except RuntimeError as exc:
        print(f"idepth study: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}: {len(data['entries'])} entries (regimes {', '.join(regimes)})")
    return 0
