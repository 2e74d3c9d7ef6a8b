"""``idepth study``: where inverse-depth scaling appears, the oracle bounds, the measured softmax defaults.

A thin layer over :mod:`numerics.experiments.study`:

* ``idepth study regime [--scale smoke|quick|medium|paper] [--out DIR] [--store DIR] [--backend local|dask] [--workers N]``
  -- :func:`numerics.experiments.study.run_regime_study` (the regime study, then the paper's plateaus
  against the bounds), then :func:`~numerics.experiments.study.write_regime_study`; writes ``DIR/study.md``,
  ``DIR/consistency.md``, ``DIR/study.json``, ``DIR/figures/``;
* ``idepth study consistency [--out DIR] [--d 128] [--P 1024,2048] [--contexts N]``
  -- the paper's nonlinear plateaus against the oracle bounds only;
* ``idepth study sizes [--d 8,12,...] [--P 32,48,...] [--contexts N] [--seeds S] [--out DIR]``
  -- :func:`numerics.experiments.study.infer_sizes` (which (d, P) the paper's nonlinear plateaus imply),
  then :func:`~numerics.experiments.study.write_size_inference`;
* ``idepth study certified [--out DIR] [--store DIR] [--cells DIR] [--depths 1,2,4] [--backend local|dask] [--workers N]
  [--scheduler ADDR] [--report-only] [--contrast-depth L]`` (without ``--out``: a fresh directory, named on stderr)
  -- :func:`numerics.experiments.study.certified.run_certified_study` (the best loss each depth reaches, from
  several starts, with its certificates), then :func:`~numerics.experiments.study.certified.page.write_certified`;
* ``idepth study defaults [--scale quick] [--out FILE] [--spectra 'a,b;a,b'] [--regimes ...]``
  -- :func:`numerics.experiments.study.make_softmax_defaults` (the file ``theory.predict_loss`` reads).

``idepth study run PLAN [OPTIONS]`` runs a named plan (``certified``, ``regimes``, ``defaults``,
``plateaus`` = consistency then sizes) with that plan's options: one entry, one ``--help`` listing the plans.
``idepth study page PLAN [--cells DIR] [--out DIR]`` writes a plan's page from its exported cells, training nothing
(``certified``: the revised study, the evidence); a directory without cells, or
no shipped results found, is exit 2 naming where it looked.

Exit status: 0 on success, 1 when training runs failed, 2 on bad input (one line on stderr).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ._execution import add_execution_flags, execution_from_args
from ._parsing import spectra as parse_spectra

HELP = "the package's studies of where inverse-depth scaling appears and of the paper's numbers"


def register(subparsers) -> None:
    """Add the ``study`` sub-command and its actions to ``subparsers`` (the help names each action registered)."""
    parser = subparsers.add_parser(
        "study", help=HELP,
        description=(
            "The study the paper does not give: in which training regime the nonlinear model's loss falls as "
            "1/L, the best loss softmax heads can reach at all (oracle bounds), and each paper number that "
            "contradicts such a bound. Training runs go through the sweep layer (cached, resumable)."
        ),
    )
    actions = parser.add_subparsers(dest="study_command", metavar="ACTION")
    actions.required = True

    regime = actions.add_parser(
        "regime", help="run the regime study and the paper-consistency check",
        description="Lazy vs converged training, frozen random heads, averages of separate models; depth gain, "
                    "fitted alpha, whether A_L - C_L settles; oracle bounds on every depth plot; then the paper's "
                    "nonlinear plateaus against the bounds. Writes DIR/study.md, DIR/study.json, DIR/figures/.",
    )
    regime.add_argument("--scale", default="quick", choices=_scale_names(),
                        help="the study budget of a reproduction scale: quick (default: d = N = 32, P = 128, 81 "
                             "training runs; its lazy and converged runs are those of 'idepth reproduce --scale quick', "
                             "shared with --store), medium or paper (d in {16, 32, 64}, P/d in {4, 16}, N in {d, 2d}: "
                             "thousands of runs, use dask), smoke (seconds; numbers mean nothing)")
    regime.add_argument("--out", metavar="DIR", default="study-out", help="output directory (default study-out)")
    regime.add_argument("--store", metavar="DIR", default=None,
                        help="sweep store (default DIR/store); give a reproduction's store to share its runs")
    add_execution_flags(regime)
    regime.set_defaults(func=run_regime)

    consistency = actions.add_parser(
        "consistency", help="the paper's nonlinear plateaus (Tables 1, 4) against the oracle bounds",
        description="Best single softmax head and best mixture over exact cosine similarity at d, P; every paper "
                    "value below the bound is listed. Bounds are cached in DIR/cache/.",
    )
    consistency.add_argument("--out", metavar="DIR", default="study-out", help="output directory (default study-out)")
    consistency.add_argument("--d", type=int, default=128, help="input dimension (default 128)")
    consistency.add_argument("--P", default="1024,2048", help="context lengths, comma separated (default 1024,2048)")
    consistency.add_argument("--contexts", type=int, default=8192, help="Monte-Carlo contexts per bound (default 8192)")
    consistency.add_argument("--workers", type=int, default=1, help="processes computing bounds (default 1)")
    consistency.add_argument("--no-progress", action="store_true",
                             help="no progress output (a bar on a terminal, otherwise a one-line record every 10 s)")
    consistency.set_defaults(func=run_consistency)

    sizes = actions.add_parser(
        "sizes", help="infer the (d, P) the paper's nonlinear plateaus come from (chi-square against the bounds)",
        description="For every (d, P) of a grid: the best mixture of softmax heads B_inf and the best single head B_1 "
                    "(theory.softmax_bounds, Monte Carlo with independent seeds) of all 14 nonlinear plateaus of the "
                    "paper's Tables 1 and 4, and the chi-square against the paper's values. Prints the table, writes "
                    "DIR/sizes.md, DIR/sizes.json and the chi-square map DIR/figures/sizes_chi2.png. Bounds are cached "
                    "in DIR/cache/ (re-running computes only what is missing).",
    )
    sizes.add_argument("--out", metavar="DIR", default="study-out", help="output directory (default study-out)")
    sizes.add_argument("--d", default=",".join(map(str, _size_grid()[0])), help="input dimensions, comma separated")
    sizes.add_argument("--P", default=",".join(map(str, _size_grid()[1])), help="context lengths, comma separated")
    sizes.add_argument("--contexts", type=int, default=2048, help="fit and held-out contexts per seed (default 2048)")
    sizes.add_argument("--seeds", type=int, default=4, help="independent seeds per bound (default 4)")
    sizes.add_argument("--workers", type=int, default=1, help="processes computing bounds (default 1)")
    sizes.add_argument("--no-progress", action="store_true", help="no progress output")
    sizes.set_defaults(func=run_sizes)

    certified = actions.add_parser(
        "certified", help="the best loss each depth reaches (several starts, certificates) and the verdict on it",
        description="For every Table 1 spectrum at d=16, N=32, P=64, top-2 (3 seeds), depth 1-128, train the "
                    "softmax model from several starts in lockstep (cold at lr 3e-4 and 1e-3, the heads of the bound "
                    "B_L, the depth-L/2 winner duplicated, U_L's heads, diverse heads; several at twice their caps, "
                    "long caps at (0, 0) and (0, 0.25), L = 4 and 16), select on one held-out set of 2^16 contexts, "
                    "report on another, check nesting, reachability and step doubling, and judge the paper's c/L "
                    "law on the envelope. Cells are exported to --cells as they finish (a later session continues "
                    "from them); writes "
                    "DIR/certified-study.csv (one row per candidate), DIR/certified-study.md, "
                    "DIR/figures/certified-study.png and DIR/figures/certified-recipes.png. CPU time: the page's "
                    "Targets section, summed from the cells' own CPU time (many core-hours: run it in the background; "
                    "it resumes).")
    certified.add_argument("--out", metavar="DIR", default=None,
                           help="output directory (default: a fresh directory certified-study-<time> in the working "
                                "directory, named on stderr, so that the shipped docs/results page is never "
                                "overwritten by accident; --out docs/results updates it)")
    certified.add_argument("--store", metavar="DIR", default=None,
                           help="working store (default store-certified-revised; rebuilt from --cells when missing)")
    certified.add_argument("--plan", choices=("revised",), default="revised",
                           help="the plan: revised, the only one (the first study's plan was retired: "
                                "docs/changelog.md)")
    certified.add_argument("--spectra", default=None, metavar="'a,b;a,b'",
                           help="run only these of the plan's spectra (in this order; default all)")
    certified.add_argument("--cells", metavar="DIR", default=None,
                           help="exported cells (DIR/cells), frontier weights (DIR/frontier) and contrast runs "
                                "(DIR/contrasts); default docs/results/certified-revised")
    certified.add_argument("--depths", default=None, metavar="1,2,4",
                           help="stop after these depths (a prefix of 1,2,4,...,128; default all)")
    certified.add_argument("--report-only", action="store_true", help="no training: the page from the exported cells")
    certified.add_argument("--contrast-depth", type=int, default=None, metavar="L",
                           help="the deepest depth of the page's descriptive contrast g_2/g_L (default each setting's "
                                "deepest depth done)")
    add_execution_flags(certified)
    certified.set_defaults(func=run_certified_command)

    defaults = actions.add_parser(
        "defaults", help="measure and write the softmax defaults file read by theory.predict_loss",
        description="Train the regimes over a spectrum grid (sweep layer; the runs are kept in --store if given), "
                    "fit R_L = L0 + c/L and write the JSON with its provenance. --out and --store are checked "
                    "before any training.",
    )
    defaults.add_argument("--scale", default="quick", choices=_scale_names(),
                          help="the study budget of a reproduction scale: sizes, depths and seeds (default quick)")
    defaults.add_argument("--out", metavar="FILE", default="softmax_defaults.json", help="JSON file to write")
    defaults.add_argument("--spectra", default=None, help="grid of (a, b), e.g. '0,0;0.5,0;0,0.5' (default: the scale's)")
    defaults.add_argument("--regimes", default="lazy,converged", help="regimes to measure (default lazy,converged)")
    defaults.add_argument("--default-regime", default="lazy", help="regime of the file predict_loss reads with regime='calibrated' and no calibration (default lazy)")
    defaults.add_argument("--store", metavar="DIR", default=None,
                          help="sweep store, a cache of the training runs (default: a temporary directory, removed "
                               "afterwards)")
    add_execution_flags(defaults)
    defaults.set_defaults(func=run_defaults)
    _add_run(actions)
    _add_page(actions)
    _name_the_actions(subparsers, parser, actions)


#: the named plans of ``idepth study run PLAN``: each the study actions it runs, in order, and what it answers
PLANS = {
    "certified": (("certified",), "the best loss each depth reaches (several starts, certificates) and the verdict"),
    "regimes": (("regime",), "lazy vs converged training, frozen heads, separate models; then the paper's plateaus"),
    "defaults": (("defaults",), "the softmax defaults file read by theory.predict_loss(regime='calibrated')"),
    "plateaus": (("consistency", "sizes"), "the paper's nonlinear plateaus against the oracle bounds, then the "
                                           "(d, P) they imply"),
}


def _add_run(actions) -> None:
    """``idepth study run PLAN [OPTIONS]``: one entry to every named plan; OPTIONS are the plan's own
    (``idepth study run PLAN --help``)."""
    import argparse

    listing = "\n".join(f"  {name:<10} {summary} (idepth study {' then '.join(steps)})"
                         for name, (steps, summary) in PLANS.items())
    run = actions.add_parser(
        "run", help=f"run a named plan: {', '.join(PLANS)}", usage="idepth study run [-h] PLAN [OPTIONS]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run one of the package's named plans. The options after PLAN are the plan's own; "
                    "'idepth study run PLAN --help' lists them. Plans:\n" + listing,
    )
    run.add_argument("plan", metavar="PLAN", nargs="?", choices=tuple(PLANS), help=f"one of {', '.join(PLANS)}")
    run.add_argument("options", nargs=argparse.REMAINDER, help="the plan's options")
    run.set_defaults(func=lambda args: run_plan(args, actions))


#: the plans whose page is written from exported results without training: the plan, and where its results (cells/,
#: contrasts/) and its page live in a checkout, relative to docs/results; ``certified`` is the revised study, the
#: evidence (the first study's page was retired with its plan: its cells stay in docs/results/certified/cells)
PAGE_PLANS = {"certified": ("revised", "certified-revised", "certified-revised")}


def _add_page(actions) -> None:
    """``idepth study page PLAN``: a plan's page from its exported results, no training."""
    page = actions.add_parser(
        "page", help=f"write a plan's page from its exported results, no training: {', '.join(PAGE_PLANS)}",
        description="Write the page of a named plan from its exported cells, training nothing: certified (the "
                    "revised certified study, the evidence of the package's answer). The cells are read from --cells (default: the shipped results, docs/results of a "
                    "checkout or IDEPTH_RESULTS); the page goes to --out (default: beside them, so the shipped page "
                    "is refreshed). The other plans write their pages as they run (idepth study run PLAN).",
    )
    page.add_argument("plan", metavar="PLAN", choices=tuple(PAGE_PLANS), help=f"one of {', '.join(PAGE_PLANS)}")
    page.add_argument("--cells", metavar="DIR", default=None,
                      help="the study's results directory (its cells/ and contrasts/; default the shipped one)")
    page.add_argument("--out", metavar="DIR", default=None,
                      help="where the page goes (default: the shipped page's directory, or --cells when given)")
    page.add_argument("--no-progress", action="store_true", help="no progress lines")
    page.set_defaults(func=run_page)


