"""``idepth reproduce``: regenerate every figure and table of the paper and write REPORT.md.

A thin layer over :func:`numerics.experiments.reproduce.reproduce`: parses the options,
prints the plan (run count, estimated cost) before starting, and reports where
the report is. Exit status (:data:`EXIT_STATUSES`): 0 when the report is written
and every input was found; 1 when the report is written but the shipped results
were not found (the claims that read them are NOT TESTED; one line on stderr says
where to point ``IDEPTH_RESULTS``); 2 for bad input (unknown scale or artefact ID,
an output directory that is a file or not writable), one line on stderr before any training; 130 after Ctrl-C,
with one line saying how to continue (the same command: finished runs stay in the
store, every file is written atomically).
"""

from __future__ import annotations

import argparse

from numerics.experiments.shipped import NOT_FOUND_NOTE

from ._execution import add_execution_flags, execution_from_args

HELP = "regenerate the paper's figures and tables (PNG/PDF, Markdown) and write REPORT.md"
#: exit status -> when
EXIT_STATUSES = {0: "the report is written and every input was found",
                 1: f"the report is written, but the claims that read the shipped results are NOT TESTED "
                    f"({NOT_FOUND_NOTE})",
                 2: "bad input, before any training",
                 130: "interrupted (Ctrl-C); the same command continues"}


def register(subparsers) -> None:
    """Add the ``reproduce`` sub-command to ``subparsers``."""
    from numerics.experiments.reproduce import ARTEFACTS, SCALES
    from numerics.experiments.reproduce.scales import measured_run_time

    parser = subparsers.add_parser(
        "reproduce",
        help=HELP,
        description=(
            "Plan the training runs each figure and table of the paper needs, run them through the sweep layer "
            "into OUT/store (finished runs are reused; Ctrl-C keeps them), fit, plot and tabulate, run the regime "
            "study, and write OUT/REPORT.md with the paper's values next to the package's and a verdict computed "
            "from the numbers."
        ),
        epilog="scales: " + "; ".join(f"{name}: {scale.description}" for name, scale in SCALES.items())
               + ". Exit status: " + "; ".join(f"{code}: {when}" for code, when in EXIT_STATUSES.items()) + ".",
    )
    measured = measured_run_time("quick")  # benchmarks/results: a source checkout only
    parser.add_argument("--scale", default="quick", metavar="SCALE",
                        help=f"one of {', '.join(SCALES)} (default: quick; measured: "
                             f"{'none here' if measured is None else measured.text()})")
    parser.add_argument("--only", metavar="ID,...", default=None,
                        help="only these artefacts (comma-separated): " + ", ".join(ARTEFACTS))
    parser.add_argument("--out", metavar="DIR", default="reproduction",
                        help="output directory (default: ./reproduction); holds REPORT.md, figures/, tables/, store/")
    add_execution_flags(parser)  # --scale paper needs --backend dask
    parser.add_argument("--no-study", action="store_true",
                        help="skip the regime study and the consistency check (numerics.experiments.study)")
    parser.add_argument("--no-calibration", action="store_true",
                        help="skip the timing (about 15 s) of shortened runs of the plan's costliest kinds of run "
                             "that gives the run-time estimate on this machine before training")
    parser.set_defaults(func=run)


def _argv(args: argparse.Namespace) -> list[str]:
    argv = ["reproduce", "--scale", args.scale]
    argv += ["--only", args.only] if args.only else []
    argv += ["--out", args.out]
    argv += ["--backend", args.backend] if args.backend != "local" else []
    argv += ["--workers", str(args.workers)] if args.workers is not None else []
    argv += ["--scheduler", args.scheduler] if args.scheduler else []
    argv += ["--no-progress"] if getattr(args, "no_progress", False) else []
    argv += ["--no-study"] if args.no_study else []
    argv += ["--no-calibration"] if getattr(args, "no_calibration", False) else []
    return argv


def _remove_empty_tree(path) -> None:
    """Remove ``path`` if it holds nothing but empty directories (what a failed start leaves); else leave it."""
    import os

    for root, _, _ in sorted(os.walk(path), key=lambda entry: -len(entry[0])):
        try:
            os.rmdir(root)
        except OSError:  # not empty: something was written, keep it
            return


def run(args: argparse.Namespace) -> int:
    """Run the reproduction; print where the report is; return the exit status (:data:`EXIT_STATUSES`)."""
    import sys
    from pathlib import Path

    from numerics.experiments.reproduce import command_line, get_scale, parse_only, reproduce
    from numerics.io import check_output_dir

    get_scale(args.scale), parse_only(args.only)  # bad input first, then the output directory
    execution = execution_from_args(args)
    check_output_dir(args.out, "--out")
    command = command_line(_argv(args))
    created = not Path(args.out).exists()
    try:
        result = reproduce(
            args.scale, args.only, args.out, execution=execution, study=False if args.no_study else None,
            command=command,
            calibrate=not getattr(args, "no_calibration", False),
        )
    except KeyboardInterrupt:
        print(f"idepth reproduce: interrupted; the finished runs are kept in {Path(args.out) / 'store'}, so the same "
              f"command continues: {command}", file=sys.stderr)
        return 130
    except Exception:
        if created:  # refused before anything was stored (a scheduler that does not answer): leave no empty --out
            _remove_empty_tree(Path(args.out))
        raise
    from numerics.experiments.reproduce.report import counts_text
    from numerics.experiments.shipped import not_found_message

    print(f"{result.report}: {len(result.figures)} figures, {len(result.tables)} tables; {counts_text(result.claims)}; "
          f"{result.wall_time:.0f} s")
    if result.unavailable:
        print(f"idepth reproduce: {', '.join(result.unavailable)} not read: {not_found_message()}", file=sys.stderr)
        return 1
    return 0
