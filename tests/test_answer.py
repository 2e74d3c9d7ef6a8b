"""The package's answer is computed from the result files, and every place that states it says the same."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from numerics.experiments.study.answer import END, START, package_answer, replace_block

ROOT = Path(__file__).resolve().parents[1]


def _block(text: str) -> str:
    assert START in text and END in text, "answer markers missing"
    return text.split(START, 1)[1].split(END, 1)[0].strip()


@pytest.fixture(scope="module")
def answer():
    return package_answer()


def test_readme_states_the_answer_in_its_first_40_lines(answer):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = "\n".join(readme.splitlines()[:40])
    assert _block(first) == answer.text


def test_docs_index_states_the_same_answer(answer):
    assert _block((ROOT / "docs" / "index.md").read_text(encoding="utf-8")) == answer.text


def test_cli_help_ends_with_the_same_headline_and_the_evidence_page_in_at_most_30_lines(answer, capsys):
    from idepth.cli import build_parser
    from numerics.experiments.study.answer import EVIDENCE

    text = build_parser().format_help()
    assert " ".join(answer.help_text().split()) in " ".join(text.split()) and EVIDENCE in text
    assert len(text.splitlines()) <= 30


def test_the_answer_block_is_a_headline_a_table_and_at_most_150_words_of_prose(answer):
    lines = answer.text.splitlines()
    table = [line for line in lines if line.startswith("|")]
    assert len(table) == 2 + len(answer.rows) and len(answer.notes) <= 2
    prose = " ".join(line for line in lines if not line.startswith("|"))
    assert len(prose.split()) <= 150


STUDY = ROOT / "docs" / "results" / "certified-revised"


def _study_with(tmp_path, edit=None, *, settings="main"):
    """A results directory holding the study's CSV and verdicts record (under ``certified-revised/``), ``edit``
    applied to each of its main Table 1 settings (or to the record itself with ``settings=None``)."""
    results = tmp_path / "results"
    (results / "certified-revised").mkdir(parents=True)
    for name in ("certified-study.csv", "certified-revised.json"):
        shutil.copy(STUDY / name, results / "certified-revised")
    verdicts = json.loads((STUDY / "certified-study.verdicts.json").read_text())
    if edit is not None and settings is None:
        edit(verdicts)
    elif edit is not None:
        main = {tuple(s) for s in verdicts["main"]["spectra"]}
        for setting in verdicts["settings"]:
            if ((setting["a"], setting["b"]) in main and setting["P"] == verdicts["main"]["P"]
                    and setting["k"] == verdicts["main"]["k"]):
                edit(setting)
    (results / "certified-revised" / "certified-study.verdicts.json").write_text(json.dumps(verdicts))
    return results


def test_the_answer_follows_the_verdicts_file(tmp_path, answer):
    def check_every_depth(setting):  # every depth checked: enough checked depths to settle the question
        setting["verdict"], setting["failed"], setting["checked_depths"] = "REPRODUCED", [], setting["depths"]

    results = _study_with(tmp_path, check_every_depth)
    changed = package_answer(results)
    assert changed.facts["counts"]["REPRODUCED"] == 7 and changed.facts["settled"]
    assert changed.headline.startswith("Yes") and all(r.verdict == "REPRODUCED" and not r.why for r in changed.rows)
    assert changed.text != answer.text


def test_a_contradiction_resting_on_unchecked_depths_does_not_settle_the_question(tmp_path):
    minimum = json.loads((STUDY / "certified-study.verdicts.json").read_text())["rules"]["min_checked_depths"]
    edited = []

    def contradict(setting):
        setting["verdict"], setting["failed"] = "CONTRADICTED", []
        edited.append(setting)

    results = _study_with(tmp_path, contradict)
    unchecked = sum(len(s["checked_depths"]) < minimum for s in edited)
    changed = package_answer(results)
    assert unchecked > 0 and changed.facts["unchecked"] == unchecked and not changed.facts["settled"]
    assert changed.headline.startswith("Not settled")
    assert sum(bool(r.why) for r in changed.rows if r.verdict == "CONTRADICTED") >= unchecked


def _shipped_main_settings() -> tuple[dict, list[dict]]:
    """The study's verdicts record and its main settings (read here with ``json``, independently of the answer)."""
    verdicts = json.loads((STUDY / "certified-study.verdicts.json").read_text())
    main = {tuple(s) for s in verdicts["main"]["spectra"]}
    settings = [s for s in verdicts["settings"]
                if (s["a"], s["b"]) in main and s["P"] == verdicts["main"]["P"] and s["k"] == verdicts["main"]["k"]]
    return verdicts, settings