def run_page(args) -> int:
    """Run ``idepth study page PLAN``: ``idepth study certified --report-only`` for that plan, the inputs checked
    first (a results directory without cells, or no shipped results found, is exit 2 naming where it looked)."""
    import argparse

    from numerics.experiments.shipped import shipped_path

    which, results, page = PAGE_PLANS[args.plan]
    cells = Path(args.cells) if args.cells is not None else shipped_path() / results  # names where it looked
    if not any((cells / "cells").glob("*.npz")):
        raise ValueError(f"--cells: no exported cells in {cells / 'cells'} (plan {args.plan!r})")
    out = Path(args.out) if args.out is not None else (cells if args.cells is not None else shipped_path() / page)
    return run_certified_command(argparse.Namespace(
        plan=which, spectra=None, cells=str(cells), store=None, depths=None, report_only=True, contrast_depth=None,
        out=str(out), backend="local", workers=1, scheduler=None, store_dir=None, cache_dir=None,
        no_progress=args.no_progress, progress=None, page_command="idepth study page " + " ".join(sys.argv[3:])))


def _shared_options(actions, steps) -> list[str]:
    """The option strings every one of ``steps``' parsers accepts (``-h`` aside), in the first one's order."""
    def options(step):
        return [o for action in actions.choices[step]._actions for o in action.option_strings if o.startswith("--")]

    return [o for o in options(steps[0]) if o != "--help" and all(o in options(step) for step in steps[1:])]


