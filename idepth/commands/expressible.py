"""``idepth expressible``: the best expressible loss U_L (run and ship it; check trained models against it)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._parsing import spectra as parse_spectra

HELP = "U_L, the best expressible loss at each depth: compute and ship it (run), or check trained models (check)"


def register(subparsers) -> None:
    """Add the ``expressible`` sub-command."""
    parser = subparsers.add_parser(
        "expressible", help=HELP,
        description=(
            "U_L (theory.expressible.best_expressible): at each depth the best loss found among averages of L "
            "softmax heads -- cosine heads (atomic), random quadratic forms drawn from a fitted form law (diffuse), "
            "a local search over both (combination), and the depth-L/2 winner with every head twice (nested) -- "
            "each a model of the class, so U_L is an upper bound on the optimum R*_L. 'run' computes it at the "
            "paper's Table 1 spectra (d = 16, P = 64, top-2, depths 1-128; a few CPU minutes per spectrum, "
            "resumable) into theory/data/expressible/, which theory.predict_loss reads; 'check' compares the "
            "certified study's lazy recipe with the exchangeable law of its initial heads at U_L's depths "
            "(docs/results/expressible.md; the revised certified study pairs its envelope with U_L per cell)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  idepth expressible run\n  idepth expressible run --spectra '0,0;0,0.25' --out /tmp/u\n"
               "  idepth expressible check",
    )
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    run_parser = sub.add_parser(
        "run", help="compute U_L at the Table 1 spectra (resumable)",
        description="Compute U_L at each depth 1-128 (d = 16, P = 64, top-2) for the given spectra and write one "
                    "file per spectrum into --out (default: theory/data/expressible, which theory.predict_loss "
                    "reads). A spectrum whose file exists is skipped unless --recompute, so "
                    "an interrupted run computes only the spectra still missing.")
    run_parser.add_argument("--spectra", help="'a,b;a,b' (default: the paper's Table 1 spectra)")
    run_parser.add_argument("--out", type=Path, help="directory (default: theory/data/expressible of this install)")
    run_parser.add_argument("--recompute", action="store_true", help="recompute spectra whose files exist")
    run_parser.set_defaults(func=run)
    check_parser = sub.add_parser(
        "check", help="the certified study's lazy recipe against the exchangeable law of its initial heads",
        description="Compare the certified study's lazy recipe (its exported contrast runs) with the exchangeable "
                    "law of its own initial heads, spectrum by spectrum and depth by depth (the depths of the "
                    "shipped U_L), and write expressible.md, its figure and tables into the results directory (a few "
                    "CPU minutes: the lazy heads' law is drawn afresh). On the checkout's own results it also "
                    "updates the answer in README.md and docs/index.md.")
    check_parser.add_argument("--out", type=Path, default=None,
                              help="results directory (default: the shipped results: docs/results of this checkout, "
                                   "or $IDEPTH_RESULTS)")
    check_parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "run":
        from numerics.experiments.study.expressible import TABLE1_SPECTRA, run_expressible
        from numerics.io import check_output_dir

        spectra = parse_spectra(args.spectra) if args.spectra else list(TABLE1_SPECTRA)
        if args.out is not None:
            check_output_dir(args.out, "--out")
        from ._working import working

        with working("idepth expressible run", "computing U_L"):  # its own lines come per spectrum, minutes apart
            run_expressible(spectra, args.out, recompute=args.recompute,
                            progress=lambda message: print(message, file=sys.stderr, flush=True))
        return 0
    from numerics.experiments.study.answer import write_answer_blocks
    from numerics.experiments.study.expressible_checks import check_results_dir, write_expressible_checks
    from numerics.experiments.shipped import checkout_root, shipped_path

    if args.out is not None:
        out = check_results_dir(args.out, "--out")  # before the Monte Carlo (CPU minutes)
    else:
        out = check_results_dir(shipped_path(), "the shipped results (docs/results, or $IDEPTH_RESULTS)")
    from ._working import working

    with working("idepth expressible check", "checking"):  # its own lines come per spectrum, tens of seconds apart
        write_expressible_checks(out, progress=lambda message: print(message, file=sys.stderr, flush=True))
    if args.out is None and checkout_root() is not None:
        # the checkout's own results: the answer stated in README.md and docs/index.md follows them
        for path in write_answer_blocks():
            print(f"updated the answer in {path}", file=sys.stderr)
    return 0
