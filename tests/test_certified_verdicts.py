"""The certified study's verdicts follow its evidence: checked depths only, fit-free contrasts, variants agree."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.experiments import criteria
from numerics.experiments.criteria import CONTRASTS, MIN_CHECKED_DEPTHS, checked_depths, law_contrast
from numerics.experiments.study.certified.statistics import (
    ALPHA_GRID,
    contrast_bootstrap,
    contrast_stat,
    setting_verdict,
)

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "docs" / "results"
DEPTHS = (1, 2, 4, 8, 16, 32)


def _primary(lo, hi, L_max=32, alpha=(0.5, 2.0)):
    return {"name": "g2/gLmax", "L_max": L_max, "value": (lo + hi) / 2, "lo": lo, "hi": hi,
            "reference": law_contrast("g2/gLmax", L_max), "alpha_lo": alpha[0], "alpha_hi": alpha[1]}


EXCLUDING = [{"name": "full covariance", "alpha_lo": 2.0, "alpha_hi": 5.0},
             {"name": "diagonal weights", "alpha_lo": 2.5, "alpha_hi": 6.0},
             {"name": "Birge widening", "alpha_lo": 1.5, "alpha_hi": 9.0}]


@pytest.mark.parametrize("checked, failed, primary, variants, verdict, kind", [
    (DEPTHS, [], _primary(0.45, 0.56), EXCLUDING, "REPRODUCED", ""),
    (DEPTHS, [], _primary(0.60, 0.70), EXCLUDING, "CONTRADICTED", ""),
    # one variant of the fit keeps α = 1: no contradiction
    (DEPTHS, [], _primary(0.60, 0.70), EXCLUDING[:2] + [{"name": "Birge widening", "alpha_lo": 0.6,
                                                         "alpha_hi": 9.0}], "INCONCLUSIVE", "variants"),
    # the same numbers on fewer checked depths than the rule: no verdict
    (DEPTHS[:MIN_CHECKED_DEPTHS - 1], [], _primary(0.60, 0.70), EXCLUDING, "INCONCLUSIVE", "checks"),
    ((), [], None, (), "INCONCLUSIVE", "checks"),
    # a failed certificate at a checked depth blocks; one at an excluded depth does not
    (DEPTHS, [("nesting", 8)], _primary(0.60, 0.70), EXCLUDING, "INCONCLUSIVE", "training"),
    (DEPTHS[:5], [("doubling", 32)], _primary(0.60, 0.70, L_max=16), EXCLUDING, "CONTRADICTED", ""),
    (DEPTHS, [], _primary(0.2, 0.9, alpha=(ALPHA_GRID[0], ALPHA_GRID[-1])), (), "INCONCLUSIVE", "resolution"),
])
def test_a_verdict_rests_on_checked_depths_and_a_contradiction_on_every_variant(checked, failed, primary, variants,
                                                                               verdict, kind):
    assert setting_verdict(DEPTHS, DEPTHS, checked, failed, primary, variants)[:2] == (verdict, kind)


def test_only_depths_whose_doubling_check_ran_and_passed_are_checked():
    assert checked_depths(DEPTHS, {1: True, 2: True, 4: False, 16: True}) == (1, 2, 16)
    assert checked_depths(DEPTHS, {}) == ()


def test_the_alpha_one_references_are_the_law_evaluated_not_typed():
    """g_2/g_Lmax and (R_2 − R_16)/(R_1 − R_2) under R = L0 + c L^-α, against a direct evaluation of the law."""
    for alpha in (0.5, 1.0, 2.0):
        R = {L: 0.3 + 1.7 * L ** -alpha for L in (1, 2, 16, 32, 64, 128)}
        assert law_contrast("g2/gLmax", 128, alpha) == pytest.approx((R[1] - R[2]) / (R[1] - R[128]), rel=1e-12)
        assert law_contrast("(R2-R16)/(R1-R2)", 128, alpha) == pytest.approx((R[2] - R[16]) / (R[1] - R[2]), rel=1e-12)
        assert law_contrast("(R_L-R_2L)/(R_2L-R_4L)", 128, alpha) == pytest.approx(
            (R[32] - R[64]) / (R[64] - R[128]), rel=1e-12)
        assert law_contrast("(R_L-R_2L)/(R_2L-R_4L)", 128, alpha) == pytest.approx(2 ** alpha, rel=1e-12)
    assert set(CONTRASTS) == {"g2/gLmax", "(R2-R16)/(R1-R2)", "(R_L-R_2L)/(R_2L-R_4L)"}


def _cells(rng, depths=(1, 2, 4), seeds=(0, 1, 2), contexts=256):
    """Synthetic cells: three candidates, the first best on the selection set, a curve falling as 1/L."""
    cells = {}
    for L in depths:
        for s in seeds:
            base = 1.0 + 1.0 / L
            errors = base * rng.exponential(size=(3, contexts)) * np.array([[1.0], [1.2], [1.5]])
            cells[L, s] = (errors, np.array([base, 1.2 * base, 1.5 * base]) + 0.01 * s, np.full(3, 0.05), 0)
    return cells


def test_the_bootstrap_point_is_the_stored_winners_mean_and_the_best_seed_is_chosen_on_selection():
    rng = np.random.default_rng(1)
    cells = _cells(rng)
    out = contrast_bootstrap(cells, (1, 2, 4), (0, 1, 2), rng, 200)
    point, reps = out["mean over seeds"]
    expected = [np.mean([cells[L, s][0][0].mean() for s in (0, 1, 2)]) for L in (1, 2, 4)]
    np.testing.assert_allclose(point, expected, rtol=1e-12)
    assert out["best seeds"] == (0, 0, 0)  # the least selection loss (+0.01 s), not the least report loss
    np.testing.assert_allclose(out["best seed"][0], [cells[L, 0][0][0].mean() for L in (1, 2, 4)], rtol=1e-12)
    assert reps.shape == (200, 3) and np.all(np.std(reps, axis=0) > 0)  # contexts and seeds are redrawn


def test_a_contrast_at_a_depth_that_was_not_run_names_it():
    reps = np.ones((10, 3))
    with pytest.raises(ValueError, match="L_max: depth 256 was not run"):
        contrast_stat("g2/gLmax", "mean over seeds", (1, 2, 4), np.array([2.0, 1.5, 1.0]), reps, 256, set(), 2.0)
    with pytest.raises(ValueError, match="needs depth 2"):
        contrast_stat("g2/gLmax", "mean over seeds", (1, 4), np.array([2.0, 1.0]), reps[:, :2], 4, set(), 2.0)


# ------------------------------------------------------------------------------- the shipped files

#: the study's shipped results (the first study's record is data no code reads)
STUDY = SHIPPED / "certified-revised"


@pytest.fixture(scope="module")
def shipped():
    return json.loads((STUDY / "certified-study.verdicts.json").read_text())


@pytest.fixture(scope="module")
def current():
    """The verdicts the report and figures read: the study's record, through its one reader."""
    from numerics.experiments.study.certified.page import read_verdicts

    record = read_verdicts()
    assert record == json.loads((STUDY / "certified-study.verdicts.json").read_text())
    return record