def test_each_row_is_its_spectrums_verdict_alpha_interval_and_checked_depths_in_the_verdicts_files(answer):
    """The rows follow the verdicts record (read here independently of the answer's reader)."""
    verdicts, settings = _shipped_main_settings()
    grid = verdicts["alpha_grid"]
    assert [r.spectrum for r in answer.rows] == [(s["a"], s["b"]) for s in settings]
    for row, s in zip(answer.rows, settings):
        assert row.verdict == s["verdict"] and list(row.depths) == s["checked_depths"]
        primary = s["primary"]
        if primary is None:
            assert row.alpha is None
        else:
            lo, hi = row.alpha
            assert (lo is None) == (primary["alpha_lo"] <= grid[0]) and (hi is None) == (primary["alpha_hi"] >= grid[1])
            assert lo is None or lo == primary["alpha_lo"]
            assert hi is None or hi == primary["alpha_hi"]
        short = len(s["checked_depths"]) < verdicts["rules"]["min_checked_depths"]
        assert bool(row.why) == (s["verdict"] == "INCONCLUSIVE" or short)
    counts = {w: sum(s["verdict"] == w for s in settings) for w in ("REPRODUCED", "CONTRADICTED", "INCONCLUSIVE")}
    assert answer.facts["counts"] == counts
    assert answer.headline.startswith("Not settled") == (counts["REPRODUCED"] < len(settings) or not
                                                         answer.facts["settled"])


def test_missing_results_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="certified-study.verdicts.json"):
        package_answer(tmp_path)


def test_replace_block_refuses_text_without_markers():
    with pytest.raises(ValueError, match="markers"):
        replace_block("no block here", "x")


def test_the_notes_are_the_revised_facts_numbers_when_they_exist(tmp_path):
    results = _study_with(tmp_path)
    gap = {"value": -0.01, "se": 0.002, "per_seed": [-0.01], "word": "below"}
    facts = {"envelope": [{"gap": gap}, {"gap": {**gap, "word": "indistinguishable"}}],
             "decomposition": [{"a": 0.0, "b": 0.0, "depth": L, "A_minus_C": None if v is None else {"value": v}}
                               for L, v in ((1, None), (2, 1.5), (4, 4.5))]}
    (results / "certified-revised" / "certified-revised.json").write_text(json.dumps(facts))
    notes = package_answer(results).notes
    assert len(notes) == 2 and "at 1 of 2 spectrum–depth pairs" in notes[0] and "3.0–3.0" in notes[1]
    (results / "certified-revised" / "certified-revised.json").unlink()
    assert package_answer(results).notes == ()


def test_the_answer_reads_the_studys_record_alone(tmp_path, answer):
    """The first study's record beside it (data no code reads) changes nothing, whatever it says."""
    results = _study_with(tmp_path)
    first = json.loads((STUDY / "certified-study.verdicts.json").read_text())
    for setting in first["settings"]:
        setting["verdict"], setting["failed"], setting["checked_depths"] = "CONTRADICTED", [], setting["depths"]
    (results / "certified-study.verdicts.json").write_text(json.dumps(first))
    assert package_answer(results).text == answer.text


def test_a_verdicts_record_that_its_cells_do_not_back_is_refused(tmp_path):
    def invent_a_depth(record):
        record["settings"][0]["depths"] = record["settings"][0]["depths"] + [4096]

    with pytest.raises(ValueError, match="certified-revised.*depths 4096"):
        package_answer(_study_with(tmp_path, invent_a_depth, settings=None))


def test_a_table_without_the_recipe_column_is_refused_naming_it(tmp_path):
    results = _study_with(tmp_path)
    table = results / "certified-revised" / "certified-study.csv"
    lines = table.read_text().splitlines()
    table.write_text("\n".join(line.rsplit(",", 1)[0] for line in lines) + "\n")
    with pytest.raises(ValueError, match="missing columns recipe"):
        package_answer(results)


def test_a_spectrum_with_enough_checked_depths_but_no_contrast_on_them_says_so(tmp_path):
    """Enough checked depths without L = 1 (the verdict's contrast g_2/g_Lmax needs it): named with its verdict."""
    picked = []

    def drop_depth_one(setting):
        if not picked:
            picked.append(setting)
            setting["checked_depths"] = [L for L in setting["depths"] if L != 1]
            setting["verdict"], setting["primary"], setting["kind"] = "INCONCLUSIVE", None, "checks"

    results = _study_with(tmp_path, drop_depth_one)
    picked = picked[0]
    row = next(r for r in package_answer(results).rows if r.spectrum == (picked["a"], picked["b"]))
    assert row.verdict == "INCONCLUSIVE" and list(row.depths) == picked["checked_depths"]
    if len(picked["checked_depths"]) >= 5:
        assert "L = 1" in row.why


@pytest.mark.parametrize("shift", range(0, 14))
def test_the_cli_help_never_breaks_a_hyphenated_word_of_the_answer(monkeypatch, shift):
    """Wherever "step-doubling" falls against the help's line width, the help reads it as one word."""
    from types import SimpleNamespace

    import numerics.experiments.study.answer as answer_module
    from idepth.cli import _answer_epilog

    text = "a " * 40 + "b" * shift + " the step-doubling check " + "c " * 40
    monkeypatch.setattr(answer_module, "package_answer", lambda: SimpleNamespace(help_text=lambda: text))
    assert " ".join(_answer_epilog().split()) == "the answer: " + " ".join(text.split())
