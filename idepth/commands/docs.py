"""``idepth docs build``: build the HTML documentation with Sphinx (warnings are errors).

A build takes about a minute: its phases are said on stderr as they begin, each with the seconds
elapsed since the command started (:func:`phase_line`); those inside Sphinx come from the docs'
extension ``docs/_ext/build_phases.py``, told the start time by :data:`STARTED_VARIABLE`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

DOCS_DIR = Path(__file__).resolve().parents[2] / "docs"
#: environment variable that carries the build's start (seconds since the epoch) into Sphinx
STARTED_VARIABLE = "IDEPTH_DOCS_STARTED"


def phase_line(message: str, started: float, now: float | None = None) -> str:
    """``idepth docs: [  12.3 s] message``: a phase of the build and the seconds since ``started``.

    Examples
    --------
    >>> phase_line("running sphinx-build…", started=100.0, now=112.34)
    'idepth docs: [  12.3 s] running sphinx-build…'
    """
    elapsed = (time.time() if now is None else now) - started
    return f"idepth docs: [{elapsed:6.1f} s] {message}"


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
    started = time.time()
    print(phase_line(f"running sphinx-build on {DOCS_DIR} (warnings are errors)…", started), file=sys.stderr,
          flush=True)
    status = subprocess.call(sphinx_command(out), env=dict(os.environ, **{STARTED_VARIABLE: repr(started)}))
    if status == 0:
        print(phase_line("done", started), file=sys.stderr)
        print(f"idepth docs: built {out / 'index.html'}")
    else:
        print(f"idepth docs: sphinx-build failed with exit status {status} after {time.time() - started:.1f} s "
              "(warnings are errors)", file=sys.stderr)
    return status