def run_plan(args, actions) -> int:
    """Run ``idepth study run PLAN``: each of the plan's steps with the options given after PLAN.

    A plan of several steps (``plateaus``) passes every option to each step, so it accepts only options that
    all its steps take; any other is refused, naming the step that lacks it, before anything runs.
    """
    if args.plan is None:
        raise ValueError(f"PLAN missing: one of {', '.join(PLANS)} (see idepth study run --help)")
    steps, _ = PLANS[args.plan]
    parsed = []
    for step in steps:
        parser = actions.choices[step]
        if len(steps) == 1:
            parsed.append(parser.parse_args(args.options))
            continue
        if any(option in ("-h", "--help") for option in args.options):
            print(f"idepth study run {args.plan}: runs {', then '.join(steps)}, each with the options given; the "
                  f"options all of them take: {', '.join(_shared_options(actions, steps))} "
                  f"(what each means: {'; '.join(f'idepth study {other} --help' for other in steps)})")
            return 0
        namespace, unknown = parser.parse_known_args(args.options)
        if unknown:
            raise ValueError(f"plan {args.plan!r}: {unknown[0]} is not an option of its step {step!r} "
                             f"(run 'idepth study {step}' for it)")
        parsed.append(namespace)
    status = 0
    for namespace in parsed:
        status = max(status, namespace.func(namespace))
    return status


