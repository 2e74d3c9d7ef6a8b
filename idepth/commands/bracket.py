"""``idepth bracket``: the infinite-mixture limit R*_∞ (Frank–Wolfe over measures of forms), shipped as data."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._parsing import spectra as parse_spectra

HELP = "R*_inf, the infinite-mixture limit, bracketed from both sides (Frank-Wolfe): compute, ship"


def register(subparsers) -> None:
    """Add the ``bracket`` sub-command."""
    parser = subparsers.add_parser(
        "bracket", help=HELP,
        description=(
            "R*_inf = inf over measures mu of forms and gains g of E(g E_mu u_D - y*)^2 (theory.mixture_limit): "
            "a lower bound on every R*_L (derivation page 'bracket'). 'compute' runs fully corrective Frank-Wolfe "
            "per spectrum (d = 16, P = 64, top-2) and writes one JSON per spectrum: the forms, weights and gain, "
            "the upper estimate (report-set loss +- SE), the lower estimate (fit loss minus the duality gap), the "
            "head kernel's eigenvalues and the depth exponent they predict. Resumable: an interrupted spectrum "
            "continues from its last iteration; only a finished run is marked final (a few CPU minutes per "
            "spectrum)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  idepth bracket compute\n  idepth bracket compute --spectra '0,0;0,0.25' "
               "--out theory/data/mixture_limit",
    )
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    compute = sub.add_parser(
        "compute", help="compute R*_inf at the given spectra (resumable)",
        description="Run Frank-Wolfe for each spectrum and write <out>/a{a}_b{b}_d16_P64_k2.json. A spectrum whose "
                    "final file exists is not recomputed unless --recompute; every final measure then gets "
                    "--gap-checks further oracle calls (once). A progress line per iteration (stderr).")
    compute.add_argument("--spectra", help="'a,b;a,b' (default: the paper's Table 1 spectra)")
    compute.add_argument("--out", type=Path, help="directory (default: theory/data/mixture_limit of this install)")
    compute.add_argument("--iterations", type=int, default=None, help="Frank-Wolfe iterations (default 30)")
    compute.add_argument("--gap-checks", type=int, default=3,
                         help="further oracle calls at each final measure; the largest gap found is kept (default 3)")
    compute.add_argument("--recompute", action="store_true", help="recompute spectra whose final files exist")
    compute.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from theory.mixture_limit import compute_spectra
    from theory.paper import TABLE1_SPECTRA

    spectra = parse_spectra(args.spectra) if args.spectra else [tuple(s) for s in TABLE1_SPECTRA]
    if args.gap_checks < 1:
        raise ValueError(f"--gap-checks must be an integer >= 1; got {args.gap_checks}")
    if args.out is not None:
        from numerics.io import check_output_dir

        check_output_dir(args.out, "--out")  # a directory that cannot be written fails before any work
    options = {} if args.iterations is None else {"iterations": args.iterations}
    compute_spectra(spectra, args.out, recompute=args.recompute, gap_checks=args.gap_checks,
                    progress=lambda message: print(message, file=sys.stderr, flush=True), **options)
    return 0
