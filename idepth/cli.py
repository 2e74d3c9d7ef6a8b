"""``idepth``: command-line entry point.

Each sub-command lives in ``idepth/commands/<name>.py`` and provides
``register(subparsers)`` which adds its parser and sets ``func`` to a
function ``run(args) -> int``. This module only dispatches and turns user
errors -- bad input, and an output that cannot be written (a read-only file
system, a full disk: any ``OSError``, named by its path) -- into one line on
stderr with exit status 2 (no traceback).
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: sub-command modules, in the order shown by ``idepth --help``
COMMANDS = ("predict", "expressible", "sweep", "derive", "docs", "train", "diagnose", "study", "reproduce")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like a ValueError from the API
        self.exit(2, f"idepth: error: {message}\n")

    def format_help(self) -> str:
        if self.epilog is None and getattr(self, "lazy_epilog", None) is not None:
            self.epilog = self.lazy_epilog()
        return super().format_help()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="idepth",
        description=(
            "inverse-depth: theory, numerics and reproduction for 'Emergent Inverse-Depth "
            "Scaling From Nonlinearity In Attention' (2026)."
        ),
    )
    parser.lazy_epilog = _answer_epilog  # computed only when the help is shown: --version stays fast
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--version", action="version", version="%(prog)s " + _version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"idepth.commands.{name}").register(sub)
    return parser


def _answer_epilog() -> str:
    """The package's answer (numerics.experiments.answer), wrapped; a pointer where the results are not found."""
    import textwrap

    try:
        from numerics.experiments.answer import package_answer

        text = package_answer().text.replace("**", "")
    except (OSError, ValueError, KeyError) as exc:
        text = f"The package's answer is computed from the shipped results ({exc})."
    return "the answer:\n" + textwrap.fill(text, width=100, initial_indent="  ", subsequent_indent="  ")


def _version() -> str:
    from theory import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, FileExistsError, FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        print(f"idepth {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. a read-only file system or a full disk: name the path, no traceback
        print(f"idepth {args.command}: error: {_os_error(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"idepth {args.command}: interrupted", file=sys.stderr)
        return 130


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _os_error(exc: OSError) -> str:
    """``'/path': Read-only file system`` (the path of the failed operation, when known)."""
    reason = exc.strerror or _one_line(exc) or type(exc).__name__
    if exc.filename is None:
        return f"{reason} ({type(exc).__name__})" if reason != _one_line(exc) else reason
    target = exc.filename2 if exc.filename2 is not None else exc.filename
    return f"{str(target)!r}: {reason}"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
