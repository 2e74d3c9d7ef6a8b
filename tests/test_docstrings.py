"""Every public function and class of ``theory`` and ``numerics`` has a numpydoc docstring
with the sections the house style requires.

The rule, precisely:

* *Public* objects: for every module of the package whose dotted name has no component
  starting with ``_``, the names in its ``__all__`` (or, without ``__all__``, the names not
  starting with ``_`` that the module itself defines) bound to a function or a class. An object
  re-exported by several modules is checked once, under the module that defines it.
* Each must have a docstring that numpydoc parses without warnings, with a summary line.
* ``References`` (citing the paper's equations, "paper eq. (24)") is required where there is an
  equation: ``theory``, ``derivations``, ``numerics.models``, ``numerics.tasks``,
  ``numerics.train``, ``numerics.diagnostics`` (:data:`REFERENCES_REQUIRED_IN`); bookkeeping
  code (file writing, checkpoints, the optimiser, the experiments layer) need not have one.
* ``Examples``: a non-empty section containing at least one doctest prompt ``>>>``.
  In ``numerics`` only, ``Examples`` may be omitted when an example would need training: then
  the ``Notes`` section must contain a line starting with ``No example:`` that says why.
* Exception classes need only a summary line (they are documented where they are raised).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings

import pytest
from numpydoc.docscrape import NumpyDocString

PACKAGES = ("theory", "numerics", "derivations")
#: modules (and their sub-modules) whose public objects must cite the paper in ``References``
REFERENCES_REQUIRED_IN = (
    "theory",
    "derivations",
    "numerics.models",
    "numerics.tasks",
    "numerics.train",
    "numerics.diagnostics",
)
#: packages whose public objects may replace Examples by a "No example:" line in Notes
EXAMPLES_OPTIONAL_IN = ("numerics", "derivations")


def references_required(module_name: str) -> bool:
    """Whether objects of ``module_name`` must have a ``References`` section."""
    return any(module_name == p or module_name.startswith(p + ".") for p in REFERENCES_REQUIRED_IN)


def _public_modules(package: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(importable public module names, [(module name, import error)])."""
    root = importlib.import_module(package)
    names, errors = [package], []
    failed: list[str] = []
    for info in pkgutil.walk_packages(root.__path__, prefix=package + ".", onerror=failed.append):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    errors += [(name, "sub-package failed to import") for name in failed]
    importable = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # reported as a failing case, not a collection error
            errors.append((name, f"{type(exc).__name__}: {exc}"))
        else:
            importable.append(name)
    return importable, errors


def _public_objects() -> tuple[list[tuple[str, str, object]], list[tuple[str, str]]]:
    objects: dict[tuple[str, str], tuple[str, str, object]] = {}
    all_errors = []
    for package in PACKAGES:
        modules, errors = _public_modules(package)
        all_errors += errors
        for module_name in modules:
            module = importlib.import_module(module_name)
            if hasattr(module, "__all__"):
                names = list(module.__all__)
            else:
                names = [n for n, obj in vars(module).items()
                         if not n.startswith("_") and getattr(obj, "__module__", None) == module_name]
            for name in names:
                obj = getattr(module, name, None)
                if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                    continue
                home = getattr(obj, "__module__", module_name) or module_name
                if home.split(".")[0] not in PACKAGES:
                    continue  # a re-export of another library's object
                key = (home, getattr(obj, "__qualname__", name))
                objects.setdefault(key, (home, key[1], obj))
    return sorted(objects.values(), key=lambda item: (item[0], item[1])), all_errors


OBJECTS, IMPORT_ERRORS = _public_objects()


def _problems(module_name: str, obj: object) -> list[str]:
    doc = inspect.getdoc(obj)
    if not doc:
        return ["no docstring"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parsed = NumpyDocString(doc)
    problems = [f"numpydoc: {w.message}" for w in caught]
    if not any(line.strip() for line in parsed["Summary"]):
        problems.append("no summary line")
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return problems
    if references_required(module_name) and not any(line.strip() for line in parsed["References"]):
        problems.append("no References section (cite the paper's equations)")
    examples = "\n".join(parsed["Examples"])
    if ">>>" not in examples:
        notes = [line.strip() for line in parsed["Notes"]]
        optional = module_name.split(".")[0] in EXAMPLES_OPTIONAL_IN
        if not (optional and any(line.startswith("No example:") for line in notes)):
            problems.append(
                "no Examples section with a doctest"
                + (" (or a Notes line 'No example: <why>')" if optional else "")
            )
    return problems


def test_public_objects_were_found():
    # the walk must find the API (guards against a rule that silently checks nothing)
    names = {f"{module}.{name}" for module, name, _ in OBJECTS}
    assert "theory.spectra.zeta" in names and "theory.spectra.PowerLawSpectrum" in names
    assert any(name.startswith("numerics.") for name in names)


def test_every_public_module_imports():
    assert not IMPORT_ERRORS, "; ".join(f"{module} does not import: {error}" for module, error in IMPORT_ERRORS)


@pytest.mark.parametrize("module_name, qualname, obj", OBJECTS, ids=[f"{m}.{q}" for m, q, _ in OBJECTS])
def test_public_object_has_numpydoc_docstring_with_references_and_examples(module_name, qualname, obj):
    problems = _problems(module_name, obj)
    assert not problems, f"{module_name}.{qualname}: " + "; ".join(problems)


def test_references_rule_covers_the_science_and_not_the_bookkeeping():
    assert references_required("theory.floor") and references_required("numerics.models.linear")
    assert references_required("numerics.train") and references_required("derivations.ensemble")
    assert not references_required("numerics.io") and not references_required("numerics.experiments.sweep")
    assert not references_required("numerics.training")  # a prefix of a name is not its package
