"""``idepth sweep``: run a grid of training runs into a resumable SQLite store.

A thin layer over :mod:`numerics.experiments.sweep` and :mod:`numerics.experiments.store`:

* ``idepth sweep run GRID.toml --out DIR [--backend local|dask] [--workers N]
  [--scheduler ADDR] [--dask-local N] [--retry-failed]`` -- :func:`numerics.experiments.sweep.run_sweep`;
* ``idepth sweep status DIR`` -- :func:`numerics.experiments.sweep.sweep_status`;
* ``idepth sweep export DIR --csv FILE`` -- :func:`numerics.experiments.store.export_csv`.

Exit status: 0 on success, 1 when ``run`` finished with failed runs, 2 on bad
input (one line on stderr; nothing is written).
"""

from __future__ import annotations

import argparse

from ._execution import add_execution_flags, execution_from_args

HELP = "run a grid of training runs into a resumable results store (DIR/results.sqlite)"


def register(subparsers) -> None:
    """Add the ``sweep`` sub-command (with ``run``, ``status``, ``export``) to ``subparsers``."""
    parser = subparsers.add_parser(
        "sweep",
        help=HELP,
        description=(
            "Depth sweeps: every run of a TOML grid is trained (numerics.train.run_config) in a worker "
            "process and committed to DIR/results.sqlite as soon as it finishes. Re-running the same "
            "command resumes: runs already done are skipped."
        ),
    )
    actions = parser.add_subparsers(dest="sweep_command", metavar="ACTION")
    actions.required = True

    run_parser = actions.add_parser(
        "run",
        help="run (or resume) the sweep declared in a grid file",
        description=(
            "Run every config of GRID.toml that is not already done in DIR/results.sqlite. In the grid "
            "file, a list is an axis (the runs are the product of all axes) and a scalar is fixed; "
            "[[grid]] tables are sub-grids whose products are concatenated. Exit status 1 if some "
            "runs failed (see 'idepth sweep status DIR'), 2 on bad input."
        ),
    )
    run_parser.add_argument("grid", metavar="GRID.toml", help="TOML file declaring the grid of runs")
    run_parser.add_argument("--out", metavar="DIR", required=True,
                            help="sweep directory (created; holds results.sqlite)")
    add_execution_flags(run_parser)
    run_parser.add_argument("--dask-local", metavar="N", type=int, default=None,
                            help="start a local dask cluster of N single-threaded workers (dask only)")
    run_parser.add_argument("--connect-timeout", metavar="SECONDS", type=float, default=10.0,
                            help="give up if the dask scheduler does not answer within this time (default 10)")
    run_parser.add_argument("--retry-failed", action="store_true",
                            help="run again the runs recorded as failed")
    run_parser.set_defaults(func=run)

    status_parser = actions.add_parser(
        "status", help="counts by status, the slowest runs and the failures",
        description="Print the number of runs in each status, the slowest finished runs and the failed "
                    "runs with their errors (read-only; safe while the sweep runs).",
    )
    status_parser.add_argument("out", metavar="DIR", help="sweep directory")
    status_parser.add_argument("--slowest", type=int, default=5, help="how many of the slowest runs to list (default 5)")
    status_parser.set_defaults(func=status)

    export_parser = actions.add_parser(
        "export", help="write every run as one CSV row",
        description="Write the runs of DIR/results.sqlite to a CSV file (status, timings, R_L, A_L, C_L, "
                    "steps, converged, then config.* and metrics.* columns); written atomically.",
    )
    export_parser.add_argument("out", metavar="DIR", help="sweep directory")
    export_parser.add_argument("--csv", metavar="FILE", required=True, help="destination CSV file")
    export_parser.set_defaults(func=export)


def _execution(args: argparse.Namespace):
    """The run's Execution; ``--dask-local N`` is the size of the local Dask cluster (``--workers`` with dask)."""
    from theory.validation import check_positive_int

    if args.dask_local is not None:
        check_positive_int("--dask-local", args.dask_local)
        if args.backend != "dask":
            raise ValueError(f"--dask-local is only used with --backend dask; got --dask-local {args.dask_local} "
                             f"with --backend {args.backend}")
    if args.backend == "dask" and args.scheduler is not None and (args.workers, args.dask_local) != (None, None):
        given = " and ".join(f"{flag} {value}" for flag, value in (("--workers", args.workers),
                                                                   ("--dask-local", args.dask_local)) if value is not None)
        raise ValueError(f"with --scheduler the cluster decides the workers: do not also give {given}")
    return execution_from_args(args, workers=args.workers if args.dask_local is None else args.dask_local)


def run(args: argparse.Namespace) -> int:
    """``idepth sweep run``: run the grid, print a one-line summary."""
    from numerics.experiments.sweep import run_sweep
    from numerics.io import check_output_dir

    check_output_dir(args.out, "--out")  # before the grid is read or a worker started
    summary = run_sweep(args.grid, args.out, execution=_execution(args), retry_failed=args.retry_failed)
    print(
        f"{summary.store}: {summary.total} runs: {summary.done} done ({summary.skipped} already done, "
        f"{summary.executed} run now), {summary.failed} failed, {summary.pending} pending; "
        f"{summary.backend} backend, {summary.workers} workers, {summary.wall_time:.1f} s"
    )
    return 0 if summary.ok else 1


def status(args: argparse.Namespace) -> int:
    """``idepth sweep status``: counts by status and the slowest runs."""
    from numerics.experiments.sweep import sweep_status

    print(sweep_status(args.out, slowest=args.slowest).format())
    return 0


def export(args: argparse.Namespace) -> int:
    """``idepth sweep export``: every run as a CSV row, written atomically."""
    from numerics.experiments.store import export_csv
    from numerics.io import check_output_file

    check_output_file(args.csv, "--csv")
    count = export_csv(args.out, args.csv)
    print(f"wrote {count} runs to {args.csv}")
    return 0
