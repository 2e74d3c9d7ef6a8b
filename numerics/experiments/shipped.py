"""Where the package's shipped study results live: the one answer to "which ``docs/results``?".

The studies behind the softmax verdicts (the certified study's verdicts and cells, the size
inference) cost hours to days, so the package reads the results a source
checkout ships in ``docs/results`` instead of re-running them. A wheel does not carry that
directory, so it is looked up here, in this order:

1. the environment variable :data:`RESULTS_VARIABLE` (``IDEPTH_RESULTS=/path/to/docs/results``);
2. ``docs/results`` of the source checkout the package is imported from (:func:`checkout_root`).

When neither gives it, :func:`results_dir` returns None, :func:`shipped_path` raises
:class:`ShippedResultsNotFound` (a ``FileNotFoundError`` whose message says, in one line, where to
point the variable), and :data:`NOT_FOUND_NOTE` is the note a claim that could not be tested carries.
Every reader of a shipped result (``reproduce``, ``answer``, the certified page's verdicts, the CLI)
goes through this module; nothing else spells ``docs/results``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["NOT_FOUND_NOTE", "RESULTS_VARIABLE", "ShippedResultsNotFound", "checkout_root", "not_found_message",
           "checkout_relative", "results_dir", "shipped_path"]

#: the environment variable naming a ``docs/results`` directory (for an install outside a checkout)
RESULTS_VARIABLE = "IDEPTH_RESULTS"
#: the results directory inside a source checkout
CHECKOUT_RESULTS = Path("docs") / "results"
#: where a source checkout holding this package would have its root (its ``docs/results`` is looked for there)
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]
#: what a claim that needs the shipped results says when they are not found
NOT_FOUND_NOTE = f"shipped results not found: set {RESULTS_VARIABLE}"


class ShippedResultsNotFound(FileNotFoundError):
    """The shipped results are neither in a source checkout nor where :data:`RESULTS_VARIABLE` points.

    Examples
    --------
    >>> issubclass(ShippedResultsNotFound, FileNotFoundError)
    True
    """


def checkout_root() -> Path | None:
    """The source checkout this package is imported from, or None (an installed wheel).

    A checkout is recognised by its ``pyproject.toml`` next to the ``numerics`` package.

    Examples
    --------
    >>> root = checkout_root()
    >>> root is None or (root / "numerics").is_dir()
    True
    """
    root = _PACKAGE_ROOT
    return root if (root / "pyproject.toml").is_file() and (root / "numerics").is_dir() else None


def results_dir() -> Path | None:
    """The shipped ``docs/results`` directory (see the module docstring for the order), or None.

    Raises
    ------
    ValueError
        :data:`RESULTS_VARIABLE` is set but names no directory (naming the variable and its value).

    Examples
    --------
    >>> path = results_dir()
    >>> path is None or path.is_dir()
    True
    """
    value = os.environ.get(RESULTS_VARIABLE)
    if value:
        path = Path(value).expanduser()
        if not path.is_dir():
            raise ValueError(f"{RESULTS_VARIABLE} must name a directory (a checkout's docs/results); got {value!r}")
        return path.resolve()
    root = checkout_root()
    if root is not None and (root / CHECKOUT_RESULTS).is_dir():
        return root / CHECKOUT_RESULTS
    return None


def not_found_message() -> str:
    """One line: the shipped results were not found, and where to point :data:`RESULTS_VARIABLE`.

    Examples
    --------
    >>> not_found_message().startswith("shipped results not found")
    True
    """
    return (f"{NOT_FOUND_NOTE}=/path/to/inverse-depth/{CHECKOUT_RESULTS.as_posix()} (this package is not imported "
            f"from a source checkout and {RESULTS_VARIABLE} is not set)")


def shipped_path(*parts: str) -> Path:
    """The path of one shipped result, ``results_dir() / parts`` (it may not exist: the caller reads it).

    Raises
    ------
    ShippedResultsNotFound
        No results directory (:func:`not_found_message` says where to point the variable; the error also names
        where the checkout's results were looked for).
    ValueError
        :data:`RESULTS_VARIABLE` names no directory.

    Examples
    --------
    >>> import os, tempfile
    >>> from unittest import mock
    >>> with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ, {RESULTS_VARIABLE: tmp}):
    ...     shipped_path("sizes", "sizes.json").relative_to(Path(tmp).resolve()).as_posix()
    'sizes/sizes.json'
    """
    directory = results_dir()
    if directory is None:
        raise ShippedResultsNotFound(f"{not_found_message()}; looked in {_PACKAGE_ROOT / CHECKOUT_RESULTS}")
    return directory.joinpath(*parts)


def checkout_relative(path) -> str:
    """``path`` as a page names it: relative to the source checkout when inside it, else as given (POSIX).

    A page regenerated on another machine, or from another working directory, then names the same path.

    Examples
    --------
    >>> checkout_relative("some/relative/dir")
    'some/relative/dir'
    """
    root = checkout_root()
    resolved = Path(path).resolve()
    if root is not None and resolved.is_relative_to(root.resolve()):
        return resolved.relative_to(root.resolve()).as_posix()
    return Path(path).as_posix()
