"""``idepth``: command-line entry point.

Each sub-command lives in ``idepth/commands/<name>.py`` and provides
``register(subparsers)`` which adds its parser and sets ``func`` to a
function ``run(args) -> int``. This module only dispatches and turns user
errors -- bad input, and an output that cannot be written (a read-only file
system, a full disk: any ``OSError``, named by its path) -- into one line on
stderr with exit status 2 (no traceback). An output whose reader went away
(``idepth predict --json | head``) ends the command quietly with status 1; a
command given without its sub-command prints the usage, the sub-commands it
has and one error line (status 2).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

#: sub-command modules, in the order shown by ``idepth --help``
COMMANDS = ("predict", "expressible", "bracket", "sweep", "derive", "docs", "train", "diagnose", "study", "reproduce")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like a ValueError from the API
        commands = _subcommands(self)
        if commands is not None and message == f"the following arguments are required: {commands.metavar}":
            # no command at all (a bare ``idepth``, ``idepth study``): the usage with the commands, then the error
            self.print_usage(sys.stderr)
            print(command_listing(commands), file=sys.stderr)
            names = ", ".join(commands.choices)
            self.exit(2, f"{self.prog}: error: {commands.metavar} missing: one of {names} (see {self.prog} --help)\n")
        self.exit(2, f"idepth: error: {message}\n")

    def format_help(self) -> str:
        if self.epilog is None and getattr(self, "lazy_epilog", None) is not None:
            self.epilog = self.lazy_epilog()
        return super().format_help()


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    """The sub-commands action of ``parser``, or None if it has none."""
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def command_listing(commands: argparse._SubParsersAction) -> str:
    """``"COMMAND is one of:"`` and one line per registered sub-command with its help (from the parsers themselves).

    Examples
    --------
    >>> parser = _Parser(prog="tool")
    >>> sub = parser.add_subparsers(metavar="COMMAND")
    >>> _ = sub.add_parser("run", help="run it"), sub.add_parser("check", help="check it")
    >>> print(command_listing(sub))
    COMMAND is one of:
      run    run it
      check  check it
    """
    helps = {action.dest: action.help or "" for action in commands._choices_actions}
    width = max(map(len, commands.choices))
    return "\n".join([f"{commands.metavar} is one of:"]
                     + [f"  {name:<{width}}  {helps.get(name, '')}".rstrip() for name in commands.choices])


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="idepth",
        description=(
            "inverse-depth: theory, numerics and reproduction for 'Emergent Inverse-Depth "
            "Scaling From Nonlinearity In Attention' (2026)."
        ),
    )
    parser.lazy_epilog = _answer_epilog  # computed only when the help is shown: --version stays fast
    # 100 columns, as the answer below is wrapped: each command's help on one or two lines
    parser.formatter_class = lambda prog: argparse.RawDescriptionHelpFormatter(prog, width=100, max_help_position=16)
    parser.add_argument("--version", action="version", version="%(prog)s " + _version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"idepth.commands.{name}").register(sub)
    return parser


def _answer_epilog() -> str:
    """The package's answer (numerics.experiments.study.answer), wrapped; a pointer where the results are not found."""
    import textwrap

    try:
        from numerics.experiments.study.answer import package_answer

        text = package_answer().help_text()
    except (OSError, ValueError, KeyError) as exc:
        text = f"The package's answer is computed from the shipped results ({exc})."
    # no break inside a hyphenated word ("step-doubling"): the answer reads the same as in the README
    return "the answer:\n" + textwrap.fill(text, width=100, initial_indent="  ", subsequent_indent="  ",
                                           break_on_hyphens=False)


def _version() -> str:
    from theory import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a reader that went away (``| head``) shows here, not at the interpreter's exit
        return status
    except BrokenPipeError as exc:
        if not _reader_gone(sys.stdout):  # another pipe (a worker's, a socket's): an error like any other
            print(f"idepth {args.command}: error: {_os_error(exc)}", file=sys.stderr)
            return 2
        # the output's reader closed the pipe: stop quietly (Python's documented idiom)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush goes nowhere
        return 1
    except (ValueError, TypeError, FileExistsError, FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        print(f"idepth {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. a read-only file system or a full disk: name the path, no traceback
        print(f"idepth {args.command}: error: {_os_error(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"idepth {args.command}: interrupted", file=sys.stderr)
        return 130


def _reader_gone(stream) -> bool:
    """Whether ``stream`` is a pipe whose reading end is closed (its write end polls as an error)."""
    import select

    try:
        descriptor = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a StringIO): the broken pipe was another's
        return False
    if not hasattr(select, "poll"):  # cannot tell (Windows): take it for the output's, as the idiom does
        return True
    poll = select.poll()
    poll.register(descriptor, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poll.poll(0))


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
