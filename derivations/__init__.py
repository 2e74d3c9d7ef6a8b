"""How the formulas are obtained: symbolic derivations, checked step by step,
rendered to ``docs/derivations/*.md``. Builds on :mod:`theory`'s sympy objects.

One module per part of the paper's theory (see :data:`NAMES`); each defines
``build() -> Derivation``. :func:`generate` verifies a derivation (raising
:class:`~derivations._framework.DerivationError` naming the failing step) and
renders its page; :func:`write_pages` / :func:`check_pages` back
``idepth derive [--check]``.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Iterable

from numerics.io import write_text

#: names of :mod:`derivations._framework` re-exported here, imported on first use (PEP 562) so that
#: ``derivations.NAMES`` -- the choices of ``idepth derive --only`` -- is read without importing sympy
_FRAMEWORK = ("Derivation", "DerivationError", "Step", "Table", "Verdict", "VerifiedDerivation", "render", "verify")


def __getattr__(name: str):
    if name in _FRAMEWORK:
        from . import _framework

        value = getattr(_framework, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "NAMES",
    "Derivation",
    "DerivationError",
    "Step",
    "Table",
    "Verdict",
    "VerifiedDerivation",
    "build",
    "check_pages",
    "default_pages_dir",
    "generate",
    "render",
    "verify",
    "write_pages",
]

#: the derivation modules, in the paper's order (appendix A.1 ... C.3)
NAMES = (
    "covariance_polynomial",
    "polynomial_laws",
    "linear_floor",
    "modewise",
    "ensemble",
    "exchangeable_heads",
    "bracket",
    "context_updates",
)


def _check_names(names: Iterable[str] | None) -> tuple[str, ...]:
    if names is None:
        return NAMES
    if isinstance(names, str):
        names = (names,)
    names = tuple(names)
    for name in names:
        if name not in NAMES:
            raise ValueError(f"derivation name must be one of {', '.join(NAMES)}; got {name!r}")
    return names


def build(name: str) -> Derivation:
    """The (unverified) :class:`Derivation` called ``name``.

    Parameters
    ----------
    name : str
        One of :data:`NAMES`.

    Returns
    -------
    Derivation

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> build("context_updates").paper_part
    'Appendix C.3, eqs. (78)-(87)'
    """
    (name,) = _check_names([name])
    return importlib.import_module(f"derivations.{name}").build()


def generate(name: str) -> str:
    """Verify derivation ``name`` and return its Markdown page.

    Raises
    ------
    DerivationError
        If a step does not verify (the message names the derivation and step).

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> generate("context_updates").startswith("(derivation-context-updates)=")
    True
    """
    from ._framework import render, verify

    return render(verify(build(name)))


def default_pages_dir() -> Path:
    """``docs/derivations`` of the source checkout this package is imported from.

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> default_pages_dir().name
    'derivations'
    """
    return Path(__file__).resolve().parent.parent / "docs" / "derivations"


def write_pages(directory: str | os.PathLike | None = None, names: Iterable[str] | None = None) -> list[Path]:
    """Regenerate ``<directory>/<name>.md`` for each derivation (atomic writes).

    All requested derivations are verified before any page is written, so a
    failing step leaves every page untouched.

    Parameters
    ----------
    directory : path, optional
        Default :func:`default_pages_dir`.
    names : iterable of str, optional
        Subset of :data:`NAMES` (default all).

    Returns
    -------
    list of Path
        The pages written.

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     [p.name for p in write_pages(tmp, ["context_updates"])]
    ['context_updates.md']
    """
    directory = Path(default_pages_dir() if directory is None else directory)
    if not directory.is_dir():
        raise NotADirectoryError(f"directory must be an existing directory; got {str(directory)!r}")
    pages = {name: generate(name) for name in _check_names(names)}
    written = []
    for name, text in pages.items():
        path = directory / f"{name}.md"
        write_text(path, text)  # atomic, and as readable as any file the user creates (umask)
        written.append(path)
    return written


def check_pages(directory: str | os.PathLike | None = None, names: Iterable[str] | None = None) -> list[str]:
    """Names of the derivations whose committed page differs from the generated one.

    A missing page counts as differing.

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     check_pages(tmp, ["context_updates"])
    ['context_updates']
    """
    directory = Path(default_pages_dir() if directory is None else directory)
    differing = []
    for name in _check_names(names):
        path = directory / f"{name}.md"
        text = generate(name)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            differing.append(name)
    return differing
