"""Claims about the symbolic derivations and their pages (``derivations/``, ``idepth derive``).

* every derivation verifies, step by step;
* the committed pages ``docs/derivations/*.md`` are exactly what the code generates
  (``idepth derive --check`` passes), and generation is deterministic;
* a step that does not hold makes ``idepth derive`` exit non-zero naming the step, and
  leaves the pages untouched;
* a broken cross-reference fails the docs build (a tiny Sphinx project built with the
  real ``docs/conf.py``).
"""

from __future__ import annotations

import argparse
import doctest
import importlib
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

import derivations
from derivations import NAMES, DerivationError, Step, Verdict
from derivations._framework import Derivation, render, verify
from idepth.commands import derive as derive_command
from idepth.commands import docs as docs_command

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "docs" / "derivations"


def run_derive(*argv: str) -> int:
    """Run ``idepth derive ARGV`` through its own sub-parser (independent of the other commands)."""
    parser = argparse.ArgumentParser(prog="idepth")
    derive_command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["derive", *argv])
    return args.func(args)


@pytest.fixture(scope="module")
def verified() -> dict:
    """Every derivation verified (steps and tables) once for this module (about 10 s in total)."""
    return {name: verify(derivations.build(name)) for name in NAMES}


@pytest.fixture(scope="module")
def generated(verified) -> dict[str, str]:
    """The pages of the verified derivations (what ``derivations.generate`` returns)."""
    return {name: render(result) for name, result in verified.items()}


@pytest.mark.parametrize("name", NAMES)
def test_every_step_of_every_derivation_verifies(name, verified, generated):
    result = verified[name]
    assert len(result.verdicts) == len(result.derivation.steps) > 0
    assert all(verdict.holds for verdict in result.verdicts)
    n = str(len(result.verdicts))
    assert re.findall(r"\*Steps verified:\* (\d+) of (\d+)\.", generated[name]) == [(n, n)]


@pytest.mark.parametrize("name", NAMES)
def test_committed_page_equals_generated_page(name, generated):
    committed = (PAGES / f"{name}.md").read_text(encoding="utf-8")
    assert committed == generated[name], f"docs/derivations/{name}.md is stale: run `idepth derive --only {name}`"


def test_derive_check_passes_on_the_committed_pages(generated, monkeypatch, capsys):
    # reuse this module's generation instead of verifying everything a second time
    monkeypatch.setattr(derivations, "generate", generated.__getitem__)
    assert run_derive("--check") == 0
    assert "up to date" in capsys.readouterr().out


def test_derive_check_names_a_stale_page(tmp_path, generated, monkeypatch, capsys):
    monkeypatch.setattr(derivations, "generate", generated.__getitem__)
    for name in NAMES:
        (tmp_path / f"{name}.md").write_text(generated[name], encoding="utf-8")
    stale = tmp_path / "modewise.md"
    stale.write_text(generated["modewise"].replace("power law", "power-law", 1), encoding="utf-8")
    assert run_derive("--check", "--out", str(tmp_path)) == 1
    err = capsys.readouterr().err
    assert "modewise.md differs" in err
    assert "ensemble.md" not in err


def test_derive_check_says_a_missing_page_is_missing_and_a_stale_one_differs(tmp_path, generated, monkeypatch,
                                                                              capsys):
    monkeypatch.setattr(derivations, "generate", generated.__getitem__)
    for name in NAMES:
        (tmp_path / f"{name}.md").write_text(generated[name], encoding="utf-8")
    (tmp_path / "ensemble.md").unlink()
    (tmp_path / "modewise.md").write_text(generated["modewise"] + "\n", encoding="utf-8")
    assert run_derive("--check", "--out", str(tmp_path)) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert sorted(lines) == sorted([
        f"idepth derive: {tmp_path / 'ensemble.md'} is missing (run `idepth derive --only ensemble`)",
        f"idepth derive: {tmp_path / 'modewise.md'} differs from the generated page "
        "(run `idepth derive --only modewise`)",
    ])


def test_pages_are_deterministic():
    # a fresh generation (new sympy objects, re-seeded Monte Carlo) gives byte-identical pages
    for name in ("context_updates", "covariance_polynomial"):
        assert derivations.generate(name) == derivations.generate(name)


