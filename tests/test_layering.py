"""The package's architecture, checked on the source (an AST scan of every import).

* the file-level import graph of ``theory``, ``numerics``, ``derivations`` and ``idepth`` has no cycle;
* ``theory`` imports nothing of the other three;
* no science module (``numerics`` outside ``numerics.experiments``) imports ``numerics.experiments``;
* no module is over :data:`MAX_LINES` lines (:data:`MAX_EXPERIMENTS_LINES` in ``numerics.experiments``);
* the work-in-progress hedges named by the restructure are gone.

Imports inside functions count (a lazy import is still a dependency); no module of the science
layer points to the experiments layer, not even as an import alias.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("theory", "numerics", "derivations", "idepth")
MAX_LINES = 1000
#: the experiments layer splits by job sooner (plan, run, table, statistics, page)
MAX_EXPERIMENTS_LINES = 700
#: one-release import aliases of moved modules (each replaces itself by its new home in sys.modules)
def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


MODULES = _modules()


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _known(name: str) -> str | None:
    """The longest prefix of ``name`` that is a module of the package."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in MODULES:
            return candidate
    return None


def imports_of(module: str) -> set[str]:
    """Modules of the package that ``module`` imports (at any depth of its code)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, path.name == "__init__.py", node)
            # ``from pkg import sub`` depends on the sub-module; ``from pkg import name`` on pkg itself
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        for name in names:
            target = _known(name)
            if target is not None and target != module:
                out.add(target)
    return out


GRAPH = {module: imports_of(module) for module in MODULES}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None




def test_the_scan_sees_the_package():
    assert {"theory.predict", "numerics.train", "numerics.experiments.sweep", "idepth.cli"} <= set(MODULES)
    assert "numerics.models" in GRAPH["numerics.train"] or any(m.startswith("numerics.models") for m in GRAPH["numerics.train"])


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_the_file_level_import_graph_has_no_cycle():
    # a package __init__ that re-exports its sub-modules is an edge package -> sub-module; a sub-module
    # importing a sibling through the package would then close a cycle, and is reported
    assert _cycle(GRAPH) is None, " -> ".join(_cycle(GRAPH))


def test_theory_imports_nothing_of_the_other_packages():
    bad = {m: sorted(t for t in targets if not t.startswith("theory"))
           for m, targets in GRAPH.items() if m.startswith("theory")}
    assert not {m: t for m, t in bad.items() if t}


def test_no_science_module_imports_the_experiments_layer():
    bad = {}
    for module, targets in GRAPH.items():
        if module.startswith("numerics") and not module.startswith("numerics.experiments"):
            hits = sorted(t for t in targets if t.startswith("numerics.experiments"))
            if hits:
                bad[module] = hits
    assert not bad


@pytest.mark.parametrize("old, new", [("numerics.sweep", "numerics.experiments.sweep"),
                                      ("numerics.store", "numerics.experiments.store")])
def test_the_sweep_and_store_have_one_import_path(old, new):
    """The package was never released with the old paths, so no alias keeps them."""
    import importlib.util

    assert importlib.util.find_spec(old) is None and old not in MODULES
    assert importlib.util.find_spec(new) is not None


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_over_the_line_limit(module):
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")
    limit = MAX_EXPERIMENTS_LINES if module.startswith("numerics.experiments") else MAX_LINES
    assert lines <= limit, f"{module}: {lines} lines (limit {limit})"


HEDGES = ("_has_frozen_field", "_frozen_supported", "frozen_applied", "COMMANDS.append", "_STUDY_SCALES",
          "study_runner", "run_with_extras", "MODEL_DEFAULTS", "PARAMETER_NAMES", "LABEL_LINEAR_MODELS",
          "SOFTMAX_MODELS", "importlib.import_module(f\"{__name__}")


@pytest.mark.parametrize("hedge", HEDGES)
def test_work_in_progress_hedges_are_gone(hedge):
    hits = [str(path.relative_to(ROOT)) for path in MODULES.values() if hedge in path.read_text(encoding="utf-8")]
    assert not hits, f"{hedge!r} still in {hits}"


def test_no_issue_numbers_in_code_or_docs():
    """Docstrings and comments say what and why; the tracker's numbers belong to the tracker."""
    import re

    pattern = re.compile(r"\bissues? #?[0-9]", re.IGNORECASE)
    hits = [name for name in ("README.md", "CONTRIBUTING.md") if pattern.search((ROOT / name).read_text(encoding="utf-8"))]
    for top in ("theory", "numerics", "derivations", "idepth", "docs", "benchmarks"):
        for path in (ROOT / top).rglob("*"):
            if path.suffix in (".py", ".md", ".rst") and "_build" not in path.parts and "generated" not in path.parts:
                for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                    if pattern.search(line):
                        hits.append(f"{path.relative_to(ROOT)}:{number}")
    assert not hits, hits