def _name_the_actions(subparsers, parser, actions) -> None:
    """Name every registered action in ``idepth --help``'s study line and in ``idepth study --help``'s description
    (computed from the sub-parsers, so an action added above is named without editing any text)."""
    names = ", ".join(actions.choices)
    parser.description += f" Actions: {names} ('idepth study ACTION --help' describes each)."
    for choice in subparsers._choices_actions:  # the line of 'study' in idepth --help
        if choice.dest == "study":
            choice.help = f"{HELP}: {names}"


def _ints(text: str, name: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"{name} must be comma-separated integers; got {text!r}") from None


def _size_grid() -> tuple:
    from numerics.experiments.scales import SIZE_GRID_D, SIZE_GRID_P

    return SIZE_GRID_D, SIZE_GRID_P


def run_sizes(args) -> int:
    """Run ``idepth study sizes``."""
    import dataclasses

    from numerics.experiments.study import infer_sizes, write_size_inference
    from numerics.io import check_output_dir
    from theory.validation import check_positive_int

    d_values, P_values = _ints(args.d, "--d"), _ints(args.P, "--P")
    for name, values in (("--d", d_values), ("--P", P_values)):
        if not values:
            raise ValueError(f"{name} must list at least one size")
        for v in values:
            check_positive_int(name, v)
    check_positive_int("--contexts", args.contexts, minimum=16)
    check_positive_int("--seeds", args.seeds, minimum=2)
    execution = execution_from_args(args)
    check_output_dir(args.out, "--out")
    execution = dataclasses.replace(execution, cache_dir=execution.cache_dir or Path(args.out) / "cache")
    result = infer_sizes(d_values, P_values, n_contexts=args.contexts, n_seeds=args.seeds, execution=execution)
    markdown = write_size_inference(result, args.out)
    print(markdown)
    print(f"wrote {args.out}/sizes.md, sizes.json, figures/sizes_chi2.png")
    return 0


