"""``idepth reproduce`` fails early and speaks plainly.

* shipped certified results that cannot be read (verdicts that disagree with their cells, or written by an
  older package) leave the claims that read them NOT TESTED, naming why; nothing is trained for them;
* after Ctrl-C: one line saying how to continue (the same command; the finished runs stay in the store),
  exit 130, nothing half-written;
* at the smoke scale, whose numbers mean nothing, every claim reads "NOT JUDGED (smoke scale)" in the printed
  summary, REPORT.md and report.json, the measured status kept beside it; the text follows from the scale;
* outside a source checkout the shipped results are found through ``IDEPTH_RESULTS``; without it the run says
  where to point it, marks the claims that read them "NOT TESTED (shipped results not found: set
  IDEPTH_RESULTS)" and exits 1, not 0.

Each end-to-end run is the smoke scale's ``fig6a`` alone (15 tiny runs, about 10 s), without the regime study
and the calibration.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
from page_parts import has_cells

import numerics.experiments.shipped as shipped
from idepth.cli import build_parser, main
from numerics.experiments import sweep as sweep_module
from numerics.experiments.reproduce import get_scale, reproduce
from numerics.experiments.criteria import Verdict
from numerics.experiments.reproduce._registry import as_reported
from numerics.experiments.reproduce.context import ReproductionContext
from numerics.experiments.reproduce.envelope import load_envelopes
from numerics.experiments.reproduce.report import evaluate_claims

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_RESULTS = ROOT / "docs" / "results"
#: the cheapest complete reproduction: one figure of the smoke scale, no study, no calibration
FAST = ["--scale", "smoke", "--only", "fig6a", "--workers", "1", "--no-progress", "--no-study", "--no-calibration"]
#: the smoke-scale families of fig6a as a scale that does judge its claims (to see the verdicts a judged scale gives)
JUDGED_SMOKE = dataclasses.replace(get_scale("smoke"), name="smoke-judged", judges_claims=True)
#: the claims that read the shipped results, and the input each reads
SHIPPED_CLAIMS = {"inverse_depth_certified": "certified study", "inverse_depth": "certified study",
                  "shipped_rerun": "certified study"}


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def outside_a_checkout(tmp_path, monkeypatch):
    """The package as a wheel sees it: imported from no source checkout, IDEPTH_RESULTS unset, cwd elsewhere."""
    monkeypatch.setattr(shipped, "checkout_root", lambda: None)
    monkeypatch.delenv(shipped.RESULTS_VARIABLE, raising=False)
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def _no_training(monkeypatch):
    """Any sweep (training) or calibration fails the test: what is checked must be refused before."""
    def refuse(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(sweep_module, "run_sweep", refuse)
    monkeypatch.setattr("numerics.experiments.reproduce.calibration.calibrate", refuse)


# ------------------------------------------------------------------------------------------- the certified study

def _results_copy(root: Path) -> Path:
    results = root / "results"
    shutil.copytree(SHIPPED_RESULTS, results, ignore=shutil.ignore_patterns("certified", "figures", "expressible"))
    return results


@pytest.mark.parametrize("case, fragment", [
    ("a setting the cells do not hold", "is not in the cells (written from other cells?)"),
    ("written by an older package", "lacks envelope_se"),
])
def test_certified_results_that_cannot_be_read_leave_their_claims_not_tested_naming_why(
        outside_a_checkout, monkeypatch, case, fragment):
    results = _results_copy(outside_a_checkout)
    path = results / "certified-revised" / "certified-study.verdicts.json"
    record = json.loads(path.read_text())
    if case == "a setting the cells do not hold":
        record["settings"][0]["P"] = 999
    else:
        for setting in record["settings"]:
            del setting["envelope_se"]
    path.write_text(json.dumps(record))
    monkeypatch.setenv(shipped.RESULTS_VARIABLE, str(results))
    with pytest.raises(ValueError, match=re.escape(fragment)):
        load_envelopes()
    result = reproduce(JUDGED_SMOKE, "fig6a", outside_a_checkout / "out", study=False, calibrate=False,
                       log=lambda text: None)
    claim = next(c for c in result.claims if c.id == "inverse_depth")
    assert claim.status is Verdict.NOT_TESTED and fragment in claim.evidence, claim.evidence


# ------------------------------------------------------------------------------------------- Ctrl-C

def test_ctrl_c_prints_how_to_continue_exits_130_and_the_same_command_continues(tmp_path, capsys, monkeypatch):
    real = sweep_module.run_sweep

    def train_then_interrupt(*args, **kwargs):
        real(*args, **kwargs)  # every run finishes and is committed to the store, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_module, "run_sweep", train_then_interrupt)
    out = tmp_path / "out"
    argv = ["reproduce", *FAST, "--out", str(out)]
    status = main(argv)
    line = _last_line(capsys)  # the plan and progress are logged before it
    assert status == 130, line
    assert line.startswith("idepth reproduce: interrupted") and str(out / "store") in line, line
    command = line.split("the same command continues: ", 1)[1]
    parse = build_parser().parse_args
    assert shlex.split(command)[0] == "idepth" and vars(parse(shlex.split(command)[1:])) == vars(parse(argv)), command
    assert not (out / "REPORT.md").exists() and not (out / "report.json").exists()
    assert not [p for p in out.rglob("*") if ".tmp" in p.name or p.name.startswith(".idepth")], "half-written files"

    monkeypatch.setattr(sweep_module, "run_sweep", real)
    assert main(shlex.split(command)[1:]) == 0
    report = (out / "REPORT.md").read_text(encoding="utf-8")
    assert "0 trained now" in report, "the finished runs were not kept"


def _last_line(capsys) -> str:
    """The last line on stderr (the run logs its plan and progress before it)."""
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_ctrl_c_before_any_run_finishes_leaves_no_report(tmp_path, capsys, monkeypatch):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_module, "run_sweep", interrupt)
    status = main(["reproduce", *FAST, "--out", str(tmp_path / "out")])
    line = _last_line(capsys)
    assert status == 130 and "the same command continues: idepth reproduce --scale smoke" in line, line
    assert not list((tmp_path / "out").rglob("REPORT.md"))


# ------------------------------------------------------------------------------------------- smoke: not judged

def test_at_the_smoke_scale_every_claim_reads_not_judged_in_the_summary_the_report_and_report_json(
        tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["reproduce", *FAST, "--out", str(out)]) == 0
    summary = capsys.readouterr().out.strip()
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))["claims"]
    report = (out / "REPORT.md").read_text(encoding="utf-8")
    mark = "NOT JUDGED (smoke scale)"
    n_paper = sum(c["kind"] == "paper" for c in data)
    assert f"claims of the paper ({n_paper}): {n_paper} {mark};" in summary, summary
    assert f"contrasts ({len(data) - n_paper}): {len(data) - n_paper} {mark}" in summary, summary
    assert {c["status"] for c in data} == {"not judged"} and {c["mark"] for c in data} == {mark}
    assert report.count(f"- **{mark}** — ") == len(data)
    for status in ("REPRODUCED", "CONTRADICTED", "INCONCLUSIVE"):
        assert f"**{status}**" not in report and f": {status}**" not in report, status
    # the measured status is kept apart, and it is what the numbers say (not all "not judged")
    measured = {c["id"]: c["measured_status"] for c in data}
    assert set(measured.values()) <= {v.word for v in Verdict} - {"not judged"}
    assert len(set(measured.values())) >= 2, measured
    assert report.count("measured status (not a verdict): ") == len(data)


def test_the_not_judged_text_is_computed_from_the_scale(tmp_path):
    """Another unjudged scale names itself; a judged scale keeps the measured verdicts."""
    families = ("nonlinear_lazy",)
    claims = {}
    for scale in (dataclasses.replace(get_scale("smoke"), name="tiny"), JUDGED_SMOKE):
        ctx = ReproductionContext.open(scale, tmp_path / scale.name, families=families, envelopes=load_envelopes())
        claims[scale.name] = {c.id: c for c in evaluate_claims(ctx)}
    assert {c.mark for c in claims["tiny"].values()} == {"NOT JUDGED (tiny scale)"}
    judged = claims["smoke-judged"]
    assert all(c.status == c.measured_status and not c.note for c in judged.values())
    assert {c.id: c.measured_status for c in claims["tiny"].values()} == {c.id: c.status for c in judged.values()}
    assert judged["inverse_depth"].mark == judged["inverse_depth"].status.upper() != "NOT JUDGED"


# ------------------------------------------------------------------------------------------- shipped results

def test_outside_a_checkout_without_the_variable_no_shipped_results_are_found(outside_a_checkout):
    from numerics.experiments.study.answer import package_answer
    from numerics.experiments.reproduce.envelope import sizes_section
    from numerics.experiments.study.certified.page import read_verdicts

    assert shipped.results_dir() is None
    message = shipped.not_found_message()
    assert "\n" not in message and f"set {shipped.RESULTS_VARIABLE}=" in message
    with pytest.raises(FileNotFoundError, match=shipped.RESULTS_VARIABLE):
        load_envelopes()
    with pytest.raises(ValueError, match=shipped.RESULTS_VARIABLE):
        read_verdicts()
    with pytest.raises(FileNotFoundError, match=shipped.RESULTS_VARIABLE):
        package_answer()
    assert f"No size inference: {message}." in sizes_section(None, (128, 1024))


def test_outside_a_checkout_the_variable_points_every_reader_at_the_results(outside_a_checkout, monkeypatch):
    from numerics.experiments.study.answer import package_answer
    from numerics.experiments.reproduce.envelope import sizes_section
    from numerics.experiments.study.certified.page import read_verdicts

    results = _results_copy(outside_a_checkout)
    monkeypatch.setenv(shipped.RESULTS_VARIABLE, str(results))
    assert shipped.results_dir() == results.resolve()
    table = load_envelopes()
    assert table.source == results.resolve() and table.summaries[0].d == 16
    assert read_verdicts()["main"] == json.loads((SHIPPED_RESULTS / "certified-study.verdicts.json").read_text())["main"]
    assert package_answer().text == package_answer(SHIPPED_RESULTS).text
    assert has_cells(sizes_section(table, (128, 1024)), "best (d, P) against B_1")
    ctx = ReproductionContext.open(JUDGED_SMOKE, outside_a_checkout / "out", families=("nonlinear_lazy",),
                                   envelopes=table)
    claims = {c.id: c for c in evaluate_claims(ctx)}
    assert claims["inverse_depth_certified"].status is not Verdict.NOT_TESTED
    assert claims["inverse_depth"].status is not Verdict.NOT_TESTED


def test_a_variable_that_names_no_directory_is_refused_before_training(outside_a_checkout, tmp_path, capsys,
                                                                      monkeypatch):
    monkeypatch.setenv(shipped.RESULTS_VARIABLE, str(tmp_path / "nowhere"))
    _no_training(monkeypatch)
    status = main(["reproduce", *FAST, "--out", str(tmp_path / "out")])
    line = _one_line(capsys.readouterr().err)
    assert status == 2 and f"{shipped.RESULTS_VARIABLE} must name a directory" in line and "nowhere" in line, line
    assert not (tmp_path / "out").exists()


def test_without_shipped_results_the_cli_says_where_to_point_the_variable_and_exits_1(outside_a_checkout, capsys):
    out = outside_a_checkout / "out"
    status = main(["reproduce", *FAST, "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1
    assert err[-1].startswith("idepth reproduce: certified study not read: ")
    assert err[-1].endswith(shipped.not_found_message())
    assert sum(shipped.not_found_message() in line for line in err) == 2  # before training, and at the end
    assert (out / "REPORT.md").is_file()


def test_without_shipped_results_the_claims_that_read_them_are_not_tested_and_say_why(outside_a_checkout):
    result = reproduce(JUDGED_SMOKE, "fig6a", outside_a_checkout / "out", study=False, calibrate=False,
                       log=lambda text: None)
    assert result.unavailable == ("certified study",)
    mark = f"NOT TESTED ({shipped.NOT_FOUND_NOTE})"
    assert mark == "NOT TESTED (shipped results not found: set IDEPTH_RESULTS)"
    claims = {c.id: c for c in result.claims}
    assert {i for i, c in claims.items() if c.mark == mark} == set(SHIPPED_CLAIMS)
    assert all(not c.note for i, c in claims.items() if i not in SHIPPED_CLAIMS)
    data = {c["id"]: c for c in json.loads((result.out_dir / "report.json").read_text())["claims"]}
    assert all(data[i]["mark"] == mark and data[i]["status"] == "not tested" for i in SHIPPED_CLAIMS)
    report = result.report.read_text(encoding="utf-8")
    assert report.count(f"**{mark}**") >= len(SHIPPED_CLAIMS)


def test_only_the_claims_whose_input_was_not_found_carry_the_note():
    """A claim reads "not tested" with the note only when an input it reads is unavailable."""
    from types import SimpleNamespace

    from numerics.experiments.reproduce._registry import Claim

    ctx = SimpleNamespace(scale=JUDGED_SMOKE, unavailable={"certified study": shipped.NOT_FOUND_NOTE})
    lazy = as_reported(Claim("lazy_contrast", "p", "c", "not tested", "e", families=("nonlinear_lazy",)), ctx)
    certified = as_reported(Claim("x", "p", "c", "not tested", "e", families=("certified study",)), ctx)
    assert lazy.mark == "NOT TESTED" and certified.mark == f"NOT TESTED ({shipped.NOT_FOUND_NOTE})"


def test_one_module_says_where_the_shipped_results_live():
    """No other source of numerics/ or idepth/ builds the path of docs/results (it names it in text only)."""
    pattern = re.compile(r"""["']docs["']\s*/\s*["']results["']|Path\(\s*["']docs/results""")
    offenders = [str(p.relative_to(ROOT)) for package in ("numerics", "idepth") for p in (ROOT / package).rglob("*.py")
                 if pattern.search(p.read_text(encoding="utf-8")) and p.name != "shipped.py"]
    assert offenders == []
    source = (ROOT / "numerics" / "experiments" / "shipped.py").read_text(encoding="utf-8")
    assert 'Path("docs") / "results"' in source
