"""``idepth derive``: regenerate (or check) the derivation pages ``docs/derivations/*.md``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers) -> None:
    from derivations import NAMES

    parser = subparsers.add_parser(
        "derive",
        help="verify the symbolic derivations and regenerate docs/derivations/*.md",
        description=(
            "Verify every step of the symbolic derivations (appendices A-C of the paper) and write "
            "their Markdown pages. With --check, write nothing and exit 1 if a committed page differs "
            "from what the code generates or is missing. A step that does not verify exits 1 naming the step."
        ),
    )
    parser.add_argument("--check", action="store_true", help="only compare the committed pages with the generated ones")
    parser.add_argument("--only", choices=NAMES, metavar="NAME", action="append",
                        help=f"restrict to one derivation (repeatable); one of: {', '.join(NAMES)}")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="directory of the pages, created if missing (default: docs/derivations of this checkout)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from derivations import DerivationError, check_pages, default_pages_dir, write_pages

    directory = args.out if args.out is not None else default_pages_dir()
    if not args.check:
        from numerics.io import make_output_dir

        make_output_dir(directory, "--out")  # checked (a file in the way, nothing writable), then created
    from ._working import working

    names = args.only or "every"
    try:
        if args.check:
            with working("idepth derive", f"deriving {names if isinstance(names, str) else ', '.join(names)} page(s)"):
                differing = check_pages(directory, args.only)
            if differing:
                for name in differing:
                    page = directory / (name + ".md")
                    state = "differs from the generated page" if page.is_file() else "is missing"
                    print(f"idepth derive: {page} {state} (run `idepth derive --only {name}`)", file=sys.stderr)
                return 1
            print(f"idepth derive: {len(args.only or ()) or 'all'} page(s) up to date in {directory}")
            return 0
        with working("idepth derive", f"deriving {names if isinstance(names, str) else ', '.join(names)} page(s)"):
            written = write_pages(directory, args.only)
        for path in written:
            print(f"wrote {path}")
        return 0
    except DerivationError as exc:
        print(f"idepth derive: {exc}", file=sys.stderr)
        return 1
