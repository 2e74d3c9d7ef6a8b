"""``idepth study run PLAN`` and ``idepth study page PLAN``: the named plans of :mod:`numerics.experiments.study`.

The former actions (``regime``, ``consistency``, ``sizes``, ``certified``, ``defaults``) stay as aliases
(:data:`ALIASES`). Each function parses and checks its flags, then calls the Python API its docstring names.

Exit status: 0 on success, 1 when training runs failed, 2 on bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import _study_runs as _runs
from ._execution import add_execution_flags

HELP = "the package's studies of where inverse-depth scaling appears and of the paper's numbers"


def _regimes(p) -> None:
    p.add_argument("--scale", default="quick", choices=_scale_names(),
                   help="the study budget of a reproduction scale: quick (default: d = N = 32, P = 128, 81 training "
                        "runs, shared with 'idepth reproduce --scale quick' through --store), medium or paper "
                        "(thousands of runs: use dask), smoke (seconds; numbers mean nothing)")
    p.add_argument("--out", metavar="DIR", default="study-out", help="output directory (default study-out)")
    p.add_argument("--store", metavar="DIR", default=None,
                   help="sweep store (default DIR/store); give a reproduction's store to share its runs")
    add_execution_flags(p)


def _bounds_options(p, contexts: int) -> None:
    p.add_argument("--out", metavar="DIR", default="study-out", help="output directory (default study-out)")
    p.add_argument("--contexts", type=int, default=contexts, help=f"Monte-Carlo contexts per bound (default {contexts})")
    p.add_argument("--workers", type=int, default=1, help="processes computing bounds (default 1)")
    p.add_argument("--no-progress", action="store_true", help="no progress output")


def _consistency(p) -> None:
    _bounds_options(p, 8192)
    p.add_argument("--d", type=int, default=128, help="input dimension (default 128)")
    p.add_argument("--P", default="1024,2048", help="context lengths, comma separated (default 1024,2048)")


def _sizes(p) -> None:
    from numerics.experiments.study.plan import SIZE_GRID_D, SIZE_GRID_P

    _bounds_options(p, 2048)
    p.add_argument("--d", default=",".join(map(str, SIZE_GRID_D)), help="input dimensions, comma separated")
    p.add_argument("--P", default=",".join(map(str, SIZE_GRID_P)), help="context lengths, comma separated")
    p.add_argument("--seeds", type=int, default=4, help="independent seeds per bound (default 4)")


def _plateaus(p) -> None:
    """The options both steps take, each handed to both (unset: each step's own default)."""
    steps = [argparse.ArgumentParser(add_help=False) for _ in STEPS]
    for parser, (_, options, _) in zip(steps, STEPS.values()):
        options(parser)
    for action in steps[0]._actions:
        if all(action.option_strings[0] in other._option_string_actions for other in steps[1:]):
            p.add_argument(*action.option_strings, default=argparse.SUPPRESS,
                           help=action.help.split(" (default")[0] + " (default: each step's own)",
                           **({"action": "store_true"} if action.nargs == 0 else {"metavar": action.metavar}))


def _certified(p) -> None:
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output directory (default: a fresh directory certified-study-<time>, named on stderr, so "
                        "the shipped page is never overwritten by accident)")
    p.add_argument("--store", metavar="DIR", default=None,
                   help="working store (default store-certified-revised; rebuilt from --cells when missing)")
    p.add_argument("--spectra", default=None, metavar="'a,b;a,b'", help="only these of the plan's spectra")
    p.add_argument("--cells", metavar="DIR", default="docs/results/certified-revised",
                   help="exported cells (DIR/cells) and frontier weights (DIR/frontier); default the shipped ones")
    p.add_argument("--depths", default=None, metavar="1,2,4", help="stop after these depths (a prefix of 1,2,4,...)")
    p.add_argument("--report-only", action="store_true", help="no training: the page from the exported cells")
    p.add_argument("--contrast-depth", type=int, default=None, metavar="L",
                   help="the deepest depth of the page's descriptive contrast g_2/g_L (default the deepest done)")
    add_execution_flags(p)


def _population(p) -> None:
    from numerics.engines import jax_available

    p.add_argument("--engine", default="jax" if jax_available() else "numpy", choices=("jax", "numpy"),
                   help="what trains the candidates (default jax when installed: pip install -e \".[jax]\")")
    p.add_argument("--force", action="store_true",
                   help="run on a CPU too (refused without it: the estimate printed first says how many hours)")
    p.add_argument("--out", metavar="DIR", default=None, help="output directory (default: a fresh directory)")
    p.add_argument("--store", metavar="DIR", default=None, help="working store (default store-population)")
    p.add_argument("--cells", metavar="DIR", default="population-results",
                   help="exported cells and frontier weights, resumed from (default population-results)")
    p.add_argument("--spectra", default=None, metavar="'a,b;a,b'", help="only these of the plan's spectra")
    p.add_argument("--depths", default=None, metavar="1,2,4", help="stop after these depths (a prefix of 1,2,4,...)")
    p.set_defaults(report_only=False, contrast_depth=None)
    add_execution_flags(p)


def _defaults(p) -> None:
    p.add_argument("--scale", default="quick", choices=_scale_names(), help="the study budget (default quick)")
    p.add_argument("--out", metavar="FILE", default="softmax_defaults.json", help="JSON file to write")
    p.add_argument("--spectra", default=None, help="grid of (a, b), e.g. '0,0;0.5,0' (default: the scale's)")
    p.add_argument("--regimes", default="lazy,converged", help="regimes to measure (default lazy,converged)")
    p.add_argument("--default-regime", default="lazy",
                   help="the regime predict_loss(regime='calibrated') reads without a calibration (default lazy)")
    p.add_argument("--store", metavar="DIR", default=None,
                   help="sweep store of the training runs (default: a temporary directory, removed afterwards)")
    add_execution_flags(p)


#: plan -> (what it answers, its options, the function that runs it)
PLANS = {
    "certified": ("the best loss each depth reaches (several starts, certificates) and the verdict on the c/L law; "
                  "many core-hours, resumable", _certified, _runs.run_certified),
    "regimes": ("lazy vs converged training, frozen heads, separate models; then the paper's plateaus against "
                "the oracle bounds", _regimes, _runs.run_regime),
    "defaults": ("measure and write the softmax defaults file read by theory.predict_loss",
                 _defaults, _runs.run_defaults),
    "population": ("the certified design at population scale (batch 4096, caps 20k/40k/80k, 2^18-context sets) on the "
                   "JAX engine; prints its cost first, refused on a CPU without --force", _population,
                   _runs.run_population),
    "plateaus": ("the paper's nonlinear plateaus (Tables 1, 4) against the oracle bounds, then the (d, P) they imply; "
                 "the options both steps take", _plateaus, lambda args: run_plateaus(args)),
}
#: the plateaus plan's two steps, each also an action of its own
STEPS = {"consistency": ("the paper's nonlinear plateaus against the oracle bounds (the plateaus plan's first step)",
                         _consistency, _runs.run_consistency),
         "sizes": ("the (d, P) the paper's plateaus imply, chi-square against the bounds (its second step)",
                   _sizes, _runs.run_sizes)}
#: the former actions, each now a plan or a step of one
ALIASES = {"certified": "certified", "regime": "regimes", "defaults": "defaults", "consistency": "consistency",
           "sizes": "sizes"}
#: page plan -> where its results (cells/) and its page live in a checkout, relative to docs/results
PAGE_PLANS = {"certified": ("certified-revised", "certified-revised")}


def register(subparsers) -> None:
    """Add ``study`` with ``run PLAN``, ``page PLAN`` and the aliases to ``subparsers``."""
    parser = subparsers.add_parser("study", help=f"{HELP}: run PLAN ({', '.join(PLANS)}), page PLAN",
                                   description="The studies the paper does not give, each a named plan: 'idepth study "
                                               "run --help' lists them. Training runs are cached and resumable.")
    actions = parser.add_subparsers(dest="study_command", metavar="ACTION", required=True)
    run = actions.add_parser("run", help=f"run a named plan: {', '.join(PLANS)}",
                             description="Run one of the package's named plans; 'idepth study run PLAN --help' lists "
                                         "its options.")
    plans = run.add_subparsers(dest="plan", metavar="PLAN")
    run.set_defaults(func=_missing_plan)  # each plan's parser sets its own
    for name, (summary, options, func) in PLANS.items():
        options(plans.add_parser(name, help=summary, description=summary))
        plans.choices[name].set_defaults(func=func)
    for alias, name in ALIASES.items():  # the plan's (or step's) parser under the old name
        summary, options, func = {**PLANS, **STEPS}[name]
        options(actions.add_parser(alias, help=f"= idepth study run {name}" if name in PLANS else summary, description=summary))
        actions.choices[alias].set_defaults(func=func)
    page = actions.add_parser(
        "page", help=f"write a plan's page from its exported results, no training: {', '.join(PAGE_PLANS)}",
        description="Write a plan's page from its exported cells, training nothing: certified (the revised certified "
                    "study, the evidence of the package's answer). --cells defaults to the shipped results "
                    "(docs/results of a checkout, or IDEPTH_RESULTS); --out to beside them.")
    page.add_argument("plan", metavar="PLAN", choices=tuple(PAGE_PLANS), help=f"one of {', '.join(PAGE_PLANS)}")
    page.add_argument("--cells", metavar="DIR", default=None, help="the study's results directory (its cells/)")
    page.add_argument("--out", metavar="DIR", default=None, help="where the page goes (default: beside the cells)")
    page.add_argument("--no-progress", action="store_true", help="no progress lines")
    page.set_defaults(func=run_page)


def _missing_plan(args) -> int:
    raise ValueError(f"PLAN missing: one of {', '.join(PLANS)} (see idepth study run --help)")


def run_page(args) -> int:
    """``idepth study page PLAN``: :func:`run_certified` with ``--report-only`` on the plan's exported cells."""
    from numerics.experiments.shipped import shipped_path

    results, page = PAGE_PLANS[args.plan]
    cells = Path(args.cells) if args.cells is not None else shipped_path() / results  # names where it looked
    if not any((cells / "cells").glob("*.npz")):
        raise ValueError(f"--cells: no exported cells in {cells / 'cells'} (plan {args.plan!r})")
    out = Path(args.out) if args.out is not None else (cells if args.cells is not None else shipped_path() / page)
    return _runs.run_certified(argparse.Namespace(
        spectra=None, cells=str(cells), store=None, depths=None, report_only=True, contrast_depth=None,
        out=str(out), backend="local", workers=1, scheduler=None, no_progress=args.no_progress,
        command="idepth study page " + " ".join(sys.argv[3:])))


def run_plateaus(args) -> int:
    """``idepth study run plateaus``: :func:`run_consistency` then :func:`run_sizes`, each given the options set."""
    argv = []
    for key, value in vars(args).items():
        if key not in ("func", "command", "study_command", "plan"):
            argv += [f"--{key.replace('_', '-')}"] + ([] if value is True else [str(value)])
    steps = []
    for summary, options, func in STEPS.values():
        parser = argparse.ArgumentParser(add_help=False)
        options(parser)
        steps.append((func, parser.parse_args(argv)))
    return max(func(namespace) for func, namespace in steps)


def _scale_names() -> tuple:
    from numerics.experiments.study.regime_plans import STUDY_SCALES

    return tuple(STUDY_SCALES)
