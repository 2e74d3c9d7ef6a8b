"""``idepth study``: where inverse-depth scaling appears, the oracle bounds, the measured softmax defaults.

A thin layer over :mod:`numerics.experiments.study`:

* ``idepth study regime [--scale quick|full] [--out DIR] [--store DIR] [--backend local|dask] [--workers N]``
  -- :func:`numerics.experiments.study.run_regime_study` then :func:`numerics.experiments.study.paper_consistency`;
  writes ``DIR/study.md`` (both Markdown sections), ``DIR/study.json``, ``DIR/figures/``;
* ``idepth study consistency [--out DIR] [--d 128] [--P 1024,2048] [--contexts N]``
  -- the paper's nonlinear plateaus against the oracle bounds only;
* ``idepth study defaults [--scale quick] [--out FILE] [--spectra 'a,b;a,b'] [--regimes ...]``
  -- :func:`numerics.experiments.study.make_softmax_defaults` (the file ``theory.predict_loss`` reads).

Exit status: 0 on success, 1 when training runs failed, 2 on bad input (one line on stderr).
"""

from __future__ import annotations

import sys
from pathlib import Path

HELP = "regime study (where inverse-depth appears), oracle bounds vs the paper, measured softmax defaults"


def register(subparsers) -> None:
    """Add the ``study`` sub-command (``regime``, ``consistency``, ``defaults``) to ``subparsers``."""
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
    regime.add_argument("--scale", default="quick",
                        help="quick (default: d = N = 32, P = 128, 81 training runs; its lazy and converged runs are "
                             "those of 'idepth reproduce --scale quick', shared with --store) or full (d in {16, 32, 64}, "
                             "P/d in {4, 16}, N in {d, 2d}: thousands of runs, use dask)")
    regime.add_argument("--out", metavar="DIR", default="study-out", help="output directory (default study-out)")
    regime.add_argument("--store", metavar="DIR", default=None,
                        help="sweep store (default DIR/store); give a reproduction's store to share its runs")
    _execution_options(regime)
    regime.add_argument("--consistency-contexts", type=int, default=None, metavar="N",
                        help="Monte-Carlo contexts per bound in the consistency check (default: 2048 quick, 8192 full)")
    regime.add_argument("--no-consistency", action="store_true", help="skip the paper-consistency check")
    regime.set_defaults(func=run_regime)

    consistency = actions.add_parser(
        "consistency", help="the paper's nonlinear plateaus (Tables 1, 4) against the oracle bounds",
        description="Best single softmax head and best mixture over exact cosine similarity at d, P; every paper "
                    "value below the bound is listed. Bounds are cached in DIR/bounds_cache.json.",
    )
    consistency.add_argument("--out", metavar="DIR", default="study-out", help="output directory (default study-out)")
    consistency.add_argument("--d", type=int, default=128, help="input dimension (default 128)")
    consistency.add_argument("--P", default="1024,2048", help="context lengths, comma separated (default 1024,2048)")
    consistency.add_argument("--contexts", type=int, default=8192, help="Monte-Carlo contexts per bound (default 8192)")
    consistency.add_argument("--workers", type=int, default=1, help="processes computing bounds (default 1)")
    consistency.add_argument("--no-progress", action="store_true",
                             help="no progress output (a bar on a terminal, otherwise a one-line record every 30 s)")
    consistency.set_defaults(func=run_consistency)

    defaults = actions.add_parser(
        "defaults", help="measure and write the softmax defaults file read by theory.predict_loss",
        description="Train the regimes over a spectrum grid (sweep layer; the runs are kept in --store if given), "
                    "fit R_L = L0 + c/L and write the JSON with its provenance. --out and --store are checked "
                    "before any training.",
    )
    defaults.add_argument("--scale", default="quick", help="sizes, depths and seeds (default quick)")
    defaults.add_argument("--out", metavar="FILE", default="softmax_defaults.json", help="JSON file to write")
    defaults.add_argument("--spectra", default=None, help="grid of (a, b), e.g. '0,0;0.5,0;0,0.5' (default: the scale's)")
    defaults.add_argument("--regimes", default="lazy,converged", help="regimes to measure (default lazy,converged)")
    defaults.add_argument("--default-regime", default="lazy", help="regime predict_loss uses by default (default lazy)")
    defaults.add_argument("--store", metavar="DIR", default=None,
                          help="sweep store to keep the training runs in (a cache: re-running reuses them); default: "
                               "a temporary directory, removed at the end")
    _execution_options(defaults)
    defaults.set_defaults(func=run_defaults)


