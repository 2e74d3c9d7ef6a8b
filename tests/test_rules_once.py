"""Every decision rule and threshold of the experiments layer is defined once, in ``numerics.experiments.criteria``.

A scan of the source of ``numerics`` and ``idepth``: no other module defines a name ``criteria`` owns (a
function or a module-level constant), restates the α window's numbers, compares a depth gain with a
literal, writes the standard error of a mean by hand, compares a value with a number of SEs (``SIGMAS *``,
``_SES *``) or an α interval with the α grid's edge; and no module of ``numerics/experiments`` but
``criteria`` binds a module-level UPPER_CASE name to a number (a threshold outside the rules' home), except
the few sizes, seeds and sample counts of :data:`NOT_RULES`, each with the reason it is not a rule. Each scan
is first shown to find a planted violation, so a scan that sees nothing cannot pass by accident.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from numerics.experiments import criteria

ROOT = Path(__file__).resolve().parents[1]
CRITERIA = ROOT / "numerics" / "experiments" / "criteria.py"
#: criteria and its verdict vocabulary (a module of its own so that printing a verdict loads no sympy; criteria
#: re-exports it): the rules' home
RULES_HOME = (CRITERIA, ROOT / "numerics" / "experiments" / "vocabulary.py")
#: what criteria owns: every public name it exports
OWNED = frozenset(criteria.__all__)
#: restatements of a rule's numbers or formula, by pattern
LITERALS = {
    "the α window": re.compile(r"0\.85\s*,\s*1\.15"),
    "a depth-gain threshold": re.compile(r"depth_gain\s*[<>]=?\s*[0-9]"),
    "a hand-written standard error": re.compile(r"ddof\s*=\s*1\s*\)*\s*/\s*(np|math)\.sqrt"),
    "a hand-written variance of a mean": re.compile(r"\.var\([^)]*ddof\s*=\s*1"),
    "a hand-written comparison in SEs": re.compile(r"(SIGMAS|_SES)\s*\*"),
    "an α-grid edge compared by hand": re.compile(r"[<>]=?\s*[A-Za-z_.]*(ALPHA_GRID|alpha_grid)\["),
    "a z-score compared with the agreement rule's SEs": re.compile(r"[<>]=?\s*(criteria\.)?AGREEMENT_SIGMAS\b"),
}


#: module-level numeric constants of ``numerics/experiments`` that are not rules, by module, each with why
NOT_RULES = {
    "bounds.py": {"BOUND_HEADS": "heads of the mixture bound: a Monte-Carlo size",
                  "BOUND_SEED": "the seed the bounds' streams derive from"},
    "reproduce/context.py": {"THEORY_SEED": "the seed of the theory's Monte-Carlo estimates",
                             "FINITE_P_SEEDS": "independent fits of each finite-P floor: a sample size"},
    "reproduce/plotting.py": {"LEGEND_CLEARANCE": "figure layout"},
    "reproduce/calibration.py": {"TIMED_SHARE": "how much of a plan the run-time estimate times: a sample size",
                                 "TIMING_BUDGET": "how long the run-time estimate may time: a sample size"},
    "reproduce/figures/_linear.py": {"_PANEL_EXPONENT": "figure layout"},
    "store/_layout.py": {"SCHEMA_VERSION": "the store's file-format version"},
    "study/plan.py": {"CELL_FORMAT": "the cells' file-format version (hashed into every cell)"},
    "study/population.py": {"_FLOP_PER_PDN": "the cost estimate's FLOP count: bookkeeping",
                            "_ASSUMED_FLOPS": "the throughput a FLOP-count estimate assumes: a cost-model input"},
    "study/certified/statistics.py": {"BOOTSTRAP": "bootstrap replicates: a sample size"},
    "study/certified/facts.py": {"DECOMPOSITION_CONTEXTS": "report contexts of a winner's A_L, C_L: a sample size"},
    "study/certified/targets.py": {"CORES": "the machine the hours target is stated for",
                                   "PLAN_SEEDS": "which seeds the time target counts: a plan size",
                                   "PREDICT_SAMPLES": "Monte-Carlo contexts: a sample size",
                                   "HEADS_SETS": "sets of fresh contexts: a sample size"},
}
EXPERIMENTS = ROOT / "numerics" / "experiments"


def _is_number(node: ast.expr) -> bool:
    """A numeric literal, or arithmetic of numeric literals (``-1``, ``2 ** 10``)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _is_number(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_number(node.left) and _is_number(node.right)
    return False


def numeric_constants(source: str) -> set[str]:
    """The UPPER_CASE names ``source`` binds to a number at module level (candidate thresholds)."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if _is_number(value):
            names |= {t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper()}
    return names


def _sources() -> dict[Path, str]:
    return {path: path.read_text(encoding="utf-8") for top in ("numerics", "idepth")
            for path in sorted((ROOT / top).rglob("*.py")) if path not in RULES_HOME}


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
    assert restated_literals("between = values.var(axis=0, ddof=1) / n") == ["a hand-written variance of a mean"]
    assert restated_literals("worse = delta < -criteria.AGREEMENT_SIGMAS * se") == ["a hand-written comparison in SEs"]
    assert restated_literals("ok = d.value <= DOUBLING_SES * d.se") == ["a hand-written comparison in SEs"]
    assert restated_literals("bounded = r.alpha_lo > ALPHA_GRID[0]") == ["an α-grid edge compared by hand"]
    assert restated_literals("return lo > self.alpha_grid[0]") == ["an α-grid edge compared by hand"]
    assert restated_literals('"agrees": bool(abs(z) <= AGREEMENT_SIGMAS)') == [
        "a z-score compared with the agreement rule's SEs"]
    assert restated_literals("text = f'{AGREEMENT_SIGMAS:g} SE'; ax.set_ylim(ALPHA_GRID[0] * 0.8)") == []
    planted = "CERTIFICATE_SES = 2.0\nROUNDOFF: float = 1e-6\nLIMIT = -2 ** 3\nGRID = (1, 2)\nlocal = 3\n"
    assert numeric_constants(planted) == {"CERTIFICATE_SES", "ROUNDOFF", "LIMIT"}
    assert numeric_constants("def f():\n    THRESHOLD = 0.1\n") == set()  # a local is not a module constant


def test_the_scan_reads_the_package():
    sources = _sources()
    assert len(sources) > 80 and ROOT / "numerics" / "experiments" / "reproduce" / "analysis.py" in sources
    assert {"ALPHA_WINDOW", "DEPTH_GAIN_THRESHOLD", "settles", "last_doubling", "checked_depths",
            "standard_error"} <= OWNED


@pytest.mark.parametrize("path", sorted(_sources()), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_redefines_or_restates_a_rule_of_criteria(path):
    source = path.read_text(encoding="utf-8")
    assert not owned_definitions(source), f"{path.relative_to(ROOT)} defines {sorted(owned_definitions(source))}"
    assert not restated_literals(source), f"{path.relative_to(ROOT)} restates {restated_literals(source)}"


@pytest.mark.parametrize("path", sorted(p for p in EXPERIMENTS.rglob("*.py") if p not in RULES_HOME),
                         ids=lambda p: str(p.relative_to(EXPERIMENTS)))
def test_no_experiments_module_but_criteria_holds_a_numeric_threshold(path):
    allowed = NOT_RULES.get(str(path.relative_to(EXPERIMENTS)), {})
    stray = numeric_constants(path.read_text(encoding="utf-8")) - set(allowed)
    assert not stray, (f"{path.relative_to(ROOT)} binds {sorted(stray)} to numbers at module level: a threshold "
                       "belongs in numerics/experiments/criteria.py (a size or seed: NOT_RULES, with the reason)")


#: string literals that are exactly a verdict's word, outside criteria, by module, each with why it is not a verdict
NOT_VERDICTS = {"study/certified/revised.py": "the page's converged column: whether a step-doubling check ran"}


def verdict_literals(source: str) -> set[str]:
    """The string literals of ``source`` that spell a :class:`~numerics.experiments.criteria.Verdict` (either case)."""
    words = {v.value for v in criteria.Verdict} | {v.word for v in criteria.Verdict}
    return {node.value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in words}


def test_the_verdict_words_are_spelled_only_by_the_verdict_vocabulary():
    assert verdict_literals('ok = s["verdict"] != "INCONCLUSIVE"\nx = "not tested"\n"""reproduced in a docstring"""')\
        == {"INCONCLUSIVE", "not tested"}
    for path, source in _sources().items():
        if path.is_relative_to(EXPERIMENTS) and str(path.relative_to(EXPERIMENTS)) in NOT_VERDICTS:
            continue
        assert not verdict_literals(source), (f"{path.relative_to(ROOT)} spells {sorted(verdict_literals(source))}: "
                                              "use numerics.experiments.criteria.Verdict")


def test_every_exemption_names_a_constant_that_exists():
    for module, names in NOT_RULES.items():
        present = numeric_constants((EXPERIMENTS / module).read_text(encoding="utf-8"))
        assert set(names) <= present, f"{module}: stale exemptions {sorted(set(names) - present)}"
