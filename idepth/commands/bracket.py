"""``idepth bracket``: the infinite-mixture limit R*_∞ (Frank–Wolfe over measures of forms), shipped as data,
and what would close its bracket (``closure``)."""

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
            "spectrum). 'closure' reads the shipped brackets: what would close each one (the width's two parts, "
            "their measured rates, the iterations and fit-set size they need, the CPU hours)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  idepth bracket compute\n  idepth bracket compute --spectra '0,0;0,0.25' "
               "--out theory/data/mixture_limit\n  idepth bracket closure",
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
    closure = sub.add_parser(
        "closure", help="what would close the shipped bracket: width, its parts, their rates, the cost",
        description="Per shipped spectrum: the width (upper - lower) split into overfit (report minus fit loss) and "
                    "the Frank-Wolfe gap, the target U_128 - upper (paired), the measured rates (gap ~ t^-p over the "
                    "iterations, overfit ~ n^-q over the fit-set sizes; 'n/a' where not measured), the iterations "
                    "and fit-set size each part needs to reach half the target, and the CPU hours "
                    "(theory.mixture_limit.bracket_closure; derivation page 'bracket').")
    closure.add_argument("--spectra", help="'a,b;a,b' (default: the paper's Table 1 spectra)")
    closure.set_defaults(func=run_closure)


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


def _cell(value, spec: str, width: int = 11) -> str:
    return format("n/a" if value is None else format(value, spec), f"<{width}")


def run_closure(args: argparse.Namespace) -> int:
    from theory.mixture_limit import bracket_closure, shipped_infinite_mixture
    from theory.paper import TABLE1_SPECTRA
    from theory.spectra import PowerLawSpectrum

    spectra = parse_spectra(args.spectra) if args.spectra else [tuple(s) for s in TABLE1_SPECTRA]
    mixes = [shipped_infinite_mixture(PowerLawSpectrum(a, b, 16), 64, 2) for a, b in spectra]
    missing = [f"({a:g}, {b:g})" for (a, b), mix in zip(spectra, mixes) if mix is None]
    if missing:
        raise ValueError(f"--spectra {', '.join(missing)} have no shipped R*_inf bracket; run idepth bracket compute")
    print("(a, b)      width   overfit gap     target  gap p         overfit q     iterations  n needed    CPU h")
    for (a, b), mix in zip(spectra, mixes):
        c = bracket_closure(mix)
        p, q = c["gap_rate"], c["overfit_rate"]
        print(f"{f'({a:g}, {b:g})':<11} {c['width']:<7.4f} {c['overfit']:<7.4f} {c['gap']:<7.4f} "
              f"{c['target']:<7.4f} {p['exponent']:5.2f}+-{p['exponent_se']:4.2f}{'' if p['measured'] else '*':1} "
              f"{q['exponent']:5.2f}+-{q['exponent_se']:4.2f}{'' if q['measured'] else '*':1} "
              f"{_cell(c['iterations_needed'], '.3g')} {_cell(c['fit_size_needed'], '.3g')} "
              f"{_cell(c['cpu_hours'], '.3g', 0)}")
    print("* rate not measured (exponent not above 2 SE). target = U_128 - upper, paired; each part must reach half "
          "of it.")
    return 0