def test_every_shipped_verdict_names_the_depths_it_rests_on_and_the_checks_that_ran(shipped):
    from numerics.experiments.reproduce._verdicts import certified_setting_status

    assert shipped["rules"]["min_checked_depths"] == MIN_CHECKED_DEPTHS
    for s in shipped["settings"]:
        assert set(s["checked_depths"]) <= set(s["doubling_run"]) <= set(s["depths"])
        assert set(s["excluded_depths"]) == {str(L) for L in s["depths"] if L not in s["checked_depths"]}
        if len(s["checked_depths"]) < MIN_CHECKED_DEPTHS:
            assert s["verdict"] == "INCONCLUSIVE" and s["kind"] == "checks"
        assert certified_setting_status(s) == (s["verdict"], s["kind"])  # recomputed from the file alone
        for r in s["recipes"]:
            assert r["kind"] == "contrast" and r["finding"] == "that recipe's finding"


def test_no_shipped_setting_is_contradicted_on_an_unchecked_depth(shipped):
    for s in shipped["settings"]:
        if s["verdict"] == "CONTRADICTED":
            assert len(s["checked_depths"]) >= MIN_CHECKED_DEPTHS and not any(
                L in s["checked_depths"] for _, L in s["failed"])
            assert all(not (v["alpha_lo"] <= 1 <= v["alpha_hi"]) for v in s["variants"])