def _execution_options(parser) -> None:
    parser.add_argument("--backend", choices=("local", "dask"), default="local", help="local processes (default) or dask")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: usable cores)")
    parser.add_argument("--scheduler", metavar="ADDR", default=None, help="dask scheduler address (dask only)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress output (bars on a terminal, otherwise a one-line record every 30 s)")


def _spectra(text: str) -> list[tuple[float, float]]:
    out = []
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        try:
            a, b = (float(x) for x in part.split(","))
        except ValueError:
            raise ValueError(f"--spectra must look like 'a,b;a,b' (e.g. '0,0;0.5,0'); got {text!r}") from None
        out.append((a, b))
    if not out:
        raise ValueError(f"--spectra must list at least one 'a,b'; got {text!r}")
    return out


def _ints(text: str, name: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"{name} must be comma-separated integers; got {text!r}") from None


def run_regime(args) -> int:
    """Run ``idepth study regime``."""
    from numerics.experiments.study import SCALES, paper_consistency, run_regime_study
    from numerics.io import atomic_write

    from numerics.io import check_output_dir

    if args.scale not in SCALES or args.scale == "smoke":
        raise ValueError(f"--scale must be one of 'quick', 'full'; got {args.scale!r}")
    check_output_dir(args.out, "--out")
    if args.store is not None:
        check_output_dir(args.store, "--store")
    progress = None if not args.no_progress else False
    try:
        study = run_regime_study(args.scale, args.out, backend=args.backend, workers=args.workers,
                                 scheduler=args.scheduler, store_dir=args.store, progress=progress)
    except RuntimeError as exc:
        print(f"idepth study: {exc}", file=sys.stderr)
        return 1
    text = study.markdown
    if not args.no_consistency:
        n = args.consistency_contexts or (2048 if args.scale == "quick" else 8192)
        report = paper_consistency(study=study, n_contexts=n, out_dir=args.out, workers=args.workers or 1,
                                   progress=progress)
        text = text + "\n" + report.markdown

    atomic_write(Path(args.out) / "study.md", lambda fh: fh.write(text.encode("utf-8")))
    print(f"regime: {study.regime_name}")
    print(f"wrote {Path(args.out) / 'study.md'} ({len(study.figures)} figure files, {study.runs} training runs, "
          f"{study.wall_time:.0f} s)")
    return 0


def run_consistency(args) -> int:
    """Run ``idepth study consistency``."""

    from numerics.experiments.study import paper_consistency
    from numerics.io import atomic_write, check_output_dir

    P_values = _ints(args.P, "--P")
    check_output_dir(args.out, "--out")
    report = paper_consistency(d=args.d, P_values=P_values, n_contexts=args.contexts, out_dir=args.out,
                               workers=args.workers, progress=None if not args.no_progress else False)
    atomic_write(Path(args.out) / "consistency.md", lambda fh: fh.write(report.markdown.encode("utf-8")))
    print(f"{report.n_below} of {len(report.rows)} paper values are below the oracle bound; "
          f"wrote {Path(args.out) / 'consistency.md'}")
    return 0


def run_defaults(args) -> int:
    """Run ``idepth study defaults``."""
    import tempfile

    from numerics.experiments.study import SCALES, make_softmax_defaults
    from numerics.io import check_output_dir, check_output_file

    if args.scale not in SCALES:
        raise ValueError(f"--scale must be one of {', '.join(map(repr, SCALES))}; got {args.scale!r}")
    spectra = None if args.spectra is None else _spectra(args.spectra)
    regimes = tuple(r.strip() for r in args.regimes.split(",") if r.strip())
    # every output is checked before any training; no store is left in the working directory unless asked
    check_output_file(args.out, "--out")
    if args.store is not None:
        check_output_dir(args.store, "--store")
    with tempfile.TemporaryDirectory(prefix="idepth-defaults-store-") as scratch:
        try:
            data = make_softmax_defaults(
                args.out, scale=args.scale, spectra=spectra, regimes=regimes, default_regime=args.default_regime,
                store_dir=args.store if args.store is not None else Path(scratch) / "store", backend=args.backend,
                workers=args.workers, progress=None if not args.no_progress else False,
            )
        except RuntimeError as exc:
            print(f"idepth study: {exc}", file=sys.stderr)
            return 1
    print(f"wrote {args.out}: {len(data['entries'])} entries (regimes {', '.join(regimes)})")
    return 0
