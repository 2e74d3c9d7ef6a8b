"""Every decision rule and threshold of the experiments layer is defined once, in ``numerics.experiments.criteria``.

A scan of the source of ``numerics`` and ``idepth``: no other module defines a name ``criteria`` owns (a
function or a module-level constant), restates the α window's numbers, compares a depth gain with a
literal, or writes the standard error of a mean by hand. Each scan is first shown to find a planted
violation, so a scan that sees nothing cannot pass by accident.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from numerics.experiments import criteria

ROOT = Path(__file__).resolve().parents[1]
CRITERIA = ROOT / "numerics" / "experiments" / "criteria.py"
#: what criteria owns: every public name it exports
OWNED = frozenset(criteria.__all__)
#: restatements of a rule's numbers or formula, by pattern
LITERALS = {
    "the α window": re.compile(r"0\.85\s*,\s*1\.15"),
    "a depth-gain threshold": re.compile(r"depth_gain\s*[<>]=?\s*[0-9]"),
    "a hand-written standard error": re.compile(r"ddof\s*=\s*1\s*\)*\s*/\s*(np|math)\.sqrt"),
}


def _sources() -> dict[Path, str]:
    return {path: path.read_text(encoding="utf-8") for top in ("numerics", "idepth")
            for path in sorted((ROOT / top).rglob("*.py")) if path != CRITERIA}


def owned_definitions(source: str) -> set[str]:
    """The names of ``OWNED`` that ``source`` defines: a function anywhere, or a module-level assignment."""
    tree = ast.parse(source)
    names = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names & OWNED


def restated_literals(source: str) -> list[str]:
    """Which of :data:`LITERALS` ``source`` contains."""
    return [name for name, pattern in LITERALS.items() if pattern.search(source)]


def test_the_scans_find_planted_violations():
    assert owned_definitions("def last_doubling(depths, values):\n    pass\n") == {"last_doubling"}
    assert owned_definitions("ALPHA_WINDOW = (0.8, 1.2)\n") == {"ALPHA_WINDOW"}
    assert owned_definitions("def f():\n    SETTLING_TOLERANCE = 0.2\n") == set()  # a local is not a definition
    assert restated_literals("WINDOW = (0.85, 1.15)") == ["the α window"]
    assert restated_literals("ok = s.depth_gain < 1.1") == ["a depth-gain threshold"]
    assert restated_literals("se = x.std(ddof=1) / np.sqrt(n)") == ["a hand-written standard error"]
    assert restated_literals("se = float(np.std(x, ddof=1)) / math.sqrt(len(x))") == ["a hand-written standard error"]


def test_the_scan_reads_the_package():
    sources = _sources()
    assert len(sources) > 80 and ROOT / "numerics" / "experiments" / "reproduce" / "analysis.py" in sources
    assert {"ALPHA_WINDOW", "DEPTH_GAIN_THRESHOLD", "settles", "last_doubling", "is_converged", "training_failures",
            "standard_error"} <= OWNED


@pytest.mark.parametrize("path", sorted(_sources()), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_redefines_or_restates_a_rule_of_criteria(path):
    source = path.read_text(encoding="utf-8")
    assert not owned_definitions(source), f"{path.relative_to(ROOT)} defines {sorted(owned_definitions(source))}"
    assert not restated_literals(source), f"{path.relative_to(ROOT)} restates {restated_literals(source)}"