def _small_cells(tmp_path, setting=(0.0, 0.0, 2, 64)):
    """The shipped cells of one setting of the study (the revised one), with the shipped prediction cache beside them."""
    from numerics.experiments.study.certified.cells import read_cell

    root = tmp_path / "certified"
    (root / "cells").mkdir(parents=True)
    for path in sorted((SHIPPED / "certified-revised" / "cells").glob("*.npz")):
        config = read_cell(path)[0]["config"]
        if (config["a"], config["b"], config["k"], config["P"]) == setting:
            shutil.copy(path, root / "cells")
    shutil.copytree(SHIPPED / "certified-revised" / "predictions", root / "predictions")
    return root


def test_report_only_reads_the_predictions_cache_and_writes_to_a_fresh_directory(tmp_path, monkeypatch, capsys):
    from idepth import cli

    root = _small_cells(tmp_path)
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in (root / "predictions").iterdir())
    assert cli.main(["study", "certified", "--report-only", "--cells", str(root)]) == 0
    err = capsys.readouterr().err
    fresh = [p for p in tmp_path.iterdir() if p.name.startswith("certified-study-")]
    assert len(fresh) == 1 and f"writing to the fresh directory {fresh[0].name}" in err
    assert "predictions: 1 read from the cache, 0 computed" in err  # nothing recomputed: no Monte Carlo
    after = sorted(p.name for p in (root / "predictions").iterdir())
    assert after and set(after) < set(before)  # the entries it read are kept, those it did not use go
    assert sum(name.startswith("prediction-") for name in after) == 1
    record = json.loads((fresh[0] / "certified-study.verdicts.json").read_text())
    shipped = json.loads((SHIPPED / "certified-revised" / "certified-study.verdicts.json").read_text())
    assert [s["verdict"] for s in record["settings"]] == [s["verdict"] for s in shipped["settings"]
                                                          if (s["a"], s["b"]) == (0.0, 0.0)]


