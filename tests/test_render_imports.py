"""A computing pass and a rendering pass: the renderers import nothing that trains, evaluates or runs Monte Carlo.

The walk follows the package's import graph on the source (:func:`test_layering.imports_of`: every import, those
inside functions included, since a lazy import still runs when its function does) from each renderer module,
transitively, through the packages each imported module lives in (importing ``a.b.c`` runs ``a/__init__`` and
``a/b/__init__``). It fails if it reaches a module of :data:`COMPUTING`.
"""

from __future__ import annotations

import pytest

from test_layering import MODULES, imports_of

#: the modules that compute what a page shows: the training loop and its engines, the sweep layer and the certified
#: runners (they train), the computing pass of the certified page (the facts module) and the theory's Monte Carlo
#: (the bounds' heads, the head families' draws, ``predict_loss``). ``numerics.models`` is not listed: the model
#: registry is reached through :mod:`numerics.config` (a plan validates its model name); no renderer calls a model.
COMPUTING = (
    "numerics.train",
    "numerics.lockstep",
    "numerics.engines.jax_engine",
    "numerics.experiments.sweep",
    "numerics.experiments.runner",
    "numerics.experiments.study.run",
    "numerics.experiments.study.certified.run",
    "numerics.experiments.study.certified.contrasts",
    "numerics.experiments.study.certified.facts",
    "theory.softmax_bounds",
    "theory.head_families",
    "theory.predict",
)
#: the theory modules that load shipped results (``shipped_expressible``, ``shipped_infinite_mixture``: U_L, which
#: the certified plan checks its cells have, and R*_∞, the bracket's rows) beside the fits that wrote them. A
#: renderer reaches them only to read those files; the walk does not follow their imports (they import the Monte
#: Carlo of the fits), so a renderer that imports the Monte-Carlo modules itself is still found.
LOADERS = ("theory.expressible", "theory.mixture_limit")
#: the modules that only render: the certified page and its sections, the answer, every study's page in the one
#: section vocabulary (regime, expressible, plateaus) and every study figure; the reproduction's report (REPORT.md and
#: report.json), its docs pages, figures and tables (its driver, ``reproduce.run``, computes; the package's
#: ``__init__`` loads it only when ``reproduce`` is used)
RENDERERS = (
    "numerics.experiments.study.certified.page",
    "numerics.experiments.study.certified.revised",
    "numerics.experiments.study.certified.targets",
    "numerics.experiments.study.certified.excess",
    "numerics.experiments.study.answer",
    "numerics.experiments.study.page",
    "numerics.experiments.study.figures",
    "numerics.experiments.reproduce.report",
    "numerics.experiments.reproduce.docs_pages",
    "numerics.experiments.reproduce.figures",
    "numerics.experiments.reproduce.tables",
)


def _packages(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:n]) for n in range(1, len(parts))} & set(MODULES)


def reached(start: str, graph=None) -> dict[str, str | None]:
    """Every module ``start`` reaches, each mapped to the module that imports it (``start``: None)."""
    graph = graph if graph is not None else {}
    via: dict[str, str | None] = {start: None}
    todo = [start]
    while todo:
        module = todo.pop()
        if module not in graph:
            graph[module] = set() if module in LOADERS else imports_of(module) | _packages(module)
        for target in sorted(graph[module]):
            if target not in via:
                via[target] = module
                todo.append(target)
    return via


def computing_paths(start: str, graph=None) -> list[str]:
    """``"a <- b <- start"`` for each computing module ``start`` reaches."""
    via = reached(start, graph)
    out = []
    for module in sorted(via):
        if any(module == c or module.startswith(c + ".") for c in COMPUTING):
            chain = [module]
            while via[chain[-1]] is not None:
                chain.append(via[chain[-1]])
            out.append(" <- ".join(chain))
    return out


def test_the_walk_finds_a_computing_import_added_to_a_renderer():
    """The check itself: a renderer given one import of the facts module (or one that trains) fails it."""
    page = "numerics.experiments.study.certified.page"
    graph = {page: imports_of(page) | {"numerics.experiments.study.certified.facts"}}
    assert any(path.startswith("numerics.experiments.study.certified.facts <- " + page)
               for path in computing_paths(page, graph))
    graph = {page: imports_of(page) | {"numerics.experiments.study.certified.contrasts"}}
    assert any(path.startswith("numerics.train <- ") for path in computing_paths(page, graph))
    graph = {page: imports_of(page) | {"theory.softmax_bounds"}}  # the Monte Carlo itself, not through a loader
    assert "theory.softmax_bounds <- " + page in computing_paths(page, graph)


@pytest.mark.parametrize("renderer", RENDERERS)
def test_a_renderer_imports_nothing_that_computes(renderer):
    assert renderer in MODULES
    assert computing_paths(renderer) == []

