"""The one cache: a value is keyed on its inputs and on the code that computes it, and on nothing else."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

from numerics.experiments.cache import cache_file, cached, code_digest, function_digest, read_cached

ROOT = Path(__file__).resolve().parents[1]

PROBE = '''
"""A probe module for function_digest."""
SCALE = {scale}


def leaf(x):
    return {leaf}


def middle(x):
    if x < 0:
        raise ValueError("{message}")
    return leaf(x) * SCALE


def top(x):
    from numerics._digest_probe import middle as inner
    return inner(x) + 1


def unrelated(x):
    return {unrelated}
'''


def _probe(tmp_path, name="numerics._digest_probe", **values):
    """Load PROBE with ``values`` as a module of the package (function_digest follows only theory/numerics)."""
    fields = dict(scale="2.0", leaf="x + 1", message="x must be >= 0", unrelated="x")
    fields.update(values)
    path = tmp_path / f"probe_{len(list(tmp_path.iterdir()))}.py"
    path.write_text(textwrap.dedent(PROBE.format(**fields)))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    function_digest.cache_clear()
    return module


@pytest.fixture
def probe(tmp_path):
    yield lambda **values: function_digest(_probe(tmp_path, **values).top)
    sys.modules.pop("numerics._digest_probe", None)
    function_digest.cache_clear()


def test_the_digest_follows_the_code_a_value_reaches_through_calls_imports_and_constants(probe):
    base = probe()
    assert probe() == base
    assert probe(leaf="x + 2") != base           # two calls deep, through an import inside the body
    assert probe(scale="3.0") != base            # a module constant the code reads
    assert probe(message="x is negative") != base  # an error message of a function the value runs through


def test_moving_the_code_to_another_module_keeps_its_key(tmp_path, probe):
    base = probe()
    moved = _probe(tmp_path, name="numerics._digest_probe_moved")
    try:
        # top imports middle from numerics._digest_probe (the first copy): the same code, reached the same way
        assert function_digest(moved.top) == base
    finally:
        sys.modules.pop("numerics._digest_probe_moved", None)


def test_editing_code_the_value_does_not_reach_keeps_its_key(probe):
    base = probe()
    assert probe(unrelated="x * 5") == base


def test_a_reworded_docstring_or_comment_keeps_the_key_and_a_changed_line_of_code_does_not():
    source = (ROOT / "theory" / "softmax_bounds.py").read_text(encoding="utf-8")
    first = source.splitlines()[0]
    assert first.startswith('"""')  # the module docstring
    reworded = source.replace(first, first + " Reworded.", 1) + "\n# a comment\n"
    assert code_digest(reworded) == code_digest(source)
    assert code_digest(source + "\nSCALE = 2.0\n") != code_digest(source)


def test_a_value_computed_by_other_code_is_not_read_back(tmp_path):
    assert cached(tmp_path, "demo", {"x": 1}, lambda: 1.0, code="old") == 1.0
    assert read_cached(tmp_path, "demo", {"x": 1}, "new") is None
    assert cached(tmp_path, "demo", {"x": 1}, lambda: 2.0, code="new") == 2.0
    assert cache_file(tmp_path, "demo", {"x": 1}, "old") != cache_file(tmp_path, "demo", {"x": 1}, "new")
    assert read_cached(tmp_path, "demo", {"x": 1}, "old") == 1.0


def test_a_damaged_entry_is_recomputed_and_counted(tmp_path):
    counts: dict = {}
    cached(tmp_path, "demo", {"x": 1}, lambda: 1.0, code="c", counts=counts)
    cache_file(tmp_path, "demo", {"x": 1}, "c").write_text("{not json")
    assert cached(tmp_path, "demo", {"x": 1}, lambda: 3.0, code="c", counts=counts) == 3.0
    assert cached(tmp_path, "demo", {"x": 1}, lambda: 4.0, code="c", counts=counts) == 3.0
    assert counts["computed"] == 2 and counts["cached"] == 1
    assert counts["used"] == {cache_file(tmp_path, "demo", {"x": 1}, "c").name}


def test_code_the_digest_cannot_read_is_refused_by_name():
    with pytest.raises(ValueError, match="no source for"):
        function_digest(len)


def test_the_digest_is_the_same_in_every_process_whatever_its_hash_seed():
    """A key that changed with PYTHONHASHSEED (a set's order) would miss every shipped entry in a new process."""
    import os
    import subprocess

    script = ("from numerics.experiments.study.certified.facts import prediction_code\n"
              "print(prediction_code())\n")
    digests = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(digests) == 1


@pytest.mark.parametrize("directory", ["certified", "certified-revised"])
def test_every_shipped_page_cache_entry_was_computed_by_the_current_code(directory):
    """The certified pages read their Monte Carlo from these entries: one keyed on other code is stale."""
    import json

    from numerics.experiments.cache import function_digest
    from numerics.experiments.study.certified.facts import (decomposition_code, population_step, prediction_code,
                                                            second_report_code)

    current = {"prediction": prediction_code(), "decomposition": decomposition_code(),
               "population-step": function_digest(population_step), "second-report": second_report_code()}
    entries = [json.loads(p.read_text()) for p in (ROOT / "docs" / "results" / directory / "predictions").glob("*.json")]
    assert entries
    assert {e["kind"] for e in entries} <= set(current)
    stale = [e["key"] for e in entries if e["code"] != current[e["kind"]]]
    assert not stale, f"{len(stale)} entries computed by other code: regenerate the page (idepth study certified)"