def test_derive_writes_the_pages_it_checks(tmp_path):
    assert run_derive("--only", "context_updates", "--out", str(tmp_path)) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["context_updates.md"]
    assert run_derive("--check", "--only", "context_updates", "--out", str(tmp_path)) == 0


def test_derive_writes_pages_with_the_mode_the_umask_gives_a_new_file(tmp_path):
    previous = os.umask(0o022)
    try:
        assert run_derive("--only", "context_updates", "--out", str(tmp_path)) == 0
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "context_updates.md").stat().st_mode) == 0o644


def test_a_broken_step_makes_derive_exit_nonzero_naming_the_step(tmp_path, monkeypatch, capsys):
    module = importlib.import_module("derivations.context_updates")
    monkeypatch.setattr(module, "_two_layer_check", lambda: Verdict(False, "deliberately broken"))
    (tmp_path / "context_updates.md").write_text("old page\n", encoding="utf-8")
    assert run_derive("--only", "context_updates", "--out", str(tmp_path)) == 1
    err = capsys.readouterr().err
    assert "derivation 'context_updates', step 6 'Two layers' (paper eqs. (78)–(80)) does not hold" in err
    assert "deliberately broken" in err
    # nothing is written when a step fails
    assert (tmp_path / "context_updates.md").read_text(encoding="utf-8") == "old page\n"


def test_a_check_that_raises_is_a_failing_step():
    def crash() -> Verdict:
        raise ZeroDivisionError("division by zero")

    derivation = Derivation("demo", "Demo", "nowhere", "", (Step("fine", "x", lambda: Verdict(True, "ok")),
                                                             Step("crashes", "y", crash, equation="24")))
    with pytest.raises(DerivationError, match=r"step 2 'crashes' \(paper eq\. \(24\)\).*ZeroDivisionError"):
        verify(derivation)


def test_a_wrong_identity_is_caught_by_the_symbolic_checks():
    # the checks can fail: a deliberately wrong closed form of the two-layer case is rejected
    import sympy as sp

    from derivations import context_updates as cu

    y, As, ps = cu._symbolic_attention(2, 3)
    closed = cu.closed_form_prediction(y, As, ps, cu.m * cu.v, cu.g)
    wrong = cu.g / 2 * ((ps[0] * y)[0, 0] + (ps[1] * y)[0, 0]) + cu.g * cu.m * cu.v / 2 * (ps[1] * As[0] * y)[0, 0]
    assert sp.expand(closed - wrong) != 0


def test_index_page_lists_every_derivation():
    index = (PAGES / "index.md").read_text(encoding="utf-8")
    toctree = index.split("```{toctree}")[1].split("```")[0]
    assert [line.strip() for line in toctree.splitlines() if line.strip() and not line.startswith(":")] == list(NAMES)


@pytest.mark.parametrize("module", ["derivations", "derivations._framework", *[f"derivations.{n}" for n in NAMES]])
def test_derivation_docstring_examples_run(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def _tiny_project(tmp_path: Path, body: str) -> tuple[int, str]:
    source = tmp_path / "src"
    source.mkdir()
    (source / "index.md").write_text(f"# Tiny\n\n{body}\n", encoding="utf-8")
    out = tmp_path / "out"
    command = docs_command.sphinx_command(out, source, confdir=ROOT / "docs")
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    return result.returncode, result.stdout + result.stderr


def test_docs_conf_builds_a_project_whose_references_resolve(tmp_path):
    status, output = _tiny_project(tmp_path, "See {ref}`tiny` and {doc}`index`.\n\n(tiny)=\n## Target")
    assert status == 0, output


BROKEN_REFERENCES = {
    "no_such_page": "A link to {doc}`no_such_page`.",
    "theory.no_such_function": "A reference to {py:func}`theory.no_such_function`.",
    "no-such-label": "See {ref}`no-such-label`.",
}


def test_a_broken_cross_reference_fails_the_docs_build(tmp_path):
    status, output = _tiny_project(tmp_path, "\n\n".join(BROKEN_REFERENCES.values()))
    assert status != 0
    for target in BROKEN_REFERENCES:  # every broken reference is reported (--keep-going)
        assert any(target in line and "WARNING" in line for line in output.splitlines()), output