def _fresh_directory(prefix: str) -> Path:
    """A directory name ``prefix-<UTC time>`` in the working directory that does not exist yet."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    path, n = Path(f"{prefix}-{stamp}"), 1
    while path.exists():
        n += 1
        path = Path(f"{prefix}-{stamp}-{n}")
    return path


def run_certified_command(args) -> int:
    """Run ``idepth study certified``."""
    import dataclasses

    from numerics.experiments.study.certified import run_certified_study
    from numerics.experiments.study.certified.page import write_certified
    from numerics.experiments.study.certified.plan import REVISED_PLAN

    plan = REVISED_PLAN
    if args.spectra is not None:
        wanted = parse_spectra(args.spectra)
        known = {(float(a), float(b)) for a, b in plan.spectra}
        unknown = [f"{a:g},{b:g}" for a, b in wanted if (a, b) not in known]
        if unknown:
            raise ValueError(f"--spectra: {'; '.join(unknown)} not in the plan's spectra "
                             f"({'; '.join(f'{a:g},{b:g}' for a, b in plan.spectra)})")
        plan = dataclasses.replace(plan, spectra=tuple(wanted))
    if args.cells is None:
        args.cells = "docs/results/certified-revised"
    if args.store is None:
        args.store = "store-certified-revised"
    depths = None if args.depths is None else _ints(args.depths, "--depths")
    if depths is not None and tuple(depths) != plan.depths[: len(depths)]:
        raise ValueError(f"--depths must be a prefix of {','.join(map(str, plan.depths))}; got {args.depths!r}")
    execution = execution_from_args(args)
    cells, frontier, contrasts = (Path(args.cells) / name for name in ("cells", "frontier", "contrasts"))
    out = args.out if args.out is not None else _fresh_directory("certified-study")
    started = time.monotonic()

    def progress(message: str) -> None:
        if execution.progress is not False:
            print(f"idepth study certified: [{time.monotonic() - started:5.1f} s] {message}", file=sys.stderr, flush=True)

    if args.out is None:
        print(f"idepth study certified: no --out given: writing to the fresh directory {out} (--out docs/results "
              "updates the shipped page)", file=sys.stderr)
    if not args.report_only:
        run_certified_study(plan, execution.store_dir, execution=execution, depths=depths, cells_dir=cells,
                            frontier_dir=frontier)
    command = getattr(args, "page_command", None) or (
        "idepth study certified " + " ".join(sys.argv[3:]) if len(sys.argv) > 3 else "idepth study certified")
    rows, summaries = write_certified(out, cells, plan, command=command, contrasts_dir=contrasts, progress=progress,
                                      contrast_depth=args.contrast_depth)
    print(f"wrote {out}/certified-study.csv ({len(rows)} candidates), certified-study.md")
    _update_answer(out)
    for summary in summaries:
        verdict, reason = summary.verdict
        print(f"  a={summary.setting[0]:g} b={summary.setting[1]:g} P={summary.setting[5]} k={summary.setting[2]}: "
              f"{verdict} ({reason})")
    return 0


def _update_answer(out) -> None:
    """Rewrite the checkout's answer blocks when ``out`` is its shipped results (or the revised study's, inside).

    The answer (README.md, docs/index.md, the certified page) is computed from those files
    (:func:`numerics.experiments.study.answer.write_answer_blocks`), so it follows them when they change.
    """
    from numerics.experiments.study.answer import write_answer_blocks
    from numerics.experiments.shipped import ShippedResultsNotFound, checkout_root, shipped_path

    if checkout_root() is None:
        return
    try:
        shipped = shipped_path().resolve()
    except ShippedResultsNotFound:
        return
    target = Path(out).resolve()
    if target == shipped or shipped in target.parents:
        for path in write_answer_blocks():
            print(f"updated the answer in {path}", file=sys.stderr)


def _scale_names() -> tuple:
    from numerics.experiments.scales import SCALES

    return tuple(SCALES)


def run_regime(args) -> int:
    """Run ``idepth study regime``."""
    from numerics.experiments.study import run_regime_study, write_regime_study
    from numerics.io import check_output_dir

    execution = execution_from_args(args)
    check_output_dir(args.out, "--out")  # every output is checked before any training
    if args.store is not None:
        check_output_dir(args.store, "--store")
    try:
        study = run_regime_study(args.scale, args.out, execution=execution, consistency={})
    except RuntimeError as exc:
        print(f"idepth study: {exc}", file=sys.stderr)
        return 1
    study = write_regime_study(study)
    report = study.consistency
    print(f"regime: {study.regime_name}")
    print(f"{report.n_below} of {len(report.rows)} paper values are below the oracle bound")
    print(f"wrote {study.out_dir}/study.md and consistency.md ({len(study.figures)} figure files, {study.runs} "
          f"training runs, {study.wall_time:.0f} s)")
    return 0


def run_consistency(args) -> int:
    """Run ``idepth study consistency``."""
    import dataclasses

    from numerics.experiments.study import paper_consistency
    from numerics.io import make_output_dir, write_text

    P_values = _ints(args.P, "--P")
    execution = execution_from_args(args)
    out = make_output_dir(args.out, "--out")
    report = paper_consistency(d=args.d, P_values=P_values, n_contexts=args.contexts,
                               execution=dataclasses.replace(execution, cache_dir=out / "cache"))
    write_text(out / "consistency.md", report.markdown)
    print(f"{report.n_below} of {len(report.rows)} paper values are below the oracle bound; "
          f"wrote {Path(args.out) / 'consistency.md'}")
    return 0


def run_defaults(args) -> int:
    """Run ``idepth study defaults``."""
    from numerics.experiments.study import make_softmax_defaults
    from numerics.io import check_output_dir, check_output_file

    # every output is checked before any training; no store is left in the working directory unless asked
    execution = execution_from_args(args)
    check_output_file(args.out, "--out", suffixes=("json",))
    if args.store is not None:
        check_output_dir(args.store, "--store")
    spectra = None if args.spectra is None else parse_spectra(args.spectra)
    regimes = tuple(r.strip() for r in args.regimes.split(",") if r.strip())
    try:  # without --store, the library trains into a temporary store it removes afterwards
        data = make_softmax_defaults(
            args.out, scale=args.scale, spectra=spectra, regimes=regimes, default_regime=args.default_regime,
            execution=execution,
        )
    except RuntimeError as exc:
        print(f"idepth study: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}: {len(data['entries'])} entries (regimes {', '.join(regimes)})")
    return 0