def test_cells_of_two_plan_versions_are_refused_in_one_line(tmp_path, capsys):
    from idepth import cli
    from numerics.experiments.study.certified.cells import _write_npz, read_cell

    root = _small_cells(tmp_path)
    first = sorted((root / "cells").glob("*.npz"))[0]
    record, arrays = read_cell(first)
    record["config"]["eval_size"] = 2048
    _write_npz(first, {**arrays, "_record": np.array(json.dumps(record))})
    assert cli.main(["study", "certified", "--report-only", "--no-progress", "--cells", str(root), "--out",
                     str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "mixes plan versions: eval_size" in err[0]
    assert not (tmp_path / "o").exists()  # nothing half-written


def test_a_contrast_depth_not_run_is_refused_in_one_line(tmp_path, capsys):
    from idepth import cli

    root = _small_cells(tmp_path)
    assert cli.main(["study", "certified", "--report-only", "--no-progress", "--cells", str(root), "--out",
                     str(tmp_path / "o"), "--contrast-depth", "256"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "L_max: depth 256 was not run" in err[0]


def test_a_verdicts_file_whose_settings_disagree_with_the_cells_is_refused(tmp_path, shipped):
    from numerics.experiments.study.answer import package_answer

    results = tmp_path / "results"
    (results / "certified-revised").mkdir(parents=True)
    shutil.copy(STUDY / "certified-study.csv", results / "certified-revised")
    changed = json.loads(json.dumps(shipped))
    changed["settings"][0]["depths"] = changed["settings"][0]["depths"] + [256]
    (results / "certified-revised" / "certified-study.verdicts.json").write_text(json.dumps(changed))
    with pytest.raises(ValueError, match=r"setting \(a, b\) = \(0, 0\), k = 2, P = 64 rests on depths 256"):
        package_answer(results)


# ------------------------------------------------------------------------------- words follow the numbers

def _main(record):
    spectra = {tuple(s) for s in record["main"]["spectra"]}
    return [s for s in record["settings"] if (s["a"], s["b"]) in spectra and s["P"] == record["main"]["P"]
            and s["k"] == record["main"]["k"]]


def _status(record) -> str:
    verdicts = {s["verdict"] for s in _main(record)}
    return ("REPRODUCED" if verdicts == {"REPRODUCED"} else "CONTRADICTED" if "CONTRADICTED" in verdicts
            else "INCONCLUSIVE")


def test_the_reports_headline_on_the_certified_claim_follows_the_verdicts_file(current):
    from types import SimpleNamespace

    from numerics.experiments.reproduce import _verdicts
    from numerics.experiments.reproduce._registry import Claim
    from numerics.experiments.reproduce.report import conclusions

    fields = _verdicts._inverse_depth_certified_claim(SimpleNamespace(certified_verdicts=None), None)
    claim = Claim("inverse_depth_certified", "paper", **fields)
    text = conclusions([claim])
    assert f": {_status(current)}** — " in text
    if _status(current) == "INCONCLUSIVE":
        kinds = sorted({s["kind"] for s in _main(current) if s["verdict"] == "INCONCLUSIVE"})
        assert "adequately powered" not in text and f"undecided ({' and '.join(kinds)} not sufficient)" in text


def test_the_evidence_page_states_no_answer_block_and_its_table_says_what_the_file_says():
    """One evidence page (the first study's left the docs with its plan): its verdict table is its record's."""
    from numerics.experiments.study.answer import START

    assert not (SHIPPED / "certified-study.md").exists()
    page = (SHIPPED / "certified-revised" / "certified-study.md").read_text()
    record = json.loads((SHIPPED / "certified-revised" / "certified-study.verdicts.json").read_text())
    head = page.split("## Method", 1)[0]
    assert "Superseded" not in page
    assert START not in page and "certified-answer.png" not in page  # no verdicts but its own
    for s in record["settings"]:
        label = f"(a, b) = ({s['a']:g}, {s['b']:g}), P = {s['P']}, top-{s['k']}"
        row = next(line for line in head.splitlines() if line.startswith(f"| {label} |"))
        assert f"**{s['verdict']}**" in row and f"| {', '.join(map(str, s['checked_depths'])) or 'none'} |" in row
    # the nesting formula is code, not Markdown emphasis; the coverage benchmark is not said to validate what it cannot
    assert "`R*_L ≤ R*_{L/2} + 2 SE`" in page and "R*_L ≤ R*_{L/2}" not in page.replace("`R*_L ≤ R*_{L/2} + 2 SE`", "")
    assert "it cannot validate the intervals where that law does not describe the gains" in page
    markdown_it = pytest.importorskip("markdown_it")
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(page)
    assert "<em>" not in html  # no formula of R*_L and R*_{L/2} read as emphasis


def test_the_certified_studys_progress_is_computed_from_the_verdicts_file(shipped):
    from numerics.experiments.reproduce._verdicts import certified_progress

    done = all(s["depths"] == s["planned_depths"] for s in shipped["settings"])
    text = certified_progress(shipped)
    assert text.startswith("done") == done and ("in progress" in text) == (not done)


def test_the_caveat_on_trained_models_below_the_heads_is_the_computed_number(current):
    from types import SimpleNamespace

    from numerics.experiments.reproduce._verdicts import _below_heads_text, below_heads

    largest = max((b - e) / b for s in _main(current) for e, b in zip(s["envelope"], s["bound"]))
    assert below_heads(current)[0] == pytest.approx(largest)
    assert f"at most {100 * largest:.1f} % below" in _below_heads_text(SimpleNamespace(certified_verdicts=None))


def test_fig1_neither_titles_nor_captions_a_verdict_the_verdicts_file_does_not_give(current):
    from types import SimpleNamespace

    from numerics.experiments.reproduce.figures._softmax import _certified_verdicts_text
    from numerics.experiments.reproduce.plan import ARTEFACTS

    title = ARTEFACTS["fig1"].title
    if _status(current) != "REPRODUCED":
        assert "inverse-depth scaling" not in title
    counts = {w: sum(s["verdict"] == w for s in _main(current)) for w in ("REPRODUCED", "CONTRADICTED", "INCONCLUSIVE")}
    text = _certified_verdicts_text(SimpleNamespace(certified_verdicts=None))
    assert all(f"{n} {w}" in text for w, n in counts.items() if n)


def test_a_verdicts_file_beside_cells_it_disagrees_with_is_refused_on_reading(tmp_path, shipped):
    from numerics.experiments.study.certified.page import read_verdicts

    shutil.copy(STUDY / "certified-study.csv", tmp_path)
    changed = json.loads(json.dumps(shipped))
    changed["settings"][0]["P"] = 256
    (tmp_path / "certified-study.verdicts.json").write_text(json.dumps(changed))
    with pytest.raises(ValueError, match=r"setting \(a, b\) = \(0, 0\), k = 2, P = 256 is not in the cells"):
        read_verdicts(tmp_path / "certified-study.verdicts.json")


def test_a_ratio_whose_denominator_gain_is_not_resolved_has_an_unbounded_interval():
    """Fieller: where the gain in the denominator has an interval holding 0, no finite interval holds the ratio,
    and the verdict on it is INCONCLUSIVE (resolution), never REPRODUCED or CONTRADICTED."""
    rng = np.random.default_rng(3)
    point = np.array([2.0, 1.99, 1.985])  # gains of 0.01 and 0.015 ...
    reps = point + rng.normal(0, 0.02, size=(400, 3))  # ... within their noise
    c = contrast_stat("g2/gLmax", "mean over seeds", (1, 2, 4), point, reps, 4, {1, 2, 4}, 2.0)
    assert not c.resolved and (c.lo, c.hi) == (-np.inf, np.inf) and c.covers
    assert c.alpha_interval == (ALPHA_GRID[0], ALPHA_GRID[-1])
    resolved = contrast_stat("g2/gLmax", "mean over seeds", (1, 2, 4), point * [1, 0.9, 0.8],
                             point * [1, 0.9, 0.8] + rng.normal(0, 0.002, size=(400, 3)), 4, {1, 2, 4}, 2.0)
    assert resolved.resolved and resolved.lo <= resolved.value <= resolved.hi
    depths = (1, 2, 4, 8, 16)
    verdict = setting_verdict(depths, depths, depths, [], {**c.to_dict(), "L_max": 16}, EXCLUDING)
    assert verdict[:2] == ("INCONCLUSIVE", "resolution")


def _range_contrast_dict(value, lo, hi, name="(R_L-R_2L)/(R_2L-R_4L)", L_max=128, estimate="mean over seeds"):
    from numerics.experiments.study.certified.verdict import ContrastStat

    return ContrastStat(name, estimate, (L_max // 4, L_max // 2, L_max), L_max, value, 0.1, lo, hi, True).to_dict()


@pytest.mark.parametrize("done, checked, failed, contrasts, expected", [
    ((32, 64), (32, 64), [], {}, ("INCONCLUSIVE", "budget")),
    ((32, 64, 128), (32, 128), [], {}, ("INCONCLUSIVE", "checks")),
    ((32, 64, 128), (32, 64, 128), [("nesting", 64)], {}, ("INCONCLUSIVE", "training")),
    ((32, 64, 128), (32, 64, 128), [], {"mean over seeds": (1.9, 1.7, 2.2)}, ("REPRODUCED", "")),
    ((32, 64, 128), (32, 64, 128), [], {"mean over seeds": (1.9, -50.0, 80.0)}, ("INCONCLUSIVE", "resolution")),
    ((32, 64, 128), (32, 64, 128), [], {"mean over seeds": (1.2, 1.0, 1.4), "best seed": (1.5, 1.1, 2.3)},
     ("INCONCLUSIVE", "variants")),
    ((32, 64, 128), (32, 64, 128), [], {"mean over seeds": (1.2, 1.0, 1.4), "best seed": (1.3, 1.1, 1.5)},
     ("CONTRADICTED", "")),
])
def test_a_range_verdict_needs_its_every_depth_done_checked_and_both_estimates(done, checked, failed, contrasts,
                                                                              expected):
    from numerics.experiments.study.certified.verdict import range_verdict

    given = {estimate: _range_contrast_dict(*v, estimate=estimate) for estimate, v in contrasts.items()}
    verdict, kind, reason = range_verdict("diffuse", (32, 64, 128), done, checked, failed, given)
    assert (verdict, kind) == expected and reason


def test_the_ranges_split_at_the_shipped_crossover_depth():
    from numerics.experiments.study.certified.verdict import range_contrast, range_depths
    from theory import PowerLawSpectrum
    from theory.expressible import shipped_expressible

    from theory.paper import TABLE1_SPECTRA

    crossovers = {shipped_expressible(PowerLawSpectrum(a, b, 16), 64).crossover_depth() for a, b in TABLE1_SPECTRA}
    assert crossovers == {32}
    ranges = range_depths((1, 2, 4, 8, 16, 32, 64, 128), 32)
    assert ranges == {"atomic": (1, 2, 4, 8, 16), "diffuse": (32, 64, 128)}
    assert [range_contrast(name, d) for name, d in ranges.items()] == [("g2/gLmax", 16),
                                                                       ("(R_L-R_2L)/(R_2L-R_4L)", 128)]
    with pytest.raises(ValueError, match="range must be one of atomic, diffuse"):
        range_contrast("middle", (1, 2, 4))


def test_the_shipped_verdicts_hold_a_verdict_for_each_range():
    from numerics.experiments.study.certified.page import read_verdicts

    record = read_verdicts()
    main = [s for s in record["settings"] if s["P"] == 64 and s["k"] == 2]
    assert all([r["range"] for r in s["ranges"]] == ["atomic", "diffuse"] for s in main)
    assert all(r["verdict"] in ("REPRODUCED", "CONTRADICTED", "INCONCLUSIVE") for s in main for r in s["ranges"])


@given(value=st.floats(-10, 10), se=st.floats(0, 5), sigmas=st.sampled_from([1.0, 2.0, 3.0]))
def test_the_se_comparisons_are_one_rule_antisymmetric_and_complementary(value, se, sigmas):
    """``exceeds`` and ``at_most`` split every finite pair; "below" is "above" of the negated value."""
    assert criteria.exceeds(value, se, sigmas) != criteria.at_most(value, se, sigmas)
    word = criteria.ses_word(value, se, sigmas)
    assert criteria.ses_word(-value, se, sigmas) == {"above": "below", "below": "above"}.get(word, word)
    assert (word == "indistinguishable") == (abs(value) <= sigmas * se)


@pytest.mark.parametrize("value, se", [(math.nan, 0.1), (0.5, math.nan)])
def test_a_nan_is_neither_beyond_nor_within_any_number_of_ses(value, se):
    assert not criteria.exceeds(value, se) and not criteria.at_most(value, se, 1.0)
    assert criteria.ses_word(value, se) == "indistinguishable"


def test_an_alpha_interval_end_at_the_grids_edge_or_nan_is_unbounded():
    lo, hi = criteria.ALPHA_GRID[0], criteria.ALPHA_GRID[-1]
    assert criteria.alpha_ends_bounded(lo, hi) == (False, False)
    assert criteria.alpha_ends_bounded(lo * 1.01, hi / 1.01) == (True, True)
    assert criteria.alpha_ends_bounded(math.nan, 1.0) == (False, True)


def test_the_facts_record_beside_the_verdicts_is_complete_and_read_back_exactly_by_its_one_reader():
    from numerics.experiments.study.certified.record import FACTS_FIELDS, FACTS_RECORD, facts_text, read_facts

    path = STUDY / FACTS_RECORD
    record, facts = json.loads(path.read_text()), read_facts(path)
    assert tuple(record) == FACTS_FIELDS
    assert facts_text(facts) == path.read_text()  # what the page renders is what the file holds, to the bit
    # the revised plan's part is certified-revised.json, and its CPU hours are the cost's, by kind
    assert json.dumps(record["revised"], indent=1) + "\n" == (STUDY / "certified-revised.json").read_text()
    assert facts.compute.hours_by_kind == record["revised"]["cpu_hours"]
    settings = {(s["a"], s["b"], s["k"], s["d"], s["N"], s["P"]): s["depths"]
                for s in json.loads((STUDY / "certified-study.verdicts.json").read_text())["settings"]}
    assert set(facts.checks) == set(facts.gaps) == set(settings)
    assert all(list(facts.checks[s].depths) == depths and len(facts.gaps[s]) == len(depths)
               for s, depths in settings.items())
    assert all(r.setting in settings and r.depth in settings[r.setting] for r in facts.rechecks)
    assert {"steps", "long", "long_doubling", "decomposition"} <= set(facts.revised) and facts.excess
    with pytest.raises(ValueError, match="missing field rechecks"):
        read_facts({"predictions": None})
