"""``idepth docs build``: build the HTML documentation with Sphinx (warnings are errors)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

DOCS_DIR = Path(__file__).resolve().parents[2] / "docs"


def sphinx_command(out: Path, source: Path = DOCS_DIR, *, confdir: Path | None = None) -> list[str]:
    """The ``sphinx-build`` command line used by ``idepth docs build``.

    ``-W --keep-going``: every warning is an error, but all of them are reported; ``-E``: a fresh
    environment, so that new or removed modules are always picked up; ``-n``: nitpicky
    cross-references (also set in conf.py).
    """
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-E", "-n", "-q",
               "-d", str(out / ".doctrees")]
    if confdir is not None:
        command += ["-c", str(confdir)]
    return command + [str(source), str(out)]


#: modules the build imports, each from the ``docs`` extra of pyproject.toml
DOCS_MODULES = ("sphinx", "myst_parser", "numpydoc")


def missing_docs_requirements() -> list[str]:
    """The modules of :data:`DOCS_MODULES` that cannot be imported (found without importing them)."""
    import importlib.util

    return [name for name in DOCS_MODULES if importlib.util.find_spec(name) is None]


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "docs",
        help="build the documentation (Sphinx, offline MathJax, warnings are errors)",
        description="Build the HTML documentation from docs/ (a thin wrapper around sphinx-build).",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    build = actions.add_parser(
        "build",
        help="build the HTML site",
        description=("Run sphinx-build -b html -W --keep-going -E -n on docs/. Exit status is Sphinx's: "
                     "non-zero if any warning (broken cross-reference, bad docstring, import error) occurred."),
    )
    build.add_argument("--out", type=Path, default=DOCS_DIR / "_build" / "html", metavar="DIR",
                       help="output directory (default: docs/_build/html); open DIR/index.html")
    build.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not (DOCS_DIR / "conf.py").is_file():
        raise FileNotFoundError(f"no docs/conf.py next to the idepth package (looked in {DOCS_DIR}); "
                                "build the docs from a source checkout")
    missing = missing_docs_requirements()
    if missing:
        raise ValueError(f"idepth docs build needs {', '.join(missing)}, which is not installed; install the docs "
                         "extra: pip install -e '.[docs]'")
    from numerics.io import check_output_dir

    out = args.out.resolve()
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out must be a directory; {str(out)!r} is a file")
    check_output_dir(out, "--out")
    out.mkdir(parents=True, exist_ok=True)
    status = subprocess.call(sphinx_command(out))
    if status == 0:
        print(f"idepth docs: built {out / 'index.html'}")
    else:
        print(f"idepth docs: sphinx-build failed with exit status {status} (warnings are errors)", file=sys.stderr)
    return status
